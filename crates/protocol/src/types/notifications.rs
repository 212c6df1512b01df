//! The params of the server notifications (docs/protocol.md section 6).

#[allow(unused_imports)]
use super::*;

/// `thread/started` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartedNotification {
    /// The new thread.
    pub thread: Thread,
}

/// `thread/status/changed` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadStatusChangedNotification {
    /// The thread.
    pub thread_id: String,
    /// Its new status.
    pub status: ThreadStatus,
}

/// `thread/closed` params: the thread was unloaded or deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadClosedNotification {
    /// The thread.
    pub thread_id: String,
}

/// `thread/deleted` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadDeletedNotification {
    /// The thread.
    pub thread_id: String,
}

/// `thread/name/updated` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadNameUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The new name.
    pub thread_name: Option<String>,
}

/// What happened to an attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum ThreadAttachmentOperation {
    /// Added.
    Created,
    /// Removed.
    Deleted,
}

/// `thread/attachment/updated` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// Attachment type.
    pub attachment_type: String,
    /// Key within the type.
    pub identity_key: String,
    /// The attachment's id.
    pub attachment_id: String,
    /// Created or deleted.
    pub operation: ThreadAttachmentOperation,
}

/// `turn/started` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnStartedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn (no items yet).
    pub turn: Turn,
}

/// `turn/completed` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnCompletedNotification {
    /// The thread.
    pub thread_id: String,
    /// The finished turn.
    pub turn: Turn,
}

/// `item/started` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ItemStartedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item as it starts.
    pub item: ThreadItem,
    /// Unix milliseconds.
    pub started_at_ms: i64,
}

/// `item/completed` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ItemCompletedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The finished item.
    pub item: ThreadItem,
    /// Unix milliseconds.
    pub completed_at_ms: i64,
}

/// `item/agentMessage/delta` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct AgentMessageDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `agentMessage` item.
    pub item_id: String,
    /// Text to append.
    pub delta: SharedText,
}

/// `item/commandExecution/outputDelta` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionOutputDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `commandExecution` item.
    pub item_id: String,
    /// Output to append.
    pub delta: SharedText,
}

/// `serverRequest/resolved` params: a server request was answered or cancelled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ServerRequestResolvedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn, so that turn-scoped subscribers see it.
    pub turn_id: String,
    /// The server request's id.
    pub request_id: RequestId,
}

/// `error` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ErrorNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// What went wrong.
    pub error: TurnError,
    /// `true` when the server retries what failed (the turn goes on, e.g. a model request
    /// that is sent again: `Reconnecting... 2/5`); `false` when the error ends the turn.
    pub will_retry: bool,
}
