//! `tandem app-server`: the reference server out of process, launched the way clients of other
//! app-servers launch theirs: `--listen stdio://` (the default) serves one client on
//! stdin/stdout, `--listen ws://IP:PORT` serves websocket clients, `--listen unix://PATH` (or
//! `unix://`, a path under the home) serves the same websocket protocol on a unix socket.
//!
//! The end of stdin, SIGTERM, SIGINT and SIGHUP (a closed terminal or ssh session) all shut
//! down the same way: no new work is read, what is owed to each client is written (for a
//! moment at most; nothing owed, no wait), then the processor's shutdown interrupts running
//! turns, kills every process group the server started and writes what it must, each stage
//! bounded, and the binary exits 0 within a few seconds.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use tandem_host::MessageProcessor;
use tandem_host::transport::unix_socket;
use tandem_host::transport::websocket::{self, BearerToken, WebSocketOptions};
use tandem_host::transport::{TransportHost, TransportHostOptions, stdio};
use tandem_server::TandemServer;

use crate::settings::GlobalOptions;
use crate::shutdown_deadline;

/// Each shutdown stage of the host may take this long; three stages plus the writer's last
/// flush stay within the 5 s a client (or a service manager) waits.
const SHUTDOWN_STAGE_TIMEOUT: Duration = Duration::from_secs(1);

/// Reported for usage errors found after parsing (clap uses the same code for its own).
const USAGE_EXIT_CODE: i32 = 2;

pub(crate) const AFTER_HELP: &str = "\
Transports:
  stdio://       one client on stdin/stdout, one JSON object per line (the default). The end
                 of stdin shuts the server down.
  ws://IP:PORT   websocket clients, one JSON object per text frame; port 0 picks a free port.
                 The bound address is printed on stderr as `listening on: ws://ADDR`.
                 GET /readyz and /healthz answer 200; requests with an Origin header get 403.
                 A non-loopback address requires --ws-auth.
  unix://PATH    the websocket protocol over a unix socket at PATH (mode 0600), as the
                 reference's --listen unix:// serves it; `unix://` alone uses
                 $TANDEM_HOME/app-server-control/app-server-control.sock. A live server's socket
                 is refused (naming its pid), a stale one replaced; a path longer than a socket
                 address holds (107 bytes) becomes a link to a short private path.
                 The path is printed on stderr as `listening on: unix://PATH`.

Daemon and proxies:
  tandem app-server daemon start|stop|status|restart runs one server per TANDEM_HOME in the
  background on unix://, logging to $TANDEM_HOME/app-server-control/daemon.log.
  tandem app-server proxy [--lines] bridges stdio to it (starting it when none runs): raw bytes
  (websocket over stdio, as the reference's proxy) or, with --lines, JSON lines (for clients
  that launch `tandem app-server` as a child).

Shutdown:
  End of stdin (stdio), SIGTERM, SIGINT or SIGHUP: no new requests are read, what is owed to
  clients is written (at most 250 ms; an idle server does not wait), running turns are
  interrupted and stored, every process the server started is killed, and tandem exits 0
  within 5 s. A shutdown stuck past 8 s (a bug) is reported on stderr and ends with exit 70.

Slow clients:
  Each connection's writer queue holds at most --ws-writer-queue messages (websocket) and
  --writer-queue-bytes bytes. Over stdio a full queue holds the server back. A websocket
  connection keeps what does not fit in a backlog for as long as its client reads; it is
  closed with code 1008 when its client takes no bytes for --ws-slow-grace-secs, or at once
  when the backlog outgrows 7 more queues (in bytes, 7 x the larger of --writer-queue-bytes
  and --max-message-bytes). Nothing is dropped while a connection lives.

Reconnecting clients:
  Every notification to a thread's subscribers carries a cursor. The newest
  --replay-window-events events (and at most --replay-window-bytes bytes) of each loaded
  thread are kept: thread/resume with the last cursor a client saw replays what it missed,
  or answers gap: true with the whole thread when they are gone. The process/spawn
  processes of a closed connection keep running for --process-detach-grace-secs: a new
  connection takes them over with process/resume and gets the output it missed.

