//! The wire backend, shared by the child (stdio) and websocket transports: lazy connection,
//! the `initialize` handshake, a generation number per successful handshake, the pending-reply
//! map, and the reader task that decodes every frame with [`tandem_protocol::wire`] and routes
//! it. A transport only moves frames (see [`super::link`]).
//!
//! When a connection ends, every pending request fails as disconnected, `sent` telling whether
//! its frame had been written. With reconnect on ([`crate::ReconnectPolicy`]), the reader that
//! saw the end hands over to `reconnect`, which comes back with backoff; requests
//! made meanwhile wait for it. Whoever opens the next connection after an unexpected end
//! resumes the client's threads on it before any other request goes out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use tandem_protocol::wire::{
    ClientMessage, DecodeError, ServerMessage, decode_server_message, encode_client_message,
    encode_raw_request,
};
use tandem_protocol::{
    ClientNotification, ClientRequest, EmptyParams, InitializeParams, InitializeResponse,
    ProcessResumeParams, RequestId, ThreadResumeParams,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::link::{Connector, FrameSink, FrameSource, LinkControl, OutFrame};
use super::supervise::{self, ResumeLink};
use super::{Dispatch, Failure, Incoming, OutgoingRequest, Reply};
use crate::connection::{ConnectionState, ReconnectPolicy};

/// What a wire backend needs to know, copied out of the client's options.
#[derive(Debug, Clone)]
pub(crate) struct WireConfig {
    /// Capacity of each connection's writer queue.
    pub(crate) capacity: usize,
    pub(crate) initialize: InitializeParams,
    /// The limit of the handshake and of each resume after a reconnect (60 s when `None`).
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) close_timeout: Duration,
    pub(crate) reconnect: ReconnectPolicy,
}

impl WireConfig {
    pub(crate) fn handshake_limit(&self) -> Duration {
        self.request_timeout.unwrap_or(Duration::from_secs(60))
    }
}

pub(crate) struct PendingReply {
    reply: oneshot::Sender<Reply>,
    /// `Some(thread)` for a `thread/resume` sent after a reconnect: its answer is also routed,
    /// in its place in the stream.
    routed: Option<Routed>,
}

/// What a routed reply resumed (see [`PendingReply::routed`]).
#[derive(Debug, Clone)]
pub(crate) enum Routed {
    /// A `thread/resume` of this thread.
    Thread(String),
    /// A `process/resume` of this process handle.
    Process(String),
}

/// One live connection (one child process, one websocket).
pub(crate) struct Connection {
    pub(crate) generation: u64,
    out: mpsc::Sender<OutFrame>,
    pending: Mutex<HashMap<RequestId, PendingReply>>,
    /// Why the connection ended, once it has.
    ended: OnceLock<String>,
    pub(crate) initialize: OnceLock<InitializeResponse>,
    control: LinkControl,
    /// Stops the writer, which then ends its stream politely.
    stop_writer: CancellationToken,
    /// Stops the reader at once (the client ended the connection itself).
    stop_reader: CancellationToken,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Connection {
    pub(crate) fn alive(&self) -> bool {
        self.ended.get().is_none()
    }

    /// Marks the connection ended and fails every pending request: dropping each reply
    /// sender wakes its caller, which reads whether it was written.
    fn end(&self, reason: &str) {
        if self.ended.set(reason.to_owned()).is_ok() {
            tracing::debug!(generation = self.generation, %reason, "server connection ended");
        }
        lock(&self.pending).clear();
    }

    fn reason(&self) -> String {
        self.ended
            .get()
            .cloned()
            .unwrap_or_else(|| "the connection ended".into())
    }

    fn take_pending(&self, id: &RequestId) -> Option<PendingReply> {
        let pending = lock(&self.pending).remove(id);
        if pending.is_none() {
            tracing::warn!(%id, "reply to an unknown or abandoned request dropped");
        }
        pending
    }

    /// Queues `message` for the writer; `false` if the connection is gone.
    async fn send_message(&self, message: &ClientMessage) -> Result<(), Failure> {
        let mut bytes = Vec::new();
        encode_client_message(message, &mut bytes)
            .map_err(|error| Failure::NotSent(error.to_string()))?;
        self.out
            .send(OutFrame {
                bytes,
                written: None,
            })
            .await
            .map_err(|_| Failure::Disconnected {
                sent: false,
                reason: self.reason(),
            })
    }

    /// Ends the connection without waiting: the client is gone or replaced it.
    fn kill(&self, reason: &str) {
        self.end(reason);
        self.stop_reader.cancel();
        self.stop_writer.cancel();
        self.control.kill_now();
    }
}

/// Removes a request's pending entry if its caller stops waiting, and tells the caller whether
/// the frame was written.
struct InFlight<'a> {
    connection: &'a Connection,
    id: RequestId,
    flag: Arc<AtomicBool>,
    written: &'a AtomicBool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.written
            .store(self.flag.load(Ordering::Acquire), Ordering::Relaxed);
        lock(&self.connection.pending).remove(&self.id);
    }
}

