//! The app runtime. Three things run apart so that none waits for another:
//!
//! - **intake**: one task per turn and per process applies the client's events to the
//!   [`AppState`] as they arrive (a flood of output never waits for a frame);
//! - **rendering**: the app loop draws from the state when it changed, at most once per
//!   frame interval, however many events arrived in between;
//! - **input**: terminal events go through the keymap to actions; actions that talk to the
//!   server are spawned, so a slow reply never blocks the keyboard.
//!
//! Live request objects (approvals, questions) stay here, keyed by request id; the state holds
//! only what the screens show.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use crossterm::event::Event;
use futures::{Stream, StreamExt as _};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use tandem_client::{
    ApprovalRequest, Client, ClientError, Event as ClientEvent, Overflow, ProcessEvent,
    ProcessHandle, Subscription, SubscriptionFilter, SubscriptionOptions, TurnEvent, TurnHandle,
    UserInputRequest,
};
use tandem_protocol::client_methods::ThreadArchive;
use tandem_protocol::{
    CommandExecutionApprovalDecision, ProcessAttachParams, ProcessResizePtyParams,
    ProcessSpawnParams, ProcessWriteStdinParams, ServerNotification, ThreadArchiveParams,
    ThreadForkParams, ThreadListParams, ThreadResumeParams, ThreadStartParams, TurnInterruptParams,
    TurnStartParams, TurnStatus, TurnSteerParams, UserInput,
};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::keymap::{self, Action, Edit, Mode};
use crate::pane::{PaneSource, TermPane};
use crate::state::{
    AppState, ApprovalView, Focus, Limits, QuestionView, Screen, ThreadInfo, TurnState,
};
use crate::ui;

mod follow;

use follow::{attach_process, follow_process, follow_thread, start_turn, thread_events};

/// Default [`TuiOptions::frame_interval`]: at most 60 frames a second.
pub const DEFAULT_FRAME_INTERVAL: Duration = Duration::from_millis(16);

/// Keystrokes waiting to be written to a pane's process; beyond this a key is dropped (and
/// the user told), rather than the keyboard waiting for the server.
const STDIN_QUEUE: usize = 256;

/// Process output deltas a pane's subscription holds; a lossless subscription, so a full
/// queue makes the process wait (the server's backpressure) instead of losing output. With
/// the server's deltas of at most 64 KiB, this bounds a flood's queued output to 16 MiB.
pub const PROCESS_QUEUE_DELTAS: usize = 256;

/// The most output bytes run through a pane's emulator at once (under the state's lock, in
/// one poll of the intake task): a few hundred microseconds of work.
const FEED_SLICE_BYTES: usize = 8 * 1024;

/// The TUI's settings.
#[derive(Debug, Clone)]
pub struct TuiOptions {
    /// What the client talks to, for the status line (`in-process`, `ws://...`).
    pub connection_label: String,
    /// The model for new threads and turns (`--model`).
    pub model: Option<String>,
    /// The working directory of new threads and of `!` processes.
    pub cwd: String,
    /// The shortest time between two frames.
    pub frame_interval: Duration,
    /// The bounds of the state.
    pub limits: Limits,
}

impl TuiOptions {
    /// Options for a client described by `connection_label`, working in `cwd`.
    pub fn new(connection_label: impl Into<String>, cwd: impl Into<String>) -> Self {
        Self {
            connection_label: connection_label.into(),
            model: None,
            cwd: cwd.into(),
            frame_interval: DEFAULT_FRAME_INTERVAL,
            limits: Limits::default(),
        }
    }
}

/// How the app ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// `/quit` or Ctrl-D.
    Quit,
    /// Ctrl-C twice.
    Interrupted,
    /// The shutdown future resolved (a signal).
    Shutdown,
    /// The input stream ended.
    InputClosed,
}

impl ExitReason {
    /// The process exit code: 130 (128 + SIGINT) after Ctrl-C twice, else 0.
    pub fn exit_code(self) -> i32 {
        match self {
            Self::Interrupted => 130,
            Self::Quit | Self::Shutdown | Self::InputClosed => 0,
        }
    }
}

