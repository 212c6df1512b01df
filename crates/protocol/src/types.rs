//! The params, results and shared value types of protocol.md sections 3 to 8, one struct per
//! wire object, named after the method they serve.

use std::collections::BTreeMap;

use bytes::Bytes;

use serde::de::Error as _;
use serde::ser::SerializeMap as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{JSONRPCErrorError, RequestId};

/// Serde helpers for three-state fields (`T | null` with a default): omitted is `None`,
/// `null` is `Some(None)`, a value is `Some(Some(v))`.
pub mod three_state {
    use super::*;

    /// Deserializes a present member (value or `null`) as `Some(..)`; pair with `default`.
    pub fn deserialize<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Option::<T>::deserialize(deserializer).map(Some)
    }

    /// Serializes `Some(None)` as `null`; pair with `skip_serializing_if = "Option::is_none"`.
    pub fn serialize<S, T>(value: &Option<Option<T>>, serializer: S) -> Result<S::Ok, S::Error>
    where
        S: Serializer,
        T: Serialize,
    {
        match value {
            Some(inner) => inner.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }
}

/// Deserializes an explicit `null` as the type's default, for members that have a default but
/// no `null` state of their own: clients that send every optional member as `null` for "unset"
/// must not fail to decode. Pair with `default`.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// Params with no members (`{}`); unknown members are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmptyParams {}

/// A result with no members (`{}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmptyResponse {}

/// Where a connection comes from; stamped on threads as `source`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionSource {
    /// The tandem CLI in interactive use.
    Cli,
    /// An IDE extension.
    Vscode,
    /// The tandem CLI's `exec` command.
    Exec,
    /// A stdio or websocket app-server connection (the default).
    #[default]
    AppServer,
    /// Unknown origin.
    Unknown,
    /// An embedder's own label, e.g. `{"custom": "sdk"}`.
    Custom(String),
}

/// `clientInfo` of `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    /// Machine-readable client name.
    pub name: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Client version.
    pub version: String,
}

/// `capabilities` of `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeCapabilities {
    /// Opt in to experimental methods, fields and notifications.
    #[serde(default, deserialize_with = "null_as_default")]
    pub experimental_api: bool,
    /// Notification methods never to send to this connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_out_notification_methods: Option<Vec<String>>,
}

/// `initialize` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Who the client is.
    pub client_info: ClientInfo,
    /// What the client opts in to or out of; may be `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<InitializeCapabilities>,
}

/// `serverInfo` of the `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// Server name.
    pub name: String,
    /// Server version.
    pub version: String,
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// Names the server and the client.
    pub user_agent: String,
    /// `unix` or `windows`.
    pub platform_family: String,
    /// e.g. `linux`, `macos`, `windows`.
    pub platform_os: String,
    /// Absolute path of the server's home directory.
    pub tandem_home: String,
    /// Server name and version.
    pub server_info: ServerInfo,
}

/// `config/read` params (both members may be ignored by the server).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReadParams {
    /// Directory to resolve configuration for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Whether to include configuration layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_layers: Option<bool>,
}

/// `config/read` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReadResponse {
    /// Effective configuration under its config-file (snake_case) keys.
    pub config: Value,
    /// Always `{}`.
    pub origins: Value,
    /// Always `null`.
    pub layers: Option<Value>,
}

/// A PTY size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PtySize {
    /// Rows (greater than 0).
    pub rows: u16,
    /// Columns (greater than 0).
    pub cols: u16,
}

