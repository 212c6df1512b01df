//! The shared value types of docs/protocol.md section 7: threads, turns, items, user input, approval
//! policies, statuses and attachments.

#[allow(unused_imports)]
use super::*;

/// `approvalPolicy`: whether the agent asks the client before running a command.
///
/// Output uses only the two canonical spellings. Input also accepts the spellings of existing
/// clients, all of which mean [`ApprovalPolicy::OnRequest`] because Tandem has no finer
/// policy: `"untrusted"`, `"on-failure"`, `"onRequest"` and `{"granular": {...}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum ApprovalsReviewer {
    /// The client's user.
    #[default]
    User,
}

/// Whether a sandboxed command may reach the network: `networkAccess` of
/// [`SandboxPolicy::ExternalSandbox`], which only reports what the outer sandbox allows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum NetworkAccess {
    /// No network.
    #[default]
    Restricted,
    /// Network allowed.
    Enabled,
}

/// `thread/start.sandbox` (and `thread/resume`, `thread/fork`): the policy asked for by name,
/// with every option of [`SandboxPolicy`] at its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
pub enum SandboxMode {
    /// [`SandboxPolicy::ReadOnly`] without network.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// [`SandboxPolicy::WorkspaceWrite`]: the cwd, `/tmp` and `$TMPDIR` writable, no network.
    #[serde(rename = "workspace-write")]
    WorkspaceWrite,
    /// [`SandboxPolicy::DangerFullAccess`].
    #[serde(rename = "danger-full-access")]
    DangerFullAccess,
}

impl SandboxMode {
    /// The wire (and config-file) spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::DangerFullAccess => "danger-full-access",
        }
    }

    /// The policy of this mode with every option at its default.
    pub fn policy(self) -> SandboxPolicy {
        match self {
            Self::ReadOnly => SandboxPolicy::ReadOnly {
                network_access: false,
            },
            Self::WorkspaceWrite => SandboxPolicy::WorkspaceWrite {
                writable_roots: Vec::new(),
                network_access: false,
                exclude_tmpdir_env_var: false,
                exclude_slash_tmp: false,
            },
            Self::DangerFullAccess => SandboxPolicy::DangerFullAccess,
        }
    }
}

/// What the agent's commands may do: `sandbox` of the session settings,
/// `turn/start.sandboxPolicy`. Enforced by the operating system (docs/security.md); a policy
/// the machine cannot enforce refuses the command rather than running it with more rights.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SandboxPolicy {
    /// Commands run with the server's full access.
    DangerFullAccess,
    /// Commands read everywhere and write nowhere (but `/dev/null`).
    #[serde(rename_all = "camelCase")]
    ReadOnly {
        /// Whether commands may open network sockets.
        #[serde(default)]
        network_access: bool,
    },
    /// The client runs the server inside a sandbox of its own; Tandem adds none.
    #[serde(rename_all = "camelCase")]
    ExternalSandbox {
        /// What the outer sandbox allows, as the client reports it.
        #[serde(default)]
        network_access: NetworkAccess,
    },
    /// Commands read everywhere and write only under the thread's cwd, `writableRoots`,
    /// `/tmp` and `$TMPDIR` (unless excluded).
    #[serde(rename_all = "camelCase")]
    WorkspaceWrite {
        /// More writable directories (absolute).
        #[serde(default)]
        writable_roots: Vec<String>,
        /// Whether commands may open network sockets.
        #[serde(default)]
        network_access: bool,
        /// Leave `$TMPDIR` read-only.
        #[serde(default)]
        exclude_tmpdir_env_var: bool,
        /// Leave `/tmp` read-only.
        #[serde(default)]
        exclude_slash_tmp: bool,
    },
}

impl Default for SandboxPolicy {
    /// The reference's default: read-only, no network.
    fn default() -> Self {
        SandboxMode::ReadOnly.policy()
    }
}

impl SandboxPolicy {
    /// The first relative path among `writableRoots` (the reference refuses those).
    pub fn relative_writable_root(&self) -> Option<&str> {
        match self {
            Self::WorkspaceWrite { writable_roots, .. } => writable_roots
                .iter()
                .map(String::as_str)
                .find(|root| !root.starts_with('/')),
            _ => None,
        }
    }
}

/// The `...session` members sent beside `thread` in the `thread/start`, `thread/resume` and
/// `thread/fork` results; flattened into those results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
    /// The sandbox policy the thread's commands run under, as enforced.
    pub sandbox: SandboxPolicy,
    /// The reasoning effort the thread's turns ask of the model (config
    /// `model_reasoning_effort`); `null` when none is configured, and then none is sent.
    pub reasoning_effort: Option<String>,
    /// Always `null`: Tandem has no service tiers.
    pub service_tier: Option<String>,
}

