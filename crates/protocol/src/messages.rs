//! Typed messages for every method of docs/protocol.md: the request and notification enums in both
//! directions, and which of them are experimental. The types themselves live in
//! [`crate::types`]; this module only binds method names to them.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::JSONRPCErrorError;
use crate::types::*;

/// Decodes params into `T`, mapping a failure to -32600 ``Invalid request: <serde message>``.
///
/// The exception is a base64 member that is a string but not base64: the shape is right and the
/// value is bad, so it is -32602 `invalid deltaBase64: ...` (docs/protocol.md section 8).
pub(crate) fn decode_params<T: DeserializeOwned>(params: Value) -> Result<T, JSONRPCErrorError> {
    serde_json::from_value(params).map_err(|err| {
        let message = err.to_string();
        if message.starts_with(crate::bytes_base64::INVALID_BASE64) {
            JSONRPCErrorError::invalid_params(message)
        } else {
            JSONRPCErrorError::invalid_request(format!("Invalid request: {message}"))
        }
    })
}

/// Ties a method name to its params, its result and the enum that carries it. Each method has a
/// marker type implementing this in [`client_methods`] or [`server_methods`].
pub trait RequestMethod {
    /// The wire method name.
    const METHOD: &'static str;
    /// The params type.
    type Params: serde::Serialize + DeserializeOwned + Send + 'static;
    /// The result type.
    type Response: serde::Serialize + DeserializeOwned + Send + 'static;
    /// The request enum this method belongs to.
    type Request;
    /// Wraps `params` into the request enum.
    fn into_request(request_id: crate::RequestId, params: Self::Params) -> Self::Request;
}

