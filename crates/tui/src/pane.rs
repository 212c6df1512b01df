//! Terminal panes: a command's or process's output run through a terminal emulator (`vt100`),
//! so colours, cursor movement and progress bars that redraw a line look as they do in a
//! terminal, with scrollback bounded in rows. A pane draws into a ratatui buffer, can be
//! resized (the app forwards the size to a PTY process) and scrolled.

use std::num::NonZeroU16;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

/// Where a pane's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaneSource {
    /// A command the agent runs (`commandExecution` item): read-only, not a PTY.
    Command {
        /// The item id.
        item_id: String,
    },
    /// A process the user started (`!CMD`): under a PTY, takes input and follows the size.
    Process {
        /// The process handle.
        handle: String,
    },
    /// attach19: a PTY process another client runs, watched (`/attach`): read-only, and the
    /// size stays the owner's PTY's, which its output is drawn for.
    Attached {
        /// The owner's process handle.
        handle: String,
    },
}

impl PaneSource {
    /// The process handle of a process pane, owned or watched.
    pub fn process_handle(&self) -> Option<&str> {
        match self {
            Self::Process { handle } | Self::Attached { handle } => Some(handle),
            Self::Command { .. } => None,
        }
    }
}

/// One terminal pane.
pub struct TermPane {
    parser: vt100::Parser,
    /// What the pane shows, for its title (the command line).
    pub title: String,
    /// Where its bytes come from.
    pub source: PaneSource,
    /// Output not from a PTY has bare newlines; a terminal's line discipline would have made
    /// them CR LF, so the pane does.
    translate_newlines: bool,
    last_was_cr: bool,
    /// Bytes fed so far (before newline translation).
    bytes_fed: u64,
    /// Whether the source has ended, and how.
    pub finished: Option<String>,
}

impl std::fmt::Debug for TermPane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TermPane")
            .field("title", &self.title)
            .field("source", &self.source)
            .field("size", &self.size())
            .field("bytes_fed", &self.bytes_fed)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl TermPane {
    /// A pane of `rows` x `cols` keeping `scrollback` rows above the screen.
    pub fn new(
        title: impl Into<String>,
        source: PaneSource,
        rows: u16,
        cols: u16,
        scrollback: usize,
    ) -> Self {
        let translate_newlines = matches!(source, PaneSource::Command { .. });
        Self {
            parser: vt100::Parser::new(non_zero(rows), non_zero(cols), scrollback),
            title: title.into(),
            source,
            translate_newlines,
            last_was_cr: false,
            bytes_fed: 0,
            finished: None,
        }
    }

    /// Runs `bytes` through the emulator.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.bytes_fed += bytes.len() as u64;
        if !self.translate_newlines {
            self.parser.process(bytes);
            return;
        }
        let mut start = 0;
        let mut previous_cr = self.last_was_cr;
        for (index, byte) in bytes.iter().enumerate() {
            if *byte == b'\n' && !previous_cr {
                self.parser.process(&bytes[start..index]);
                self.parser.process(b"\r");
                start = index;
            }
            previous_cr = *byte == b'\r';
        }
        self.parser.process(&bytes[start..]);
        self.last_was_cr = previous_cr;
    }

    /// How many bytes were fed.
    pub fn bytes_fed(&self) -> u64 {
        self.bytes_fed
    }

    /// Starts over with `bytes` as the whole output (the final output of a command whose
    /// streamed pieces were skipped).
    pub fn replace_output(&mut self, bytes: &[u8]) {
        let (rows, cols) = self.size();
        let scrollback = self.parser.screen().scrollback_capacity();
        self.parser = vt100::Parser::new(non_zero(rows), non_zero(cols), scrollback);
        self.bytes_fed = 0;
        self.last_was_cr = false;
        self.feed(bytes);
    }

    /// Rows and columns.
    pub fn size(&self) -> (u16, u16) {
        let (rows, cols) = self.parser.screen().size();
        (rows.get(), cols.get())
    }

    /// Resizes the emulated screen; the app tells a PTY process separately.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        let (rows, cols) = (rows.max(1), cols.max(1));
        if self.size() != (rows, cols) {
            self.parser.set_size(non_zero(rows), non_zero(cols));
        }
    }

    /// How many rows the view is scrolled back (0: the live screen).
    pub fn scrolled_back(&self) -> usize {
        self.parser.screen().scrollback()
    }

    /// Scrolls the view `rows` further back, as far as the scrollback goes.
    pub fn scroll_up(&mut self, rows: usize) {
        let target = self.scrolled_back().saturating_add(rows);
        self.parser.screen_mut().set_scrollback(target);
    }

    /// Scrolls the view `rows` towards the live screen.
    pub fn scroll_down(&mut self, rows: usize) {
        let target = self.scrolled_back().saturating_sub(rows);
        self.parser.screen_mut().set_scrollback(target);
    }

    /// Back to the live screen.
    pub fn scroll_to_bottom(&mut self) {
        self.parser.screen_mut().set_scrollback(0);
    }

    /// The emulated screen.
    pub fn screen(&self) -> &vt100::Screen {
        self.parser.screen()
    }

    /// The visible text, rows separated by newlines, trailing blanks trimmed.
    pub fn text(&self) -> String {
        self.parser.screen().contents()
    }

    /// Whether input can be sent to it (a PTY process still running).
    pub fn takes_input(&self) -> bool {
        matches!(self.source, PaneSource::Process { .. }) && self.finished.is_none()
    }

    /// Draws the screen into `area` of `buf`, clipped to both; with `show_cursor`, the cursor
    /// cell is drawn reversed.
    pub fn render(&self, area: Rect, buf: &mut Buffer, show_cursor: bool) {
        let screen = self.parser.screen();
        let (rows, cols) = self.size();
        for row in 0..rows.min(area.height) {
            for col in 0..cols.min(area.width) {
                let Some(cell) = screen.cell(row, col) else {
                    continue;
                };
                if cell.is_wide_continuation() {
                    continue;
                }
                let target = &mut buf[(area.x + col, area.y + row)];
                let contents = cell.contents();
                target.set_symbol(if contents.is_empty() { " " } else { contents });
                target.set_style(cell_style(cell));
            }
        }
        let (row, col) = screen.cursor_position();
        if show_cursor
            && !screen.hide_cursor()
            && self.scrolled_back() == 0
            && row < area.height
            && col < area.width
        {
            let target = &mut buf[(area.x + col, area.y + row)];
            let style = target.style().add_modifier(Modifier::REVERSED);
            target.set_style(style);
        }
    }
}

