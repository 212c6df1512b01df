//! Server configuration: where `TANDEM_HOME` is, what `TANDEM_HOME/config.toml` says, and the
//! overrides of whoever builds the server, resolved once into a validated [`ServerConfig`] so
//! that nothing later has to re-check a value (docs/protocol.md sections 4 and 9).
//!
//! Precedence, highest first: the builder's typed setters, its `config_override`s (the CLI's
//! `-c key=value`, later ones winning), the selected `[profiles.<name>]` of the config file,
//! the config file's top level, the defaults. Every layer is validated the same way, and an
//! invalid value is reported against the layer that set it. The home itself comes from the
//! builder, else the `TANDEM_HOME` environment variable, else the platform data directory
//! joined with `tandem`.
//!
//! Files: `layers` merges the layers and remembers origins, `settings` reads the top-level keys
//! of a merged table, `validate` finds unknown keys and
//! provider settings that would fail the first request ([`ConfigWarning`]), `tests` the tests.
//! The model provider settings are parsed by tandem-agent (`tandem_agent::providers`), whose
//! errors are reported here against the layer that set the key.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tandem_protocol::ConfigReadResponse;

// search29: the `fuzzyFileSearch` and `thread/shellCommand` switches.
mod client_apis;
// fs29: the `fs/*` switch and read bound.
mod fs_api;
mod layers;
// reason29: the model's reasoning.
pub(crate) mod reasoning;
pub(crate) mod sandbox;
mod settings;
mod store;
mod validate;
pub(crate) mod write;

/// The TOML crate whose [`toml::Value`] [`ServerConfigBuilder::config_override`] takes, so
/// that embedders need not depend on a matching version themselves.
pub use toml;

pub use client_apis::{FILE_SEARCH_API_KEY, SHELL_COMMAND_API_KEY};
pub use fs_api::{DEFAULT_FS_READ_MAX_BYTES, FS_API_KEY, FS_READ_MAX_BYTES_KEY};
use layers::{Layered, Origin};
pub use reasoning::{MODEL_REASONING_EFFORT_KEY, MODEL_REASONING_SUMMARY_KEY};
pub use sandbox::{SANDBOX_MODE_KEY, SANDBOX_WORKSPACE_WRITE_KEY};
pub use store::STORE_KEY;
use tandem_agent::providers;
pub use tandem_agent::providers::{
    DEFAULT_STREAM_IDLE_TIMEOUT, DEFAULT_STREAM_MAX_RETRIES, MAX_STREAM_MAX_RETRIES,
    MODEL_PROVIDER_KEY, MODEL_PROVIDERS_KEY, ModelProviderConfig, WireApi,
};
pub use tandem_mcp::MCP_SERVERS_KEY;
pub use validate::ConfigWarning;

use settings::{Settings, toml_to_json};

/// The environment variable naming the server's home directory.
pub const TANDEM_HOME_ENV: &str = "TANDEM_HOME";

/// The config file's name inside `TANDEM_HOME`.
pub const CONFIG_FILE_NAME: &str = "config.toml";

/// The directory under the platform data directory used when `TANDEM_HOME` is not set.
pub const DEFAULT_HOME_DIR_NAME: &str = "tandem";

/// Config key of the idle-unload delay, in seconds.
pub const THREAD_UNLOAD_DELAY_KEY: &str = "thread_unload_delay_secs";

/// Default idle-unload delay (docs/protocol.md section 10).
pub const DEFAULT_THREAD_UNLOAD_DELAY: Duration = Duration::from_secs(60);

/// How long a server may run and still compute an unload deadline from a validated delay.
///
/// Validation adds this to "now" because deadlines are computed later than the config is
/// loaded: a delay that only just fits today would overflow after some uptime. A century
/// rejects nothing anyone would configure on purpose.
const UPTIME_HEADROOM: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// Config key of the server-wide bound on the output kept in memory for one process (stdout
/// and stderr together), in bytes; see
/// [`ProcessManager::with_kept_output_max`](crate::process::ProcessManager::with_kept_output_max).
pub const PROCESS_OUTPUT_MAX_BYTES_KEY: &str = "process_output_max_bytes";

