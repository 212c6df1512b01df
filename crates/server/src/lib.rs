//! tandem-server: the reference [`MessageProcessor`](tandem_host::MessageProcessor). It holds
//! threads and turns, the server's request handling, the configuration and the model catalog,
//! and wires the crates below it to `tandem-host`:
//!
//! | crate | what the server takes from it | re-exported as |
//! |---|---|---|
//! | `tandem-store` | the [`ThreadStore`](store::ThreadStore) threads are kept in | [`store`] |
//! | `tandem-process` | the [`ProcessManager`](process::ProcessManager) of each connection and turn, the sandbox, the helper re-exec | [`process`], [`sandbox`], [`helper`] |
//! | `tandem-agent` | the [`Agent`] that runs each turn through a [`TurnDriver`] | [`agent`] |
//!
//! Start from [`TandemServer`], built from [`ServerOptions`]; a host runs it. The embedders'
//! names ([`TandemServer`], [`ServerOptions`], [`ServerConfig`], [`Agent`], ...) are all
//! importable from this crate, whichever crate defines them.
//!
//! ```
//! use std::sync::Arc;
//! use tandem_host::MessageProcessor;
//! use tandem_host::in_process::{self, InProcessStartArgs};
//! use tandem_protocol::{ClientInfo, InitializeParams};
//! use tandem_server::{ServerOptions, TandemServer};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let home = std::env::temp_dir().join(format!("tandem-server-doc-{}", std::process::id()));
//! let options = ServerOptions::new(&home)?;
//! let initialize = InitializeParams {
//!     client_info: ClientInfo { name: "doc".into(), title: None, version: "1".into() },
//!     capabilities: None,
//! };
//! let mut handle = in_process::start(InProcessStartArgs::new(
//!     move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
//!     initialize,
//! ))
//! .await?;
//! // ... requests and events, as in the README ...
//! handle.shutdown().await?;
//! # std::fs::remove_dir_all(home)?;
//! # Ok(())
//! # }
//! ```
//!
//! Inside the crate, `server` answers requests, `threads` owns the loaded threads and queues
//! their requests, `turn` runs a turn (its runtime is the agent's
//! [`TurnRuntime`](agent::TurnRuntime)), `catalog` answers `model/list` and `account/*`,
//! `config` and `options` build the settings. docs/architecture.md says which may use which.

mod catalog;
pub mod config;
#[cfg(test)]
mod lock_waits;
pub mod options;
pub mod server;
mod threads;
mod turn;

/// The agents and the turn driver they act through: `tandem-agent`.
pub use tandem_agent as agent;
/// The MCP client (issue 30): `[mcp_servers]`, connections, the manager.
pub use tandem_mcp as mcp;
/// Processes, pipes and PTYs: `tandem-process`.
pub use tandem_process as process;
pub use tandem_process::sandbox;

/// Helper programs (`tandem-process`'s `helper`), with [`enable_watchdog`](helper::enable_watchdog)
/// beside them as before the split.
pub mod helper {
    pub use tandem_process::enable_watchdog;
    pub use tandem_process::helper::*;
}
/// Durable threads: `tandem-store`.
pub use tandem_store as store;

pub use agent::{
    Agent, AgentBuildError, AgentError, CommandOptions, CommandOutcome, OpenAiCompatibleAgent,
    PatchOutcome, ScriptedAgent, StreamingMessage, ToolOutcome, TurnDriver, TurnItems,
};
pub use catalog::{DEFAULT_MODEL, MODEL_PROVIDER};
pub use config::{ConfigError, ConfigWarning, ServerConfig, ServerConfigBuilder};
pub use helper::{HelperProgram, run_if_helper};
pub use options::{DEFAULT_PROCESS_DETACH_GRACE, ServerOptions, ServerOptionsError};
pub use sandbox::{ReadOnlySubpaths, ResolvedSandbox, SandboxError, SandboxSupport, Sandboxing};
pub use server::{FS_MAX_CHANGED_PATHS, FS_WATCH_DEBOUNCE, FsError, TandemServer};

/// Tandem's own version: `tandemVersion` of the `initialize` result, inside `userAgent`, and
/// threads' `cliVersion`. `serverInfo.version` is the protocol revision instead
/// ([`tandem_protocol::UPSTREAM_PROTOCOL_VERSION`]).
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The examples of `docs/agents.md`, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/agents.md")]
struct AgentsGuide;