/// A screen dimension for the emulator, which has no empty screens.
fn non_zero(value: u16) -> NonZeroU16 {
    NonZeroU16::new(value).unwrap_or(NonZeroU16::MIN)
}

fn color(color: vt100::Color) -> Color {
    match color {
        vt100::Color::Default => Color::Reset,
        vt100::Color::Idx(index) => Color::Indexed(index),
        vt100::Color::Rgb(r, g, b) => Color::Rgb(r, g, b),
    }
}

fn cell_style(cell: &vt100::Cell) -> Style {
    let mut style = Style::default()
        .fg(color(cell.fgcolor()))
        .bg(color(cell.bgcolor()));
    if cell.bold() {
        style = style.add_modifier(Modifier::BOLD);
    }
    if cell.italic() {
        style = style.add_modifier(Modifier::ITALIC);
    }
    if cell.underline() {
        style = style.add_modifier(Modifier::UNDERLINED);
    }
    if cell.inverse() {
        style = style.add_modifier(Modifier::REVERSED);
    }
    style
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command_pane(rows: u16, cols: u16, scrollback: usize) -> TermPane {
        TermPane::new(
            "cmd",
            PaneSource::Command {
                item_id: "i".into(),
            },
            rows,
            cols,
            scrollback,
        )
    }

    #[test]
    fn bare_newlines_of_a_command_start_new_rows_at_the_left() {
        let mut pane = command_pane(4, 10, 0);
        pane.feed(b"ab\ncd\r");
        pane.feed(b"\nef");
        assert_eq!(pane.text(), "ab\ncd\nef");
        assert_eq!(pane.bytes_fed(), 9);
    }

    #[test]
    fn a_carriage_return_redraws_the_row() {
        let mut pane = command_pane(2, 20, 0);
        pane.feed(b"[#   ] 25%\r[##  ] 50%\r[####] 100%\n");
        assert_eq!(pane.text(), "[####] 100%");
    }

    #[test]
    fn scrollback_is_bounded_and_scrollable() {
        let mut pane = command_pane(2, 10, 3);
        for n in 0..10 {
            pane.feed(format!("line {n}\n").as_bytes());
        }
        assert_eq!(pane.text(), "line 9");
        pane.scroll_up(100);
        // Three rows of scrollback kept, no more: lines 6 to 8 above the screen.
        assert_eq!(pane.scrolled_back(), 3);
        assert_eq!(pane.text(), "line 6\nline 7");
        pane.scroll_down(1);
        assert_eq!(pane.text(), "line 7\nline 8");
        pane.scroll_to_bottom();
        assert_eq!(pane.scrolled_back(), 0);
    }

    #[test]
    fn resizing_keeps_the_text() {
        let mut pane = command_pane(3, 10, 0);
        pane.feed(b"hello\n");
        pane.resize(5, 20);
        assert_eq!(pane.size(), (5, 20));
        assert!(pane.text().starts_with("hello"));
    }
}
