//! A small HTTP/1.1 server on a loopback port, for testing clients of streaming HTTP APIs
//! (model providers) through the failures a full mock framework cannot produce: a response
//! that waits at a [`Gate`] until the test opens it, that trickles out slowly, that stops
//! mid-body, that resets the TCP connection, or that stalls forever. It also reports when the
//! client closed a connection, so a test can see that an abandoned stream really was dropped.
//!
//! Responses are queued with [`MockHttpServer::push`] and served one per request, in order;
//! a [`MockHttpServer::fallback`] answers requests once the queue is empty (without one, such
//! a request gets a 500 naming the problem). Every request is recorded. Each connection serves
//! one request and is closed afterwards (`Connection: close`). Bodies are sent with chunked
//! transfer encoding, so a truncated body is visibly incomplete to the client.
//!
//! ```
//! use std::time::Duration;
//! use tandem_test_support::mock_http::{Gate, MockHttpServer, MockResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let server = MockHttpServer::start().await?;
//! let gate = Gate::new();
//! let served = server.push(
//!     MockResponse::sse()
//!         .event(r#"{"choices":[{"delta":{"content":"Hel"}}]}"#)
//!         .wait(&gate)
//!         .event(r#"{"choices":[{"delta":{"content":"lo"}}]}"#)
//!         .event("[DONE]"),
//! );
//! // A client would POST to format!("{}/chat/completions", server.url("/v1")) here, read the
//! // first event, then the test opens the gate to let the rest through.
//! gate.open();
//! # let _ = served;
//! assert!(server.requests().is_empty());
//! # Ok(())
//! # }
//! ```

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

/// The most a request's head may take; a larger one is answered 431 and closed.
const MAX_HEAD_BYTES: usize = 64 * 1024;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A barrier inside a response: the body stops at [`MockResponse::wait`] until the test calls
/// [`Gate::open`]. Clones share one gate; once open it stays open.
#[derive(Debug, Clone)]
pub struct Gate {
    open: Arc<watch::Sender<bool>>,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Self {
        Self {
            open: Arc::new(watch::channel(false).0),
        }
    }

    /// Opens the gate: every response waiting at it goes on.
    pub fn open(&self) {
        self.open.send_replace(true);
    }

    async fn wait(&self) {
        let mut open = self.open.subscribe();
        // Fails only if the sender is gone, which `self` rules out.
        let _ = open.wait_for(|open| *open).await;
    }
}

/// One step of a response body.
#[derive(Debug, Clone)]
enum Step {
    /// Write these bytes as one chunk.
    Bytes(Vec<u8>),
    /// Wait until the gate opens.
    Wait(Gate),
    /// Wait this long.
    Delay(Duration),
}

/// How a response ends after its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The terminating chunk, then close: a complete response.
    Complete,
    /// Close without the terminating chunk: the body is cut short.
    Truncate,
    /// Reset the connection (RST): the client sees a connection error mid-body.
    Reset,
    /// Keep the connection open, sending nothing more, until the client closes it.
    Stall,
}

/// A scripted response: status, headers, and a body of steps.
#[derive(Debug, Clone)]
pub struct MockResponse {
    status: u16,
    headers: Vec<(String, String)>,
    steps: Vec<Step>,
    ending: Ending,
}

