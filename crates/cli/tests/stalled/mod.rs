//! For the tests of tandem facing a reader that stalled (exec's relay and notices, the
//! sessions' signals, the server's logs): a pipe that is full and never read, and a wait for
//! tandem's exit that fails the test instead of hanging it.

// Each test binary includes this module and uses its own part of it.
#![allow(dead_code)]

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// A pipe of 1 MiB (as large as tandem makes its output pipes, so that its enlarging makes no
/// room) that is already full; the write end is blocking, as from a shell.
pub(crate) fn full_pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    let (reader, writer) = rustix::pipe::pipe().expect("a pipe");
    rustix::pipe::fcntl_setpipe_size(&writer, 1024 * 1024).expect("a 1 MiB pipe");
    rustix::fs::fcntl_setfl(&writer, rustix::fs::OFlags::NONBLOCK).expect("non-blocking");
    let filler = vec![b'x'; 64 * 1024];
    while rustix::io::write(&writer, &filler).is_ok() {}
    rustix::fs::fcntl_setfl(&writer, rustix::fs::OFlags::empty()).expect("blocking again");
    (reader, writer)
}

/// Waits for `child` until `limit`, killing it and failing the test past that.
pub(crate) fn wait_with_deadline(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tandem did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