request_enum! {
    /// A request from client to server (docs/protocol.md sections 3 and 4).
    ClientRequest, markers = client_methods;
    /// `initialize`: the handshake.
    Initialize => "initialize" (InitializeParams) -> InitializeResponse;
    /// `config/read`: the effective server configuration.
    ConfigRead => "config/read" (ConfigReadParams) -> ConfigReadResponse;
    /// `thread/start`: create a thread and subscribe to it.
    ThreadStart => "thread/start" (ThreadStartParams) -> ThreadStartResponse;
    /// `thread/resume`: load a thread if needed and subscribe to it.
    ThreadResume => "thread/resume" (ThreadResumeParams) -> ThreadResumeResponse;
    /// `thread/read`: one thread, loaded or not.
    ThreadRead => "thread/read" (ThreadReadParams) -> ThreadReadResponse;
    /// `thread/list`: stored threads, one page at a time.
    ThreadList => "thread/list" (ThreadListParams) -> ThreadListResponse;
    /// `thread/loaded/list`: ids of the loaded threads.
    ThreadLoadedList => "thread/loaded/list" (ThreadLoadedListParams) -> ThreadLoadedListResponse;
    /// `thread/turns/list`: a thread's turns, one page at a time.
    ThreadTurnsList => "thread/turns/list" (ThreadTurnsListParams) -> ThreadTurnsListResponse;
    /// `thread/unsubscribe`: stop receiving a thread's notifications.
    ThreadUnsubscribe => "thread/unsubscribe" (ThreadUnsubscribeParams) -> ThreadUnsubscribeResponse;
    /// `thread/name/set`: rename a thread.
    ThreadNameSet => "thread/name/set" (ThreadNameSetParams) -> EmptyResponse;
    /// `thread/fork`: copy a thread into a new one and subscribe to it.
    ThreadFork => "thread/fork" (ThreadForkParams) -> ThreadForkResponse;
    /// `thread/delete`: unload a thread and remove its persisted data.
    ThreadDelete => "thread/delete" (ThreadDeleteParams) -> EmptyResponse;
    /// `thread/attachment/add`: attach client data to a thread.
    ThreadAttachmentAdd => "thread/attachment/add" (ThreadAttachmentAddParams) -> ThreadAttachmentAddResponse;
    /// `thread/attachment/remove`: remove an attachment.
    ThreadAttachmentRemove => "thread/attachment/remove" (ThreadAttachmentRemoveParams) -> EmptyResponse;
    /// `turn/start`: start a turn (or add input to the active one).
    TurnStart => "turn/start" (TurnStartParams) -> TurnStartResponse;
    /// `turn/steer`: add input to the active turn.
    TurnSteer => "turn/steer" (TurnSteerParams) -> TurnSteerResponse;
    /// `turn/interrupt`: stop the active turn.
    TurnInterrupt => "turn/interrupt" (TurnInterruptParams) -> EmptyResponse;
    /// `process/spawn` (experimental).
    ProcessSpawn => "process/spawn" (ProcessSpawnParams) -> EmptyResponse;
    /// `process/writeStdin` (experimental).
    ProcessWriteStdin => "process/writeStdin" (ProcessWriteStdinParams) -> EmptyResponse;
    /// `process/kill` (experimental).
    ProcessKill => "process/kill" (ProcessKillParams) -> EmptyResponse;
    /// `process/resizePty` (experimental).
    ProcessResizePty => "process/resizePty" (ProcessResizePtyParams) -> EmptyResponse;
    // t-threadops: archive, compaction, revert/rollback, attachment listing.
    /// `thread/archive`: unload a thread and hide it from `thread/list`.
    ThreadArchive => "thread/archive" (ThreadArchiveParams) -> EmptyResponse;
    /// `thread/unarchive`: list an archived thread again.
    ThreadUnarchive => "thread/unarchive" (ThreadUnarchiveParams) -> ThreadUnarchiveResponse;
    /// `thread/compact/start`: replace the history the agent sees with a summary.
    ThreadCompactStart => "thread/compact/start" (ThreadCompactStartParams) -> EmptyResponse;
    /// `thread/revert`: drop a turn and every later one.
    ThreadRevert => "thread/revert" (ThreadRevertParams) -> ThreadRevertResponse;
    /// `thread/rollback`: drop the last turns (the older name of `thread/revert`).
    ThreadRollback => "thread/rollback" (ThreadRollbackParams) -> ThreadRollbackResponse;
    /// `thread/attachment/list`: a thread's attachments, one page at a time.
    ThreadAttachmentList => "thread/attachment/list"
        (ThreadAttachmentListParams) -> ThreadAttachmentListResponse;
    // m-models:
    /// `model/list`: the configured providers' models, one page at a time.
    ModelList => "model/list" (ModelListParams) -> ModelListResponse;
    /// `account/read`: the signed-in account (Tandem needs none).
    AccountRead => "account/read" (GetAccountParams) -> GetAccountResponse;
    /// `config/value/write`: write one key of the home's `config.toml`.
    ConfigValueWrite => "config/value/write" (ConfigValueWriteParams) -> ConfigWriteResponse;
    /// `config/batchWrite`: write several keys of the home's `config.toml` at once.
    ConfigBatchWrite => "config/batchWrite" (ConfigBatchWriteParams) -> ConfigWriteResponse;
    // g-paging:
    /// `thread/items/list`: a thread's items (or one turn's), one page at a time.
    ThreadItemsList => "thread/items/list" (ThreadItemsListParams) -> ThreadItemsListResponse;
    // x-exec: command/exec (stable, the reference's shapes).
    /// `command/exec`: run a command; answers once it exited.
    CommandExec => "command/exec" (CommandExecParams) -> CommandExecResponse;
    /// `command/exec/write`: write to (or close) a `command/exec` child's stdin.
    CommandExecWrite => "command/exec/write" (CommandExecWriteParams) -> EmptyResponse;
    /// `command/exec/terminate`: kill a `command/exec` child's process group.
    CommandExecTerminate => "command/exec/terminate" (CommandExecTerminateParams) -> EmptyResponse;
    /// `command/exec/resize`: resize a `command/exec` child's PTY.
    CommandExecResize => "command/exec/resize" (CommandExecResizeParams) -> EmptyResponse;
    // tui: the present screen of a PTY process.
    /// `process/screen` (experimental): the present screen of a running PTY process.
    ProcessScreen => "process/screen" (ProcessScreenParams) -> ProcessScreenResponse;
    // procre: processes survive a reconnect.
    /// `process/resume` (experimental): take over a process after a reconnect, replaying what
    /// the client missed.
    ProcessResume => "process/resume" (ProcessResumeParams) -> ProcessResumeResponse;
    // attach19: a second client attaches to a running PTY process.
    /// `process/share` (experimental): a read-only attach token for a running PTY process.
    ProcessShare => "process/share" (ProcessShareParams) -> ProcessShareResponse;
    /// `process/attach` (experimental): watch a PTY process another connection spawned: its
    /// present screen, then its live output.
    ProcessAttach => "process/attach" (ProcessAttachParams) -> ProcessAttachResponse;
    // fs29: the host's file system (stable in the reference, as here).
    /// `fs/readFile`: a file's contents, base64, at most `fs_read_max_bytes`.
    FsReadFile => "fs/readFile" (FsReadFileParams) -> FsReadFileResponse;
    /// `fs/writeFile`: create or replace a file.
    FsWriteFile => "fs/writeFile" (FsWriteFileParams) -> EmptyResponse;
    /// `fs/createDirectory`: create a directory (and its parents unless `recursive: false`).
    FsCreateDirectory => "fs/createDirectory" (FsCreateDirectoryParams) -> EmptyResponse;
    /// `fs/getMetadata`: what a path is and its times.
    FsGetMetadata => "fs/getMetadata" (FsGetMetadataParams) -> FsGetMetadataResponse;
    /// `fs/readDirectory`: a directory's direct children.
    FsReadDirectory => "fs/readDirectory" (FsReadDirectoryParams) -> FsReadDirectoryResponse;
    /// `fs/remove`: remove a file, a link or a directory tree.
    FsRemove => "fs/remove" (FsRemoveParams) -> EmptyResponse;
    /// `fs/copy`: copy a file, a link or (with `recursive`) a directory tree.
    FsCopy => "fs/copy" (FsCopyParams) -> EmptyResponse;
    /// `fs/watch`: `fs/changed` notifications for a path, until `fs/unwatch` or the
    /// connection closes.
    FsWatch => "fs/watch" (FsWatchParams) -> FsWatchResponse;
    /// `fs/unwatch`: stop a watch.
    FsUnwatch => "fs/unwatch" (FsUnwatchParams) -> EmptyResponse;
    // search29: file search and the user's own shell command.
    /// `fuzzyFileSearch`: paths under the given roots that fuzzily match a query, best first.
    FuzzyFileSearch => "fuzzyFileSearch" (FuzzyFileSearchParams) -> FuzzyFileSearchResponse;
    /// `thread/shellCommand`: run the user's command line in a thread, unsandboxed, as a
    /// `commandExecution` item with `source: "userShell"`.
    ThreadShellCommand => "thread/shellCommand" (ThreadShellCommandParams) -> EmptyResponse;
    // mcp30: MCP servers.
    /// `mcpServerStatus/list`: every configured MCP server, its state and what it offers.
    McpServerStatusList => "mcpServerStatus/list"
        (ListMcpServerStatusParams) -> ListMcpServerStatusResponse;
    /// `mcpServer/tool/call`: call a tool of an MCP server directly.
    McpServerToolCall => "mcpServer/tool/call" (McpServerToolCallParams) -> McpServerToolCallResponse;
    /// `mcpServer/resource/read`: read a resource of an MCP server.
    McpServerResourceRead => "mcpServer/resource/read"
        (McpResourceReadParams) -> McpResourceReadResponse;
    /// `config/mcpServer/reload`: read `[mcp_servers]` again and restart what changed.
    McpServerReload => "config/mcpServer/reload" (EmptyParams) -> EmptyResponse;
}