/// `process/spawn` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessSpawnParams {
    /// Caller-chosen handle naming the process in later requests and notifications.
    pub process_handle: String,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Absolute working directory. Optional in the type so that a missing `cwd` reaches the
    /// server's own check (-32600) rather than failing as undecodable params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Run under a PTY; implies `streamStdin` and `streamStdoutStderr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<bool>,
    /// Accept `process/writeStdin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_stdin: Option<bool>,
    /// Stream output as `process/outputDelta` instead of returning it in `process/exited`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_stdout_stderr: Option<bool>,
    /// Per-stream cap: omitted = 1 MiB, `null` = none.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    pub output_bytes_cap: Option<Option<u64>>,
    /// Timeout: omitted = 10 000 ms, `null` = none.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    pub timeout_ms: Option<Option<i64>>,
    /// Variables merged over the server's environment; `null` removes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, Option<String>>>,
    /// Initial PTY size (requires `tty`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<PtySize>,
}

/// `process/writeStdin` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessWriteStdinParams {
    /// The process.
    pub process_handle: String,
    /// Bytes to write; `deltaBase64` on the wire.
    #[serde(
        rename = "deltaBase64",
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::bytes_base64::option"
    )]
    pub delta: Option<Bytes>,
    /// Close stdin after writing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_stdin: Option<bool>,
}

/// `process/kill` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessKillParams {
    /// The process.
    pub process_handle: String,
}

/// `process/resizePty` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessResizePtyParams {
    /// The process.
    pub process_handle: String,
    /// The new size.
    pub size: PtySize,
}

/// Which output stream a delta belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProcessOutputStream {
    /// Standard output (and all PTY output).
    Stdout,
    /// Standard error.
    Stderr,
}

/// `process/outputDelta` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessOutputDeltaNotification {
    /// The process.
    pub process_handle: String,
    /// The stream.
    pub stream: ProcessOutputStream,
    /// The bytes; `deltaBase64` on the wire. In-process they are the chunk read from the pipe,
    /// shared, never encoded.
    #[serde(rename = "deltaBase64", with = "crate::bytes_base64")]
    pub delta: Bytes,
    /// This delta reached the stream's cap.
    pub cap_reached: bool,
}

/// `process/exited` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExitedNotification {
    /// The process.
    pub process_handle: String,
    /// Exit code; 128 + N for signal N; 124 on timeout.
    pub exit_code: i32,
    /// Captured stdout (empty when streamed).
    pub stdout: String,
    /// stdout reached its cap.
    pub stdout_cap_reached: bool,
    /// Captured stderr (empty when streamed).
    pub stderr: String,
    /// stderr reached its cap.
    pub stderr_cap_reached: bool,
    /// A stream did not reach EOF within the drain budget. Absent or `null` on input means
    /// `false`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub output_drain_timed_out: bool,
}

// ---------------------------------------------------------------------------------------------
// Section 7: shared value types.
// ---------------------------------------------------------------------------------------------

/// `approvalPolicy`: whether the agent asks the client before running a command.
///
/// Output uses only the two canonical spellings. Input also accepts the spellings of existing
/// clients, all of which mean [`ApprovalPolicy::OnRequest`] because Tandem has no finer
/// policy: `"untrusted"`, `"on-failure"`, `"onRequest"` and `{"granular": {...}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ApprovalPolicy {
    /// Never ask; commands run unapproved.
    #[serde(rename = "never")]
    Never,
    /// Ask before running a command.
    #[serde(rename = "on-request")]
    OnRequest,
}

impl ApprovalPolicy {
    /// Every string spelling accepted on input, canonical ones first.
    pub const INPUT_SPELLINGS: &'static [&'static str] = &[
        "never",
        "on-request",
        "untrusted",
        "on-failure",
        "onRequest",
    ];

    /// The canonical wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::OnRequest => "on-request",
        }
    }
}

impl<'de> Deserialize<'de> for ApprovalPolicy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match &value {
            Value::String(spelling) => match spelling.as_str() {
                "never" => Ok(Self::Never),
                "on-request" | "onRequest" | "untrusted" | "on-failure" => Ok(Self::OnRequest),
                other => Err(D::Error::unknown_variant(other, Self::INPUT_SPELLINGS)),
            },
            // The granular rules of existing clients are finer than anything Tandem enforces;
            // asking for each command is the safe reading of all of them.
            Value::Object(map) if map.len() == 1 && map.contains_key("granular") => {
                Ok(Self::OnRequest)
            }
            other => Err(D::Error::custom(format!(
                "invalid approvalPolicy {other}, expected a string or {{\"granular\": {{...}}}}"
            ))),
        }
    }
}

