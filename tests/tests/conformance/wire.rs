//! The out-of-process transports: the built `tandem` binary run as
//! `tandem app-server --listen stdio://` (one JSON object per line), as
//! `tandem app-server --listen ws://127.0.0.1:0` (one JSON object per text frame, the port
//! read from `listening on: ws://ADDR` on stderr) and as `tandem app-server --listen
//! unix://PATH` (the same websocket protocol over a unix socket in the session's home).
//!
//! Both read the server's stdout or socket only inside `recv`, so a scenario that stops
//! reading fills the pipe or the socket and the server meets real backpressure. The server's
//! stderr is always drained (a full stderr pipe would block it) and kept for failure messages.

use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use tandem_test_support::binary::{ServerProcess, tandem_command};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpStream, UnixStream};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::oneshot;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::either::Either;

use crate::driver::{Driver, DriverError};
use crate::session::ServerSetup;

/// How long the server may take to exit after the client hung up (its shutdown budget is 5 s).
const EXIT_LIMIT: Duration = Duration::from_secs(10);
/// How long the websocket server may take to print its address.
const LISTEN_LIMIT: Duration = Duration::from_secs(30);
/// How many lines of the server's stderr a failure message quotes.
const STDERR_TAIL: usize = 20;

/// The server's stderr lines, collected by a background task.
#[derive(Clone, Default)]
struct StderrLog {
    lines: Arc<Mutex<Vec<String>>>,
}

impl StderrLog {
    /// Drains `stderr` into the log; the first `listening on: URL` line's URL goes to
    /// `listening`.
    fn collect(
        &self,
        stderr: tokio::process::ChildStderr,
        mut listening: Option<oneshot::Sender<String>>,
    ) {
        let lines = Arc::clone(&self.lines);
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if let Some(address) = line.trim().strip_prefix("listening on: ")
                    && let Some(sender) = listening.take()
                {
                    let _ = sender.send(address.to_owned());
                }
                lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        });
    }

    fn tail(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let start = lines.len().saturating_sub(STDERR_TAIL);
        lines[start..].join("\n")
    }
}

/// The global options of `setup` (`-c key=value`), valid before or after the subcommand.
fn global_flags(setup: &ServerSetup) -> Vec<String> {
    let mut flags = Vec::new();
    if let Some(delay) = setup.thread_unload_delay_secs {
        flags.extend(["-c".to_owned(), format!("thread_unload_delay_secs={delay}")]);
    }
    flags
}

/// The `app-server` options of `setup`.
fn app_server_flags(setup: &ServerSetup) -> Vec<String> {
    let mut flags = Vec::new();
    if let Some(capacity) = setup.channel_capacity {
        flags.extend(["--channel-capacity".to_owned(), capacity.to_string()]);
    }
    if let Some(events) = setup.replay_window_events {
        flags.extend(["--replay-window-events".to_owned(), events.to_string()]);
    }
    flags
}

async fn spawn_server(
    home: &Path,
    args: Vec<String>,
) -> Result<(ServerProcess, StderrLog, oneshot::Receiver<String>), DriverError> {
    let mut command = tandem_command(home)
        .await
        .map_err(|error| DriverError::Start(error.to_string()))?;
    command.args(&args).current_dir(home);
    let mut server = ServerProcess::spawn(&mut command)
        .map_err(|error| DriverError::Start(format!("tandem {}: {error}", args.join(" "))))?;
    let log = StderrLog::default();
    let (listening, address) = oneshot::channel();
    let stderr = server.child_mut().stderr.take().expect("stderr is piped");
    log.collect(stderr, Some(listening));
    Ok((server, log, address))
}

fn parse(frame: &[u8], log: &StderrLog) -> Result<Value, DriverError> {
    serde_json::from_slice(frame).map_err(|error| DriverError::NotJson {
        error: format!("{error}; server stderr:\n{}", log.tail()),
        text: String::from_utf8_lossy(frame).into_owned(),
    })
}

/// `tandem app-server --listen stdio://`.
pub(crate) struct StdioDriver {
    server: ServerProcess,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    log: StderrLog,
    paused: bool,
}

