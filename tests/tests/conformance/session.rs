//! What a scenario holds: a [`Session`], one client connection to a fresh server on one
//! [`Transport`], with request ids, a backlog of messages read while waiting for something
//! else, normalization and deadlines on every read.
//!
//! Messages are normalized when the scenario takes them, not when they arrive, so ids are
//! numbered in the order the scenario reads them, which is the same on every transport. What
//! a scenario sends through [`Session::send`] is denormalized first, so scenarios use the
//! placeholders (`<id:1>`, `<home>`) in both directions.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

use crate::driver::{Driver, DriverError};
use crate::in_process_driver::InProcessDriver;
use crate::normalize::Normalizer;
use crate::wire::{Listener, StdioDriver, WebSocketDriver};

/// The longest any single message may take to arrive, or any send to complete. Generous:
/// scenarios wait for real processes on a loaded 2-core machine.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// How long [`Session::reply_when_not_overloaded`] waits before trying again.
const OVERLOAD_RETRY: Duration = Duration::from_millis(10);

/// How many of the latest messages a failure message shows.
const RECENT: usize = 12;

/// Names a file to which every message a server sends in the suite is appended, one JSON
/// object per line: `{"transport", "requestMethod", "message"}`, `requestMethod` being the
/// method of the request a reply answers (`null` otherwise). `cargo xtask schema-check`
/// validates them against the reference's schema.
pub(crate) const CAPTURE_ENV: &str = "TANDEM_CONFORMANCE_CAPTURE";

/// The capture file of [`CAPTURE_ENV`], opened once for every test of the process.
fn capture_file() -> Option<&'static Mutex<std::fs::File>> {
    static FILE: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::var_os(CAPTURE_ENV)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|error| panic!("{CAPTURE_ENV}: cannot open {path:?}: {error}"));
        Some(Mutex::new(file))
    })
    .as_ref()
}

/// Where the server under test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// `tandem_host::in_process::start` with `tandem_server::TandemServer`.
    InProcess,
    /// The built binary: `tandem app-server --listen stdio://`.
    Stdio,
    /// The built binary: `tandem app-server --listen ws://127.0.0.1:0`.
    WebSocket,
    /// The built binary: `tandem app-server --listen unix://PATH`.
    UnixSocket,
}

impl Transport {
    /// Whether a client can talk to the server before `initialize`. Over the wire it can; the
    /// in-process host performs `initialize` inside `start`, so no uninitialized in-process
    /// connection exists and the steps that need one are skipped there.
    pub(crate) fn has_uninitialized_state(self) -> bool {
        self != Transport::InProcess
    }
}

impl Transport {
    /// Whether server notifications carry the envelope's `emittedAtMs` (docs/protocol.md section
    /// 1). In-process events are typed values with no envelope to carry it.
    fn stamps_notifications(self) -> bool {
        self != Transport::InProcess
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Transport::InProcess => "in-process",
            Transport::Stdio => "stdio",
            Transport::WebSocket => "websocket",
            Transport::UnixSocket => "unix-socket",
        })
    }
}

/// How the server under test is configured.
#[derive(Debug, Clone)]
pub(crate) struct ServerSetup {
    /// Its `TANDEM_HOME`: a fresh directory per session.
    pub(crate) home: PathBuf,
    /// `thread_unload_delay_secs`, when not the default.
    pub(crate) thread_unload_delay_secs: Option<u64>,
    /// The capacity of the host's bounded queues, when not the default.
    pub(crate) channel_capacity: Option<usize>,
    /// Events kept per thread for replay, when not the default.
    pub(crate) replay_window_events: Option<usize>,
}

/// Options a scenario may set before the server starts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Config {
    /// The text of the home's `config.toml`, written before the server starts.
    pub(crate) config_toml: Option<String>,
    /// `thread_unload_delay_secs`.
    pub(crate) thread_unload_delay_secs: Option<u64>,
    /// Queue capacity (`--channel-capacity` / `InProcessStartArgs::channel_capacity`).
    pub(crate) channel_capacity: Option<usize>,
    /// Replay window (`--replay-window-events` / `InProcessStartArgs::replay_window`).
    pub(crate) replay_window_events: Option<usize>,
}