/// Default of [`PROCESS_OUTPUT_MAX_BYTES_KEY`].
pub const DEFAULT_PROCESS_OUTPUT_MAX_BYTES: u64 = crate::process::DEFAULT_KEPT_OUTPUT_MAX_BYTES;

/// Config key of the default model.
pub const MODEL_KEY: &str = "model";

/// Config key selecting a profile of the config file.
pub const PROFILE_KEY: &str = "profile";

/// Config key of the profile tables.
pub const PROFILES_KEY: &str = "profiles";

/// Every key the config file may hold; any other key is ignored with a warning
/// ([`ConfigWarning::UnknownKey`]), or refused in strict mode.
const KNOWN_KEYS: &[&str] = &[
    THREAD_UNLOAD_DELAY_KEY,
    PROCESS_OUTPUT_MAX_BYTES_KEY,
    MODEL_KEY,
    MODEL_PROVIDER_KEY,
    MODEL_PROVIDERS_KEY,
    PROFILE_KEY,
    PROFILES_KEY,
    SANDBOX_MODE_KEY,
    SANDBOX_WORKSPACE_WRITE_KEY,
    STORE_KEY,
    FS_API_KEY,
    FILE_SEARCH_API_KEY,
    SHELL_COMMAND_API_KEY,
    FS_READ_MAX_BYTES_KEY,
    MODEL_REASONING_EFFORT_KEY,
    MODEL_REASONING_SUMMARY_KEY,
    MCP_SERVERS_KEY,
];

/// Why a configuration could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// No `TANDEM_HOME`, and the platform has no data directory to default to.
    #[error(
        "cannot find a home directory for Tandem: set the {TANDEM_HOME_ENV} environment variable \
         to an absolute path (this platform reports no data directory)"
    )]
    NoHome,
    /// `TANDEM_HOME` holds a relative path: which directory it names would depend on where
    /// tandem happens to be started.
    #[error(
        "{TANDEM_HOME_ENV} must be an absolute path, got {}: a relative one would name a \
         different directory depending on where tandem starts; use e.g. \
         {TANDEM_HOME_ENV}=\"$PWD/{}\"",
        path.display(),
        path.display()
    )]
    RelativeHomeVariable {
        /// The variable's value.
        path: PathBuf,
    },
    /// A relative home could not be made absolute (the working directory is unreadable).
    #[error("cannot make TANDEM_HOME {path} absolute: {source}; set it to an absolute path")]
    RelativeHome {
        /// The home as given.
        path: PathBuf,
        /// Why the working directory could not be read.
        #[source]
        source: io::Error,
    },
    /// The home directory does not exist and could not be created.
    #[error("cannot create TANDEM_HOME directory {path}: {source}")]
    CreateHome {
        /// The home directory.
        path: PathBuf,
        /// The filesystem error.
        #[source]
        source: io::Error,
    },
    /// The config file exists but could not be read.
    #[error("cannot read config file {path}: {source}")]
    ReadFile {
        /// The config file.
        path: PathBuf,
        /// The filesystem error.
        #[source]
        source: io::Error,
    },
    /// The config file is not valid TOML.
    #[error("config file {path} is not valid TOML: {source}")]
    ParseFile {
        /// The config file.
        path: PathBuf,
        /// The parser's error, with line and column.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A profile was selected that the config file does not define.
    #[error(
        "no profile named {name}: define [profiles.{name}] in {path}{}",
        if known.is_empty() { String::new() } else { format!(", or use one of: {}", known.join(", ")) }
    )]
    UnknownProfile {
        /// The profile asked for.
        name: String,
        /// The config file.
        path: PathBuf,
        /// The profiles the file defines.
        known: Vec<String>,
    },
    /// Strict mode ([`ServerConfigBuilder::strict`]) found keys nobody reads.
    #[error(
        "{} (strict mode: correct or remove {})",
        unknown.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "),
        if unknown.len() == 1 { "it" } else { "them" }
    )]
    UnknownKeys {
        /// Every unknown key found ([`ConfigWarning::UnknownKey`]s).
        unknown: Vec<ConfigWarning>,
    },
    /// A key holds a value the server cannot use.
    #[error("invalid {key} = {value} in {origin}: {reason}")]
    InvalidValue {
        /// The config key, dotted for nested tables (`model_providers.mock.base_url`).
        key: String,
        /// The offending value, as written.
        value: String,
        /// Where it came from: the config file's path, a profile of it, a `-c` override or
        /// the server's start arguments.
        origin: String,
        /// What is wrong and what would be accepted.
        reason: String,
    },
}

