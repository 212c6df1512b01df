//! The embedder's model integration point: the [`Agent`] trait, which drives one turn through
//! the narrow [`TurnDriver`] API, the deterministic default [`ScriptedAgent`], and the
//! [`OpenAiCompatibleAgent`] for real models.
//!
//! The agent never touches the protocol: it asks the driver to stream a message, call a client
//! tool, run a command or ask the user, and the driver emits the items, server requests,
//! flags and notifications in the order docs/protocol.md section 6 requires. That keeps every
//! agent — scripted or model-backed — inside the same ordering and interruption rules.
//!
//! Files: `scripted` holds the [`ScriptedAgent`], `openai` the [`OpenAiCompatibleAgent`].

mod openai;
mod scripted;

pub use openai::{AgentBuildError, OpenAiCompatibleAgent};
pub use scripted::ScriptedAgent;

use async_trait::async_trait;
use tandem_protocol::{Turn, UserInput};

pub use crate::turn::{
    CommandOptions, CommandOutcome, StreamingMessage, ToolOutcome, TurnDriver, TurnItems,
    summarize_transcript,
};

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