/// `approvalsReviewer` of the session settings: who answers approvals. Always `"user"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalsReviewer {
    /// The client's user.
    #[default]
    User,
}

/// `sandbox` of the session settings. Tandem does not sandbox commands, so the only value is
/// `{"type": "dangerFullAccess"}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SandboxPolicy {
    /// Commands run with the server's full access.
    #[default]
    DangerFullAccess,
}

/// The `...session` members sent beside `thread` in the `thread/start`, `thread/resume` and
/// `thread/fork` results; flattened into those results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSettings {
    /// The model the thread uses.
    pub model: String,
    /// The provider of that model.
    pub model_provider: String,
    /// The thread's working directory (absolute).
    pub cwd: String,
    /// The thread's approval policy.
    pub approval_policy: ApprovalPolicy,
    /// Always `"user"`.
    pub approvals_reviewer: ApprovalsReviewer,
    /// Always `{"type": "dangerFullAccess"}`.
    pub sandbox: SandboxPolicy,
    /// Always `null`: Tandem has no reasoning-effort setting.
    pub reasoning_effort: Option<String>,
    /// Always `null`: Tandem has no service tiers.
    pub service_tier: Option<String>,
}

impl SessionSettings {
    /// Settings with the members Tandem fixes (`approvalsReviewer`, `sandbox`,
    /// `reasoningEffort`, `serviceTier`) at their only values.
    pub fn new(
        model: impl Into<String>,
        model_provider: impl Into<String>,
        cwd: impl Into<String>,
        approval_policy: ApprovalPolicy,
    ) -> Self {
        Self {
            model: model.into(),
            model_provider: model_provider.into(),
            cwd: cwd.into(),
            approval_policy,
            approvals_reviewer: ApprovalsReviewer::User,
            sandbox: SandboxPolicy::DangerFullAccess,
            reasoning_effort: None,
            service_tier: None,
        }
    }
}

/// A flag of an `active` thread: what the active turn waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ThreadActiveFlag {
    /// A `item/commandExecution/requestApproval` request awaits the client's answer.
    WaitingOnApproval,
    /// A `item/tool/requestUserInput` request awaits the client's answer.
    WaitingOnUserInput,
}

/// A thread's status, tagged on `type`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ThreadStatus {
    /// The thread is not loaded in this server.
    NotLoaded,
    /// Loaded, no active turn.
    Idle,
    /// Loaded; the last turn failed. Kept until the next turn starts.
    SystemError,
    /// A turn is running.
    Active {
        /// What the running turn waits for; empty when it waits for nothing.
        active_flags: Vec<ThreadActiveFlag>,
    },
}

/// A thread (protocol.md section 7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// UUIDv7 thread id.
    pub id: String,
    /// Equal to `id`; existing clients read this name.
    pub session_id: String,
    /// The thread's name, if set.
    pub name: Option<String>,
    /// The first user text; may be empty.
    pub preview: String,
    /// Whether the thread is discarded instead of persisted.
    pub ephemeral: bool,
    /// Creation time, unix seconds.
    pub created_at: i64,
    /// Last update time, unix seconds.
    pub updated_at: i64,
    /// Current status.
    pub status: ThreadStatus,
    /// Working directory (absolute).
    pub cwd: String,
    /// The session source of the connection that created the thread.
    pub source: SessionSource,
    /// The thread this one was forked from.
    pub forked_from_id: Option<String>,
    /// The thread's model, if known.
    pub model: Option<String>,
    /// The model provider.
    pub model_provider: String,
    /// The server's version.
    pub cli_version: String,
    /// Always `null`: Tandem has no projects.
    pub project_id: Option<String>,
    /// The turns, filled only where protocol.md says so; otherwise empty.
    pub turns: Vec<Turn>,
}

