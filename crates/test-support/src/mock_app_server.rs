//! A scripted mock app-server for testing clients of the wire protocol, over stdio (the
//! `tandem-mock-app-server` binary, or [`serve_lines`] on any pipe) and over a loopback
//! websocket ([`MockWebSocketServer`], with an optional bearer-token check).
//!
//! It speaks real frames through [`tandem_protocol::wire`], answers `initialize`, and has
//! behaviours a test can trigger by method:
//!
//! | method | behaviour |
//! |---|---|
//! | `initialize` | answers with [`crate::initialize_response`] |
//! | `thread/loaded/list` | answers `{"data": [], "nextCursor": null}` (a cheap typed request) |
//! | `mock/echo` | answers with its params |
//! | `mock/never` | never answers |
//! | `mock/exit` `{code?}` | stdio: the process exits at once with `code` (default 3); websocket: the connection drops without a close frame |
//! | `mock/flood` `{count}` | sends `count` `mock/flooded {n}` notifications, then answers `{"sent": count}` |
//! | `mock/serverRequest` `{method, params}` | sends that server request and answers `{"result": ..}` or `{"error": ..}` with the client's answer |
//! | `mock/pid` | answers `{"pid": <process id>}` |
//!
//! Any other method gets -32601. Frames that do not decode get the codec's error answer.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tandem_protocol::wire::{
    ClientMessage, DecodeError, ServerMessage, decode_client_message, encode_server_message,
};
use tandem_protocol::{
    ClientRequest, JSONRPCErrorError, RequestId, ServerNotification, ServerRequest,
};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;

/// The exit code of `mock/exit` without a `code`.
pub const DEFAULT_EXIT_CODE: i32 = 3;

/// How many encoded frames may wait for the writer.
const WRITER_QUEUE: usize = 1024;

type Answer = Result<Value, JSONRPCErrorError>;

/// What the reader loop should do after a frame.
enum Control {
    Continue,
    /// `mock/exit`: stop at once, without answering.
    Exit(i32),
}

/// One connection's state: the writer queue and the server requests awaiting answers.
#[derive(Clone)]
struct Session {
    out: mpsc::Sender<ServerMessage>,
    waiting: Arc<Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>>,
    next_server_request: Arc<AtomicI64>,
}

impl Session {
    fn new(out: mpsc::Sender<ServerMessage>) -> Self {
        Self {
            out,
            waiting: Arc::default(),
            next_server_request: Arc::default(),
        }
    }

    async fn send(&self, message: ServerMessage) {
        // The writer only stops when the connection is gone; nothing left to tell then.
        let _ = self.out.send(message).await;
    }

    async fn reply(&self, id: RequestId, answer: Answer) {
        let message = match answer {
            Ok(result) => ServerMessage::Response { id, result },
            Err(error) => ServerMessage::Error {
                id: Some(id),
                error,
            },
        };
        self.send(message).await;
    }

    async fn handle(&self, frame: &[u8]) -> Control {
        match decode_client_message(frame) {
            Ok(ClientMessage::Request(request)) => self.request(request).await,
            Ok(ClientMessage::Notification(_)) => Control::Continue,
            Ok(ClientMessage::Response { id, result }) => {
                self.resolve(&id, Ok(result));
                Control::Continue
            }
            Ok(ClientMessage::Error { id, error }) => {
                self.resolve(&id, Err(error));
                Control::Continue
            }
            Err(DecodeError::Reply(error)) => {
                self.send(ServerMessage::from(error)).await;
                Control::Continue
            }
            Err(DecodeError::Ignore(_)) => Control::Continue,
        }
    }

    fn resolve(&self, id: &RequestId, answer: Answer) {
        let waiting = self
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        if let Some(waiting) = waiting {
            let _ = waiting.send(answer);
        }
    }

    async fn request(&self, request: ClientRequest) -> Control {
        let id = request.id().clone();
        let (method, params) = match request {
            ClientRequest::Initialize { .. } => {
                let result = serde_json::to_value(crate::initialize_response())
                    .expect("the initialize response serializes");
                self.reply(id, Ok(result)).await;
                return Control::Continue;
            }
            ClientRequest::ThreadLoadedList { .. } => {
                let result = json!({"data": [], "nextCursor": null});
                self.reply(id, Ok(result)).await;
                return Control::Continue;
            }
            ClientRequest::Custom { method, params, .. } => (method, params),
            other => {
                let error = JSONRPCErrorError::method_not_found(other.method());
                self.reply(id, Err(error)).await;
                return Control::Continue;
            }
        };
        match method.as_str() {
            "mock/echo" => self.reply(id, Ok(params)).await,
            "mock/never" => {}
            "mock/exit" => {
                let code = params["code"].as_i64().unwrap_or(DEFAULT_EXIT_CODE.into());
                return Control::Exit(i32::try_from(code).unwrap_or(DEFAULT_EXIT_CODE));
            }
            "mock/flood" => {
                let count = params["count"].as_u64().unwrap_or(0);
                for n in 0..count {
                    let notification = ServerNotification::Custom {
                        method: "mock/flooded".into(),
                        params: json!({"n": n}),
                    };
                    self.send(ServerMessage::Notification {
                        notification,
                        emitted_at_ms: None,
                        cursor: None,
                    })
                    .await;
                }
                self.reply(id, Ok(json!({"sent": count}))).await;
            }
            "mock/serverRequest" => self.server_request(id, params).await,
            "mock/pid" => self.reply(id, Ok(json!({"pid": std::process::id()}))).await,
            other => {
                let error = JSONRPCErrorError::method_not_found(other);
                self.reply(id, Err(error)).await;
            }
        }
        Control::Continue
    }

