//! The params and results of the thread and turn requests (docs/protocol.md section 4).

#[allow(unused_imports)]
use super::*;

/// Thread settings a client may set on `thread/start` and override on `thread/resume` and
/// `thread/fork`; flattened into those params.
///
/// Every member is three-state: omitted keeps the current value (the server default on
/// `thread/start`), `null` asks for the server default (no name, for `name`), a value sets it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadOverrides {
    /// Working directory (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<String>>"),
        ts(as = "Option<String>")
    )]
    pub cwd: Option<Option<String>>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<String>>"),
        ts(as = "Option<String>")
    )]
    pub model: Option<Option<String>>,
    /// Approval policy (any input spelling).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<ApprovalPolicy>>"),
        ts(as = "Option<ApprovalPolicy>")
    )]
    pub approval_policy: Option<Option<ApprovalPolicy>>,
    /// Sandbox mode of the thread's commands (`null` asks for the server default).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<SandboxMode>>"),
        ts(as = "Option<SandboxMode>")
    )]
    pub sandbox: Option<Option<SandboxMode>>,
    /// Thread name.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<String>>"),
        ts(as = "Option<String>")
    )]
    pub name: Option<Option<String>>,
    /// Configuration overrides under config-file (snake_case) keys.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<Map<String, Value>>>"),
        ts(as = "Option<Map<String, Value>>")
    )]
    pub config: Option<Option<Map<String, Value>>>,
}

/// `thread/start` params; every member is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartParams {
    /// Initial settings.
    #[serde(flatten)]
    pub overrides: ThreadOverrides,
    /// Discard the thread instead of persisting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    /// Tools the client serves (experimental: `thread/start.dynamicTools`). `null` counts as
    /// omitted, so it does not require the capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_tools: Option<Vec<DynamicToolSpec>>,
    // i-idem:
    /// Tandem extension: a client-chosen key that makes the request idempotent. A retry with
    /// the same key (and the same params) answers with the thread the first request created
    /// and creates nothing; the same key with other params is refused with -32600. Remembered
    /// for 24 hours (docs/protocol.md, "Idempotent requests").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// `thread/start` result; the caller is subscribed to the thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartResponse {
    /// The new thread.
    pub thread: Thread,
    /// The thread's settings.
    #[serde(flatten)]
    pub session: SessionSettings,
    /// recon: where the new thread's event stream stands for the caller (as in
    /// `thread/resume`): a client that loses its connection before the thread's first event
    /// resumes from it without a gap. Omitted by servers without cursors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<EventCursor>,
}

/// `thread/resume` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeParams {
    /// The thread.
    pub thread_id: String,
    /// Settings to change.
    #[serde(flatten)]
    pub overrides: ThreadOverrides,
    /// Leave `thread.turns` empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_turns: Option<bool>,
    /// Experimental: answer with this page of turns in `initialTurnsPage` and leave
    /// `thread.turns` empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_turns_page: Option<ThreadResumeInitialTurnsPageParams>,
    /// s-seq: the cursor of the last notification about this thread the client saw. Every
    /// later event still in the server's replay window is sent before any live one; if that
    /// is not possible the result says `gap: true` and carries the full thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<EventCursor>,
}

/// `thread/resume` result; the caller is subscribed to the thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeResponse {
    /// The thread, with all its turns unless `excludeTurns` or `initialTurnsPage` was given.
    pub thread: Thread,
    /// The thread's settings.
    #[serde(flatten)]
    pub session: SessionSettings,
    /// The page asked for by `initialTurnsPage`; omitted when it was not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_turns_page: Option<TurnsPage>,
    /// `thread/turns/list` cursor (with `sortDirection: "desc"`) whose first page starts at
    /// the newest turn, inclusive; `null` for a thread without turns.
    #[serde(default)]
    pub turns_backwards_cursor: Option<String>,
    /// `thread/items/list` cursor (with `sortDirection: "desc"`) whose first page starts at
    /// the newest item, inclusive; `null` for a thread without items.
    #[serde(default)]
    pub items_backwards_cursor: Option<String>,
    /// s-seq: where the thread's event stream stands for this connection: every notification
    /// after it is (or was, when replayed) sent to it. Omitted by servers without cursors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<EventCursor>,
    /// s-seq: present when the request carried a `cursor`: `true` if events after it are no
    /// longer in the replay window (or it is from another server instance); `thread` then
    /// holds every turn to rebuild from, whatever `excludeTurns` said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap: Option<bool>,
    /// s-seq: present when the request carried a `cursor` and there was no gap: how many
    /// notifications were replayed (sent before this result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed: Option<u64>,
}

