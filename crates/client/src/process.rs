//! [`ProcessHandle`]: a process started with `process/spawn`, its output as bytes per stream,
//! its controls, and its exit. The router records the exit on the handle's shared state, so
//! [`ProcessHandle::wait_exited`] answers even after the output queue overflowed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::BoxFuture;
use tandem_protocol::EmptyResponse;
use tandem_protocol::{
    EventCursor, ProcessExitedNotification, ProcessKillParams, ProcessOutputStream,
    ProcessResizePtyParams, ProcessScreenResponse, ProcessWriteStdinParams, ServerNotification,
};
use tokio::sync::Notify;

use crate::error::ClientError;
use crate::subscription::{Event, Subscription, SubscriptionError};

/// One event of a process.
#[derive(Debug, Clone, PartialEq)]
pub enum ProcessEvent {
    /// Output bytes (`process/outputDelta`).
    Output {
        /// Which stream (all PTY output is `stdout`).
        stream: ProcessOutputStream,
        /// The bytes.
        bytes: Bytes,
        /// This delta reached the stream's cap.
        cap_reached: bool,
    },
    /// `process/exited`, after the last output. Nothing follows it.
    Exited(ProcessExitedNotification),
    /// The client reconnected and the server could no longer replay all the output the
    /// process wrote while the connection was down (it was older than the server's replay
    /// window): some output before this point is missing. What follows is live.
    Gap,
}

/// attach19: a process another connection runs, watched with [`crate::Client::attach_process`].
#[derive(Debug)]
pub struct AttachedProcess {
    /// The screen when the attachment was made: draw it first.
    pub screen: ProcessScreenResponse,
    /// Where the process's stream stood then; every event of [`Self::process`] is after it.
    pub cursor: EventCursor,
    /// The process's output after the screen, and its exit.
    pub process: ProcessHandle,
}

/// Everything a process wrote, and how it exited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOutput {
    /// Every streamed stdout byte.
    pub stdout: Vec<u8>,
    /// Every streamed stderr byte.
    pub stderr: Vec<u8>,
    /// The exit notification (with the captured text when output was not streamed).
    pub exited: ProcessExitedNotification,
}

/// procre: the processes the client follows across a reconnect: for each running handle, the
/// session that owns it on the server and the cursor of the last notification seen.
#[derive(Debug, Default)]
pub(crate) struct ProcessFollows {
    follows: HashMap<String, ProcessFollow>,
}

#[derive(Debug, Default)]
struct ProcessFollow {
    /// The `processSession` of the connection that spawned (or resumed) the process; `None`
    /// until known, and for servers whose processes die with their connection.
    session: Option<String>,
    last: Option<EventCursor>,
}

impl ProcessFollows {
    /// Follows `handle` from now on (before its `process/spawn` is sent).
    pub(crate) fn follow(&mut self, handle: &str) {
        self.follows
            .insert(handle.to_owned(), ProcessFollow::default());
    }

    /// The spawn was answered on a connection whose session is `session`.
    pub(crate) fn spawned(&mut self, handle: &str, session: Option<String>) {
        if let Some(follow) = self.follows.get_mut(handle) {
            follow.session = session;
        }
    }

    pub(crate) fn forget(&mut self, handle: &str) {
        self.follows.remove(handle);
    }

    /// The connection ended for good: nothing is resumed.
    pub(crate) fn clear(&mut self) {
        self.follows.clear();
    }

    /// Whether a process notification with `cursor` is new (and records it); `false` for one
    /// already seen (a replay overlapping what arrived before the drop). An exit ends the
    /// follow.
    pub(crate) fn accept(&mut self, note: &ServerNotification, cursor: &EventCursor) -> bool {
        let Some(handle) = note.process_handle() else {
            return true;
        };
        let Some(follow) = self.follows.get_mut(handle) else {
            return true;
        };
        if let Some(last) = &follow.last
            && last.epoch == cursor.epoch
            && cursor.seq <= last.seq
        {
            return false;
        }
        follow.last = Some(cursor.clone());
        if matches!(note, ServerNotification::ProcessExited(_)) {
            self.follows.remove(handle);
        }
        true
    }

    /// What a new connection resumes: each handle with its session and last cursor. Handles
    /// without a session (the server cannot resume them) are not in it.
    pub(crate) fn plan(&self) -> Vec<(String, String, Option<EventCursor>)> {
        self.follows
            .iter()
            .filter_map(|(handle, follow)| {
                let session = follow.session.clone()?;
                Some((handle.clone(), session, follow.last.clone()))
            })
            .collect()
    }

    /// Handles a reconnect can resume.
    pub(crate) fn resumable(&self) -> std::collections::HashSet<String> {
        self.follows
            .iter()
            .filter(|(_, follow)| follow.session.is_some())
            .map(|(handle, _)| handle.clone())
            .collect()
    }