impl SessionSettings {
    /// Settings with `approvalsReviewer` and `serviceTier` at their only values and no
    /// `reasoningEffort`.
    pub fn new(
        model: impl Into<String>,
        model_provider: impl Into<String>,
        cwd: impl Into<String>,
        approval_policy: ApprovalPolicy,
        sandbox: SandboxPolicy,
    ) -> Self {
        Self {
            model: model.into(),
            model_provider: model_provider.into(),
            cwd: cwd.into(),
            approval_policy,
            approvals_reviewer: ApprovalsReviewer::User,
            sandbox,
            reasoning_effort: None,
            service_tier: None,
        }
    }
}

/// A flag of an `active` thread: what the active turn waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum ThreadActiveFlag {
    /// A `item/commandExecution/requestApproval` request awaits the client's answer.
    WaitingOnApproval,
    /// A `item/tool/requestUserInput` request awaits the client's answer.
    WaitingOnUserInput,
}

/// A thread's status, tagged on `type`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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

/// A thread (docs/protocol.md section 7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// UUIDv7 thread id.
    pub id: String,
    /// Equal to `id`; existing clients read this name.
    pub session_id: String,
    /// The thread's name, if set.
    pub name: Option<String>,
    /// The first user text; may be empty.
    pub preview: SharedText,
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
    /// The turns, filled only where docs/protocol.md says so; otherwise empty.
    pub turns: Vec<Turn>,
}

/// `itemsView` of a turn: how complete its `items` are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum TurnItemsView {
    /// `items` is deliberately empty (the `turn/start` reply, `turn/started`, a
    /// `thread/turns/list` page asked for without items).
    NotLoaded,
    /// `items` holds the turn's first user message and its last agent message only (the
    /// default of `thread/turns/list`).
    Summary,
    /// `items` is complete.
    Full,
}

/// A turn's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// What went wrong.
    pub message: String,
    /// More detail, if any.
    pub additional_details: Option<String>,
}

/// A turn: one user input and everything the agent did in response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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

/// Who ran a `commandExecution` item's command (`source`; absent on input means `agent`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionSource {
    /// The agent, through its shell tool.
    #[default]
    Agent,
    /// The user, through `thread/shellCommand`: unsandboxed, never asked for approval.
    UserShell,
}

/// Status of a `dynamicToolCall` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DynamicToolCallOutputContentItem {
    /// Text returned to the model.
    InputText {
        /// The text.
        text: SharedText,
    },
}

/// What a command does. Tandem does not parse commands: there is one `unknown` entry holding
/// the command text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum CommandAction {
    /// An unparsed command.
    Unknown {
        /// The command text.
        command: String,
    },
}

/// One item of a turn, tagged on `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
        text: SharedText,
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
        aggregated_output: Option<SharedText>,
        /// Run time in milliseconds, once finished.
        duration_ms: Option<i64>,
        /// Who ran it: the agent, or the user (`thread/shellCommand`).
        #[serde(default)]
        source: CommandExecutionSource,
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
    /// The history before this item was replaced by a summary (`thread/compact/start`).
    ContextCompaction {
        /// Item id: `<turn id>-compaction`.
        id: String,
    },
    // reason29: the model's reasoning.
    /// The model's reasoning: the parts of its summary and its reasoning text, as the
    /// provider streamed them.
    Reasoning {
        /// Item id.
        id: String,
        /// The summary, one string per part (`item/reasoning/summaryPartAdded`).
        #[serde(default)]
        summary: Vec<String>,
        /// The reasoning text, one string per part (`item/reasoning/textDelta`).
        #[serde(default)]
        content: Vec<String>,
    },
    /// Files the agent changed (or wanted to change) through a patch.
    FileChange {
        /// Item id; also the `itemId` of its approval request.
        id: String,
        /// Every file of the patch, with its diff.
        changes: Vec<FileUpdateChange>,
        /// Current status.
        status: PatchApplyStatus,
    },
    // mcp30: MCP tools.
    /// A call of a tool of an MCP server (`[mcp_servers.NAME]`).
    McpToolCall {
        /// Item id; also the `itemId` of its progress notifications.
        id: String,
        /// The `NAME` of `[mcp_servers.NAME]`.
        server: String,
        /// The tool, as the server names it.
        tool: String,
        /// Current status.
        status: McpToolCallStatus,
        /// Arguments chosen by the model.
        arguments: Value,
        /// What the server answered, once it did.
        result: Option<McpToolCallResult>,
        /// Why the call failed, when it did.
        error: Option<McpToolCallError>,
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
            | Self::DynamicToolCall { id, .. }
            | Self::ContextCompaction { id }
            | Self::Reasoning { id, .. } => id,
            Self::FileChange { id, .. } | Self::McpToolCall { id, .. } => id,
        }
    }
}

/// An input type of existing clients that Tandem recognises but does not support. It decodes
/// (so that the server can answer -32602 `unsupported input type: X` instead of -32600).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnsupportedInputKind {
    /// `image` by `fileId` (an `image` with a `url` is [`UserInput::Image`]).
    Image,
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
        Self::Audio,
        Self::LocalAudio,
        Self::Skill,
        Self::Mention,
    ];

    /// The wire `type` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Image => "image",
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

