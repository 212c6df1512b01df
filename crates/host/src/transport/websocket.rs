//! The websocket transport: many clients on one listening socket, one JSON object per text
//! message. axum serves the HTTP side (the health routes, the checks below, the upgrade's
//! response); the upgraded socket is tokio-tungstenite's own `WebSocketStream`, not axum's
//! wrapper, because a large message leaves in fragments (a text frame without FIN, then
//! continuation frames), which axum's `Message` cannot express, and with bounded buffers.
//!
//! - `GET /readyz` and `GET /healthz` answer 200; any other path accepts the upgrade.
//! - Any request carrying an `Origin` header is refused with 403: browsers always send one,
//!   and a page must not be able to drive a local agent server.
//! - With [`BearerToken`] authentication, the upgrade needs `Authorization: Bearer <token>`;
//!   the token is compared as a SHA-256 digest in constant time, and a failure is a 401 with a
//!   one-line reason.
//! - A message over the size limit closes that connection with code 1009, a text message that
//!   is not UTF-8 with 1007 (RFC 6455 requires failing the connection).
//! - Every connection has its own writer queue, bounded in messages and in bytes, and a backlog
//!   behind it for bursts, up to a ceiling (the router's `BacklogCeiling`). A peer that takes no
//!   bytes for the grace period while it is owed something, or a backlog past its ceiling,
//!   closes that connection (code 1008, and a log line naming it). No other connection waits
//!   for it (the outbound router never waits on a websocket writer). What a peer takes is
//!   counted at its socket (`transport::progress`): a writer inside one large write is not stalled
//!   while the peer reads it.
//! - Every accepted socket has `TCP_NODELAY`: each frame is one complete message, and Nagle's
//!   algorithm would hold a notification behind the reply before it until the peer's delayed
//!   ACK.
//! - A message of 1 MiB or more (`transport::parts`) is encoded in parts and sent as one
//!   message in fragments, a part per frame: neither the writer nor the websocket layer ever
//!   holds it whole, and tungstenite's write buffer stays the size of a part. Reads stop at the
//!   boundaries of a frame not wholly buffered (`transport::frame_reads`), so a large request's
//!   buffer is freed once decoded; small frames already buffered are read together.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::serve::{IncomingStream, Listener, ListenerExt as _};
use futures::{SinkExt as _, StreamExt as _};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_tungstenite::WebSocketStream;
use tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tungstenite::protocol::frame::{CloseFrame, Frame};
use tungstenite::protocol::{Role, WebSocketConfig};
use tungstenite::{Bytes, Message, Utf8Bytes};

use super::connection::{CloseReason, FrameSink, Inbound};
use super::frame_reads::{FrameReads, HeaderReads, READ_BYTES};
use super::progress::{CountingIo, WriteProgress};
use super::raw_frames::{GateHeld, GatedWrites, RAW_FRAME_BYTES, WriteGate, text_frame_header};
use super::{TransportHost, WriterPolicy};

/// Default [`WebSocketOptions::max_message_bytes`]: 64 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Default [`WebSocketOptions::writer_queue_capacity`].
pub const DEFAULT_WRITER_QUEUE_CAPACITY: usize = 32_768;
/// Default [`WebSocketOptions::slow_connection_grace`].
pub const DEFAULT_SLOW_CONNECTION_GRACE: Duration = Duration::from_secs(10);

/// How long a close frame may take to leave before the socket is dropped anyway.
const CLOSE_FRAME_TIMEOUT: Duration = Duration::from_secs(1);

/// An upgraded connection, read a frame at a time (`transport::frame_reads`).
type Socket = WebSocketStream<GatedWrites<FrameReads<TokioIo<hyper::upgrade::Upgraded>>>>;

/// A message read at least this large is kept until the next frame's read has begun
/// (`transport::frame_reads`): then its buffer is freed rather than reused.
const HELD_MESSAGE_BYTES: usize = 64 * 1024;

/// Settings of the websocket transport.
#[derive(Debug, Clone)]
pub struct WebSocketOptions {
    /// Required bearer token; `None` accepts every connection (only sensible on loopback).
    pub auth: Option<BearerToken>,
    /// Largest message and frame accepted, in bytes. Default 64 MiB.
    pub max_message_bytes: usize,
    /// Messages queued for one connection's writer. Default 32 768.
    pub writer_queue_capacity: usize,
    /// How long a connection's peer may take no bytes, while something is owed to it, before
    /// the connection is closed. Default 10 s.
    pub slow_connection_grace: Duration,
}