/// The state of one wire backend, shared with its connections' readers and its supervisor.
pub(crate) struct WireInner {
    connector: Connector,
    pub(crate) config: WireConfig,
    /// Serializes connecting, so concurrent first requests start one server, and requests
    /// made while the supervisor comes back wait for it.
    pub(crate) connecting: tokio::sync::Mutex<()>,
    current: Mutex<Option<Arc<Connection>>>,
    generation: AtomicU64,
    pub(crate) closed: AtomicBool,
    /// Set when a connection ended unexpectedly with reconnect on: the next connection, whoever
    /// opens it, resumes the client's threads first.
    pub(crate) needs_resume: AtomicBool,
    /// Set while the threads are resumed on a new connection: the connection is published
    /// (answers to re-sent server requests need it) but requests wait behind the lock.
    resuming: AtomicBool,
    /// Stops a supervisor's backoff (close, abandon).
    pub(crate) stop: CancellationToken,
    pub(crate) reconnects: AtomicU64,
}

/// The wire backend of one client.
pub(crate) struct WireBackend {
    inner: Arc<WireInner>,
}

impl WireInner {
    pub(crate) fn live(&self) -> Option<Arc<Connection>> {
        lock(&self.current).clone().filter(|c| c.alive())
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// `connection`, initialized, ended unexpectedly with `reason`; returns whether the
    /// client comes back by itself. The first to notice marks the next connection as owing a
    /// resume before the connection reads as ended, so that a request that finds it dead and
    /// opens the next one resumes the threads first.
    fn lose(&self, connection: &Connection, reason: &str) -> bool {
        let reconnect = self.config.reconnect.enabled;
        if connection.alive() && reconnect {
            self.needs_resume.store(true, Ordering::Release);
        }
        connection.end(reason);
        reconnect
    }

    /// Opens a connection under the `connecting` lock (held by the caller), replacing a dead
    /// one, and resumes the client's threads on it if a connection ended unexpectedly before.
    pub(crate) async fn open_locked<D: Dispatch>(
        self: &Arc<Self>,
        dispatch: &Arc<D>,
    ) -> Result<Arc<Connection>, Failure> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Failure::Closed);
        }
        if let Some(old) = lock(&self.current).take() {
            // The old link is dead; make sure nothing of it lingers.
            old.kill("replaced by a new connection");
        }
        let connection = self.open(dispatch).await?;
        let resume = self.needs_resume.swap(false, Ordering::AcqRel);
        // Set before the connection is published, so no request slips in ahead of the resume.
        self.resuming.store(resume, Ordering::Release);
        *lock(&self.current) = Some(connection.clone());
        if resume {
            dispatch
                .resume(supervise::ResumeSession::new(
                    connection.clone(),
                    self.config.handshake_limit(),
                ))
                .await;
            self.resuming.store(false, Ordering::Release);
        }
        Ok(connection)
    }

    async fn open<D: Dispatch>(
        self: &Arc<Self>,
        dispatch: &Arc<D>,
    ) -> Result<Arc<Connection>, Failure> {
        let link = self.connector.open().await.map_err(Failure::Connect)?;
        let generation = self.generation() + 1;
        let (out, frames) = mpsc::channel(self.config.capacity);
        let connection = Arc::new(Connection {
            generation,
            out,
            pending: Mutex::new(HashMap::new()),
            ended: OnceLock::new(),
            initialize: OnceLock::new(),
            control: link.control,
            stop_writer: CancellationToken::new(),
            stop_reader: CancellationToken::new(),
            tasks: Mutex::new(Vec::new()),
        });
        let writer = tokio::spawn(run_writer(
            link.sink,
            frames,
            connection.clone(),
            self.clone(),
        ));
        let reader = tokio::spawn(run_reader(
            link.source,
            connection.clone(),
            dispatch.clone(),
            self.clone(),
        ));
        lock(&connection.tasks).extend([writer, reader]);

        match self.handshake(dispatch.as_ref(), &connection).await {
            Ok(response) => {
                let _ = connection.initialize.set(response);
                self.generation.store(generation, Ordering::Release);
                Ok(connection)
            }
            Err(reason) => {
                connection.end(&reason);
                shutdown_connection(&connection, self.config.close_timeout).await;
                Err(Failure::Connect(reason))
            }
        }
    }

    async fn handshake<D: Dispatch>(
        &self,
        dispatch: &D,
        connection: &Arc<Connection>,
    ) -> Result<InitializeResponse, String> {
        let request = ClientRequest::Initialize {
            request_id: dispatch.next_request_id(),
            params: self.config.initialize.clone(),
        };
        let written = AtomicBool::new(false);
        let reply = send_request(connection, OutgoingRequest::Typed(request), &written, None);
        let limit = self.config.handshake_limit();
        let result = match tokio::time::timeout(limit, reply).await {
            Ok(Ok(Ok(result))) => result,
            Ok(Ok(Err(error))) => {
                return Err(format!("the server refused initialize: {}", error.message));
            }
            Ok(Err(failure)) => {
                return Err(format!(
                    "the server ended the connection during initialize: {}",
                    failure.reason()
                ));
            }
            Err(_) => {
                return Err(format!(
                    "the server did not answer initialize within {limit:?}"
                ));
            }
        };
        let response: InitializeResponse = serde_json::from_value(result)
            .map_err(|error| format!("the server's initialize result does not decode: {error}"))?;
        connection
            .send_message(&ClientMessage::Notification(
                ClientNotification::Initialized(EmptyParams {}),
            ))
            .await
            .map_err(Failure::reason)?;
        Ok(response)
    }
}