/// `itemsView` of a turn: how complete its `items` are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TurnItemsView {
    /// `items` is deliberately empty (the `turn/start` reply, `turn/started`).
    NotLoaded,
    /// `items` is a summary. Tandem never sends it; accepted on input.
    Summary,
    /// `items` is complete.
    Full,
}

/// A turn's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TurnStatus {
    /// Running.
    InProgress,
    /// Finished normally.
    Completed,
    /// Stopped by `turn/interrupt`.
    Interrupted,
    /// Failed; see `error`.
    Failed,
}

/// `{message, additionalDetails}`: why a turn failed; also the `error` of the `error`
/// notification.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// What went wrong.
    pub message: String,
    /// More detail, if any.
    pub additional_details: Option<String>,
}

/// A turn: one user input and everything the agent did in response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// UUIDv7 turn id.
    pub id: String,
    /// The turn's items (see `items_view`).
    pub items: Vec<ThreadItem>,
    /// How complete `items` is.
    pub items_view: TurnItemsView,
    /// Current status.
    pub status: TurnStatus,
    /// Why the turn failed, when it did.
    pub error: Option<TurnError>,
    /// Start time, unix seconds.
    pub started_at: Option<i64>,
    /// Completion time, unix seconds.
    pub completed_at: Option<i64>,
    /// Duration in milliseconds, once completed.
    pub duration_ms: Option<i64>,
}

/// Status of a `commandExecution` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionStatus {
    /// Waiting for approval or running.
    InProgress,
    /// Ran to completion (whatever its exit code).
    Completed,
    /// Could not run.
    Failed,
    /// The approval was declined; the command never ran.
    Declined,
}

/// Status of a `dynamicToolCall` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DynamicToolCallStatus {
    /// The `item/tool/call` request awaits the client's answer.
    InProgress,
    /// The client answered.
    Completed,
    /// The call failed (an error reply, or cancelled).
    Failed,
}

/// One content item of a dynamic tool call's output: `{type: "inputText", text}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DynamicToolCallOutputContentItem {
    /// Text returned to the model.
    InputText {
        /// The text.
        text: String,
    },
}

/// What a command does. Tandem does not parse commands: there is one `unknown` entry holding
/// the command text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum CommandAction {
    /// An unparsed command.
    Unknown {
        /// The command text.
        command: String,
    },
}

/// One item of a turn, tagged on `type`. These four variants only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ThreadItem {
    /// The user's input.
    UserMessage {
        /// Item id.
        id: String,
        /// The input, as given.
        content: Vec<UserInput>,
        /// Echoes the `clientUserMessageId` of `turn/start` or `turn/steer`.
        client_id: Option<String>,
    },
    /// Text from the agent.
    AgentMessage {
        /// Item id.
        id: String,
        /// The message text.
        text: String,
    },
    /// A command the agent ran (or wanted to run).
    CommandExecution {
        /// Item id; also the `itemId` of its approval request.
        id: String,
        /// The command, shell-quoted.
        command: String,
        /// Working directory.
        cwd: String,
        /// Current status.
        status: CommandExecutionStatus,
        /// One `unknown` action holding the command.
        command_actions: Vec<CommandAction>,
        /// The process id, once running.
        process_id: Option<String>,
        /// Exit code, once exited.
        exit_code: Option<i32>,
        /// Combined output, once available.
        aggregated_output: Option<String>,
        /// Run time in milliseconds, once finished.
        duration_ms: Option<i64>,
    },
    /// A call of a client-provided dynamic tool.
    DynamicToolCall {
        /// Item id; also the `callId` of its `item/tool/call` request.
        id: String,
        /// Tool name.
        tool: String,
        /// Tool namespace, if any.
        namespace: Option<String>,
        /// Arguments chosen by the model.
        arguments: Value,
        /// Current status.
        status: DynamicToolCallStatus,
        /// The client's output, once answered.
        content_items: Option<Vec<DynamicToolCallOutputContentItem>>,
        /// Whether the call succeeded, once finished.
        success: Option<bool>,
        /// Duration in milliseconds, once finished.
        duration_ms: Option<i64>,
    },
}

