//! The `tandem app-server` process under test: how it is launched (fresh home, no `TANDEM_LOG`,
//! a marker in its environment), its stderr kept line by line with arrival times, and how it
//! is stopped and checked (exit code, deadline, no panic, no process left behind).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::client::StdioClient;
use super::{PROMPT, SHUTDOWN_LIMIT};

/// The environment variable that marks every process of one server.
pub(crate) const MARKER_VAR: &str = "TANDEM_APP_SERVER_TEST_MARK";

/// A directory of its own for one server, under the target's temporary directory.
pub(crate) fn fresh_home(test: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let home = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("app-server-tests")
        .join(format!("{test}-{}-{n}", std::process::id()));
    // A previous run with the same pid may have left it behind.
    let _ = std::fs::remove_dir_all(&home);
    home
}

/// How to launch one server.
pub(crate) struct Launch {
    test: String,
    args: Vec<String>,
    home: Option<PathBuf>,
    env: Vec<(String, String)>,
}

impl Launch {
    /// `tandem <args>`, for the test named `test` (which names its home and marker).
    pub(crate) fn new(test: &str) -> Self {
        Self {
            test: test.to_owned(),
            args: Vec::new(),
            home: None,
            env: Vec::new(),
        }
    }

    /// Appends command-line arguments.
    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Uses `home` instead of a fresh one (to restart a server on the same data).
    pub(crate) fn home(mut self, home: PathBuf) -> Self {
        self.home = Some(home);
        self
    }

    /// Sets an environment variable of the binary.
    pub(crate) fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Starts the binary with piped stdin, stdout and stderr.
    pub(crate) fn spawn(self) -> AppServer {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let home = self.home.unwrap_or_else(|| fresh_home(&self.test));
        let marker = format!(
            "{}-{}-{}",
            self.test,
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
        command
            .args(&self.args)
            .env("TANDEM_HOME", &home)
            .env_remove("TANDEM_LOG")
            .env(MARKER_VAR, &marker)
            .envs(self.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A failing test must not leave a server running.
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn tandem");
        let pid = child.id().expect("a running child has a pid");
        let stderr = Arc::new(StderrLog::default());
        let (lines_tx, lines) = watch::channel(0usize);
        let reader = tokio::spawn(read_stderr(
            child.stderr.take().expect("piped stderr"),
            Arc::clone(&stderr),
            lines_tx,
        ));
        AppServer {
            child,
            pid,
            home,
            marker,
            stderr,
            lines,
            stderr_reader: Some(reader),
            started: Instant::now(),
        }
    }

    /// Starts `tandem <args>` (the args include `app-server`) and connects a client to its
    /// stdio.
    pub(crate) fn stdio(self) -> (AppServer, StdioClient) {
        let mut server = self.spawn();
        let client = StdioClient::new(
            server.child.stdin.take().expect("piped stdin"),
            server.child.stdout.take().expect("piped stdout"),
        );
        (server, client)
    }

    /// Starts a websocket server (the args include `app-server --listen ws://...`) and waits
    /// for the address it prints.
    pub(crate) async fn websocket(self) -> (AppServer, SocketAddr) {
        let server = self.spawn();
        let (_, line) = server
            .wait_for_stderr("the listening address", |line| {
                line.starts_with("listening on: ws://")
            })
            .await;
        let address = line
            .trim()
            .strip_prefix("listening on: ws://")
            .and_then(|address| address.parse().ok())
            .unwrap_or_else(|| panic!("not an address: {line}"));
        (server, address)
    }
}

/// Every line the binary wrote to stderr, with the time it was read.
#[derive(Default)]
pub(crate) struct StderrLog {
    lines: Mutex<Vec<(Instant, String)>>,
}

async fn read_stderr(stderr: ChildStderr, log: Arc<StderrLog>, count: watch::Sender<usize>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                let mut lines = log.lines.lock().unwrap_or_else(|p| p.into_inner());
                lines.push((Instant::now(), text));
                count.send_replace(lines.len());
            }
        }
    }
}

/// A running `tandem` binary.
pub(crate) struct AppServer {
    child: Child,
    /// The binary's pid.
    pub(crate) pid: u32,
    /// Its `TANDEM_HOME`.
    pub(crate) home: PathBuf,
    /// The value of [`MARKER_VAR`] in its environment and its children's.
    pub(crate) marker: String,
    stderr: Arc<StderrLog>,
    lines: watch::Receiver<usize>,
    stderr_reader: Option<JoinHandle<()>>,
    /// When it was spawned.
    pub(crate) started: Instant,
}

/// How the binary ended.
pub(crate) struct Exited {
    pub(crate) status: ExitStatus,
    /// From the end of the session (EOF, signal) to the exit.
    pub(crate) elapsed: Duration,
    pub(crate) stderr: String,
}

impl AppServer {
    /// Stderr so far.
    pub(crate) fn stderr(&self) -> String {
        let lines = self.stderr.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().map(|(_, line)| format!("{line}\n")).collect()
    }

