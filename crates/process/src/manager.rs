//! The per-connection handle table and the `process/*` requests that act on it.
//!
//! The table is behind a plain mutex that is never held across an `await`, and no request here
//! awaits the sink, so control requests answer promptly however stalled the consumer is. The
//! set of process groups outlives the handles: a child's descendants may keep running after
//! its `process/exited`, and connection close must still reach them.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use nix::unistd::Pid;
use tandem_protocol::{
    JSONRPCErrorError, ProcessKillParams, ProcessOutputStream, ProcessResizePtyParams,
    ProcessScreenParams, ProcessScreenResponse, ProcessSpawnParams, ProcessWriteStdinParams,
};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::watch;

use super::error::ProcessError;
use super::group::{ProcessScope, kill_scopes};
use super::guard;
use super::launch::{self, InputWriter, Launched};
use super::plan::{SpawnPlan, check_size};
use super::screen::PtyScreen;
use super::stream::{OutputBudget, StreamConfig, StreamMode, StreamSignals, pump};
use super::supervise::{Supervision, supervise};
use super::{HandleRelease, KILL_ALL_REAP_TIMEOUT, PTY_EOF_BYTE, ProcessEventSink};
use crate::sandbox::ResolvedSandbox;

/// How long a failed stdin write waits to learn whether the child is exiting, so that a write
/// racing the exit answers `is no longer running` rather than a raw `EPIPE`.
const STDIN_FAILURE_EXIT_GRACE: Duration = Duration::from_millis(200);

/// Runs the processes of one client connection.
///
/// Cheap to clone: clones share one handle table. When the last clone is dropped, every process
/// group it started is killed, as on [`kill_all`](Self::kill_all) (without waiting).
#[derive(Clone, Default)]
pub struct ProcessManager {
    inner: Arc<Inner>,
}

impl fmt::Debug for ProcessManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("ProcessManager")
            .field("active", &state.active.keys().collect::<Vec<_>>())
            .field("scopes", &state.scopes.len())
            .finish()
    }
}

/// A child that [`ProcessManager::spawn`] started, whose output is held back until the spawn
/// reply has been sent.
///
/// Call [`start_streaming`](Self::start_streaming) after sending the `{}` reply; dropping the
/// value starts streaming as well. No delta and no exit notification reach the sink before.
pub struct SpawnedProcess {
    started: watch::Sender<bool>,
    pid: u32,
}

impl SpawnedProcess {
    /// The child's process id, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Lets output deltas and the exit notification flow to the sink.
    pub fn start_streaming(self) {
        // The release happens in `Drop`, so forgetting to call this cannot wedge the process.
    }
}

impl Drop for SpawnedProcess {
    fn drop(&mut self) {
        self.started.send_replace(true);
    }
}

impl fmt::Debug for SpawnedProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpawnedProcess")
            .field("pid", &self.pid)
            .finish()
    }
}

/// Shared state of a manager; tasks hold it weakly so dropping the manager ends it.
#[derive(Default)]
pub(crate) struct Inner {
    state: Mutex<State>,
    limits: KeptOutputLimits,
}

/// The server-wide bound on output kept in memory (see
/// [`ProcessManager::with_kept_output_max`]).
#[derive(Debug, Clone, Copy, Default)]
struct KeptOutputLimits {
    /// Most bytes of one process's output (stdout and stderr together) kept; `None` for no
    /// bound beyond each request's `outputBytesCap`.
    max_bytes: Option<u64>,
    /// Whether the sinks of this manager keep streamed output too (a turn's commands), so
    /// that the bound applies to streamed spawns as well.
    streamed_output_is_kept: bool,
}

#[derive(Default)]
struct State {
    /// Handles whose `process/exited` has not been delivered yet.
    active: HashMap<String, Arc<ProcessEntry>>,
    /// Everything started here that may still have live members.
    scopes: HashSet<ProcessScope>,
    next_id: u64,
}

/// One active handle.
struct ProcessEntry {
    /// Distinguishes this run from a later one that reuses the handle.
    id: u64,
    scope: ProcessScope,
    /// `true` once the child has been reaped.
    exited: watch::Receiver<bool>,
    /// `None` when stdin is not streamed.
    stdin: Option<StdinPort>,
    /// `Some` only for PTY children.
    pty_control: Option<OwnedFd>,
    /// The emulated screen; `Some` only for PTY children.
    screen: Option<Arc<PtyScreen>>,
}