Environment:
  TANDEM_HOME  the server's home directory (threads database, config.toml)
  TANDEM_LOG   a tracing filter for tandem's logs on stderr (default: warn). A thread of
               their own writes them from a 1 MiB queue: a stderr nobody reads costs the
               lines past it (counted, and reported once stderr is read), never the server

Examples:
  tandem app-server
  tandem app-server --listen ws://127.0.0.1:4500 --ws-auth capability-token --ws-token-file ~/.tandem-token
  tandem -c thread_unload_delay_secs=5 app-server";

/// Options of `tandem app-server`.
#[derive(Debug, Args)]
pub(crate) struct AppServerArgs {
    #[command(subcommand)]
    command: Option<AppServerCommand>,
    /// Where to serve: `stdio://`, `ws://IP:PORT`, `unix://PATH` or `unix://`.
    #[arg(long, value_name = "URL", default_value = "stdio://", value_parser = parse_listen)]
    listen: Listen,
    /// Websocket authentication.
    #[arg(long, value_enum, value_name = "MODE")]
    ws_auth: Option<WsAuth>,
    /// File holding the capability token (with --ws-auth capability-token); it must be
    /// private to its owner (`chmod 600`), else it is refused.
    #[arg(long, value_name = "PATH", conflicts_with = "ws_token_sha256")]
    ws_token_file: Option<PathBuf>,
    /// Hex SHA-256 digest of the capability token (with --ws-auth capability-token).
    #[arg(long, value_name = "HEX")]
    ws_token_sha256: Option<String>,
    /// Largest accepted stdio line or websocket message, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = stdio::DEFAULT_MAX_LINE_BYTES)]
    max_message_bytes: usize,
    /// Capacity of the server's bounded queues (processor, outgoing, reply lanes).
    #[arg(long, value_name = "N", default_value_t = tandem_host::DEFAULT_IN_PROCESS_CHANNEL_CAPACITY)]
    channel_capacity: usize,
    /// Messages queued for one websocket connection's writer.
    #[arg(long, value_name = "N", default_value_t = websocket::DEFAULT_WRITER_QUEUE_CAPACITY)]
    ws_writer_queue: usize,
    /// Seconds a websocket client may take no bytes, while it is sent something, before its
    /// connection is closed.
    #[arg(long, value_name = "SECS", default_value_t = websocket::DEFAULT_SLOW_CONNECTION_GRACE.as_secs_f64())]
    ws_slow_grace_secs: f64,
    /// Bytes (encoded) queued for one connection's writer (stdio or websocket) before the queue
    /// counts as full.
    #[arg(long, value_name = "BYTES", default_value_t = tandem_host::transport::DEFAULT_WRITER_QUEUE_BYTES)]
    writer_queue_bytes: usize,
    /// Events of each loaded thread kept for clients that resume from a cursor.
    #[arg(long, value_name = "N", default_value_t = tandem_host::DEFAULT_REPLAY_WINDOW_EVENTS)]
    replay_window_events: usize,
    /// Bytes (JSON) of each loaded thread's events kept for clients that resume from a cursor.
    #[arg(long, value_name = "BYTES", default_value_t = tandem_host::DEFAULT_REPLAY_WINDOW_BYTES)]
    replay_window_bytes: usize,
    /// Seconds a thread's approval (or other server request) waits for a client to answer it
    /// once every connection subscribed to the thread has gone; then it is declined.
    #[arg(long, value_name = "SECS", default_value_t = tandem_host::DEFAULT_UNANSWERED_REQUEST_TIMEOUT.as_secs_f64())]
    unanswered_request_secs: f64,
    /// Seconds the `process/spawn` processes of a closed connection keep running for a new
    /// connection to take them over with `process/resume`; then they are killed.
    #[arg(long, value_name = "SECS", default_value_t = tandem_server::DEFAULT_PROCESS_DETACH_GRACE.as_secs_f64())]
    process_detach_grace_secs: f64,
    /// Write stderr (every log line, at level info unless TANDEM_LOG says otherwise) to PATH
    /// instead, rotated past 10 MiB (PATH.1 to PATH.3 kept), as the daemon does.
    #[arg(long, value_name = "PATH")]
    log_file: Option<PathBuf>,
    /// Shut down (as on SIGTERM) after SECS with no connection open (websocket and unix
    /// socket; the daemon's --idle-exit-mins).
    #[arg(long, value_name = "SECS")]
    idle_exit_secs: Option<f64>,
}

