//! What a thread hands the turn module to run (issue 28): a started turn, and the runner
//! that runs it. The server passes the runner down ([`TurnRunner`], the turn module's
//! `spawn`), so this module never calls the turn module, which uses threads.

use std::sync::Arc;

use tandem_protocol::{SharedText, ThreadItem, Turn, UserInput};

use crate::store::ThreadStore;

use super::{ActiveTurn, LoadedThread, ThreadService};

/// What the turn module hands threads: the turn module's `spawn` and `spawn_side_command`.
#[derive(Clone, Copy)]
pub(crate) struct TurnRunner {
    /// Starts the task that runs a started turn on a thread.
    pub(crate) start: fn(Arc<ThreadService>, Arc<LoadedThread>, Arc<ActiveTurn>, StartedTurn),
    /// search29: starts the task of a user's shell command beside the agent of a running turn,
    /// as an item of that turn; it runs once told so (see [`SideCommand::go`]) and hands back
    /// the ids of the items it stored.
    pub(crate) side_command: SideCommandRunner,
}

/// search29: starts the task of a [`SideCommand`]; the task hands back the ids of the items
/// it stored.
pub(crate) type SideCommandRunner =
    fn(
        &ThreadService,
        &Arc<LoadedThread>,
        &Arc<ActiveTurn>,
        SideCommand,
    ) -> tokio::task::JoinHandle<std::collections::HashSet<String>>;

/// search29: a user's shell command (`thread/shellCommand`) for a running turn.
pub(crate) struct SideCommand {
    /// The store that holds the thread.
    pub(crate) store: Arc<dyn ThreadStore>,
    /// The command line, for the user's shell.
    pub(crate) command: String,
    /// When it is killed.
    pub(crate) timeout: std::time::Duration,
    /// `true` once the turn took the command and the request was answered (the item comes
    /// after the answer); `false` or dropped: the turn was ending, nothing runs.
    pub(crate) go: tokio::sync::oneshot::Receiver<bool>,
}

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
        /// The user's input as stored: item 0 of the turn (boxed: an item is large, the
        /// other variants are not).
        user_message: Box<ThreadItem>,
        /// The input for the agent.
        input: Vec<UserInput>,
        /// When `turn/start` stored the input: its `item/started` and `item/completed` time,
        /// stored with it.
        input_at_ms: i64,
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