/// The streamed stdin of one child.
struct StdinPort {
    /// Set once `closeStdin` succeeded; checked without waiting for the writer lock.
    closed: AtomicBool,
    is_pty: bool,
    /// Async lock because a write can wait for the child to drain its input; `None` once a pipe
    /// was closed.
    writer: tokio::sync::Mutex<Option<InputWriter>>,
}

/// A stdin write whose process was found when its request arrived
/// ([`ProcessManager::stdin_write`]); [`Self::write`] does it.
pub struct StdinWrite {
    entry: Arc<ProcessEntry>,
    handle: String,
    bytes: Bytes,
    close: bool,
    /// The `command/exec` process id, when the write is a `command/exec/write`.
    exec_id: Option<String>,
}

impl fmt::Debug for StdinWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdinWrite")
            .field("handle", &self.handle)
            .field("bytes", &self.bytes.len())
            .field("close", &self.close)
            .finish_non_exhaustive()
    }
}

impl StdinWrite {
    /// Writes the bytes, then closes stdin if asked. Waits for the child to accept them (pipe
    /// backpressure); answers `is no longer running` if the child has exited or exits meanwhile.
    pub async fn write(self) -> Result<(), JSONRPCErrorError> {
        let exec_id = self.exec_id.clone();
        self.write_inner().await.map_err(|error| match exec_id {
            Some(process_id) => crate::exec::exec_error(error, &process_id),
            None => error.into(),
        })
    }

    async fn write_inner(self) -> Result<(), ProcessError> {
        let Self {
            entry,
            handle,
            bytes,
            close,
            ..
        } = self;
        let mut exited = entry.exited.clone();
        // Found while running, but an earlier write to the same handle may have waited until
        // the child was gone.
        if *exited.borrow_and_update() {
            return Err(ProcessError::NoLongerRunning(handle));
        }
        let port = entry.stdin.as_ref().ok_or(ProcessError::StdinNotStreamed)?;
        // A closed stdin answers at once, without the lock that a blocked write may hold.
        if port.closed.load(Ordering::Acquire) {
            return if bytes.is_empty() {
                Ok(())
            } else {
                Err(ProcessError::StdinClosed)
            };
        }
        let result = tokio::select! {
            biased;
            result = port.write(&bytes, close) => result,
            _ = exited.wait_for(|exited| *exited) => {
                return Err(ProcessError::NoLongerRunning(handle));
            }
        };
        match result {
            Ok(()) => Ok(()),
            Err(StdinFailure::Closed) => Err(ProcessError::StdinClosed),
            Err(StdinFailure::Io(error)) => {
                // EPIPE/EIO usually means the child is going away; prefer saying so.
                let exiting = tokio::time::timeout(
                    STDIN_FAILURE_EXIT_GRACE,
                    exited.wait_for(|exited| *exited),
                )
                .await
                .is_ok();
                if exiting {
                    Err(ProcessError::NoLongerRunning(handle))
                } else {
                    Err(ProcessError::StdinWriteFailed(error.to_string()))
                }
            }
        }
    }
}