impl AppServerArgs {
    /// Whether the server logs to a file (then at level info by default: nobody watches it
    /// live, and it is what a daemon's user reads afterwards).
    pub(crate) fn logs_to_file(&self) -> bool {
        self.log_file.is_some() && self.command.is_none()
    }
}

#[derive(Debug, Subcommand)]
enum AppServerCommand {
    /// Run one server per TANDEM_HOME in the background on its unix socket
    /// (`$TANDEM_HOME/app-server-control/app-server-control.sock`): start, stop, status,
    /// restart.
    Daemon(crate::daemon::DaemonArgs),
    /// Bridge stdio to the daemon's socket, starting the daemon when none runs: raw bytes (the
    /// client speaks the websocket protocol, as through the reference's proxy) or, with
    /// --lines, the stdio transport's JSON lines (any client that launches `tandem app-server`
    /// as a child shares the daemon unchanged).
    Proxy(crate::proxy::ProxyArgs),
    /// Write the JSON Schema (draft-07) of every protocol message and type into DIR: one
    /// bundle, `tandem_protocol.schema.json`, and one self-contained file per type.
    GenerateJsonSchema(GenerateArgs),
    /// Write TypeScript types of every protocol message and type into DIR: one file per type
    /// and an `index.ts`.
    GenerateTs(GenerateArgs),
}

