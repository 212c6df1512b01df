//! Where `tandem exec` writes the command's output: its own stdout and stderr, written so that
//! the one thread the exec runtime has is never held by a reader that stalls.
//!
//! `tandem exec` runs the in-process host, the command's pumps and the relay on a single
//! thread: a delta then goes from the pump to the write without crossing a thread, which is
//! what lets a relay through tandem keep up with a `dd` relay. That thread must never block on
//! a write, or a stalled reader of tandem's stdout would also hold Ctrl-C, SIGTERM and the
//! `--timeout` (they run on the same thread). So each stream is written according to what it is:
//!
//! - a pipe (the throughput case, `tandem exec ... | next`) is reopened through
//!   `/proc/self/fd` as a non-blocking descriptor of its own (the shared descriptor's flags are
//!   left alone: the shell and any other holder of it keep a blocking pipe) and written when
//!   the runtime says it has room; the pipe is also enlarged, as the command's own pipes are,
//!   so a batch of deltas usually leaves in one write;
//! - a regular file or a device that never makes a writer wait (`/dev/null`) is written in place;
//! - anything else (a terminal, which flow control can stop; a socket) is written by a thread
//!   of the runtime's blocking pool, and the relay awaits it.

use std::io::{self, IoSlice};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use bytes::Bytes;
use rustix::fs::FileType;
use tokio::net::unix::pipe;

/// What a pipe that tandem writes to is enlarged to (best effort): the size of the command's
/// own output pipes, so a pipe between them and the next reader is no narrower.
const PIPE_BYTES: usize = 1024 * 1024;

/// Which of tandem's own streams an [`OutputStream`] writes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Own {
    Stdout,
    Stderr,
}

impl Own {
    fn fd(self) -> BorrowedFd<'static> {
        match self {
            Self::Stdout => rustix::stdio::stdout(),
            Self::Stderr => rustix::stdio::stderr(),
        }
    }
}

/// One of tandem's output streams and how it is written (see the module's doc).
pub(super) enum OutputStream {
    /// A pipe, through a non-blocking descriptor of its own.
    Pipe(pipe::Sender),
    /// A regular file or a device that takes writes at once.
    InPlace(Own),
    /// Anything that can stall, written on the blocking pool.
    Offloaded(Own),
}

impl OutputStream {
    /// Picks how `own` is written. Must run inside the runtime (a pipe registers with it).
    pub(super) fn new(own: Own) -> Self {
        let fd = own.fd();
        let Ok(stat) = rustix::fs::fstat(fd) else {
            return Self::Offloaded(own);
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Fifo => match reopen_nonblocking(fd) {
                Ok(pipe) => {
                    if let Err(error) = rustix::pipe::fcntl_setpipe_size(&pipe, PIPE_BYTES) {
                        tracing::debug!(%error, ?own, "the output pipe keeps its size");
                    }
                    Self::Pipe(pipe)
                }
                Err(error) => {
                    // No /proc, or no reader left (ENXIO): the blocking pool writes it, and a
                    // reader that is gone shows up there as EPIPE.
                    tracing::debug!(%error, ?own, "cannot reopen the output pipe");
                    Self::Offloaded(own)
                }
            },
            FileType::RegularFile => Self::InPlace(own),
            FileType::CharacterDevice if !rustix::termios::isatty(fd) => Self::InPlace(own),
            _ => Self::Offloaded(own),
        }
    }

    /// Writes every byte of `batch`, in order, and hands the batch back emptied (its
    /// allocation is reused for the next one).
    pub(super) async fn write_all(&self, mut batch: Vec<Bytes>) -> (Vec<Bytes>, io::Result<()>) {
        let written = match self {
            Self::Pipe(pipe) => write_when_ready(pipe, &batch).await,
            Self::InPlace(own) => write_all_vectored(own.fd(), &batch),
            Self::Offloaded(own) => {
                let own = *own;
                match tokio::task::spawn_blocking(move || {
                    let written = write_all_vectored(own.fd(), &batch);
                    (batch, written)
                })
                .await
                {
                    Ok((returned, written)) => {
                        batch = returned;
                        written
                    }
                    Err(error) => {
                        batch = Vec::new();
                        Err(io::Error::other(error))
                    }
                }
            }
        };
        batch.clear();
        (batch, written)
    }
}