impl WireBackend {
    pub(crate) fn new(connector: Connector, config: WireConfig) -> Self {
        Self {
            inner: Arc::new(WireInner {
                connector,
                config,
                connecting: tokio::sync::Mutex::new(()),
                current: Mutex::new(None),
                generation: AtomicU64::new(0),
                closed: AtomicBool::new(false),
                needs_resume: AtomicBool::new(false),
                resuming: AtomicBool::new(false),
                stop: CancellationToken::new(),
                reconnects: AtomicU64::new(0),
            }),
        }
    }

    pub(crate) fn generation(&self) -> u64 {
        self.inner.generation()
    }

    pub(crate) fn initialize_response(&self) -> Option<InitializeResponse> {
        self.inner
            .live()
            .and_then(|connection| connection.initialize.get().cloned())
    }

    pub(crate) fn reconnects(&self) -> bool {
        self.inner.config.reconnect.enabled
    }

    pub(crate) fn child_pid(&self) -> Option<u32> {
        self.inner.live()?.control.pid()
    }

    /// The live connection, connecting (or reconnecting) first if there is none; while a new
    /// connection resumes the client's threads, it waits for that to finish.
    pub(crate) async fn ensure<D: Dispatch>(
        &self,
        dispatch: &Arc<D>,
    ) -> Result<Arc<Connection>, Failure> {
        if let Some(connection) = self.inner.live()
            && !self.inner.resuming.load(Ordering::Acquire)
        {
            return Ok(connection);
        }
        let _connecting = self.inner.connecting.lock().await;
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Failure::Closed);
        }
        if let Some(connection) = self.inner.live() {
            return Ok(connection);
        }
        let first = self.inner.generation() == 0;
        let connection = self.inner.open_locked(dispatch).await?;
        dispatch.state_changed(if first {
            ConnectionState::Connected {
                generation: connection.generation,
            }
        } else {
            ConnectionState::Reconnected {
                generation: connection.generation,
                reconnects: self.inner.reconnects.fetch_add(1, Ordering::AcqRel) + 1,
            }
        });
        Ok(connection)
    }

    pub(crate) async fn request<D: Dispatch>(
        &self,
        dispatch: &Arc<D>,
        request: OutgoingRequest,
        written: &AtomicBool,
    ) -> Result<Reply, Failure> {
        let connection = self.ensure(dispatch).await?;
        send_request(&connection, request, written, None).await
    }

    pub(crate) async fn answer(
        &self,
        generation: u64,
        id: RequestId,
        result: Reply,
    ) -> Result<(), Failure> {
        let connection = self
            .inner
            .live()
            .filter(|connection| connection.generation == generation)
            .ok_or_else(|| Failure::Disconnected {
                sent: false,
                reason: "the connection the server request came from has ended".into(),
            })?;
        let message = match result {
            Ok(result) => ClientMessage::Response { id, result },
            Err(error) => ClientMessage::Error { id, error },
        };
        connection.send_message(&message).await
    }

    pub(crate) async fn close(&self, close_timeout: Duration) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.stop.cancel();
        let _connecting = self.inner.connecting.lock().await;
        let connection = lock(&self.inner.current).take();
        if let Some(connection) = connection {
            connection.end("the client was closed");
            shutdown_connection(&connection, close_timeout).await;
        }
    }

    pub(crate) fn abandon(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.stop.cancel();
        if let Some(connection) = lock(&self.inner.current).take() {
            connection.kill("the client was dropped");
        }
    }
}

