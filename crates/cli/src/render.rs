//! How `tandem run` and `tandem chat` show what a coding agent does besides talking: a file
//! change as a coloured unified diff, the turn's plan as a checklist, and reasoning dimmed and
//! folded to one line. Pure text building (no I/O), so that both front ends print the same
//! thing and tests can check it; colour is the caller's decision ([`colour_for`]).

use std::io::IsTerminal;

use tandem_protocol::{
    FileUpdateChange, PatchApplyStatus, PatchChangeKind, TurnPlanStep, TurnPlanStepStatus,
};

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";

/// The longest a folded reasoning line gets, in characters, before it is cut with `…`.
const FOLDED_REASONING_CHARS: usize = 100;

/// Whether to colour what goes to a stream that `is_terminal`: only on a terminal, and never
/// when `NO_COLOR` is set to something (<https://no-color.org>).
pub(crate) fn colour_for(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// Whether to colour what is written to stdout.
pub(crate) fn stdout_colour() -> bool {
    colour_for(std::io::stdout().is_terminal())
}

/// Whether to colour what is written to stderr.
pub(crate) fn stderr_colour() -> bool {
    colour_for(std::io::stderr().is_terminal())
}

fn paint(text: &str, codes: &str, colour: bool) -> String {
    if colour && !text.is_empty() {
        format!("{codes}{text}{RESET}")
    } else {
        text.to_owned()
    }
}

/// A unified diff, one string per line: file headers bold, hunk headers cyan, added lines
/// green, removed lines red, context plain. A line's part (header or hunk) is tracked, so a
/// removed line that reads `--- x` is still a removed line.
pub(crate) fn diff_lines(diff: &str, colour: bool) -> Vec<String> {
    let mut in_hunk = false;
    diff.lines()
        .map(|line| {
            if line.starts_with("diff --git ") {
                in_hunk = false;
            }
            if line.starts_with("@@") {
                in_hunk = true;
                return paint(line, CYAN, colour);
            }
            if !in_hunk {
                return paint(line, BOLD, colour);
            }
            match line.as_bytes().first() {
                Some(b'+') => paint(line, GREEN, colour),
                Some(b'-') => paint(line, RED, colour),
                _ => line.to_owned(),
            }
        })
        .collect()
}

/// What a change does to its file, in a word or two: `add a.txt`, `update b.txt -> c.txt`.
fn change_summary(change: &FileUpdateChange) -> String {
    match &change.kind {
        PatchChangeKind::Add => format!("add {}", change.path),
        PatchChangeKind::Delete => format!("delete {}", change.path),
        PatchChangeKind::Update {
            move_path: Some(to),
        } => format!("update {} -> {to}", change.path),
        PatchChangeKind::Update { move_path: None } => format!("update {}", change.path),
    }
}

/// The lines that show a file change: a title naming every file, then each file's diff.
pub(crate) fn file_change_lines(changes: &[FileUpdateChange], colour: bool) -> Vec<String> {
    let summaries: Vec<String> = changes.iter().map(change_summary).collect();
    let mut lines = vec![paint(
        &format!("patch: {}", summaries.join(", ")),
        BOLD,
        colour,
    )];
    for change in changes {
        lines.extend(diff_lines(&change.diff, colour));
    }
    lines
}

/// The line that says how a file change ended; `None` while it is in progress.
pub(crate) fn file_change_outcome(
    changes: &[FileUpdateChange],
    status: PatchApplyStatus,
) -> Option<String> {
    let paths: Vec<&str> = changes.iter().map(|change| change.path.as_str()).collect();
    let what = match status {
        PatchApplyStatus::InProgress => return None,
        PatchApplyStatus::Completed => "applied",
        PatchApplyStatus::Declined => "declined; no file changed",
        PatchApplyStatus::Failed => "failed; no file changed",
    };
    Some(if paths.is_empty() {
        format!("(patch {what})")
    } else {
        format!("(patch {what}: {})", paths.join(", "))
    })
}

/// The question of a file change approval: why it is asked, if the server said, then the
/// y/a/n question.
pub(crate) fn file_change_question(reason: Option<&str>) -> Vec<String> {
    let mut lines: Vec<String> = reason
        .map(|reason| format!("({reason})"))
        .into_iter()
        .collect();
    lines.push(FILE_CHANGE_QUESTION.to_owned());
    lines
}

/// The question asked about a file change.
pub(crate) const FILE_CHANGE_QUESTION: &str =
    "Apply these changes? [y = yes, a = yes for this session, n = no]";

/// The plan as a checklist: `[x]` completed, `[~]` in progress (bold), `[ ]` pending, after
/// the agent's explanation if it gave one.
pub(crate) fn plan_lines(
    explanation: Option<&str>,
    steps: &[TurnPlanStep],
    colour: bool,
) -> Vec<String> {
    let mut lines = vec![paint("plan:", BOLD, colour)];
    if let Some(explanation) = explanation.map(str::trim).filter(|text| !text.is_empty()) {
        lines.push(paint(&format!("  {explanation}"), DIM, colour));
    }
    for step in steps {
        let line = match step.status {
            TurnPlanStepStatus::Completed => paint(&format!("  [x] {}", step.step), DIM, colour),
            TurnPlanStepStatus::InProgress => paint(&format!("  [~] {}", step.step), BOLD, colour),
            TurnPlanStepStatus::Pending => format!("  [ ] {}", step.step),
        };
        lines.push(line);
    }
    lines
}

/// A reasoning item folded to one dimmed line: its summary's first line (else the reasoning
/// text's), cut at [`FOLDED_REASONING_CHARS`]; `…` says that more was folded away. `None`
/// when it holds no text.
pub(crate) fn reasoning_folded(
    summary: &[String],
    content: &[String],
    colour: bool,
) -> Option<String> {
    let text = if summary.iter().any(|part| !part.trim().is_empty()) {
        summary.join("\n")
    } else {
        content.join("\n")
    };
    let text = text.trim();
    let first = text.lines().find(|line| !line.trim().is_empty())?.trim();
    let mut line: String = first.chars().take(FOLDED_REASONING_CHARS).collect();
    if line.len() < text.len() {
        line.push('…');
    }
    Some(paint(&format!("thinking: {line}"), DIM, colour))
}

/// A reasoning item in full, dimmed: each summary part, then the reasoning text.
pub(crate) fn reasoning_full(summary: &[String], content: &[String], colour: bool) -> Vec<String> {
    let mut lines = Vec::new();
    for part in summary.iter().chain(content).map(|part| part.trim()) {
        for line in part.lines() {
            lines.push(paint(&format!("thinking: {line}"), DIM, colour));
        }
    }
    lines
}

/// The rows `lines` take on a terminal `columns` wide (a line longer than the terminal wraps),
/// for moving the cursor back over them.
pub(crate) fn rows_on_screen(lines: &[String], columns: usize) -> usize {
    let columns = columns.max(1);
    lines
        .iter()
        .map(|line| visible_chars(line).div_ceil(columns).max(1))
        .sum()
}

/// The characters of `line` a terminal shows (escape sequences left out).
fn visible_chars(line: &str) -> usize {
    let mut count = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // A CSI sequence: up to its final byte.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            count += 1;
        }
    }
    count
}

