//! `model/list` and `account/read`: what a client's model picker and sign-in screen ask for,
//! answered from the configuration alone (no network, no account).
//!
//! The models of a provider are its `models` list in `[model_providers.<id>]`, with the
//! configured `model` first when that provider is the selected one; with no provider selected
//! the scripted agent's single model ([`DEFAULT_MODEL`]) under [`MODEL_PROVIDER`]. Pages are
//! offsets into that list, with the reference app-server's cursor format and errors.

use serde_json::json;
use tandem_protocol::{
    GetAccountResponse, JSONRPCErrorError, Model, ModelListParams, ModelListResponse,
    ReasoningEffortOption,
};

use crate::config::ServerConfig;

/// The model reported for threads that name none while no model provider is configured: the
/// scripted agent has no model.
pub const DEFAULT_MODEL: &str = "scripted";

/// The model provider reported for threads created while no model provider is configured.
pub const MODEL_PROVIDER: &str = "tandem";

/// The model of threads that chose none under `config`: its `model`, else (with no provider
/// configured) [`DEFAULT_MODEL`].
pub(crate) fn default_model_of(config: &ServerConfig) -> Option<String> {
    match (&config.model, &config.model_provider) {
        (Some(model), _) => Some(model.clone()),
        (None, None) => Some(DEFAULT_MODEL.to_owned()),
        (None, Some(_)) => None,
    }
}

/// The reasoning effort reported for every model when `model_reasoning_effort` is unset:
/// Tandem then sends none to the provider.
const REASONING_EFFORT: &str = "none";

/// One model before paging: its id and where it runs.
struct Entry {
    id: String,
    description: String,
}

/// The `model/list` answer for `config`.
pub(crate) fn model_list(
    config: &ServerConfig,
    params: ModelListParams,
) -> Result<ModelListResponse, JSONRPCErrorError> {
    let default_provider = config
        .model_provider
        .clone()
        .unwrap_or_else(|| MODEL_PROVIDER.to_owned());
    let provider = params
        .model_provider
        .unwrap_or_else(|| default_provider.clone());
    let entries = models_of(config, &provider)?;
    let default_model = (provider == default_provider)
        .then(|| default_model_of(config))
        .flatten();

    let total = entries.len();
    let start = match params.cursor.as_deref() {
        None => 0,
        Some(cursor) => {
            let start: usize = cursor.parse().map_err(|_| {
                JSONRPCErrorError::invalid_request(format!("invalid cursor: {cursor}"))
            })?;
            if start > total {
                return Err(JSONRPCErrorError::invalid_request(format!(
                    "cursor {start} exceeds total models {total}"
                )));
            }
            start
        }
    };
    // As the reference: no limit is every model, and 0 reads as 1.
    let limit = params.limit.map_or(total, |limit| {
        usize::try_from(limit.max(1)).unwrap_or(usize::MAX)
    });
    let end = start.saturating_add(limit).min(total);
    let data = entries[start..end]
        .iter()
        .map(|entry| {
            model(
                entry,
                default_model.as_deref() == Some(entry.id.as_str()),
                config.reasoning.effort.as_deref(),
            )
        })
        .collect();
    Ok(ModelListResponse {
        data,
        next_cursor: (end < total).then(|| end.to_string()),
    })
}

/// The models of `provider`, in order, without duplicates.
fn models_of(config: &ServerConfig, provider: &str) -> Result<Vec<Entry>, JSONRPCErrorError> {
    if provider == MODEL_PROVIDER && !config.model_providers.contains_key(provider) {
        let mut ids = vec![DEFAULT_MODEL.to_owned()];
        if config.model_provider.is_none()
            && let Some(model) = &config.model
            && model != DEFAULT_MODEL
        {
            // The scripted agent runs whatever model a thread names.
            ids.insert(0, model.clone());
        }
        return Ok(ids
            .into_iter()
            .map(|id| Entry {
                description: "Tandem's scripted agent: runs /sh, /tool, /ask, /sleep, /plan, \
                              /think and /fail lines and quotes any other text; no model behind \
                              it."
                .to_owned(),
                id,
            })
            .collect());
    }
    let Some(settings) = config.model_providers.get(provider) else {
        let mut error = JSONRPCErrorError::invalid_request(format!(
            "This chat uses model provider \u{201c}{provider}\u{201d}, which is no longer \
             configured. Restore this provider\u{2019}s configuration to continue."
        ));
        error.data = Some(json!({"type": "modelProviderNotConfigured", "modelProvider": provider}));
        return Err(error);
    };
    let mut ids: Vec<String> = Vec::new();
    if config.model_provider.as_deref() == Some(provider)
        && let Some(model) = &config.model
    {
        ids.push(model.clone());
    }
    for model in &settings.models {
        if !ids.contains(model) {
            ids.push(model.clone());
        }
    }
    Ok(ids
        .into_iter()
        .map(|id| Entry {
            description: format!("{id} at model provider {provider} ({})", settings.base_url),
            id,
        })
        .collect())
}