/// Why the TUI stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The terminal could not be put into full-screen mode.
    #[error("cannot set up the terminal (`tandem tui` needs a terminal on stdin and stdout): {0}")]
    Terminal(io::Error),
    /// Drawing failed.
    #[error("cannot draw on the terminal: {0}")]
    Draw(String),
    /// Reading the terminal's events failed.
    #[error("cannot read the terminal's input: {0}")]
    Input(io::Error),
    /// A task of the app panicked; the terminal was restored and the app stopped.
    #[error(
        "the TUI stopped after an internal panic (its message is above); the terminal was \
         restored. Please report it with that message"
    )]
    Panicked,
}

struct Shared {
    state: Mutex<AppState>,
    /// attach19: the turns this client started, which the thread follower leaves to their
    /// own handles.
    own_turns: Mutex<OwnTurns>,
    /// attach19: the task that follows the shown thread's turns started by other clients.
    thread_follower: Mutex<Option<tokio::task::AbortHandle>>,
    /// Bumped on every change of the state: the renderer and tests wait on it.
    version: watch::Sender<u64>,
    approvals: Mutex<HashMap<String, ApprovalRequest>>,
    questions: Mutex<HashMap<String, UserInputRequest>>,
}

/// How many of this client's own turn ids are remembered (a late event of an older own turn
/// is the only thing they filter).
const OWN_TURNS_KEPT: usize = 16;

/// Thread events the follower of turns started elsewhere holds; beyond it best-effort events
/// are skipped (the completed turn carries every item in full).
const FOLLOW_QUEUE: usize = 1024;

/// attach19: this client's turns, as the thread follower must tell them from others'.
#[derive(Default)]
struct OwnTurns {
    /// `turn/start` requests in flight: the turn they start is not known by id yet, and one
    /// thread runs one turn at a time, so the turn events meanwhile are theirs.
    starting: usize,
    ids: std::collections::VecDeque<String>,
}

