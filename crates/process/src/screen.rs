//! The present screen of each PTY process (`process/screen`, experimental): its output run
//! through a terminal emulator (`vt100`, the one `tandem tui` draws panes with) as it is read,
//! so a client that attaches late gets the screen a terminal shows now instead of replaying a
//! byte log. Memory is bounded: no scrollback, and at most [`MAX_SCREEN_ROWS`] x
//! [`MAX_SCREEN_COLS`] cells whatever size the PTY is given.

use std::num::NonZeroU16;
use std::sync::Mutex;

use tandem_protocol::{ProcessScreenResponse, PtySize};

/// The most rows a kept screen has; a taller PTY's screen is kept at this height.
pub(crate) const MAX_SCREEN_ROWS: u16 = 500;
/// The most columns a kept screen has; a wider PTY's screen is kept at this width.
pub(crate) const MAX_SCREEN_COLS: u16 = 500;

/// The emulated screen of one PTY process. It is fed the output as it is handed to the
/// process's consumer (not as it is read), so that it always equals the output of the
/// notifications sent so far: what a late attacher draws before the notifications that follow.
pub struct PtyScreen {
    state: Mutex<ScreenState>,
    /// attach19: held while a delta is fed and queued for sending, and while an attacher takes
    /// the snapshot and queues its attachment: the attacher then receives exactly the deltas
    /// the snapshot does not reflect.
    pub order: tokio::sync::Mutex<()>,
}

struct ScreenState {
    parser: vt100::Parser,
    output_bytes: u64,
}

fn bounded(value: u16, max: u16) -> NonZeroU16 {
    NonZeroU16::new(value.min(max)).unwrap_or(NonZeroU16::MIN)
}

impl PtyScreen {
    /// A blank screen of `size` (within the bounds).
    pub(crate) fn new(size: PtySize) -> Self {
        let parser = vt100::Parser::new(
            bounded(size.rows, MAX_SCREEN_ROWS),
            bounded(size.cols, MAX_SCREEN_COLS),
            0,
        );
        Self {
            state: Mutex::new(ScreenState {
                parser,
                output_bytes: 0,
            }),
            order: tokio::sync::Mutex::new(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ScreenState> {
        // The emulator's state is whatever the last byte left; a panic elsewhere cannot
        // corrupt it, so keep serving.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs output bytes through the emulator.
    pub fn feed(&self, bytes: &[u8]) {
        let mut state = self.lock();
        state.parser.process(bytes);
        state.output_bytes += bytes.len() as u64;
    }

    /// Follows a `process/resizePty`.
    pub(crate) fn resize(&self, size: PtySize) {
        self.lock().parser.set_size(
            bounded(size.rows, MAX_SCREEN_ROWS),
            bounded(size.cols, MAX_SCREEN_COLS),
        );
    }

    /// The screen now.
    pub fn snapshot(&self) -> ProcessScreenResponse {
        let state = self.lock();
        let screen = state.parser.screen();
        let (rows, cols) = screen.size();
        let (cursor_row, cursor_col) = screen.cursor_position();
        ProcessScreenResponse {
            size: PtySize {
                rows: rows.get(),
                cols: cols.get(),
            },
            cursor_row,
            cursor_col,
            text: screen.contents(),
            formatted: screen.contents_formatted(),
            output_bytes: state.output_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_screen_is_what_a_terminal_shows_and_stays_bounded() {
        let screen = PtyScreen::new(PtySize { rows: 5, cols: 20 });
        screen.feed(b"line 1\r\nline 2\r\n\x1b[2J\x1b[3;4H\x1b[31mred\x1b[0m");
        let now = screen.snapshot();
        assert_eq!(now.text, "\n\n   red");
        assert_eq!((now.cursor_row, now.cursor_col), (2, 6));
        assert!(now.formatted.contains("\x1b[31mred"), "{:?}", now.formatted);
        assert_eq!(now.output_bytes, 38);
        screen.resize(PtySize {
            rows: 60_000,
            cols: 60_000,
        });
        assert_eq!(
            screen.snapshot().size,
            PtySize {
                rows: MAX_SCREEN_ROWS,
                cols: MAX_SCREEN_COLS
            }
        );
    }
}
