//! The file changes an agent makes through patches (docs/protocol.md section 7, "File
//! changes"): the `fileChange` item's parts, its approval request
//! `item/fileChange/requestApproval`, and the notifications `item/fileChange/patchUpdated` and
//! `turn/diff/updated`, in the reference app-server's shapes (its JSON Schema, release 0.169.0)
//! so that clients written for it render them unchanged.

#[allow(unused_imports)]
use super::*;

/// What a patch does to one file: `{type: "add"}`, `{type: "delete"}` or
/// `{type: "update", move_path}`.
///
/// `move_path` is spelled in snake case on the wire, as the reference spells it (the one
/// member of its v2 items that is).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PatchChangeKind {
    /// A new file.
    Add,
    /// A removed file.
    Delete,
    /// A changed file, renamed to `move_path` when that is set.
    Update {
        /// The file's new path when the patch also moves it.
        #[serde(default)]
        move_path: Option<String>,
    },
}

/// One file of a `fileChange` item: its path, what happens to it, and the unified diff of
/// the change (git-style headers).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FileUpdateChange {
    /// The file's absolute path (before a move).
    pub path: String,
    /// Add, delete, or update (with an optional move).
    pub kind: PatchChangeKind,
    /// The change as a unified diff.
    pub diff: String,
}

impl FileUpdateChange {
    /// What the change does to its file, in a few words: `add a.txt`, `delete b.txt`,
    /// `update c.txt`, `update c.txt -> d.txt`; what front ends title a change with.
    pub fn summary(&self) -> String {
        match &self.kind {
            PatchChangeKind::Add => format!("add {}", self.path),
            PatchChangeKind::Delete => format!("delete {}", self.path),
            PatchChangeKind::Update {
                move_path: Some(to),
            } => format!("update {} -> {to}", self.path),
            PatchChangeKind::Update { move_path: None } => format!("update {}", self.path),
        }
    }
}

/// The part of a unified diff a line belongs to, for front ends that colour it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffLineKind {
    /// `diff --git`, `---`, `+++`, `new file mode` and the like, before a hunk.
    FileHeader,
    /// `@@ -a,b +c,d @@`.
    HunkHeader,
    /// A `+` line inside a hunk.
    Added,
    /// A `-` line inside a hunk (even one that reads `--- x`).
    Removed,
    /// Any other line inside a hunk.
    Context,
}

/// Each line of the unified diff `diff` with its part. A line's part is tracked (headers until
/// the first `@@` of each file), so a removed line that reads `--- x` is not taken for a file
/// header.
pub fn diff_line_kinds(diff: &str) -> impl Iterator<Item = (&str, DiffLineKind)> {
    let mut in_hunk = false;
    diff.lines().map(move |line| {
        if line.starts_with("diff --git ") {
            in_hunk = false;
        }
        let kind = if line.starts_with("@@") {
            in_hunk = true;
            DiffLineKind::HunkHeader
        } else if !in_hunk {
            DiffLineKind::FileHeader
        } else {
            match line.as_bytes().first() {
                Some(b'+') => DiffLineKind::Added,
                Some(b'-') => DiffLineKind::Removed,
                _ => DiffLineKind::Context,
            }
        };
        (line, kind)
    })
}

/// Status of a `fileChange` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum PatchApplyStatus {
    /// Waiting for approval, or being written.
    InProgress,
    /// Every change was written.
    Completed,
    /// Nothing was written: the patch did not parse or apply, or writing failed (and what was
    /// written was undone). After a crash, an item left in progress becomes `failed` too: its
    /// changes may or may not have landed (docs/reliability.md).
    Failed,
    /// The approval was declined (or refused by the policy); nothing was written.
    Declined,
}

/// A decision on a file change approval.
///
/// Decoding is lenient, as for commands: any value other than the four listed (and the other
/// clients' words for them) decodes as [`FileChangeApprovalDecision::Decline`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum FileChangeApprovalDecision {
    /// Write these changes.
    Accept,
    /// Write these changes, and later changes to the same files without asking.
    AcceptForSession,
    /// Do not write them; the turn continues.
    Decline,
    /// Do not write them and stop the turn.
    Cancel,
}

impl<'de> Deserialize<'de> for FileChangeApprovalDecision {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(deserializer)?.as_str() {
            // Other clients' words for the same answers (see the command decision).
            Some("accept" | "allow" | "approved") => Self::Accept,
            Some("acceptForSession" | "allowForSession" | "approved_for_session") => {
                Self::AcceptForSession
            }
            Some("cancel" | "abort") => Self::Cancel,
            _ => Self::Decline,
        })
    }
}

/// `item/fileChange/requestApproval` params: may these changes be written? The changes
/// themselves are in the `fileChange` item `item_id`, started just before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The id of the `fileChange` item.
    pub item_id: String,
    /// When the request was made, unix milliseconds.
    pub started_at_ms: i64,
    /// Why the change needs approval (e.g. which paths lie outside the writable roots).
    #[serde(default)]
    pub reason: Option<String>,
    /// A root the agent asks to write beneath for the rest of the session; Tandem sends
    /// `null` (it never asks for more than the change at hand).
    #[serde(default)]
    pub grant_root: Option<String>,
}

/// The client's result for `item/fileChange/requestApproval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRequestApprovalResponse {
    /// The decision; unknown values read as `decline`.
    pub decision: FileChangeApprovalDecision,
}

/// `item/fileChange/patchUpdated` params: the changes of a `fileChange` item as they stand
/// (sent while the patch is being prepared, before the item completes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FileChangePatchUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `fileChange` item.
    pub item_id: String,
    /// Every change of the item so far.
    pub changes: Vec<FileUpdateChange>,
}

/// `turn/diff/updated` params: the unified diff of every file the turn changed through
/// patches, from each file's content when the turn first touched it to now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnDiffUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The whole turn's diff (git-style headers, renames and deletions included).
    pub diff: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_lines_are_told_apart_by_where_they_sit() {
        let diff = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n keep\n--- x\n+y\n\
                    diff --git a/g b/g\n--- a/g\n";
        let kinds: Vec<DiffLineKind> = diff_line_kinds(diff).map(|(_, kind)| kind).collect();
        use DiffLineKind::*;
        assert_eq!(
            kinds,
            [
                FileHeader, FileHeader, FileHeader, HunkHeader, Context, Removed, Added,
                FileHeader, FileHeader
            ]
        );
    }

    #[test]
    fn a_summary_names_the_move() {
        let change = FileUpdateChange {
            path: "/w/a".into(),
            kind: PatchChangeKind::Update {
                move_path: Some("/w/b".into()),
            },
            diff: String::new(),
        };
        assert_eq!(change.summary(), "update /w/a -> /w/b");
    }
}