impl OwnTurns {
    fn is_own(&self, turn_id: &str) -> bool {
        self.starting > 0 || self.ids.iter().any(|id| id == turn_id)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The TUI: its state, its client and its options. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Tui {
    shared: Arc<Shared>,
    client: Client,
    options: Arc<TuiOptions>,
    next_process: Arc<AtomicU64>,
}

impl std::fmt::Debug for Tui {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tui")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Tui {
    /// A TUI on `client`.
    pub fn new(client: Client, options: TuiOptions) -> Self {
        let state = AppState::new(
            options.connection_label.clone(),
            options.model.clone(),
            options.limits,
        );
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                own_turns: Mutex::new(OwnTurns::default()),
                thread_follower: Mutex::new(None),
                version: watch::Sender::new(0),
                approvals: Mutex::new(HashMap::new()),
                questions: Mutex::new(HashMap::new()),
            }),
            client,
            options: Arc::new(options),
            next_process: Arc::new(AtomicU64::new(1)),
        }
    }

    /// The state, locked (briefly: intake tasks wait while it is held).
    pub fn state(&self) -> MutexGuard<'_, AppState> {
        lock(&self.shared.state)
    }

    /// Changes the state and wakes the renderer.
    fn update<R>(&self, change: impl FnOnce(&mut AppState) -> R) -> R {
        let result = change(&mut self.state());
        self.shared.version.send_modify(|version| *version += 1);
        result
    }

    /// Waits until `ready` holds of the state, for at most `timeout`.
    pub async fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        ready: impl Fn(&AppState) -> bool,
    ) -> Result<(), String> {
        let mut changes = self.shared.version.subscribe();
        let waiting = async {
            loop {
                if ready(&self.state()) {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(timeout, waiting)
            .await
            .map_err(|_| format!("timed out after {timeout:?} waiting for {what}"))
    }

    /// Runs the app on `terminal` with `input` until the user quits, the input ends or
    /// `shutdown` resolves. The caller restores the terminal and closes the client.
    pub async fn run<B, S, F>(
        &self,
        terminal: &mut Terminal<B>,
        mut input: S,
        shutdown: F,
    ) -> Result<ExitReason, TuiError>
    where
        B: Backend,
        S: Stream<Item = io::Result<Event>> + Unpin,
        F: Future<Output = ()>,
    {
        let (stdin, stdin_rx) = mpsc::channel(STDIN_QUEUE);
        let writer = tokio::spawn(write_stdin(self.clone(), stdin_rx));
        let mut controller = Controller {
            tui: self.clone(),
            stdin,
            area: Rect::default(),
            exit: None,
        };
        let size = terminal
            .size()
            .map_err(|error| TuiError::Draw(error.to_string()))?;
        controller.resized(Rect::new(0, 0, size.width, size.height));
        let mut changes = self.shared.version.subscribe();
        let interval = self.options.frame_interval;
        let mut dirty = true;
        let mut last_frame: Option<Instant> = None;
        tokio::pin!(shutdown);
        let result = loop {
            if let Some(exit) = controller.exit.take() {
                break Ok(exit);
            }
            let next_frame = last_frame.map_or_else(Instant::now, |at| at + interval);
            tokio::select! {
                // Input first: keys are handled before pending output is drawn.
                biased;
                () = &mut shutdown => break Ok(ExitReason::Shutdown),
                event = input.next() => match event {
                    Some(Ok(event)) => {
                        controller.on_event(event);
                        dirty = true;
                    }
                    Some(Err(error)) => break Err(TuiError::Input(error)),
                    None => break Ok(ExitReason::InputClosed),
                },
                _ = changes.changed(), if !dirty => dirty = true,
                () = tokio::time::sleep_until(next_frame), if dirty => {
                    self.draw(terminal)?;
                    dirty = false;
                    last_frame = Some(Instant::now());
                    #[cfg(debug_assertions)]
                    test_panic_after_frame();
                }
            }
        };
        writer.abort();
        result
    }

    /// Draws one frame now.
    pub fn draw<B: Backend>(&self, terminal: &mut Terminal<B>) -> Result<(), TuiError> {
        let mut state = self.state();
        state.connection.generation = self.client.generation();
        terminal
            .draw(|frame| ui::draw(frame, &state))
            .map(|_| ())
            .map_err(|error| TuiError::Draw(error.to_string()))
    }

    /// Reports a failed request: a notice, and a lost connection on the status line.
    fn report(&self, what: &str, error: &ClientError) {
        let lost = matches!(
            error,
            ClientError::Disconnected { .. } | ClientError::Connect { .. }
        );
        let message = format!("{what}: {error}");
        tracing::debug!("{message}");
        self.update(|state| {
            if lost {
                state.connection.lost = Some(error.to_string());
            }
            state.notice(format!("error: {message}"));
        });
    }

    fn reached_server(&self) {
        if self.state().connection.lost.is_some() {
            self.update(|state| state.connection.lost = None);
        }
    }

    /// attach19: whether `turn_id` is (or may be) a turn this client started.
    fn is_own_turn(&self, turn_id: &str) -> bool {
        lock(&self.shared.own_turns).is_own(turn_id)
    }

    fn thread_params(&self) -> ThreadStartParams {
        let params = ThreadStartParams::new().cwd(self.options.cwd.clone());
        match &self.options.model {
            Some(model) => params.model(model),
            None => params,
        }
    }
}

/// Debug builds only (release builds do not contain it): `TANDEM_TUI_TEST_PANIC=main` makes
/// the app loop panic after its first frame, `TANDEM_TUI_TEST_PANIC=task` a spawned task, so
/// the terminal tests can prove that a panic restores the terminal and stops the app.
#[cfg(debug_assertions)]
fn test_panic_after_frame() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| match std::env::var("TANDEM_TUI_TEST_PANIC").as_deref() {
        Ok("main") => panic!("TANDEM_TUI_TEST_PANIC=main: the app loop panics as asked"),
        Ok("task") => {
            tokio::spawn(async { panic!("TANDEM_TUI_TEST_PANIC=task: a task panics as asked") });
        }
        _ => {}
    });
}

/// Writes keystrokes to pane processes, in order.
async fn write_stdin(tui: Tui, mut keys: mpsc::Receiver<(String, Bytes)>) {
    while let Some((handle, bytes)) = keys.recv().await {
        let params = ProcessWriteStdinParams::bytes(&handle, bytes);
        if let Err(error) = tui.client.write_stdin(params).await {
            tui.report("input to the process", &error);
        }
    }
}

