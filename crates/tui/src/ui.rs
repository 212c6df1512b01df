//! Drawing: turns an [`AppState`] into a frame. Pure (the state is only read), so the same
//! code draws the real terminal and the test backend of the snapshot tests. The layout is a
//! function of its own because the app needs the pane's size to size PTY processes before
//! anything is drawn.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};
use unicode_width::UnicodeWidthStr;

use crate::diff_view;
use crate::state::{
    AppState, ApprovalSubject, ApprovalView, CommandState, Entry, Focus, Screen, TurnState,
};
use crate::wrap::wrap;

/// The most rows the composer grows to before it scrolls.
const COMPOSER_MAX_ROWS: u16 = 6;

/// The most rows an approval's command takes in its prompt.
const APPROVAL_MAX_ROWS: usize = 4;

/// Where the chat screen's parts go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatLayout {
    /// The transcript.
    pub transcript: Rect,
    /// The terminal pane (with its border), when one is shown.
    pub pane: Option<Rect>,
    /// The composer, or the approval prompt in its place.
    pub bottom: Rect,
    /// The status line.
    pub status: Rect,
}

/// The pane's outer height on a screen of `height` rows: two fifths of what the status line
/// and a one-row composer leave, at least a border and a row. It does not depend on the
/// composer's height, so typing never resizes a PTY process.
fn pane_height(height: u16) -> u16 {
    (height.saturating_sub(4) * 2 / 5).max(3)
}

/// The chat screen's layout on `area`.
pub fn chat_layout(area: Rect, state: &AppState) -> ChatLayout {
    let status = Rect {
        y: area.y + area.height.saturating_sub(1),
        height: area.height.min(1),
        ..area
    };
    let bottom_height = match state.approvals.front() {
        None => (state.composer.lines().len() as u16).clamp(1, COMPOSER_MAX_ROWS) + 2,
        Some(approval) => approval_rows(approval, area.width).len() as u16 + 4,
    }
    .min(area.height.saturating_sub(1));
    let bottom = Rect {
        y: status.y.saturating_sub(bottom_height),
        height: bottom_height,
        ..area
    };
    let above = Rect {
        height: bottom.y.saturating_sub(area.y),
        ..area
    };
    let pane = state.active_pane().map(|_| {
        let height = pane_height(area.height).min(above.height);
        Rect {
            y: above.y + above.height - height,
            height,
            ..above
        }
    });
    let transcript = Rect {
        height: above.height - pane.map_or(0, |pane| pane.height),
        ..above
    };
    ChatLayout {
        transcript,
        pane,
        bottom,
        status,
    }
}

/// The size (rows, columns) terminal panes get on a screen of `area`: inside the border.
pub fn pane_size(area: Rect) -> (u16, u16) {
    (
        pane_height(area.height).saturating_sub(2).max(1),
        area.width.saturating_sub(2).max(1),
    )
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, state: &AppState) {
    let area = frame.area();
    match state.screen {
        Screen::Chat => draw_chat(frame, state, area),
        Screen::Threads => draw_threads(frame.buffer_mut(), state, area),
    }
}