    /// Waits until a stderr line satisfies `matches`; returns when it was read, and the line.
    pub(crate) async fn wait_for_stderr(
        &self,
        what: &str,
        matches: impl Fn(&str) -> bool,
    ) -> (Instant, String) {
        self.wait_for_stderr_until(PROMPT, what, matches).await
    }

    /// [`Self::wait_for_stderr`] with a deadline of `limit`.
    pub(crate) async fn wait_for_stderr_until(
        &self,
        limit: Duration,
        what: &str,
        matches: impl Fn(&str) -> bool,
    ) -> (Instant, String) {
        let mut lines = self.lines.clone();
        let found = tokio::time::timeout(limit, async {
            loop {
                if let Some(found) = self.find_stderr(&matches) {
                    return Some(found);
                }
                if lines.changed().await.is_err() {
                    // Stderr ended; a last look covers a line pushed just before.
                    return self.find_stderr(&matches);
                }
            }
        })
        .await;
        match found {
            Ok(Some(found)) => found,
            Ok(None) => panic!("stderr ended without {what}:\n{}", self.stderr()),
            Err(_) => panic!("no {what} on stderr within {limit:?}:\n{}", self.stderr()),
        }
    }

    /// The first stderr line so far that satisfies `matches`.
    pub(crate) fn find_stderr(&self, matches: impl Fn(&str) -> bool) -> Option<(Instant, String)> {
        let lines = self.stderr.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().find(|(_, line)| matches(line)).cloned()
    }

    /// Sends `signal` to the binary.
    pub(crate) fn signal(&self, signal: Signal) {
        let pid = Pid::from_raw(i32::try_from(self.pid).expect("pid fits i32"));
        kill(pid, signal).expect("signal tandem");
    }

    /// Live processes started by this server (the binary itself excluded).
    pub(crate) fn live_children(&self) -> Vec<u32> {
        let mut pids = tandem_test_support::live_pids_with_env(MARKER_VAR, &self.marker);
        pids.retain(|pid| *pid != self.pid);
        pids
    }

    /// Waits for the binary to exit, at most `limit` after `since`; kills it and fails the
    /// test past that. Collects all of stderr.
    pub(crate) async fn wait_exit(mut self, since: Instant, limit: Duration) -> Exited {
        let left = limit.saturating_sub(since.elapsed());
        let status = match tokio::time::timeout(left, self.child.wait()).await {
            Ok(status) => status.expect("wait for tandem"),
            Err(_) => {
                let _ = self.child.kill().await;
                panic!(
                    "tandem did not exit within {limit:?}; stderr:\n{}",
                    self.stderr()
                );
            }
        };
        let elapsed = since.elapsed();
        if let Some(reader) = self.stderr_reader.take() {
            // A leaked child holding stderr must not hang the test; its absence is checked
            // separately.
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        }
        Exited {
            status,
            elapsed,
            stderr: self.stderr(),
        }
    }

    /// SIGTERM, then the checks every test ends with (see [`Exited::assert_clean`]).
    pub(crate) async fn terminate(self) -> Exited {
        let since = Instant::now();
        self.signal(Signal::SIGTERM);
        self.finish(since).await
    }

    /// Waits for the exit that `since` started (EOF, a signal) and checks it:
    /// [`Exited::assert_clean`], and nothing the server started is still running.
    pub(crate) async fn finish(self, since: Instant) -> Exited {
        let marker = self.marker.clone();
        let pid = self.pid;
        let exited = self.wait_exit(since, SHUTDOWN_LIMIT).await;
        exited.assert_clean();
        // Killed children are gone by the time the binary exits, up to the kernel reaping an
        // orphan a moment later.
        let leftovers = || {
            let mut pids = tandem_test_support::live_pids_with_env(MARKER_VAR, &marker);
            pids.retain(|live| *live != pid);
            pids
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let left = leftovers();
            if left.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                let described: Vec<String> = left.iter().map(|pid| describe(*pid)).collect();
                panic!(
                    "processes of the server outlived it: {described:?}; stderr:\n{}",
                    exited.stderr
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        exited
    }
}

/// `PID (command line)`, for failure messages.
pub(crate) fn describe(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmdline: Vec<String> = cmdline
        .split(|byte| *byte == 0)
        .filter(|part| !part.is_empty())
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect();
    format!("{pid} ({})", cmdline.join(" "))
}

impl Exited {
    /// Exit code 0 within [`SHUTDOWN_LIMIT`], and no panic on stderr.
    pub(crate) fn assert_clean(&self) {
        assert_eq!(
            self.status.code(),
            Some(0),
            "tandem exited with {:?}; stderr:\n{}",
            self.status,
            self.stderr
        );
        assert!(
            self.elapsed <= SHUTDOWN_LIMIT,
            "tandem took {:?} to exit",
            self.elapsed
        );
        self.assert_no_panic();
    }

    /// Nothing panicked, not even a task whose panic the runtime caught.
    pub(crate) fn assert_no_panic(&self) {
        assert!(
            !self.stderr.contains("panicked"),
            "tandem panicked:\n{}",
            self.stderr
        );
    }
}