impl StdioDriver {
    pub(crate) async fn start(setup: &ServerSetup) -> Result<Self, DriverError> {
        // Global options before the subcommand here and after it for the websocket driver:
        // both placements must work.
        let mut args = global_flags(setup);
        args.extend(["app-server", "--listen", "stdio://"].map(str::to_owned));
        args.extend(app_server_flags(setup));
        let (mut server, log, _) = spawn_server(&setup.home, args).await?;
        let child = server.child_mut();
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        Ok(Self {
            server,
            stdin: Some(stdin),
            stdout,
            log,
            paused: false,
        })
    }

    fn closed(&self, what: &str) -> DriverError {
        DriverError::Closed(format!("{what}; server stderr:\n{}", self.log.tail()))
    }
}

#[async_trait]
impl Driver for StdioDriver {
    async fn send_raw(&mut self, frame: &[u8]) -> Result<(), DriverError> {
        let stdin = self.stdin.as_mut().expect("stdin stays open until close");
        let mut line = Vec::with_capacity(frame.len() + 1);
        line.extend_from_slice(frame);
        line.push(b'\n');
        let written = async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        };
        written
            .await
            .map_err(|error| self.closed(&format!("writing stdin failed: {error}")))
    }

    async fn recv(&mut self) -> Result<Value, DriverError> {
        if self.paused {
            return Err(DriverError::Paused);
        }
        let mut line = Vec::new();
        let read = self
            .stdout
            .read_until(b'\n', &mut line)
            .await
            .map_err(|error| DriverError::Io(format!("reading stdout: {error}")))?;
        if read == 0 {
            return Err(self.closed("stdout reached EOF"));
        }
        parse(line.strip_suffix(b"\n").unwrap_or(&line), &self.log)
    }

    fn pause(&mut self) {
        self.paused = true;
    }

    fn resume(&mut self) {
        self.paused = false;
    }

    async fn close(mut self: Box<Self>) -> Result<(), DriverError> {
        // stdin EOF is the client hanging up: the server shuts down and exits 0.
        drop(self.stdin.take());
        let status = self
            .server
            .wait_within(EXIT_LIMIT)
            .await
            .map_err(|error| self.closed(&error.to_string()))?;
        expect_success(status, &self.log)
    }
}

fn expect_success(status: ExitStatus, log: &StderrLog) -> Result<(), DriverError> {
    if status.success() {
        Ok(())
    } else {
        Err(DriverError::Closed(format!(
            "the server exited with {status}; stderr:\n{}",
            log.tail()
        )))
    }
}

/// The socket of a websocket driver: TCP, or a unix socket.
type Socket = WebSocketStream<Either<TcpStream, UnixStream>>;

/// Where a websocket driver's server listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listener {
    /// `--listen ws://127.0.0.1:0`.
    Tcp,
    /// `--listen unix://HOME/app-server.sock`.
    Unix,
}

/// `tandem app-server --listen ws://127.0.0.1:0` or `--listen unix://PATH`.
pub(crate) struct WebSocketDriver {
    server: ServerProcess,
    /// The URL the server printed (`ws://ADDR` or `unix://PATH`), for [`Driver::reconnect`].
    url: String,
    socket: Socket,
    log: StderrLog,
    paused: bool,
}

/// Connects to `url` (`ws://ADDR` or `unix://PATH`) and upgrades to a websocket.
async fn connect(url: &str) -> Result<Socket, String> {
    let (io, request) = match url.strip_prefix("unix://") {
        Some(path) => (
            Either::Right({
                // A deep checkout's path may be too long for a socket address: the server
                // left a link to a short one there.
                let address = tandem_host::transport::unix_socket::connect_path(Path::new(path))
                    .map_err(|e| e.to_string())?;
                UnixStream::connect(address)
                    .await
                    .map_err(|e| e.to_string())?
            }),
            // The socket is the address; the host is a placeholder.
            "ws://localhost/".to_owned(),
        ),
        None => {
            let address = url.strip_prefix("ws://").unwrap_or(url);
            let tcp = TcpStream::connect(address)
                .await
                .map_err(|e| e.to_string())?;
            tcp.set_nodelay(true).map_err(|e| e.to_string())?;
            (Either::Left(tcp), url.to_owned())
        }
    };
    let (socket, _) = tokio_tungstenite::client_async(request, io)
        .await
        .map_err(|error| error.to_string())?;
    Ok(socket)
}

