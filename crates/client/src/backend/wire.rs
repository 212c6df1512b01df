//! The wire backend, shared by the child (stdio) and websocket transports: lazy connection,
//! the `initialize` handshake, a generation number per successful handshake, the pending-reply
//! map, and the reader task that decodes every frame with [`tandem_protocol::wire`] and routes
//! it. A transport only moves frames (see [`FrameSink`] and [`FrameSource`]).
//!
//! When a connection ends, every pending request fails as disconnected, `sent` telling whether
//! its frame had been written; the next request opens a new connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tandem_protocol::wire::{
    ClientMessage, DecodeError, ServerMessage, decode_server_message, encode_client_message,
    encode_raw_request,
};
use tandem_protocol::{
    ClientNotification, ClientRequest, EmptyParams, InitializeResponse, RequestId,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::child::{ChildCommand, ChildLink};
use super::websocket::{WebSocketLink, WebSocketTarget};
use super::{Failure, Incoming, OutgoingRequest, Reply};
use crate::client::Shared;

/// One frame for the writer, with the flag it sets once the frame is written.
pub(crate) struct OutFrame {
    pub(crate) bytes: Vec<u8>,
    pub(crate) written: Option<Arc<AtomicBool>>,
}

/// Where frames go: a child's stdin, or a websocket.
pub(crate) enum FrameSink {
    Child(super::child::ChildSink),
    WebSocket(super::websocket::WebSocketSink),
}

impl FrameSink {
    async fn write(&mut self, frame: Vec<u8>) -> Result<(), String> {
        trace_frame("out", &frame);
        match self {
            Self::Child(sink) => sink.write(frame).await,
            Self::WebSocket(sink) => sink.write(frame).await,
        }
    }

    /// Ends the stream politely: stdin EOF, or a websocket close frame.
    async fn finish(self) {
        match self {
            Self::Child(sink) => sink.finish().await,
            Self::WebSocket(sink) => sink.finish().await,
        }
    }
}

/// Where frames come from.
pub(crate) enum FrameSource {
    Child(super::child::ChildSource),
    WebSocket(super::websocket::WebSocketSource),
}

impl FrameSource {
    /// The next frame; `Err` with the reason once the stream ended.
    async fn next(&mut self) -> Result<Vec<u8>, String> {
        let frame = match self {
            Self::Child(source) => source.next().await,
            Self::WebSocket(source) => source.next().await,
        }?;
        trace_frame("in ", &frame);
        Ok(frame)
    }
}

/// The client's side of the wire trace (the server's is in `tandem_host::transport`): every
/// frame, under the same `tracing` target, so `TANDEM_LOG=tandem::wire=trace` shows both ends.
fn trace_frame(direction: &str, frame: &[u8]) {
    use tandem_host::transport::WIRE_TRACE_TARGET;
    if tracing::enabled!(target: WIRE_TRACE_TARGET, tracing::Level::TRACE) {
        tracing::trace!(
            target: WIRE_TRACE_TARGET,
            "client {direction} {}",
            String::from_utf8_lossy(frame).trim_end()
        );
    }
}

/// What a transport hands back when it connects.
pub(crate) struct Link {
    pub(crate) sink: FrameSink,
    pub(crate) source: FrameSource,
    pub(crate) control: LinkControl,
}

/// How to end a link beyond closing its streams.
pub(crate) enum LinkControl {
    Child(Box<ChildLink>),
    WebSocket(WebSocketLink),
}

/// How to reach the server.
pub(crate) enum Connector {
    Child(ChildCommand),
    WebSocket(WebSocketTarget),
}

struct PendingReply {
    reply: oneshot::Sender<Reply>,
}

/// One live connection (one child process, one websocket).
pub(crate) struct Connection {
    generation: u64,
    out: mpsc::Sender<OutFrame>,
    pending: Mutex<HashMap<RequestId, PendingReply>>,
    /// Why the connection ended, once it has.
    ended: OnceLock<String>,
    initialize: OnceLock<InitializeResponse>,
    control: LinkControl,
    /// Stops the writer, which then ends its stream politely.
    stop_writer: CancellationToken,
    /// Stops the reader at once.
    stop_reader: CancellationToken,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Connection {
    fn alive(&self) -> bool {
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

    fn resolve(&self, id: &RequestId, reply: Reply) {
        match lock(&self.pending).remove(id) {
            Some(pending) => {
                let _ = pending.reply.send(reply);
            }
            None => tracing::warn!(%id, "reply to an unknown or abandoned request dropped"),
        }
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

/// The wire backend of one client.
pub(crate) struct WireBackend {
    connector: Connector,
    /// Serializes connecting, so concurrent first requests start one server.
    connecting: tokio::sync::Mutex<()>,
    current: Mutex<Option<Arc<Connection>>>,
    generation: AtomicU64,
    closed: AtomicBool,
    /// Capacity of each connection's writer queue.
    capacity: usize,
}

impl WireBackend {
    pub(crate) fn new(connector: Connector, capacity: usize) -> Self {
        Self {
            connector,
            connecting: tokio::sync::Mutex::new(()),
            current: Mutex::new(None),
            generation: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            capacity,
        }
    }

    fn live(&self) -> Option<Arc<Connection>> {
        lock(&self.current).clone().filter(|c| c.alive())
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub(crate) fn initialize_response(&self) -> Option<InitializeResponse> {
        self.live()
            .and_then(|connection| connection.initialize.get().cloned())
    }

    pub(crate) fn child_pid(&self) -> Option<u32> {
        let connection = self.live()?;
        match &connection.control {
            LinkControl::Child(child) => child.pid(),
            LinkControl::WebSocket(_) => None,
        }
    }

    /// The live connection, connecting (or reconnecting) first if there is none.
    pub(crate) async fn ensure(&self, shared: &Arc<Shared>) -> Result<Arc<Connection>, Failure> {
        if let Some(connection) = self.live() {
            return Ok(connection);
        }
        let _connecting = self.connecting.lock().await;
        if self.closed.load(Ordering::Acquire) {
            return Err(Failure::Closed);
        }
        if let Some(connection) = self.live() {
            return Ok(connection);
        }
        if let Some(old) = lock(&self.current).take() {
            // The old link is dead; make sure nothing of it lingers.
            old.stop_reader.cancel();
            old.stop_writer.cancel();
            old.control.kill_now();
        }
        let connection = self.open(shared).await?;
        *lock(&self.current) = Some(connection.clone());
        Ok(connection)
    }

    async fn open(&self, shared: &Arc<Shared>) -> Result<Arc<Connection>, Failure> {
        let link = match &self.connector {
            Connector::Child(command) => command.spawn().await,
            Connector::WebSocket(target) => target.connect().await,
        }
        .map_err(Failure::Connect)?;
        let generation = self.generation() + 1;
        let (out, frames) = mpsc::channel(self.capacity);
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
        let writer = tokio::spawn(run_writer(link.sink, frames, connection.clone()));
        let reader = tokio::spawn(run_reader(link.source, connection.clone(), shared.clone()));
        lock(&connection.tasks).extend([writer, reader]);

        match self.handshake(shared, &connection).await {
            Ok(response) => {
                let _ = connection.initialize.set(response);
                self.generation.store(generation, Ordering::Release);
                Ok(connection)
            }
            Err(reason) => {
                connection.end(&reason);
                shutdown_connection(&connection, shared.options().close_timeout).await;
                Err(Failure::Connect(reason))
            }
        }
    }

    async fn handshake(
        &self,
        shared: &Arc<Shared>,
        connection: &Arc<Connection>,
    ) -> Result<InitializeResponse, String> {
        let request = ClientRequest::Initialize {
            request_id: shared.next_request_id(),
            params: shared.options().initialize_params(),
        };
        let written = AtomicBool::new(false);
        let reply = send_request(connection, OutgoingRequest::Typed(request), &written);
        let limit = shared
            .options()
            .request_timeout
            .unwrap_or(Duration::from_secs(60));
        let result = match tokio::time::timeout(limit, reply).await {
            Ok(Ok(Ok(result))) => result,
            Ok(Ok(Err(error))) => {
                return Err(format!("the server refused initialize: {}", error.message));
            }
            Ok(Err(failure)) => {
                return Err(format!(
                    "the server ended the connection during initialize: {}",
                    failure_reason(failure)
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
            .map_err(failure_reason)?;
        Ok(response)
    }

    pub(crate) async fn request(
        &self,
        shared: &Arc<Shared>,
        request: OutgoingRequest,
        written: &AtomicBool,
    ) -> Result<Reply, Failure> {
        let connection = self.ensure(shared).await?;
        send_request(&connection, request, written).await
    }

    pub(crate) async fn answer(
        &self,
        generation: u64,
        id: RequestId,
        result: Reply,
    ) -> Result<(), Failure> {
        let connection = self
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
        self.closed.store(true, Ordering::Release);
        let _connecting = self.connecting.lock().await;
        let connection = lock(&self.current).take();
        if let Some(connection) = connection {
            connection.end("the client was closed");
            shutdown_connection(&connection, close_timeout).await;
        }
    }

    pub(crate) fn abandon(&self) {
        self.closed.store(true, Ordering::Release);
        if let Some(connection) = lock(&self.current).take() {
            connection.end("the client was dropped");
            connection.stop_reader.cancel();
            connection.stop_writer.cancel();
            connection.control.kill_now();
        }
    }
}

fn failure_reason(failure: Failure) -> String {
    match failure {
        Failure::NotSent(reason) | Failure::Connect(reason) => reason,
        Failure::Disconnected { reason, .. } => reason,
        Failure::Closed => "the client was closed".into(),
        Failure::TimedOut { after, .. } => format!("no reply within {after:?}"),
    }
}

/// Registers `request`, queues its frame and waits for the reply.
async fn send_request(
    connection: &Connection,
    request: OutgoingRequest,
    written: &AtomicBool,
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
        pending.insert(id.clone(), PendingReply { reply });
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
) {
    loop {
        let frame = tokio::select! {
            biased;
            _ = connection.stop_writer.cancelled() => break,
            frame = frames.recv() => frame,
        };
        let Some(frame) = frame else { break };
        if let Err(reason) = sink.write(frame.bytes).await {
            connection.end(&format!("writing to the server failed: {reason}"));
            return;
        }
        if let Some(written) = frame.written {
            written.store(true, Ordering::Release);
        }
    }
    sink.finish().await;
}

/// Decodes and routes every frame until the stream ends, then ends the connection.
async fn run_reader(mut source: FrameSource, connection: Arc<Connection>, shared: Arc<Shared>) {
    let generation = connection.generation;
    let reason = loop {
        let frame = tokio::select! {
            biased;
            _ = connection.stop_reader.cancelled() => break "the client closed the connection".to_owned(),
            frame = source.next() => frame,
        };
        let frame = match frame {
            Ok(frame) => frame,
            Err(reason) => break reason,
        };
        let incoming = match decode_server_message(&frame) {
            Ok(ServerMessage::Response { id, result }) => {
                connection.resolve(&id, Ok(result));
                continue;
            }
            Ok(ServerMessage::Error {
                id: Some(id),
                error,
            }) => {
                connection.resolve(&id, Err(error));
                continue;
            }
            Ok(ServerMessage::Error { id: None, error }) => {
                tracing::warn!(%error, "the server reported an error about an unreadable message");
                continue;
            }
            Ok(ServerMessage::Notification { notification, .. }) => {
                Incoming::Notification(notification)
            }
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
            _ = connection.stop_reader.cancelled() => break "the client closed the connection".to_owned(),
            () = shared.route(generation, incoming) => {}
        }
    };
    connection.end(&reason);
    shared.disconnected(generation, &reason);
}

/// Ends `connection` politely, then harder: the writer ends its stream (stdin EOF or a close
/// frame), then the transport's own escalation runs (for a child: SIGTERM, then SIGKILL of
/// its process group), each step bounded by `step`.
async fn shutdown_connection(connection: &Connection, step: Duration) {
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

impl LinkControl {
    async fn shut_down(&self, step: Duration) {
        match self {
            Self::Child(child) => child.shut_down(step).await,
            Self::WebSocket(link) => link.shut_down(step).await,
        }
    }

    fn kill_now(&self) {
        match self {
            Self::Child(child) => child.kill_now(),
            Self::WebSocket(_) => {}
        }
    }
}
