//! tandem-server: the reference MessageProcessor: real processes, durable threads, turns run
//! by a pluggable [`agent::Agent`] (the deterministic [`ScriptedAgent`], or the
//! [`OpenAiCompatibleAgent`] for a configured model provider), and idle unload.

pub mod agent;
mod catalog;
pub mod config;
pub mod helper;
pub mod options;
pub mod process;
pub mod sandbox;
pub mod server;
pub mod store;
mod threads;
mod turn;

pub use agent::{
    Agent, AgentBuildError, AgentError, CommandOptions, CommandOutcome, OpenAiCompatibleAgent,
    ScriptedAgent, StreamingMessage, ToolOutcome, TurnDriver, TurnItems,
};
pub use config::{ConfigError, ConfigWarning, ServerConfig, ServerConfigBuilder};
pub use helper::{HelperProgram, run_if_helper};
pub use options::{DEFAULT_PROCESS_DETACH_GRACE, ServerOptions, ServerOptionsError};
pub use sandbox::{ReadOnlySubpaths, ResolvedSandbox, SandboxError, SandboxSupport, Sandboxing};
pub use server::TandemServer;
pub use threads::{DEFAULT_MODEL, MODEL_PROVIDER};

/// The examples of `docs/agents.md`, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/agents.md")]
struct AgentsGuide;
