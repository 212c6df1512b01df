//! The user's terminal, for `tandem exec --tty`: raw mode while the command runs (so keys,
//! Ctrl-C included, reach the command's own terminal unprocessed) and the window size to give
//! the command's pseudo-terminal. Everything here is a no-op when stdin or stdout is not a
//! terminal, so `--tty` also works with pipes.

use std::io;
use std::os::fd::AsFd;

use rustix::termios::{self, OptionalActions, Termios};
use tandem_protocol::PtySize;

/// Raw mode on tandem's stdin, restored when dropped.
pub(crate) struct RawMode {
    original: Termios,
}

impl RawMode {
    /// Switches stdin to raw mode if it is a terminal; `None` if it is not.
    pub(crate) fn enable() -> io::Result<Option<Self>> {
        let stdin = io::stdin();
        let fd = stdin.as_fd();
        if !termios::isatty(fd) {
            return Ok(None);
        }
        let original = termios::tcgetattr(fd)?;
        let mut raw = original.clone();
        raw.make_raw();
        termios::tcsetattr(fd, OptionalActions::Now, &raw)?;
        Ok(Some(Self { original }))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let stdin = io::stdin();
        if let Err(error) = termios::tcsetattr(stdin.as_fd(), OptionalActions::Now, &self.original)
        {
            tracing::warn!(%error, "could not restore the terminal mode");
        }
    }
}

/// The size of the terminal on stdout (else stdin), if either is a terminal with a known size.
pub(crate) fn window_size() -> Option<PtySize> {
    let stdout = io::stdout();
    let stdin = io::stdin();
    [stdout.as_fd(), stdin.as_fd()]
        .into_iter()
        .filter(|fd| termios::isatty(*fd))
        .find_map(|fd| termios::tcgetwinsize(fd).ok())
        .filter(|size| size.ws_row > 0 && size.ws_col > 0)
        .map(|size| PtySize {
            rows: size.ws_row,
            cols: size.ws_col,
        })
}
