//! Model providers: `model_provider` and `[model_providers.<name>]`, with the built-in
//! `openai` and `ollama` entries. A provider is where the OpenAI-compatible agent sends its
//! requests; none selected means the scripted agent runs the turns.
//!
//! Everything here is validated at load (URL, header names and values, numbers), so the
//! agent never has to reject a value halfway through a turn.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::cassette::{CASSETTE_MODES, CassetteMode, CassetteSettings, CassetteTiming};

/// A provider setting that does not validate: the key, its value and what is wrong.
/// tandem-server's configuration reports it with the layer (file, profile, override) that
/// set [`ProviderError::origin_key`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {key} = {value}: {reason}")]
pub struct ProviderError {
    /// The config key, dotted for nested tables (`model_providers.mock.base_url`).
    pub key: String,
    /// The offending value, as written (`(missing)` for a missing `base_url`).
    pub value: String,
    /// The key whose origin the error names: `key` itself, or the provider's table when the
    /// key is missing.
    pub origin_key: String,
    /// What is wrong and what would be accepted.
    pub reason: String,
}

/// Config key naming the selected provider.
pub const MODEL_PROVIDER_KEY: &str = "model_provider";

/// Config key of the provider table.
pub const MODEL_PROVIDERS_KEY: &str = "model_providers";

/// How many times a failed request or broken stream is retried unless the provider says.
pub const DEFAULT_STREAM_MAX_RETRIES: u32 = 5;

/// The most retries a provider may ask for: beyond that a dead endpoint holds a turn for
/// hours of backoff.
pub const MAX_STREAM_MAX_RETRIES: u32 = 100;

/// How long a stream may go without an event before it counts as stalled, unless the
/// provider says.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The keys a provider table may hold; others are ignored with a warning (`validate`).
pub const PROVIDER_KEYS: &[&str] = &[
    "name",
    "base_url",
    "env_key",
    "wire_api",
    "stream_max_retries",
    "stream_idle_timeout_ms",
    "http_headers",
    "models",
    "cassette",
    "cassette_mode",
    "cassette_timing",
];

/// Which OpenAI API a provider speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum WireApi {
    /// `POST {base_url}/chat/completions`, streamed: what OpenAI, Ollama, llama.cpp's
    /// `llama-server`, vLLM and LM Studio all serve.
    #[default]
    Chat,
    /// `POST {base_url}/responses`, streamed `response.*` events: some OpenAI models exist
    /// only there.
    Responses,
}

impl WireApi {
    /// The config-file spelling: `chat` or `responses`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Responses => "responses",
        }
    }
}

/// One `[model_providers.<name>]` entry, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelProviderConfig {
    /// The provider's key in `model_providers` (what `model_provider` names).
    pub id: String,
    /// Base URL of the API, without a trailing `/` (requests go to `{base_url}/chat/completions`
    /// or `{base_url}/responses`).
    pub base_url: String,
    /// The environment variable holding the API key, sent as `Authorization: Bearer`; `None`
    /// sends no key (local servers).
    pub env_key: Option<String>,
    /// Which API to speak.
    pub wire_api: WireApi,
    /// How many times a retryable failure is retried before the turn fails.
    pub stream_max_retries: u32,
    /// How long the stream may go without an event before it is dropped and retried.
    pub stream_idle_timeout: Duration,
    /// Extra headers sent with every request (validated names and values).
    pub http_headers: BTreeMap<String, String>,
    /// The models `model/list` offers for this provider (besides the configured `model`),
    /// in order; none are fetched from the provider.
    pub models: Vec<String>,
    /// The cassette its answers are recorded to or replayed from (`cassette`,
    /// `cassette_mode`, `cassette_timing`); `None` runs live.
    pub cassette: Option<CassetteSettings>,
}