/// How closely the model should look at an image (`detail` of `image` and `localImage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum ImageDetail {
    /// The model decides.
    Auto,
    /// A low-resolution look.
    Low,
    /// A high-resolution look.
    High,
    /// The image as it is.
    Original,
}

impl ImageDetail {
    /// The wire value (also what OpenAI's APIs take as `detail`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Low => "low",
            Self::High => "high",
            Self::Original => "original",
        }
    }
}

/// What `image` input must start with: remote URLs are refused, as by the reference
/// app-server (the model provider would have to fetch them).
pub const IMAGE_DATA_URL_PREFIX: &str = "data:";

/// One piece of user input, tagged on `type`.
///
/// `text`, `image` (an inline `data:` URL) and `localImage` (a file the server reads when it
/// sends the turn to the model) are usable. The other input types of existing clients decode
/// into [`UserInput::Unsupported`], keeping their members so the value re-encodes unchanged,
/// and [`UserInput::ensure_supported`] turns them into the -32602 error the server must
/// answer. Any other `type` fails to decode (-32600 when it arrives as params).
///
/// `text_elements` (UI annotations of existing clients) is accepted and dropped on input and
/// always encoded as `[]`: Tandem does not interpret it, and output must not echo values a
/// typed client might not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserInput {
    /// `{type: "text", text, text_elements: []}`.
    Text {
        /// The text.
        text: SharedText,
    },
    /// `{type: "image", url, detail}`: an image inline, as a `data:` URL.
    Image {
        /// The `data:` URL.
        url: SharedText,
        /// How closely to look; `null` leaves it to the model.
        detail: Option<ImageDetail>,
    },
    /// `{type: "localImage", path, detail}`: an image file on the server's machine, read
    /// (bounded in size) each time the turn is sent to a model.
    LocalImage {
        /// The file's path.
        path: String,
        /// How closely to look; `null` leaves it to the model.
        detail: Option<ImageDetail>,
    },
    /// A recognised but unsupported input type (or an `image` by `fileId`).
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
    pub fn text(text: impl Into<SharedText>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The wire `type` value.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text",
            Self::Image { .. } => "image",
            Self::LocalImage { .. } => "localImage",
            Self::Unsupported { kind, .. } => kind.as_str(),
        }
    }

    /// `Ok` for usable input; -32602 `unsupported input type: X` for an unsupported type, and
    /// -32600 (the reference's error) for an `image` whose URL is not a `data:` URL.
    pub fn ensure_supported(&self) -> Result<(), JSONRPCErrorError> {
        match self {
            Self::Text { .. } | Self::LocalImage { .. } => Ok(()),
            Self::Image { url, .. } if url.starts_with(IMAGE_DATA_URL_PREFIX) => Ok(()),
            Self::Image { .. } => Err(JSONRPCErrorError::invalid_request(
                "remote image URLs are not supported; use an inline data URL instead",
            )),
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
            Self::Image { url, detail } => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("type", "image")?;
                map.serialize_entry("url", url)?;
                map.serialize_entry("detail", detail)?;
                map.end()
            }
            Self::LocalImage { path, detail } => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("type", "localImage")?;
                map.serialize_entry("detail", detail)?;
                map.serialize_entry("path", path)?;
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
            text: SharedText,
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
        #[derive(Deserialize)]
        struct Image {
            url: SharedText,
            #[serde(default)]
            detail: Option<ImageDetail>,
        }

        #[derive(Deserialize)]
        struct LocalImage {
            path: String,
            #[serde(default)]
            detail: Option<ImageDetail>,
        }

        match kind.as_str() {
            "text" => {
                let Text { text } =
                    serde_json::from_value(Value::Object(fields)).map_err(D::Error::custom)?;
                return Ok(Self::Text { text });
            }
            // By `fileId` instead: kept as unsupported, answered -32602.
            "image" if fields.contains_key("url") => {
                let Image { url, detail } =
                    serde_json::from_value(Value::Object(fields)).map_err(D::Error::custom)?;
                return Ok(Self::Image { url, detail });
            }
            "localImage" => {
                let LocalImage { path, detail } =
                    serde_json::from_value(Value::Object(fields)).map_err(D::Error::custom)?;
                return Ok(Self::LocalImage { path, detail });
            }
            _ => {}
        }
        match UnsupportedInputKind::from_wire(&kind) {
            Some(kind) => Ok(Self::Unsupported { kind, fields }),
            None => Err(D::Error::unknown_variant(&kind, USER_INPUT_TYPES)),
        }
    }
}

/// The `type` of a [`DynamicToolSpec`]; only `"function"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum DynamicToolType {
    /// A function the model can call.
    #[default]
    Function,
}

/// A tool the client provides for a thread (`thread/start.dynamicTools`, experimental). Calls
/// arrive at the client as `item/tool/call`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolSpec {
    /// Always `function`. Existing clients omit `type`, so it defaults on input.
    #[serde(rename = "type", default, with = "null_as_default")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "DynamicToolType"),
        ts(as = "DynamicToolType")
    )]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