/// One connection to a fresh server.
pub(crate) struct Session {
    transport: Transport,
    driver: Option<Box<dyn Driver>>,
    /// Messages read while looking for something else, oldest first, not yet normalized.
    backlog: VecDeque<Value>,
    normalizer: Normalizer,
    next_id: i64,
    recent: VecDeque<String>,
    /// The method of every request sent, by id, for the capture of [`CAPTURE_ENV`].
    sent_methods: HashMap<i64, String>,
    /// See [`Session::last_cursor`].
    last_cursor: Option<Value>,
    /// Removed when the session is dropped, after the server is gone.
    _home: tempfile::TempDir,
}

impl Session {
    /// A fresh server with default settings on `transport`, not yet initialized.
    pub(crate) async fn open(transport: Transport) -> Self {
        Self::open_with(transport, Config::default()).await
    }

    /// A fresh server configured by `config` on `transport`, not yet initialized.
    pub(crate) async fn open_with(transport: Transport, config: Config) -> Self {
        let home = tempfile::Builder::new()
            .prefix("conformance-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("a temporary home");
        if let Some(text) = &config.config_toml {
            std::fs::write(home.path().join("config.toml"), text).expect("config.toml written");
        }
        let setup = ServerSetup {
            home: home.path().to_path_buf(),
            thread_unload_delay_secs: config.thread_unload_delay_secs,
            channel_capacity: config.channel_capacity,
            replay_window_events: config.replay_window_events,
        };
        let driver: Result<Box<dyn Driver>, DriverError> = match transport {
            Transport::InProcess => InProcessDriver::new(&setup).map(|d| Box::new(d) as _),
            Transport::Stdio => StdioDriver::start(&setup).await.map(|d| Box::new(d) as _),
            Transport::WebSocket => WebSocketDriver::start(&setup, Listener::Tcp)
                .await
                .map(|d| Box::new(d) as _),
            Transport::UnixSocket => WebSocketDriver::start(&setup, Listener::Unix)
                .await
                .map(|d| Box::new(d) as _),
        };
        let driver = driver.unwrap_or_else(|error| panic!("[{transport}] {error}"));
        let mut homes = vec![home.path().display().to_string()];
        if let Ok(canonical) = home.path().canonicalize() {
            homes.push(canonical.display().to_string());
        }
        Self {
            transport,
            driver: Some(driver),
            backlog: VecDeque::new(),
            normalizer: Normalizer::new(homes),
            next_id: 1,
            recent: VecDeque::new(),
            sent_methods: HashMap::new(),
            last_cursor: None,
            _home: home,
        }
    }

    /// The transport this session runs on.
    pub(crate) fn transport(&self) -> Transport {
        self.transport
    }

    /// Normalizes `value` as this session's messages are.
    pub(crate) fn normalize(&mut self, value: &Value) -> Value {
        self.normalizer.normalize(value)
    }

    fn driver(&mut self) -> &mut dyn Driver {
        self.driver.as_deref_mut().expect("the session is open")
    }

    /// Fails the test with `what`, naming the transport and the latest messages.
    #[track_caller]
    pub(crate) fn fail(&self, what: impl fmt::Display) -> ! {
        let recent: Vec<&str> = self.recent.iter().map(String::as_str).collect();
        panic!(
            "[{}] {what}\nlatest messages, oldest first:\n  {}",
            self.transport,
            recent.join("\n  ")
        );
    }

    /// Sends exactly `frame` as one line (stdio) or frame (websocket), not denormalized.
    pub(crate) async fn send_raw(&mut self, frame: &[u8]) {
        let sent = tokio::time::timeout(PATIENCE, self.driver().send_raw(frame)).await;
        match sent {
            Ok(Ok(())) => {}
            Ok(Err(error)) => self.fail(format!("send failed: {error}")),
            Err(_) => self.fail(format!("send did not complete within {PATIENCE:?}")),
        }
    }

    /// Sends one JSON message, with placeholders replaced by what they stand for.
    pub(crate) async fn send(&mut self, message: Value) {
        let message = self.normalizer.denormalize(&message);
        let sent = tokio::time::timeout(PATIENCE, self.driver().send(&message)).await;
        match sent {
            Ok(Ok(())) => {}
            Ok(Err(error)) => self.fail(format!("send failed: {error}")),
            Err(_) => self.fail(format!("send did not complete within {PATIENCE:?}")),
        }
    }

    /// A fresh request id.
    pub(crate) fn fresh_id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Sends a request for `method` with `params` and returns its id.
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.fresh_id();
        if capture_file().is_some() {
            self.sent_methods.insert(id, method.to_owned());
        }
        self.send(json!({"id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// Sends a notification.
    pub(crate) async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"method": method, "params": params})).await;
    }