/// `thread/read` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadParams {
    /// The thread.
    pub thread_id: String,
    /// Fill `thread.turns` (default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_turns: Option<bool>,
}

/// `thread/read` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadResponse {
    /// The thread; status `notLoaded` when not loaded.
    pub thread: Thread,
}

/// `sortDirection` of list requests, by creation time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum SortDirection {
    /// Oldest first.
    Asc,
    /// Newest first (the default).
    #[default]
    Desc,
}

/// The `cwd` filter of `thread/list`: one path or several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(untagged)]
pub enum CwdFilter {
    /// Threads in this directory.
    One(String),
    /// Threads in any of these directories.
    Many(Vec<String>),
}

impl CwdFilter {
    /// The accepted directories.
    pub fn paths(&self) -> &[String] {
        match self {
            Self::One(path) => std::slice::from_ref(path),
            Self::Many(paths) => paths,
        }
    }
}

/// `thread/list` params; every member is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadListParams {
    /// `nextCursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Order by creation time (default `desc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_direction: Option<SortDirection>,
    /// Only threads whose `source` is one of these kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_kinds: Option<Vec<String>>,
    /// Only threads in these directories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<CwdFilter>,
    /// Only threads whose name contains this substring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_term: Option<String>,
    /// `true`: archived threads only; `false` or omitted: unarchived threads only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
    /// Tandem has no thread hierarchy: any value matches no thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_thread_id: Option<String>,
    /// Tandem has no thread hierarchy: any value matches no thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ancestor_thread_id: Option<String>,
}

/// `thread/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadListResponse {
    /// One page of threads.
    pub data: Vec<Thread>,
    /// Cursor of the next page, if any.
    pub next_cursor: Option<String>,
    /// Always `null`.
    pub backwards_cursor: Option<String>,
}

/// `thread/loaded/list` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadLoadedListParams {
    /// The last id of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size (0 counts as 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// `thread/loaded/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadLoadedListResponse {
    /// Ids of loaded threads, sorted.
    pub data: Vec<String>,
    /// Cursor of the next page, if any.
    pub next_cursor: Option<String>,
}

/// `thread/turns/list` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListParams {
    /// The thread.
    pub thread_id: String,
    /// Page size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Order (default `desc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_direction: Option<SortDirection>,
    /// `nextCursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// How much of each turn's items to include (default `summary`: the first user message
    /// and the last agent message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_view: Option<TurnItemsView>,
}

/// `thread/turns/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListResponse {
    /// One page of turns.
    pub data: Vec<Turn>,
    /// Cursor of the next page, if any.
    pub next_cursor: Option<String>,
    /// Cursor for the opposite direction that includes this page's first turn again; `null`
    /// for an empty page.
    pub backwards_cursor: Option<String>,
}

/// `thread/unsubscribe` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadUnsubscribeParams {
    /// The thread.
    pub thread_id: String,
}

/// What `thread/unsubscribe` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum ThreadUnsubscribeStatus {
    /// The caller was subscribed and no longer is.
    Unsubscribed,
    /// The caller was not subscribed.
    NotSubscribed,
    /// The thread is not loaded.
    NotLoaded,
}

/// `thread/unsubscribe` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadUnsubscribeResponse {
    /// What happened.
    pub status: ThreadUnsubscribeStatus,
}

/// `thread/name/set` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadNameSetParams {
    /// The thread.
    pub thread_id: String,
    /// The new name; trimmed by the server, must not be empty.
    pub name: String,
}