fn draw_chat(frame: &mut Frame<'_>, state: &AppState, area: Rect) {
    let layout = chat_layout(area, state);
    let buf = frame.buffer_mut();
    draw_transcript(buf, state, layout.transcript);
    if let (Some(rect), Some(pane)) = (layout.pane, state.active_pane()) {
        let focused = state.focus == Focus::Pane;
        // The state first: a long command line is cut at the border, its state must not be.
        let mut title = format!(
            " {} · {} ",
            pane.finished.as_deref().unwrap_or("running"),
            pane.title
        );
        if pane.scrolled_back() > 0 {
            title.push_str(&format!("· {} rows back ", pane.scrolled_back()));
        }
        title.push_str(if focused {
            "· Ctrl-O leaves "
        } else {
            "· Ctrl-O focuses "
        });
        let border = if focused {
            Style::new().fg(Color::Cyan)
        } else {
            Style::new().fg(Color::DarkGray)
        };
        let block = Block::bordered().title(title).border_style(border);
        let inner = block.inner(rect);
        Clear.render(rect, buf);
        block.render(rect, buf);
        pane.render(inner, buf, focused);
    }
    match state.approvals.front() {
        Some(approval) => {
            let more = state.approvals.len() - 1;
            let title = if more > 0 {
                format!(" approval ({more} more waiting) ")
            } else {
                " approval ".to_owned()
            };
            let block = Block::bordered()
                .title(title)
                .border_style(Style::new().fg(Color::Yellow));
            let inner = block.inner(layout.bottom);
            let mut where_ = match &approval.subject {
                ApprovalSubject::Command { cwd, .. } => format!("in {cwd}"),
                ApprovalSubject::FileChange { .. } => "the diff is above".to_owned(),
            };
            if let Some(reason) = &approval.reason {
                where_.push_str(&format!(" · {reason}"));
            }
            let mut lines: Vec<Line<'_>> = approval_rows(approval, area.width)
                .into_iter()
                .map(|row| Line::styled(row, Style::new().add_modifier(Modifier::BOLD)))
                .collect();
            lines.extend([
                Line::styled(where_, Style::new().fg(Color::DarkGray)),
                Line::from(vec![
                    key_span("y"),
                    Span::raw(" accept  "),
                    key_span("a"),
                    Span::raw(" accept for session  "),
                    key_span("n"),
                    Span::raw(" decline"),
                ]),
            ]);
            block.render(layout.bottom, buf);
            Paragraph::new(lines).render(inner, buf);
        }
        None => {
            let title = if let Some(question) = state.questions.front() {
                format!(" answer: {} ", question.questions.join(" / "))
            } else if state.turn.turn_id().is_some() {
                " steer the running turn · Enter sends · Esc interrupts ".to_owned()
            } else {
                " message · Enter sends · Alt-Enter new line · Ctrl-T threads ".to_owned()
            };
            let focused = state.focus == Focus::Composer;
            let block = Block::bordered().title(title).border_style(if focused {
                Style::new()
            } else {
                Style::new().fg(Color::DarkGray)
            });
            let inner = block.inner(layout.bottom);
            block.render(layout.bottom, buf);
            let (row, col) = state.composer.cursor();
            let first = (row + 1).saturating_sub(inner.height as usize);
            let lines: Vec<Line<'_>> = state
                .composer
                .lines()
                .iter()
                .skip(first)
                .map(|line| Line::raw(line.as_str()))
                .collect();
            Paragraph::new(lines).render(inner, buf);
            if focused {
                let line = &state.composer.lines()[row];
                let before: String = line.chars().take(col).collect();
                let x = inner.x + (before.width() as u16).min(inner.width.saturating_sub(1));
                let y = inner.y + (row - first) as u16;
                frame.set_cursor_position(Position { x, y });
            }
        }
    }
    draw_status(frame.buffer_mut(), state, layout.status);
}

/// The question of `approval` wrapped to the prompt's inside on a screen `width` wide.
fn approval_rows(approval: &ApprovalView, width: u16) -> Vec<String> {
    match &approval.subject {
        ApprovalSubject::Command { command, .. } => approval_question(command, width),
        ApprovalSubject::FileChange { paths } => {
            let mut rows =
                diff_view::file_change_question(paths, width.saturating_sub(2).max(4) as usize);
            rows.truncate(APPROVAL_MAX_ROWS);
            rows
        }
    }
}

/// The approval's question wrapped to the prompt's inside on a screen `width` wide: at most
/// [`APPROVAL_MAX_ROWS`] rows, the last one ending in `…` when the command is longer.
fn approval_question(command: &str, width: u16) -> Vec<String> {
    let mut rows = wrap(
        &format!("Run {command} ?"),
        width.saturating_sub(2).max(4) as usize,
    );
    if rows.len() > APPROVAL_MAX_ROWS {
        rows.truncate(APPROVAL_MAX_ROWS);
        if let Some(last) = rows.last_mut() {
            last.pop();
            last.push('…');
        }
    }
    rows
}

fn key_span(key: &str) -> Span<'static> {
    Span::styled(
        format!("[{key}]"),
        Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
    )
}

/// The transcript's rows at `width` columns.
pub fn transcript_rows(state: &AppState, width: u16) -> Vec<Line<'static>> {
    transcript_tail(state, width, usize::MAX)
}

/// At least the last `needed` rows of the transcript at `width` columns (all of them if there
/// are fewer): entries are wrapped from the end backwards and no further than the view needs,
/// so a frame costs what the screen shows, not the length of the conversation.
fn transcript_tail(state: &AppState, width: u16, needed: usize) -> Vec<Line<'static>> {
    let width = width.max(4) as usize;
    let mut blocks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut count = 0;
    let mut reached_front = true;
    for (index, entry) in state.transcript.iter().enumerate().rev() {
        if count >= needed {
            reached_front = false;
            break;
        }
        let preceded = index > 0 || state.transcript_dropped > 0;
        let rows = entry_rows(entry, width, preceded, state.reasoning_expanded);
        count += rows.len();
        blocks.push(rows);
    }
    if reached_front && state.transcript_dropped > 0 {
        blocks.push(vec![Line::styled(
            format!(
                "({} earlier entries not kept here; the thread list's resume shows them)",
                state.transcript_dropped
            ),
            Style::new().fg(Color::DarkGray),
        )]);
    }
    blocks.into_iter().rev().flatten().collect()
}