/// The effective, validated server configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The server's home directory: absolute, and existing once [`ServerConfigBuilder::load`]
    /// returned.
    pub tandem_home: PathBuf,
    /// How long a loaded thread with no subscribers and no active turn stays loaded.
    pub thread_unload_delay: Duration,
    /// Most bytes of output kept in memory for one process (stdout and stderr together) that
    /// is not streamed to a client, whatever `outputBytesCap` it asked for.
    pub process_output_max_bytes: u64,
    /// The model a thread uses unless `thread/start` or `turn/start` chose one.
    pub model: Option<String>,
    /// The selected provider's key in [`ServerConfig::model_providers`]; `None` runs turns
    /// with the scripted agent.
    pub model_provider: Option<String>,
    /// Every known provider: the built-in `openai` and `ollama`, and those of the config.
    pub model_providers: BTreeMap<String, ModelProviderConfig>,
    /// The profile of the config file that was applied, if any.
    pub profile: Option<String>,
    /// How this configuration was loaded (home resolved, file not yet read), so that a config
    /// write can validate and load it again over the new file text.
    pub(crate) source: Box<ServerConfigBuilder>,
    /// The sandbox policy of a thread that asks for none (`sandbox_mode`,
    /// `[sandbox_workspace_write]`); read-only without network unless configured.
    pub sandbox: tandem_protocol::SandboxPolicy,
    /// `store.url`: the PostgreSQL database holding durable threads; `None` keeps them in
    /// `TANDEM_HOME/threads.sqlite` (docs/scaling.md).
    pub store_url: Option<String>,
    /// `store.lease_ttl_ms`: how long this server's writer lease on a thread lasts without
    /// renewal.
    pub lease_ttl: Duration,
    /// `store.handoff_wait_ms`: how long a resume of a thread another server holds waits for
    /// that server to hand it over before it is refused (default 2 s; 0 refuses at once).
    pub lease_handoff_wait: Duration,
    /// `fs_api`: whether the `fs/*` methods are served (default `true`); they act with the
    /// server's rights (docs/security.md).
    pub fs_api: bool,
    /// `fs_read_max_bytes`: the most bytes one `fs/readFile` returns.
    pub fs_read_max_bytes: u64,
    /// `file_search_api`: whether `fuzzyFileSearch` is served (default `true`); it lists
    /// the server's files to the client (docs/security.md).
    pub file_search_api: bool,
    /// `shell_command_api`: whether `thread/shellCommand` is served (default `true`); it runs
    /// the client's command lines unsandboxed, with the server's rights (docs/security.md).
    pub shell_command_api: bool,
    /// `model_reasoning_effort` and `model_reasoning_summary`: what turns ask of the model's
    /// reasoning; unset keys send nothing.
    pub reasoning: tandem_agent::ReasoningSettings,
    /// `[mcp_servers.NAME]`: the MCP servers whose tools turns offer the model (issue 30,
    /// docs/agents.md "MCP servers").
    pub mcp_servers: BTreeMap<String, tandem_mcp::McpServerConfig>,
}

impl ServerConfig {
    /// A builder with no overrides: home from the environment, settings from the config file.
    pub fn builder() -> ServerConfigBuilder {
        ServerConfigBuilder::default()
    }

    /// The path of the config file inside the home (it need not exist).
    pub fn config_file(&self) -> PathBuf {
        self.tandem_home.join(CONFIG_FILE_NAME)
    }

    /// The selected model provider; `None` when turns run with the scripted agent.
    pub fn selected_provider(&self) -> Option<&ModelProviderConfig> {
        self.model_provider
            .as_ref()
            .and_then(|id| self.model_providers.get(id))
    }