impl ModelProviderConfig {
    /// A provider at `base_url` with every other setting at its default: no key, the Chat
    /// Completions wire, default retries and idle timeout, no extra headers.
    pub fn new(id: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            env_key: None,
            wire_api: WireApi::Chat,
            stream_max_retries: DEFAULT_STREAM_MAX_RETRIES,
            stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            http_headers: BTreeMap::new(),
            models: Vec::new(),
            cassette: None,
        }
    }

    /// This provider with `cassette` (see [`ModelProviderConfig::cassette`]).
    pub fn with_cassette(mut self, cassette: CassetteSettings) -> Self {
        self.cassette = Some(cassette);
        self
    }

    /// The entry under its config-file keys, as `config/read` shows it. Header values are
    /// replaced by `"<redacted>"`: they often carry credentials, and `config/read` never
    /// shows a secret (the API key itself is never read into the configuration at all).
    pub fn to_config_object(&self) -> Value {
        let headers: serde_json::Map<String, Value> = self
            .http_headers
            .keys()
            .map(|name| (name.clone(), Value::from("<redacted>")))
            .collect();
        let mut object = json!({
            "base_url": self.base_url,
            "env_key": self.env_key,
            "wire_api": self.wire_api.as_str(),
            "stream_max_retries": self.stream_max_retries,
            "stream_idle_timeout_ms": u64::try_from(self.stream_idle_timeout.as_millis())
                .unwrap_or(u64::MAX),
            "http_headers": headers,
            "models": self.models,
        });
        if let Some(cassette) = &self.cassette {
            object["cassette"] = Value::from(cassette.path.display().to_string());
            object["cassette_mode"] = Value::from(cassette.mode.as_str());
            object["cassette_timing"] = Value::from(cassette.timing.as_str());
        }
        object
    }
}

/// The built-in providers as config tables, merged under whatever the file and overrides
/// say (so `-c model_providers.openai.base_url=...` points OpenAI at a proxy).
pub fn builtin_providers() -> toml::Table {
    let openai: toml::Table = [
        ("base_url", "https://api.openai.com/v1"),
        ("env_key", "OPENAI_API_KEY"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), toml::Value::from(value)))
    .collect();
    let ollama: toml::Table = [("base_url", "http://localhost:11434/v1")]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), toml::Value::from(value)))
        .collect();
    let mut providers = toml::Table::new();
    providers.insert("openai".to_owned(), toml::Value::Table(openai));
    providers.insert("ollama".to_owned(), toml::Value::Table(ollama));
    let mut root = toml::Table::new();
    root.insert(
        MODEL_PROVIDERS_KEY.to_owned(),
        toml::Value::Table(providers),
    );
    root
}

/// The selected provider's name (`model_provider`) and every provider, by name.
pub type ParsedProviders = (Option<String>, BTreeMap<String, ModelProviderConfig>);

/// Validates every provider in `table` (a configuration's merged settings) and the selection
/// `model_provider`.
///
/// `complete` is false while a single layer is checked on its own: values are type-checked,
/// but a missing `base_url` or a selection of a provider defined elsewhere is not an error
/// yet.
pub fn parse_providers(
    table: &toml::Table,
    complete: bool,
) -> Result<ParsedProviders, ProviderError> {
    let mut providers = BTreeMap::new();
    match table.get(MODEL_PROVIDERS_KEY) {
        None => {}
        Some(toml::Value::Table(entries)) => {
            for (id, entry) in entries {
                if let Some(provider) = parse_provider(id, entry, complete)? {
                    providers.insert(id.clone(), provider);
                }
            }
        }
        Some(other) => {
            return Err(invalid(
                MODEL_PROVIDERS_KEY,
                other,
                format!(
                    "expected a table of providers ([model_providers.NAME]), found a {}",
                    other.type_str()
                ),
            ));
        }
    }
    let selected = match table.get(MODEL_PROVIDER_KEY) {
        None => None,
        Some(toml::Value::String(name)) => {
            if complete && !providers.contains_key(name) {
                let known: Vec<&str> = providers.keys().map(String::as_str).collect();
                return Err(invalid(
                    MODEL_PROVIDER_KEY,
                    &toml::Value::from(name.as_str()),
                    format!(
                        "no provider named {name}; define [model_providers.{name}] with a \
                         base_url, or use one of: {}",
                        known.join(", ")
                    ),
                ));
            }
            Some(name.clone())
        }
        Some(other) => {
            return Err(invalid(
                MODEL_PROVIDER_KEY,
                other,
                format!(
                    "expected a provider name such as \"openai\", found a {}",
                    other.type_str()
                ),
            ));
        }
    };
    Ok((selected, providers))
}

fn invalid(key: &str, value: &toml::Value, reason: String) -> ProviderError {
    ProviderError {
        key: key.to_owned(),
        value: value.to_string(),
        origin_key: key.to_owned(),
        reason,
    }
}