/// The rows of one entry; `preceded` when rows come before it (a message is set off from them
/// by a blank row); `expanded` shows reasoning in full.
fn entry_rows(entry: &Entry, width: usize, preceded: bool, expanded: bool) -> Vec<Line<'static>> {
    let mut rows = Vec::new();
    match entry {
        Entry::User { text, steered } => {
            if preceded {
                rows.push(Line::raw(""));
            }
            let marker = if *steered { "↳ " } else { "› " };
            let style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
            for (index, row) in wrap(text, width - 2).into_iter().enumerate() {
                let prefix = if index == 0 { marker } else { "  " };
                rows.push(Line::styled(format!("{prefix}{row}"), style));
            }
        }
        Entry::Agent { text, rendered, .. } => {
            rows.extend(rendered.rows(text, width).iter().cloned());
        }
        Entry::Command { command, state, .. } => {
            let (how, color) = match state {
                CommandState::Running => ("running".to_owned(), Color::Yellow),
                CommandState::Exited(0) => ("exit 0".to_owned(), Color::Green),
                CommandState::Exited(code) => (format!("exit {code}"), Color::Red),
                CommandState::Declined => ("declined".to_owned(), Color::DarkGray),
                CommandState::Failed => ("failed".to_owned(), Color::Red),
            };
            // The state first, so a long command wraps after it instead of pushing it out.
            let state = format!("[{how}] ");
            let indent = " ".repeat(state.chars().count());
            let text = format!("$ {command}");
            let rows_of_command = wrap(&text, width.saturating_sub(indent.len()).max(1));
            for (index, row) in rows_of_command.into_iter().enumerate() {
                let prefix = if index == 0 {
                    Span::styled(state.clone(), Style::new().fg(color))
                } else {
                    Span::raw(indent.clone())
                };
                rows.push(Line::from(vec![
                    prefix,
                    Span::styled(row, Style::new().fg(Color::Yellow)),
                ]));
            }
        }
        Entry::FileChange {
            changes, status, ..
        } => rows.extend(diff_view::file_change_rows(changes, *status, width)),
        Entry::Plan {
            explanation, steps, ..
        } => rows.extend(diff_view::plan_rows(explanation.as_deref(), steps, width)),
        Entry::Reasoning {
            summary, content, ..
        } => rows.extend(diff_view::reasoning_rows(summary, content, expanded, width)),
        Entry::Tool { tool, status, .. } => rows.push(Line::styled(
            format!("tool {tool} [{status:?}]"),
            Style::new().fg(Color::Magenta),
        )),
        Entry::Notice(text) => rows.extend(wrap(text, width).into_iter().map(|row| {
            Line::styled(
                row,
                Style::new()
                    .fg(Color::DarkGray)
                    .add_modifier(Modifier::ITALIC),
            )
        })),
    }
    rows
}

fn draw_transcript(buf: &mut Buffer, state: &AppState, area: Rect) {
    if area.height == 0 {
        return;
    }
    let height = area.height as usize;
    let rows = transcript_tail(
        state,
        area.width,
        height.saturating_add(state.transcript_scroll),
    );
    let scroll = state
        .transcript_scroll
        .min(rows.len().saturating_sub(height));
    let end = rows.len() - scroll;
    let start = end.saturating_sub(height);
    Paragraph::new(rows[start..end].to_vec()).render(area, buf);
}

fn draw_status(buf: &mut Buffer, state: &AppState, area: Rect) {
    let model = match (&state.thread, &state.model) {
        (Some(thread), _) => match &thread.model {
            Some(model) => format!("{model} ({})", thread.provider),
            None => format!("default model ({})", thread.provider),
        },
        (None, Some(model)) => model.clone(),
        (None, None) => "default model".to_owned(),
    };
    let thread = match &state.thread {
        Some(thread) => {
            let start = thread.id.len().saturating_sub(8);
            format!("thread …{}", &thread.id[start..])
        }
        None => "new thread".to_owned(),
    };
    let turn = if !state.approvals.is_empty() {
        "waiting for approval"
    } else if !state.questions.is_empty() {
        "waiting for an answer"
    } else {
        match &state.turn {
            TurnState::Idle => "idle",
            TurnState::Starting => "starting",
            TurnState::Running { .. } => "running",
            TurnState::Interrupting { .. } => "interrupting",
        }
    };
    // The turn's state first: on a narrow screen it is what must not be cut off.
    let mut parts = vec![turn.to_owned(), model, thread];
    if let Some(tokens) = &state.tokens {
        parts.push(format!(
            "tokens {} in / {} out",
            tokens.total.input_tokens, tokens.total.output_tokens
        ));
    }
    let connection = &state.connection;
    parts.push(match (&connection.lost, connection.generation) {
        (Some(reason), _) => format!("{}: disconnected ({reason})", connection.label),
        (None, 0) => format!("{}: connecting", connection.label),
        (None, 1) => connection.label.clone(),
        (None, generation) => format!("{} · reconnected {}x", connection.label, generation - 1),
    });
    // A hint answers the last key: first, where it cannot be cut off.
    if let Some(hint) = &state.hint {
        parts.insert(0, hint.clone());
    }
    let text = format!(" {} ", parts.join(" │ "));
    let style = if connection.lost.is_some() {
        Style::new().bg(Color::Red).fg(Color::White)
    } else {
        Style::new().add_modifier(Modifier::REVERSED)
    };
    buf.set_style(area, style);
    Paragraph::new(Line::styled(text, style)).render(area, buf);
}

