//! Waits for one child to exit (enforcing its timeout), then sends `process/exited` after the
//! last delta of both streams and releases the handle.
//!
//! The order matters: the handle is marked exited as soon as the child is reaped (control
//! requests then answer `is no longer running`), but released only when the exit notification
//! is delivered (at the moment of hand-over, where the sink can: see
//! [`ProcessEventSink::exited_then`]), so a reused handle can never interleave with the old
//! run's output, and a request sent after the notification never finds the handle held.

use std::os::unix::process::ExitStatusExt as _;
use std::sync::Arc;
use std::time::Duration;

use tandem_protocol::ProcessExitedNotification;
use tokio::process::Child;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::group::ProcessScope;
use super::stream::StreamOutcome;
use super::{HandleRelease, ProcessEventSink, SIGNAL_EXIT_CODE_BASE, TIMEOUT_EXIT_CODE};

/// Everything the supervisor of one child needs.
pub(crate) struct Supervision {
    pub(crate) handle: String,
    pub(crate) child: Child,
    pub(crate) scope: ProcessScope,
    pub(crate) timeout: Option<Duration>,
    pub(crate) exited: watch::Sender<bool>,
    pub(crate) started: watch::Receiver<bool>,
    pub(crate) sink: Arc<dyn ProcessEventSink>,
    pub(crate) stdout: JoinHandle<StreamOutcome>,
    /// `None` under a PTY.
    pub(crate) stderr: Option<JoinHandle<StreamOutcome>>,
    /// Frees the handle in the manager's table once `process/exited` was handed over: the
    /// manager's side, passed down so this module never reaches into the manager.
    pub(crate) release: HandleRelease,
}

/// Reaps the child and reports its exit; see the module docs for the ordering.
pub(crate) async fn supervise(supervision: Supervision) {
    let Supervision {
        handle,
        mut child,
        scope,
        timeout,
        exited,
        mut started,
        sink,
        stdout,
        stderr,
        release,
    } = supervision;

    let exit_code = wait_for_exit(&mut child, scope, timeout, &handle).await;
    tracing::debug!(%handle, exit_code, "process exited");
    exited.send_replace(true);

    let stdout = join_stream(stdout, &handle).await;
    let stderr = match stderr {
        Some(task) => join_stream(task, &handle).await,
        None => StreamOutcome::default(),
    };
    tracing::debug!(
        %handle,
        stdout_fresh_chunks = stdout.fresh_chunks,
        stderr_fresh_chunks = stderr.fresh_chunks,
        "output pumps finished"
    );
    // Non-streaming children never wait for the pumps to see `started`, so wait here: the
    // spawn reply must precede the exit notification too.
    let _ = started.wait_for(|started| *started).await;

    let notification = ProcessExitedNotification {
        process_handle: handle.clone(),
        exit_code,
        stdout: String::from_utf8_lossy(&stdout.captured).into_owned(),
        stdout_cap_reached: stdout.cap_reached,
        stderr: String::from_utf8_lossy(&stderr.captured).into_owned(),
        stderr_cap_reached: stderr.cap_reached,
        output_drain_timed_out: stdout.drain_timed_out || stderr.drain_timed_out,
    };
    sink.exited_then(notification, release).await;
}

/// Waits for the child, killing its group when the timeout fires, and returns the exit code.
async fn wait_for_exit(
    child: &mut Child,
    scope: ProcessScope,
    timeout: Option<Duration>,
    handle: &str,
) -> i32 {
    let timed_out = match timeout {
        None => false,
        Some(timeout) => tokio::select! {
            // `wait` is cancel safe; losing the race only means we wait again below.
            _ = child.wait() => false,
            () = tokio::time::sleep(timeout) => {
                tracing::debug!(%handle, ?timeout, "process timed out; killing its group");
                scope.kill();
                true
            }
        },
    };
    let status = child.wait().await;
    if timed_out {
        return TIMEOUT_EXIT_CODE;
    }
    match status {
        Ok(status) => status
            .code()
            .or_else(|| status.signal().map(|signal| SIGNAL_EXIT_CODE_BASE + signal))
            .unwrap_or(-1),
        Err(error) => {
            tracing::error!(%handle, %error, "waiting for process failed");
            -1
        }
    }
}

async fn join_stream(task: JoinHandle<StreamOutcome>, handle: &str) -> StreamOutcome {
    task.await.unwrap_or_else(|error| {
        tracing::error!(%handle, %error, "process output task failed");
        StreamOutcome::default()
    })
}
