//! The top-level settings of one merged configuration table ([`Settings`]): each key read,
//! checked and converted once, for `ServerConfigBuilder::load` to assemble the
//! [`super::ServerConfig`] from. Split from `mod.rs`, which owns the builder and the layers'
//! order.

use super::*;

/// The settings of a merged table; `None` for keys no layer set.
#[derive(Debug, Default)]
pub(super) struct Settings {
    pub(super) thread_unload_delay: Option<Duration>,
    pub(super) process_output_max_bytes: Option<u64>,
    pub(super) model: Option<String>,
    pub(super) model_provider: Option<String>,
    pub(super) model_providers: BTreeMap<String, ModelProviderConfig>,
    pub(super) sandbox: Option<tandem_protocol::SandboxPolicy>,
    pub(super) store: store::StoreSettings,
    pub(super) fs_api: fs_api::FsApiSettings,
    pub(super) client_apis: client_apis::ClientApiSettings,
    pub(super) reasoning: tandem_agent::ReasoningSettings,
    pub(super) mcp_servers: BTreeMap<String, tandem_mcp::McpServerConfig>,
}

/// A TOML value as JSON (TOML dates become strings), for the parsers shared with JSON input.
pub(super) fn toml_to_json(value: &toml::Value) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

impl Settings {
    /// Validates `layered`; with `complete` false (one layer on its own) only the kinds of
    /// values are checked, not what other layers may still supply.
    pub(super) fn parse(layered: &Layered, complete: bool) -> Result<Self, ConfigError> {
        let table = &layered.table;
        let thread_unload_delay = table
            .get(THREAD_UNLOAD_DELAY_KEY)
            .map(|value| {
                parse_delay(
                    value,
                    &layered.origin_of(THREAD_UNLOAD_DELAY_KEY).to_string(),
                )
            })
            .transpose()?;
        let process_output_max_bytes = table
            .get(PROCESS_OUTPUT_MAX_BYTES_KEY)
            .map(|value| {
                parse_output_max(
                    value,
                    &layered.origin_of(PROCESS_OUTPUT_MAX_BYTES_KEY).to_string(),
                )
            })
            .transpose()?;
        let model = match table.get(MODEL_KEY) {
            None => None,
            Some(toml::Value::String(model)) if !model.trim().is_empty() => {
                Some(model.trim().to_owned())
            }
            Some(other) => {
                return Err(ConfigError::InvalidValue {
                    key: MODEL_KEY.to_owned(),
                    value: other.to_string(),
                    origin: layered.origin_of(MODEL_KEY).to_string(),
                    reason: "expected a model name such as \"gpt-4.1\" or \"qwen3:8b\"".to_owned(),
                });
            }
        };
        let (model_provider, model_providers) =
            providers::parse_providers(&layered.table, complete).map_err(|error| {
                ConfigError::InvalidValue {
                    origin: layered.origin_of(&error.origin_key).to_string(),
                    key: error.key,
                    value: error.value,
                    reason: error.reason,
                }
            })?;
        let mode = table.get(SANDBOX_MODE_KEY).map(toml_to_json);
        let workspace_write = table.get(SANDBOX_WORKSPACE_WRITE_KEY).map(toml_to_json);
        let sandbox = sandbox::policy_from_keys(|key| match key {
            SANDBOX_MODE_KEY => mode.as_ref(),
            _ => workspace_write.as_ref(),
        })
        .map_err(|(key, reason)| {
            let top = key.split('.').next().unwrap_or_default().to_owned();
            ConfigError::InvalidValue {
                value: table.get(&top).map(ToString::to_string).unwrap_or_default(),
                origin: layered.origin_of(&top).to_string(),
                key,
                reason,
            }
        })?;
        let mcp_servers = match table.get(MCP_SERVERS_KEY) {
            None => BTreeMap::new(),
            Some(value) => {
                tandem_mcp::parse_mcp_servers(value).map_err(|error| ConfigError::InvalidValue {
                    origin: layered.origin_of(MCP_SERVERS_KEY).to_string(),
                    key: error.key,
                    value: error.value,
                    reason: error.reason,
                })?
            }
        };
        Ok(Self {
            mcp_servers,
            store: store::parse_store(layered)?,
            fs_api: fs_api::parse_fs_api(layered)?,
            client_apis: client_apis::parse_client_apis(layered)?,
            reasoning: reasoning::parse_reasoning(layered)?,
            sandbox,
            thread_unload_delay,
            process_output_max_bytes,
            model,
            model_provider,
            model_providers,
        })
    }
}

fn parse_output_max(value: &toml::Value, origin: &str) -> Result<u64, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidValue {
        key: PROCESS_OUTPUT_MAX_BYTES_KEY.to_owned(),
        value: value.to_string(),
        origin: origin.to_owned(),
        reason,
    };
    match value {
        toml::Value::Integer(bytes) => u64::try_from(*bytes).map_err(|_| {
            invalid("the bound must not be negative; use 0 to keep no output at all".into())
        }),
        other => Err(invalid(format!(
            "expected a whole number of bytes (e.g. {DEFAULT_PROCESS_OUTPUT_MAX_BYTES}), found a {}",
            other.type_str()
        ))),
    }
}

fn parse_delay(value: &toml::Value, origin: &str) -> Result<Duration, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidValue {
        key: THREAD_UNLOAD_DELAY_KEY.to_owned(),
        value: value.to_string(),
        origin: origin.to_owned(),
        reason,
    };
    match value {
        toml::Value::Integer(secs) => {
            let secs = u64::try_from(*secs).map_err(|_| {
                invalid("the delay must not be negative; use 0 to unload as soon as idle".into())
            })?;
            validate_thread_unload_delay(secs, origin)
        }
        other => Err(invalid(format!(
            "expected a whole number of seconds (e.g. {}), found a {}",
            DEFAULT_THREAD_UNLOAD_DELAY.as_secs(),
            other.type_str()
        ))),
    }
}
