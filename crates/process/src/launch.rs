//! Starts the child of a [`SpawnPlan`], on pipes or under a PTY, in its own process group.
//!
//! This is the only place that knows how the child's stdio is wired, so the rest of the module
//! sees uniform boxed readers and writers plus an optional PTY control handle for resizing.

use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tandem_protocol::PtySize;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::{Child, Command};

use super::plan::SpawnPlan;
use crate::helper::watchdog::MARKER_ENV;

/// A readable output stream of the child.
pub(crate) type OutputReader = Box<dyn AsyncRead + Send + Unpin>;
/// The writable input of the child (a pipe or the PTY master).
pub(crate) type InputWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// A running child and the ends of its stdio that the server keeps.
pub(crate) struct Launched {
    pub(crate) child: Child,
    /// Process id; also the process group id (the child leads its own group).
    pub(crate) pid: u32,
    /// `Some` only when stdin is streamed.
    pub(crate) stdin: Option<InputWriter>,
    /// stdout, or the PTY master's output.
    pub(crate) stdout: OutputReader,
    /// `None` under a PTY, where stderr is merged into the terminal.
    pub(crate) stderr: Option<OutputReader>,
    /// A duplicate of the PTY master used only for `TIOCSWINSZ`, so that resizing never waits
    /// behind a stdin write blocked on a full terminal input queue.
    pub(crate) pty_control: Option<OwnedFd>,
}

/// Why the child could not be started; the text becomes `failed to spawn process: ...`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LaunchError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Pty(#[from] pty_process::Error),
    #[error("child has no process id")]
    NoPid,
}

/// Builds the command shared by both wirings: program, arguments, cwd and environment, with
/// `marker` (the watchdog's, see `guard`) in [`MARKER_ENV`].
/// Under a sandbox, the program is the `sandbox` helper, which restricts itself and then
/// executes the planned program in its place (see [`crate::helper::sandbox`]).
fn base_command(plan: &SpawnPlan, marker: Option<&str>) -> Result<Command, LaunchError> {
    let mut command = match &plan.sandbox {
        None => Command::new(&plan.program),
        Some(sandbox) => {
            let spec = serde_json::to_string(sandbox.spec())
                .map_err(|error| std::io::Error::other(error.to_string()))?;
            let mut command = Command::from(
                sandbox
                    .helper
                    .command(crate::helper::sandbox::SUBCOMMAND, [spec]),
            );
            command.arg(&plan.program);
            command
        }
    };
    command.args(&plan.args).current_dir(&plan.cwd);
    // Entries are merged over the inherited environment; `null` removes a variable.
    for (name, value) in &plan.env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    // Set last, so that a request's `env` cannot remove it: it is how the watchdog finds the
    // children that left their process group.
    if let Some(marker) = marker {
        command.env(MARKER_ENV, marker);
    }
    // Our supervisor owns the child's lifetime (timeouts, kill, kill_all); dropping a handle
    // must not silently kill only the leader and leave the rest of the group behind.
    command.kill_on_drop(false);
    Ok(command)
}

/// Starts the child described by `plan`, with `marker` in its environment (see
/// [`base_command`]).
pub(crate) fn launch(plan: &SpawnPlan, marker: Option<&str>) -> Result<Launched, LaunchError> {
    if plan.tty {
        launch_pty(plan, marker)
    } else {
        launch_pipes(plan, marker)
    }
}

fn launch_pipes(plan: &SpawnPlan, marker: Option<&str>) -> Result<Launched, LaunchError> {
    let mut command = base_command(plan, marker)?;
    command
        .stdin(if plan.stream_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A group of its own, so kill and timeout reach every descendant with one killpg.
        .process_group(0);
    let mut child = command.spawn()?;
    let pid = child.id().ok_or(LaunchError::NoPid)?;
    let stdin = child
        .stdin
        .take()
        .map(|stdin| Box::new(stdin) as InputWriter);
    let stdout = child.stdout.take().map(output_reader);
    let stderr = child.stderr.take().map(output_reader);
    let stdout = stdout.ok_or_else(|| std::io::Error::other("stdout pipe missing"))?;
    Ok(Launched {
        child,
        pid,
        stdin,
        stdout,
        stderr,
        pty_control: None,
    })
}

/// Most output pipes enlarged to [`crate::PIPE_BYTES`] and open at once, server-wide. The
/// kernel charges pipe buffers to the user (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by
/// default), and once a user is over that every new pipe of theirs, in any program, gets only
/// two pages: 16 pipes of 1 MiB take a quarter of it, and later pipes keep the default size.
const ENLARGED_PIPES_MAX: usize = 16;

/// Output pipes enlarged and still open.
static ENLARGED_PIPES: AtomicUsize = AtomicUsize::new(0);

/// One of [`ENLARGED_PIPES_MAX`] counted in `open`, given back when the pipe's reader is
/// dropped.
struct EnlargedSlot {
    open: &'static AtomicUsize,
}

impl EnlargedSlot {
    fn take(open: &'static AtomicUsize) -> Option<Self> {
        open.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |count| {
            (count < ENLARGED_PIPES_MAX).then_some(count + 1)
        })
        .ok()
        .map(|_| Self { open })
    }
}

