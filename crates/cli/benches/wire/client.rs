//! The wire clients: an app-server child driven over its stdin/stdout, or Tandem's websocket
//! listener, with every message encoded by `tandem_protocol::wire::encode_client_message` and
//! every line or frame decoded by `decode_server_message`.
//!
//! Each connection has a dedicated reader thread (blocking on the child's stdout, or on a
//! duplicate of the websocket's socket) that decodes and hands messages over a bounded channel, so reading
//! and decoding overlap the measurement loop, and the loop never waits on a read syscall.
//! Writes are queued and flushed together: a pipelined loop that got several replies at once
//! answers them with one write.
//!
//! Past the handshake, the websocket client frames its messages itself, as the stdio client
//! joins and splits its lines itself: frames masked straight into the write buffer and written
//! to the socket, frames read out of a 1 MiB buffer. Through tungstenite's sink and reader the
//! client's side cost more per message than the stdio client's (a copy of every frame, a lock
//! shared by the two halves, a UTF-8 pass over every text message), and with 64 requests in
//! flight that difference showed in the socket's figures as if it were the server's.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read as _};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tandem_protocol::wire::{self, ClientMessage, DecodeError, ServerMessage};
use tandem_protocol::{
    ClientInfo, ClientNotification, ClientRequest, EmptyParams, InitializeCapabilities,
    InitializeParams, RequestId,
};
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::FrameHeader;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Control, Data, OpCode};
use tokio_util::either::Either;

/// Decoded messages waiting for the measurement loop; the reader blocks beyond this.
const INCOMING_AHEAD: usize = 1024;
/// Bytes of a server's stderr kept to explain a failure.
const STDERR_TAIL: usize = 4096;
/// How long a server may take to print its websocket address, or to exit once asked to.
const SERVER_PATIENCE: Duration = Duration::from_secs(10);

/// What went wrong while driving a server.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    /// The command could not be started.
    #[error("cannot start `{command}`: {source} (is it on PATH and executable?)")]
    Spawn {
        /// The command line.
        command: String,
        /// Why spawning failed.
        source: io::Error,
    },
    /// The connection ended while the benchmark still expected messages.
    #[error("`{command}` closed the connection; its stderr ended with:\n{stderr}")]
    Closed {
        /// The command line.
        command: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// Writing to the server failed.
    #[error("writing to `{command}` failed: {source}")]
    Write {
        /// The command line.
        command: String,
        /// Why writing failed.
        source: io::Error,
    },
    /// The websocket server never said where it listens.
    #[error("`{command}` printed no `listening on: ws://ADDR` line on stderr: {detail}")]
    NoAddress {
        /// The command line.
        command: String,
        /// What was seen instead.
        detail: String,
    },
    /// The websocket handshake failed.
    #[error("cannot connect to {url}: {detail}")]
    Connect {
        /// Where the client tried to connect.
        url: String,
        /// The handshake error.
        detail: String,
    },
    /// The server answered something the benchmark cannot use.
    #[error("`{command}`: {detail}")]
    Protocol {
        /// The command line.
        command: String,
        /// What was wrong, with the offending message.
        detail: String,
    },
}

/// A server child: killed, and its home removed, when dropped.
pub(crate) struct ServerProcess {
    child: Child,
    /// The command line, for messages.
    command: String,
    /// `TANDEM_HOME` and `CODEX_HOME` of the child, and the cwd of the processes it spawns.
    home: PathBuf,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
}