/// Why a stdin write did not happen.
#[derive(Debug, thiserror::Error)]
enum StdinFailure {
    #[error("stdin is already closed")]
    Closed,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl StdinPort {
    /// Writes `bytes`, then closes stdin if `close`; holds the writer lock throughout so
    /// concurrent requests cannot interleave their bytes.
    async fn write(&self, bytes: &[u8], close: bool) -> Result<(), StdinFailure> {
        let mut writer = self.writer.lock().await;
        // Checked again under the lock: a concurrent close may have won the race.
        if self.closed.load(Ordering::Acquire) {
            return if bytes.is_empty() {
                Ok(())
            } else {
                Err(StdinFailure::Closed)
            };
        }
        let stream = writer.as_mut().ok_or(StdinFailure::Closed)?;
        if !bytes.is_empty() {
            stream.write_all(bytes).await?;
            stream.flush().await?;
        }
        if close {
            if self.is_pty {
                stream.write_all(&[PTY_EOF_BYTE]).await?;
                stream.flush().await?;
            } else {
                // Dropping our end of the pipe is what the child sees as EOF.
                *writer = None;
            }
            self.closed.store(true, Ordering::Release);
        }
        Ok(())
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the table inconsistent (every update is
        // a single insert or remove), so keep serving instead of propagating the poison.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Releases `handle` after its `process/exited` was delivered, unless it was reused.
    pub(crate) fn release(&self, handle: &str, id: u64) {
        let mut state = self.lock();
        if state.active.get(handle).is_some_and(|entry| entry.id == id) {
            state.active.remove(handle);
        }
        prune_scopes(&mut state);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let state = self.lock();
        let scopes: Vec<ProcessScope> = state.scopes.iter().copied().collect();
        kill_scopes(&scopes);
        // Killed: the watchdog need not remember them (and a manager per turn would make its
        // table grow without bound). Members that are still dying carry the marker.
        for scope in scopes {
            guard::forget(scope);
        }
    }
}

/// Forgets scopes that no longer have members, so a recycled id is never signalled (neither
/// by this manager nor by the watchdog).
fn prune_scopes(state: &mut State) {
    let active: HashSet<ProcessScope> = state.active.values().map(|entry| entry.scope).collect();
    state.scopes.retain(|scope| {
        let keep = active.contains(scope) || !scope.is_empty();
        if !keep {
            guard::forget(*scope);
        }
        keep
    });
}

impl ProcessManager {
    /// An empty manager for one connection, keeping as much output as each request allows.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bounds the output kept in memory for one process, stdout and stderr together, to
    /// `max_bytes` (the server's `process_output_max_bytes`), whatever `outputBytesCap` a
    /// non-streamed spawn asks for, `null` included. Output past it is read and dropped, and
    /// the stream's `capReached` flag is set, as for the request's own cap. Streamed output is
    /// not kept (it waits for the consumer instead), so this does not bound it, unless
    /// [`Self::keeping_streamed_output`] says the sinks keep it.
    pub fn with_kept_output_max(self, max_bytes: u64) -> Self {
        self.with_limits(|limits| limits.max_bytes = Some(max_bytes))
    }

    /// Declares that the sinks given to this manager keep the streamed output they receive
    /// (a turn keeps its command's output for the item), so that the bound of
    /// [`Self::with_kept_output_max`] applies to streamed spawns too.
    pub fn keeping_streamed_output(self) -> Self {
        self.with_limits(|limits| limits.streamed_output_is_kept = true)
    }

    /// This manager with `update` applied to its limits. Meant for construction: should
    /// another clone exist, this one gets a handle table of its own rather than changing the
    /// limits under processes that already run.
    fn with_limits(mut self, update: impl FnOnce(&mut KeptOutputLimits)) -> Self {
        let mut limits = self.inner.limits;
        update(&mut limits);
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.limits = limits,
            None => {
                self.inner = Arc::new(Inner {
                    state: Mutex::default(),
                    limits,
                });
            }
        }
        self
    }

    /// `process/spawn`: validates `params` and starts the child; returns once it is running.
    ///
    /// Send the `{}` reply, then call [`SpawnedProcess::start_streaming`]; output and
    /// `process/exited` go to `sink` only after that.
    pub async fn spawn(
        &self,
        params: ProcessSpawnParams,
        sink: Arc<dyn ProcessEventSink>,
    ) -> Result<SpawnedProcess, JSONRPCErrorError> {
        Ok(self.spawn_inner(params, None, sink)?)
    }

    /// [`Self::spawn`] under an OS sandbox: with `Some(sandbox)` (from
    /// [`crate::sandbox::Sandboxing::resolve`]) the child and everything it starts run with
    /// the sandbox's restrictions, applied by the helper program to itself before it executes
    /// the command, on pipes and under a PTY alike; `None` is [`Self::spawn`]. The server's
    /// own process is never restricted.
    pub async fn spawn_sandboxed(
        &self,
        params: ProcessSpawnParams,
        sandbox: Option<ResolvedSandbox>,
        sink: Arc<dyn ProcessEventSink>,
    ) -> Result<SpawnedProcess, JSONRPCErrorError> {
        Ok(self.spawn_inner(params, sandbox, sink)?)
    }

    fn spawn_inner(
        &self,
        params: ProcessSpawnParams,
        sandbox: Option<ResolvedSandbox>,
        sink: Arc<dyn ProcessEventSink>,
    ) -> Result<SpawnedProcess, ProcessError> {
        let mut plan = SpawnPlan::from_params(params)?;
        plan.sandbox = sandbox;
        self.spawn_planned(plan, sink)
    }

    /// Starts the child of a checked `plan` (shared by `process/spawn` and `command/exec`).
    pub(crate) fn spawn_planned(
        &self,
        plan: SpawnPlan,
        sink: Arc<dyn ProcessEventSink>,
    ) -> Result<SpawnedProcess, ProcessError> {
        let limits = self.inner.limits;
        let budget = limits
            .max_bytes
            .filter(|_| !plan.stream_output || limits.streamed_output_is_kept)
            .map(|max| Arc::new(OutputBudget::new(max)));
        // Check and insert under one lock so two spawns cannot both claim a handle.
        let mut state = self.inner.lock();
        if state.active.contains_key(&plan.handle) {
            return Err(ProcessError::DuplicateHandle(plan.handle));
        }
        // Before the child exists, so that it is guarded from its first instruction.
        let marker = guard::prepare_child();
        let Launched {
            child,
            pid,
            stdin,
            stdout,
            stderr,
            pty_control,
        } = launch::launch(&plan, marker.as_deref())
            .map_err(|error| ProcessError::SpawnFailed(error.to_string()))?;
        let scope = ProcessScope {
            leader: Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)),
            session: plan.tty,
        };
        guard::watch(scope);
        tracing::debug!(handle = %plan.handle, pid, tty = plan.tty, "process spawned");

        let (exited_tx, exited_rx) = watch::channel(false);
        let (started_tx, started_rx) = watch::channel(false);
        let screen = plan.tty.then(|| Arc::new(PtyScreen::new(plan.size)));
        let mode = || {
            if plan.stream_output {
                StreamMode::Stream(Arc::clone(&sink))
            } else {
                StreamMode::Capture
            }
        };
        let spawn_pump = |reader, stream| {
            let config = StreamConfig {
                handle: plan.handle.clone(),
                stream,
                cap: plan.output_bytes_cap,
                budget: budget.clone(),
                mode: mode(),
                is_pty: plan.tty,
                screen: screen.clone(),
            };
            let signals = StreamSignals {
                exited: exited_rx.clone(),
                started: started_rx.clone(),
            };
            tokio::spawn(pump(reader, config, signals))
        };
        let stdout_task = spawn_pump(stdout, ProcessOutputStream::Stdout);
        let stderr_task = stderr.map(|reader| spawn_pump(reader, ProcessOutputStream::Stderr));

        let id = state.next_id;
        state.next_id += 1;
        let entry = ProcessEntry {
            id,
            scope,
            exited: exited_rx,
            stdin: stdin.map(|writer| StdinPort {
                closed: AtomicBool::new(false),
                is_pty: plan.tty,
                writer: tokio::sync::Mutex::new(Some(writer)),
            }),
            pty_control,
            screen,
        };
        state.active.insert(plan.handle.clone(), Arc::new(entry));
        state.scopes.insert(scope);
        drop(state);

        let release = {
            let manager = Arc::downgrade(&self.inner);
            let handle = plan.handle.clone();
            HandleRelease::new(move || {
                if let Some(manager) = manager.upgrade() {
                    manager.release(&handle, id);
                }
            })
        };
        tokio::spawn(supervise(Supervision {
            handle: plan.handle,
            child,
            scope,
            timeout: plan.timeout,
            exited: exited_tx,
            started: started_rx,
            sink,
            stdout: stdout_task,
            stderr: stderr_task,
            release,
        }));
        Ok(SpawnedProcess {
            started: started_tx,
            pid,
        })
    }