/// Turns terminal events into state changes and server requests.
struct Controller {
    tui: Tui,
    stdin: mpsc::Sender<(String, Bytes)>,
    area: Rect,
    exit: Option<ExitReason>,
}

fn mode(state: &AppState) -> Mode {
    if state.screen == Screen::Threads {
        Mode::Threads
    } else if !state.approvals.is_empty() {
        Mode::Approval
    } else if state.focus == Focus::Pane
        && let Some(pane) = state.active_pane()
    {
        Mode::Pane {
            live: pane.takes_input(),
        }
    } else {
        Mode::Composer
    }
}

const HELP: &str = "Enter sends (steers a running turn) · Alt-Enter new line · Esc interrupts · \
     Ctrl-C twice quits · Ctrl-T threads · PgUp/PgDn scroll · Tab/Ctrl-O pane focus · Ctrl-N next \
     pane · Ctrl-W hide pane · !CMD runs CMD in a terminal pane · /share shows how another client \
     watches the pane's process · /attach HANDLE TOKEN watches one · /new /threads /quit";

impl Controller {
    fn on_event(&mut self, event: Event) {
        match event {
            Event::Key(key) => {
                let (mode, empty) = {
                    let state = self.tui.state();
                    (mode(&state), state.composer.is_blank())
                };
                if let Some(action) = keymap::action(mode, key, empty) {
                    if action != Action::CtrlC {
                        self.tui.update(|state| {
                            state.interrupts = 0;
                            state.hint = None;
                        });
                    }
                    self.on_action(action);
                }
            }
            Event::Paste(text) => {
                let mode = mode(&self.tui.state());
                match mode {
                    Mode::Composer => self.tui.update(|state| state.composer.insert_str(&text)),
                    Mode::Pane { live: true } => self.pane_input(text.into_bytes()),
                    _ => {}
                }
            }
            Event::Resize(width, height) => self.resized(Rect::new(0, 0, width, height)),
            _ => {}
        }
    }

    fn resized(&mut self, area: Rect) {
        self.area = area;
        let (rows, cols) = ui::pane_size(area);
        let processes = self.tui.update(|state| state.resize_panes(rows, cols));
        for handle in processes {
            let tui = self.tui.clone();
            tokio::spawn(async move {
                let params = ProcessResizePtyParams::new(&handle, rows, cols);
                if let Err(error) = tui.client.resize_pty(params).await {
                    tui.report("resizing the process's terminal", &error);
                }
            });
        }
    }

    fn page(&self) -> isize {
        (self.area.height.saturating_sub(8) / 2).max(1) as isize
    }