/// The escape sequence that moves the cursor up `rows` rows to the start of a line and clears
/// from there to the end of the screen: printed before a plan to replace the one above.
pub(crate) fn erase_rows_above(rows: usize) -> String {
    format!("\r\x1b[{rows}A\x1b[J")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n \
                        keep\n--- old\n+new\n";

    #[test]
    fn a_diff_is_coloured_by_part() {
        let lines = diff_lines(DIFF, true);
        assert_eq!(lines[0], format!("{BOLD}diff --git a/a.txt b/a.txt{RESET}"));
        assert_eq!(lines[1], format!("{BOLD}--- a/a.txt{RESET}"));
        assert_eq!(lines[2], format!("{BOLD}+++ b/a.txt{RESET}"));
        assert_eq!(lines[3], format!("{CYAN}@@ -1,2 +1,2 @@{RESET}"));
        assert_eq!(lines[4], " keep");
        // Inside a hunk, `--- old` is a removed line `-- old`, not a file header.
        assert_eq!(lines[5], format!("{RED}--- old{RESET}"));
        assert_eq!(lines[6], format!("{GREEN}+new{RESET}"));
    }

    #[test]
    fn without_colour_a_diff_is_as_sent() {
        assert_eq!(diff_lines(DIFF, false).join("\n") + "\n", DIFF);
        assert!(
            !file_change_lines(&[change()], false)
                .concat()
                .contains('\x1b')
        );
    }

    fn change() -> FileUpdateChange {
        FileUpdateChange {
            path: "/w/a.txt".into(),
            kind: PatchChangeKind::Update {
                move_path: Some("/w/b.txt".into()),
            },
            diff: DIFF.into(),
        }
    }

    #[test]
    fn a_file_change_names_its_files_and_its_outcome() {
        let lines = file_change_lines(&[change()], false);
        assert_eq!(lines[0], "patch: update /w/a.txt -> /w/b.txt");
        assert_eq!(lines.len(), 1 + 7);
        assert_eq!(
            file_change_outcome(&[change()], PatchApplyStatus::Declined).as_deref(),
            Some("(patch declined; no file changed: /w/a.txt)")
        );
        assert_eq!(
            file_change_outcome(&[change()], PatchApplyStatus::InProgress),
            None
        );
    }

    #[test]
    fn a_plan_is_a_checklist() {
        let step = |step: &str, status| TurnPlanStep {
            step: step.into(),
            status,
        };
        let steps = [
            step("read", TurnPlanStepStatus::Completed),
            step("fix", TurnPlanStepStatus::InProgress),
            step("test", TurnPlanStepStatus::Pending),
        ];
        assert_eq!(
            plan_lines(Some("because"), &steps, false),
            [
                "plan:",
                "  because",
                "  [x] read",
                "  [~] fix",
                "  [ ] test"
            ]
        );
        assert_eq!(
            plan_lines(None, &steps, true)[2],
            format!("{BOLD}  [~] fix{RESET}")
        );
    }

    #[test]
    fn reasoning_folds_to_its_first_summary_line() {
        let summary = vec!["weigh it".to_owned(), "pick one".to_owned()];
        let content = vec!["weigh it | pick one".to_owned()];
        assert_eq!(
            reasoning_folded(&summary, &content, false).as_deref(),
            Some("thinking: weigh it…")
        );
        assert_eq!(
            reasoning_folded(&[], &["only this".to_owned()], false).as_deref(),
            Some("thinking: only this")
        );
        assert_eq!(
            reasoning_folded(&summary, &[], true),
            Some(format!("{DIM}thinking: weigh it…{RESET}"))
        );
        assert_eq!(reasoning_folded(&[], &[], false), None);
        assert_eq!(
            reasoning_full(&summary, &content, false),
            [
                "thinking: weigh it",
                "thinking: pick one",
                "thinking: weigh it | pick one"
            ]
        );
    }

    #[test]
    fn rows_count_wrapping_and_ignore_escapes() {
        let lines = vec![
            format!("{BOLD}abcd{RESET}"),
            "abcdefghij".to_owned(),
            String::new(),
        ];
        assert_eq!(rows_on_screen(&lines, 4), 1 + 3 + 1);
    }

    #[test]
    fn colour_needs_a_terminal() {
        assert!(!colour_for(false));
    }
}
