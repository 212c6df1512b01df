//! What a thread hands the turn module to run (issue 28): a started turn, and the runner
//! that runs it. The server passes the runner down ([`TurnRunner`], the turn module's
//! `spawn`), so this module never calls the turn module, which uses threads.

use std::sync::Arc;

use tandem_protocol::{SharedText, ThreadItem, Turn, UserInput};

use crate::store::ThreadStore;

use super::{ActiveTurn, LoadedThread, ThreadService};

/// Starts the task that runs a started turn on a thread: the turn module's `spawn`.
pub(crate) type TurnRunner =
    fn(Arc<ThreadService>, Arc<LoadedThread>, Arc<ActiveTurn>, StartedTurn);

/// What `turn/start` (or `thread/compact/start`) stored before it answered, and what the
/// task needs of it.
pub(crate) struct StartedTurn {
    /// The turn as `turn/start` reported it (no items).
    pub(crate) turn: Turn,
    /// What the turn does.
    pub(crate) work: TurnWork,
    /// The store that holds the thread.
    pub(crate) store: Arc<dyn ThreadStore>,
}

/// What a turn does.
pub(crate) enum TurnWork {
    /// Runs the agent on the user's input.
    Input {
        /// The user's input as stored: item 0 of the turn.
        user_message: ThreadItem,
        /// The input for the agent.
        input: Vec<UserInput>,
    },
    /// Summarizes the history (`thread/compact/start`); takes no input.
    Compaction,
    /// Runs the user's own command line (`thread/shellCommand`); takes no input.
    UserShell {
        /// The command line, for the user's shell.
        command: String,
        /// When it is killed.
        timeout: std::time::Duration,
    },
}

/// The thread's preview: its first user text (shared with the input, not copied).
pub(crate) fn preview_of(input: &[UserInput]) -> SharedText {
    input
        .iter()
        .find_map(|input| match input {
            UserInput::Text { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}