fn parse_provider(
    id: &str,
    entry: &toml::Value,
    complete: bool,
) -> Result<Option<ModelProviderConfig>, ProviderError> {
    let prefix = format!("{MODEL_PROVIDERS_KEY}.{id}");
    let toml::Value::Table(table) = entry else {
        return Err(invalid(
            &prefix,
            entry,
            format!(
                "expected a table with base_url and the other provider keys, found a {}",
                entry.type_str()
            ),
        ));
    };
    let key_of = |name: &str| format!("{prefix}.{name}");
    let fail =
        |name: &str, value: &toml::Value, reason: String| invalid(&key_of(name), value, reason);
    let string = |name: &str| -> Result<Option<String>, ProviderError> {
        match table.get(name) {
            None => Ok(None),
            Some(toml::Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(fail(
                name,
                other,
                format!("expected a string, found a {}", other.type_str()),
            )),
        }
    };

    let base_url = match string("base_url")? {
        Some(url) => {
            validate_base_url(&url)
                .map_err(|reason| fail("base_url", &url.as_str().into(), reason))?;
            Some(url.trim_end_matches('/').to_owned())
        }
        None => None,
    };
    let env_key = string("env_key")?;
    if let Some(name) = &env_key
        && (name.is_empty() || name.contains('='))
    {
        return Err(fail(
            "env_key",
            &name.as_str().into(),
            "expected the name of an environment variable, such as OPENAI_API_KEY".to_owned(),
        ));
    }
    let wire_api = match string("wire_api")?.as_deref() {
        None | Some("chat") => WireApi::Chat,
        Some("responses") => WireApi::Responses,
        Some(other) => {
            return Err(fail(
                "wire_api",
                &other.into(),
                "expected \"chat\" (Chat Completions) or \"responses\" (the Responses API)"
                    .to_owned(),
            ));
        }
    };
    let stream_max_retries = match table.get("stream_max_retries") {
        None => DEFAULT_STREAM_MAX_RETRIES,
        Some(value @ toml::Value::Integer(count)) => u32::try_from(*count)
            .ok()
            .filter(|count| *count <= MAX_STREAM_MAX_RETRIES)
            .ok_or_else(|| {
                fail(
                    "stream_max_retries",
                    value,
                    format!("expected a whole number from 0 to {MAX_STREAM_MAX_RETRIES}"),
                )
            })?,
        Some(other) => {
            return Err(fail(
                "stream_max_retries",
                other,
                format!("expected a whole number, found a {}", other.type_str()),
            ));
        }
    };
    let stream_idle_timeout = match table.get("stream_idle_timeout_ms") {
        None => DEFAULT_STREAM_IDLE_TIMEOUT,
        Some(value @ toml::Value::Integer(millis)) => u64::try_from(*millis)
            .ok()
            .filter(|millis| *millis > 0)
            .map(Duration::from_millis)
            .ok_or_else(|| {
                fail(
                    "stream_idle_timeout_ms",
                    value,
                    "expected a positive number of milliseconds".to_owned(),
                )
            })?,
        Some(other) => {
            return Err(fail(
                "stream_idle_timeout_ms",
                other,
                format!(
                    "expected a whole number of milliseconds, found a {}",
                    other.type_str()
                ),
            ));
        }
    };
    let http_headers = match table.get("http_headers") {
        None => BTreeMap::new(),
        Some(toml::Value::Table(headers)) => {
            let mut parsed = BTreeMap::new();
            for (name, value) in headers {
                let header_key = format!("http_headers.{name}");
                let toml::Value::String(text) = value else {
                    return Err(fail(
                        &header_key,
                        value,
                        format!(
                            "expected a string header value, found a {}",
                            value.type_str()
                        ),
                    ));
                };
                HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    fail(
                        &header_key,
                        value,
                        format!("{name:?} is not a valid header name"),
                    )
                })?;
                HeaderValue::from_str(text).map_err(|_| {
                    fail(
                        &header_key,
                        value,
                        "header values must be visible ASCII (no line breaks)".to_owned(),
                    )
                })?;
                parsed.insert(name.clone(), text.clone());
            }
            parsed
        }
        Some(other) => {
            return Err(fail(
                "http_headers",
                other,
                format!(
                    "expected a table of header names to values, found a {}",
                    other.type_str()
                ),
            ));
        }
    };
    let models = match table.get("models") {
        None => Vec::new(),
        Some(toml::Value::Array(names)) => {
            let mut models: Vec<String> = Vec::with_capacity(names.len());
            for name in names {
                match name {
                    toml::Value::String(model) if !model.trim().is_empty() => {
                        let model = model.trim().to_owned();
                        if !models.contains(&model) {
                            models.push(model);
                        }
                    }
                    other => {
                        return Err(fail(
                            "models",
                            other,
                            "expected a list of model names, such as [\"qwen3:8b\"]".to_owned(),
                        ));
                    }
                }
            }
            models
        }
        Some(other) => {
            return Err(fail(
                "models",
                other,
                format!(
                    "expected a list of model names, found a {}",
                    other.type_str()
                ),
            ));
        }
    };
    let cassette = parse_cassette(table, complete, &fail, &key_of)?;
    let Some(base_url) = base_url else {
        if !complete {
            // Checked once the layers are merged: another layer may supply it.
            return Ok(None);
        }
        return Err(ProviderError {
            key: key_of("base_url"),
            value: "(missing)".to_owned(),
            origin_key: prefix.clone(),
            reason: format!("provider {id} needs a base_url, e.g. \"http://127.0.0.1:8080/v1\""),
        });
    };
    Ok(Some(ModelProviderConfig {
        id: id.to_owned(),
        base_url,
        env_key,
        wire_api,
        stream_max_retries,
        stream_idle_timeout,
        http_headers,
        models,
        cassette,
    }))
}