impl ThreadItem {
    /// The item id, whatever the variant.
    pub fn id(&self) -> &str {
        match self {
            Self::UserMessage { id, .. }
            | Self::AgentMessage { id, .. }
            | Self::CommandExecution { id, .. }
            | Self::DynamicToolCall { id, .. } => id,
        }
    }
}

/// An input type of existing clients that Tandem recognises but does not support. It decodes
/// (so that the server can answer -32602 `unsupported input type: X` instead of -32600).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnsupportedInputKind {
    /// `image`.
    Image,
    /// `localImage`.
    LocalImage,
    /// `audio`.
    Audio,
    /// `localAudio`.
    LocalAudio,
    /// `skill`.
    Skill,
    /// `mention`.
    Mention,
}

impl UnsupportedInputKind {
    /// Every unsupported kind.
    pub const ALL: &'static [Self] = &[
        Self::Image,
        Self::LocalImage,
        Self::Audio,
        Self::LocalAudio,
        Self::Skill,
        Self::Mention,
    ];

    /// The wire `type` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::LocalImage => "localImage",
            Self::Audio => "audio",
            Self::LocalAudio => "localAudio",
            Self::Skill => "skill",
            Self::Mention => "mention",
        }
    }

    /// The kind whose wire `type` is `name`.
    pub fn from_wire(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.as_str() == name)
    }
}

/// One piece of user input, tagged on `type`.
///
/// Only `text` is usable. The other input types of existing clients decode into
/// [`UserInput::Unsupported`], keeping their members so the value re-encodes unchanged, and
/// [`UserInput::ensure_supported`] turns them into the -32602 error the server must answer.
/// Any other `type` fails to decode (-32600 when it arrives as params).
///
/// `text_elements` (UI annotations of existing clients) is accepted and dropped on input and
/// always encoded as `[]`: Tandem does not interpret it, and output must not echo values a
/// typed client might not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserInput {
    /// `{type: "text", text, text_elements: []}`.
    Text {
        /// The text.
        text: String,
    },
    /// A recognised but unsupported input type.
    Unsupported {
        /// Which type.
        kind: UnsupportedInputKind,
        /// The other members, as sent.
        fields: Map<String, Value>,
    },
}

/// Every `type` value of [`UserInput`] that decodes.
const USER_INPUT_TYPES: &[&str] = &[
    "text",
    "image",
    "localImage",
    "audio",
    "localAudio",
    "skill",
    "mention",
];

impl UserInput {
    /// A `text` input.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The wire `type` value.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text",
            Self::Unsupported { kind, .. } => kind.as_str(),
        }
    }

    /// `Ok` for usable input; -32602 `unsupported input type: X` otherwise.
    pub fn ensure_supported(&self) -> Result<(), JSONRPCErrorError> {
        match self {
            Self::Text { .. } => Ok(()),
            Self::Unsupported { kind, .. } => Err(JSONRPCErrorError::invalid_params(format!(
                "unsupported input type: {}",
                kind.as_str()
            ))),
        }
    }

    /// [`UserInput::ensure_supported`] for each element, failing on the first unsupported one.
    pub fn ensure_all_supported(input: &[UserInput]) -> Result<(), JSONRPCErrorError> {
        input.iter().try_for_each(Self::ensure_supported)
    }
}