request_enum! {
    /// A request from server to client (docs/protocol.md section 5); the client must answer each.
    ServerRequest, markers = server_methods;
    /// `item/tool/call`: call a dynamic tool the client provided.
    ToolCall => "item/tool/call" (ToolCallParams) -> ToolCallResponse;
    /// `item/commandExecution/requestApproval`: may this command run?
    CommandExecutionRequestApproval => "item/commandExecution/requestApproval"
        (CommandExecutionRequestApprovalParams) -> CommandExecutionRequestApprovalResponse;
    /// `item/tool/requestUserInput`: ask the user questions.
    ToolRequestUserInput => "item/tool/requestUserInput"
        (ToolRequestUserInputParams) -> ToolRequestUserInputResponse;
    // apply29:
    /// `item/fileChange/requestApproval`: may these file changes be written?
    FileChangeRequestApproval => "item/fileChange/requestApproval"
        (FileChangeRequestApprovalParams) -> FileChangeRequestApprovalResponse;
    // mcp30:
    /// `mcpServer/elicitation/request`: an MCP server asks the user something during a tool
    /// call.
    McpServerElicitationRequest => "mcpServer/elicitation/request"
        (McpServerElicitationRequestParams) -> McpServerElicitationRequestResponse;
}

notification_enum! {
    /// A notification from client to server.
    ClientNotification;
    /// `initialized`: sent after the `initialize` response.
    Initialized => "initialized" (EmptyParams);
}

