//! Writes to tandem's stderr that must not wait for a reader: a second Ctrl-C of `tandem
//! exec`, a shutdown that passed its deadline, and the logs. A plain `eprintln!` blocks while
//! stderr is a pipe nobody reads or a terminal stopped by flow control: such an exit would hang
//! on its own message, and a log line would hold the runtime worker that wrote it, then (std's
//! stderr lock) every other worker that logs: a client that launches `tandem app-server` with
//! a stderr pipe it never reads would stall the whole server once the pipe filled.
//!
//! So the one-off messages are written only if they can be at once ([`say`]), and the logs go
//! through [`LogWriter`]: a queue of at most [`LOG_QUEUE_BYTES`] that a thread of its own
//! writes out. A burst waits there for a slow reader; a reader that stalls costs only the
//! lines past the bound, which are counted and reported once stderr takes lines again.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rustix::fs::{FileType, Mode, OFlags};

/// Writes `message` to tandem's stderr only if that can be done at once: a pipe or a terminal
/// is reopened non-blocking (nobody reading, or a terminal stopped by flow control, drops what
/// does not fit instead of holding the caller), a socket is sent to without waiting, and a
/// regular file or a device that takes writes at once is written in place. A regular file is
/// never reopened: a new descriptor would write at its start.
pub(crate) fn say(message: &str) {
    let fd = rustix::stdio::stderr();
    let Ok(stat) = rustix::fs::fstat(fd) else {
        return;
    };
    let bytes = message.as_bytes();
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Fifo => write_once_nonblocking(fd, bytes),
        FileType::CharacterDevice if rustix::termios::isatty(fd) => {
            write_once_nonblocking(fd, bytes);
        }
        FileType::Socket => {
            let _ = rustix::net::send(fd, bytes, rustix::net::SendFlags::DONTWAIT);
        }
        FileType::RegularFile | FileType::CharacterDevice => {
            let _ = rustix::io::write(fd, bytes);
        }
        _ => {}
    }
}

/// One write of `bytes` through a non-blocking descriptor of its own for `fd` (a pipe or a
/// terminal); nothing if it would wait.
fn write_once_nonblocking(fd: BorrowedFd<'_>, bytes: &[u8]) {
    let reopened = rustix::fs::open(
        format!("/proc/self/fd/{}", fd.as_raw_fd()),
        OFlags::WRONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    );
    if let Ok(own) = reopened {
        let _ = rustix::io::write(&own, bytes);
    }
}

/// Log bytes held at most, queued or being written: beyond it, a line is dropped and counted
/// (one line alone may be longer).
pub(crate) const LOG_QUEUE_BYTES: usize = 1 << 20;

/// The lines waiting for the log thread.
#[derive(Default)]
struct LogQueue {
    lines: VecDeque<Vec<u8>>,
    /// Bytes of the lines queued and of those the log thread took and has not written yet:
    /// a batch blocked on a stalled reader still counts against the bound.
    bytes: usize,
    /// Lines dropped (no room, or a failed write) and not yet told of: the notice goes out
    /// before the next lines.
    dropped: u64,
}

/// tandem's log writer (a `tracing_subscriber` `MakeWriter`): each formatted line joins a
/// queue bounded in bytes, and a thread of its own (started with the first line) writes the
/// queue to stderr, where it may block as long as the reader likes. A line that does not fit
/// is dropped and counted, and the thread writes how many were dropped before the lines that
/// follow them.
pub(crate) struct LogWriter {
    queue: Mutex<LogQueue>,
    /// Signalled when lines arrive (for the thread) and when the queue empties (for
    /// [`LogWriter::flush_for`]).
    changed: Condvar,
    thread: OnceLock<()>,
}

impl LogWriter {
    /// The process's log writer.
    pub(crate) fn get() -> &'static Self {
        static WRITER: OnceLock<LogWriter> = OnceLock::new();
        WRITER.get_or_init(|| Self {
            queue: Mutex::new(LogQueue::default()),
            changed: Condvar::new(),
            thread: OnceLock::new(),
        })
    }

    /// Queues one formatted line, or counts it dropped.
    fn queue_line(&'static self, line: &[u8]) {
        self.thread.get_or_init(|| {
            let spawned = std::thread::Builder::new()
                .name("tandem-log".into())
                .spawn(move || self.write_out());
            if let Err(error) = spawned {
                // Nothing can write the logs: they are dropped (and counted) from now on.
                say(&format!(
                    "tandem: cannot start the log thread ({error}); logs are dropped\n"
                ));
            }
        });
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        // A line longer than the bound (the wire trace of a large message) is still taken when
        // nothing else is held: it exists already, formatted, and the reader keeps up.
        if queue.bytes > 0 && queue.bytes + line.len() > LOG_QUEUE_BYTES {
            queue.dropped += 1;
            return;
        }
        queue.bytes += line.len();
        queue.lines.push_back(line.to_vec());
        self.changed.notify_all();
    }

    /// The log thread: takes what is queued and writes it, blocking on stderr for as long as
    /// its reader takes.
    fn write_out(&self) {
        let stderr = rustix::stdio::stderr();
        loop {
            let (lines, dropped) = {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                // Dropped lines are told of before the next lines, so only lines wake it.
                while queue.lines.is_empty() {
                    queue = self
                        .changed
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                (
                    std::mem::take(&mut queue.lines),
                    std::mem::take(&mut queue.dropped),
                )
            };
            // Lines a write failed on (a full disk under the daemon's log) are dropped too, and
            // told of once stderr takes lines again.
            let mut failed = 0;
            if dropped > 0 {
                let notice = format!(
                    "tandem: {dropped} log line(s) dropped: stderr was not being read or could \
                     not be written\n"
                );
                if !write_all(stderr, notice.as_bytes()) {
                    failed += dropped;
                }
            }
            let held: usize = lines.iter().map(Vec::len).sum();
            for line in lines {
                if !write_all(stderr, &line) {
                    failed += 1;
                }
            }
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.bytes -= held;
            queue.dropped += failed;
            self.changed.notify_all();
        }
    }

    /// Waits until the queued lines are written, for at most `limit` (a process about to exit
    /// lets its last lines out, but not past a reader that stalled).
    pub(crate) fn flush_for(&self, limit: Duration) {
        let until = Instant::now() + limit;
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        while self.thread.get().is_some() && queue.bytes > 0 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            queue = self
                .changed
                .wait_timeout(queue, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// Writes all of `bytes` to `fd`, blocking; whether it could (an error gives up on them).
fn write_all(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(0) => return false,
            Ok(written) => bytes = &bytes[written..],
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
    true
}

/// One log line on its way: `tracing_subscriber` formats an event and writes it whole.
pub(crate) struct LogLine(&'static LogWriter);

impl io::Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.queue_line(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The `MakeWriter` of the logs: every line goes to [`LogWriter::get`].
pub(crate) struct Logs;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = LogLine;

    fn make_writer(&'a self) -> Self::Writer {
        LogLine(LogWriter::get())
    }
}
