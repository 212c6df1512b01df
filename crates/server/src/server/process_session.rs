//! procre: process sessions, what lets `process/spawn` processes outlive their connection
//! (docs/protocol.md, "Processes across a reconnect").
//!
//! A [`ProcessSession`] owns a connection's `process/spawn` processes. Their notifications
//! are host streams (one per process), so every one of them is numbered and kept in the
//! host's bounded replay window, and `process/resume` replays what a new connection missed.
//! When the connection closes the session is detached, not killed: its processes keep
//! running for the grace period, and the sink holds their output back (the pump stops
//! reading, so the child blocks on its pipe: nothing is dropped and memory stays bounded)
//! until a connection resumes them. Past the grace, or at shutdown, they are killed.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use tandem_host::{ConnectionId, OutgoingMessageSender, RequestContext};
use tandem_protocol::{
    EventCursor, JSONRPCErrorError, ProcessExitedNotification, ProcessOutputDeltaNotification,
    ProcessResumeParams, ProcessResumeResponse, ServerNotification,
};
use tokio::sync::watch;

use super::{StdinOrder, TandemServer};
use crate::process::{DeltaDelivery, HandleRelease, ProcessEventSink, ProcessManager, PtyScreen};

/// How many finished processes of a session keep their replay stream, for a client that
/// resumes after missing their `process/exited`; the oldest is forgotten past it.
pub(crate) const FINISHED_STREAMS_KEPT: usize = 16;

/// Where a session's notifications may go.
#[derive(Debug, Default)]
pub(crate) struct Delivery {
    /// Handles whose stream the current connection is attached to: their notifications are
    /// sent (and wait for the consumer). Others wait here until resumed.
    pub(crate) attached: HashSet<String>,
    /// The session ended (grace over, shutdown): nothing waits any more.
    pub(crate) ended: bool,
}

/// The `process/spawn` processes of one connection, kept across a reconnect.
pub(crate) struct ProcessSession {
    /// What a new connection names to take the session over (`processSession`); renewed at
    /// each takeover, so a token works once.
    token: Mutex<String>,
    /// Names the session's streams (`process/<origin>/<handle>`): the session's first token,
    /// which unlike the token never changes.
    origin: Arc<str>,
    pub(crate) manager: ProcessManager,
    pub(crate) sink: Arc<dyn ProcessEventSink>,
    pub(crate) stdin_order: Mutex<StdinOrder>,
    delivery: watch::Sender<Delivery>,
    /// Handles that have a stream: running ones, then finished ones (oldest first); shared
    /// with the sink, which moves a handle among the finished once its exit was sent.
    streams: Arc<Mutex<SessionStreams>>,
    /// Counts detachments, so that a grace timer of an earlier one does not end a session
    /// taken over and detached again since.
    detachments: AtomicU64,
}