impl Default for WebSocketOptions {
    fn default() -> Self {
        Self {
            auth: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            writer_queue_capacity: DEFAULT_WRITER_QUEUE_CAPACITY,
            slow_connection_grace: DEFAULT_SLOW_CONNECTION_GRACE,
        }
    }
}

/// Why a bearer token setting was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The digest is not 64 hexadecimal digits.
    #[error("a SHA-256 digest is 64 hexadecimal digits, got {length} characters")]
    BadDigest {
        /// How many characters were given.
        length: usize,
    },
    /// The token is empty.
    #[error("the token is empty")]
    Empty,
}

/// The capability token a client must present as `Authorization: Bearer <token>`. Only its
/// SHA-256 digest is kept.
#[derive(Clone)]
pub struct BearerToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// A token given in clear (as read from a token file; surrounding whitespace is ignored).
    pub fn from_token(token: &str) -> Result<Self, TokenError> {
        let token = token.trim();
        if token.is_empty() {
            return Err(TokenError::Empty);
        }
        Ok(Self {
            digest: Sha256::digest(token.as_bytes()).into(),
        })
    }

    /// A token given as the hexadecimal SHA-256 digest of its text.
    pub fn from_sha256_hex(hex: &str) -> Result<Self, TokenError> {
        let hex = hex.trim();
        let bad = || TokenError::BadDigest { length: hex.len() };
        if hex.len() != 64 {
            return Err(bad());
        }
        let mut digest = [0u8; 32];
        for (byte, pair) in digest.iter_mut().zip(hex.as_bytes().chunks(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| bad())?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
        }
        Ok(Self { digest })
    }

    /// Whether `candidate` is the token, in time independent of where they differ.
    pub fn verify(&self, candidate: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(candidate.as_bytes()).into();
        digest.ct_eq(&self.digest).into()
    }
}

struct Shared {
    host: Arc<TransportHost>,
    options: WebSocketOptions,
    /// Whether `GET /status` answers (on a unix socket, which only its user can reach).
    status_route: bool,
}

/// Serves websocket clients on `listener` until the host stops.
pub async fn serve(
    host: Arc<TransportHost>,
    listener: TcpListener,
    options: WebSocketOptions,
) -> io::Result<()> {
    // Without TCP_NODELAY a reply followed by a notification meets Nagle's algorithm against
    // the peer's delayed ACK: the second frame waits ~40 ms.
    let listener = listener.tap_io(|socket| {
        if let Err(error) = socket.set_nodelay(true) {
            tracing::warn!(%error, "cannot set TCP_NODELAY on an accepted socket");
        }
    });
    serve_on(host, listener, options, false).await
}

/// Serves websocket clients on a unix socket until the host stops (the same protocol and
/// rules as over TCP; `unix_socket` says who may connect). The socket file is removed when
/// serving ends. Beside the TCP routes, `GET /status` answers `{"pid", "uptimeSecs",
/// "connections"}` (what `tandem app-server daemon status` shows): only the socket's user can
/// ask.
#[cfg(unix)]
pub async fn serve_unix(
    host: Arc<TransportHost>,
    listener: super::unix_socket::UnixSocketListener,
    options: WebSocketOptions,
) -> io::Result<()> {
    serve_on(host, listener, options, true).await
}

#[cfg(unix)]
impl Listener for super::unix_socket::UnixSocketListener {
    type Io = tokio::net::UnixStream;
    type Addr = tokio::net::unix::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        Listener::accept(&mut self.listener).await
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}

