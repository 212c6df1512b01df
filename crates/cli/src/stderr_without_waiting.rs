//! Messages to tandem's stderr for moments that must not wait for a reader: a second Ctrl-C of
//! `tandem exec`, a shutdown that passed its deadline. A plain `eprintln!` blocks while stderr
//! is a pipe nobody reads or a terminal stopped by flow control, and such an exit would then
//! hang on its own message; these writes drop the message instead.

use std::os::fd::{AsRawFd, BorrowedFd};

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