    /// Reads the next message from the transport (not the backlog), raw.
    async fn read(&mut self, waiting_for: &str) -> Value {
        let read = tokio::time::timeout(PATIENCE, self.driver().recv()).await;
        let message = match read {
            Ok(Ok(message)) => message,
            Ok(Err(error)) => self.fail(format!("waiting for {waiting_for}: {error}")),
            Err(_) => self.fail(format!("no {waiting_for} within {PATIENCE:?}")),
        };
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(summary(&message));
        self.capture(&message);
        let is_notification = message.get("method").is_some() && message.get("id").is_none();
        if is_notification
            && self.transport.stamps_notifications()
            && !message["emittedAtMs"].is_i64()
        {
            self.fail(format!(
                "a notification without an integer emittedAtMs: {message}"
            ));
        }
        message
    }

    /// Appends `message` to the capture file, if [`CAPTURE_ENV`] names one.
    fn capture(&self, message: &Value) {
        let Some(file) = capture_file() else { return };
        let is_reply = message.get("method").is_none();
        let request_method = message
            .get("id")
            .and_then(Value::as_i64)
            .filter(|_| is_reply)
            .and_then(|id| self.sent_methods.get(&id));
        let line = json!({
            "transport": self.transport.to_string(),
            "requestMethod": request_method,
            "message": message,
        });
        let mut file = file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        writeln!(file, "{line}").expect("the capture file is writable");
    }

    /// The reply to request `id` (`{id, result}` or `{id, error}`), normalized. Messages read
    /// before it go to the backlog.
    pub(crate) async fn reply(&mut self, id: impl Into<Value>) -> Value {
        let id = id.into();
        if let Some(index) = self.backlog.iter().position(|m| is_reply_to(m, &id)) {
            let message = self.backlog.remove(index).expect("index is in range");
            return self.normalize(&message);
        }
        loop {
            let message = self.read(&format!("the reply to request {id}")).await;
            if is_reply_to(&message, &id) {
                return self.normalize(&message);
            }
            self.backlog.push_back(message);
        }
    }