    /// The effective configuration under its config-file keys, the `config` object of
    /// `config/read`. It holds no secret: API keys are never read into the configuration
    /// (only the name of their variable), and header values are redacted.
    pub fn to_config_object(&self) -> Value {
        let providers: serde_json::Map<String, Value> = self
            .model_providers
            .iter()
            .map(|(id, provider)| (id.clone(), provider.to_config_object()))
            .collect();
        let (sandbox_mode, sandbox_workspace_write) = sandbox::policy_to_keys(&self.sandbox);
        json!({
            "tandem_home": self.tandem_home.display().to_string(),
            THREAD_UNLOAD_DELAY_KEY: self.thread_unload_delay.as_secs(),
            PROCESS_OUTPUT_MAX_BYTES_KEY: self.process_output_max_bytes,
            MODEL_KEY: self.model,
            MODEL_PROVIDER_KEY: self.model_provider,
            MODEL_PROVIDERS_KEY: providers,
            PROFILE_KEY: self.profile,
            SANDBOX_MODE_KEY: sandbox_mode,
            SANDBOX_WORKSPACE_WRITE_KEY: sandbox_workspace_write,
            FS_API_KEY: self.fs_api,
            FS_READ_MAX_BYTES_KEY: self.fs_read_max_bytes,
            FILE_SEARCH_API_KEY: self.file_search_api,
            SHELL_COMMAND_API_KEY: self.shell_command_api,
            MODEL_REASONING_EFFORT_KEY: self.reasoning.effort,
            MODEL_REASONING_SUMMARY_KEY: self.reasoning.summary,
            MCP_SERVERS_KEY: self
                .mcp_servers
                .iter()
                .map(|(name, server)| (name.clone(), server.to_config_object()))
                .collect::<serde_json::Map<String, Value>>(),
        })
    }

    /// This configuration loaded again (same home, profile and overrides) over `file_text` as
    /// the config file, without touching the filesystem: what a config write validates before
    /// it writes. Blocking only in that it may read the environment.
    pub(crate) fn reload_with_file_text(
        &self,
        file_text: &str,
    ) -> Result<(ServerConfig, Vec<ConfigWarning>), ConfigError> {
        let mut builder = (*self.source).clone();
        builder.file_text = Some(file_text.to_owned());
        builder.create_home = Some(false);
        builder.load_with_warnings()
    }

    /// The `config/read` result: the effective configuration, `origins: {}`, `layers: null`.
    pub fn config_read_response(&self) -> ConfigReadResponse {
        ConfigReadResponse {
            config: self.to_config_object(),
            origins: json!({}),
            layers: None,
        }
    }
}

/// Resolves a [`ServerConfig`]; explicit settings here win over the config file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerConfigBuilder {
    tandem_home: Option<PathBuf>,
    thread_unload_delay_secs: Option<u64>,
    profile: Option<String>,
    overrides: Vec<(String, toml::Value)>,
    strict: bool,
    /// `None` (the default) creates the home at load; `Some(false)` leaves it alone.
    create_home: Option<bool>,
    /// The config file's text to use instead of reading the file (a config write's candidate).
    file_text: Option<String>,
    /// The sandbox mode used when no layer sets `sandbox_mode`.
    default_sandbox_mode: Option<tandem_protocol::SandboxMode>,
    /// cassette33: keys of the selected provider's table set over every layer.
    selected_provider_overrides: Vec<(String, toml::Value)>,
}

impl ServerConfigBuilder {
    /// Uses this home instead of `TANDEM_HOME` or the platform default. A relative path is
    /// taken relative to the working directory.
    pub fn tandem_home(mut self, path: impl Into<PathBuf>) -> Self {
        self.tandem_home = Some(path.into());
        self
    }

    /// Sets `thread_unload_delay_secs`, overriding the config file and any
    /// [`ServerConfigBuilder::config_override`] of it. Checked by
    /// [`ServerConfigBuilder::load`] like a value from the file.
    pub fn thread_unload_delay_secs(mut self, secs: u64) -> Self {
        self.thread_unload_delay_secs = Some(secs);
        self
    }

