//! apply29: samples of the file change messages: `item/fileChange/requestApproval` with its
//! result, `item/fileChange/patchUpdated` and `turn/diff/updated`.

use tandem_protocol::*;

use super::*;

const DIFF: &str = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n";

/// A change of every kind.
pub(crate) fn file_update_changes() -> Vec<FileUpdateChange> {
    vec![
        FileUpdateChange {
            path: s("/home/dev/project/a.txt"),
            kind: PatchChangeKind::Update {
                move_path: Some(s("/home/dev/project/b.txt")),
            },
            diff: s(DIFF),
        },
        FileUpdateChange {
            path: s("/home/dev/project/new.txt"),
            kind: PatchChangeKind::Add,
            diff: s("diff --git a/new.txt b/new.txt\nnew file mode 100644\n"),
        },
        FileUpdateChange {
            path: s("/home/dev/project/old.txt"),
            kind: PatchChangeKind::Delete,
            diff: s("diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n"),
        },
    ]
}

pub(crate) fn file_change_approval_params() -> FileChangeRequestApprovalParams {
    FileChangeRequestApprovalParams {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item_id: s("item-patch"),
        started_at_ms: 1_760_000_000_000,
        reason: Some(s("the patch changes /etc/hosts outside the writable roots")),
        grant_root: None,
    }
}

pub(crate) fn file_change_approval_response() -> FileChangeRequestApprovalResponse {
    FileChangeRequestApprovalResponse {
        decision: FileChangeApprovalDecision::AcceptForSession,
    }
}

pub(crate) fn file_change_patch_updated() -> ServerNotification {
    ServerNotification::FileChangePatchUpdated(FileChangePatchUpdatedNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item_id: s("item-patch"),
        changes: file_update_changes(),
    })
}

pub(crate) fn turn_diff_updated() -> ServerNotification {
    ServerNotification::TurnDiffUpdated(TurnDiffUpdatedNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        diff: s(DIFF),
    })
}
