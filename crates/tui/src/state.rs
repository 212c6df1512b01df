//! The app state: everything the screens show, as plain data. Client events are applied to it
//! as they arrive (by the app's intake tasks) and the renderer draws from it; it performs no
//! I/O and holds no live request objects, so every screen can be built and snapshot-tested
//! from values alone.

use std::collections::VecDeque;

use tandem_client::TurnEvent;
use tandem_protocol::{
    CommandExecutionStatus, DynamicToolCallStatus, FileUpdateChange, McpToolCallStatus,
    PatchApplyStatus, ServerNotification, Thread, ThreadItem, ThreadTokenUsage, Turn, TurnPlanStep,
    TurnStatus, UserInput,
};

mod agent_items;
mod approvals;

pub use approvals::{ApprovalSubject, ApprovalView, QuestionView};

use crate::composer::Composer;
use crate::markdown::RenderCache;
use crate::pane::{PaneSource, TermPane};

/// The limits the state keeps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Rows of scrollback each terminal pane keeps above its screen.
    pub scrollback_rows: usize,
    /// Transcript entries kept; older ones are dropped (a resume shows them again).
    pub transcript_entries: usize,
    /// Terminal panes kept; the oldest finished one goes first.
    pub panes: usize,
    /// Composer history entries kept.
    pub history: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            scrollback_rows: 10_000,
            transcript_entries: 5_000,
            panes: 16,
            history: 500,
        }
    }
}

/// Which screen is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// The conversation: transcript, panes, composer.
    Chat,
    /// The list of threads.
    Threads,
}

/// Where keys go on the chat screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// The composer (and the transcript's scroll keys).
    Composer,
    /// The active terminal pane: keys go to its process, if it takes input.
    Pane,
}

/// One row of the thread list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSummary {
    /// The thread id.
    pub id: String,
    /// Its name, else the first user text.
    pub title: String,
    /// Last update, unix seconds.
    pub updated_at: i64,
    /// The thread it was forked from.
    pub forked_from: Option<String>,
}

impl From<&Thread> for ThreadSummary {
    fn from(thread: &Thread) -> Self {
        Self {
            id: thread.id.clone(),
            title: thread
                .name
                .as_deref()
                .unwrap_or(&thread.preview)
                .trim()
                .to_owned(),
            updated_at: thread.updated_at,
            forked_from: thread.forked_from_id.clone(),
        }
    }
}

/// The thread list screen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadList {
    /// The threads, newest first.
    pub items: Vec<ThreadSummary>,
    /// The highlighted row.
    pub selected: usize,
    /// Whether a `thread/list` is on its way.
    pub loading: bool,
}

impl ThreadList {
    /// The highlighted thread.
    pub fn selected(&self) -> Option<&ThreadSummary> {
        self.items.get(self.selected)
    }
}

/// The thread the chat is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// The thread id.
    pub id: String,
    /// Its model, if known.
    pub model: Option<String>,
    /// Its model provider.
    pub provider: String,
}

impl From<&Thread> for ThreadInfo {
    fn from(thread: &Thread) -> Self {
        Self {
            id: thread.id.clone(),
            model: thread.model.clone(),
            provider: thread.model_provider.clone(),
        }
    }
}

/// Where the current turn is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnState {
    /// No turn: Enter starts one.
    Idle,
    /// `turn/start` (and `thread/start` first, on a new thread) is on its way.
    Starting,
    /// A turn runs: Enter steers it, Esc interrupts it.
    Running {
        /// The turn id.
        turn_id: String,
    },
    /// An interrupt was sent; the completion follows.
    Interrupting {
        /// The turn id.
        turn_id: String,
    },
}

impl TurnState {
    /// The running turn's id, if one runs.
    pub fn turn_id(&self) -> Option<&str> {
        match self {
            Self::Running { turn_id } | Self::Interrupting { turn_id } => Some(turn_id),
            Self::Idle | Self::Starting => None,
        }
    }

    /// Whether a turn is starting or running.
    pub fn is_busy(&self) -> bool {
        !matches!(self, Self::Idle)
    }
}

/// How a command item stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandState {
    /// Waiting for approval or running.
    Running,
    /// Exited with this code.
    Exited(i32),
    /// Declined.
    Declined,
    /// Could not run.
    Failed,
}