async fn serve_on<L>(
    host: Arc<TransportHost>,
    listener: L,
    options: WebSocketOptions,
    status_route: bool,
) -> io::Result<()>
where
    L: Listener,
    L::Addr: std::fmt::Debug,
{
    let stop = host.stopping();
    let shared = Arc::new(Shared {
        host,
        options,
        status_route,
    });
    let app = Router::new()
        .fallback(route)
        .with_state(shared)
        .into_make_service_with_connect_info::<PeerProgress>();
    axum::serve(CountingListener(listener), app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
}

/// Accepts connections whose writes are counted, so that each connection's writer knows when
/// its peer last took bytes.
struct CountingListener<L>(L);

impl<L: Listener> Listener for CountingListener<L> {
    type Io = CountingIo<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (socket, address) = self.0.accept().await;
        let progress = Arc::new(WriteProgress::default());
        (CountingIo::new(socket, progress), address)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// The write progress of the socket a request came on, handed to its upgrade.
#[derive(Clone)]
struct PeerProgress(Arc<WriteProgress>);

impl<L: Listener> Connected<IncomingStream<'_, CountingListener<L>>> for PeerProgress {
    fn connect_info(stream: IncomingStream<'_, CountingListener<L>>) -> Self {
        Self(Arc::clone(stream.io().progress()))
    }
}

/// Binds `address` and reports the bound address (port 0 picks a free port).
pub async fn bind(address: SocketAddr) -> io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    Ok((listener, bound))
}

/// Every request comes here: the origin check first, then health, then auth and upgrade.
async fn route(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (mut parts, _body) = request.into_parts();
    if parts.headers.contains_key(header::ORIGIN) {
        return refuse(
            StatusCode::FORBIDDEN,
            "requests with an Origin header are refused",
        );
    }
    if matches!(parts.uri.path(), "/readyz" | "/healthz") {
        return (StatusCode::OK, "ok\n").into_response();
    }
    if shared.status_route && parts.uri.path() == "/status" {
        let status = serde_json::json!({
            "pid": std::process::id(),
            "uptimeSecs": shared.host.uptime().as_secs(),
            "connections": shared.host.open_connections(),
        });
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            format!("{status}\n"),
        )
            .into_response();
    }
    if let Some(token) = &shared.options.auth
        && let Err(reason) = check_bearer(&parts.headers, token)
    {
        return refuse(StatusCode::UNAUTHORIZED, reason);
    }
    let key = match check_upgrade(&parts.method, &parts.headers) {
        Ok(key) => key,
        Err((status, reason)) => return refuse(status, reason),
    };
    let Some(on_upgrade) = parts.extensions.remove::<hyper::upgrade::OnUpgrade>() else {
        return refuse(
            StatusCode::UPGRADE_REQUIRED,
            "this connection cannot be upgraded to a websocket",
        );
    };
    // `serve` counts every socket it accepts; without a count a reading peer would look
    // stalled.
    let Some(ConnectInfo(PeerProgress(progress))) =
        parts.extensions.get::<ConnectInfo<PeerProgress>>().cloned()
    else {
        tracing::error!("a websocket upgrade on a socket whose writes are not counted; refused");
        return refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "this socket was not accepted by tandem_host::transport::websocket::serve",
        );
    };
    let config = socket_config(shared.options.max_message_bytes);
    // The socket is handed over once this response has been written.
    tokio::spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(upgraded) => upgraded,
            Err(error) => {
                tracing::debug!(%error, "websocket upgrade failed");
                return;
            }
        };
        let header_reads = Arc::new(HeaderReads::default());
        let gate = Arc::new(WriteGate::default());
        let io = GatedWrites::new(
            FrameReads::new(TokioIo::new(upgraded), header_reads.clone()),
            gate.clone(),
        );
        let socket = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
        let host = shared.host.clone();
        let connection =
            host.spawn_connection_task(connection(shared, socket, gate, progress, header_reads));
        let _ = connection.await;
    });
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, HeaderValue::from_static("upgrade"))
        .header(header::UPGRADE, HeaderValue::from_static("websocket"))
        .header(header::SEC_WEBSOCKET_ACCEPT, accept)
        .body(Body::empty())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The websocket layer's limits: `max` for a message and for a frame (over it: 1009), a read
/// buffer of [`READ_BYTES`] and the default write buffer (128 KiB of frames gathered before a
/// socket write). A message written in parts goes through the write buffer a part at a time, so
/// the buffer never grows to a large message's size. The read buffer is small because
/// tungstenite zeroes the room it offers before every read: with its default 128 KiB (and, then,
/// a header and a payload read per small request) that zeroing was a fifth of the server's time
/// with 64 requests in flight (issue 32). A large message is read in pieces of that size.
fn socket_config(max: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
        .read_buffer_size(READ_BYTES)
}