/// `YYYY-MM-DD HH:MM` (UTC) of unix seconds `secs`.
fn format_time(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let minutes = secs.rem_euclid(86_400) / 60;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        minutes / 60,
        minutes % 60
    )
}

fn draw_threads(buf: &mut Buffer, state: &AppState, area: Rect) {
    let list_area = Rect {
        height: area.height.saturating_sub(1),
        ..area
    };
    let block = Block::bordered()
        .title(" threads · Enter resume · n new · f fork · a archive · r refresh · Esc back ");
    let inner = block.inner(list_area);
    block.render(list_area, buf);
    let threads = &state.threads;
    let current = state.thread.as_ref().map(|thread| thread.id.as_str());
    let lines: Vec<Line<'_>> = if threads.items.is_empty() {
        vec![Line::styled(
            if threads.loading {
                "(loading)"
            } else {
                "(no threads yet: n starts one)"
            },
            Style::new().fg(Color::DarkGray),
        )]
    } else {
        let height = inner.height.max(1) as usize;
        let first = (threads.selected + 1).saturating_sub(height);
        threads
            .items
            .iter()
            .enumerate()
            .skip(first)
            .take(height)
            .map(|(index, thread)| {
                let marker = if Some(thread.id.as_str()) == current {
                    "*"
                } else {
                    " "
                };
                let mut title = thread.title.replace('\n', " ");
                if title.is_empty() {
                    title = "(empty)".to_owned();
                }
                if let Some(parent) = &thread.forked_from {
                    let start = parent.len().saturating_sub(8);
                    title.push_str(&format!("  (fork of …{})", &parent[start..]));
                }
                let text = format!(
                    "{marker} {}  {}  {title}",
                    thread.id,
                    format_time(thread.updated_at)
                );
                if index == threads.selected {
                    Line::styled(text, Style::new().add_modifier(Modifier::REVERSED))
                } else {
                    Line::raw(text)
                }
            })
            .collect()
    };
    Paragraph::new(lines).render(inner, buf);
    let status = Rect {
        y: area.y + area.height.saturating_sub(1),
        height: area.height.min(1),
        ..area
    };
    draw_status(buf, state, status);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_the_end_of_the_whole_transcript() {
        let mut state = AppState::new("in-process", None, crate::state::Limits::default());
        for n in 0..50 {
            state.user_sent(&format!("question {n} with enough words to wrap"), false);
            state.notice(format!("answer {n}"));
        }
        let text =
            |rows: &[Line<'_>]| -> Vec<String> { rows.iter().map(ToString::to_string).collect() };
        let all = text(&transcript_rows(&state, 20));
        for needed in [0, 1, 7, 30, all.len(), all.len() + 5] {
            let tail = text(&transcript_tail(&state, 20, needed));
            assert!(tail.len() >= needed.min(all.len()), "{needed}");
            assert!(tail.len() <= needed + 4, "only as much as needed: {needed}");
            assert_eq!(tail[..], all[all.len() - tail.len()..], "{needed}");
        }
    }

    #[test]
    fn a_long_command_wraps_in_its_approval_and_is_cut_visibly() {
        assert_eq!(approval_question("ls", 40), ["Run ls ?"]);
        let long = "echo ".repeat(40);
        let rows = approval_question(&long, 22);
        assert_eq!(rows.len(), APPROVAL_MAX_ROWS);
        assert!(rows.iter().all(|row| row.width() <= 20), "{rows:?}");
        assert!(rows[APPROVAL_MAX_ROWS - 1].ends_with('…'), "{rows:?}");
    }

    #[test]
    fn times_are_utc_dates() {
        assert_eq!(format_time(0), "1970-01-01 00:00");
        assert_eq!(format_time(1_796_173_496), "2026-12-02 01:04");
        assert_eq!(format_time(951_782_400), "2000-02-29 00:00");
    }
}