    /// Sets the config key `dotted_key` to `value` over the config file and its profile: what
    /// the CLI's `-c key=value` does. Repeatable; a later override of the same key wins.
    /// Dotted keys address nested tables (`model_providers.mock.base_url`; quote a segment
    /// that holds a dot: `model_providers."my.host".base_url`). The value is validated at
    /// [`ServerConfigBuilder::load`] exactly like one from the file, and an invalid one is a
    /// [`ConfigError`] naming the key and saying it came from a `-c` override.
    ///
    /// ```
    /// # let home = tempfile::tempdir().unwrap();
    /// use tandem_server::ServerConfig;
    /// let config = ServerConfig::builder()
    ///     .tandem_home(home.path())
    ///     .config_override("model_provider", "local".into())
    ///     .config_override("model_providers.local.base_url", "http://127.0.0.1:8080/v1".into())
    ///     .config_override("model", "qwen3".into())
    ///     .load()
    ///     .unwrap();
    /// assert_eq!(config.selected_provider().unwrap().base_url, "http://127.0.0.1:8080/v1");
    /// ```
    pub fn config_override(mut self, dotted_key: &str, value: toml::Value) -> Self {
        self.overrides.push((dotted_key.to_owned(), value));
        self
    }

    /// Sets `key` in the table of whichever provider the merged configuration selects
    /// (`model_providers.<model_provider>.<key>`), over every layer: what `tandem run
    /// --cassette` does without knowing the provider's name. Validated like a `-c` override;
    /// with no provider selected, [`ServerConfigBuilder::load`] fails saying so.
    pub fn selected_provider_override(mut self, key: &str, value: toml::Value) -> Self {
        self.selected_provider_overrides
            .push((key.to_owned(), value));
        self
    }

    /// Applies `[profiles.<name>]` of the config file over its top level (below any
    /// [`ServerConfigBuilder::config_override`]). Wins over a `profile` key of the file or of
    /// an override. A profile the file does not define is a [`ConfigError::UnknownProfile`].
    pub fn profile(mut self, name: impl Into<String>) -> Self {
        self.profile = Some(name.into());
        self
    }

    /// The sandbox mode when neither the config file, its profile nor an override sets
    /// `sandbox_mode` (by default `read-only`, as the reference app-server): how a front end
    /// such as `tandem run` picks its own default without overriding the user's.
    pub fn default_sandbox_mode(mut self, mode: tandem_protocol::SandboxMode) -> Self {
        self.default_sandbox_mode = Some(mode);
        self
    }

    /// With `false`, [`ServerConfigBuilder::load`] does not create a missing home: for a
    /// server that never makes a thread request (`tandem exec`), which then works under a home
    /// it could not create. The thread store still creates it on the first thread request.
    /// Default `true`.
    pub fn create_home(mut self, create: bool) -> Self {
        self.create_home = Some(create);
        self
    }

    /// With `strict`, a key that no part of Tandem reads (in the config file, a profile or an
    /// override) is a [`ConfigError::UnknownKeys`] instead of a [`ConfigWarning`].
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// [`ServerConfigBuilder::load_with_warnings`], with each warning logged (`tracing`, level
    /// warn) rather than returned.
    ///
    /// Blocking: it touches the filesystem.
    pub fn load(self) -> Result<ServerConfig, ConfigError> {
        let (config, warnings) = self.load_with_warnings()?;
        for warning in warnings {
            match warning {
                ConfigWarning::UnknownKey { .. } => tracing::warn!("{warning} (ignored)"),
                _ => tracing::warn!("{warning}"),
            }
        }
        Ok(config)
    }