    /// `handle` was resumed: it belongs to `session` now and the stream counts from `cursor`,
    /// unless live notifications newer than `cursor` of the same instance were taken in
    /// already. They can be: the host writes them on the event lane as soon as the stream is
    /// attached, while the answer follows on the ordinary lane. Moving back would make the next
    /// resume replay them a second time.
    pub(crate) fn resumed(&mut self, handle: &str, session: Option<String>, cursor: EventCursor) {
        if let Some(follow) = self.follows.get_mut(handle) {
            follow.session = session;
            let newer_seen = follow
                .last
                .as_ref()
                .is_some_and(|last| last.epoch == cursor.epoch && last.seq >= cursor.seq);
            if !newer_seen {
                follow.last = Some(cursor);
            }
        }
    }
}

/// What the router records for a process handle.
#[derive(Debug, Default)]
pub(crate) struct ProcessShared {
    state: Mutex<ProcessState>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct ProcessState {
    exited: Option<ProcessExitedNotification>,
    disconnected: Option<String>,
}

impl ProcessShared {
    fn lock(&self) -> std::sync::MutexGuard<'_, ProcessState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn record(&self, note: &ServerNotification) {
        if let ServerNotification::ProcessExited(exited) = note {
            self.lock().exited = Some(exited.clone());
            self.changed.notify_waiters();
        }
    }

    pub(crate) fn disconnect(&self, reason: &str) {
        self.lock()
            .disconnected
            .get_or_insert_with(|| reason.to_owned());
        self.changed.notify_waiters();
    }

    async fn wait(&self) -> Result<ProcessExitedNotification, String> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.lock();
                if let Some(exited) = &state.exited {
                    return Ok(exited.clone());
                }
                if let Some(reason) = &state.disconnected {
                    return Err(reason.clone());
                }
            }
            notified.await;
        }
    }
}

/// What a [`ProcessHandle`] asks of the client it came from: stdin, resize and kill.
/// Implemented by [`crate::Client`]; a trait here, so that this module never reaches into the
/// client.
pub(crate) trait ProcessCalls: Send + Sync + std::fmt::Debug {
    /// `process/writeStdin`.
    fn write_stdin(
        &self,
        params: ProcessWriteStdinParams,
    ) -> BoxFuture<'_, Result<EmptyResponse, ClientError>>;
    /// `process/resizePty`.
    fn resize_pty(
        &self,
        params: ProcessResizePtyParams,
    ) -> BoxFuture<'_, Result<EmptyResponse, ClientError>>;
    /// `process/kill`.
    fn kill_process(
        &self,
        params: ProcessKillParams,
    ) -> BoxFuture<'_, Result<EmptyResponse, ClientError>>;
}

/// A process started by [`crate::Client::spawn_process`]. Its output arrives as
/// [`ProcessEvent::Output`] when spawned with streaming
/// ([`tandem_protocol::ProcessSpawnParams::streaming`]); otherwise the captured text is in
/// the exit notification.
///
/// The output queue follows the client's overflow rules: every byte arrives, or
/// [`Self::next_event`] ends with [`SubscriptionError::Overflowed`] naming how many deltas
/// were lost; it is never silently short. Use [`crate::Client::spawn_process_with`] and a lossless
/// subscription to make the process wait for the reader instead.
#[derive(Debug)]
pub struct ProcessHandle {
    client: Arc<dyn ProcessCalls>,
    handle: String,
    subscription: Subscription,
    shared: Arc<ProcessShared>,
    finished: bool,
}

impl ProcessHandle {
    pub(crate) fn new(
        client: Arc<dyn ProcessCalls>,
        handle: String,
        subscription: Subscription,
        shared: Arc<ProcessShared>,
    ) -> Self {
        Self {
            client,
            handle,
            subscription,
            shared,
            finished: false,
        }
    }

    /// The process handle.
    pub fn handle(&self) -> &str {
        &self.handle
    }

    /// The next output delta or the exit; `None` after [`ProcessEvent::Exited`].
    pub async fn next_event(&mut self) -> Option<Result<ProcessEvent, SubscriptionError>> {
        if self.finished {
            return None;
        }
        loop {
            let event = match self.subscription.next().await? {
                Ok(Event::Notification(note)) => note,
                Ok(Event::ProcessGap { .. }) => return Some(Ok(ProcessEvent::Gap)),
                Ok(_) => continue,
                Err(error) => return Some(Err(error)),
            };
            match event {
                ServerNotification::ProcessOutputDelta(delta) => {
                    return Some(Ok(ProcessEvent::Output {
                        stream: delta.stream,
                        bytes: delta.delta,
                        cap_reached: delta.cap_reached,
                    }));
                }
                ServerNotification::ProcessExited(exited) => {
                    self.finished = true;
                    return Some(Ok(ProcessEvent::Exited(exited)));
                }
                _ => continue,
            }
        }
    }