    /// Sends a request and returns its normalized `result`; an error reply fails the test.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        let mut reply = self.reply(id).await;
        match reply.get_mut("result") {
            Some(result) => result.take(),
            None => self.fail(format!("{method} failed: {reply}")),
        }
    }

    /// Sends a request until it is not refused with -32001 ("safe to retry later": with tiny
    /// queues even a handshake can meet a full one) and returns the reply, normalized.
    pub(crate) async fn reply_when_not_overloaded(&mut self, method: &str, params: Value) -> Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let id = self.request(method, params.clone()).await;
            let reply = self.reply(id).await;
            if reply["error"]["code"] != json!(tandem_protocol::error_codes::OVERLOADED) {
                return reply;
            }
            if tokio::time::Instant::now() >= deadline {
                self.fail(format!("{method} still overloaded after {PATIENCE:?}"));
            }
            tokio::time::sleep(OVERLOAD_RETRY).await;
        }
    }

    /// Sends a request and returns its normalized `error`; a result fails the test.
    pub(crate) async fn call_error(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        let mut reply = self.reply(id).await;
        match reply.get_mut("error") {
            Some(error) => error.take(),
            None => self.fail(format!("{method} succeeded, expected an error: {reply}")),
        }
    }

    /// The next message, from the backlog first, normalized.
    pub(crate) async fn next(&mut self, waiting_for: &str) -> Value {
        let message = match self.backlog.pop_front() {
            Some(message) => message,
            None => self.read(waiting_for).await,
        };
        self.last_cursor = message.get("cursor").cloned();
        self.normalize(&message)
    }

    /// The raw event cursor of the message last taken with [`Self::next`], if it carried one
    /// (normalized messages drop it: its epoch is random per server).
    pub(crate) fn last_cursor(&self) -> Option<Value> {
        self.last_cursor.clone()
    }

    /// The next message, which must be the notification or server request `method`; returns
    /// it whole (normalized).
    pub(crate) async fn expect(&mut self, method: &str) -> Value {
        let message = self.next(method).await;
        if message["method"] != method {
            self.fail(format!("expected {method}, got {message}"));
        }
        message
    }

    /// Reads until the notification or server request `method`; returns the messages before
    /// it and the message itself, normalized.
    pub(crate) async fn read_until(&mut self, method: &str) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let message = self.next(method).await;
            if message["method"] == method {
                return (before, message);
            }
            before.push(message);
        }
    }

    /// Whether a message with `method` was read but not taken yet.
    pub(crate) fn backlog_has(&self, method: &str) -> bool {
        self.backlog
            .iter()
            .any(|message| message["method"] == method)
    }

    /// Answers the server request with (raw) id `id`.
    pub(crate) async fn respond(&mut self, id: &Value, result: Value) {
        self.send(json!({"id": id, "result": result})).await;
    }

    /// Stops reading the transport until [`Self::resume`].
    pub(crate) fn pause(&mut self) {
        self.driver().pause();
    }

    /// Reads again.
    pub(crate) fn resume(&mut self) {
        self.driver().resume();
    }

    /// `initialize` with the standard client info, the given capabilities, then
    /// `initialized`; returns the normalized result.
    pub(crate) async fn initialize_with(&mut self, capabilities: Value) -> Value {
        let result = self
            .call(
                "initialize",
                json!({"clientInfo": client_info(), "capabilities": capabilities}),
            )
            .await;
        self.notify("initialized", json!({})).await;
        result
    }

    /// `initialize` (with `experimentalApi` as given) and `initialized`.
    pub(crate) async fn initialize(&mut self, experimental_api: bool) -> Value {
        self.initialize_with(json!({"experimentalApi": experimental_api}))
            .await
    }

    /// Hangs up and checks that the server side finished cleanly.
    /// Drops the connection and opens a new one to the same server ([`Driver::reconnect`]);
    /// messages read from the old one and not taken are gone with it.
    pub(crate) async fn reconnect(&mut self) {
        self.backlog.clear();
        let reconnected = tokio::time::timeout(PATIENCE, self.driver().reconnect()).await;
        match reconnected {
            Ok(Ok(())) => {}
            Ok(Err(error)) => self.fail(format!("reconnect failed: {error}")),
            Err(_) => self.fail(format!("reconnect did not finish within {PATIENCE:?}")),
        }
    }

    pub(crate) async fn close(mut self) {
        if let Some(message) = self.backlog.front() {
            let message = summary(message);
            self.fail(format!("closing with unread messages, first: {message}"));
        }
        let driver = self.driver.take().expect("the session is open");
        match tokio::time::timeout(PATIENCE, driver.close()).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => self.fail(format!("close failed: {error}")),
            Err(_) => self.fail(format!("close did not finish within {PATIENCE:?}")),
        }
    }
}

/// The `clientInfo` every scenario sends.
pub(crate) fn client_info() -> Value {
    json!({"name": "tandem-conformance", "title": "Tandem conformance suite", "version": "1.0.0"})
}

fn is_reply_to(message: &Value, id: &Value) -> bool {
    message.get("method").is_none() && message.get("id") == Some(id)
}

/// A message shortened for failure output.
fn summary(message: &Value) -> String {
    let text = message.to_string();
    match text.char_indices().nth(300) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// Asserts that `actual` equals `expected`, printing both in full when they differ.
#[track_caller]
pub(crate) fn assert_json(session: &Session, actual: &Value, expected: &Value) {
    if actual != expected {
        session.fail(format!(
            "JSON differs\nactual:\n{}\nexpected:\n{}",
            serde_json::to_string_pretty(actual).expect("serializes"),
            serde_json::to_string_pretty(expected).expect("serializes"),
        ));
    }
}