    /// Resolves the home (creating it if missing), reads its config file if present, applies
    /// the profile and the overrides and validates the result. A config file that is
    /// unreadable, not TOML or holds a value of the wrong kind is an error even where an
    /// override replaces that value.
    ///
    /// Also returns what the configuration gets wrong without failing to load
    /// ([`ConfigWarning`]): unknown keys (errors in [`ServerConfigBuilder::strict`] mode), and a
    /// selected provider whose API key variable is unset or that has no model.
    ///
    /// Blocking: it touches the filesystem. Call it before starting the server, or from
    /// `spawn_blocking`.
    pub fn load_with_warnings(self) -> Result<(ServerConfig, Vec<ConfigWarning>), ConfigError> {
        let home = match self.tandem_home.clone() {
            Some(path) => make_absolute(path)?,
            None => resolve_tandem_home(
                std::env::var_os(TANDEM_HOME_ENV),
                dirs::data_dir().map(|dir| dir.join(DEFAULT_HOME_DIR_NAME)),
            )?,
        };
        if self.create_home != Some(false) {
            std::fs::create_dir_all(&home).map_err(|source| ConfigError::CreateHome {
                path: home.clone(),
                source,
            })?;
        }
        let path = home.join(CONFIG_FILE_NAME);
        let mut source = self.clone();
        source.tandem_home = Some(home.clone());
        source.file_text = None;
        let mut file = match &self.file_text {
            Some(text) => parse_file(&path, text)?,
            None => read_file(&path)?,
        };
        let file_origin = Origin::File(path.clone());
        let mut warnings = validate::unknown_keys(&file, &file_origin);
        let profiles = match file.remove(PROFILES_KEY) {
            None => toml::Table::new(),
            Some(toml::Value::Table(profiles)) => profiles,
            Some(other) => {
                return Err(ConfigError::InvalidValue {
                    key: PROFILES_KEY.to_owned(),
                    value: other.to_string(),
                    origin: file_origin.to_string(),
                    reason: "expected tables of settings, [profiles.NAME]".to_owned(),
                });
            }
        };
        // The file on its own must be well-formed, even where a later layer replaces a value.
        let mut file_only = Layered::default();
        file_only.merge(file.clone(), &file_origin);
        Settings::parse(&file_only, false)?;

        let mut overrides = Layered::default();
        for (key, value) in self.overrides {
            overrides.set(&key, value, &Origin::Override)?;
        }
        warnings.extend(validate::unknown_keys(&overrides.table, &Origin::Override));
        if self.strict && !warnings.is_empty() {
            return Err(ConfigError::UnknownKeys { unknown: warnings });
        }
        let profile = match self.profile {
            Some(name) => Some(name),
            None => match overrides.table.get(PROFILE_KEY).or(file.get(PROFILE_KEY)) {
                None => None,
                Some(toml::Value::String(name)) => Some(name.clone()),
                Some(other) => {
                    let origin = if overrides.table.contains_key(PROFILE_KEY) {
                        Origin::Override
                    } else {
                        file_origin.clone()
                    };
                    return Err(ConfigError::InvalidValue {
                        key: PROFILE_KEY.to_owned(),
                        value: other.to_string(),
                        origin: origin.to_string(),
                        reason: "expected the name of a [profiles.NAME] table".to_owned(),
                    });
                }
            },
        };

        let mut layered = Layered::default();
        layered.merge(providers::builtin_providers(), &Origin::Default);
        layered.merge(file, &file_origin);
        if let Some(name) = &profile {
            let origin = Origin::Profile {
                name: name.clone(),
                path: path.clone(),
            };
            match profiles.get(name) {
                Some(toml::Value::Table(table)) => layered.merge(table.clone(), &origin),
                Some(other) => {
                    return Err(ConfigError::InvalidValue {
                        key: format!("{PROFILES_KEY}.{name}"),
                        value: other.to_string(),
                        origin: file_origin.to_string(),
                        reason: "a profile is a table of settings".to_owned(),
                    });
                }
                None => {
                    return Err(ConfigError::UnknownProfile {
                        name: name.clone(),
                        path,
                        known: profiles.keys().cloned().collect(),
                    });
                }
            }
        }
        layered.merge(overrides.table, &Origin::Override);
        if let Some((first, value)) = self.selected_provider_overrides.first() {
            let Some(toml::Value::String(selected)) = layered.table.get(MODEL_PROVIDER_KEY) else {
                return Err(ConfigError::InvalidValue {
                    key: format!("{MODEL_PROVIDERS_KEY}.<selected>.{first}"),
                    value: value.to_string(),
                    origin: Origin::StartArguments.to_string(),
                    reason: "no model provider is selected: set model_provider in config.toml \
                             or pass -c model_provider=NAME"
                        .to_owned(),
                });
            };
            let selected = selected.replace('"', "");
            for (key, value) in self.selected_provider_overrides {
                layered.set(
                    &format!("{MODEL_PROVIDERS_KEY}.\"{selected}\".{key}"),
                    value,
                    &Origin::StartArguments,
                )?;
            }
        }
        let mut settings = Settings::parse(&layered, true)?;
        if let Some(secs) = self.thread_unload_delay_secs {
            settings.thread_unload_delay = Some(validate_thread_unload_delay(
                secs,
                &Origin::StartArguments.to_string(),
            )?);
        }
        let config = ServerConfig {
            tandem_home: home,
            thread_unload_delay: settings
                .thread_unload_delay
                .unwrap_or(DEFAULT_THREAD_UNLOAD_DELAY),
            process_output_max_bytes: settings
                .process_output_max_bytes
                .unwrap_or(DEFAULT_PROCESS_OUTPUT_MAX_BYTES),
            model: settings.model,
            model_provider: settings.model_provider,
            model_providers: settings.model_providers,
            profile,
            store_url: settings.store.url,
            lease_ttl: settings.store.lease_ttl,
            lease_handoff_wait: settings.store.handoff_wait,
            fs_api: settings.fs_api.enabled.unwrap_or(true),
            fs_read_max_bytes: settings
                .fs_api
                .read_max_bytes
                .unwrap_or(DEFAULT_FS_READ_MAX_BYTES),
            file_search_api: settings.client_apis.file_search.unwrap_or(true),
            shell_command_api: settings.client_apis.shell_command.unwrap_or(true),
            reasoning: settings.reasoning,
            mcp_servers: settings.mcp_servers,
            source: Box::new(source),
            sandbox: match (settings.sandbox, self.default_sandbox_mode) {
                (Some(policy), _) => policy,
                (None, Some(mode)) => sandbox::policy_of(
                    mode,
                    layered
                        .table
                        .get(SANDBOX_WORKSPACE_WRITE_KEY)
                        .map(toml_to_json)
                        .as_ref(),
                )
                .map_err(|(key, reason)| ConfigError::InvalidValue {
                    value: String::new(),
                    origin: layered.origin_of(SANDBOX_WORKSPACE_WRITE_KEY).to_string(),
                    key,
                    reason,
                })?,
                (None, None) => tandem_protocol::SandboxPolicy::default(),
            },
        };
        warnings.extend(validate::provider_warnings(&config, |name| {
            std::env::var_os(name)
        }));
        Ok((config, warnings))
    }
}