impl MockResponse {
    /// A response with `status` and an empty body.
    pub fn new(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            steps: Vec::new(),
            ending: Ending::Complete,
        }
    }

    /// A 200 `text/event-stream` response, to be filled with [`MockResponse::event`].
    pub fn sse() -> Self {
        Self::new(200).header("content-type", "text/event-stream")
    }

    /// A response with `status` and a JSON body.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::new(status)
            .header("content-type", "application/json")
            .bytes(body.to_string())
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sends `bytes` as the next chunk of the body.
    pub fn bytes(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.steps.push(Step::Bytes(bytes.into()));
        self
    }

    /// Sends one server-sent event, `data: {data}` and a blank line, as the next chunk.
    pub fn event(self, data: &str) -> Self {
        self.bytes(format!("data: {data}\n\n"))
    }

    /// Sends one named server-sent event (`event: {name}` then `data: {data}`).
    pub fn named_event(self, name: &str, data: &str) -> Self {
        self.bytes(format!("event: {name}\ndata: {data}\n\n"))
    }

    /// Stops the body here until `gate` opens.
    pub fn wait(mut self, gate: &Gate) -> Self {
        self.steps.push(Step::Wait(gate.clone()));
        self
    }

    /// Stops the body here for `duration` (a slow server).
    pub fn delay(mut self, duration: Duration) -> Self {
        self.steps.push(Step::Delay(duration));
        self
    }

    /// Ends the body without its terminating chunk and closes the connection.
    pub fn truncate(mut self) -> Self {
        self.ending = Ending::Truncate;
        self
    }

    /// Ends the response with a TCP reset (RST) instead of a close.
    pub fn reset(mut self) -> Self {
        self.ending = Ending::Reset;
        self
    }

    /// Sends nothing after the steps and keeps the connection open until the client closes
    /// it (a stalled server).
    pub fn stall(mut self) -> Self {
        self.ending = Ending::Stall;
        self
    }
}

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The request target, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The headers in arrival order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body (read by `Content-Length`).
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body parsed as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// What happened to the connection a queued response was served on.
#[derive(Debug, Clone)]
pub struct Served {
    state: Arc<ServedState>,
}

#[derive(Debug, Default)]
struct ServedState {
    /// Set once a request took this response.
    taken: watch::Sender<bool>,
    /// Set once the client closed (or reset) the connection.
    closed: watch::Sender<bool>,
}

impl Served {
    fn new() -> Self {
        Self {
            state: Arc::new(ServedState::default()),
        }
    }

    /// Resolves once a request was answered with this response.
    pub async fn requested(&self) {
        let _ = self.state.taken.subscribe().wait_for(|taken| *taken).await;
    }

    /// Resolves once the client closed the connection this response was served on (seen as
    /// end of file or an error on the server's side of the socket).
    pub async fn client_closed(&self) {
        let _ = self
            .state
            .closed
            .subscribe()
            .wait_for(|closed| *closed)
            .await;
    }

    /// Whether the client has closed the connection.
    pub fn is_client_closed(&self) -> bool {
        *self.state.closed.borrow()
    }
}

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<VecDeque<(MockResponse, Served)>>,
    fallback: Mutex<Option<MockResponse>>,
    requests: Mutex<Vec<RecordedRequest>>,
    arrived: Notify,
}

/// The server; dropping it stops accepting connections and aborts those being served.
#[derive(Debug)]
pub struct MockHttpServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    acceptor: JoinHandle<()>,
}

impl Drop for MockHttpServer {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

impl MockHttpServer {
    /// Starts a server on `127.0.0.1` at a free port, on the current tokio runtime.
    pub async fn start() -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let acceptor = tokio::spawn(accept(listener, Arc::clone(&shared)));
        Ok(Self {
            address,
            shared,
            acceptor,
        })
    }

    /// The server's address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:PORT` followed by `path` (e.g. `"/v1"` for a base URL).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Queues `response` for the next request that finds no earlier response queued.
    pub fn push(&self, response: MockResponse) -> Served {
        let served = Served::new();
        lock(&self.shared.queue).push_back((response, served.clone()));
        served
    }

