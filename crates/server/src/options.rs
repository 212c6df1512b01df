//! [`ServerOptions`]: everything a [`crate::TandemServer`] is built from — the validated
//! [`ServerConfig`] (home and `config.toml`, see [`crate::config`]), the thread store and the
//! agent. It exists beside `ServerConfig` because the store and the agent are embedder choices
//! that are not configuration values and have no place in `config/read`.
//!
//! Home resolution and validation live only in [`crate::config`]; this module adds nothing to
//! them, so an override given here is checked exactly like a value from the config file.
//!
//! The agent follows the configuration: [`ServerOptions::load`] and
//! [`ServerOptions::from_config`] pick the [`OpenAiCompatibleAgent`] for the selected
//! `model_provider`, and the [`ScriptedAgent`] when none is selected.

use std::fmt;
use std::io;
use std::sync::Arc;

use crate::agent::{Agent, AgentBuildError, OpenAiCompatibleAgent, ScriptedAgent};
use crate::config::{ConfigError, ConfigWarning, ServerConfig, ServerConfigBuilder};
use crate::helper::HelperProgram;
use crate::sandbox::{SandboxSupport, Sandboxing};
use crate::store::ThreadStore;

/// Why [`ServerOptions`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ServerOptionsError {
    /// The home or the config file could not be resolved; the message says what to fix.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The configured model provider's agent could not be set up.
    #[error(transparent)]
    Agent(#[from] AgentBuildError),
}

impl From<ServerOptionsError> for io::Error {
    fn from(error: ServerOptionsError) -> Self {
        io::Error::new(io::ErrorKind::InvalidInput, error)
    }
}

/// How a [`crate::TandemServer`] is built.
///
/// The durable thread store defaults to an SQLite database under the home, opened on the
/// first thread request (so a server that only runs processes never creates it); replace it
/// with [`ServerOptions::with_store`]. The agent is the [`OpenAiCompatibleAgent`] of the
/// configured `model_provider`, or the [`ScriptedAgent`] when none is configured; replace it
/// with [`ServerOptions::with_agent`].
#[derive(Clone)]
pub struct ServerOptions {
    /// The effective configuration (home, idle-unload delay).
    pub config: ServerConfig,
    /// The store for persisted threads; `None` selects SQLite under the home.
    pub store: Option<Arc<dyn ThreadStore>>,
    /// The agent that runs every turn.
    pub agent: Arc<dyn Agent>,
    /// The program re-executed for helper jobs, such as the watchdog that kills every child
    /// when this process dies (see [`crate::helper`]); `None` runs without a watchdog, so
    /// children outlive a `SIGKILL` of the process (logged once, at info level).
    /// Also the program that applies the command sandbox: without it, commands under a
    /// restricting sandbox policy are refused.
    pub helper_program: Option<HelperProgram>,
    /// What the command sandbox may use; `None` probes this machine (once per process).
    pub sandbox_support: Option<SandboxSupport>,
    /// procre: how long the `process/spawn` processes of a closed connection keep running,
    /// detached, for a new connection to take them over with `process/resume`
    /// (default [`DEFAULT_PROCESS_DETACH_GRACE`]); past it they are killed.
    pub process_detach_grace: std::time::Duration,
    /// Whether the configured `[mcp_servers]` start with the server (the default). A server
    /// that only runs processes (`tandem exec`) turns this off with
    /// [`ServerOptions::without_mcp_servers`], so it never spawns them.
    pub start_mcp_servers: bool,
}

/// Default of [`ServerOptions::process_detach_grace`]: 60 s.
pub const DEFAULT_PROCESS_DETACH_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

impl fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerOptions")
            .field("config", &self.config)
            .field("custom_store", &self.store.is_some())
            .field("helper_program", &self.helper_program)
            .field("start_mcp_servers", &self.start_mcp_servers)
            .finish_non_exhaustive()
    }
}

impl ServerOptions {
    /// Options for an already loaded configuration, with the default store and the agent the
    /// configuration selects: an [`OpenAiCompatibleAgent`] for its `model_provider`, else the
    /// [`ScriptedAgent`].
    pub fn from_config(config: ServerConfig) -> Result<Self, ServerOptionsError> {
        let agent: Arc<dyn Agent> = match config.selected_provider() {
            Some(provider) => Arc::new(OpenAiCompatibleAgent::new(provider.clone())?),
            None => Arc::new(ScriptedAgent),
        };
        Ok(Self {
            config,
            store: None,
            agent,
            helper_program: None,
            sandbox_support: None,
            process_detach_grace: DEFAULT_PROCESS_DETACH_GRACE,
            start_mcp_servers: true,
        })
    }