impl Serialize for UserInput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text { text } => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
                map.serialize_entry("text_elements", &[] as &[Value])?;
                map.end()
            }
            Self::Unsupported { kind, fields } => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("type", kind.as_str())?;
                for (key, value) in fields.iter().filter(|(key, _)| key.as_str() != "type") {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for UserInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Text {
            text: String,
        }

        let mut fields = Map::<String, Value>::deserialize(deserializer)?;
        let kind = match fields.remove("type") {
            Some(Value::String(kind)) => kind,
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "invalid input type {other}, expected a string"
                )));
            }
            None => return Err(D::Error::missing_field("type")),
        };
        if kind == "text" {
            let Text { text } =
                serde_json::from_value(Value::Object(fields)).map_err(D::Error::custom)?;
            return Ok(Self::Text { text });
        }
        match UnsupportedInputKind::from_wire(&kind) {
            Some(kind) => Ok(Self::Unsupported { kind, fields }),
            None => Err(D::Error::unknown_variant(&kind, USER_INPUT_TYPES)),
        }
    }
}

/// The `type` of a [`DynamicToolSpec`]; only `"function"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DynamicToolType {
    /// A function the model can call.
    #[default]
    Function,
}

/// A tool the client provides for a thread (`thread/start.dynamicTools`, experimental). Calls
/// arrive at the client as `item/tool/call`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolSpec {
    /// Always `function`. Existing clients omit `type`, so it defaults on input.
    #[serde(rename = "type", default, deserialize_with = "null_as_default")]
    pub kind: DynamicToolType,
    /// Tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON schema of the arguments.
    pub input_schema: Value,
    /// Whether the tool's definition may be loaded lazily.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_loading: Option<bool>,
}

/// A piece of client data attached to a thread, unique per (`attachmentType`, `identityKey`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachment {
    /// Opaque attachment id.
    pub id: String,
    /// Client-chosen type (non-empty).
    pub attachment_type: String,
    /// Client-chosen key, unique within the type (non-empty).
    pub identity_key: String,
    /// Any JSON.
    pub payload: Value,
    /// Creation time, unix seconds.
    pub created_at: i64,
}

// ---------------------------------------------------------------------------------------------
// Section 4: thread and turn requests.
// ---------------------------------------------------------------------------------------------

/// Thread settings a client may set on `thread/start` and override on `thread/resume` and
/// `thread/fork`; flattened into those params.
///
/// Every member is three-state: omitted keeps the current value (the server default on
/// `thread/start`), `null` asks for the server default (no name, for `name`), a value sets it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadOverrides {
    /// Working directory (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    pub cwd: Option<Option<String>>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    pub model: Option<Option<String>>,
    /// Approval policy (any input spelling).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    pub approval_policy: Option<Option<ApprovalPolicy>>,
    /// Thread name.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    pub name: Option<Option<String>>,
    /// Configuration overrides under config-file (snake_case) keys.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    pub config: Option<Option<Map<String, Value>>>,
}

/// `thread/start` params; every member is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// `thread/start` result; the caller is subscribed to the thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartResponse {
    /// The new thread.
    pub thread: Thread,
    /// The thread's settings.
    #[serde(flatten)]
    pub session: SessionSettings,
}

/// `thread/resume` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// `thread/resume` result; the caller is subscribed to the thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeResponse {
    /// The thread, with its turns unless excluded.
    pub thread: Thread,
    /// The thread's settings.
    #[serde(flatten)]
    pub session: SessionSettings,
}

/// `thread/read` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[serde(rename_all = "camelCase")]
pub struct ThreadReadResponse {
    /// The thread; status `notLoaded` when not loaded.
    pub thread: Thread,
}

/// `sortDirection` of list requests, by creation time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// Tandem does not archive threads: `true` matches no thread.
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
#[serde(rename_all = "camelCase")]
pub struct ThreadLoadedListResponse {
    /// Ids of loaded threads, sorted.
    pub data: Vec<String>,
    /// Cursor of the next page, if any.
    pub next_cursor: Option<String>,
}

/// `thread/turns/list` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Accepted and ignored: items are always full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_view: Option<TurnItemsView>,
}

