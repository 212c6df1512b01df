//! `tandem app-server daemon start|stop|status|restart`: one server per `TANDEM_HOME`, in the
//! background, on the home's unix socket, so that every editor window and terminal shares it
//! (and its threads) instead of each starting its own.
//!
//! The daemon is `tandem app-server --listen unix:// --log-file HOME/app-server-control/daemon.log`
//! started in a process group of its own with stdin closed; everything else is the socket's:
//! its lock file names the live owner (so two daemons never run, and `status` and `stop` find
//! it), and its `GET /status` route gives the uptime and the open connections. `stop` is
//! SIGTERM, the same clean shutdown as for any server: turns stored, children gone.

pub(crate) mod log_file;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use tandem_host::transport::unix_socket;

use crate::app_server::default_socket_path;
use crate::settings::GlobalOptions;

/// How long `start` waits for a new daemon to listen.
const START_LIMIT: Duration = Duration::from_secs(30);
/// How long `stop` waits for the daemon to exit after SIGTERM (its shutdown takes at most 5 s).
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// `tandem app-server daemon ...`.
#[derive(Debug, Args)]
pub(crate) struct DaemonArgs {
    #[command(subcommand)]
    command: DaemonCommand,
}

#[derive(Debug, Subcommand)]
enum DaemonCommand {
    /// Start the daemon of this TANDEM_HOME unless it runs; print its pid and socket.
    Start(StartArgs),
    /// Stop the daemon (SIGTERM: running turns are stored, its processes killed).
    Stop,
    /// Print the daemon's pid, socket, uptime, open connections and loaded threads; exit 3
    /// when none runs.
    Status,
    /// Stop the daemon if it runs, then start it.
    Restart(StartArgs),
}

/// Options of `daemon start` and `daemon restart`.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct StartArgs {
    /// Exit after this many minutes with no connection (default: never).
    #[arg(long, value_name = "MINUTES")]
    idle_exit_mins: Option<f64>,
}

/// Why a daemon command failed; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DaemonError {
    #[error("cannot find the home directory: {0}")]
    Home(String),
    #[error("cannot start the daemon ({program}): {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("the daemon exited before it listened ({status}); its log, {log}, says why:\n{tail}")]
    Died {
        status: std::process::ExitStatus,
        log: PathBuf,
        tail: String,
    },
    #[error("the daemon did not listen on {socket} within {limit:?}; see its log, {log}")]
    Slow {
        socket: PathBuf,
        limit: Duration,
        log: PathBuf,
    },
    #[error("the daemon (pid {pid}) did not exit within {limit:?} of SIGTERM; kill -9 {pid}")]
    Stuck { pid: i32, limit: Duration },
    #[error("cannot signal the daemon (pid {pid}): {source}")]
    Signal { pid: i32, source: nix::Error },
    #[error("cannot ask the daemon on {socket} for its status: {reason}")]
    Status { socket: PathBuf, reason: String },
}

/// Where a home's daemon lives.
#[derive(Debug, Clone)]
pub(crate) struct DaemonPaths {
    /// The socket clients connect to.
    pub(crate) socket: PathBuf,
    /// The daemon's log (rotated beside it: `.1`, `.2`, `.3`).
    pub(crate) log: PathBuf,
}

impl DaemonPaths {
    /// The paths of the daemon of `home`.
    pub(crate) fn of_home(home: &Path) -> Self {
        let socket = default_socket_path(home);
        let log = socket.with_file_name("daemon.log");
        Self { socket, log }
    }

    /// The paths of the daemon of the home `global` names (`TANDEM_HOME` or the default),
    /// created if missing.
    pub(crate) fn resolve(global: &GlobalOptions) -> Result<Self, DaemonError> {
        let config = global
            .config_builder()
            .map_err(|error| DaemonError::Home(error.to_string()))?
            .load()
            .map_err(|error| DaemonError::Home(error.to_string()))?;
        Ok(Self::of_home(&config.tandem_home))
    }
}

