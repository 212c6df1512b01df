//! What a turn cut short by a crash becomes when the store is opened again (issue 13 point 2):
//! the turn `interrupted` with a reason, and every item it left started closed, so that no
//! reader (a client, or an agent replaying the history) meets a turn or a tool call that will
//! never end. Shared by every store so that they agree on the result.

use tandem_protocol::{
    CommandExecutionStatus, DynamicToolCallOutputContentItem, DynamicToolCallStatus,
    McpToolCallError, McpToolCallStatus, PatchApplyStatus, ThreadItem, Turn, TurnError, TurnStatus,
};

/// The reason recorded on a turn that was still running when the server stopped.
pub const INTERRUPTED_BY_STOP: &str = "the server stopped before this turn ended";

/// Closes `turn` if it is still `inProgress`: status `interrupted`, the reason as its error,
/// and every started item closed (see [`close_unfinished_item`]). Returns whether it changed.
pub fn close_unfinished_turn(turn: &mut Turn) -> bool {
    if turn.status != TurnStatus::InProgress {
        return false;
    }
    turn.status = TurnStatus::Interrupted;
    turn.error = Some(TurnError {
        message: INTERRUPTED_BY_STOP.to_owned(),
        additional_details: None,
    });
    for item in &mut turn.items {
        close_unfinished_item(item);
    }
    true
}

/// Closes an item left started: a command still `inProgress` becomes `failed` with no exit
/// code and no output (it may have run, so `declined` would be untrue); a dynamic tool call
/// still `inProgress` becomes `failed` with an output that says it was interrupted; a file
/// change still `inProgress` becomes `failed` keeping its planned changes, which name every
/// file that may or may not have been written (docs/reliability.md, "A patch cut short").
/// Returns whether it changed.
pub fn close_unfinished_item(item: &mut ThreadItem) -> bool {
    match item {
        ThreadItem::CommandExecution { status, .. }
            if *status == CommandExecutionStatus::InProgress =>
        {
            *status = CommandExecutionStatus::Failed;
            true
        }
        ThreadItem::DynamicToolCall {
            status,
            content_items,
            success,
            ..
        } if *status == DynamicToolCallStatus::InProgress => {
            *status = DynamicToolCallStatus::Failed;
            *success = Some(false);
            *content_items = Some(vec![DynamicToolCallOutputContentItem::InputText {
                text: format!("interrupted, no output: {INTERRUPTED_BY_STOP}").into(),
            }]);
            true
        }
        ThreadItem::FileChange { status, .. } if *status == PatchApplyStatus::InProgress => {
            *status = PatchApplyStatus::Failed;
            true
        }
        // mcp30: an MCP tool call cut short fails with an error saying so.
        ThreadItem::McpToolCall { status, error, .. }
            if *status == McpToolCallStatus::InProgress =>
        {
            *status = McpToolCallStatus::Failed;
            *error = Some(McpToolCallError {
                message: format!("interrupted, no result: {INTERRUPTED_BY_STOP}"),
            });
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use tandem_protocol::{FileUpdateChange, PatchChangeKind};

    use super::*;

    #[test]
    fn a_file_change_cut_short_fails_and_keeps_the_files_it_may_have_written() {
        let change = FileUpdateChange {
            path: "/w/a.txt".into(),
            kind: PatchChangeKind::Update { move_path: None },
            diff: "diff --git a/a.txt b/a.txt\n".into(),
        };
        let mut item = ThreadItem::FileChange {
            id: "p".into(),
            changes: vec![change.clone()],
            status: PatchApplyStatus::InProgress,
        };
        assert!(close_unfinished_item(&mut item));
        assert_eq!(
            item,
            ThreadItem::FileChange {
                id: "p".into(),
                changes: vec![change],
                status: PatchApplyStatus::Failed,
            }
        );
        // Finished items are left alone.
        assert!(!close_unfinished_item(&mut item));
    }
}