impl Failure {
    pub(crate) fn reason(self) -> String {
        match self {
            Failure::NotSent(reason) | Failure::Connect(reason) => reason,
            Failure::Disconnected { reason, .. } => reason,
            Failure::Closed => "the client was closed".into(),
            Failure::TimedOut { after, .. } => format!("no reply within {after:?}"),
        }
    }
}

/// Registers `request`, queues its frame and waits for the reply. `routed`: see
/// [`PendingReply::routed`].
pub(crate) async fn send_request(
    connection: &Connection,
    request: OutgoingRequest,
    written: &AtomicBool,
    routed: Option<Routed>,
) -> Result<Reply, Failure> {
    let id = request.id().clone();
    let mut bytes = Vec::new();
    match request {
        OutgoingRequest::Typed(request) => {
            encode_client_message(&ClientMessage::Request(request), &mut bytes)
        }
        OutgoingRequest::Raw(request) => encode_raw_request(&request, &mut bytes),
    }
    .map_err(|error| Failure::NotSent(error.to_string()))?;
    let flag = Arc::new(AtomicBool::new(false));
    let (reply, answer) = oneshot::channel();
    {
        let mut pending = lock(&connection.pending);
        // Checked under the lock `end` clears, so no entry is added after the clear.
        if !connection.alive() {
            return Err(Failure::Disconnected {
                sent: false,
                reason: connection.reason(),
            });
        }
        pending.insert(id.clone(), PendingReply { reply, routed });
    }
    let in_flight = InFlight {
        connection,
        id,
        flag: flag.clone(),
        written,
    };
    let frame = OutFrame {
        bytes,
        written: Some(flag),
    };
    if connection.out.send(frame).await.is_err() {
        return Err(Failure::Disconnected {
            sent: false,
            reason: connection.reason(),
        });
    }
    let outcome = answer.await;
    let sent = in_flight.flag.load(Ordering::Acquire);
    drop(in_flight);
    outcome.map_err(|_| Failure::Disconnected {
        sent,
        reason: connection.reason(),
    })
}

/// Writes queued frames in order until stopped or the stream fails, then ends the stream.
async fn run_writer(
    mut sink: FrameSink,
    mut frames: mpsc::Receiver<OutFrame>,
    connection: Arc<Connection>,
    inner: Arc<WireInner>,
) {
    loop {
        let frame = tokio::select! {
            biased;
            _ = connection.stop_writer.cancelled() => break,
            frame = frames.recv() => frame,
        };
        let Some(frame) = frame else { break };
        // Marked before the write: once bytes may have left, the server may act on them, and
        // a request must never be called "not sent" (safe to retry) after that.
        if let Some(written) = &frame.written {
            written.store(true, Ordering::Release);
        }
        if let Err(reason) = sink.write(frame.bytes).await {
            let reason = format!("writing to the server failed: {reason}");
            if connection.initialize.get().is_some() && !inner.closed.load(Ordering::Acquire) {
                inner.lose(&connection, &reason);
            } else {
                connection.end(&reason);
            }
            // The reader reports the outage.
            connection.stop_reader.cancel();
            return;
        }
    }
    sink.finish().await;
}