    /// Answers every request that finds the queue empty with `response`.
    pub fn fallback(&self, response: MockResponse) {
        *lock(&self.shared.fallback) = Some(response);
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Waits until at least `count` requests have arrived and returns them all.
    pub async fn wait_for_requests(&self, count: usize) -> Vec<RecordedRequest> {
        loop {
            let arrived = self.shared.arrived.notified();
            let requests = self.requests();
            if requests.len() >= count {
                return requests;
            }
            arrived.await;
        }
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve(stream, Arc::clone(&shared)));
                }
                Err(error) => {
                    // Out of descriptors and the like: the next accept may work.
                    eprintln!("mock_http: accept failed: {error}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Reads one request head and body; `None` if the client went away first.
async fn read_request(stream: &mut TcpStream) -> io::Result<Option<RecordedRequest>> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            break end;
        }
        if buffer.len() > MAX_HEAD_BYTES {
            stream
                .write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n")
                .await?;
            return Ok(None);
        }
        let mut chunk = [0u8; 4096];
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split_whitespace();
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = vec![0u8; (length - body.len()).min(64 * 1024)];
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Ok(None);
        }
        body.extend_from_slice(&chunk[..read]);
    }
    body.truncate(length);
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    }))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let request = match read_request(&mut stream).await {
        Ok(Some(request)) => request,
        _ => return,
    };
    let description = format!("{} {}", request.method, request.path);
    lock(&shared.requests).push(request);
    shared.arrived.notify_waiters();
    let queued = lock(&shared.queue).pop_front();
    let (response, served) = match queued {
        Some((response, served)) => (response, Some(served)),
        None => match lock(&shared.fallback).clone() {
            Some(response) => (response, None),
            None => (
                MockResponse::new(500)
                    .bytes(format!("mock_http: no response queued for {description}")),
                None,
            ),
        },
    };
    if let Some(served) = &served {
        served.state.taken.send_replace(true);
    }
    let ending = response.ending;
    let (mut reader, mut writer) = stream.into_split();
    let closed = async {
        // The client sends nothing more on a one-request connection: any read that returns is
        // the client closing (end of file) or resetting it.
        let mut byte = [0u8; 1];
        loop {
            match reader.read(&mut byte).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    let written = write_response(&mut writer, &response);
    tokio::pin!(closed);
    let client_closed = tokio::select! {
        () = &mut closed => true,
        result = written => {
            match (result, ending) {
                (Err(_), _) => true,
                (Ok(()), Ending::Stall) => {
                    (&mut closed).await;
                    true
                }
                (Ok(()), Ending::Reset) => {
                    let stream = match reader.reunite(writer) {
                        Ok(stream) => stream,
                        Err(_) => return,
                    };
                    // Zero linger turns the close into a reset.
                    let _ = reset_connection(stream);
                    false
                }
                (Ok(()), Ending::Complete | Ending::Truncate) => {
                    let _ = writer.shutdown().await;
                    // Wait for the client's close, so a test can observe it.
                    (&mut closed).await;
                    true
                }
            }
        }
    };
    if client_closed && let Some(served) = &served {
        served.state.closed.send_replace(true);
    }
}

/// Resets `stream` by closing it with a zero linger time.
fn reset_connection(stream: TcpStream) -> io::Result<()> {
    stream.set_zero_linger()?;
    drop(stream);
    Ok(())
}

async fn write_response(
    writer: &mut tokio::net::tcp::OwnedWriteHalf,
    response: &MockResponse,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    writer.write_all(head.as_bytes()).await?;
    writer.flush().await?;
    for step in &response.steps {
        match step {
            Step::Bytes(bytes) if bytes.is_empty() => {}
            Step::Bytes(bytes) => {
                writer
                    .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())
                    .await?;
                writer.write_all(bytes).await?;
                writer.write_all(b"\r\n").await?;
                writer.flush().await?;
            }
            Step::Wait(gate) => gate.wait().await,
            Step::Delay(duration) => tokio::time::sleep(*duration).await,
        }
    }
    if response.ending == Ending::Complete {
        writer.write_all(b"0\r\n\r\n").await?;
        writer.flush().await?;
    }
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn raw_request(server: &MockHttpServer, body: &str) -> TcpStream {
        let mut stream = TcpStream::connect(server.address()).await.expect("connect");
        let request = format!(
            "POST /v1/x HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.expect("write");
        stream
    }

    async fn read_to_end(stream: &mut TcpStream) -> (String, io::Result<()>) {
        let mut bytes = Vec::new();
        let result = stream.read_to_end(&mut bytes).await.map(|_| ());
        (String::from_utf8_lossy(&bytes).into_owned(), result)
    }

    #[tokio::test]
    async fn a_queued_response_is_served_and_the_request_recorded() {
        let server = MockHttpServer::start().await.expect("start");
        let served = server.push(MockResponse::sse().event("one").event("[DONE]"));
        let mut stream = raw_request(&server, "{\"a\":1}").await;
        let (text, result) = read_to_end(&mut stream).await;
        result.expect("clean end");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("data: one\n\n"), "{text}");
        assert!(text.ends_with("0\r\n\r\n"), "{text}");
        drop(stream);
        served.client_closed().await;
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].path, "/v1/x");
        assert_eq!(requests[0].header("Content-Type"), Some("application/json"));
        assert_eq!(requests[0].json()["a"], 1);
    }

    #[tokio::test]
    async fn a_gate_holds_the_body_until_opened() {
        let server = MockHttpServer::start().await.expect("start");
        let gate = Gate::new();
        server.push(
            MockResponse::sse()
                .event("first")
                .wait(&gate)
                .event("second"),
        );
        let mut stream = raw_request(&server, "").await;
        let mut seen = Vec::new();
        while !String::from_utf8_lossy(&seen).contains("first") {
            let mut chunk = [0u8; 1024];
            let read = stream.read(&mut chunk).await.expect("read");
            assert!(read > 0, "closed early");
            seen.extend_from_slice(&chunk[..read]);
        }
        assert!(!String::from_utf8_lossy(&seen).contains("second"));
        gate.open();
        let (rest, _) = read_to_end(&mut stream).await;
        assert!(rest.contains("second"), "{rest}");
    }

    #[tokio::test]
    async fn truncated_and_reset_responses_end_without_the_last_chunk() {
        let server = MockHttpServer::start().await.expect("start");
        server.push(MockResponse::sse().event("part").truncate());
        server.push(MockResponse::sse().event("part").reset());
        let mut truncated = raw_request(&server, "").await;
        let (text, _) = read_to_end(&mut truncated).await;
        assert!(
            text.contains("part") && !text.ends_with("0\r\n\r\n"),
            "{text}"
        );
        let mut reset = raw_request(&server, "").await;
        let (text, result) = read_to_end(&mut reset).await;
        assert!(!text.ends_with("0\r\n\r\n"), "{text}");
        assert_eq!(
            result.expect_err("reset").kind(),
            io::ErrorKind::ConnectionReset
        );
    }

    #[tokio::test]
    async fn a_stalled_response_reports_the_client_closing() {
        let server = MockHttpServer::start().await.expect("start");
        let served = server.push(MockResponse::sse().event("part").stall());
        let stream = raw_request(&server, "").await;
        served.requested().await;
        assert!(!served.is_client_closed());
        drop(stream);
        served.client_closed().await;
        assert!(served.is_client_closed());
    }

    #[tokio::test]
    async fn without_a_queued_response_the_fallback_or_a_500_answers() {
        let server = MockHttpServer::start().await.expect("start");
        let mut stream = raw_request(&server, "").await;
        let (text, _) = read_to_end(&mut stream).await;
        assert!(text.starts_with("HTTP/1.1 500"), "{text}");
        assert!(text.contains("no response queued for POST /v1/x"), "{text}");
        server.fallback(MockResponse::new(202));
        let mut stream = raw_request(&server, "").await;
        let (text, _) = read_to_end(&mut stream).await;
        assert!(text.starts_with("HTTP/1.1 202"), "{text}");
        assert_eq!(server.wait_for_requests(2).await.len(), 2);
    }
}
