//! JSON-RPC clients of the binary: [`StdioClient`] writes lines to its stdin and reads lines
//! from its stdout, [`WsClient`] is one websocket connection. [`Client`] is either, for the
//! cases that run on both transports. Messages are plain `serde_json::Value`s: what is under
//! test is the bytes on the wire, not a typed decoder.

use std::collections::VecDeque;
use std::net::SocketAddr;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{ChildStdin, ChildStdout};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message};

use super::{PROMPT, within};

/// `initialize` params of a test client.
pub(crate) fn initialize_params(experimental_api: bool) -> Value {
    json!({
        "clientInfo": {"name": "app-server-tests", "version": "1"},
        "capabilities": {"experimentalApi": experimental_api},
    })
}

/// `{id, method, params}`.
pub(crate) fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({"id": id.into(), "method": method, "params": params})
}

/// Whether `message` answers request `id` (a result or an error).
fn answers(message: &Value, id: &Value) -> bool {
    message.get("id") == Some(id)
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// A client on the binary's stdin and stdout.
pub(crate) struct StdioClient {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Messages read while looking for something else, oldest first.
    pending: VecDeque<Value>,
}

impl StdioClient {
    pub(crate) fn new(stdin: ChildStdin, stdout: ChildStdout) -> Self {
        Self {
            stdin,
            // Large enough for a 64 KiB output delta in one read.
            stdout: BufReader::with_capacity(256 * 1024, stdout),
            pending: VecDeque::new(),
        }
    }

    /// Writes `bytes` as one line (a newline is added).
    pub(crate) async fn send_line(&mut self, bytes: &[u8]) {
        within(PROMPT, "writing a line to stdin", async {
            self.stdin.write_all(bytes).await?;
            self.stdin.write_all(b"\n").await?;
            self.stdin.flush().await
        })
        .await
        .expect("write to tandem's stdin");
    }

    /// The next message, in arrival order (including ones [`Client::answer`] skipped over).
    pub(crate) async fn recv(&mut self) -> Value {
        match self.pending.pop_front() {
            Some(message) => message,
            None => self.read_wire().await,
        }
    }

    /// The next line from stdout, as JSON; fails the test at EOF or after [`PROMPT`].
    async fn read_wire(&mut self) -> Value {
        let mut line = Vec::new();
        let read = within(
            PROMPT,
            "a line on stdout",
            self.stdout.read_until(b'\n', &mut line),
        )
        .await
        .expect("read tandem's stdout");
        assert!(read > 0, "stdout ended");
        serde_json::from_slice(&line).unwrap_or_else(|error| {
            panic!(
                "stdout line is not JSON ({error}): {}",
                String::from_utf8_lossy(&line)
            )
        })
    }

    /// Closes stdin: the end of the session.
    pub(crate) fn close_stdin(self) -> BufReader<ChildStdout> {
        drop(self.stdin);
        self.stdout
    }
}

/// One websocket connection.
pub(crate) struct WsClient {
    socket: WebSocketStream<TcpStream>,
    pending: VecDeque<Value>,
}

/// Connects to `address` with extra upgrade headers (`Authorization`, `Origin`). The client
/// accepts messages of any size.
pub(crate) async fn connect(
    address: SocketAddr,
    headers: &[(&str, &str)],
) -> Result<WsClient, tungstenite::Error> {
    within(PROMPT, "a websocket connection", async {
        let mut upgrade = format!("ws://{address}/").into_client_request()?;
        for (name, value) in headers {
            let name: tungstenite::http::HeaderName = name.parse().expect("header name");
            upgrade
                .headers_mut()
                .insert(name, HeaderValue::from_str(value).expect("header value"));
        }
        let tcp = TcpStream::connect(address).await?;
        let config = WebSocketConfig::default()
            .max_message_size(None)
            .max_frame_size(None);
        let (socket, _) =
            tokio_tungstenite::client_async_with_config(upgrade, tcp, Some(config)).await?;
        Ok(WsClient {
            socket,
            pending: VecDeque::new(),
        })
    })
    .await
}

/// What ended a connection, as the client saw it.
#[derive(Debug)]
pub(crate) enum Ended {
    /// A close frame (`None`: without a code).
    Close(Option<CloseFrame>),
    /// The stream ended or failed without a close frame.
    Gone(Option<tungstenite::Error>),
}

impl Ended {
    /// The close code, if a close frame carried one.
    pub(crate) fn code(&self) -> Option<u16> {
        match self {
            Self::Close(Some(frame)) => Some(frame.code.into()),
            _ => None,
        }
    }
}

impl WsClient {
    /// Sends a websocket message.
    pub(crate) async fn send_message(&mut self, message: Message) {
        within(
            PROMPT,
            "sending a websocket message",
            self.socket.send(message),
        )
        .await
        .expect("send a websocket message");
    }

    /// Sends `text` as one text frame.
    pub(crate) async fn send_text(&mut self, text: &str) {
        self.send_message(Message::text(text)).await;
    }

    /// The next message, in arrival order (including ones [`Client::answer`] skipped over).
    pub(crate) async fn recv(&mut self) -> Value {
        match self.pending.pop_front() {
            Some(message) => message,
            None => self.read_wire().await,
        }
    }

    /// The next JSON message; fails the test if the connection ends or after [`PROMPT`].
    async fn read_wire(&mut self) -> Value {
        loop {
            let message = within(PROMPT, "a websocket message", self.socket.next()).await;
            let bytes = match message {
                Some(Ok(Message::Text(text))) => text.as_bytes().to_vec(),
                Some(Ok(Message::Binary(bytes))) => bytes.to_vec(),
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Close(frame))) => panic!("connection closed: {frame:?}"),
                Some(Err(error)) => panic!("websocket failed: {error}"),
                None => panic!("websocket ended"),
            };
            return serde_json::from_slice(&bytes).unwrap_or_else(|error| {
                panic!(
                    "frame is not JSON ({error}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            });
        }
    }

    /// The next raw websocket message (pings and pongs included); `None` at the end.
    pub(crate) async fn next_message(&mut self) -> Option<Result<Message, tungstenite::Error>> {
        within(PROMPT, "a websocket message", self.socket.next()).await
    }

    /// Reads (and discards) messages until the connection ends, and says how it ended.
    pub(crate) async fn until_closed(&mut self) -> Ended {
        loop {
            match self.next_message().await {
                Some(Ok(Message::Close(frame))) => return Ended::Close(frame),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Ended::Gone(Some(error)),
                None => return Ended::Gone(None),
            }
        }
    }

    /// Closes the connection (close frame, then waits for the server's).
    pub(crate) async fn close(mut self) {
        let _ = within(PROMPT, "closing the websocket", self.socket.close(None)).await;
    }

    /// The connection's TCP socket.
    pub(crate) fn tcp(&self) -> &TcpStream {
        self.socket.get_ref()
    }

    /// The websocket itself, for tests that split it.
    pub(crate) fn into_socket(self) -> WebSocketStream<TcpStream> {
        self.socket
    }
}

/// A client on either transport.
pub(crate) enum Client {
    Stdio(StdioClient),
    Ws(WsClient),
}

impl Client {
    /// Sends one line (stdio) or text frame (websocket) holding exactly `text`.
    pub(crate) async fn send_text(&mut self, text: &str) {
        match self {
            Self::Stdio(client) => client.send_line(text.as_bytes()).await,
            Self::Ws(client) => client.send_text(text).await,
        }
    }

    /// Sends `bytes`, which need not be UTF-8: one line on stdio, a binary frame on a
    /// websocket (a text frame must be UTF-8; see the websocket tests for one that is not).
    pub(crate) async fn send_bytes(&mut self, bytes: &[u8]) {
        match self {
            Self::Stdio(client) => client.send_line(bytes).await,
            Self::Ws(client) => client.send_message(Message::binary(bytes.to_vec())).await,
        }
    }

    /// Sends `message` as JSON.
    pub(crate) async fn send(&mut self, message: &Value) {
        self.send_text(&message.to_string()).await;
    }

    /// Sends one line or text frame of exactly `text` and returns the next message.
    pub(crate) async fn send_and_recv(&mut self, text: &str) -> Value {
        self.send_text(text).await;
        self.recv().await
    }

    /// The next message, in arrival order (including ones [`Self::answer`] skipped over).
    pub(crate) async fn recv(&mut self) -> Value {
        match self {
            Self::Stdio(client) => client.recv().await,
            Self::Ws(client) => client.recv().await,
        }
    }

    fn pending(&mut self) -> &mut VecDeque<Value> {
        match self {
            Self::Stdio(client) => &mut client.pending,
            Self::Ws(client) => &mut client.pending,
        }
    }

    /// Reads until the answer to request `id`; what came before it stays for [`Self::recv`].
    pub(crate) async fn answer(&mut self, id: impl Into<Value>) -> Value {
        let id = id.into();
        if let Some(position) = self.pending().iter().position(|m| answers(m, &id)) {
            return self.pending().remove(position).expect("found above");
        }
        loop {
            let message = match self {
                Self::Stdio(client) => client.read_wire().await,
                Self::Ws(client) => client.read_wire().await,
            };
            if answers(&message, &id) {
                return message;
            }
            self.pending().push_back(message);
        }
    }

    /// Sends a request and returns its answer (the whole message).
    pub(crate) async fn call(
        &mut self,
        id: impl Into<Value>,
        method: &str,
        params: Value,
    ) -> Value {
        let id = id.into();
        self.send(&request(id.clone(), method, params)).await;
        self.answer(id).await
    }

    /// Sends a request and returns its `result`, failing the test on an error answer.
    pub(crate) async fn ok(&mut self, id: impl Into<Value>, method: &str, params: Value) -> Value {
        let answer = self.call(id, method, params).await;
        match answer.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {answer}"),
        }
    }

    /// Completes the handshake.
    pub(crate) async fn initialize(&mut self, experimental_api: bool) {
        let result = self
            .ok("init", "initialize", initialize_params(experimental_api))
            .await;
        assert!(
            result.get("userAgent").is_some(),
            "initialize result: {result}"
        );
        self.send(&json!({"method": "initialized"})).await;
    }

    /// Reads until a notification `method` that satisfies `matches`; everything before it is
    /// dropped.
    pub(crate) async fn notification(
        &mut self,
        method: &str,
        matches: impl Fn(&Value) -> bool,
    ) -> Value {
        loop {
            let message = self.recv().await;
            if message.get("method").and_then(Value::as_str) == Some(method)
                && message.get("id").is_none()
                && matches(&message["params"])
            {
                return message;
            }
        }
    }

    /// Checks that the server still answers: `thread/loaded/list` gets its normal result, and
    /// no other answer comes before it (notifications may).
    pub(crate) async fn assert_serves(&mut self, id: impl Into<Value>) {
        let id = id.into();
        self.send(&request(id.clone(), "thread/loaded/list", json!({})))
            .await;
        let answer = loop {
            let message = self.recv().await;
            let notification = message.get("method").is_some() && message.get("id").is_none();
            if !notification {
                break message;
            }
        };
        assert_eq!(
            answer["id"], id,
            "the next message answers the request: {answer}"
        );
        assert!(
            answer["result"]["data"].is_array(),
            "thread/loaded/list answered: {answer}"
        );
    }

    pub(crate) fn into_stdio(self) -> StdioClient {
        match self {
            Self::Stdio(client) => client,
            Self::Ws(_) => panic!("not a stdio client"),
        }
    }

    pub(crate) fn into_ws(self) -> WsClient {
        match self {
            Self::Ws(client) => client,
            Self::Stdio(_) => panic!("not a websocket client"),
        }
    }
}
