//! The real terminal: raw mode, the alternate screen and bracketed paste while the TUI runs,
//! and their undoing on every way out: the guard's drop (a return, an error, `?`) and a panic
//! hook (a panic anywhere, before the default hook prints its message on the normal screen).
//! A panic the runtime survives (in an intake task) has restored the terminal all the same,
//! so the hook also tells the app to stop: it must not go on drawing on the normal screen.
//! A process that exits without unwinding (a shutdown past its deadline) restores it with
//! [`restore_without_waiting`].

use std::io::{self, Write as _};
use std::os::fd::AsRawFd as _;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags};
use tokio::sync::Notify;

use crossterm::Command as _;
use crossterm::cursor::Show;
use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

/// The terminal in full-screen mode, restored when dropped.
#[derive(Debug)]
pub struct TerminalGuard {
    _private: (),
}

impl TerminalGuard {
    /// Switches the terminal to raw mode and the alternate screen, and installs the panic hook
    /// that switches it back.
    pub fn enter() -> io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        ENTERED.store(true, Ordering::SeqCst);
        // From here a failure restores what was done.
        let guard = Self { _private: () };
        execute!(io::stdout(), EnterAlternateScreen, EnableBracketedPaste)?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Whether the terminal is in full-screen mode: restoring twice (the panic hook, then the
/// guard's drop as the panic unwinds) must not leave the alternate screen twice, which moves
/// the cursor back to where it was saved and lets the shell overwrite the panic's message.
static ENTERED: AtomicBool = AtomicBool::new(false);

/// Leaves the alternate screen and raw mode and shows the cursor; does nothing when not
/// entered (or already restored).
pub fn restore() {
    if !ENTERED.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut stdout = io::stdout();
    let _ = execute!(stdout, DisableBracketedPaste, LeaveAlternateScreen, Show);
    let _ = stdout.flush();
    let _ = disable_raw_mode();
}

/// [`restore`] for a process that is about to exit while its UI may be blocked writing to a
/// terminal nobody reads (`tandem tui`'s shutdown deadline): raw mode is left at once (setting
/// the terminal's modes never waits), and the sequences that leave the alternate screen are
/// written only if the terminal takes them without waiting. Std's stdout is not touched: the
/// blocked UI holds its lock. Does nothing when not entered (or already restored).
pub fn restore_without_waiting() {
    if !ENTERED.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = disable_raw_mode();
    let mut sequences = String::new();
    let _ = DisableBracketedPaste.write_ansi(&mut sequences);
    let _ = LeaveAlternateScreen.write_ansi(&mut sequences);
    let _ = Show.write_ansi(&mut sequences);
    let stdout = rustix::stdio::stdout();
    if !rustix::termios::isatty(stdout) {
        return;
    }
    // A descriptor of its own, so the shared one's flags stay as they are.
    let reopened = rustix::fs::open(
        format!("/proc/self/fd/{}", stdout.as_raw_fd()),
        OFlags::WRONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    );
    if let Ok(own) = reopened {
        let _ = rustix::io::write(&own, sequences.as_bytes());
    }
}

/// Set by the panic hook once it has restored the terminal.
static PANICKED: AtomicBool = AtomicBool::new(false);
/// Wakes [`panicked`] when the hook sets [`PANICKED`].
static PANIC_SEEN: Notify = Notify::const_new();

/// Whether a panic has restored the terminal since the hook was installed.
pub(crate) fn has_panicked() -> bool {
    PANICKED.load(Ordering::SeqCst)
}

/// Resolves once a panic (anywhere in the process) has restored the terminal.
pub(crate) async fn panicked() {
    loop {
        let notified = PANIC_SEEN.notified();
        tokio::pin!(notified);
        // Registered before the flag is read, so a panic in between still wakes it.
        notified.as_mut().enable();
        if has_panicked() {
            return;
        }
        notified.await;
    }
}

fn install_panic_hook() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            PANICKED.store(true, Ordering::SeqCst);
            PANIC_SEEN.notify_waiters();
            previous(info);
        }));
    });
}
