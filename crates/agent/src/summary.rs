//! [`summarize_transcript`]: the deterministic summary of a transcript that
//! [`Agent::compact`](crate::Agent::compact) returns by default, for agents without a model.

use tandem_protocol::{McpToolCallStatus, ThreadItem, Turn, UserInput};

/// The most characters of one transcript entry a deterministic summary keeps.
const MAX_ENTRY_CHARS: usize = 200;

/// The most entries a deterministic summary keeps (the latest ones): a summary must stay
/// small however long the thread grew.
const MAX_ENTRIES: usize = 40;

/// A patch status as the summary words it.
fn patch_status(status: tandem_protocol::PatchApplyStatus) -> &'static str {
    use tandem_protocol::PatchApplyStatus;
    match status {
        PatchApplyStatus::InProgress => "in progress",
        PatchApplyStatus::Completed => "applied",
        PatchApplyStatus::Failed => "failed",
        PatchApplyStatus::Declined => "declined",
    }
}

/// A deterministic summary of `history`: one line per message, command, tool call and file change (the
/// latest 40, each cut to 200 characters), under a heading that
/// says how many turns it covers. An earlier summary appears as the user input it was sent as.
pub fn summarize_transcript(history: &[Turn]) -> String {
    let mut entries: Vec<String> = Vec::new();
    for turn in history {
        for item in &turn.items {
            let entry = match item {
                ThreadItem::UserMessage { content, .. } => {
                    let text: Vec<&str> = content
                        .iter()
                        .filter_map(|input| match input {
                            UserInput::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    format!("user: {}", text.join(" "))
                }
                ThreadItem::AgentMessage { text, .. } => format!("agent: {text}"),
                ThreadItem::CommandExecution {
                    command, exit_code, ..
                } => match exit_code {
                    Some(code) => format!("command: {command} (exit {code})"),
                    None => format!("command: {command}"),
                },
                ThreadItem::DynamicToolCall { tool, success, .. } => match success {
                    Some(true) => format!("tool: {tool} (succeeded)"),
                    Some(false) => format!("tool: {tool} (failed)"),
                    None => format!("tool: {tool}"),
                },
                ThreadItem::McpToolCall {
                    server,
                    tool,
                    status,
                    ..
                } => match status {
                    McpToolCallStatus::Completed => format!("tool: {server}/{tool} (succeeded)"),
                    McpToolCallStatus::Failed => format!("tool: {server}/{tool} (failed)"),
                    McpToolCallStatus::InProgress => format!("tool: {server}/{tool}"),
                },
                ThreadItem::FileChange {
                    changes, status, ..
                } => {
                    let paths: Vec<&str> =
                        changes.iter().map(|change| change.path.as_str()).collect();
                    format!(
                        "file change: {} ({})",
                        paths.join(", "),
                        patch_status(*status)
                    )
                }
                ThreadItem::ContextCompaction { .. } | ThreadItem::Reasoning { .. } => continue,
            };
            entries.push(cut(&entry.replace('\n', " "), MAX_ENTRY_CHARS));
        }
    }
    let skipped = entries.len().saturating_sub(MAX_ENTRIES);
    let mut summary = format!(
        "Summary of {} earlier turn{}:",
        history.len(),
        if history.len() == 1 { "" } else { "s" }
    );
    if skipped > 0 {
        summary.push_str(&format!("\n({skipped} older entries left out)"));
    }
    for entry in &entries[skipped..] {
        summary.push_str("\n- ");
        summary.push_str(entry);
    }
    summary
}

/// `text` cut to at most `max` characters, with `…` marking a cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_protocol::{TurnItemsView, TurnStatus};

    fn turn(id: &str, items: Vec<ThreadItem>) -> Turn {
        Turn {
            id: id.to_owned(),
            items,
            items_view: TurnItemsView::Full,
            status: TurnStatus::Completed,
            error: None,
            started_at: None,
            completed_at: None,
            duration_ms: None,
        }
    }

    fn said(id: &str, user: &str, agent: &str) -> Turn {
        turn(
            id,
            vec![
                ThreadItem::UserMessage {
                    id: format!("{id}-u"),
                    content: vec![UserInput::text(user)],
                    client_id: None,
                },
                ThreadItem::AgentMessage {
                    id: format!("{id}-a"),
                    text: agent.to_owned().into(),
                },
            ],
        )
    }

    #[test]
    fn a_summary_lists_each_message_in_order() {
        let history = [said("1", "hello", "hi"), said("2", "bye\nnow", "ok")];
        assert_eq!(
            summarize_transcript(&history),
            "Summary of 2 earlier turns:\n- user: hello\n- agent: hi\n- user: bye now\n- agent: ok"
        );
    }

    #[test]
    fn a_summary_stays_bounded() {
        let long = "x".repeat(1000);
        let history: Vec<Turn> = (0..100)
            .map(|index| said(&index.to_string(), &long, "ok"))
            .collect();
        let summary = summarize_transcript(&history);
        assert!(summary.starts_with("Summary of 100 earlier turns:\n(160 older entries left out)"));
        assert_eq!(summary.lines().count(), 2 + MAX_ENTRIES);
        assert!(
            summary
                .lines()
                .all(|line| line.chars().count() <= MAX_ENTRY_CHARS + 10)
        );
    }

    #[test]
    fn compaction_items_are_not_entries() {
        let history = [turn(
            "c",
            vec![ThreadItem::ContextCompaction {
                id: "c-compaction".into(),
            }],
        )];
        assert_eq!(summarize_transcript(&history), "Summary of 1 earlier turn:");
    }
}