/// The checks of an HTTP/1.1 websocket upgrade (RFC 6455 section 4.2.1), as axum's
/// `WebSocketUpgrade` makes them: the request's `Sec-WebSocket-Key`, or why it is refused.
fn check_upgrade(
    method: &Method,
    headers: &HeaderMap,
) -> Result<HeaderValue, (StatusCode, &'static str)> {
    if method != Method::GET {
        return Err((
            StatusCode::METHOD_NOT_ALLOWED,
            "a websocket upgrade must be a GET request",
        ));
    }
    let has_token = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|value| {
            value.to_str().is_ok_and(|value| {
                value
                    .split(',')
                    .any(|item| item.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    if !has_token(header::CONNECTION, "upgrade") {
        return Err((
            StatusCode::BAD_REQUEST,
            "Connection header did not include 'upgrade'",
        ));
    }
    if !has_token(header::UPGRADE, "websocket") {
        return Err((
            StatusCode::BAD_REQUEST,
            "`Upgrade` header did not include 'websocket'",
        ));
    }
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_none_or(|version| version.as_bytes() != b"13")
    {
        return Err((
            StatusCode::BAD_REQUEST,
            "`Sec-WebSocket-Version` header did not include '13'",
        ));
    }
    headers.get(header::SEC_WEBSOCKET_KEY).cloned().ok_or((
        StatusCode::BAD_REQUEST,
        "`Sec-WebSocket-Key` header missing",
    ))
}

fn check_bearer(headers: &HeaderMap, token: &BearerToken) -> Result<(), &'static str> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or("missing Authorization: Bearer <token> header")?;
    let value = value
        .to_str()
        .map_err(|_| "the Authorization header is not text")?;
    let candidate = value
        .strip_prefix("Bearer ")
        .ok_or("the Authorization header is not a Bearer token")?;
    if token.verify(candidate.trim()) {
        Ok(())
    } else {
        Err("invalid bearer token")
    }
}

fn refuse(status: StatusCode, reason: &str) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Body::from(format!("{reason}\n")))
        .unwrap_or_else(|_| status.into_response())
}

/// One upgraded socket, from its first frame to its close.
async fn connection(
    shared: Arc<Shared>,
    socket: Socket,
    gate: Arc<WriteGate>,
    progress: Arc<WriteProgress>,
    header_reads: Arc<HeaderReads>,
) {
    let policy = WriterPolicy::CloseWhenStalled {
        grace: shared.options.slow_connection_grace,
        max_message_bytes: shared.options.max_message_bytes,
        progress,
    };
    let opened = match shared
        .host
        .open_connection(policy, shared.options.writer_queue_capacity)
        .await
    {
        Ok(opened) => opened,
        Err(error) => {
            tracing::debug!(%error, "websocket connection refused");
            return;
        }
    };
    let (sink, stream) = SocketHalf::both(socket);
    let writer = shared
        .host
        .spawn_connection_task(opened.outbound.run(SocketSink { sink, gate }));
    let close = opened.close.clone();
    read_frames(&shared, &opened.inbound, stream, &close, &header_reads).await;
    let id = opened.inbound.id;
    opened.inbound.close().await;
    let _ = writer.await;
    tracing::debug!(connection = %id, "websocket connection closed");
}

async fn read_frames(
    shared: &Shared,
    inbound: &Inbound,
    mut stream: SocketHalf,
    close: &super::connection::CloseSignal,
    header_reads: &HeaderReads,
) {
    let stop = shared.host.stopping();
    // The last large message read, with the frame-boundary count when it was: kept until the
    // next frame's read begins, so that tungstenite's next reservation takes a new small buffer
    // instead of reclaiming this one's (`transport::frame_reads`).
    let mut held: Option<(Message, u64)> = None;
    loop {
        let next = std::future::poll_fn(|cx| {
            let polled = stream.poll_next_unpin(cx);
            if held
                .as_ref()
                .is_some_and(|(_, reads)| header_reads.count() > *reads)
            {
                held = None;
            }
            polled
        });
        let message = tokio::select! {
            biased;
            _ = close.closed() => return,
            // The writer sees the shutdown too, and writes what is still owed before it closes.
            () = stop.cancelled() => return,
            message = next => message,
        };
        let large = match &message {
            Some(Ok(Message::Text(text))) => text.len() >= HELD_MESSAGE_BYTES,
            Some(Ok(Message::Binary(bytes))) => bytes.len() >= HELD_MESSAGE_BYTES,
            _ => false,
        };
        let handled = async {
            match &message {
                Some(Ok(Message::Text(text))) => inbound.frame(text.as_bytes()).await,
                // Lenient: a binary frame holding JSON is read like a text frame.
                Some(Ok(Message::Binary(bytes))) => inbound.frame(bytes).await,
                // Pings are answered by the websocket layer itself; raw frames are only
                // ever written, never read.
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                // The peer is done: the writer answers its close and the socket goes.
                Some(Ok(Message::Close(_))) | None => {
                    close.close(CloseReason::Finished);
                    return false;
                }
                Some(Err(error)) => {
                    if let Some(reason) = close_reason_for(error) {
                        tracing::warn!(connection = %inbound.id, "closing: {error}");
                        close.close(reason);
                    } else {
                        tracing::debug!(connection = %inbound.id, %error, "websocket read failed");
                    }
                    return false;
                }
            }
            true
        };
        // Handing a frame over may wait for room; a close or shutdown must still end it.
        let go_on = tokio::select! {
            biased;
            _ = close.closed() => false,
            () = stop.cancelled() => false,
            go_on = handled => go_on,
        };
        if !go_on {
            return;
        }
        if large && let Some(Ok(message)) = message {
            held = Some((message, header_reads.count()));
        }
    }
}

/// The socket as the connection's reader and its writer both use it. Each poll
/// holds the lock for one non-blocking step of tungstenite (or, for a large frame, of the
/// socket under it), so the two never wait on each other's task.
struct SocketHalf(Arc<std::sync::Mutex<Socket>>);

impl SocketHalf {
    fn both(socket: Socket) -> (Self, Self) {
        let shared = Arc::new(std::sync::Mutex::new(socket));
        (Self(shared.clone()), Self(shared))
    }

    fn socket(&self) -> std::sync::MutexGuard<'_, Socket> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes `payload` as one text frame straight to the socket (`transport::raw_frames`): a
    /// whole message (`first` and `last`) or one part of it. First whatever tungstenite holds,
    /// then, with the gate held from that flush on so that no pong comes between, the header
    /// and the payload.
    async fn write_large_frame(
        &self,
        gate: &WriteGate,
        payload: &[u8],
        first: bool,
        last: bool,
    ) -> io::Result<()> {
        let (header, header_len) = text_frame_header(payload.len(), first, last);
        let total = header_len + payload.len();
        let mut written = 0;
        let mut held: Option<GateHeld<'_>> = None;
        std::future::poll_fn(|cx| {
            let mut socket = self.socket();
            if held.is_none() {
                std::task::ready!(socket.poll_flush_unpin(cx)).map_err(io::Error::other)?;
                // Under the same lock as the flush: tungstenite cannot start a write between.
                held = Some(GateHeld::hold(gate));
            }
            let held = held.as_mut().expect("the gate is held from the flush on");
            let io = socket.get_mut();
            while written < total {
                let slices = if written < header_len {
                    [
                        io::IoSlice::new(&header[written..header_len]),
                        io::IoSlice::new(payload),
                    ]
                } else {
                    [
                        io::IoSlice::new(&payload[written - header_len..]),
                        io::IoSlice::new(&[]),
                    ]
                };
                match std::task::ready!(io.poll_write_raw(cx, &slices)) {
                    Ok(0) => return std::task::Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Ok(wrote) => written += wrote,
                    Err(error) => return std::task::Poll::Ready(Err(error)),
                }
                held.wrote(written == total);
            }
            std::task::Poll::Ready(Ok(()))
        })
        .await
    }
}

impl futures::Stream for SocketHalf {
    type Item = Result<Message, tungstenite::Error>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.socket().poll_next_unpin(cx)
    }
}

