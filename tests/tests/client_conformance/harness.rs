//! What a scenario holds: a [`Harness`], one `tandem_client::Client` of a fresh reference
//! server on one [`Backend`], with the server's home, the normalizer its replies are compared
//! through, and the server process where there is one. Every await of a scenario goes through
//! [`Harness::call`] or [`Harness::within`], so nothing waits longer than [`LIMIT`], and a
//! failure names the backend.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tandem_client::{
    ChildCommand, Client, ClientError, ClientOptions, Event, Subscription, SubscriptionFilter,
    SubscriptionOptions, Transport, WebSocketTarget,
};
use tandem_protocol::wire::{ServerMessage, encode_server_message};
use tandem_server::{ServerConfig, ServerOptions};
use tandem_test_support::binary::{ServerProcess, tandem_binary, tandem_command};
use tandem_test_support::{eventually, live_pids_with_env};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::oneshot;

use crate::normalize::Normalizer;
use crate::shapes::rpc_error;

/// The longest any single step may take. Generous: scenarios wait for real processes on a
/// loaded 2-core machine.
pub(crate) const LIMIT: Duration = Duration::from_secs(20);
/// How long a server may take to exit after its client closed (its shutdown budget is 5 s).
const EXIT_LIMIT: Duration = Duration::from_secs(10);
/// How long the websocket server may take to print its address.
const LISTEN_LIMIT: Duration = Duration::from_secs(30);
/// How many lines of a server's stderr a failure quotes.
const STDERR_TAIL: usize = 20;

/// Which backend of the client talks to the server under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// `Transport::InProcess`: `TandemServer` in this process.
    InProcess,
    /// `Transport::Child`: `tandem app-server --listen stdio://`, the built binary.
    Child,
    /// `Transport::WebSocket` to `tandem app-server --listen ws://127.0.0.1:0`.
    WebSocket,
    /// `Client::connect_unix` to `tandem app-server --listen unix://PATH`.
    UnixSocket,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::InProcess => "in-process",
            Backend::Child => "child",
            Backend::WebSocket => "websocket",
            Backend::UnixSocket => "unix-socket",
        })
    }
}

/// How the server under test is configured; each knob reaches every backend its own way
/// (`ServerConfig` in-process, command-line flags for the binary).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Setup {
    /// `-c thread_unload_delay_secs=N`.
    pub(crate) thread_unload_delay_secs: Option<u64>,
    /// `--channel-capacity N` (the server's queues; the client's too).
    pub(crate) channel_capacity: Option<usize>,
}

impl Setup {
    /// The binary's global options (`-c key=value`).
    fn global_flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(delay) = self.thread_unload_delay_secs {
            flags.extend(["-c".to_owned(), format!("thread_unload_delay_secs={delay}")]);
        }
        flags
    }

    /// The options of `tandem app-server`.
    fn app_server_flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(capacity) = self.channel_capacity {
            flags.extend(["--channel-capacity".to_owned(), capacity.to_string()]);
        }
        flags
    }
}

/// The options every scenario's client starts from: the suite's name, and a request timeout
/// as long as any step may take.
pub(crate) fn client_options() -> ClientOptions {
    ClientOptions::new()
        .client_name("tandem-conformance")
        .client_version("1.0.0")
        .request_timeout(Some(LIMIT))
}

/// A websocket server's process (over TCP or a unix socket) and the stderr lines it printed.
struct WebSocketServer {
    process: ServerProcess,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl WebSocketServer {
    /// Starts `tandem app-server --listen LISTEN` in `home` and returns it with the URL it
    /// printed. Its stderr is drained for as long as it runs (a full pipe would block it).
    async fn start(home: &Path, setup: &Setup, listen: &str) -> (Self, String) {
        let mut command = tandem_command(home)
            .await
            .unwrap_or_else(|error| panic!("[websocket] {error}"));
        command
            .args(["app-server", "--listen", listen])
            // Global options after the subcommand here, before it for the child: both work.
            .args(setup.app_server_flags())
            .args(setup.global_flags())
            .current_dir(home);
        let mut process = ServerProcess::spawn(&mut command)
            .unwrap_or_else(|error| panic!("[websocket] the server did not start: {error}"));
        let stderr = process.child_mut().stderr.take().expect("stderr is piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (listening, address) = oneshot::channel();
        tokio::spawn({
            let lines = Arc::clone(&lines);
            let mut listening = Some(listening);
            async move {
                let mut reader = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if let Some(address) = line.trim().strip_prefix("listening on: ")
                        && let Some(sender) = listening.take()
                    {
                        let _ = sender.send(address.to_owned());
                    }
                    lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
                }
            }
        });
        let server = Self {
            process,
            stderr: lines,
        };
        match tokio::time::timeout(LISTEN_LIMIT, address).await {
            Ok(Ok(url)) => (server, url),
            _ => panic!(
                "[{listen}] no `listening on: URL` within {LISTEN_LIMIT:?}:\n{}",
                server.stderr_tail()
            ),
        }
    }

    fn stderr_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        lines[lines.len().saturating_sub(STDERR_TAIL)..].join("\n")
    }
}