/// What a running daemon reports.
#[derive(Debug)]
pub(crate) struct DaemonStatus {
    pub(crate) pid: i32,
    pub(crate) uptime_secs: u64,
    pub(crate) connections: u64,
}

pub(crate) async fn run(args: DaemonArgs, global: GlobalOptions) -> i32 {
    let paths = match DaemonPaths::resolve(&global) {
        Ok(paths) => paths,
        Err(error) => {
            eprintln!("tandem app-server daemon: {error}");
            return 1;
        }
    };
    let outcome = match args.command {
        DaemonCommand::Start(start) => start_daemon(&paths, &global, &start).await.map(|started| {
            print_started(&paths, started);
            0
        }),
        DaemonCommand::Stop => stop(&paths).await.map(|stopped| {
            match stopped {
                Some(pid) => println!("stopped the daemon (pid {pid})"),
                None => println!("no daemon runs for {}", paths.socket.display()),
            }
            0
        }),
        DaemonCommand::Status => status_command(&paths).await,
        DaemonCommand::Restart(start) => match stop(&paths).await {
            Ok(_) => start_daemon(&paths, &global, &start).await.map(|started| {
                print_started(&paths, started);
                0
            }),
            Err(error) => Err(error),
        },
    };
    outcome.unwrap_or_else(|error| {
        eprintln!("tandem app-server daemon: {error}");
        1
    })
}

/// Whether `start` found the daemon running or started it, and its pid.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Started {
    AlreadyRunning(i32),
    Started(i32),
}

fn print_started(paths: &DaemonPaths, started: Started) {
    match started {
        Started::AlreadyRunning(pid) => println!(
            "the daemon already runs: pid {pid}, socket {}",
            paths.socket.display()
        ),
        Started::Started(pid) => println!(
            "started the daemon: pid {pid}, socket {}, log {}",
            paths.socket.display(),
            paths.log.display()
        ),
    }
}

