//! The `tandem app-server` processes of a soak phase: websocket servers the soak starts,
//! kills with SIGKILL and restarts on the same store, the command line of the stdio clients'
//! server children, and the check that nothing a killed server started outlives it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tandem_client::{ChildCommand, ChildStderr};
use tandem_test_support::binary::ServerProcess;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::Command;
use tokio::sync::oneshot;

use super::SoakError;
use super::procfs::{self, LIFE_VAR, Stat};

/// How long a server may take to start listening (a debug build on a loaded machine,
/// recovering a store that grew over the run).
const START_LIMIT: Duration = Duration::from_secs(60);
/// The clean shutdown budget: the server's 5 s (docs/protocol.md section 11) and a margin.
pub(crate) const EXIT_LIMIT: Duration = Duration::from_secs(8);
/// The bound on how long anything a killed server started may outlive it: the watchdog's
/// (docs/reliability.md, "What dies with the server").
pub(crate) const ORPHAN_BOUND: Duration = Duration::from_secs(2);

/// How the soak runs every server of a phase.
#[derive(Debug, Clone)]
pub(crate) struct ServerSpec {
    /// The `tandem` binary.
    pub(crate) binary: PathBuf,
    /// `TANDEM_HOME`.
    pub(crate) home: PathBuf,
    /// `store.url`, for the PostgreSQL store.
    pub(crate) store_url: Option<String>,
    /// Where the servers' stderr goes, one file per server.
    pub(crate) logs: PathBuf,
    /// The prefix of every life marker of this run.
    pub(crate) run: String,
}

impl ServerSpec {
    /// `-c store.url=...` when the store is PostgreSQL.
    fn store_args(&self) -> Vec<String> {
        match &self.store_url {
            Some(url) => vec!["-c".into(), format!("store.url={url}")],
            None => Vec::new(),
        }
    }

    /// The marker prefix of every life of `owner`.
    pub(crate) fn owner_mark(&self, owner: &str) -> String {
        format!("{}/{owner}/", self.run)
    }

    /// The server child of a stdio client named `owner`: a shell that marks the life with its
    /// own pid (which `exec` hands to `tandem`) and sends stderr to the owner's log.
    pub(crate) fn stdio_command(&self, owner: &str) -> ChildCommand {
        let script = "tandem=$1; log=$2; export TANDEM_SOAK_LIFE=\"$3$$\"; shift 3; \
                      exec \"$tandem\" \"$@\" 2>>\"$log\"";
        let log = self.logs.join(format!("{owner}.log"));
        ChildCommand::new("sh")
            .arg("-c")
            .arg(script)
            .arg("soak")
            .arg(&self.binary)
            .arg(&log)
            .arg(self.owner_mark(owner))
            .args(self.store_args())
            .args(["app-server", "--listen", "stdio://"])
            .env("TANDEM_HOME", &self.home)
            .env_remove("TANDEM_LOG")
            .stderr(ChildStderr::Inherit)
    }
}

/// One life of a websocket server.
#[derive(Debug)]
pub(crate) struct WsServer {
    process: ServerProcess,
    pid: u32,
    address: SocketAddr,
    mark: String,
    /// Ends (the value is dropped) when the server's stderr closes.
    _stderr_done: oneshot::Receiver<()>,
}