    /// The entry of a running child, or the section-8 error for why there is none.
    fn running_entry(&self, handle: &str) -> Result<Arc<ProcessEntry>, ProcessError> {
        let state = self.inner.lock();
        let entry = state
            .active
            .get(handle)
            .cloned()
            .ok_or_else(|| ProcessError::NoActiveProcess(handle.to_owned()))?;
        if *entry.exited.borrow() {
            return Err(ProcessError::NoLongerRunning(handle.to_owned()));
        }
        Ok(entry)
    }

    /// `process/writeStdin`: writes the decoded bytes, then closes stdin if asked.
    ///
    /// Never waits on the sink; it may wait for the child to accept the bytes (pipe
    /// backpressure), and answers `is no longer running` if the child exits meanwhile.
    pub async fn write_stdin(
        &self,
        params: ProcessWriteStdinParams,
    ) -> Result<(), JSONRPCErrorError> {
        self.stdin_write(params)?.write().await
    }

    /// The first half of [`Self::write_stdin`], for a server that answers each write on a task
    /// of its own: checks the request and finds its process at once, in the order the requests
    /// came. A `process/kill` sent after the write then cannot overtake it before the write has
    /// found its process: the write is answered `is no longer running` (the process it was
    /// sent to is gone), never `no active process` (which says the handle was never there).
    pub fn stdin_write(
        &self,
        params: ProcessWriteStdinParams,
    ) -> Result<StdinWrite, JSONRPCErrorError> {
        Ok(self.stdin_write_for(params, None)?)
    }