impl ServerProcess {
    /// Starts `argv` with `home` (a fresh empty one if `None`) and piped stdio.
    fn spawn(argv: &[String], home: Option<PathBuf>) -> Result<Self, WireError> {
        let command = argv.join(" ");
        let home = match home {
            Some(home) => home,
            None => fresh_home().map_err(|source| WireError::Spawn {
                command: command.clone(),
                source,
            })?,
        };
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            // Tandem's home and the reference server's: both start empty, so neither reads the
            // user's configuration or threads.
            .env("TANDEM_HOME", &home)
            .env("CODEX_HOME", &home)
            .env_remove("TANDEM_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| WireError::Spawn {
                command: command.clone(),
                source,
            })?;
        Ok(Self {
            child,
            command,
            home,
            stderr_tail: Arc::default(),
        })
    }

    /// Collects stderr on a thread, keeping its tail; `on_line` sees every line first.
    fn collect_stderr(&mut self, mut on_line: impl FnMut(&str) + Send + 'static) {
        let stderr = self.child.stderr.take().expect("stderr is piped");
        let tail = Arc::clone(&self.stderr_tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                on_line(&line);
                let mut tail = tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                tail.extend(line.as_bytes().iter().chain(b"\n"));
                let excess = tail.len().saturating_sub(STDERR_TAIL);
                tail.drain(..excess);
            }
        });
    }

    fn stderr_tail(&self) -> String {
        let tail = self
            .stderr_tail
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        String::from_utf8_lossy(&tail.iter().copied().collect::<Vec<_>>()).into_owned()
    }

    /// Waits for the child to exit on its own, killing it after [`SERVER_PATIENCE`].
    fn wait_or_kill(&mut self) {
        let began = Instant::now();
        while began.elapsed() < SERVER_PATIENCE {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        eprintln!(
            "wire bench: `{}` did not exit within {SERVER_PATIENCE:?}; killing it",
            self.command
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// A fresh, empty directory under the bench's target tmpdir.
pub(crate) fn fresh_home() -> io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "wire-bench-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home)?;
    home.canonicalize()
}

/// Where queued frames go.
enum Outlet {
    Stdio(tokio::process::ChildStdin),
    /// The socket's frames are written straight to its descriptor, as the stdio client writes
    /// its lines, and the close frame too: past the handshake tungstenite is not used, and the
    /// socket is no longer registered with the runtime (see [`WireClient::websocket`]).
    WebSocket(SocketWrites),
}

/// One initialized connection to a server.
pub(crate) struct WireClient {
    server: ServerProcess,
    outlet: Option<Outlet>,
    incoming: mpsc::Receiver<Result<ServerMessage, DecodeError>>,
    /// Encoded lines (stdio) or masked frames (websocket) waiting for [`WireClient::flush`].
    queued_bytes: Vec<u8>,
    /// Websocket: the masked frames' state ([`FrameMasks`]).
    masks: FrameMasks,
    /// Lines or frames that did not decode (skipped; reported when a figure comes out wrong).
    pub(crate) undecodable: u64,
    next_id: i64,
}

impl WireClient {
    /// Starts `argv`, which must serve the protocol on its stdin/stdout, and initializes.
    pub(crate) async fn stdio(argv: &[String]) -> Result<Self, WireError> {
        Self::stdio_with(argv, None).await
    }

    /// [`WireClient::stdio`] with `home` (already filled) as the server's home; it is removed
    /// when the server is gone.
    pub(crate) async fn stdio_in(argv: &[String], home: PathBuf) -> Result<Self, WireError> {
        Self::stdio_with(argv, Some(home)).await
    }

    async fn stdio_with(argv: &[String], home: Option<PathBuf>) -> Result<Self, WireError> {
        let mut server = ServerProcess::spawn(argv, home)?;
        server.collect_stderr(|_| {});
        let stdout = server.child.stdout.take().expect("stdout is piped");
        let stdin = server.child.stdin.take().expect("stdin is piped");
        let stdin =
            tokio::process::ChildStdin::from_std(stdin).map_err(|source| WireError::Spawn {
                command: server.command.clone(),
                source,
            })?;
        let (tx, incoming) = mpsc::channel(INCOMING_AHEAD);
        std::thread::Builder::new()
            .name("wire-bench-stdout".into())
            .spawn(move || read_lines(stdout, &tx))
            .map_err(|source| WireError::Spawn {
                command: server.command.clone(),
                source,
            })?;
        Self::initialize(server, Outlet::Stdio(stdin), incoming).await
    }

    /// Starts `argv` (a websocket listener that prints `listening on: ws://ADDR` on stderr),
    /// connects to it and initializes.
    pub(crate) async fn websocket(argv: &[String]) -> Result<Self, WireError> {
        let mut server = ServerProcess::spawn(argv, None)?;
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        server.collect_stderr(move |line| {
            if let Some(address) = line.trim().strip_prefix("listening on: ") {
                let _ = address_tx.send(address.to_owned());
            }
        });
        let command = server.command.clone();
        let url = tokio::task::spawn_blocking(move || address_rx.recv_timeout(SERVER_PATIENCE))
            .await
            .expect("address wait does not panic")
            .map_err(|_| WireError::NoAddress {
                command: command.clone(),
                detail: server.stderr_tail(),
            })?;
        let connect_error = |detail: String| WireError::Connect {
            url: url.clone(),
            detail,
        };
        let (io, request) = match url.strip_prefix("unix://") {
            Some(path) => (
                Either::Right(
                    UnixStream::connect(path)
                        .await
                        .map_err(|error| connect_error(error.to_string()))?,
                ),
                // The socket is the address; the host is a placeholder.
                "ws://localhost/".to_owned(),
            ),
            None => {
                let address = url.strip_prefix("ws://").unwrap_or(&url);
                let stream = TcpStream::connect(address)
                    .await
                    .map_err(|error| connect_error(error.to_string()))?;
                // Small frames must leave at once, as on a pipe.
                let _ = stream.set_nodelay(true);
                (Either::Left(stream), url.clone())
            }
        };
        // Any size: the memory figure's messages carry a turn's whole input (tens of MiB, in
        // one frame), past tungstenite's default 16 MiB frame limit.
        let config = WebSocketConfig::default()
            .max_message_size(None)
            .max_frame_size(None);
        let (socket, _) = tokio_tungstenite::client_async_with_config(request, io, Some(config))
            .await
            .map_err(|error| connect_error(error.to_string()))?;
        // Past the handshake the socket leaves the runtime: a registered socket's readiness
        // wakes a parked worker of the bench's runtime whenever the server writes (input) or
        // reads (a unix socket reports room again on every read of its peer while its send
        // buffer is under a quarter full), wake-ups for nothing that the stdio client, whose
        // child stdout is read by a thread and whose stdin pipe reports room only once it was
        // full, never pays. Nothing was read past the handshake's answer, since the server
        // speaks only when spoken to.
        let socket: OwnedFd = match socket.into_inner() {
            Either::Left(tcp) => tcp.into_std().map(OwnedFd::from),
            Either::Right(unix) => unix.into_std().map(OwnedFd::from),
        }
        .map_err(|error| connect_error(error.to_string()))?;
        // Read by a thread of its own, as the stdio client's child stdout is: the measurement
        // loop and the server are compared transport against transport, not reader against
        // reader. The thread reads a duplicate of the socket; the loop writes to the other.
        let duplicate = socket
            .try_clone()
            .map_err(|error| connect_error(error.to_string()))?;
        let (tx, incoming) = mpsc::channel(INCOMING_AHEAD);
        std::thread::Builder::new()
            .name("wire-bench-socket".into())
            .spawn(move || read_frames(duplicate, &tx))
            .map_err(|error| connect_error(error.to_string()))?;
        let outlet = Outlet::WebSocket(SocketWrites(socket));
        Self::initialize(server, outlet, incoming).await
    }

    async fn initialize(
        server: ServerProcess,
        outlet: Outlet,
        incoming: mpsc::Receiver<Result<ServerMessage, DecodeError>>,
    ) -> Result<Self, WireError> {
        let mut client = Self {
            server,
            outlet: Some(outlet),
            incoming,
            queued_bytes: Vec::new(),
            masks: FrameMasks::new(),
            undecodable: 0,
            next_id: 0,
        };
        let id = RequestId::Integer(client.next_request_id());
        client.queue(&ClientMessage::Request(ClientRequest::Initialize {
            request_id: id.clone(),
            params: initialize_params(),
        }));
        client.flush().await?;
        loop {
            match client.next().await? {
                ServerMessage::Response { id: answered, .. } if answered == id => break,
                ServerMessage::Error { error, .. } => {
                    return Err(client.protocol_error(format!("initialize failed: {error}")));
                }
                // The reference server sends notifications of its own (config warnings).
                _ => {}
            }
        }
        client.queue(&ClientMessage::Notification(
            ClientNotification::Initialized(EmptyParams {}),
        ));
        client.flush().await?;
        Ok(client)
    }

    /// The id for the next request: one counter per connection, so consecutive calls give
    /// consecutive integers.
    pub(crate) fn next_request_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// The server child's process id (its memory is read from `/proc/PID`).
    pub(crate) fn server_pid(&self) -> u32 {
        self.server.child.id()
    }

    /// The server's home: an absolute directory, the `cwd` of the processes it spawns.
    pub(crate) fn home(&self) -> &Path {
        &self.server.home
    }

    /// Encodes `message` for the next [`WireClient::flush`].
    pub(crate) fn queue(&mut self, message: &ClientMessage) {
        match self.outlet {
            Some(Outlet::Stdio(_)) | None => {
                wire::encode_client_message(message, &mut self.queued_bytes)
                    .expect("the benchmark's requests encode");
                self.queued_bytes.push(b'\n');
            }
            Some(Outlet::WebSocket(_)) => {
                // Room for the longest header (14 bytes), then the message, then the header
                // moved in front of it once its length is known.
                let start = self.queued_bytes.len();
                self.queued_bytes.extend_from_slice(&[0; 14]);
                wire::encode_client_message(message, &mut self.queued_bytes)
                    .expect("the benchmark's requests encode");
                self.masks
                    .frame(OpCode::Data(Data::Text), &mut self.queued_bytes, start);
            }
        }
    }

    /// Writes everything queued.
    pub(crate) async fn flush(&mut self) -> Result<(), WireError> {
        let written = match self.outlet.as_mut() {
            Some(Outlet::Stdio(stdin)) => {
                let written = stdin.write_all(&self.queued_bytes).await;
                self.queued_bytes.clear();
                written
            }
            Some(Outlet::WebSocket(socket)) => {
                let written = socket.write_all(&self.queued_bytes);
                self.queued_bytes.clear();
                written
            }
            None => Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the connection is closed",
            )),
        };
        written.map_err(|source| WireError::Write {
            command: self.server.command.clone(),
            source,
        })
    }

    /// The next decoded message, waiting for it.
    pub(crate) async fn next(&mut self) -> Result<ServerMessage, WireError> {
        loop {
            match self.incoming.recv().await {
                Some(Ok(message)) => return Ok(message),
                Some(Err(_)) => self.undecodable += 1,
                None => {
                    return Err(WireError::Closed {
                        command: self.server.command.clone(),
                        stderr: self.server.stderr_tail(),
                    });
                }
            }
        }
    }

    /// The next decoded message if one has arrived already.
    pub(crate) fn try_next(&mut self) -> Option<ServerMessage> {
        loop {
            match self.incoming.try_recv() {
                Ok(Ok(message)) => return Some(message),
                Ok(Err(_)) => self.undecodable += 1,
                Err(_) => return None,
            }
        }
    }

    /// An error naming this server.
    pub(crate) fn protocol_error(&self, detail: String) -> WireError {
        WireError::Protocol {
            command: self.server.command.clone(),
            detail,
        }
    }

    /// Ends the session the way each transport does (stdin EOF; a close frame, then SIGTERM,
    /// since a websocket listener outlives its connections) and waits for the server to exit.
    pub(crate) async fn close(mut self) {
        match self.outlet.take() {
            Some(Outlet::Stdio(stdin)) => drop(stdin),
            Some(Outlet::WebSocket(mut socket)) => {
                // A close frame with status 1000 (normal closure).
                let mut frame = vec![0; 14];
                frame.extend_from_slice(&1000u16.to_be_bytes());
                self.masks
                    .frame(OpCode::Control(Control::Close), &mut frame, 0);
                let _ = socket.write_all(&frame);
                let pid = nix::unistd::Pid::from_raw(
                    i32::try_from(self.server.child.id()).expect("pids fit in i32"),
                );
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            }
            None => {}
        }
        let mut server = self.server;
        tokio::task::spawn_blocking(move || server.wait_or_kill())
            .await
            .expect("waiting for the server does not panic");
    }
}