impl WsServer {
    /// Starts life `life` of server `name` and waits until it listens.
    pub(crate) async fn start(spec: &ServerSpec, name: &str, life: u32) -> Result<Self, SoakError> {
        let mark = format!("{}{life}", spec.owner_mark(name));
        let mut command = Command::new(&spec.binary);
        command
            .args(spec.store_args())
            .args(["app-server", "--listen", "ws://127.0.0.1:0"])
            .env("TANDEM_HOME", &spec.home)
            .env(LIFE_VAR, &mark)
            .env_remove("TANDEM_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut process = ServerProcess::spawn(&mut command).map_err(|source| SoakError::Io {
            what: format!("start {}", spec.binary.display()),
            source,
        })?;
        let pid = process.id().ok_or_else(|| SoakError::Server {
            name: name.into(),
            reason: "exited at once".into(),
        })?;
        let stderr = process.child_mut().stderr.take().expect("stderr is piped");
        let log = spec.logs.join(format!("{name}.log"));
        let (address_tx, address_rx) = oneshot::channel();
        let (done_tx, done_rx) = oneshot::channel();
        tokio::spawn(copy_stderr(stderr, log, life, address_tx, done_tx));
        let address = tokio::time::timeout(START_LIMIT, address_rx)
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or_else(|| SoakError::Server {
                name: name.into(),
                reason: format!(
                    "life {life} did not print `listening on: ws://...` within {START_LIMIT:?}; \
                     see {}",
                    spec.logs.join(format!("{name}.log")).display()
                ),
            })?;
        Ok(Self {
            process,
            pid,
            address,
            mark,
            _stderr_done: done_rx,
        })
    }

    /// The address it listens on.
    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// This life's marker.
    pub(crate) fn mark(&self) -> &str {
        &self.mark
    }

    /// Whether it has exited (by itself: the soak did not stop it).
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.process.child_mut().try_wait().ok().flatten()
    }

    /// SIGKILL, then waits for the exit; returns what it had started (its children at the
    /// moment of the kill), for [`wait_orphans`].
    pub(crate) async fn kill9(&mut self) -> Vec<Stat> {
        let children = children_of(self.pid);
        signal_kill(self.pid);
        let _ = self.process.wait_within(EXIT_LIMIT).await;
        children
    }

    /// SIGTERM and waits for a clean exit.
    pub(crate) async fn terminate(&mut self) -> std::io::Result<ExitStatus> {
        self.process.terminate_within(EXIT_LIMIT).await
    }
}

/// Copies a server's stderr to its log (appending, each life headed by a line), and sends the
/// address it prints once it listens.
async fn copy_stderr(
    stderr: tokio::process::ChildStderr,
    log: PathBuf,
    life: u32,
    address: oneshot::Sender<SocketAddr>,
    _done: oneshot::Sender<()>,
) {
    let mut address = Some(address);
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .await
        .ok();
    if let Some(file) = &mut file {
        let _ = file
            .write_all(format!("--- life {life}\n").as_bytes())
            .await;
    }
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(rest) = line.split("listening on: ws://").nth(1)
            && let Ok(parsed) = rest.trim().parse::<SocketAddr>()
            && let Some(sender) = address.take()
        {
            let _ = sender.send(parsed);
        }
        if let Some(file) = &mut file {
            let _ = file.write_all(format!("{line}\n").as_bytes()).await;
        }
    }
}

/// SIGKILL to `pid` (already gone: nothing to do).
pub(crate) fn signal_kill(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// The live children of `pid`.
pub(crate) fn children_of(pid: u32) -> Vec<Stat> {
    procfs::all()
        .into_iter()
        .filter(|stat| stat.ppid == pid && stat.state != 'Z')
        .collect()
}

/// A process that outlived its server: its pid and a description for the report.
pub(crate) type Survivor = (u32, String);

/// Waits until no process carries the life marker `mark` and none of `children` (the dead
/// server's children at the kill, its watchdog among them) is alive, for at most
/// [`ORPHAN_BOUND`]. `Ok(how long it took)`, or the survivors, which are then killed so that
/// the run goes on clean.
pub(crate) async fn wait_orphans(mark: &str, children: &[Stat]) -> Result<Duration, Vec<Survivor>> {
    let began = Instant::now();
    loop {
        let mut survivors: Vec<Survivor> = procfs::marked(mark)
            .into_iter()
            .filter(|marked| marked.life == mark)
            .map(|marked| (marked.stat.pid, marked.cmdline))
            .collect();
        survivors.extend(
            children
                .iter()
                .filter(|child| procfs::alive(child.pid, child.start))
                .map(|child| (child.pid, procfs::cmdline(child.pid))),
        );
        survivors.sort();
        survivors.dedup();
        if survivors.is_empty() {
            return Ok(began.elapsed());
        }
        if began.elapsed() > ORPHAN_BOUND {
            return Err(reap(survivors));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Every live process whose marker starts with `prefix` (what outlived the whole run); they
/// are killed once listed.
pub(crate) fn leftovers(prefix: &str) -> Vec<Survivor> {
    procfs::marked(prefix)
        .into_iter()
        .map(|marked| {
            let what = format!("({}) `{}`", marked.life, marked.cmdline);
            (marked.stat.pid, what)
        })
        .collect()
}

/// SIGKILLs the survivors (they belong to this run) and returns them.
pub(crate) fn reap(survivors: Vec<Survivor>) -> Vec<Survivor> {
    for (pid, _) in &survivors {
        signal_kill(*pid);
    }
    survivors
}