    /// Sends the server request described by `params` and answers `id` with the client's
    /// answer once it arrives, without holding up the reader.
    async fn server_request(&self, id: RequestId, params: Value) {
        let Some(method) = params["method"].as_str().map(str::to_owned) else {
            let error = JSONRPCErrorError::invalid_params("mock/serverRequest needs a `method`");
            return self.reply(id, Err(error)).await;
        };
        let request_id =
            RequestId::Integer(self.next_server_request.fetch_add(1, Ordering::Relaxed));
        let wire = tandem_protocol::JSONRPCRequest {
            id: request_id.clone(),
            method,
            params: Some(params["params"].clone()),
        };
        let request = match ServerRequest::try_from(wire) {
            Ok(request) => request,
            Err(error) => return self.reply(id, Err(error)).await,
        };
        let (answer_tx, answer) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(request_id, answer_tx);
        self.send(ServerMessage::Request(request)).await;
        let session = self.clone();
        tokio::spawn(async move {
            let result = match answer.await {
                Ok(Ok(result)) => json!({"result": result}),
                Ok(Err(error)) => json!({"error": error}),
                Err(_) => return,
            };
            session.reply(id, Ok(result)).await;
        });
    }
}

/// Serves one client over a line-oriented pipe (one JSON object per line) until the reader
/// ends. Returns `Ok(Some(code))` when `mock/exit` asked to exit with `code`.
pub async fn serve_lines<R, W>(reader: R, mut writer: W) -> io::Result<Option<i32>>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut messages) = mpsc::channel::<ServerMessage>(WRITER_QUEUE);
    let writer_task: JoinHandle<io::Result<()>> = tokio::spawn(async move {
        let mut line = Vec::new();
        while let Some(message) = messages.recv().await {
            line.clear();
            encode_server_message(&message, &mut line).map_err(io::Error::other)?;
            line.push(b'\n');
            writer.write_all(&line).await?;
            writer.flush().await?;
        }
        Ok(())
    });
    let session = Session::new(out);
    let mut lines = reader.split(b'\n');
    while let Some(line) = lines.next_segment().await? {
        if let Control::Exit(code) = session.handle(&line).await {
            return Ok(Some(code));
        }
    }
    drop(session);
    writer_task.await.map_err(io::Error::other)??;
    Ok(None)
}

/// Serves this process's stdin and stdout, and exits the process as `mock/exit` asks: the
/// body of the `tandem-mock-app-server` binary.
pub async fn run_stdio() -> io::Result<()> {
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    if let Some(code) = serve_lines(stdin, tokio::io::stdout()).await? {
        std::process::exit(code);
    }
    Ok(())
}

/// A mock app-server on a loopback websocket; one [`serve_lines`]-like session per
/// connection. Dropping it stops accepting (open connections end with the test's runtime).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let server = tandem_test_support::MockWebSocketServer::start(Some("token".into())).await?;
/// assert!(server.url().starts_with("ws://127.0.0.1:"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct MockWebSocketServer {
    addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl MockWebSocketServer {
    /// Listens on `127.0.0.1:0`. With `token`, an upgrade without
    /// `Authorization: Bearer <token>` is refused with 401.
    pub async fn start(token: Option<String>) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let token = Arc::new(token);
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let token = token.clone();
                tokio::spawn(async move {
                    #[allow(clippy::result_large_err)] // the shape tungstenite's callback requires
                    let check = move |request: &Request, response: Response| {
                        check_bearer(token.as_deref(), request, response)
                    };
                    if let Ok(socket) = tokio_tungstenite::accept_hdr_async(stream, check).await {
                        serve_websocket(socket).await;
                    }
                });
            }
        });
        Ok(Self { addr, accept })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ws://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }
}

impl Drop for MockWebSocketServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

#[allow(clippy::result_large_err)] // the shape tungstenite's callback requires
fn check_bearer(
    token: Option<&str>,
    request: &Request,
    response: Response,
) -> Result<Response, ErrorResponse> {
    let Some(token) = token else {
        return Ok(response);
    };
    let expected = format!("Bearer {token}");
    let given = request
        .headers()
        .get("authorization")
        .and_then(|value| value.to_str().ok());
    if given == Some(expected.as_str()) {
        return Ok(response);
    }
    let mut refusal = ErrorResponse::new(Some("missing or wrong bearer token".into()));
    *refusal.status_mut() = StatusCode::UNAUTHORIZED;
    Err(refusal)
}

async fn serve_websocket<S>(socket: tokio_tungstenite::WebSocketStream<S>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut source) = socket.split();
    let (out, mut messages) = mpsc::channel::<ServerMessage>(WRITER_QUEUE);
    let writer = tokio::spawn(async move {
        let mut frame = Vec::new();
        while let Some(message) = messages.recv().await {
            frame.clear();
            if encode_server_message(&message, &mut frame).is_err() {
                continue;
            }
            let text = String::from_utf8_lossy(&frame).into_owned();
            if sink.send(Message::text(text)).await.is_err() {
                break;
            }
        }
    });
    let session = Session::new(out);
    while let Some(Ok(message)) = source.next().await {
        let frame = match message {
            Message::Text(text) => text.as_bytes().to_vec(),
            Message::Binary(bytes) => bytes.to_vec(),
            Message::Close(_) => break,
            _ => continue,
        };
        if let Control::Exit(_) = session.handle(&frame).await {
            // Drop the connection abruptly, as a crashed server would.
            writer.abort();
            return;
        }
    }
    drop(session);
    let _ = writer.await;
}