/// One entry of the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// What the user sent (`steered`: added to a running turn).
    User {
        /// The text.
        text: String,
        /// Whether it steered a running turn.
        steered: bool,
    },
    /// The agent's text (streaming until its item completes), markdown.
    Agent {
        /// The item id.
        item_id: String,
        /// The text so far.
        text: String,
        /// Its rendered rows (see [`Entry::agent`]).
        rendered: RenderCache,
    },
    /// A command the agent runs; its output is in a terminal pane.
    Command {
        /// The item id.
        item_id: String,
        /// The command.
        command: String,
        /// How it stands.
        state: CommandState,
    },
    /// A dynamic tool call.
    Tool {
        /// The item id.
        item_id: String,
        /// The tool.
        tool: String,
        /// Its status.
        status: DynamicToolCallStatus,
    },
    /// A file change: its diff, coloured, and how it stands.
    FileChange {
        /// The item id.
        item_id: String,
        /// Every file, with its diff.
        changes: Vec<FileUpdateChange>,
        /// Its status.
        status: PatchApplyStatus,
    },
    /// A turn's plan, as a checklist; replaced in place by each update (one per turn).
    Plan {
        /// The turn.
        turn_id: String,
        /// Why the plan changed, if the agent said.
        explanation: Option<String>,
        /// The steps.
        steps: Vec<TurnPlanStep>,
    },
    /// The model's reasoning, dimmed; folded to one line unless
    /// [`AppState::reasoning_expanded`].
    Reasoning {
        /// The item id.
        item_id: String,
        /// The summary's parts.
        summary: Vec<String>,
        /// The reasoning text's parts.
        content: Vec<String>,
    },
    /// A note of the app: a turn's ending, an error, a hint.
    Notice(String),
}

impl Entry {
    /// An agent message with nothing rendered yet.
    pub fn agent(item_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::Agent {
            item_id: item_id.into(),
            text: text.into(),
            rendered: RenderCache::default(),
        }
    }
}

/// The connection to the server, as the status line shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// What the client talks to (`in-process`, `ws://...`, `spawn: CMD`).
    pub label: String,
    /// The connection generation (each reconnect or child restart adds one).
    pub generation: u64,
    /// Why the connection was lost, until a later request succeeds.
    pub lost: Option<String>,
}

/// The app state.
#[derive(Debug)]
pub struct AppState {
    /// The screen shown.
    pub screen: Screen,
    /// Where keys go on the chat screen.
    pub focus: Focus,
    /// The thread list.
    pub threads: ThreadList,
    /// The chat's thread; `None` until the first message creates it.
    pub thread: Option<ThreadInfo>,
    /// The model asked for on the command line.
    pub model: Option<String>,
    /// The transcript.
    pub transcript: VecDeque<Entry>,
    /// Entries dropped from the front to stay within [`Limits::transcript_entries`].
    pub transcript_dropped: u64,
    /// Rows the transcript is scrolled back from its end (0: follows the end).
    pub transcript_scroll: usize,
    /// The composer.
    pub composer: Composer,
    /// The turn.
    pub turn: TurnState,
    /// Approvals waiting for the user, oldest first.
    pub approvals: VecDeque<ApprovalView>,
    /// Questions waiting for the user, oldest first.
    pub questions: VecDeque<QuestionView>,
    /// Terminal panes, oldest first.
    pub panes: Vec<TermPane>,
    /// The pane shown.
    pub active_pane: Option<usize>,
    /// The size panes have (the pane area inside its border).
    pub pane_size: (u16, u16),
    /// The thread's token usage, once reported.
    pub tokens: Option<ThreadTokenUsage>,
    /// The connection.
    pub connection: Connection,
    /// Consecutive Ctrl-C presses.
    pub interrupts: u32,
    /// A one-line hint for the status line (cleared by the next key).
    pub hint: Option<String>,
    /// Whether reasoning entries show in full (Ctrl-R toggles it).
    pub reasoning_expanded: bool,
    /// The limits.
    pub limits: Limits,
}

impl AppState {
    /// A fresh state: chat screen, no thread yet.
    pub fn new(connection_label: impl Into<String>, model: Option<String>, limits: Limits) -> Self {
        Self {
            screen: Screen::Chat,
            focus: Focus::Composer,
            threads: ThreadList::default(),
            thread: None,
            model,
            transcript: VecDeque::new(),
            transcript_dropped: 0,
            transcript_scroll: 0,
            composer: Composer::new(limits.history),
            turn: TurnState::Idle,
            approvals: VecDeque::new(),
            questions: VecDeque::new(),
            panes: Vec::new(),
            active_pane: None,
            pane_size: (10, 80),
            tokens: None,
            connection: Connection {
                label: connection_label.into(),
                generation: 0,
                lost: None,
            },
            interrupts: 0,
            hint: None,
            reasoning_expanded: false,
            limits,
        }
    }

