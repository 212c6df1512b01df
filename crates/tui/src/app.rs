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
//!
//! Files: this one holds the [`Tui`] and its run loop; `controller` the input half (terminal
//! events to actions to requests), `follow` the intake tasks of turns, threads and processes.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use crossterm::event::Event;
use futures::{Stream, StreamExt as _};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use tandem_client::{
    ApprovalRequest, Client, ClientError, Event as ClientEvent, FileChangeApprovalRequest,
    Overflow, ProcessEvent, ProcessHandle, Subscription, SubscriptionFilter, SubscriptionOptions,
    TurnEvent, TurnHandle, UserInputRequest,
};
use tandem_protocol::{
    ProcessAttachParams, ProcessSpawnParams, ProcessWriteStdinParams, ServerNotification,
    ThreadStartParams, TurnStartParams,
};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::pane::{PaneSource, TermPane};
use crate::state::{AppState, ApprovalView, Limits, QuestionView, ThreadInfo};
use crate::ui;

mod controller;
mod follow;

use controller::Controller;

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
    approvals: Mutex<HashMap<String, LiveApproval>>,
    questions: Mutex<HashMap<String, UserInputRequest>>,
}

/// A live approval request, answered from the approval prompt.
enum LiveApproval {
    /// May this command run?
    Command(ApprovalRequest),
    /// May these file changes be written?
    FileChange(FileChangeApprovalRequest),
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