/// Checks that an unload deadline computed from `secs` fits the monotonic clock, now and over
/// any realistic uptime; `origin` names where the value came from for the error.
pub fn validate_thread_unload_delay(secs: u64, origin: &str) -> Result<Duration, ConfigError> {
    let delay = Duration::from_secs(secs);
    let fits = Instant::now()
        .checked_add(delay)
        .and_then(|deadline| deadline.checked_add(UPTIME_HEADROOM))
        .is_some();
    if fits {
        Ok(delay)
    } else {
        Err(ConfigError::InvalidValue {
            key: THREAD_UNLOAD_DELAY_KEY.to_owned(),
            value: secs.to_string(),
            origin: origin.to_owned(),
            reason: "the unload deadline would overflow the monotonic clock; use a smaller \
                     number of seconds (0 unloads as soon as idle)"
                .to_owned(),
        })
    }
}

/// The home from the `TANDEM_HOME` value if set and non-empty (it must be absolute), else the
/// platform default. Split from the environment so that tests need not mutate it.
fn resolve_tandem_home(
    env_value: Option<OsString>,
    platform_default: Option<PathBuf>,
) -> Result<PathBuf, ConfigError> {
    // An empty variable is how shells spell "unset" in `TANDEM_HOME= cmd`; treating it as the
    // working directory would scatter databases wherever the server happens to start.
    if let Some(path) = env_value
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
    {
        if path.is_relative() {
            return Err(ConfigError::RelativeHomeVariable { path });
        }
        return Ok(path);
    }
    make_absolute(platform_default.ok_or(ConfigError::NoHome)?)
}

fn make_absolute(path: PathBuf) -> Result<PathBuf, ConfigError> {
    if path.is_absolute() {
        return Ok(path);
    }
    std::path::absolute(&path).map_err(|source| ConfigError::RelativeHome { path, source })
}

/// Reads and parses the config file at `path`; a missing file is an empty table.
fn read_file(path: &Path) -> Result<toml::Table, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(toml::Table::new()),
        Err(source) => {
            return Err(ConfigError::ReadFile {
                path: path.to_owned(),
                source,
            });
        }
    };
    parse_file(path, &text)
}

/// Parses `text` as the config file at `path`.
fn parse_file(path: &Path, text: &str) -> Result<toml::Table, ConfigError> {
    toml::from_str(text).map_err(|source| ConfigError::ParseFile {
        path: path.to_owned(),
        source: Box::new(source),
    })
}

#[cfg(test)]
mod mcp_tests;
#[cfg(test)]
mod tests;