#[derive(Default)]
struct SessionStreams {
    /// Running handles, with where their stream started (what a resume without a cursor
    /// replays from).
    running: HashMap<String, EventCursor>,
    finished: VecDeque<(String, EventCursor)>,
    /// attach19: the attach token of each running handle shared with `process/share`; it
    /// goes with the run (forgotten at the exit), so it never names a later run of the handle.
    shares: HashMap<String, String>,
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A fresh unguessable token.
pub(crate) fn new_token() -> String {
    format!(
        "{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    )
}

impl ProcessSession {
    pub(crate) fn new(outgoing: OutgoingMessageSender, manager: ProcessManager) -> Arc<Self> {
        let token = new_token();
        let origin: Arc<str> = Arc::from(token.as_str());
        let (delivery, receiver) = watch::channel(Delivery::default());
        let streams = Arc::new(Mutex::new(SessionStreams::default()));
        Arc::new(Self {
            token: Mutex::new(token),
            origin: Arc::clone(&origin),
            manager,
            sink: Arc::new(SessionSink {
                outgoing,
                origin,
                delivery: receiver,
                streams: Arc::clone(&streams),
            }),
            stdin_order: Mutex::new(StdinOrder::default()),
            delivery,
            streams,
            detachments: AtomicU64::new(0),
        })
    }

    pub(crate) fn token(&self) -> String {
        lock(&self.token).clone()
    }

    pub(crate) fn set_token(&self, token: String) {
        *lock(&self.token) = token;
    }

    /// The host stream of `handle`'s notifications.
    pub(crate) fn stream(&self, handle: &str) -> String {
        stream_name(&self.origin, handle)
    }

    /// Where `handle`'s stream started, if it has one a client may resume.
    pub(crate) fn start_of(&self, handle: &str) -> Option<EventCursor> {
        let streams = lock(&self.streams);
        streams.running.get(handle).cloned().or_else(|| {
            streams
                .finished
                .iter()
                .find(|(h, _)| h == handle)
                .map(|(_, start)| start.clone())
        })
    }

    /// attach19: the attach token of running PTY process `handle` (the same for every call
    /// during the run).
    pub(crate) fn share(&self, handle: &str) -> Result<String, JSONRPCErrorError> {
        // A PTY process that is running (not only kept for a resume).
        self.manager.screen_of(handle)?;
        let mut streams = lock(&self.streams);
        if !streams.running.contains_key(handle) {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "no active process for process handle {handle:?}"
            )));
        }
        Ok(streams
            .shares
            .entry(handle.to_owned())
            .or_insert_with(new_token)
            .clone())
    }

    /// attach19: whether `token` is the attach token of running `handle`.
    pub(crate) fn is_shared(&self, handle: &str, token: &str) -> bool {
        lock(&self.streams)
            .shares
            .get(handle)
            .is_some_and(|shared| same_secret(shared, token))
    }

    /// attach19: the emulated screen of running PTY process `handle`.
    pub(crate) fn screen_of(&self, handle: &str) -> Result<Arc<PtyScreen>, JSONRPCErrorError> {
        self.manager.screen_of(handle)
    }

    /// Every stream of the session.
    pub(crate) fn stream_names(&self) -> Vec<String> {
        let streams = lock(&self.streams);
        streams
            .running
            .keys()
            .chain(streams.finished.iter().map(|(h, _)| h))
            .map(|handle| self.stream(handle))
            .collect()
    }

    /// Whether anything of this session is worth keeping past its connection.
    pub(crate) fn has_streams(&self) -> bool {
        let streams = lock(&self.streams);
        !streams.running.is_empty() || !streams.finished.is_empty()
    }

    /// A process is being spawned as `handle`: forgets a previous run of the handle and
    /// returns its stream, to close before the new run's stream is opened.
    pub(crate) fn forget_previous(&self, handle: &str) -> Option<String> {
        let mut streams = lock(&self.streams);
        let reused = streams.finished.iter().position(|(h, _)| h == handle)?;
        streams.finished.remove(reused);
        Some(self.stream(handle))
    }

    /// `handle` was spawned and its stream, which starts at `start`, attached to the
    /// connection: its notifications flow.
    pub(crate) fn started(&self, handle: &str, start: EventCursor) {
        lock(&self.streams).running.insert(handle.to_owned(), start);
        self.delivery.send_modify(|delivery| {
            delivery.attached.insert(handle.to_owned());
        });
    }

    /// `handle`'s connection was (re)attached to its stream: its notifications flow again.
    pub(crate) fn resumed(&self, handle: &str) {
        self.delivery.send_modify(|delivery| {
            delivery.attached.insert(handle.to_owned());
        });
    }

    /// The connection closed: notifications wait for a resume; returns the detachment's
    /// number for [`Self::is_detachment`].
    pub(crate) fn detach(&self) -> u64 {
        self.delivery
            .send_modify(|delivery| delivery.attached.clear());
        self.detachments.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Whether `detachment` is still the latest one.
    pub(crate) fn is_detachment(&self, detachment: u64) -> bool {
        self.detachments.load(Ordering::Acquire) == detachment
    }

    /// Kills every process and closes every stream of the session: a finished process's at
    /// once, a running one's once its `process/exited` went to whoever still watches it
    /// (`process/attach`; the sink closes it then).
    pub(crate) async fn end(&self, outgoing: &OutgoingMessageSender) {
        self.delivery.send_modify(|delivery| delivery.ended = true);
        self.manager.kill_all().await;
        let names: Vec<String> = {
            let mut streams = lock(&self.streams);
            streams.shares.clear();
            let finished: Vec<(String, EventCursor)> = streams.finished.drain(..).collect();
            finished
                .into_iter()
                .map(|(handle, _)| self.stream(&handle))
                .collect()
        };
        for name in names {
            outgoing.close_stream(&name).await;
        }
    }
}