impl futures::Sink<Message> for SocketHalf {
    type Error = tungstenite::Error;

    fn poll_ready(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.socket().poll_ready_unpin(cx)
    }

    fn start_send(self: std::pin::Pin<&mut Self>, item: Message) -> Result<(), Self::Error> {
        self.socket().start_send_unpin(item)
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.socket().poll_flush_unpin(cx)
    }

    fn poll_close(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.socket().poll_close_unpin(cx)
    }
}

/// The close frame a read error calls for, when the peer broke a rule it should hear about.
fn close_reason_for(error: &tungstenite::Error) -> Option<CloseReason> {
    match error {
        tungstenite::Error::Capacity(_) => Some(CloseReason::MessageTooBig),
        tungstenite::Error::Utf8(_) => Some(CloseReason::InvalidPayload),
        _ => None,
    }
}

/// Writes frames as text messages, and a message in parts as one text message in fragments.
struct SocketSink {
    sink: SocketHalf,
    /// Held while a large frame is written past tungstenite (`transport::raw_frames`).
    gate: Arc<WriteGate>,
}

impl SocketSink {
    /// Writes `payload` as one text frame: a whole message (`first` and `last`) or one part of
    /// one. A large frame goes straight to the socket, after what tungstenite holds, without a
    /// copy into its buffer; a small one into that buffer, which goes to the socket when it
    /// outgrows its size (128 KiB) or on `flush`: a burst of small answers costs one write, not
    /// one each.
    async fn write_frame(
        &mut self,
        payload: &mut Vec<u8>,
        first: bool,
        last: bool,
    ) -> io::Result<()> {
        if payload.len() >= RAW_FRAME_BYTES {
            let written = self
                .sink
                .write_large_frame(&self.gate, payload, first, last)
                .await;
            // Not kept for the next frame, as the small frames' buffers are not: the connection
            // holds no buffer at a large frame's size between writes.
            drop(std::mem::take(payload));
            return written;
        }
        let opcode = if first {
            OpCode::Data(Data::Text)
        } else {
            OpCode::Data(Data::Continue)
        };
        // A frame made from the encoded bytes as they are: the writer's encoder only writes
        // UTF-8 (JSON from Rust strings), so checking each frame again, as `Message::Text`
        // would need, is a pass over every byte for nothing.
        let payload = Bytes::from(std::mem::take(payload));
        self.sink
            .feed(Message::Frame(Frame::message(payload, opcode, last)))
            .await
            .map_err(io::Error::other)
    }
}