/// How a harness's client reaches its server (built once per harness, so the size of the
/// in-process transport costs nothing).
#[allow(clippy::large_enum_variant)]
enum Connect {
    /// `Client::start` on this transport, then `Client::connect`.
    Transport(Transport),
    /// `Client::connect_unix` on this socket, the entry point the unix socket backend tests.
    Unix(std::path::PathBuf),
}

/// One client of a fresh server.
pub(crate) struct Harness {
    pub(crate) backend: Backend,
    pub(crate) client: Client,
    /// Shared by every step, which may hold a borrow of the client meanwhile.
    normalizer: RefCell<Normalizer>,
    server: Option<WebSocketServer>,
    home: tempfile::TempDir,
}

impl Harness {
    /// A fresh server with default settings and a client with [`client_options`].
    pub(crate) async fn open(backend: Backend) -> Self {
        Self::start(backend, Setup::default(), client_options()).await
    }

    /// A fresh server configured by `setup`, and a client with `options`, connected.
    pub(crate) async fn start(backend: Backend, setup: Setup, options: ClientOptions) -> Self {
        let home = tempfile::Builder::new()
            .prefix("client-conformance-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("a temporary home");
        let options = match setup.channel_capacity {
            Some(capacity) => options.channel_capacity(capacity),
            None => options,
        };
        let mut server = None;
        let connect = match backend {
            Backend::InProcess => {
                let mut config = ServerConfig::builder().tandem_home(home.path());
                if let Some(delay) = setup.thread_unload_delay_secs {
                    config = config.thread_unload_delay_secs(delay);
                }
                let options = ServerOptions::load(config)
                    .unwrap_or_else(|error| panic!("[{backend}] server options: {error}"));
                Connect::Transport(Transport::InProcess(options))
            }
            Backend::Child => {
                let binary = tokio::task::spawn_blocking(tandem_binary)
                    .await
                    .expect("the build task does not panic")
                    .unwrap_or_else(|error| panic!("[{backend}] {error}"));
                // Global options before the subcommand's own, as `tandem -c k=v app-server`.
                let command = ChildCommand::new(binary)
                    .args(setup.global_flags())
                    .args(["app-server", "--listen", "stdio://"])
                    .args(setup.app_server_flags())
                    .env("TANDEM_HOME", home.path())
                    .env_remove("TANDEM_LOG")
                    .current_dir(home.path());
                Connect::Transport(Transport::Child(command))
            }
            Backend::WebSocket => {
                let (started, url) =
                    WebSocketServer::start(home.path(), &setup, "ws://127.0.0.1:0").await;
                server = Some(started);
                Connect::Transport(Transport::WebSocket(WebSocketTarget::new(url)))
            }
            Backend::UnixSocket => {
                let path = home.path().join("app-server.sock");
                let listen = format!("unix://{}", path.display());
                let (started, _url) = WebSocketServer::start(home.path(), &setup, &listen).await;
                server = Some(started);
                Connect::Unix(path)
            }
        };
        let mut homes = vec![home.path().display().to_string()];
        if let Ok(canonical) = home.path().canonicalize() {
            homes.push(canonical.display().to_string());
        }
        let started = tokio::time::timeout(LIMIT, async {
            match connect {
                Connect::Transport(transport) => {
                    let client = Client::start(transport, options).await?;
                    client.connect().await?;
                    Ok::<_, ClientError>(client)
                }
                Connect::Unix(path) => Client::connect_unix(path, options).await,
            }
        })
        .await;
        let client = match started {
            Ok(Ok(client)) => client,
            Ok(Err(error)) => panic!("[{backend}] the client did not start: {error}"),
            Err(_) => panic!("[{backend}] the client did not start within {LIMIT:?}"),
        };
        Self {
            backend,
            client,
            normalizer: RefCell::new(Normalizer::new(homes)),
            server,
            home,
        }
    }

    /// The server's home, as given to it: the cwd of every thread a scenario starts.
    pub(crate) fn home(&self) -> String {
        self.home.path().display().to_string()
    }

    /// Fails the test with `what`, naming the backend (and, for a websocket server, the end
    /// of its stderr).
    #[track_caller]
    pub(crate) fn fail(&self, what: impl fmt::Display) -> ! {
        match &self.server {
            Some(server) => panic!(
                "[{}] {what}\nserver stderr:\n{}",
                self.backend,
                server.stderr_tail()
            ),
            None => panic!("[{}] {what}", self.backend),
        }
    }

    /// Awaits `future` for at most [`LIMIT`].
    pub(crate) async fn within<T>(&self, what: &str, future: impl Future<Output = T>) -> T {
        match tokio::time::timeout(LIMIT, future).await {
            Ok(output) => output,
            Err(_) => self.fail(format!("{what}: nothing within {LIMIT:?}")),
        }
    }

    /// Awaits a client call that must succeed.
    pub(crate) async fn call<T>(
        &self,
        what: &str,
        future: impl Future<Output = Result<T, ClientError>>,
    ) -> T {
        match self.within(what, future).await {
            Ok(value) => value,
            Err(error) => self.fail(format!("{what} failed: {error} ({error:?})")),
        }
    }

    /// Awaits a client call that must fail.
    pub(crate) async fn call_error<T: fmt::Debug>(
        &self,
        what: &str,
        future: impl Future<Output = Result<T, ClientError>>,
    ) -> ClientError {
        match self.within(what, future).await {
            Ok(value) => self.fail(format!("{what} succeeded, expected an error: {value:?}")),
            Err(error) => error,
        }
    }

    /// Awaits a call that the server must refuse with exactly `code` and `message`
    /// (normalized, so `<id:N>` and `<home>` may stand in it), classified as sent and, unless
    /// -32001, not safe to retry.
    pub(crate) async fn expect_server_error<T: fmt::Debug>(
        &self,
        what: &str,
        future: impl Future<Output = Result<T, ClientError>>,
        code: i64,
        message: &str,
    ) {
        let error = self.call_error(what, future).await;
        let Some(rejection) = error.server_error() else {
            self.fail(format!("{what}: not a server error: {error:?}"));
        };
        let rejection = self.json(rejection);
        self.assert_json(what, &rejection, &rpc_error(code, message));
        if !error.was_sent() || error.is_retry_safe() != (code == -32001) {
            self.fail(format!("{what}: misclassified: {error:?}"));
        }
    }

    /// `value` serialized and normalized, numbering new ids in the order they are met.
    pub(crate) fn json(&self, value: &impl Serialize) -> Value {
        let value = serde_json::to_value(value).expect("protocol values serialize");
        self.normalizer.borrow_mut().normalize(&value)
    }

    /// Fails unless `actual` equals `expected`, printing both in full.
    #[track_caller]
    pub(crate) fn assert_json(&self, what: &str, actual: &Value, expected: &Value) {
        if actual != expected {
            self.fail(format!(
                "{what}: JSON differs\nactual:\n{}\nexpected:\n{}",
                serde_json::to_string_pretty(actual).expect("serializes"),
                serde_json::to_string_pretty(expected).expect("serializes"),
            ));
        }
    }

    /// Normalizes `actual` and compares it with `expected`.
    #[track_caller]
    pub(crate) fn expect_json(&self, what: &str, actual: &impl Serialize, expected: Value) {
        let actual = self.json(actual);
        self.assert_json(what, &actual, &expected);
    }

    /// A subscription to every event, with the client's capacity.
    pub(crate) fn subscribe_all(&self) -> Subscription {
        self.client
            .subscribe(SubscriptionOptions::new(SubscriptionFilter::All))
    }

    /// The next event of `subscription`, which must be a notification or (the copy a
    /// subscription gets of) a server request; returned as its wire JSON (`{method, params}`,
    /// `{id, method, params}`), normalized.
    pub(crate) async fn next_message(&self, subscription: &mut Subscription) -> Value {
        let event = self.within("the next event", subscription.next()).await;
        let message = match event {
            Some(Ok(Event::Notification(notification))) => ServerMessage::Notification {
                notification,
                emitted_at_ms: None,
                cursor: None,
            },
            Some(Ok(Event::ServerRequest(request))) => ServerMessage::Request(request),
            other => self.fail(format!(
                "expected a notification or a request, got {other:?}"
            )),
        };
        let mut bytes = Vec::new();
        encode_server_message(&message, &mut bytes).expect("a server message encodes");
        let value: Value = serde_json::from_slice(&bytes).expect("the codec writes JSON");
        self.normalizer.borrow_mut().normalize(&value)
    }

    /// Takes the next messages of `subscription` and compares each with `expected`.
    pub(crate) async fn expect_messages(
        &self,
        subscription: &mut Subscription,
        expected: &[Value],
    ) {
        for (index, want) in expected.iter().enumerate() {
            let got = self.next_message(subscription).await;
            self.assert_json(&format!("message {index}"), &got, want);
        }
    }

    /// Reads `subscription` up to and including the message `method`; returns what came
    /// before it and that message, normalized.
    pub(crate) async fn messages_until(
        &self,
        subscription: &mut Subscription,
        method: &str,
    ) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let message = self.next_message(subscription).await;
            if message["method"] == method {
                return (before, message);
            }
            before.push(message);
        }
    }

    /// Closes the client and checks that the server side is gone: the websocket server exits
    /// 0 on SIGTERM, and no process of the binary (nor anything it started) outlives it.
    pub(crate) async fn close(mut self) {
        self.within("closing the client", self.client.close()).await;
        if let Some(mut server) = self.server.take() {
            match server.process.terminate_within(EXIT_LIMIT).await {
                Ok(status) if status.success() => {}
                other => panic!(
                    "[{}] the websocket server ended with {other:?}; stderr:\n{}",
                    self.backend,
                    server.stderr_tail()
                ),
            }
        }
        if self.backend != Backend::InProcess {
            let home = self.home();
            eventually(EXIT_LIMIT, "every process of the server has exited", || {
                live_pids_with_env("TANDEM_HOME", &home).is_empty()
            })
            .await;
        }
    }
}