    /// Loads the configuration from `builder` (home created if missing, `config.toml` read,
    /// profile and overrides applied and validated like file values) and picks the agent it
    /// selects (see [`ServerOptions::from_config`]). Blocking: it touches the filesystem.
    pub fn load(builder: ServerConfigBuilder) -> Result<Self, ServerOptionsError> {
        Self::from_config(builder.load()?)
    }

    /// [`ServerOptions::load`], also returning what the configuration gets wrong without
    /// failing to load (unknown keys, a provider's unset API key variable or missing model;
    /// see [`ServerConfigBuilder::load_with_warnings`]), for a front end to show its user.
    pub fn load_with_warnings(
        builder: ServerConfigBuilder,
    ) -> Result<(Self, Vec<ConfigWarning>), ServerOptionsError> {
        let (config, warnings) = builder.load_with_warnings()?;
        Ok((Self::from_config(config)?, warnings))
    }

    /// Options with the home taken from `TANDEM_HOME`, else the platform data directory
    /// joined with `tandem`, and settings from its `config.toml`. Blocking.
    pub fn from_env() -> Result<Self, ServerOptionsError> {
        Self::load(ServerConfig::builder())
    }

    /// Options for the home `tandem_home` (relative paths are taken relative to the working
    /// directory), settings from its `config.toml`. Blocking.
    pub fn new(tandem_home: impl Into<std::path::PathBuf>) -> Result<Self, ServerOptionsError> {
        Self::load(ServerConfig::builder().tandem_home(tandem_home))
    }

    /// Uses `store` for persisted threads instead of SQLite under the home.
    pub fn with_store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Re-executes `program` for helper jobs; see [`ServerOptions::helper_program`]. The
    /// program's `main` must call [`crate::run_if_helper`] first thing; the `tandem` binary
    /// names itself ([`HelperProgram::current_exe`]).
    pub fn with_helper_program(mut self, program: HelperProgram) -> Self {
        self.helper_program = Some(program);
        self
    }

    /// Uses `support` instead of probing this machine for the command sandbox: e.g.
    /// [`SandboxSupport::probe_now`]`(true, None)` to see how commands are refused without Landlock.
    pub fn with_sandbox_support(mut self, support: SandboxSupport) -> Self {
        self.sandbox_support = Some(support);
        self
    }

    /// The sandboxing of a server built from these options: its support, applied by its
    /// helper program, keeping its home read-only for commands.
    pub fn sandboxing(&self) -> Sandboxing {
        let sandboxing = match &self.sandbox_support {
            Some(support) => Sandboxing::with_support(self.helper_program.clone(), support.clone()),
            None => Sandboxing::new(self.helper_program.clone()),
        };
        sandboxing.protecting_home(&self.config.tandem_home)
    }

    /// Keeps a closed connection's processes for `grace` (see
    /// [`Self::process_detach_grace`]); zero kills them when the connection closes.
    pub fn with_process_detach_grace(mut self, grace: std::time::Duration) -> Self {
        self.process_detach_grace = grace;
        self
    }

    /// Starts no MCP server: for a server that only runs processes (`tandem exec`), which
    /// would otherwise spawn every configured server for nothing. Its
    /// `mcpServerStatus/list` is then empty.
    pub fn without_mcp_servers(mut self) -> Self {
        self.start_mcp_servers = false;
        self
    }

    /// Runs turns with `agent` instead of the one the configuration selected.
    pub fn with_agent(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agent = agent;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_are_validated_like_the_file() {
        let home = tempfile::tempdir().expect("temp dir");
        let error = ServerOptions::load(
            ServerConfig::builder()
                .tandem_home(home.path())
                .thread_unload_delay_secs(u64::MAX),
        )
        .expect_err("an overflowing delay is rejected");
        let io_error = io::Error::from(error);
        assert_eq!(io_error.kind(), io::ErrorKind::InvalidInput);
        assert!(
            io_error.to_string().contains("thread_unload_delay_secs"),
            "{io_error}"
        );
    }

    #[test]
    fn relative_homes_are_made_absolute_and_created() {
        let base = tempfile::tempdir().expect("temp dir");
        let home = base.path().join("nested").join("home");
        let options = ServerOptions::new(&home).expect("load");
        assert!(options.config.tandem_home.is_absolute());
        assert!(home.is_dir());
    }
}