    fn on_action(&mut self, action: Action) {
        match action {
            Action::CtrlC => {
                let (count, running) = self.tui.update(|state| {
                    state.interrupts += 1;
                    (state.interrupts, state.turn.turn_id().is_some())
                });
                if count >= 2 {
                    self.exit = Some(ExitReason::Interrupted);
                } else {
                    if running {
                        self.interrupt();
                    }
                    self.tui
                        .update(|state| state.hint = Some("Ctrl-C again quits".into()));
                }
            }
            Action::Quit => self.exit = Some(ExitReason::Quit),
            Action::Submit => self.submit(),
            Action::Edit(edit) => self.tui.update(|state| {
                let composer = &mut state.composer;
                match edit {
                    Edit::Char(c) => composer.insert_char(c),
                    Edit::Newline => composer.insert_newline(),
                    Edit::Backspace => composer.backspace(),
                    Edit::Delete => composer.delete(),
                    Edit::Left => composer.left(),
                    Edit::Right => composer.right(),
                    Edit::Home => composer.home(),
                    Edit::End => composer.end(),
                    Edit::Up => composer.up(),
                    Edit::Down => composer.down(),
                    Edit::Clear => composer.clear(),
                }
            }),
            Action::Interrupt => {
                if self.tui.state().turn.turn_id().is_some() {
                    self.interrupt();
                } else {
                    self.tui
                        .update(|state| state.hint = Some("no turn is running".into()));
                }
            }
            Action::Scroll(rows) => self.scroll(rows),
            Action::Page(back) => {
                let page = self.page();
                self.scroll(if back { page } else { -page });
            }
            Action::ToggleFocus => self.tui.update(|state| {
                if state.focus == Focus::Pane {
                    state.focus = Focus::Composer;
                } else {
                    if state.active_pane.is_none() {
                        state.next_pane();
                    }
                    if state.active_pane.is_some() {
                        state.focus = Focus::Pane;
                    }
                }
            }),
            Action::NextPane => self.tui.update(AppState::next_pane),
            Action::HidePane => self.tui.update(AppState::hide_pane),
            Action::ShowThreads => {
                self.tui.update(|state| state.screen = Screen::Threads);
                self.load_threads();
            }
            Action::ShowChat => self.tui.update(|state| state.screen = Screen::Chat),
            Action::SelectThread(delta) => self.tui.update(|state| state.select_thread(delta)),
            Action::ResumeThread => {
                if let Some(id) = self.selected_thread_if_idle() {
                    self.resume(id);
                }
            }
            Action::NewThread => {
                if self.selected_thread_if_idle().is_some() || self.idle() {
                    self.tui.update(AppState::new_chat);
                }
            }
            Action::ForkThread => {
                if let Some(id) = self.selected_thread_if_idle() {
                    self.fork(id);
                }
            }
            Action::ArchiveThread => {
                let selected = self.tui.state().threads.selected().map(|t| t.id.clone());
                if let Some(id) = selected {
                    self.archive(id);
                }
            }
            Action::RefreshThreads => self.load_threads(),
            Action::Decide(decision) => self.decide(decision),
            Action::PaneInput(bytes) => self.pane_input(bytes),
        }
    }

    fn idle(&self) -> bool {
        let busy = self.tui.state().turn.is_busy();
        if busy {
            self.tui.update(|state| {
                state.hint = Some("a turn is running: interrupt it (Esc) first".into());
            });
        }
        !busy
    }

    fn selected_thread_if_idle(&self) -> Option<String> {
        if !self.idle() {
            return None;
        }
        self.tui.state().threads.selected().map(|t| t.id.clone())
    }

    fn scroll(&self, rows: isize) {
        self.tui.update(|state| {
            if state.focus == Focus::Pane
                && let Some(pane) = state.active_pane_mut()
            {
                if rows > 0 {
                    pane.scroll_up(rows.unsigned_abs());
                } else {
                    pane.scroll_down(rows.unsigned_abs());
                }
            } else {
                state.scroll_transcript(rows);
            }
        });
    }

    fn interrupt(&self) {
        let (thread, turn) = {
            let state = self.tui.state();
            (
                state.thread.as_ref().map(|thread| thread.id.clone()),
                state.turn.turn_id().map(str::to_owned),
            )
        };
        let (Some(thread), Some(turn)) = (thread, turn) else {
            return;
        };
        self.tui.update(|state| {
            state.turn = TurnState::Interrupting {
                turn_id: turn.clone(),
            };
        });
        let tui = self.tui.clone();
        tokio::spawn(async move {
            let params = TurnInterruptParams::new(thread, turn);
            // A turn that completed meanwhile has nothing to interrupt.
            if let Err(error) = tui.client.interrupt_turn(params).await
                && error.server_error().is_none()
            {
                tui.report("interrupting the turn", &error);
            }
        });
    }