impl Drop for EnlargedSlot {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A pipe reader holding its [`EnlargedSlot`].
struct EnlargedPipe<R> {
    reader: R,
    _slot: EnlargedSlot,
}

impl<R: AsyncRead + Unpin> AsyncRead for EnlargedPipe<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.reader).poll_read(context, buf)
    }
}

/// The pump's reader of one output pipe, raised to [`crate::PIPE_BYTES`] while fewer than
/// [`ENLARGED_PIPES_MAX`] are: the child then writes on while the pump hands a chunk over, and
/// a read finds a whole chunk waiting. Best effort: a kernel that refuses (a lower
/// `pipe-max-size`, a user over its pipe quota) leaves the default size, which is only slower.
fn output_reader<R: AsyncRead + AsFd + Send + Unpin + 'static>(pipe: R) -> OutputReader {
    output_reader_counted(pipe, &ENLARGED_PIPES)
}

/// [`output_reader`] with the enlarged pipes counted in `open` (a test's own count).
fn output_reader_counted<R: AsyncRead + AsFd + Send + Unpin + 'static>(
    pipe: R,
    open: &'static AtomicUsize,
) -> OutputReader {
    let Some(slot) = EnlargedSlot::take(open) else {
        return Box::new(pipe);
    };
    let size = i32::try_from(crate::PIPE_BYTES).unwrap_or(i32::MAX);
    match nix::fcntl::fcntl(pipe.as_fd(), nix::fcntl::FcntlArg::F_SETPIPE_SZ(size)) {
        Ok(_) => Box::new(EnlargedPipe {
            reader: pipe,
            _slot: slot,
        }),
        Err(error) => {
            tracing::debug!(%error, "the child's output pipe keeps its default size");
            Box::new(pipe)
        }
    }
}

fn launch_pty(plan: &SpawnPlan, marker: Option<&str>) -> Result<Launched, LaunchError> {
    let (pty, pts) = pty_process::open()?;
    pty.resize(pty_process::Size::new(plan.size.rows, plan.size.cols))?;
    let pty_control = pty.as_fd().try_clone_to_owned()?;
    // pty-process makes the child a session leader (setsid) with the PTY as its controlling
    // terminal; a new session is also a new process group whose id is the child's pid, so
    // `process_group(0)` is neither needed nor allowed here (setsid fails for a group leader).
    // `spawn` consumes `pts`, so the parent holds no slave end and sees EOF/EIO at hang-up.
    let mut child = pty_process::Command::from(base_command(plan, marker)?).spawn(pts)?;
    let pid = child.id().ok_or(LaunchError::NoPid)?;
    // The child's stdio are the PTY slave; tokio never captured them.
    child.stdin.take();
    let (read, write) = pty.into_split();
    Ok(Launched {
        child,
        pid,
        stdin: Some(Box::new(write)),
        stdout: Box::new(read),
        stderr: None,
        pty_control: Some(pty_control),
    })
}

/// Applies `size` to the terminal behind `control`.
pub(crate) fn resize(control: &OwnedFd, size: PtySize) -> std::io::Result<()> {
    let winsize = rustix::termios::Winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(control, winsize).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the pipe behind `fd` (`F_GETPIPE_SZ`).
    fn pipe_size(fd: &OwnedFd) -> usize {
        let size = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETPIPE_SZ).unwrap();
        usize::try_from(size).unwrap()
    }

    /// A pipe's read end as the pump gets it, and a duplicate of its descriptor to ask its size
    /// with.
    fn reader(open: &'static AtomicUsize) -> (OutputReader, OwnedFd) {
        let (_writer, receiver) = tokio::net::unix::pipe::pipe().unwrap();
        let fd = receiver.as_fd().try_clone_to_owned().unwrap();
        (output_reader_counted(receiver, open), fd)
    }

    #[tokio::test]
    async fn at_most_sixteen_pipes_are_enlarged_at_once_and_a_closed_one_frees_its_slot() {
        static OPEN: AtomicUsize = AtomicUsize::new(0);
        let mut readers: Vec<(OutputReader, OwnedFd)> =
            (0..ENLARGED_PIPES_MAX + 4).map(|_| reader(&OPEN)).collect();
        let sizes: Vec<usize> = readers.iter().map(|(_, fd)| pipe_size(fd)).collect();
        assert!(
            sizes[..ENLARGED_PIPES_MAX]
                .iter()
                .all(|size| *size == crate::PIPE_BYTES),
            "{sizes:?}"
        );
        assert!(
            sizes[ENLARGED_PIPES_MAX..]
                .iter()
                .all(|size| *size < crate::PIPE_BYTES),
            "{sizes:?}"
        );
        assert_eq!(OPEN.load(Ordering::Relaxed), ENLARGED_PIPES_MAX);
        // A default-size pipe closing frees nothing; an enlarged one frees its slot.
        readers.pop();
        let (_, fd) = reader(&OPEN);
        assert!(pipe_size(&fd) < crate::PIPE_BYTES);
        readers.swap_remove(0);
        let (kept, fd) = reader(&OPEN);
        assert_eq!(pipe_size(&fd), crate::PIPE_BYTES);
        drop(readers);
        drop(kept);
        assert_eq!(OPEN.load(Ordering::Relaxed), 0);
    }
}