#[derive(Debug, Args)]
struct GenerateArgs {
    /// The directory to write into (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Include the experimental methods, fields and notifications.
    #[arg(long)]
    experimental: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum WsAuth {
    /// `Authorization: Bearer <token>` at the upgrade.
    CapabilityToken,
}

#[derive(Debug, Clone)]
enum Listen {
    Stdio,
    WebSocket(SocketAddr),
    /// A unix socket at this path; `None`: the default under the home.
    Unix(Option<PathBuf>),
}

/// The default socket of `--listen unix://` under `home`: the reference's layout, in a
/// directory only the user can enter.
pub(crate) fn default_socket_path(home: &std::path::Path) -> PathBuf {
    home.join("app-server-control")
        .join("app-server-control.sock")
}

fn parse_listen(text: &str) -> Result<Listen, String> {
    if matches!(text, "stdio://" | "stdio") {
        return Ok(Listen::Stdio);
    }
    if let Some(path) = text.strip_prefix("unix://") {
        return match path {
            "" => Ok(Listen::Unix(None)),
            path if path.starts_with('/') => Ok(Listen::Unix(Some(PathBuf::from(path)))),
            _ => Err(format!(
                "expected unix://ABSOLUTE-PATH (e.g. unix:///run/user/1000/tandem.sock) or unix://, \
                 got {text}"
            )),
        };
    }
    let Some(address) = text.strip_prefix("ws://") else {
        return Err("expected stdio://, ws://IP:PORT, unix://PATH or unix://".to_owned());
    };
    address
        .trim_end_matches('/')
        .parse()
        .map(Listen::WebSocket)
        .map_err(|_| {
            format!(
                "expected ws://IP:PORT with an IP literal (e.g. ws://127.0.0.1:4500), got {text}"
            )
        })
}

pub(crate) async fn run(args: AppServerArgs, global: GlobalOptions) -> i32 {
    match args.command {
        Some(AppServerCommand::Daemon(daemon)) => return crate::daemon::run(daemon, global).await,
        Some(AppServerCommand::Proxy(proxy)) => return crate::proxy::run(proxy, global).await,
        Some(AppServerCommand::GenerateJsonSchema(args)) => {
            return generate(tandem_protocol::schema::write_json_schema(
                &args.out,
                args.experimental,
            ));
        }
        Some(AppServerCommand::GenerateTs(args)) => {
            return generate(tandem_protocol::schema::write_typescript(
                &args.out,
                args.experimental,
            ));
        }
        None => {}
    }
    if let Some(path) = &args.log_file {
        // First, so that a configuration error lands in the log its reader looks at.
        if let Err(error) = crate::daemon::log_file::redirect_stderr(path) {
            eprintln!("tandem app-server: --log-file {}: {error}", path.display());
            return 1;
        }
        crate::daemon::log_file::spawn_rotation(path.clone());
    }
    global.warn_unknown_features();
    let auth = match websocket_auth(&args) {
        Ok(auth) => auth,
        Err(message) => {
            eprintln!("tandem app-server: {message}");
            return USAGE_EXIT_CODE;
        }
    };
    if let Listen::WebSocket(address) = &args.listen
        && auth.is_none()
        && !address.ip().is_loopback()
    {
        eprintln!(
            "tandem app-server: refusing to listen on ws://{address} without authentication: \
             pass --ws-auth capability-token with --ws-token-file PATH or --ws-token-sha256 HEX, \
             or listen on a loopback address"
        );
        return USAGE_EXIT_CODE;
    }
    let options = match tokio::task::spawn_blocking(move || global.server_options()).await {
        Ok(Ok(options)) => options,
        Ok(Err(error)) => {
            eprintln!("tandem app-server: {error}");
            return 1;
        }
        Err(error) => {
            eprintln!("tandem app-server: loading the configuration failed: {error}");
            return 1;
        }
    };
    let home = options.config.tandem_home.clone();
    let options = options.with_process_detach_grace(
        Duration::try_from_secs_f64(args.process_detach_grace_secs.max(0.0))
            .unwrap_or(Duration::MAX),
    );
    let host_options = TransportHostOptions {
        channel_capacity: args.channel_capacity,
        shutdown_stage_timeout: SHUTDOWN_STAGE_TIMEOUT,
        writer_queue_bytes: args.writer_queue_bytes,
        replay_window: tandem_host::ReplayWindowLimits {
            max_events: args.replay_window_events,
            max_bytes: args.replay_window_bytes,
        },
        unanswered_request_timeout: std::time::Duration::try_from_secs_f64(
            args.unanswered_request_secs.max(0.0),
        )
        .unwrap_or(std::time::Duration::MAX),
        ..TransportHostOptions::default()
    };
    crate::allocator::return_freed_memory();
    let host = TransportHost::start(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        host_options,
    );
    // The websocket protocol's settings, over TCP or a unix socket.
    let socket_options = WebSocketOptions {
        auth,
        max_message_bytes: args.max_message_bytes,
        writer_queue_capacity: args.ws_writer_queue,
        slow_connection_grace: Duration::from_secs_f64(args.ws_slow_grace_secs.max(0.0)),
    };
    let idle_exit = args
        .idle_exit_secs
        .and_then(|secs| Duration::try_from_secs_f64(secs.max(0.0)).ok());
    let served = match args.listen {
        Listen::Stdio => {
            let options = stdio::StdioOptions {
                max_line_bytes: args.max_message_bytes,
            };
            until_signal(&host, None, stdio::serve(&host, options)).await
        }
        Listen::WebSocket(address) => match websocket::bind(address).await {
            Ok((listener, bound)) => {
                eprintln!("listening on: ws://{bound}");
                until_signal(
                    &host,
                    idle_exit,
                    websocket::serve(host.clone(), listener, socket_options),
                )
                .await
            }
            Err(error) => Err(std::io::Error::new(
                error.kind(),
                format!("cannot listen on ws://{address}: {error}"),
            )),
        },
        Listen::Unix(path) => {
            let path = path.unwrap_or_else(|| default_socket_path(&home));
            match unix_socket::bind(&path).await {
                Ok(listener) => {
                    eprintln!("listening on: unix://{}", path.display());
                    until_signal(
                        &host,
                        idle_exit,
                        websocket::serve_unix(host.clone(), listener, socket_options),
                    )
                    .await
                }
                Err(error) => Err(std::io::Error::other(format!(
                    "cannot listen on unix://{}: {error}",
                    path.display()
                ))),
            }
        }
    };
    shutdown_deadline::arm("app-server", shutdown_deadline::APP_SERVER);
    host.shutdown().await;
    match served {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("tandem app-server: {error}");
            1
        }
    }
}