/// A client's text frames (RFC 6455 section 5.2), masked as a client's must be, each with a
/// key of its own from a xorshift generator seeded from the clock: the keys only have to
/// differ, not to be secret, between this bench and a server on the same machine.
struct FrameMasks {
    state: u64,
}

impl FrameMasks {
    fn new() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9_7F4A_7C15, |since| since.as_nanos() as u64);
        Self { state: seed | 1 }
    }

    fn next_key(&mut self) -> [u8; 4] {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        (self.state as u32).to_le_bytes()
    }

    /// Turns `buffer[start..]`, 14 bytes of room then a payload, into one masked final frame
    /// of `opcode`.
    fn frame(&mut self, opcode: OpCode, buffer: &mut Vec<u8>, start: usize) {
        let payload = buffer.len() - start - 14;
        let key = self.next_key();
        let header = FrameHeader {
            is_final: true,
            opcode,
            mask: Some(key),
            ..FrameHeader::default()
        };
        let used = header.len(payload as u64);
        // The header goes right before the payload; the unused room is cut out.
        let gap = 14 - used;
        header
            .format(payload as u64, &mut &mut buffer[start + gap..start + 14])
            .expect("the header fits its room");
        for (index, byte) in buffer[start + 14..].iter_mut().enumerate() {
            *byte ^= key[index % 4];
        }
        buffer.drain(start..start + gap);
    }
}