/// Starts the daemon of `paths` unless one answers on its socket, and waits until it listens.
pub(crate) async fn start_daemon(
    paths: &DaemonPaths,
    global: &GlobalOptions,
    start: &StartArgs,
) -> Result<Started, DaemonError> {
    if let Ok(status) = ask_status(&paths.socket).await {
        return Ok(Started::AlreadyRunning(status.pid));
    }
    let program = std::env::current_exe().map_err(|source| DaemonError::Spawn {
        program: "tandem".into(),
        source,
    })?;
    let mut command = tokio::process::Command::new(&program);
    command
        .args(global.as_args())
        .args(["app-server", "--listen", "unix://", "--log-file"])
        .arg(&paths.log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: a Ctrl-C in the terminal that started it is not for it.
        .process_group(0);
    if let Some(minutes) = start.idle_exit_mins {
        command
            .arg("--idle-exit-secs")
            .arg(format!("{}", minutes * 60.0));
    }
    let mut child = command.spawn().map_err(|source| DaemonError::Spawn {
        program: program.display().to_string(),
        source,
    })?;
    let began = Instant::now();
    loop {
        if let Ok(status) = ask_status(&paths.socket).await {
            // Another start may have won the race; either way this one's daemon answers.
            return Ok(Started::Started(status.pid));
        }
        if let Ok(Some(status)) = child.try_wait() {
            // A daemon that lost a race to another start exits with "served by"; the winner
            // answers shortly.
            if let Ok(status) = ask_status(&paths.socket).await {
                return Ok(Started::AlreadyRunning(status.pid));
            }
            return Err(DaemonError::Died {
                status,
                log: paths.log.clone(),
                tail: log_file::tail(&paths.log, 10),
            });
        }
        if began.elapsed() > START_LIMIT {
            return Err(DaemonError::Slow {
                socket: paths.socket.clone(),
                limit: START_LIMIT,
                log: paths.log.clone(),
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Stops the daemon of `paths` if one runs; its pid when it did.
async fn stop(paths: &DaemonPaths) -> Result<Option<i32>, DaemonError> {
    let Some(pid) = unix_socket::owner(&paths.socket) else {
        return Ok(None);
    };
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .map_err(|source| DaemonError::Signal { pid, source })?;
    let began = Instant::now();
    // The lock is released when the process is gone, not merely when it stops listening.
    while unix_socket::owner(&paths.socket) == Some(pid) {
        if began.elapsed() > STOP_LIMIT {
            return Err(DaemonError::Stuck {
                pid,
                limit: STOP_LIMIT,
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(Some(pid))
}

async fn status_command(paths: &DaemonPaths) -> Result<i32, DaemonError> {
    let status = match ask_status(&paths.socket).await {
        Ok(status) => status,
        Err(reason) => {
            match unix_socket::owner(&paths.socket) {
                Some(pid) => {
                    return Err(DaemonError::Status {
                        socket: paths.socket.clone(),
                        reason: format!("pid {pid} holds the socket but does not answer: {reason}"),
                    });
                }
                None => println!("no daemon runs for {}", paths.socket.display()),
            }
            return Ok(3);
        }
    };
    let loaded = loaded_threads(&paths.socket)
        .await
        .map_err(|reason| DaemonError::Status {
            socket: paths.socket.clone(),
            reason,
        })?;
    println!("pid          {}", status.pid);
    println!("socket       {}", paths.socket.display());
    println!("uptime       {}", format_uptime(status.uptime_secs));
    println!("connections  {}", status.connections);
    println!("threads      {loaded} loaded");
    println!("log          {}", paths.log.display());
    Ok(0)
}

fn format_uptime(seconds: u64) -> String {
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    format!("{hours}h {minutes:02}m {seconds:02}s")
}

/// `GET /status` on the daemon's socket (HTTP/1.1 by hand: one request, `Connection:
/// close`, read to the end).
pub(crate) async fn ask_status(socket: &Path) -> Result<DaemonStatus, String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let exchange = async {
        let address = unix_socket::connect_path(socket).map_err(|error| error.to_string())?;
        let mut stream = tokio::net::UnixStream::connect(&address)
            .await
            .map_err(|error| error.to_string())?;
        stream
            .write_all(b"GET /status HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .map_err(|error| error.to_string())?;
        let mut answer = Vec::new();
        // A status is a few dozen bytes; the bound keeps a wrong peer from feeding us forever.
        (&mut stream)
            .take(64 * 1024)
            .read_to_end(&mut answer)
            .await
            .map_err(|error| error.to_string())?;
        Ok::<_, String>(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .map_err(|_| "no answer within 5 s".to_owned())??;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or("GET /status: not an HTTP answer")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!(
            "GET /status answered {}",
            head.lines().next().unwrap_or_default()
        ));
    }
    let value: serde_json::Value =
        serde_json::from_str(body.trim()).map_err(|error| format!("GET /status: {error}"))?;
    let field = |name: &str| {
        value[name]
            .as_u64()
            .ok_or(format!("GET /status: no {name}"))
    };
    Ok(DaemonStatus {
        pid: i32::try_from(field("pid")?).map_err(|error| error.to_string())?,
        uptime_secs: field("uptimeSecs")?,
        connections: field("connections")?,
    })
}

/// The daemon's loaded threads, asked over the protocol (`thread/loaded/list`, every page).
async fn loaded_threads(socket: &Path) -> Result<usize, String> {
    use tandem_protocol::ThreadLoadedListParams;
    use tandem_protocol::client_methods::ThreadLoadedList;

    let options = tandem_client::ClientOptions::new()
        .client_name("tandem-daemon-status")
        .client_version(env!("CARGO_PKG_VERSION"))
        .reconnect(tandem_client::ReconnectPolicy::disabled());
    let client = tandem_client::Client::connect_unix(socket, options)
        .await
        .map_err(|error| error.to_string())?;
    let mut count = 0;
    let mut cursor = None;
    loop {
        let params = ThreadLoadedListParams {
            cursor: cursor.take(),
            limit: None,
        };
        let page = client
            .call::<ThreadLoadedList>(params)
            .await
            .map_err(|error| error.to_string())?;
        count += page.data.len();
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    client.close().await;
    Ok(count)
}