/// `thread/fork` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadForkParams {
    /// The source thread.
    pub thread_id: String,
    /// Settings of the fork that differ from the source.
    #[serde(flatten)]
    pub overrides: ThreadOverrides,
    /// Discard the fork instead of persisting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    /// Leave `thread.turns` of the result empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_turns: Option<bool>,
    /// Copy history through this turn, inclusive (default: all of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn_id: Option<String>,
    // i-idem:
    /// Tandem extension: a client-chosen key, scoped to the source thread, that makes the
    /// request idempotent, as `thread/start.idempotencyKey` (docs/protocol.md, "Idempotent
    /// requests").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// `thread/fork` result; the caller is subscribed to the new thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadForkResponse {
    /// The new thread (`forkedFromId` = the source).
    pub thread: Thread,
    /// The new thread's settings.
    #[serde(flatten)]
    pub session: SessionSettings,
    /// recon: where the new thread's event stream stands for the caller, as for
    /// `thread/start`. Omitted by servers without cursors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<EventCursor>,
}

/// `thread/delete` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadDeleteParams {
    /// The thread.
    pub thread_id: String,
}

/// `thread/attachment/add` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentAddParams {
    /// The thread.
    pub thread_id: String,
    /// Attachment type (non-empty).
    pub attachment_type: String,
    /// Key, unique within the type (non-empty).
    pub identity_key: String,
    /// Any JSON.
    pub payload: Value,
}

/// Whether `thread/attachment/add` created the attachment or found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum ThreadAttachmentAddOutcome {
    /// A new attachment; `thread/attachment/updated` follows the reply.
    Created,
    /// An attachment with this type and key already existed and is returned unchanged.
    Existing,
}

/// `thread/attachment/add` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentAddResponse {
    /// Created or existing.
    pub outcome: ThreadAttachmentAddOutcome,
    /// The attachment.
    pub attachment: ThreadAttachment,
}

/// `thread/attachment/remove` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentRemoveParams {
    /// The thread.
    pub thread_id: String,
    /// Attachment type.
    pub attachment_type: String,
    /// Key within the type.
    pub identity_key: String,
}

/// `turn/start` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnStartParams {
    /// The thread.
    pub thread_id: String,
    /// The user's input.
    pub input: Vec<UserInput>,
    /// Echoed as `clientId` of the `userMessage` item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_user_message_id: Option<String>,
    /// Approval policy from this turn on: omitted keeps the thread's, `null` asks for the
    /// server default.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<ApprovalPolicy>>"),
        ts(as = "Option<ApprovalPolicy>")
    )]
    pub approval_policy: Option<Option<ApprovalPolicy>>,
    /// Model from this turn on: omitted keeps the thread's, `null` asks for the server default.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<String>>"),
        ts(as = "Option<String>")
    )]
    pub model: Option<Option<String>>,
    /// Sandbox policy from this turn on: omitted keeps the thread's, `null` asks for the
    /// server default.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<SandboxPolicy>>"),
        ts(as = "Option<SandboxPolicy>")
    )]
    pub sandbox_policy: Option<Option<SandboxPolicy>>,
    /// Reasoning effort from this turn on (`none`, `minimal`, `low`, `medium`, `high`,
    /// `xhigh`): omitted keeps the thread's, `null` asks for the server default (config
    /// `model_reasoning_effort`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<String>>"),
        ts(as = "Option<String>")
    )]
    pub effort: Option<Option<String>>,
    /// Reasoning summary from this turn on (`auto`, `concise`, `detailed`, `none`): omitted
    /// keeps the thread's, `null` asks for the server default (config `model_reasoning_summary`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<String>>"),
        ts(as = "Option<String>")
    )]
    pub summary: Option<Option<String>>,
}

/// `turn/start` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnStartResponse {
    /// The new turn (`inProgress`, no items, `itemsView: notLoaded`), or the active turn the
    /// input was added to.
    pub turn: Turn,
}

/// `turn/steer` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerParams {
    /// The thread.
    pub thread_id: String,
    /// The turn the client believes is active (must not be empty).
    pub expected_turn_id: String,
    /// Input to add to the active turn (must not be empty).
    pub input: Vec<UserInput>,
    /// Echoed as `clientId` of the `userMessage` item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_user_message_id: Option<String>,
}

/// `turn/steer` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerResponse {
    /// The active turn the input was added to.
    pub turn_id: String,
}

/// `turn/interrupt` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnInterruptParams {
    /// The thread.
    pub thread_id: String,
    /// The turn the client believes is active.
    pub turn_id: String,
}