    /// Appends an entry, dropping the oldest beyond the limit.
    pub fn push_entry(&mut self, entry: Entry) {
        if self.transcript.len() >= self.limits.transcript_entries.max(1) {
            self.transcript.pop_front();
            self.transcript_dropped += 1;
        }
        self.transcript.push_back(entry);
    }

    /// Appends a notice.
    pub fn notice(&mut self, text: impl Into<String>) {
        self.push_entry(Entry::Notice(text.into()));
    }

    /// The chat is now on `thread`, whose `turns` are shown as its history.
    pub fn open_thread(&mut self, thread: &Thread) {
        self.thread = Some(ThreadInfo::from(thread));
        self.transcript.clear();
        self.transcript_dropped = 0;
        self.transcript_scroll = 0;
        self.tokens = None;
        self.screen = Screen::Chat;
        for turn in &thread.turns {
            for item in &turn.items {
                self.show_item(item);
            }
            self.show_ending(turn);
        }
    }

    /// A new chat: the next message starts a new thread.
    pub fn new_chat(&mut self) {
        self.thread = None;
        self.transcript.clear();
        self.transcript_dropped = 0;
        self.transcript_scroll = 0;
        self.tokens = None;
        self.screen = Screen::Chat;
    }

    pub(crate) fn position(&self, item_id: &str) -> Option<usize> {
        self.transcript.iter().rposition(|entry| match entry {
            Entry::Agent { item_id: id, .. }
            | Entry::Command { item_id: id, .. }
            | Entry::Tool { item_id: id, .. }
            | Entry::FileChange { item_id: id, .. }
            | Entry::Reasoning { item_id: id, .. } => id == item_id,
            Entry::User { .. } | Entry::Plan { .. } | Entry::Notice(_) => false,
        })
    }