notification_enum! {
    /// A notification from server to client (docs/protocol.md section 6).
    ServerNotification;
    /// `thread/started`.
    ThreadStarted => "thread/started" (ThreadStartedNotification);
    /// `thread/status/changed`.
    ThreadStatusChanged => "thread/status/changed" (ThreadStatusChangedNotification);
    /// `thread/closed`: sent to every initialized connection.
    ThreadClosed => "thread/closed" (ThreadClosedNotification);
    /// `thread/deleted`: sent to every initialized connection.
    ThreadDeleted => "thread/deleted" (ThreadDeletedNotification);
    /// `thread/name/updated`.
    ThreadNameUpdated => "thread/name/updated" (ThreadNameUpdatedNotification);
    /// `thread/attachment/updated` (guaranteed in-process).
    ThreadAttachmentUpdated => "thread/attachment/updated" (ThreadAttachmentUpdatedNotification);
    /// `turn/started`.
    TurnStarted => "turn/started" (TurnStartedNotification);
    /// `turn/completed` (guaranteed in-process).
    TurnCompleted => "turn/completed" (TurnCompletedNotification);
    /// `item/started`.
    ItemStarted => "item/started" (ItemStartedNotification);
    /// `item/completed`.
    ItemCompleted => "item/completed" (ItemCompletedNotification);
    /// `item/agentMessage/delta`.
    AgentMessageDelta => "item/agentMessage/delta" (AgentMessageDeltaNotification);
    /// `item/commandExecution/outputDelta`.
    CommandExecutionOutputDelta => "item/commandExecution/outputDelta"
        (CommandExecutionOutputDeltaNotification);
    /// `serverRequest/resolved`.
    ServerRequestResolved => "serverRequest/resolved" (ServerRequestResolvedNotification);
    /// `error`.
    Error => "error" (ErrorNotification);
    /// `process/outputDelta` (experimental, guaranteed in-process).
    ProcessOutputDelta => "process/outputDelta" (ProcessOutputDeltaNotification);
    /// `process/exited` (experimental, guaranteed in-process).
    ProcessExited => "process/exited" (ProcessExitedNotification);
    // t-threadops: archive, compaction, revert.
    /// `thread/archived`: sent to every initialized connection.
    ThreadArchived => "thread/archived" (ThreadArchivedNotification);
    /// `thread/unarchived`: sent to every initialized connection.
    ThreadUnarchived => "thread/unarchived" (ThreadUnarchivedNotification);
    /// `thread/compacted`: a compaction turn stored its summary.
    ThreadCompacted => "thread/compacted" (ContextCompactedNotification);
    /// `thread/reverted`: the thread's history was cut by `thread/revert`.
    ThreadReverted => "thread/reverted" (ThreadRevertedNotification);
    // m-models:
    /// `thread/tokenUsage/updated`: the thread's token usage after a model request.
    ThreadTokenUsageUpdated => "thread/tokenUsage/updated" (ThreadTokenUsageUpdatedNotification);
    // x-exec: command/exec output.
    /// `command/exec/outputDelta` (guaranteed in-process).
    CommandExecOutputDelta => "command/exec/outputDelta" (CommandExecOutputDeltaNotification);
    // fs29:
    /// `fs/changed`: paths that changed under an `fs/watch` (best effort, merged per watch).
    FsChanged => "fs/changed" (FsChangedNotification);
    // reason29: plans and reasoning.
    /// `turn/plan/updated`: the agent set its plan (the `update_plan` tool).
    TurnPlanUpdated => "turn/plan/updated" (TurnPlanUpdatedNotification);
    /// `item/reasoning/summaryPartAdded`: a new part of a reasoning summary starts.
    ReasoningSummaryPartAdded => "item/reasoning/summaryPartAdded"
        (ReasoningSummaryPartAddedNotification);
    /// `item/reasoning/summaryTextDelta`: text of a reasoning summary part.
    ReasoningSummaryTextDelta => "item/reasoning/summaryTextDelta"
        (ReasoningSummaryTextDeltaNotification);
    /// `item/reasoning/textDelta`: reasoning text.
    ReasoningTextDelta => "item/reasoning/textDelta" (ReasoningTextDeltaNotification);
    // apply29:
    /// `item/fileChange/patchUpdated`: a `fileChange` item's changes as they stand.
    FileChangePatchUpdated => "item/fileChange/patchUpdated" (FileChangePatchUpdatedNotification);
    /// `turn/diff/updated`: the turn's aggregated diff after a file change.
    TurnDiffUpdated => "turn/diff/updated" (TurnDiffUpdatedNotification);
    // mcp30:
    /// `mcpServer/startupStatus/updated`: an MCP server's startup state changed (sent to every
    /// initialized connection).
    McpServerStartupStatusUpdated => "mcpServer/startupStatus/updated"
        (McpServerStatusUpdatedNotification);
    /// `item/mcpToolCall/progress`: an MCP server's progress on an `mcpToolCall` item.
    McpToolCallProgress => "item/mcpToolCall/progress" (McpToolCallProgressNotification);
}