/// Runs `serve` until it returns, SIGTERM, SIGINT or SIGHUP arrives, or (with `idle_exit`) no
/// connection was open for that long; a signal or the idle exit stops the host, which ends
/// `serve` too.
async fn until_signal(
    host: &TransportHost,
    idle_exit: Option<Duration>,
    serve: impl Future<Output = std::io::Result<()>>,
) -> std::io::Result<()> {
    let mut signals = crate::signals::ShutdownSignals::install()?;
    tokio::pin!(serve);
    let idle = async {
        match idle_exit {
            Some(limit) => idle_for(host, limit).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        served = &mut serve => served,
        name = signals.recv() => {
            tracing::info!("{name}: shutting down");
            shutdown_deadline::arm("app-server", shutdown_deadline::APP_SERVER);
            host.shutdown().await;
            Ok(())
        }
        () = idle => {
            tracing::info!(idle_secs = idle_exit.unwrap_or_default().as_secs_f64(), "no connection for the idle limit: shutting down");
            shutdown_deadline::arm("app-server", shutdown_deadline::APP_SERVER);
            host.shutdown().await;
            Ok(())
        }
    }
}

/// Resolves once `host` had no open connection for `limit` without a break (checked every
/// second: an idle exit is minutes, not milliseconds).
async fn idle_for(host: &TransportHost, limit: Duration) {
    let mut idle_since = None;
    let step = Duration::from_secs(1).min(limit.max(Duration::from_millis(50)));
    loop {
        if host.open_connections() == 0 {
            let since = *idle_since.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() >= limit {
                return;
            }
        } else {
            idle_since = None;
        }
        tokio::time::sleep(step).await;
    }
}

fn websocket_auth(args: &AppServerArgs) -> Result<Option<BearerToken>, String> {
    let token_given = args.ws_token_file.is_some() || args.ws_token_sha256.is_some();
    match args.ws_auth {
        None if token_given => {
            Err("--ws-token-file and --ws-token-sha256 need --ws-auth capability-token".to_owned())
        }
        None => Ok(None),
        Some(WsAuth::CapabilityToken) => {
            if let Some(path) = &args.ws_token_file {
                let text = tandem_client::read_token_file(path)
                    .map_err(|error| format!("--ws-token-file: {error}"))?;
                BearerToken::from_token(&text)
                    .map(Some)
                    .map_err(|error| format!("--ws-token-file {}: {error}", path.display()))
            } else if let Some(hex) = &args.ws_token_sha256 {
                BearerToken::from_sha256_hex(hex)
                    .map(Some)
                    .map_err(|error| format!("--ws-token-sha256: {error}"))
            } else {
                Err("--ws-auth capability-token needs --ws-token-file PATH or --ws-token-sha256 HEX"
                    .to_owned())
            }
        }
    }
}

/// Reports what writing the bindings generated from the tandem-protocol types did
/// (deterministic output).
fn generate<E: std::fmt::Display>(written: Result<Vec<PathBuf>, E>) -> i32 {
    match written {
        Ok(files) => {
            eprintln!("wrote {} files", files.len());
            0
        }
        Err(error) => {
            eprintln!("tandem app-server: {error}");
            1
        }
    }
}