/// Hands a reply to its caller; a routed one (a resume after reconnect) is routed first, in
/// its place among the connection's events.
async fn deliver_reply<D: Dispatch>(
    connection: &Connection,
    dispatch: &Arc<D>,
    id: &RequestId,
    reply: Reply,
) {
    let Some(pending) = connection.take_pending(id) else {
        return;
    };
    match pending.routed {
        Some(routed) => {
            let ok = reply.is_ok();
            let incoming = match routed {
                Routed::Thread(thread_id) => Incoming::Resumed { thread_id, reply },
                Routed::Process(handle) => Incoming::ProcessResumed { handle, reply },
            };
            dispatch.route(connection.generation, incoming).await;
            // The caller only waits for the routing to be done.
            let _ = pending.reply.send(if ok {
                Ok(serde_json::Value::Null)
            } else {
                Err(tandem_protocol::JSONRPCErrorError::internal(
                    "the resume failed",
                ))
            });
        }
        None => {
            let _ = pending.reply.send(reply);
        }
    }
}

/// Decodes and routes every frame until the stream ends, then ends the connection and, if the
/// end was not the client's doing and reconnect is on, starts coming back.
async fn run_reader<D: Dispatch>(
    mut source: FrameSource,
    connection: Arc<Connection>,
    dispatch: Arc<D>,
    inner: Arc<WireInner>,
) {
    let generation = connection.generation;
    let stopped = "the connection was ended by the client";
    let reason = loop {
        let frame = tokio::select! {
            biased;
            _ = connection.stop_reader.cancelled() => break connection.ended.get().cloned().unwrap_or_else(|| stopped.to_owned()),
            frame = source.next() => frame,
        };
        let frame = match frame {
            Ok(frame) => frame,
            Err(reason) => break reason,
        };
        let incoming = match decode_server_message(&frame) {
            Ok(ServerMessage::Response { id, result }) => {
                deliver_reply(&connection, &dispatch, &id, Ok(result)).await;
                continue;
            }
            Ok(ServerMessage::Error {
                id: Some(id),
                error,
            }) => {
                deliver_reply(&connection, &dispatch, &id, Err(error)).await;
                continue;
            }
            Ok(ServerMessage::Error { id: None, error }) => {
                tracing::warn!(%error, "the server reported an error about an unreadable message");
                continue;
            }
            Ok(ServerMessage::Notification {
                notification,
                cursor,
                ..
            }) => Incoming::Notification {
                note: notification,
                cursor,
            },
            Ok(ServerMessage::Request(request)) => Incoming::Request(request),
            Err(DecodeError::Reply(error)) => {
                // A server request whose params do not decode: the server is owed an answer.
                if let Some(id) = error.id {
                    let answer = ClientMessage::Error {
                        id,
                        error: error.error,
                    };
                    if connection.send_message(&answer).await.is_err() {
                        break connection.reason();
                    }
                }
                continue;
            }
            Err(DecodeError::Ignore(reason)) => {
                tracing::warn!(%reason, "undecodable message from the server ignored");
                continue;
            }
        };
        tokio::select! {
            biased;
            _ = connection.stop_reader.cancelled() => break connection.ended.get().cloned().unwrap_or_else(|| stopped.to_owned()),
            () = dispatch.route(generation, incoming) => {}
        }
    };
    if connection.initialize.get().is_none() {
        // A handshake that failed: this connection never served the client.
        connection.end(&reason);
        return;
    }
    if inner.closed.load(Ordering::Acquire) {
        connection.end(&reason);
        dispatch.connection_lost(generation, &reason, false);
        return;
    }
    // An outage, whoever noticed it first (this reader, the writer, or a request that found
    // the connection dead and replaced it).
    let reconnecting = inner.lose(&connection, &reason);
    if inner.generation() != generation {
        // A newer connection already took over (and resumed): nothing of this one is left
        // to report.
        return;
    }
    dispatch.connection_lost(generation, &reason, reconnecting);
    if reconnecting {
        tokio::spawn(reconnect(inner, dispatch, reason));
    } else {
        dispatch.state_changed(ConnectionState::Disconnected { reason });
    }
}

