//! Tandem's agents: the [`Agent`] trait an embedder implements to put a model behind a
//! thread, the [`TurnDriver`] a turn hands it, the deterministic [`ScriptedAgent`], and the
//! [`OpenAiCompatibleAgent`] with the provider configuration it reads ([`providers`]).
//!
//! The agent never touches the protocol: it asks the driver to stream a message, call a client
//! tool, run a command or ask the user, and the turn's runtime behind the driver
//! ([`TurnRuntime`], implemented by tandem-server) emits the items, server requests, flags and
//! notifications in the order docs/protocol.md section 6 requires. That keeps every agent —
//! scripted or model-backed — inside the same ordering and interruption rules, and keeps this
//! crate free of the store and of the turn's runtime.
//!
//! Start from [`Agent`]: one call per turn, with the thread's history, the turn's input and
//! the driver.
//!
//! ```
//! use async_trait::async_trait;
//! use tandem_agent::{Agent, AgentError, CommandOptions, CommandOutcome, TurnDriver};
//! use tandem_protocol::{Turn, UserInput};
//!
//! /// Runs `ls` in the thread's directory and says what it found.
//! struct Lister;
//!
//! #[async_trait]
//! impl Agent for Lister {
//!     async fn run_turn(
//!         &self,
//!         _history: &[Turn],
//!         _input: Vec<UserInput>,
//!         driver: &mut TurnDriver,
//!     ) -> Result<(), AgentError> {
//!         match driver.run_command("ls", CommandOptions::default()).await? {
//!             CommandOutcome::Ran { output, .. } => driver.agent_message(output).await,
//!             CommandOutcome::Declined => driver.agent_message("Not listing, then.").await,
//!         }
//!     }
//! }
//! # let _ = Lister;
//! ```
//!
//! tandem-server runs it: `ServerOptions::with_agent(Arc::new(Lister))`, or re-exported as
//! `tandem_server::Agent` (docs/agents.md).
//!
//! Files: `driver` holds the [`TurnDriver`] and the [`TurnRuntime`] interface, `scripted` the
//! [`ScriptedAgent`], `openai` the [`OpenAiCompatibleAgent`], `providers` the
//! `[model_providers]` configuration, `summary` the default compaction summary, `reasoning`
//! the plan and the model's reasoning, `cassette` the recording and replay of a provider's
//! answers, `mcp` the tools of MCP servers.

// cassette33: record a provider once, replay it offline.
mod cassette;
mod driver;
// mcp30: MCP tools.
mod mcp;
mod openai;
pub mod providers;
// reason29: plans and reasoning.
mod reasoning;
mod scripted;
mod summary;

pub use cassette::{
    CASSETTE_MODES, CassetteError, CassetteMode, CassetteSettings, CassetteTiming, FORMAT_VERSION,
};
pub use driver::{
    CommandOptions, CommandOutcome, PatchOutcome, StreamingMessage, ToolOutcome, TurnDriver,
    TurnItems, TurnRuntime,
};
pub use mcp::{McpToolOutcome, McpToolSpec, mcp_result_text};
pub use openai::{AgentBuildError, OpenAiCompatibleAgent, user_shell_report};
pub use providers::{ModelProviderConfig, WireApi};
pub use reasoning::{
    REASONING_EFFORTS, REASONING_SUMMARIES, ReasoningDelta, ReasoningSettings, StreamingReasoning,
};
pub use scripted::ScriptedAgent;
pub use summary::summarize_transcript;

use async_trait::async_trait;
use tandem_protocol::{Turn, UserInput};

/// Why an agent stopped a turn early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The turn was interrupted (`turn/interrupt`, or an approval answered `cancel`); return it
    /// as soon as a driver call reports it.
    #[error("turn interrupted")]
    Interrupted,
    /// The turn failed; the message becomes the turn's error and the `error` notification.
    #[error("{0}")]
    Failed(String),
}

/// The model behind a thread. One call per turn; it returns when the turn is done.
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// Runs one turn: `history` holds the thread's earlier turns (oldest first) and `input`
    /// the turn's input. Input steered into the running turn arrives through
    /// [`TurnDriver::take_steered_input`].
    async fn run_turn(
        &self,
        history: &[Turn],
        input: Vec<UserInput>,
        driver: &mut TurnDriver,
    ) -> Result<(), AgentError>;

    /// Whether this agent waits on nothing but its [`TurnDriver`] during a turn: no model
    /// request, socket or timer of its own between two driver calls, except through
    /// [`TurnDriver::or_interrupted`] or [`TurnDriver::sleep`]. When `true`, the server may
    /// hold a completed item's write and its `item/completed` until the driver's next call
    /// or the turn's end, so that a turn's last item is written in the same commit as the
    /// turn's end: one durable write per turn fewer (docs/reliability.md, "What is durable
    /// when"). Still written before it is reported, never later than the agent's next
    /// wait. The default, `false`, writes and reports every item as it completes, which
    /// suits an agent that waits on a model between driver calls.
    fn waits_only_through_driver(&self) -> bool {
        false
    }

    /// Summarizes `history` for `thread/compact/start`: later turns are given the returned
    /// summary instead of these turns. `driver` is the compaction turn's (its model, its
    /// interruption, retry reports); the driver reports the `contextCompaction` item itself,
    /// so nothing else should be emitted. The default is [`summarize_transcript`], a
    /// deterministic digest for agents without a model.
    async fn compact(
        &self,
        history: &[Turn],
        driver: &mut TurnDriver,
    ) -> Result<String, AgentError> {
        let _ = driver;
        Ok(summarize_transcript(history))
    }
}