/// Client methods that require the `experimentalApi` capability.
pub const EXPERIMENTAL_CLIENT_METHODS: &[&str] = &[
    "process/spawn",
    "process/writeStdin",
    "process/kill",
    "process/resizePty",
    // tui:
    "process/screen",
    // procre:
    "process/resume",
    // attach19:
    "process/share",
    "process/attach",
];

/// Experimental fields of stable methods, as `(method, field)`: using one requires the
/// `experimentalApi` capability (-32600 `<method>.<field> requires experimentalApi capability`).
pub const EXPERIMENTAL_FIELDS: &[(&str, &str)] = &[
    ("thread/start", "dynamicTools"),
    ("thread/resume", "initialTurnsPage"),
];

/// Server notifications that are only sent to clients with the `experimentalApi` capability.
pub const EXPERIMENTAL_NOTIFICATION_METHODS: &[&str] = &["process/outputDelta", "process/exited"];

/// Notifications that the in-process host delivers with the guaranteed class by default
/// (docs/protocol.md section 6); every other notification is best effort.
pub const DEFAULT_GUARANTEED_NOTIFICATION_METHODS: &[&str] = &[
    "process/outputDelta",
    "process/exited",
    "turn/completed",
    "thread/attachment/updated",
    // x-exec:
    "command/exec/outputDelta",
];