/// `thread/turns/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListResponse {
    /// One page of turns.
    pub data: Vec<Turn>,
    /// Cursor of the next page, if any.
    pub next_cursor: Option<String>,
    /// Always `null`.
    pub backwards_cursor: Option<String>,
}

/// `thread/unsubscribe` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadUnsubscribeParams {
    /// The thread.
    pub thread_id: String,
}

/// What `thread/unsubscribe` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
#[serde(rename_all = "camelCase")]
pub struct ThreadUnsubscribeResponse {
    /// What happened.
    pub status: ThreadUnsubscribeStatus,
}

/// `thread/name/set` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadNameSetParams {
    /// The thread.
    pub thread_id: String,
    /// The new name; trimmed by the server, must not be empty.
    pub name: String,
}

/// `thread/fork` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// `thread/fork` result; the caller is subscribed to the new thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadForkResponse {
    /// The new thread (`forkedFromId` = the source).
    pub thread: Thread,
    /// The new thread's settings.
    #[serde(flatten)]
    pub session: SessionSettings,
}

/// `thread/delete` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadDeleteParams {
    /// The thread.
    pub thread_id: String,
}

/// `thread/attachment/add` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[serde(rename_all = "camelCase")]
pub enum ThreadAttachmentAddOutcome {
    /// A new attachment; `thread/attachment/updated` follows the reply.
    Created,
    /// An attachment with this type and key already existed and is returned unchanged.
    Existing,
}

/// `thread/attachment/add` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentAddResponse {
    /// Created or existing.
    pub outcome: ThreadAttachmentAddOutcome,
    /// The attachment.
    pub attachment: ThreadAttachment,
}

/// `thread/attachment/remove` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    pub approval_policy: Option<Option<ApprovalPolicy>>,
    /// Model from this turn on: omitted keeps the thread's, `null` asks for the server default.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    pub model: Option<Option<String>>,
}

/// `turn/start` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartResponse {
    /// The new turn (`inProgress`, no items, `itemsView: notLoaded`), or the active turn the
    /// input was added to.
    pub turn: Turn,
}

/// `turn/steer` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[serde(rename_all = "camelCase")]
pub struct TurnSteerResponse {
    /// The active turn the input was added to.
    pub turn_id: String,
}

/// `turn/interrupt` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnInterruptParams {
    /// The thread.
    pub thread_id: String,
    /// The turn the client believes is active.
    pub turn_id: String,
}

// ---------------------------------------------------------------------------------------------
// Section 5: server requests and the client's results.
// ---------------------------------------------------------------------------------------------

/// `item/tool/call` params: call a dynamic tool the client provided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The id of the call's `dynamicToolCall` item.
    pub call_id: String,
    /// Tool namespace, if any.
    pub namespace: Option<String>,
    /// Tool name.
    pub tool: String,
    /// Arguments chosen by the model.
    pub arguments: Value,
}

/// The client's result for `item/tool/call`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResponse {
    /// Output for the model.
    pub content_items: Vec<DynamicToolCallOutputContentItem>,
    /// Whether the call succeeded.
    pub success: bool,
}

/// A decision on a command approval.
///
/// Decoding is lenient: any value other than the four listed decodes as
/// [`CommandExecutionApprovalDecision::Decline`], because protocol.md counts any other answer
/// as a refusal rather than as an invalid reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionApprovalDecision {
    /// Run this command.
    Accept,
    /// Run this command and similar ones for the rest of the session.
    AcceptForSession,
    /// Do not run it; the turn continues.
    Decline,
    /// Do not run it and stop the turn.
    Cancel,
}

impl CommandExecutionApprovalDecision {
    /// Every decision, in the order of `availableDecisions`.
    pub const ALL: [Self; 4] = [
        Self::Accept,
        Self::AcceptForSession,
        Self::Decline,
        Self::Cancel,
    ];
}