    /// Shows `item` in its present state: adds it, or updates the entry it already has.
    fn show_item(&mut self, item: &ThreadItem) {
        let entry = match item {
            ThreadItem::UserMessage { content, .. } => {
                let texts: Vec<&str> = content
                    .iter()
                    .filter_map(|input| match input {
                        UserInput::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                if self.transcript.iter().rev().take(4).any(
                    |entry| matches!(entry, Entry::User { text, .. } if *text == texts.join("\n")),
                ) {
                    // Already shown when it was sent.
                    return;
                }
                Entry::User {
                    text: texts.join("\n"),
                    steered: false,
                }
            }
            ThreadItem::AgentMessage { id, text } => Entry::agent(id.clone(), text.clone()),
            ThreadItem::CommandExecution {
                id,
                command,
                status,
                exit_code,
                ..
            } => Entry::Command {
                item_id: id.clone(),
                command: command.clone(),
                state: match (status, exit_code) {
                    (CommandExecutionStatus::InProgress, _) => CommandState::Running,
                    (CommandExecutionStatus::Completed, Some(code)) => CommandState::Exited(*code),
                    (CommandExecutionStatus::Declined, _) => CommandState::Declined,
                    (CommandExecutionStatus::Completed | CommandExecutionStatus::Failed, _) => {
                        CommandState::Failed
                    }
                },
            },
            ThreadItem::DynamicToolCall {
                id, tool, status, ..
            } => Entry::Tool {
                item_id: id.clone(),
                tool: tool.clone(),
                status: *status,
            },
            // mcp30: an MCP tool call shows as a tool entry named `SERVER/TOOL`.
            ThreadItem::McpToolCall {
                id,
                server,
                tool,
                status,
                ..
            } => Entry::Tool {
                item_id: id.clone(),
                tool: format!("{server}/{tool}"),
                status: match status {
                    McpToolCallStatus::InProgress => DynamicToolCallStatus::InProgress,
                    McpToolCallStatus::Completed => DynamicToolCallStatus::Completed,
                    McpToolCallStatus::Failed => DynamicToolCallStatus::Failed,
                },
            },
            ThreadItem::ContextCompaction { .. } => {
                Entry::Notice("(earlier turns compacted into a summary)".into())
            }
            ThreadItem::Reasoning {
                id,
                summary,
                content,
            } => Entry::Reasoning {
                item_id: id.clone(),
                summary: summary.clone(),
                content: content.clone(),
            },
            ThreadItem::FileChange {
                id,
                changes,
                status,
            } => Entry::FileChange {
                item_id: id.clone(),
                changes: changes.clone(),
                status: *status,
            },
        };
        match self.position(item.id()) {
            Some(index) => self.transcript[index] = entry,
            None => self.push_entry(entry),
        }
    }

    fn show_ending(&mut self, turn: &Turn) {
        match turn.status {
            TurnStatus::Failed => {
                let reason = turn
                    .error
                    .as_ref()
                    .map(|error| error.message.as_str())
                    .unwrap_or_default();
                self.notice(format!("(turn failed: {reason})"));
            }
            TurnStatus::Interrupted => self.notice("(interrupted)"),
            TurnStatus::Completed | TurnStatus::InProgress => {}
        }
    }

    /// The user sent `text`: as a new turn, or steering the running one.
    pub fn user_sent(&mut self, text: &str, steered: bool) {
        self.transcript_scroll = 0;
        self.push_entry(Entry::User {
            text: text.to_owned(),
            steered,
        });
    }

    /// `turn/start` answered: the turn runs.
    pub fn turn_running(&mut self, turn_id: &str) {
        if self.turn == TurnState::Starting {
            self.turn = TurnState::Running {
                turn_id: turn_id.to_owned(),
            };
        }
    }

    /// attach19: another client started turn `turn_id` on the thread shown: it is followed
    /// as if it were this client's (its text and items stream in; Esc interrupts it, Enter
    /// steers it).
    pub fn foreign_turn_started(&mut self, turn_id: &str) {
        if self.turn == TurnState::Idle {
            self.turn = TurnState::Running {
                turn_id: turn_id.to_owned(),
            };
            self.notice("(a turn started by another client)");
        }
    }

    /// Applies one event of the running turn. Server requests (approvals, questions, tool
    /// calls) are taken by the app before this and arrive as [`Self::approval_requested`] and
    /// [`Self::question_asked`].
    pub fn apply_turn_event(&mut self, event: TurnEvent) {
        match event {
            TurnEvent::AgentText { item_id, delta } => match self.position(&item_id) {
                Some(index) => {
                    if let Entry::Agent { text, .. } = &mut self.transcript[index] {
                        text.push_str(&delta);
                    }
                }
                None => self.push_entry(Entry::agent(item_id, delta)),
            },
            TurnEvent::CommandOutput { item_id, delta } => {
                if let Some(pane) = self.command_pane(&item_id) {
                    pane.feed(delta.as_bytes());
                }
            }
            TurnEvent::ItemStarted(item) | TurnEvent::ItemCompleted(item) => {
                if let ThreadItem::CommandExecution { id, command, .. } = &item
                    && self.command_pane(id).is_none()
                {
                    self.add_pane(TermPane::new(
                        format!("$ {command}"),
                        PaneSource::Command {
                            item_id: id.clone(),
                        },
                        self.pane_size.0,
                        self.pane_size.1,
                        self.limits.scrollback_rows,
                    ));
                }
                self.command_finished(&item);
                self.show_item(&item);
            }
            TurnEvent::RequestResolved(id) => {
                let key = id.to_string();
                self.approvals.retain(|approval| approval.key != key);
                self.questions.retain(|question| question.key != key);
            }
            TurnEvent::Error(error) if error.will_retry => {
                self.notice(format!("(retrying: {})", error.error.message));
            }
            TurnEvent::Error(error) => self.notice(format!("error: {}", error.error.message)),
            TurnEvent::Lagged { skipped } => {
                // The completed turn brings the full text and output back.
                tracing::debug!(skipped, "turn events skipped");
            }
            TurnEvent::Completed(turn) => self.turn_completed(&turn),
            TurnEvent::Gap { snapshot } => {
                // The connection came back past what the server could replay: what was
                // missed is rebuilt from the server's copy of the turn, and said so.
                self.notice("(reconnected: missed events rebuilt from the server's copy)");
                if let Some(turn) = snapshot {
                    for item in &turn.items {
                        self.command_finished(item);
                        self.show_item(item);
                    }
                }
            }
            TurnEvent::Other(ServerNotification::ThreadTokenUsageUpdated(usage)) => {
                self.tokens = Some(usage.token_usage);
            }
            TurnEvent::Other(note) => self.agent_notification(note),
            TurnEvent::Started(_)
            | TurnEvent::Status(_)
            | TurnEvent::Approval(_)
            | TurnEvent::FileChangeApproval(_)
            | TurnEvent::Question(_)
            | TurnEvent::ToolCall(_)
            | TurnEvent::OtherRequest(_) => {}
        }
    }

    /// A completed command item whose pane missed output (skipped deltas) gets its final
    /// output instead.
    fn command_finished(&mut self, item: &ThreadItem) {
        let ThreadItem::CommandExecution {
            id,
            status,
            exit_code,
            aggregated_output,
            ..
        } = item
        else {
            return;
        };
        if *status == CommandExecutionStatus::InProgress {
            return;
        }
        let Some(pane) = self.command_pane(id) else {
            return;
        };
        if let Some(output) = aggregated_output
            && pane.bytes_fed() != output.len() as u64
        {
            pane.replace_output(output.as_bytes());
        }
        pane.finished = Some(match (status, exit_code) {
            (CommandExecutionStatus::Declined, _) => "declined".into(),
            (_, Some(code)) => format!("exit {code}"),
            _ => "failed".into(),
        });
    }

    /// The turn ended: every item in its final state (so the transcript is exact even if
    /// deltas were skipped) and how it ended.
    pub fn turn_completed(&mut self, turn: &Turn) {
        for item in &turn.items {
            self.command_finished(item);
            self.show_item(item);
        }
        self.show_ending(turn);
        self.turn = TurnState::Idle;
        self.approvals.clear();
        self.questions.clear();
    }

    /// The turn could not start or its events ended without a completion.
    pub fn turn_lost(&mut self, reason: &str) {
        self.notice(format!("error: {reason}"));
        self.turn = TurnState::Idle;
        self.approvals.clear();
        self.questions.clear();
    }

    /// The agent asks to run a command.
    pub fn approval_requested(&mut self, approval: ApprovalView) {
        self.approvals.push_back(approval);
    }

    /// The agent asks questions.
    pub fn question_asked(&mut self, question: QuestionView) {
        self.questions.push_back(question);
    }

    fn command_pane(&mut self, item_id: &str) -> Option<&mut TermPane> {
        self.panes.iter_mut().find(
            |pane| matches!(&pane.source, PaneSource::Command { item_id: id } if id == item_id),
        )
    }

    /// The pane of process `handle` (owned or watched).
    pub fn process_pane(&mut self, handle: &str) -> Option<&mut TermPane> {
        self.panes
            .iter_mut()
            .find(|pane| pane.source.process_handle() == Some(handle))
    }

    /// Adds a pane and shows it; beyond the limit the oldest finished pane goes.
    pub fn add_pane(&mut self, pane: TermPane) {
        if self.panes.len() >= self.limits.panes.max(1) {
            let oldest = self
                .panes
                .iter()
                .position(|pane| pane.finished.is_some())
                .unwrap_or(0);
            self.panes.remove(oldest);
        }
        self.panes.push(pane);
        self.active_pane = Some(self.panes.len() - 1);
    }

    /// The pane shown, if any.
    pub fn active_pane(&self) -> Option<&TermPane> {
        self.active_pane.and_then(|index| self.panes.get(index))
    }

    /// The pane shown, mutably.
    pub fn active_pane_mut(&mut self) -> Option<&mut TermPane> {
        self.active_pane.and_then(|index| self.panes.get_mut(index))
    }

    /// Resizes every pane to `rows` x `cols`; returns the processes whose PTY must follow.
    pub fn resize_panes(&mut self, rows: u16, cols: u16) -> Vec<String> {
        self.pane_size = (rows, cols);
        let mut processes = Vec::new();
        for pane in &mut self.panes {
            // A watched process is drawn for its owner's PTY, whatever size this pane is.
            if matches!(pane.source, PaneSource::Attached { .. }) {
                continue;
            }
            if pane.size() != (rows, cols) {
                pane.resize(rows, cols);
                if let (PaneSource::Process { handle }, true) =
                    (&pane.source, pane.finished.is_none())
                {
                    processes.push(handle.clone());
                }
            }
        }
        processes
    }

    /// Shows the next pane (cycling).
    pub fn next_pane(&mut self) {
        if self.panes.is_empty() {
            return;
        }
        self.active_pane = Some(match self.active_pane {
            Some(index) => (index + 1) % self.panes.len(),
            None => self.panes.len() - 1,
        });
    }

    /// Hides the pane area.
    pub fn hide_pane(&mut self) {
        self.active_pane = None;
        self.focus = Focus::Composer;
    }

    /// Scrolls the transcript `rows` back (negative: towards the end).
    pub fn scroll_transcript(&mut self, rows: isize) {
        self.transcript_scroll = self.transcript_scroll.saturating_add_signed(rows);
    }

    /// The thread list arrived.
    pub fn threads_loaded(&mut self, threads: &[Thread]) {
        self.threads.items = threads.iter().map(ThreadSummary::from).collect();
        self.threads.selected = self
            .threads
            .selected
            .min(self.threads.items.len().saturating_sub(1));
        self.threads.loading = false;
    }

    /// Moves the thread list's highlight by `delta` rows.
    pub fn select_thread(&mut self, delta: isize) {
        let last = self.threads.items.len().saturating_sub(1);
        self.threads.selected = self.threads.selected.saturating_add_signed(delta).min(last);
    }
}

#[cfg(test)]
mod tests;
