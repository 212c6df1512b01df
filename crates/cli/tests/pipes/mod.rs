//! Pipes for the tests of tandem's own writes (exec's relay and notices, the sessions' signal
//! messages): one that is full and never read, as a stalled reader leaves it.

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
