//! The transcript rows of a coding agent's work (issue 29, point 8): a file change as its
//! coloured unified diff under a title with its status, the turn's plan as a checklist, and
//! reasoning dimmed, folded to its first line unless the user expanded it (Ctrl-R). Pure:
//! values in, styled rows out, like the rest of the drawing code.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use tandem_protocol::{
    FileUpdateChange, PatchApplyStatus, PatchChangeKind, TurnPlanStep, TurnPlanStepStatus,
};

use crate::wrap::wrap;

/// The style of each line of a unified diff: file headers bold, hunk headers cyan, added
/// lines green, removed lines red, context plain. A line's part is tracked, so a removed line
/// that reads `--- x` is not taken for a file header.
pub(crate) fn diff_styles(diff: &str) -> Vec<(&str, Style)> {
    let mut in_hunk = false;
    diff.lines()
        .map(|line| {
            if line.starts_with("diff --git ") {
                in_hunk = false;
            }
            let style = if line.starts_with("@@") {
                in_hunk = true;
                Style::new().fg(Color::Cyan)
            } else if !in_hunk {
                Style::new().add_modifier(Modifier::BOLD)
            } else {
                match line.as_bytes().first() {
                    Some(b'+') => Style::new().fg(Color::Green),
                    Some(b'-') => Style::new().fg(Color::Red),
                    _ => Style::new(),
                }
            };
            (line, style)
        })
        .collect()
}

/// What a change does to its file: `add a.txt`, `update a.txt -> b.txt`.
pub(crate) fn change_summary(change: &FileUpdateChange) -> String {
    match &change.kind {
        PatchChangeKind::Add => format!("add {}", change.path),
        PatchChangeKind::Delete => format!("delete {}", change.path),
        PatchChangeKind::Update {
            move_path: Some(to),
        } => format!("update {} -> {to}", change.path),
        PatchChangeKind::Update { move_path: None } => format!("update {}", change.path),
    }
}

/// The rows of a file change at `width` columns: `[status] patch: ...` naming every file,
/// then each file's diff.
pub(crate) fn file_change_rows(
    changes: &[FileUpdateChange],
    status: PatchApplyStatus,
    width: usize,
) -> Vec<Line<'static>> {
    let (how, color) = match status {
        PatchApplyStatus::InProgress => ("pending", Color::Yellow),
        PatchApplyStatus::Completed => ("applied", Color::Green),
        PatchApplyStatus::Declined => ("declined", Color::DarkGray),
        PatchApplyStatus::Failed => ("failed", Color::Red),
    };
    let state = format!("[{how}] ");
    let title = if changes.is_empty() {
        "patch".to_owned()
    } else {
        let summaries: Vec<String> = changes.iter().map(change_summary).collect();
        format!("patch: {}", summaries.join(", "))
    };
    let indent = " ".repeat(state.chars().count());
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut rows = Vec::new();
    for (index, row) in wrap(&title, width.saturating_sub(indent.len()).max(1))
        .into_iter()
        .enumerate()
    {
        let prefix = if index == 0 {
            Span::styled(state.clone(), Style::new().fg(color))
        } else {
            Span::raw(indent.clone())
        };
        rows.push(Line::from(vec![prefix, Span::styled(row, bold)]));
    }
    for change in changes {
        for (line, style) in diff_styles(&change.diff) {
            rows.extend(
                wrap(line, width)
                    .into_iter()
                    .map(|row| Line::styled(row, style)),
            );
        }
    }
    rows
}