/// `cassette`, `cassette_mode` and `cassette_timing` of one provider table: a mode without a
/// cassette to use is an error (once the layers are merged: `complete`), a cassette without a
/// mode is replayed.
fn parse_cassette(
    table: &toml::Table,
    complete: bool,
    fail: &dyn Fn(&str, &toml::Value, String) -> ProviderError,
    key_of: &dyn Fn(&str) -> String,
) -> Result<Option<CassetteSettings>, ProviderError> {
    let text = |name: &str| -> Result<Option<String>, ProviderError> {
        match table.get(name) {
            None => Ok(None),
            Some(toml::Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(fail(
                name,
                other,
                format!("expected a string, found a {}", other.type_str()),
            )),
        }
    };
    let path = text("cassette")?;
    if let Some(path) = &path
        && path.trim().is_empty()
    {
        return Err(fail(
            "cassette",
            &path.as_str().into(),
            "expected the path of a cassette file, such as \"tests/cassettes/hello.jsonl\""
                .to_owned(),
        ));
    }
    let mode = match text("cassette_mode")? {
        None => None,
        Some(mode) => Some(CassetteMode::parse(&mode).ok_or_else(|| {
            fail(
                "cassette_mode",
                &mode.as_str().into(),
                format!("expected one of {}", CASSETTE_MODES.join(", ")),
            )
        })?),
    };
    let timing = match text("cassette_timing")?.as_deref() {
        None | Some("skip") => CassetteTiming::Skip,
        Some("recorded") => CassetteTiming::Recorded,
        Some(other) => {
            return Err(fail(
                "cassette_timing",
                &other.into(),
                "expected \"skip\" (replay at once) or \"recorded\" (replay with the recorded \
                 delays)"
                    .to_owned(),
            ));
        }
    };
    match (path, mode) {
        (None, None | Some(CassetteMode::Live)) => Ok(None),
        (None, Some(_)) if !complete => Ok(None),
        (None, Some(mode)) => Err(ProviderError {
            key: key_of("cassette_mode"),
            value: toml::Value::from(mode.as_str()).to_string(),
            origin_key: key_of("cassette_mode"),
            reason: format!(
                "cassette_mode {} needs a cassette: set {} to the cassette file's path",
                mode.as_str(),
                key_of("cassette")
            ),
        }),
        (Some(path), mode) => Ok(Some(CassetteSettings {
            path: path.into(),
            mode: mode.unwrap_or_default(),
            timing,
        })),
    }
}

fn validate_base_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|error| {
        format!("not a URL ({error}); expected e.g. \"http://127.0.0.1:8080/v1\"")
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "the scheme must be http or https, not {}",
            parsed.scheme()
        ));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err("the base URL must not have a query or fragment".to_owned());
    }
    Ok(())
}