    /// Checks a stdin write and finds its process; `exec_id` names the `command/exec` child
    /// whose words the write's errors are told in.
    pub(crate) fn stdin_write_for(
        &self,
        params: ProcessWriteStdinParams,
        exec_id: Option<String>,
    ) -> Result<StdinWrite, ProcessError> {
        let close = params.close_stdin.unwrap_or(false);
        let bytes = match params.delta {
            None if !close => return Err(ProcessError::WriteStdinNeedsInput),
            None => Bytes::new(),
            Some(bytes) => bytes,
        };
        let handle = params.process_handle;
        let entry = self.running_entry(&handle)?;
        if entry.stdin.is_none() {
            return Err(ProcessError::StdinNotStreamed);
        }
        Ok(StdinWrite {
            entry,
            handle,
            bytes,
            close,
            exec_id,
        })
    }

    /// `process/kill`: sends `SIGKILL` to the child's whole process group (for a PTY child, its
    /// whole session). The child then reports exit code 137 in its `process/exited`.
    pub async fn kill(&self, params: ProcessKillParams) -> Result<(), JSONRPCErrorError> {
        Ok(self.kill_inner(&params.process_handle)?)
    }

    pub(crate) fn kill_inner(&self, handle: &str) -> Result<(), ProcessError> {
        let entry = self.running_entry(handle)?;
        tracing::debug!(%handle, scope = ?entry.scope, "killing process");
        entry.scope.kill();
        Ok(())
    }

    /// `process/resizePty`: applies a new terminal size to a PTY child.
    pub async fn resize_pty(
        &self,
        params: ProcessResizePtyParams,
    ) -> Result<(), JSONRPCErrorError> {
        Ok(self.resize_inner(params)?)
    }

    pub(crate) fn resize_inner(&self, params: ProcessResizePtyParams) -> Result<(), ProcessError> {
        check_size(params.size)?;
        let entry = self.running_entry(&params.process_handle)?;
        let control = entry.pty_control.as_ref().ok_or(ProcessError::NotAPty)?;
        launch::resize(control, params.size)
            .map_err(|error| ProcessError::ResizeFailed(error.to_string()))?;
        if let Some(screen) = &entry.screen {
            screen.resize(params.size);
        }
        Ok(())
    }

    /// `process/screen` (experimental): the present screen of a running PTY child.
    pub async fn screen(
        &self,
        params: ProcessScreenParams,
    ) -> Result<ProcessScreenResponse, JSONRPCErrorError> {
        Ok(self.screen_inner(&params.process_handle)?)
    }

    /// attach19: the emulated screen of running PTY child `handle` (the server hands it to a
    /// late attacher).
    pub fn screen_of(&self, handle: &str) -> Result<Arc<PtyScreen>, JSONRPCErrorError> {
        let entry = self.running_entry(handle)?;
        Ok(entry.screen.clone().ok_or(ProcessError::NoScreen)?)
    }

    pub(crate) fn screen_inner(&self, handle: &str) -> Result<ProcessScreenResponse, ProcessError> {
        let entry = self.running_entry(handle)?;
        let screen = entry.screen.as_ref().ok_or(ProcessError::NoScreen)?;
        Ok(screen.snapshot())
    }

    /// Sends `SIGKILL` to every process group (and PTY session) this manager started, including
    /// descendants of children whose `process/exited` was already sent (connection close, host
    /// shutdown), then waits at most [`KILL_ALL_REAP_TIMEOUT`] for the children to be reaped.
    ///
    /// Handles stay active until their `process/exited` is delivered, as usual.
    pub async fn kill_all(&self) {
        let (scopes, exits) = {
            let state = self.inner.lock();
            let scopes: Vec<ProcessScope> = state.scopes.iter().copied().collect();
            let exits: Vec<_> = state
                .active
                .values()
                .map(|entry| entry.exited.clone())
                .collect();
            (scopes, exits)
        };
        tracing::debug!(
            scopes = scopes.len(),
            "killing every process this manager started"
        );
        kill_scopes(&scopes);
        let deadline = tokio::time::Instant::now() + KILL_ALL_REAP_TIMEOUT;
        for mut exited in exits {
            if tokio::time::timeout_at(deadline, exited.wait_for(|exited| *exited))
                .await
                .is_err()
            {
                tracing::warn!("a killed process was not reaped in time");
                break;
            }
        }
        prune_scopes(&mut self.inner.lock());
    }
}