    fn submit(&mut self) {
        let mut state = self.tui.state();
        if state.turn == TurnState::Starting {
            state.hint = Some("the turn is starting; send again in a moment".into());
            drop(state);
            return self.tui.update(|_| {});
        }
        let Some(text) = state.composer.take_submission() else {
            return;
        };
        drop(state);
        let trimmed = text.trim();
        // Bound first: a guard in an `if let` scrutinee would live through the block, and
        // answering locks the state again.
        let question = self.tui.state().questions.front().map(|q| q.key.clone());
        if let Some(key) = question {
            return self.answer(key, text);
        }
        if let Some(command) = trimmed.strip_prefix('!') {
            return self.run_process(command.trim().to_owned());
        }
        let mut words = trimmed.split_whitespace();
        match (words.next(), words.next(), words.next(), words.next()) {
            (Some("/share"), None, ..) => return self.share(),
            (Some("/attach"), Some(handle), Some(token), None) => {
                return self.attach(handle.to_owned(), token.to_owned());
            }
            (Some("/attach"), ..) => {
                return self.tui.update(|state| {
                    state.hint =
                        Some("/attach HANDLE TOKEN (what /share shows on the other side)".into());
                });
            }
            _ => {}
        }
        match trimmed {
            "/quit" | "/exit" => return self.exit = Some(ExitReason::Quit),
            "/threads" => return self.on_action(Action::ShowThreads),
            "/new" => return self.on_action(Action::NewThread),
            "/help" => return self.tui.update(|state| state.notice(HELP)),
            _ => {}
        }
        let (thread, turn) = {
            let state = self.tui.state();
            (
                state.thread.as_ref().map(|thread| thread.id.clone()),
                state.turn.clone(),
            )
        };
        match (turn, thread) {
            (TurnState::Running { turn_id }, Some(thread)) => {
                self.tui.update(|state| state.user_sent(&text, true));
                let tui = self.tui.clone();
                tokio::spawn(async move {
                    let params = TurnSteerParams::new(thread, turn_id, vec![UserInput::text(text)]);
                    if let Err(error) = tui.client.steer_turn(params).await {
                        tui.report("steering the turn", &error);
                    }
                });
            }
            (TurnState::Idle, thread) => {
                self.tui.update(|state| {
                    state.user_sent(&text, false);
                    state.turn = TurnState::Starting;
                });
                tokio::spawn(start_turn(self.tui.clone(), thread, text));
            }
            (_, _) => self.tui.update(|state| {
                state.composer.set_text(&text);
                state.hint = Some("the turn is ending; send again in a moment".into());
            }),
        }
    }

    fn answer(&self, key: String, text: String) {
        self.tui.update(|state| {
            state.questions.retain(|question| question.key != key);
            state.user_sent(&text, false);
        });
        let request = lock(&self.tui.shared.questions).remove(&key);
        if let Some(request) = request {
            let tui = self.tui.clone();
            tokio::spawn(async move {
                if let Err(error) = request.answer_all(text).await {
                    tui.report("answering the question", &error);
                }
            });
        }
    }

    fn decide(&self, decision: CommandExecutionApprovalDecision) {
        let Some(view) = self.tui.update(|state| state.approvals.pop_front()) else {
            return;
        };
        let request = lock(&self.tui.shared.approvals).remove(&view.key);
        if decision == CommandExecutionApprovalDecision::AcceptForSession {
            self.tui.update(|state| {
                state.notice(format!(
                    "(accepted for the session: `{}` and the like)",
                    view.command
                ));
            });
        }
        if let Some(request) = request {
            let tui = self.tui.clone();
            tokio::spawn(async move {
                if let Err(error) = request.decide(decision).await {
                    tui.report("answering the approval", &error);
                }
            });
        }
    }

    fn pane_input(&self, bytes: Vec<u8>) {
        let handle = {
            let state = self.tui.state();
            match state.active_pane().map(|pane| &pane.source) {
                Some(PaneSource::Process { handle }) => handle.clone(),
                _ => return,
            }
        };
        if self.stdin.try_send((handle, Bytes::from(bytes))).is_err() {
            self.tui.update(|state| {
                state.hint = Some("the process is not reading its input; key dropped".into());
            });
        }
    }

    fn load_threads(&self) {
        self.tui.update(|state| state.threads.loading = true);
        let tui = self.tui.clone();
        tokio::spawn(async move {
            match tui
                .client
                .list_threads(ThreadListParams::new().limit(100))
                .await
            {
                Ok(page) => {
                    tui.reached_server();
                    tui.update(|state| state.threads_loaded(&page.data));
                }
                Err(error) => {
                    tui.update(|state| state.threads.loading = false);
                    tui.report("listing threads", &error);
                }
            }
        });
    }