/// Client methods whose replies must not wait behind events: process control. Not
/// `command/exec` itself: its result must follow every `command/exec/outputDelta` it caused.
pub const PROCESS_CONTROL_METHODS: &[&str] = &[
    "process/spawn",
    "process/writeStdin",
    "process/kill",
    "process/resizePty",
    // x-exec:
    "command/exec/write",
    "command/exec/terminate",
    "command/exec/resize",
    // tui:
    "process/screen",
    // attach19:
    "process/share",
];

impl ClientRequest {
    /// Why this request needs the `experimentalApi` capability, if it does: the method name for
    /// an experimental method, or `<method>.<field>` for an experimental field in use.
    pub fn experimental_reason(&self) -> Option<String> {
        let method = self.method();
        if EXPERIMENTAL_CLIENT_METHODS.contains(&method) {
            return Some(method.to_owned());
        }
        self.experimental_field_in_use()
            .map(|field| format!("{method}.{field}"))
    }

    /// The first experimental field of a stable method that this request sets. Every name
    /// returned here is listed in [`EXPERIMENTAL_FIELDS`] for its method.
    fn experimental_field_in_use(&self) -> Option<&'static str> {
        let field = match self {
            // `null` decodes as omitted, so clients that always send every member with `null`
            // for "unset" are not mistaken for experimental ones.
            Self::ThreadStart { params, .. } if params.dynamic_tools.is_some() => "dynamicTools",
            Self::ThreadResume { params, .. } if params.initial_turns_page.is_some() => {
                "initialTurnsPage"
            }
            _ => return None,
        };
        debug_assert!(is_experimental_field(self.method(), field));
        Some(field)
    }

    /// Whether the reply to this request is a process control reply (see
    /// [`PROCESS_CONTROL_METHODS`]).
    pub fn is_process_control(&self) -> bool {
        PROCESS_CONTROL_METHODS.contains(&self.method())
    }
}

/// Whether `field` of `method` is listed in [`EXPERIMENTAL_FIELDS`].
pub fn is_experimental_field(method: &str, field: &str) -> bool {
    EXPERIMENTAL_FIELDS.contains(&(method, field))
}

impl ServerRequest {
    /// The thread the request belongs to (`None` for [`ServerRequest::Custom`]).
    pub fn thread_id(&self) -> Option<&str> {
        match self {
            Self::ToolCall { params, .. } => Some(&params.thread_id),
            Self::CommandExecutionRequestApproval { params, .. } => Some(&params.thread_id),
            Self::ToolRequestUserInput { params, .. } => Some(&params.thread_id),
            Self::FileChangeRequestApproval { params, .. } => Some(&params.thread_id),
            Self::McpServerElicitationRequest { params, .. } => Some(&params.thread_id),
            Self::Custom { .. } => None,
        }
    }

    /// The turn the request belongs to (`None` for [`ServerRequest::Custom`]); needed for the
    /// `serverRequest/resolved` that follows the answer.
    pub fn turn_id(&self) -> Option<&str> {
        match self {
            Self::ToolCall { params, .. } => Some(&params.turn_id),
            Self::CommandExecutionRequestApproval { params, .. } => Some(&params.turn_id),
            Self::ToolRequestUserInput { params, .. } => Some(&params.turn_id),
            Self::FileChangeRequestApproval { params, .. } => Some(&params.turn_id),
            Self::McpServerElicitationRequest { params, .. } => params.turn_id.as_deref(),
            Self::Custom { .. } => None,
        }
    }
}

