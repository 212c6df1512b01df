//! The child-process transport: starts a server command with piped stdin and stdout in a
//! process group of its own, moves one JSON object per line, and ends the child within a
//! bound: stdin EOF first, then SIGTERM, then SIGKILL of its process group.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Default [`ChildCommand::max_line_bytes`]: the server's own default line limit.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// What the child's stderr is connected to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ChildStderr {
    /// The client's own stderr (the default): the server's diagnostics stay visible.
    #[default]
    Inherit,
    /// Discarded.
    Null,
}

/// The command line of a server that speaks the protocol over stdio, one JSON object per
/// line: `tandem app-server --listen stdio://` ([`ChildCommand::tandem`]) or any compatible
/// command ([`ChildCommand::new`]).
///
/// ```
/// use tandem_client::ChildCommand;
///
/// let command = ChildCommand::tandem("/usr/local/bin/tandem").env("TANDEM_HOME", "/tmp/home");
/// assert_eq!(command.program(), std::path::Path::new("/usr/local/bin/tandem"));
/// ```
#[derive(Debug, Clone)]
pub struct ChildCommand {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    current_dir: Option<PathBuf>,
    stderr: ChildStderr,
    max_line_bytes: usize,
}

impl ChildCommand {
    /// Runs `program` with no arguments.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
            stderr: ChildStderr::default(),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }

    /// Runs `tandem app-server --listen stdio://`, `tandem` being the binary at `program`.
    pub fn tandem(program: impl Into<PathBuf>) -> Self {
        Self::new(program).args(["app-server", "--listen", "stdio://"])
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable of the child.
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((name.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Removes an environment variable of the child.
    pub fn env_remove(mut self, name: impl AsRef<OsStr>) -> Self {
        self.env.push((name.as_ref().to_owned(), None));
        self
    }

    /// Runs the child in `dir`. Default: the client's working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// Where the child's stderr goes. Default [`ChildStderr::Inherit`].
    pub fn stderr(mut self, stderr: ChildStderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// The longest line accepted from the child; a longer one is skipped (and logged).
    /// Default 64 MiB.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes.max(1);
        self
    }

    /// The program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The arguments.
    pub fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// Starts the child: its stdin, its stdout and the handle that ends it (the link layer
    /// wraps them into a `Link`).
    pub(crate) async fn spawn(&self) -> Result<(ChildSink, ChildSource, ChildLink), String> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match self.stderr {
                ChildStderr::Inherit => Stdio::inherit(),
                ChildStderr::Null => Stdio::null(),
            })
            // Its own group, so that close and kill reach whatever the server started.
            .process_group(0)
            .kill_on_drop(true);
        for (name, value) in &self.env {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        let mut child = command
            .spawn()
            .map_err(|error| format!("cannot start `{}`: {error}", self.program.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the child's stdin or stdout was not piped".into());
        };
        let pid = child.id();
        tracing::debug!(program = %self.program.display(), ?pid, "started the server child");
        Ok((
            ChildSink {
                stdin: BufWriter::new(stdin),
            },
            ChildSource {
                stdout: BufReader::with_capacity(64 * 1024, stdout),
                max_line_bytes: self.max_line_bytes,
            },
            ChildLink {
                pid,
                child: tokio::sync::Mutex::new(Some(child)),
            },
        ))
    }
}

/// The child's stdin, one line per frame.
pub(crate) struct ChildSink {
    stdin: BufWriter<ChildStdin>,
}

impl ChildSink {
    pub(crate) async fn write(&mut self, frame: Vec<u8>) -> Result<(), String> {
        let written = async {
            self.stdin.write_all(&frame).await?;
            self.stdin.write_all(b"\n").await?;
            self.stdin.flush().await
        };
        written.await.map_err(|error| error.to_string())
    }

    /// Closes stdin: the server's signal to shut down cleanly.
    pub(crate) async fn finish(mut self) {
        let _ = self.stdin.shutdown().await;
    }
}

/// The child's stdout, split into lines.
pub(crate) struct ChildSource {
    stdout: BufReader<ChildStdout>,
    max_line_bytes: usize,
}

impl ChildSource {
    pub(crate) async fn next(&mut self) -> Result<Vec<u8>, String> {
        loop {
            let mut line = Vec::new();
            let limit = self.max_line_bytes as u64 + 1;
            let read = (&mut self.stdout)
                .take(limit)
                .read_until(b'\n', &mut line)
                .await
                .map_err(|error| format!("reading the server's stdout failed: {error}"))?;
            if read == 0 {
                return Err("the server closed its stdout".into());
            }
            if line.last() == Some(&b'\n') {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.is_empty() {
                    continue;
                }
                return Ok(line);
            }
            if line.len() as u64 == limit {
                tracing::warn!(
                    limit = self.max_line_bytes,
                    "skipping a line from the server longer than the limit"
                );
                self.skip_rest_of_line().await?;
                continue;
            }
            // The last line, without a newline, before EOF.
            return Ok(line);
        }
    }

    async fn skip_rest_of_line(&mut self) -> Result<(), String> {
        loop {
            let buffer = self
                .stdout
                .fill_buf()
                .await
                .map_err(|error| format!("reading the server's stdout failed: {error}"))?;
            if buffer.is_empty() {
                return Ok(());
            }
            match buffer.iter().position(|byte| *byte == b'\n') {
                Some(end) => {
                    self.stdout.consume(end + 1);
                    return Ok(());
                }
                None => {
                    let len = buffer.len();
                    self.stdout.consume(len);
                }
            }
        }
    }
}

/// The child process itself.
pub(crate) struct ChildLink {
    pid: Option<u32>,
    child: tokio::sync::Mutex<Option<Child>>,
}

impl ChildLink {
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn signal_group(&self, signal: Signal) {
        let Some(pid) = self.pid.and_then(|pid| i32::try_from(pid).ok()) else {
            return;
        };
        if let Err(error) = killpg(Pid::from_raw(pid), signal) {
            tracing::debug!(%error, ?signal, pid, "signalling the server's process group failed");
        }
    }

    /// Waits `step` for the child to exit after stdin EOF, then SIGTERMs its group and waits
    /// `step` again, then SIGKILLs the group.
    pub(crate) async fn shut_down(&self, step: Duration) {
        let mut guard = self.child.lock().await;
        let Some(child) = guard.as_mut() else { return };
        if let Ok(Ok(status)) = tokio::time::timeout(step, child.wait()).await {
            tracing::debug!(%status, "the server exited after stdin EOF");
            guard.take();
            return;
        }
        self.signal_group(Signal::SIGTERM);
        if let Ok(Ok(status)) = tokio::time::timeout(step, child.wait()).await {
            tracing::debug!(%status, "the server exited after SIGTERM");
            guard.take();
            return;
        }
        tracing::warn!("the server ignored stdin EOF and SIGTERM; killing its process group");
        self.signal_group(Signal::SIGKILL);
        let _ = tokio::time::timeout(step, child.wait()).await;
        guard.take();
    }

    /// SIGKILLs the group without waiting (the client is being dropped).
    pub(crate) fn kill_now(&self) {
        if let Ok(mut guard) = self.child.try_lock()
            && let Some(child) = guard.as_mut()
            && child.try_wait().ok().flatten().is_none()
        {
            self.signal_group(Signal::SIGKILL);
            let _ = child.start_kill();
        }
    }
}