impl<'de> Deserialize<'de> for CommandExecutionApprovalDecision {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(deserializer)?.as_str() {
            Some("accept") => Self::Accept,
            Some("acceptForSession") => Self::AcceptForSession,
            Some("cancel") => Self::Cancel,
            _ => Self::Decline,
        })
    }
}

/// `item/commandExecution/requestApproval` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The id of the `commandExecution` item.
    pub item_id: String,
    /// When the request was made, unix milliseconds.
    pub started_at_ms: i64,
    /// The command, shell-quoted.
    pub command: String,
    /// Working directory.
    pub cwd: String,
    /// Why the agent wants to run it, if it said.
    pub reason: Option<String>,
    /// One `unknown` action holding the command.
    pub command_actions: Vec<CommandAction>,
    /// Always all four decisions.
    pub available_decisions: Vec<CommandExecutionApprovalDecision>,
}

/// The client's result for `item/commandExecution/requestApproval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalResponse {
    /// The decision; unknown values read as `decline`.
    pub decision: CommandExecutionApprovalDecision,
}

/// One option of a user-input question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInputQuestionOption {
    /// Short label.
    pub label: String,
    /// What choosing it means.
    pub description: String,
}

/// One question of `item/tool/requestUserInput`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInputQuestion {
    /// Key of the answer in the result.
    pub id: String,
    /// Short header.
    pub header: String,
    /// The question.
    pub question: String,
    /// Always `false`.
    pub is_other: bool,
    /// Always `false`.
    pub is_secret: bool,
    /// Choices, or `null` for free text.
    pub options: Option<Vec<UserInputQuestionOption>>,
}

/// `item/tool/requestUserInput` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// Names this request only; no item carries it.
    pub item_id: String,
    /// Always `true`.
    pub is_blocking: bool,
    /// The questions.
    pub questions: Vec<UserInputQuestion>,
}

/// The answer to one question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInputAnswer {
    /// The chosen labels or typed text.
    pub answers: Vec<String>,
}

/// The client's result for `item/tool/requestUserInput`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputResponse {
    /// Answers by question id.
    pub answers: BTreeMap<String, UserInputAnswer>,
}

// ---------------------------------------------------------------------------------------------
// Section 6: server notifications.
// ---------------------------------------------------------------------------------------------

/// `thread/started` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartedNotification {
    /// The new thread.
    pub thread: Thread,
}

/// `thread/status/changed` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStatusChangedNotification {
    /// The thread.
    pub thread_id: String,
    /// Its new status.
    pub status: ThreadStatus,
}

/// `thread/closed` params: the thread was unloaded or deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadClosedNotification {
    /// The thread.
    pub thread_id: String,
}

/// `thread/deleted` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadDeletedNotification {
    /// The thread.
    pub thread_id: String,
}

/// `thread/name/updated` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadNameUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The new name.
    pub thread_name: Option<String>,
}

/// What happened to an attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ThreadAttachmentOperation {
    /// Added.
    Created,
    /// Removed.
    Deleted,
}

/// `thread/attachment/updated` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[serde(rename_all = "camelCase")]
pub struct TurnStartedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn (no items yet).
    pub turn: Turn,
}

/// `turn/completed` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCompletedNotification {
    /// The thread.
    pub thread_id: String,
    /// The finished turn.
    pub turn: Turn,
}

/// `item/started` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[serde(rename_all = "camelCase")]
pub struct AgentMessageDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `agentMessage` item.
    pub item_id: String,
    /// Text to append.
    pub delta: String,
}

/// `item/commandExecution/outputDelta` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionOutputDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `commandExecution` item.
    pub item_id: String,
    /// Output to append.
    pub delta: String,
}

/// `serverRequest/resolved` params: a server request was answered or cancelled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[serde(rename_all = "camelCase")]
pub struct ErrorNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// What went wrong.
    pub error: TurnError,
    /// Always `false`: Tandem does not retry.
    pub will_retry: bool,
}