impl ServerNotification {
    /// The thread a notification concerns, for routing to its subscribers; `None` for
    /// notifications that are not about one thread (process output, `Custom`).
    pub fn thread_id(&self) -> Option<&str> {
        match self {
            Self::ThreadStarted(n) => Some(&n.thread.id),
            Self::ThreadStatusChanged(n) => Some(&n.thread_id),
            Self::ThreadClosed(n) => Some(&n.thread_id),
            Self::ThreadDeleted(n) => Some(&n.thread_id),
            Self::ThreadNameUpdated(n) => Some(&n.thread_id),
            Self::ThreadAttachmentUpdated(n) => Some(&n.thread_id),
            Self::TurnStarted(n) => Some(&n.thread_id),
            Self::TurnCompleted(n) => Some(&n.thread_id),
            Self::ItemStarted(n) => Some(&n.thread_id),
            Self::ItemCompleted(n) => Some(&n.thread_id),
            Self::AgentMessageDelta(n) => Some(&n.thread_id),
            Self::CommandExecutionOutputDelta(n) => Some(&n.thread_id),
            Self::ServerRequestResolved(n) => Some(&n.thread_id),
            Self::Error(n) => Some(&n.thread_id),
            Self::ThreadArchived(n) => Some(&n.thread_id),
            Self::ThreadUnarchived(n) => Some(&n.thread_id),
            Self::ThreadCompacted(n) => Some(&n.thread_id),
            Self::ThreadReverted(n) => Some(&n.thread_id),
            Self::ThreadTokenUsageUpdated(n) => Some(&n.thread_id),
            Self::TurnPlanUpdated(n) => Some(&n.thread_id),
            Self::ReasoningSummaryPartAdded(n) => Some(&n.thread_id),
            Self::ReasoningSummaryTextDelta(n) => Some(&n.thread_id),
            Self::ReasoningTextDelta(n) => Some(&n.thread_id),
            Self::FileChangePatchUpdated(n) => Some(&n.thread_id),
            Self::TurnDiffUpdated(n) => Some(&n.thread_id),
            Self::McpToolCallProgress(n) => Some(&n.thread_id),
            Self::ProcessOutputDelta(_)
            | Self::McpServerStartupStatusUpdated(_)
            | Self::ProcessExited(_)
            | Self::CommandExecOutputDelta(_)
            | Self::FsChanged(_)
            | Self::Custom { .. } => None,
        }
    }
}

/// Whether a server notification method is experimental.
pub fn is_experimental_notification(method: &str) -> bool {
    EXPERIMENTAL_NOTIFICATION_METHODS.contains(&method)
}

impl ServerNotification {
    /// The turn a notification concerns, for routing to turn subscribers; `None` for
    /// notifications about a whole thread, about a process, or `Custom`.
    pub fn turn_id(&self) -> Option<&str> {
        match self {
            Self::TurnStarted(n) => Some(&n.turn.id),
            Self::TurnCompleted(n) => Some(&n.turn.id),
            Self::ItemStarted(n) => Some(&n.turn_id),
            Self::ItemCompleted(n) => Some(&n.turn_id),
            Self::AgentMessageDelta(n) => Some(&n.turn_id),
            Self::CommandExecutionOutputDelta(n) => Some(&n.turn_id),
            Self::ServerRequestResolved(n) => Some(&n.turn_id),
            Self::Error(n) => Some(&n.turn_id),
            Self::ThreadCompacted(n) => Some(&n.turn_id),
            Self::ThreadTokenUsageUpdated(n) => Some(&n.turn_id),
            Self::TurnPlanUpdated(n) => Some(&n.turn_id),
            Self::ReasoningSummaryPartAdded(n) => Some(&n.turn_id),
            Self::ReasoningSummaryTextDelta(n) => Some(&n.turn_id),
            Self::ReasoningTextDelta(n) => Some(&n.turn_id),
            Self::FileChangePatchUpdated(n) => Some(&n.turn_id),
            Self::TurnDiffUpdated(n) => Some(&n.turn_id),
            Self::McpToolCallProgress(n) => Some(&n.turn_id),
            _ => None,
        }
    }

    /// The process handle of `process/outputDelta` and `process/exited`; `None` otherwise.
    pub fn process_handle(&self) -> Option<&str> {
        match self {
            Self::ProcessOutputDelta(n) => Some(&n.process_handle),
            Self::ProcessExited(n) => Some(&n.process_handle),
            _ => None,
        }
    }
}
