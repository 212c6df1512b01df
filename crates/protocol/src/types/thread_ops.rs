//! The params, results and notifications of the thread maintenance requests (docs/protocol.md
//! section 4): archive and unarchive, compaction, revert and rollback, and the attachment
//! listing. Kept apart from `threads` because they act on a thread's stored history rather than
//! on its live session.

#[allow(unused_imports)]
use super::*;

/// `thread/archive` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadArchiveParams {
    /// The thread.
    pub thread_id: String,
}

/// `thread/unarchive` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadUnarchiveParams {
    /// The thread.
    pub thread_id: String,
}

/// `thread/unarchive` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadUnarchiveResponse {
    /// The thread, `notLoaded`, without turns.
    pub thread: Thread,
}

/// `thread/archived` params: sent to every initialized connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadArchivedNotification {
    /// The thread.
    pub thread_id: String,
}

/// `thread/unarchived` params: sent to every initialized connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadUnarchivedNotification {
    /// The thread.
    pub thread_id: String,
}

/// `thread/compact/start` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadCompactStartParams {
    /// The thread (loaded).
    pub thread_id: String,
}

/// `thread/compacted` params: the compaction turn `turnId` stored its summary. Sent after the
/// `contextCompaction` item completes and before `turn/completed` (the reference marks it
/// deprecated in favour of the item; clients still listen for it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ContextCompactedNotification {
    /// The thread.
    pub thread_id: String,
    /// The compaction turn.
    pub turn_id: String,
}

/// `thread/revert` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadRevertParams {
    /// The thread.
    pub thread_id: String,
    /// The first turn to drop: it and every later turn are removed from the stored history.
    pub before_turn_id: String,
    /// Tandem extension: `true` also puts back the files the dropped turns changed through
    /// patches (docs/protocol.md, "Undoing file changes"); omitted or `false` touches no file,
    /// as in the reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_files: Option<bool>,
}

/// `thread/revert` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadRevertResponse {
    /// The thread after the revert; `turns` is always empty (page them with
    /// `thread/turns/list`).
    pub thread: Thread,
    /// Always `null`: start `thread/turns/list` without a cursor.
    pub turns_backwards_cursor: Option<String>,
    /// Always `null`.
    pub items_backwards_cursor: Option<String>,
    /// Tandem extension, with `restoreFiles: true` only: what became of the files.
    #[serde(flatten)]
    pub file_restore: FileRestoreResult,
}

/// `thread/reverted` params: sent to the thread's subscribers after the `thread/revert` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadRevertedNotification {
    /// The thread.
    pub thread_id: String,
}

/// `thread/rollback` params (the name before upstream 0.171; `thread/revert` replaces it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadRollbackParams {
    /// The thread.
    pub thread_id: String,
    /// How many turns to drop from the end (at least 1).
    pub num_turns: u32,
    /// Tandem extension: as `thread/revert`'s `restoreFiles`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_files: Option<bool>,
}

/// `thread/rollback` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadRollbackResponse {
    /// The thread after the rollback, with its remaining turns.
    pub thread: Thread,
    /// Tandem extension, with `restoreFiles: true` only: what became of the files.
    #[serde(flatten)]
    pub file_restore: FileRestoreResult,
}

/// Tandem extension: what `restoreFiles: true` did to the files the reverted turns changed
/// through patches (docs/protocol.md, "Undoing file changes"). Every member is absent without
/// `restoreFiles: true`, so the answer is then the reference's; with it, every member is
/// present (possibly empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FileRestoreResult {
    /// The files now as they were before the reverted turns (absolute paths, sorted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_files: Option<Vec<String>>,
    /// The files left alone, each with why (changed on disk since a turn wrote it, outside
    /// the writable roots, or of a turn whose earlier contents were not kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_files: Option<Vec<SkippedFile>>,
    /// The reverted turns whose earlier file contents were not kept (past a bound): their
    /// files are among `skippedFiles`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrestorable_turns: Option<Vec<String>>,
}

/// Tandem extension: a file `restoreFiles` left alone, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct SkippedFile {
    /// The file (absolute).
    pub path: String,
    /// Why it was not restored, in words.
    pub reason: String,
}

/// `thread/attachment/list` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentListParams {
    /// The thread.
    pub thread_id: String,
    /// `nextCursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size (default 50; 0 counts as 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// `thread/attachment/list` result: attachments oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentListResponse {
    /// One page of attachments.
    pub data: Vec<ThreadAttachment>,
    /// Cursor of the next page, if any.
    pub next_cursor: Option<String>,
}