impl WebSocketDriver {
    pub(crate) async fn start(
        setup: &ServerSetup,
        listener: Listener,
    ) -> Result<Self, DriverError> {
        let listen = match listener {
            Listener::Tcp => "ws://127.0.0.1:0".to_owned(),
            Listener::Unix => format!("unix://{}", setup.home.join("app-server.sock").display()),
        };
        let mut args: Vec<String> = vec!["app-server".into(), "--listen".into(), listen];
        args.extend(app_server_flags(setup));
        args.extend(global_flags(setup));
        let (server, log, url) = spawn_server(&setup.home, args).await?;
        let url = match tokio::time::timeout(LISTEN_LIMIT, url).await {
            Ok(Ok(url)) => url,
            _ => {
                return Err(DriverError::Start(format!(
                    "no `listening on: URL` on stderr within {LISTEN_LIMIT:?}:\n{}",
                    log.tail()
                )));
            }
        };
        let socket = connect(&url)
            .await
            .map_err(|error| DriverError::Start(format!("connecting to {url}: {error}")))?;
        Ok(Self {
            server,
            url,
            socket,
            log,
            paused: false,
        })
    }

    fn closed(&self, what: &str) -> DriverError {
        DriverError::Closed(format!("{what}; server stderr:\n{}", self.log.tail()))
    }
}

#[async_trait]
impl Driver for WebSocketDriver {
    async fn send_raw(&mut self, frame: &[u8]) -> Result<(), DriverError> {
        // Bytes that are not UTF-8 cannot be a text frame; they go as the binary frame a
        // careless client would send.
        let message = match std::str::from_utf8(frame) {
            Ok(text) => Message::text(text),
            Err(_) => Message::binary(frame.to_vec()),
        };
        self.socket
            .send(message)
            .await
            .map_err(|error| self.closed(&format!("sending a frame failed: {error}")))
    }

    async fn recv(&mut self) -> Result<Value, DriverError> {
        if self.paused {
            return Err(DriverError::Paused);
        }
        loop {
            let message = match self.socket.next().await {
                None => return Err(self.closed("the websocket stream ended")),
                Some(Err(error)) => return Err(self.closed(&format!("websocket error: {error}"))),
                Some(Ok(message)) => message,
            };
            match message {
                Message::Text(text) => return parse(text.as_bytes(), &self.log),
                Message::Binary(bytes) => {
                    return Err(DriverError::NotJson {
                        error: "the server sent a binary frame".into(),
                        text: String::from_utf8_lossy(&bytes).into_owned(),
                    });
                }
                Message::Close(frame) => {
                    return Err(self.closed(&format!("the server closed the socket: {frame:?}")));
                }
                // tungstenite answers pings itself.
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
            }
        }
    }

    fn pause(&mut self) {
        self.paused = true;
    }

    fn resume(&mut self) {
        self.paused = false;
    }

    async fn reconnect(&mut self) -> Result<(), DriverError> {
        // Dropped without a closing handshake, as a connection lost to the network is.
        let socket = connect(&self.url)
            .await
            .map_err(|error| self.closed(&format!("reconnecting failed: {error}")))?;
        drop(std::mem::replace(&mut self.socket, socket));
        Ok(())
    }

    async fn close(mut self: Box<Self>) -> Result<(), DriverError> {
        let _ = self.socket.close(None).await;
        // Wait for the server's side of the closing handshake (or the socket's end).
        let drained = tokio::time::timeout(EXIT_LIMIT, async {
            while let Some(Ok(_)) = self.socket.next().await {}
        })
        .await;
        if drained.is_err() {
            return Err(self.closed("the server did not finish the closing handshake"));
        }
        // The listener outlives its connections; stop it as a service manager would.
        let status = self
            .server
            .terminate_within(EXIT_LIMIT)
            .await
            .map_err(|error| self.closed(&error.to_string()))?;
        expect_success(status, &self.log)
    }
}