    fn resume(&self, id: String) {
        let tui = self.tui.clone();
        tokio::spawn(async move {
            // Subscribed before the resume: nothing another client's turn sends after it is
            // missed.
            let events = thread_events(&tui, &id);
            match tui.client.resume_thread(ThreadResumeParams::new(&id)).await {
                Ok(resumed) => {
                    let running = resumed
                        .thread
                        .turns
                        .last()
                        .filter(|turn| turn.status == TurnStatus::InProgress)
                        .map(|turn| turn.id.clone());
                    tui.update(|state| {
                        state.open_thread(&resumed.thread);
                        if let Some(turn) = &running {
                            state.foreign_turn_started(turn);
                        }
                    });
                    follow_thread(tui, id, events);
                }
                Err(error) => tui.report("resuming the thread", &error),
            }
        });
    }

    fn fork(&self, id: String) {
        let tui = self.tui.clone();
        tokio::spawn(async move {
            match tui.client.fork_thread(ThreadForkParams::new(&id)).await {
                Ok(forked) => {
                    let events = thread_events(&tui, &forked.thread.id);
                    tui.update(|state| {
                        state.open_thread(&forked.thread);
                        state.notice(format!("(forked from thread {id})"));
                    });
                    follow_thread(tui, forked.thread.id, events);
                }
                Err(error) => tui.report("forking the thread", &error),
            }
        });
    }

    fn archive(&self, id: String) {
        let tui = self.tui.clone();
        let controller_tui = self.tui.clone();
        tokio::spawn(async move {
            let params = ThreadArchiveParams { thread_id: id };
            match tui.client.call::<ThreadArchive>(params).await {
                Ok(_) => {
                    let page = tui
                        .client
                        .list_threads(ThreadListParams::new().limit(100))
                        .await;
                    match page {
                        Ok(page) => tui.update(|state| state.threads_loaded(&page.data)),
                        Err(error) => tui.report("listing threads", &error),
                    }
                }
                Err(error) => controller_tui.report("archiving the thread", &error),
            }
        });
    }

    /// attach19: `/share`: asks the server for the attach token of the shown pane's process
    /// and tells the user what another client types to watch it.
    fn share(&self) {
        let handle = {
            let state = self.tui.state();
            match state.active_pane() {
                Some(pane) if pane.takes_input() => pane.source.process_handle().map(str::to_owned),
                _ => None,
            }
        };
        let Some(handle) = handle else {
            return self.tui.update(|state| {
                state.hint = Some("/share shares the running process of the pane shown".into());
            });
        };
        let tui = self.tui.clone();
        tokio::spawn(async move {
            match tui.client.share_process(&handle).await {
                Ok(token) => tui.update(|state| {
                    state.notice(format!(
                        "(another client watches this process with: /attach {handle} {token})"
                    ));
                }),
                Err(error) => tui.report("sharing the process", &error),
            }
        });
    }

    /// attach19: `/attach HANDLE TOKEN`: watches another client's PTY process in a new pane,
    /// which draws the server's present screen of it, then follows its output.
    fn attach(&self, handle: String, token: String) {
        tokio::spawn(attach_process(self.tui.clone(), handle, token));
    }

    /// `!CMD`: runs CMD under a PTY the size of the pane, in a new pane that gets the focus.
    fn run_process(&self, command: String) {
        if command.is_empty() {
            return self
                .tui
                .update(|state| state.hint = Some("!CMD runs CMD in a terminal pane".into()));
        }
        let number = self.tui.next_process.fetch_add(1, Ordering::Relaxed);
        let handle = format!("tui-{}-{number}", std::process::id());
        let (rows, cols) = self.tui.update(|state| {
            let (rows, cols) = state.pane_size;
            let pane = TermPane::new(
                format!("! {command}"),
                PaneSource::Process {
                    handle: handle.clone(),
                },
                rows,
                cols,
                state.limits.scrollback_rows,
            );
            state.add_pane(pane);
            state.focus = Focus::Pane;
            (rows, cols)
        });
        let params = ProcessSpawnParams::new(
            &handle,
            ["sh", "-c", command.as_str()],
            self.tui.options.cwd.clone(),
        )
        .tty()
        .stream_stdin()
        .streaming()
        .size(rows, cols)
        .unlimited_output()
        .no_timeout();
        tokio::spawn(follow_process(self.tui.clone(), handle, params));
    }
}