/// The rows of a plan at `width` columns: `plan` and the explanation, then a row per step,
/// `[x]` completed (dimmed), `▸` in progress (bold), `[ ]` pending.
pub(crate) fn plan_rows(
    explanation: Option<&str>,
    steps: &[TurnPlanStep],
    width: usize,
) -> Vec<Line<'static>> {
    let dim = Style::new().fg(Color::DarkGray);
    let mut rows = vec![Line::styled(
        "plan",
        Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD),
    )];
    if let Some(explanation) = explanation.map(str::trim).filter(|text| !text.is_empty()) {
        rows.extend(
            wrap(explanation, width.saturating_sub(2).max(1))
                .into_iter()
                .map(|row| Line::styled(format!("  {row}"), dim)),
        );
    }
    for step in steps {
        let (marker, style) = match step.status {
            TurnPlanStepStatus::Completed => ("[x] ", dim),
            TurnPlanStepStatus::InProgress => ("[▸] ", Style::new().add_modifier(Modifier::BOLD)),
            TurnPlanStepStatus::Pending => ("[ ] ", Style::new()),
        };
        for (index, row) in wrap(&step.step, width.saturating_sub(6).max(1))
            .into_iter()
            .enumerate()
        {
            let prefix = if index == 0 { marker } else { "    " };
            rows.push(Line::styled(format!("  {prefix}{row}"), style));
        }
    }
    rows
}

/// The rows of a reasoning item at `width` columns, dimmed: folded, one row with the first
/// line of its summary (else of its text) and how to expand it; expanded, every summary part
/// and the reasoning text.
pub(crate) fn reasoning_rows(
    summary: &[String],
    content: &[String],
    expanded: bool,
    width: usize,
) -> Vec<Line<'static>> {
    let style = Style::new()
        .fg(Color::DarkGray)
        .add_modifier(Modifier::ITALIC);
    let has_summary = summary.iter().any(|part| !part.trim().is_empty());
    if expanded {
        let mut rows = vec![Line::styled("▾ thinking (Ctrl-R folds)", style)];
        for part in summary.iter().chain(content) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            rows.extend(
                wrap(part, width.saturating_sub(2).max(1))
                    .into_iter()
                    .map(|row| Line::styled(format!("  {row}"), style)),
            );
        }
        return rows;
    }
    let text = if has_summary {
        summary.join("\n")
    } else {
        content.join("\n")
    };
    let first = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("…");
    let row = format!("▸ thinking: {first}");
    // One row: cut to the width, with `…` where it was cut.
    let mut folded = wrap(&row, width.max(2))
        .into_iter()
        .next()
        .unwrap_or_default();
    let more = folded.chars().count() < row.chars().count() || text.trim() != first;
    if more {
        let keep = width.saturating_sub(1).min(folded.chars().count());
        folded = folded.chars().take(keep).collect();
        folded.push('…');
    }
    vec![Line::styled(folded, style)]
}

/// The question of a file change approval at `width` columns: `Apply the changes to PATHS ?`.
pub(crate) fn file_change_question(paths: &[String], width: usize) -> Vec<String> {
    wrap(
        &format!("Apply the changes to {} ?", paths.join(", ")),
        width.max(4),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(rows: &[Line<'_>]) -> Vec<String> {
        rows.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_removed_line_that_looks_like_a_header_is_red() {
        let styles = diff_styles("--- a/f\n+++ b/f\n@@ -1 +1 @@\n--- x\n+y\n z\n");
        let colors: Vec<Option<Color>> = styles.iter().map(|(_, style)| style.fg).collect();
        assert_eq!(
            colors,
            [
                None,
                None,
                Some(Color::Cyan),
                Some(Color::Red),
                Some(Color::Green),
                None
            ]
        );
        assert!(styles[0].1.add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn folded_reasoning_is_one_row_that_says_there_is_more() {
        let summary = ["weigh it".to_owned(), "pick one".to_owned()];
        assert_eq!(
            text(&reasoning_rows(&summary, &[], false, 40)),
            ["▸ thinking: weigh it…"]
        );
        assert_eq!(
            text(&reasoning_rows(&[], &["short".to_owned()], false, 40)),
            ["▸ thinking: short"]
        );
        let long = ["a long line of reasoning that does not fit".to_owned()];
        let rows = text(&reasoning_rows(&long, &[], false, 20));
        assert_eq!(rows.len(), 1);
        assert!(
            rows[0].ends_with('…') && rows[0].chars().count() <= 20,
            "{rows:?}"
        );
        assert_eq!(
            text(&reasoning_rows(&summary, &[], true, 40)),
            ["▾ thinking (Ctrl-R folds)", "  weigh it", "  pick one"]
        );
    }
}