/// Ends `connection` politely, then harder: the writer ends its stream (stdin EOF or a close
/// frame), then the transport's own escalation runs (for a child: SIGTERM, then SIGKILL of
/// its process group), each step bounded by `step`.
pub(crate) async fn shutdown_connection(connection: &Connection, step: Duration) {
    connection.stop_writer.cancel();
    connection.control.shut_down(step).await;
    connection.stop_reader.cancel();
    let tasks: Vec<_> = lock(&connection.tasks).drain(..).collect();
    for task in tasks {
        if tokio::time::timeout(step, task).await.is_err() {
            tracing::warn!("a connection task did not stop in time");
        }
    }
}

/// Comes back after the connection ended with `reason`: attempts with exponential backoff
/// ([`crate::ReconnectPolicy`]) under the backend's `connecting` lock, so that requests made
/// meanwhile wait for the new connection instead of racing it; each new connection resumes the
/// client's threads (`supervise`), and each step is reported. Gives up after the policy's
/// attempts, ending everything that waited.
///
/// Boxed with its type named: a connection's reader starts this, and this opens connections
/// whose readers start it again, a cycle the compiler can only check through a named type.
pub(crate) fn reconnect<D: Dispatch>(
    inner: Arc<WireInner>,
    dispatch: Arc<D>,
    reason: String,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(reconnect_now(inner, dispatch, reason))
}

async fn reconnect_now<D: Dispatch>(inner: Arc<WireInner>, dispatch: Arc<D>, reason: String) {
    let _connecting = inner.connecting.lock().await;
    if inner.live().is_some() {
        // A request came first and opened (and resumed on) a new connection.
        return;
    }
    let policy = inner.config.reconnect;
    let mut reason = reason;
    for attempt in 1..=policy.max_attempts {
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        dispatch.state_changed(ConnectionState::Reconnecting {
            attempt,
            reason: reason.clone(),
        });
        tokio::select! {
            _ = inner.stop.cancelled() => return,
            () = tokio::time::sleep(policy.backoff(attempt)) => {}
        }
        match inner.open_locked(&dispatch).await {
            Ok(connection) => {
                if !connection.alive() {
                    // Lost again while resuming: that connection's reader comes back again.
                    return;
                }
                let reconnects = inner.reconnects.fetch_add(1, Ordering::AcqRel) + 1;
                tracing::info!(
                    generation = connection.generation,
                    reconnects,
                    "reconnected to the server"
                );
                dispatch.state_changed(ConnectionState::Reconnected {
                    generation: connection.generation,
                    reconnects,
                });
                return;
            }
            Err(Failure::Closed) => return,
            Err(failure) => {
                reason = failure.reason();
                tracing::debug!(attempt, %reason, "reconnect attempt failed");
            }
        }
    }
    tracing::warn!(%reason, attempts = policy.max_attempts, "giving up reconnecting to the server");
    // What followed the threads ends now; a later connection starts afresh.
    inner.needs_resume.store(false, Ordering::Release);
    dispatch.connection_lost(inner.generation(), &reason, false);
    dispatch.state_changed(ConnectionState::Disconnected { reason });
}

impl ResumeLink for Connection {
    fn generation(&self) -> u64 {
        self.generation
    }

    fn resume_thread(
        &self,
        id: RequestId,
        params: ThreadResumeParams,
    ) -> BoxFuture<'_, Result<Reply, Failure>> {
        let routed = Routed::Thread(params.thread_id.clone());
        let request = ClientRequest::ThreadResume {
            request_id: id,
            params,
        };
        Box::pin(send_routed(self, request, routed))
    }

    fn resume_process(
        &self,
        id: RequestId,
        params: ProcessResumeParams,
    ) -> BoxFuture<'_, Result<Reply, Failure>> {
        let routed = Routed::Process(params.process_handle.clone());
        let request = ClientRequest::ProcessResume {
            request_id: id,
            params,
        };
        Box::pin(send_routed(self, request, routed))
    }
}

/// Sends a resume whose answer is routed to `routed`'s followers and waits for it.
async fn send_routed(
    connection: &Connection,
    request: ClientRequest,
    routed: Routed,
) -> Result<Reply, Failure> {
    let written = AtomicBool::new(false);
    send_request(
        connection,
        OutgoingRequest::Typed(request),
        &written,
        Some(routed),
    )
    .await
}