impl SessionStreams {
    /// `handle` exited and its `process/exited` was sent: it keeps its stream among the
    /// newest finished ones; returns the handle forgotten to make room, if any.
    fn finished(&mut self, handle: &str) -> Option<String> {
        let start = self.running.remove(handle)?;
        self.shares.remove(handle);
        self.finished.push_back((handle.to_owned(), start));
        if self.finished.len() > FINISHED_STREAMS_KEPT {
            return self.finished.pop_front().map(|(oldest, _)| oldest);
        }
        None
    }
}

/// Compares two tokens in time that does not depend on where they differ.
fn same_secret(known: &str, offered: &str) -> bool {
    known.len() == offered.len()
        && known
            .bytes()
            .zip(offered.bytes())
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

/// A process stream's window of deltas in flight: at most an eighth of the host's shared
/// router queue (16 at the default capacity of 128), so that a consumer that stops reading
/// never has every slot of it taken by output, and the dispatcher's own answers (a
/// `-32601`, a `Not initialized`) still find room; at least one.
pub(super) fn window_for(outgoing: &OutgoingMessageSender) -> usize {
    (outgoing.queue_capacity() / 8).max(1)
}

fn stream_name(origin: &str, handle: &str) -> String {
    format!("process/{origin}/{handle}")
}

/// Sends a session's process notifications on their streams, each once its handle is
/// attached to a live connection: while detached the pump waits here, which stops it reading
/// the child's pipe.
struct SessionSink {
    outgoing: OutgoingMessageSender,
    origin: Arc<str>,
    delivery: watch::Receiver<Delivery>,
    streams: Arc<Mutex<SessionStreams>>,
}

impl SessionSink {
    /// Waits until `handle` may be sent; `false` if the session ended.
    async fn ready(&self, handle: &str) -> bool {
        let mut delivery = self.delivery.clone();
        match delivery
            .wait_for(|delivery| delivery.ended || delivery.attached.contains(handle))
            .await
        {
            Ok(delivery) => !delivery.ended,
            Err(_) => false,
        }
    }
}

#[async_trait]
impl ProcessEventSink for SessionSink {
    async fn output_delta(&self, delta: ProcessOutputDeltaNotification) {
        let stream: Arc<str> = stream_name(&self.origin, &delta.process_handle).into();
        if !self.ready(&delta.process_handle).await {
            return;
        }
        let note = ServerNotification::ProcessOutputDelta(delta);
        if !self
            .outgoing
            .send_stream_notification_and_wait(stream, note)
            .await
        {
            tracing::trace!("process output kept for a resume, not delivered");
        }
    }

    async fn screen_delta(&self, delta: ProcessOutputDeltaNotification, screen: Arc<PtyScreen>) {
        let stream: Arc<str> = stream_name(&self.origin, &delta.process_handle).into();
        if !self.ready(&delta.process_handle).await {
            return;
        }
        // Fed and queued as one step against `process/attach`, which snapshots and queues its
        // attachment under the same lock: an attacher gets each delta either in its screen or
        // as a notification, never both, never neither.
        let queued = {
            let _order = screen.order.lock().await;
            screen.feed(&delta.delta);
            self.outgoing
                .queue_stream_notification(stream, ServerNotification::ProcessOutputDelta(delta))
                .await
        };
        if !queued.delivered().await {
            tracing::trace!("process output kept for a resume, not delivered");
        }
    }

    fn deltas_in_flight(&self) -> usize {
        window_for(&self.outgoing)
    }

    /// Each delta is also kept in the stream's replay window (for `process/resume`), and an
    /// in-process consumer's event queue holds the newest ones until it reads them.
    fn deltas_retained(&self) -> usize {
        self.outgoing
            .deltas_held_after_delivery(crate::process::DELTA_MERGE_BYTES)
    }

    async fn queue_output_delta(&self, delta: ProcessOutputDeltaNotification) -> DeltaDelivery {
        let stream: Arc<str> = stream_name(&self.origin, &delta.process_handle).into();
        if !self.ready(&delta.process_handle).await {
            return DeltaDelivery::delivered();
        }
        let note = ServerNotification::ProcessOutputDelta(delta);
        let queued = self.outgoing.queue_stream_notification(stream, note).await;
        DeltaDelivery::pending(async move {
            if !queued.delivered().await {
                tracing::trace!("process output kept for a resume, not delivered");
            }
        })
    }

    async fn queue_screen_delta(
        &self,
        delta: ProcessOutputDeltaNotification,
        screen: Arc<PtyScreen>,
    ) -> DeltaDelivery {
        let stream: Arc<str> = stream_name(&self.origin, &delta.process_handle).into();
        if !self.ready(&delta.process_handle).await {
            return DeltaDelivery::delivered();
        }
        // Fed and queued under the screen's order lock, as in `screen_delta`.
        let queued = {
            let _order = screen.order.lock().await;
            screen.feed(&delta.delta);
            self.outgoing
                .queue_stream_notification(stream, ServerNotification::ProcessOutputDelta(delta))
                .await
        };
        DeltaDelivery::pending(async move {
            if !queued.delivered().await {
                tracing::trace!("process output kept for a resume, not delivered");
            }
        })
    }

    async fn exited(&self, exited: ProcessExitedNotification) {
        self.exited_then(exited, HandleRelease::new(|| {})).await;
    }

    async fn exited_then(&self, exited: ProcessExitedNotification, release: HandleRelease) {
        let handle = exited.process_handle.clone();
        let stream: Arc<str> = stream_name(&self.origin, &handle).into();
        if !self.ready(&handle).await {
            // The session ended (its owner never came back, or shutdown): the owner is gone,
            // but a watcher still learns that the process ended; then the stream closes.
            let ours = {
                let mut streams = lock(&self.streams);
                streams.shares.remove(&handle);
                streams.running.remove(&handle).is_some()
            };
            if ours {
                let note = ServerNotification::ProcessExited(exited);
                self.outgoing
                    .send_stream_notification_then(Arc::clone(&stream), note, move |_| {
                        release.run();
                    })
                    .await;
                self.outgoing.close_stream(&stream).await;
            } else {
                release.run();
            }
            return;
        }
        // The attach token dies with the run, before anyone can see the exit.
        lock(&self.streams).shares.remove(&handle);
        let note = ServerNotification::ProcessExited(exited);
        // Released in the host's delivery path, before the client's next request is taken;
        // the stream stays for a client that missed the notification.
        let delivered = self
            .outgoing
            .send_stream_notification_then(stream, note, move |_| release.run())
            .await;
        if !delivered {
            tracing::debug!(%handle, "process/exited kept for a resume, not delivered");
        }
        let forgotten = lock(&self.streams).finished(&handle);
        if let Some(oldest) = forgotten {
            self.outgoing
                .close_stream(&stream_name(&self.origin, &oldest))
                .await;
        }
    }
}

impl TandemServer {
    /// A connection closed: its process session is kept for the grace period if it has
    /// anything to resume, else ended at once.
    pub(super) async fn detach_session(&self, session: Arc<ProcessSession>) {
        let grace = self.options.process_detach_grace;
        if !session.has_streams() || grace.is_zero() {
            session.end(&self.outgoing).await;
            return;
        }
        let detachment = session.detach();
        let token = session.token();
        tracing::debug!(
            grace_ms = grace.as_millis() as u64,
            "connection closed; its processes wait for a resume"
        );
        lock(&self.detached).insert(token.clone(), Arc::clone(&session));
        let detached = Arc::clone(&self.detached);
        let outgoing = self.outgoing.clone();
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            let expired = {
                let mut detached = lock(&detached);
                let still = detached.get(&token).is_some_and(|kept| {
                    Arc::ptr_eq(kept, &session) && session.is_detachment(detachment)
                });
                if still {
                    detached.remove(&token);
                }
                still
            };
            if expired {
                tracing::info!(
                    ?grace,
                    "no connection resumed the processes of a closed one in time; killing them"
                );
                session.end(&outgoing).await;
            }
        });
    }

    /// `process/resume`, on a task of its own: its answer must follow the replay, on the
    /// ordinary lane, which may wait for the client.
    pub(super) fn resume_process(&self, params: ProcessResumeParams, context: RequestContext) {
        let connection = context.id.connection_id;
        let outcome = self.take_session(connection, &params.process_session);
        let outgoing = self.outgoing.clone();
        tokio::spawn(async move {
            let result = match outcome {
                Ok(session) => resume_stream(&outgoing, &session, connection, params).await,
                Err(error) => Err(error),
            };
            outgoing.send_result(context.id, result).await;
        });
    }

    /// The session named `token`, made `connection`'s: its own, a detached one, or one of a
    /// connection that has not been seen closing yet (the client already came back).
    fn take_session(
        &self,
        connection: ConnectionId,
        token: &str,
    ) -> Result<Arc<ProcessSession>, JSONRPCErrorError> {
        let processes = self.processes(connection);
        let current = processes.session();
        if current.token() == token {
            return Ok(current);
        }
        if current.has_streams() {
            return Err(JSONRPCErrorError::invalid_request(
                "this connection already runs processes of its own; send process/resume before any process/spawn",
            ));
        }
        let taken = lock(&self.detached).remove(token);
        let taken = match taken {
            Some(session) => session,
            None => {
                let mut connections = self.lock();
                let owner = connections.iter().find_map(|(id, other)| {
                    (*id != connection && other.session().token() == token).then_some(*id)
                });
                let Some(owner) = owner else {
                    return Err(JSONRPCErrorError::invalid_request(format!(
                        "no process session {token:?}: its processes were killed (not resumed within the grace period, or the server restarted)"
                    )));
                };
                let other = connections.get_mut(&owner).expect("found above");
                let fresh = ProcessSession::new(
                    self.outgoing.clone(),
                    ProcessManager::new()
                        .with_kept_output_max(self.threads.config().process_output_max_bytes),
                );
                let session = std::mem::replace(&mut *lock(&other.session), fresh);
                session.detach();
                let outgoing = self.outgoing.clone();
                let names = session.stream_names();
                tokio::spawn(async move {
                    for name in names {
                        outgoing.detach_stream(&name, owner).await;
                    }
                });
                session
            }
        };
        // The taken session answers to this connection's token from now on.
        taken.set_token(current.token());
        *lock(&processes.session) = Arc::clone(&taken);
        tracing::debug!(%connection, "a connection took over the processes of a closed one");
        Ok(taken)
    }
}

/// Attaches `connection` to the process's stream, replaying what followed the cursor.
async fn resume_stream(
    outgoing: &OutgoingMessageSender,
    session: &ProcessSession,
    connection: ConnectionId,
    params: ProcessResumeParams,
) -> Result<ProcessResumeResponse, JSONRPCErrorError> {
    let handle = params.process_handle;
    let start = session.start_of(&handle).ok_or_else(|| {
        JSONRPCErrorError::invalid_request(format!(
            "no active process for process handle {handle:?}"
        ))
    })?;
    let after = params.cursor.unwrap_or(start);
    let attachment = outgoing
        .attach_stream(&session.stream(&handle), connection, Some(after))
        .await
        .ok_or_else(|| JSONRPCErrorError::internal("the server is shutting down"))?;
    session.resumed(&handle);
    Ok(ProcessResumeResponse {
        gap: attachment.gap.unwrap_or(false),
        replayed: attachment.replayed,
        cursor: attachment.cursor,
    })
}