    /// Writes `bytes` to the process's stdin (requires `streamStdin` or `tty`).
    pub async fn write_stdin(&self, bytes: impl Into<Bytes>) -> Result<(), ClientError> {
        self.client
            .write_stdin(ProcessWriteStdinParams::bytes(&self.handle, bytes))
            .await
            .map(|_| ())
    }

    /// Closes the process's stdin.
    pub async fn close_stdin(&self) -> Result<(), ClientError> {
        self.client
            .write_stdin(ProcessWriteStdinParams::close(&self.handle))
            .await
            .map(|_| ())
    }

    /// Resizes the process's PTY.
    pub async fn resize(&self, rows: u16, cols: u16) -> Result<(), ClientError> {
        self.client
            .resize_pty(ProcessResizePtyParams::new(&self.handle, rows, cols))
            .await
            .map(|_| ())
    }

    /// Kills the process's group; its exit (code 137) follows.
    pub async fn kill(&self) -> Result<(), ClientError> {
        self.client
            .kill_process(ProcessKillParams::new(&self.handle))
            .await
            .map(|_| ())
    }

    /// Waits for the exit, discarding output not read yet.
    pub async fn wait_exited(mut self) -> Result<ProcessExitedNotification, ClientError> {
        while !self.finished {
            match self.next_event().await {
                Some(Ok(ProcessEvent::Exited(exited))) => return Ok(exited),
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            }
        }
        self.shared
            .wait()
            .await
            .map_err(|reason| ClientError::Disconnected {
                method: "process/spawn".into(),
                sent: true,
                reason: format!("the process's exit never arrived: {reason}"),
            })
    }

    /// Reads every remaining output byte and the exit. Fails if the output queue overflowed
    /// (the error says how many deltas were lost), the connection ended, or output was lost
    /// across a reconnect ([`ProcessEvent::Gap`]).
    pub async fn collect_output(mut self) -> Result<ProcessOutput, SubscriptionError> {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        loop {
            match self.next_event().await {
                Some(Ok(ProcessEvent::Output { stream, bytes, .. })) => match stream {
                    ProcessOutputStream::Stdout => stdout.extend_from_slice(&bytes),
                    ProcessOutputStream::Stderr => stderr.extend_from_slice(&bytes),
                },
                Some(Ok(ProcessEvent::Exited(exited))) => {
                    return Ok(ProcessOutput {
                        stdout,
                        stderr,
                        exited,
                    });
                }
                Some(Ok(ProcessEvent::Gap)) => {
                    return Err(SubscriptionError::Disconnected {
                        reason: "the connection was lost and the server could no longer                                  replay some of the process's output (older than its replay                                  window); read events with next_event to continue past the gap"
                            .into(),
                    });
                }
                Some(Err(error)) => return Err(error),
                None => {
                    return Err(SubscriptionError::Disconnected {
                        reason: "the process's events ended before its exit".into(),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tandem_protocol::{ProcessOutputDeltaNotification, ProcessOutputStream};

    use super::*;

    fn cursor(epoch: &str, seq: u64) -> EventCursor {
        EventCursor {
            epoch: epoch.into(),
            seq,
        }
    }

    fn output(handle: &str) -> ServerNotification {
        ServerNotification::ProcessOutputDelta(ProcessOutputDeltaNotification {
            process_handle: handle.into(),
            stream: ProcessOutputStream::Stdout,
            delta: Default::default(),
            cap_reached: false,
        })
    }

    #[test]
    fn a_resume_answer_behind_live_output_already_seen_does_not_move_the_cursor_back() {
        let mut follows = ProcessFollows::default();
        follows.follow("writer");
        follows.spawned("writer", Some("first".into()));
        assert!(follows.accept(&output("writer"), &cursor("e", 77)));
        // The reconnect resumes from 77; the host attaches at 77 and streams 78..=81 live
        // before the answer (cursor 77) arrives on the other lane.
        for seq in 78..=81 {
            assert!(follows.accept(&output("writer"), &cursor("e", seq)));
        }
        follows.resumed("writer", Some("second".into()), cursor("e", 77));
        let plan = follows.plan();
        assert_eq!(
            plan,
            vec![("writer".into(), "second".into(), Some(cursor("e", 81)))],
            "the next resume starts after what was seen, or 78..=81 come twice"
        );
        assert!(!follows.accept(&output("writer"), &cursor("e", 80)));
    }

    #[test]
    fn a_resume_answer_from_another_instance_restarts_the_count() {
        let mut follows = ProcessFollows::default();
        follows.follow("writer");
        follows.spawned("writer", Some("first".into()));
        assert!(follows.accept(&output("writer"), &cursor("old", 500)));
        follows.resumed("writer", Some("second".into()), cursor("new", 3));
        assert_eq!(follows.plan()[0].2, Some(cursor("new", 3)));
        assert!(follows.accept(&output("writer"), &cursor("new", 4)));
    }
}