/// `effort` is `model_reasoning_effort`: the one effort Tandem sends to every model (it does
/// not know which efforts a model takes).
fn model(entry: &Entry, is_default: bool, effort: Option<&str>) -> Model {
    let (effort, effort_description) = match effort {
        Some(effort) => (
            effort,
            "model_reasoning_effort of the configuration, sent with every request",
        ),
        None => (
            REASONING_EFFORT,
            "Tandem sends no reasoning effort; the model uses its own default",
        ),
    };
    Model {
        id: entry.id.clone(),
        model: entry.id.clone(),
        upgrade: None,
        upgrade_info: None,
        availability_nux: None,
        display_name: entry.id.clone(),
        description: entry.description.clone(),
        model_specialty: None,
        hidden: false,
        supported_reasoning_efforts: vec![ReasoningEffortOption {
            reasoning_effort: effort.to_owned(),
            description: effort_description.to_owned(),
        }],
        default_reasoning_effort: effort.to_owned(),
        input_modalities: vec!["text".to_owned(), "image".to_owned()],
        supports_personality: false,
        multi_agent_version: Some("disabled".to_owned()),
        additional_speed_tiers: Vec::new(),
        service_tiers: Vec::new(),
        default_service_tier: None,
        available_access_programs: None,
        is_default,
    }
}

/// The `account/read` answer: no account, and none needed (the provider's API key comes from
/// the environment variable its config names).
pub(crate) fn account() -> GetAccountResponse {
    GetAccountResponse {
        account: None,
        user_id: None,
        requires_openai_auth: false,
        workspace_routing: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> (tempfile::TempDir, ServerConfig) {
        let home = tempfile::tempdir().expect("temp dir");
        std::fs::write(home.path().join("config.toml"), text).expect("write");
        let config = ServerConfig::builder()
            .tandem_home(home.path())
            .load()
            .expect("load");
        (home, config)
    }

    fn ids(response: &ModelListResponse) -> Vec<(&str, bool)> {
        response
            .data
            .iter()
            .map(|model| (model.id.as_str(), model.is_default))
            .collect()
    }

    #[test]
    fn the_scripted_agent_is_the_default_without_a_provider() {
        let (_home, config) = config("");
        let list = model_list(&config, ModelListParams::default()).expect("list");
        assert_eq!(ids(&list), vec![("scripted", true)]);
        assert_eq!(list.next_cursor, None);
    }

    #[test]
    fn the_selected_providers_model_comes_first_and_is_the_default() {
        let (_home, config) = config(
            "model_provider = \"local\"\nmodel = \"qwen3\"\n\
             [model_providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\n\
             models = [\"llama3\", \"qwen3\", \"phi4\"]\n",
        );
        let list = model_list(&config, ModelListParams::default()).expect("list");
        assert_eq!(
            ids(&list),
            vec![("qwen3", true), ("llama3", false), ("phi4", false)]
        );
        let scripted = model_list(
            &config,
            ModelListParams {
                model_provider: Some("tandem".into()),
                ..Default::default()
            },
        )
        .expect("list");
        assert_eq!(ids(&scripted), vec![("scripted", false)]);
        let error = model_list(
            &config,
            ModelListParams {
                model_provider: Some("nope".into()),
                ..Default::default()
            },
        )
        .expect_err("unknown provider");
        assert_eq!(
            error.data,
            Some(json!({"type": "modelProviderNotConfigured", "modelProvider": "nope"}))
        );
    }

    #[test]
    fn pages_follow_the_references_cursors() {
        let (_home, config) = config(
            "model_provider = \"local\"\nmodel = \"a\"\n\
             [model_providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\n\
             models = [\"b\", \"c\"]\n",
        );
        let page = |cursor: Option<&str>, limit: Option<u32>| {
            model_list(
                &config,
                ModelListParams {
                    cursor: cursor.map(str::to_owned),
                    limit,
                    ..Default::default()
                },
            )
        };
        let first = page(None, Some(2)).expect("page");
        assert_eq!(ids(&first), vec![("a", true), ("b", false)]);
        assert_eq!(first.next_cursor.as_deref(), Some("2"));
        let last = page(Some("2"), Some(2)).expect("page");
        assert_eq!(ids(&last), vec![("c", false)]);
        assert_eq!(last.next_cursor, None);
        let zero = page(None, Some(0)).expect("page");
        assert_eq!(zero.data.len(), 1);
        assert_eq!(page(Some("3"), None).expect("page").data.len(), 0);
        assert_eq!(
            page(Some("abc"), None).expect_err("bad").message,
            "invalid cursor: abc"
        );
        assert_eq!(
            page(Some("4"), None).expect_err("past the end").message,
            "cursor 4 exceeds total models 3"
        );
    }
}