/// A descriptor of its own for the pipe `fd` writes to, non-blocking and registered with the
/// runtime. Opening `/proc/self/fd/N` opens the pipe again, with flags of its own, where
/// setting `O_NONBLOCK` on `fd` would change it for every process that shares `fd`.
fn reopen_nonblocking(fd: BorrowedFd<'_>) -> io::Result<pipe::Sender> {
    pipe::OpenOptions::new().open_sender(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Slices of the non-empty chunks of `chunks`, for `writev`.
fn slices(chunks: &[Bytes]) -> Vec<IoSlice<'_>> {
    chunks
        .iter()
        .filter(|chunk| !chunk.is_empty())
        .map(|chunk| IoSlice::new(chunk))
        .collect()
}

/// Writes `chunks` to the non-blocking `pipe`, waiting for room whenever it is full.
async fn write_when_ready(pipe: &pipe::Sender, chunks: &[Bytes]) -> io::Result<()> {
    let mut slices = slices(chunks);
    let mut slices = &mut slices[..];
    while !slices.is_empty() {
        pipe.writable().await?;
        match pipe.try_write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => IoSlice::advance_slices(&mut slices, written),
            // Full (the readiness was a stale one) or interrupted: wait again.
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Writes every byte of `chunks` to `output` with as few `writev`s as it takes. Nothing else of
/// tandem writes to stdout during `exec`, so `Stdout`'s own buffer is empty and bypassing it
/// keeps the order (and skips its search of every chunk for a newline).
fn write_all_vectored(output: impl AsFd, chunks: &[Bytes]) -> io::Result<()> {
    let mut slices = slices(chunks);
    let mut slices = &mut slices[..];
    while !slices.is_empty() {
        match rustix::io::writev(&output, slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => IoSlice::advance_slices(&mut slices, written),
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte through a pipe whose reader is slower than the writer and reads in pieces of
    /// another size, in order; the runtime's one thread stays free meanwhile.
    #[tokio::test(flavor = "current_thread")]
    async fn a_pipe_takes_every_byte_in_order_while_the_thread_stays_free() {
        let (reader, writer) = rustix::pipe::pipe().expect("a pipe");
        let pipe = OutputStream::Pipe(reopen_nonblocking(writer.as_fd()).expect("reopened"));
        drop(writer);
        let chunks: Vec<Bytes> = (0..64u32)
            .map(|index| {
                let len = 1 + (index as usize * 7919) % 65536;
                Bytes::from(
                    (0..len)
                        .map(|at| (at as u32 ^ index) as u8)
                        .collect::<Vec<u8>>(),
                )
            })
            .collect();
        let expected: Vec<u8> = chunks
            .iter()
            .flat_map(|chunk| chunk.iter().copied())
            .collect();
        let total = expected.len();
        let drained = std::thread::spawn(move || {
            let mut file = std::fs::File::from(reader);
            let mut got = Vec::new();
            let mut piece = vec![0u8; 4093];
            while got.len() < total {
                std::thread::sleep(std::time::Duration::from_micros(200));
                let read = io::Read::read(&mut file, &mut piece).expect("a read");
                assert!(read > 0, "the pipe ended early");
                got.extend_from_slice(&piece[..read]);
            }
            got
        });
        // While the write waits for room, another task on the same thread runs.
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let ticking = tokio::spawn({
            let ticks = ticks.clone();
            async move {
                loop {
                    ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            }
        });
        let (batch, written) =
            tokio::time::timeout(std::time::Duration::from_secs(60), pipe.write_all(chunks))
                .await
                .expect("the write finishes");
        written.expect("every byte written");
        assert!(batch.is_empty());
        ticking.abort();
        assert!(
            ticks.load(std::sync::atomic::Ordering::Relaxed) > 1,
            "the thread was held by the write"
        );
        assert!(drained.join().expect("the reader") == expected);
    }
}