/// `initialize` as both servers accept it: `clientInfo` is required by the reference, and
/// `process/spawn` is experimental on both.
pub(crate) fn initialize_params() -> InitializeParams {
    InitializeParams {
        client_info: ClientInfo {
            name: "tandem-wire-bench".into(),
            title: None,
            version: env!("CARGO_PKG_VERSION").into(),
        },
        capabilities: Some(InitializeCapabilities {
            experimental_api: true,
            opt_out_notification_methods: None,
        }),
    }
}

/// The stdio reader thread: one line, one decoded message, until EOF or nobody listens.
fn read_lines(stdout: ChildStdout, tx: &mpsc::Sender<Result<ServerMessage, DecodeError>>) {
    let mut reader = BufReader::with_capacity(1024 * 1024, stdout);
    let mut line = Vec::with_capacity(128 * 1024);
    loop {
        line.clear();
        match read_line(&mut reader, &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let frame = line.strip_suffix(b"\n").unwrap_or(&line);
        if frame.is_empty() {
            continue;
        }
        if tx
            .blocking_send(wire::decode_server_message(frame))
            .is_err()
        {
            return;
        }
    }
}

fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<usize> {
    loop {
        match reader.read_until(b'\n', line) {
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// The websocket reader thread: one message (a frame, or a text frame and its continuations),
/// one decoded message, until a close frame or the connection's end. The frames are read here,
/// not by tungstenite, for the same reason the stdio reader splits lines itself: the client's
/// side costs what the stdio client's does, one copy out of a large read buffer, so the figures
/// compare the servers' transports (tungstenite's reader checks every text message's UTF-8, a
/// pass over every byte that the JSON decoder makes again, and a stdio line never gets).
fn read_frames(socket: OwnedFd, tx: &mpsc::Sender<Result<ServerMessage, DecodeError>>) {
    let mut reader = BufReader::with_capacity(1024 * 1024, BlockingSocket(socket));
    let mut message = Vec::with_capacity(128 * 1024);
    let mut head = Vec::with_capacity(14);
    loop {
        // The header a byte at a time out of the read buffer, until tungstenite's parser has
        // all of it (2 to 14 bytes).
        head.clear();
        let (header, length) = loop {
            match FrameHeader::parse(&mut io::Cursor::new(&head)) {
                Ok(Some(parsed)) => break parsed,
                Ok(None) => {
                    let mut byte = [0u8];
                    if reader.read_exact(&mut byte).is_err() {
                        return;
                    }
                    head.push(byte[0]);
                }
                Err(_) => return,
            }
        };
        // A server's frames are never masked (RFC 6455 section 5.1).
        let (None, Ok(length)) = (header.mask, usize::try_from(length)) else {
            return;
        };
        match header.opcode {
            OpCode::Data(Data::Text | Data::Binary | Data::Continue) => {
                let had = message.len();
                message.resize(had + length, 0);
                if reader.read_exact(&mut message[had..]).is_err() {
                    return;
                }
                if header.is_final {
                    let decoded = wire::decode_server_message(&message);
                    message.clear();
                    if tx.blocking_send(decoded).is_err() {
                        return;
                    }
                }
            }
            OpCode::Control(Control::Close) => return,
            // Ping and pong (the server sends none), reserved opcodes: skipped.
            _ => {
                if io::copy(&mut (&mut reader).take(length as u64), &mut io::sink()).is_err() {
                    return;
                }
            }
        }
    }
}

/// A socket read as if it blocked: `poll` for input whenever it has none (the socket came
/// out of the runtime non-blocking, and the flag is shared by its duplicates).
struct BlockingSocket(OwnedFd);

impl io::Read for BlockingSocket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match rustix::io::read(&self.0, &mut *buf) {
                Ok(read) => return Ok(read),
                Err(rustix::io::Errno::AGAIN) => wait_for(&self.0, rustix::event::PollFlags::IN)?,
                Err(rustix::io::Errno::INTR) => {}
                Err(error) => return Err(error.into()),
            }
        }
    }
}

/// The measurement loop's side of a socket that left the runtime: frames written with plain
/// system calls, waiting in `poll` when the socket is full. A write of a few requests never
/// waits; a large one waits as the stdio client's write to a full pipe does, while the reader
/// thread goes on draining the server's answers.
struct SocketWrites(OwnedFd);

impl SocketWrites {
    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match rustix::io::write(&self.0, bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(written) => bytes = &bytes[written..],
                Err(rustix::io::Errno::AGAIN) => wait_for(&self.0, rustix::event::PollFlags::OUT)?,
                Err(rustix::io::Errno::INTR) => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }
}

/// Waits in `poll` until `socket` is ready for `wanted` (a non-blocking socket used as if it
/// blocked).
fn wait_for(socket: &OwnedFd, wanted: rustix::event::PollFlags) -> io::Result<()> {
    let mut wanted = [rustix::event::PollFd::new(socket, wanted)];
    match rustix::event::poll(&mut wanted, None) {
        Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
        Err(error) => Err(error.into()),
    }
}