#[async_trait]
impl FrameSink for SocketSink {
    async fn send(&mut self, frame: &mut Vec<u8>) -> io::Result<()> {
        self.write_frame(frame, true, true).await
    }

    async fn send_part(&mut self, part: &mut Vec<u8>, first: bool, last: bool) -> io::Result<()> {
        // RFC 6455 section 5.4: a text frame without FIN, continuation frames, the last with
        // FIN; control frames (a pong) may come between them, data frames may not, and the
        // writer sends nothing else until the last part. UTF-8 is checked by the peer on the
        // whole message: a part may end inside a character. Every part but a short last one is
        // large enough to be written raw.
        self.write_frame(part, first, last).await
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.sink.flush().await.map_err(io::Error::other)
    }

    async fn close(&mut self, reason: CloseReason) {
        let (code, text) = reason.close_frame();
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: Utf8Bytes::from_static(text),
        };
        // A peer that stopped reading cannot take a close frame either; the socket goes anyway.
        // One that took nothing for its grace period has a full socket: the frame is tried once,
        // not waited for, so that the socket and what it holds go at once.
        let limit = match reason {
            CloseReason::Stalled => Duration::ZERO,
            _ => CLOSE_FRAME_TIMEOUT,
        };
        let _ = tokio::time::timeout(limit, async {
            let _ = self.sink.send(Message::Close(Some(frame))).await;
            let _ = self.sink.close().await;
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_by_digest_only() {
        let token = BearerToken::from_token("s3cret\n").unwrap();
        assert!(token.verify("s3cret"));
        assert!(!token.verify("s3cre"));
        assert!(!token.verify(""));
        let computed: String = Sha256::digest(b"s3cret")
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        assert!(
            BearerToken::from_sha256_hex(&computed)
                .unwrap()
                .verify("s3cret")
        );
        assert!(matches!(
            BearerToken::from_sha256_hex("abc"),
            Err(TokenError::BadDigest { length: 3 })
        ));
        assert!(BearerToken::from_sha256_hex(&"zz".repeat(32)).is_err());
        assert!(matches!(
            BearerToken::from_token("  "),
            Err(TokenError::Empty)
        ));
    }
}
