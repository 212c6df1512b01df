//! MCP servers as tools (issue 30, docs/protocol.md section 4 "MCP servers" and section 7
//! "MCP tool calls"): `mcpServerStatus/list`, `mcpServer/tool/call`,
//! `mcpServer/resource/read`, `config/mcpServer/reload`, the notifications
//! `mcpServer/startupStatus/updated` and `item/mcpToolCall/progress`, the `mcpToolCall` item's
//! parts and the server request `mcpServer/elicitation/request`, in the reference
//! app-server's shapes (its JSON Schema, release 0.169.0).
//!
//! What an MCP server itself defines (a tool, a resource, a content block, its capabilities)
//! is carried as JSON exactly as the server sent it: MCP owns those shapes, and re-typing them
//! here would drop what a newer server adds.

#[allow(unused_imports)]
use super::*;

/// How much `mcpServerStatus/list` reports of each server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum McpServerStatusDetail {
    /// Tools, resources and resource templates (the default).
    Full,
    /// Tools and the authentication state only: `resources` and `resourceTemplates` are `[]`.
    ToolsAndAuthOnly,
}

/// `mcpServerStatus/list` params. Every member is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ListMcpServerStatusParams {
    /// A `nextCursor` of an earlier page (Tandem answers in one page, so never needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size (accepted; Tandem answers every server at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// How much to report (default `full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<McpServerStatusDetail>,
    /// Only this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Accepted: Tandem's servers are shared by every thread, so the answer is the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

/// A server's connection state (`runtimeStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum McpServerConnectionStatus {
    /// Enabled, its start not begun.
    NotStarted,
    /// Connecting and listing its tools.
    Starting,
    /// Ready: its tools are offered to the model.
    Connected,
    /// It asks for credentials Tandem does not have.
    AuthenticationRequired,
    /// It could not start, or its connection closed.
    Failed,
    /// Its start was abandoned.
    Cancelled,
    /// `enabled = false`.
    Disabled,
}

/// How a server authenticates (`authStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum McpAuthStatus {
    /// Not known.
    Unknown,
    /// The transport has no authentication (stdio, or HTTP without a token).
    Unsupported,
    /// OAuth, not logged in.
    NotLoggedIn,
    /// A bearer token from `bearer_token_env_var`.
    BearerToken,
    /// OAuth, logged in.
    #[serde(rename = "oAuth")]
    OAuth,
}

/// One server of `mcpServerStatus/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    /// The `NAME` of `[mcp_servers.NAME]`.
    pub name: String,
    /// Its connection state.
    pub runtime_status: Option<McpServerConnectionStatus>,
    /// Always `null`: Tandem has no plugins.
    pub plugin_id: Option<String>,
    /// The origin of an HTTP server's URL (no credentials, path or query); `null` for stdio.
    pub http_origin: Option<String>,
    /// What the server said about itself at the handshake (MCP's `Implementation`).
    pub server_info: Option<Value>,
    /// The capabilities it advertised; `null` unless connected.
    pub server_capabilities: Value,
    /// Always `null`.
    pub tool_list_meta: Value,
    /// Its offered tools by name, each an MCP `Tool` as the server described it.
    pub tools: BTreeMap<String, Value>,
    /// Why its tools could not be listed (or why it failed).
    pub tools_error: Option<String>,
    /// Its resources (MCP `Resource`s).
    pub resources: Vec<Value>,
    /// Its resource templates (MCP `ResourceTemplate`s).
    pub resource_templates: Vec<Value>,
    /// How it authenticates.
    pub auth_status: McpAuthStatus,
}

/// `mcpServerStatus/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ListMcpServerStatusResponse {
    /// Every configured server (or the one asked for), by name.
    pub data: Vec<McpServerStatus>,
    /// Always `null`: one page.
    pub next_cursor: Option<String>,
}

/// `mcpServer/tool/call` params: call a tool of a configured server directly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpServerToolCallParams {
    /// A thread the server knows (loaded or stored); the call is not part of its history.
    pub thread_id: String,
    /// The `NAME` of `[mcp_servers.NAME]`.
    pub server: String,
    /// The tool, as the server names it.
    pub tool: String,
    /// Its arguments: an object, or omitted (`null` reads as omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// MCP request metadata (accepted, not forwarded).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// `mcpServer/tool/call` result: the server's `CallToolResult`, members it did not send
/// omitted (as the reference passes it on).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpServerToolCallResponse {
    /// The content blocks (MCP `ContentBlock`s: text, image, audio, resource links...).
    pub content: Vec<Value>,
    /// Structured content, when the tool gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool reports an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The result's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// `mcpServer/resource/read` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpResourceReadParams {
    /// The `NAME` of `[mcp_servers.NAME]`.
    pub server: String,
    /// The resource.
    pub uri: String,
    /// Accepted and ignored (Tandem's servers are shared by every thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Accepted and ignored (hosted apps of the reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
    /// Accepted and ignored (hosted apps of the reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_call_id: Option<String>,
    /// Accepted and ignored (hosted apps of the reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Value>,
    /// MCP request metadata (accepted, not forwarded).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// `mcpServer/resource/read` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpResourceReadResponse {
    /// The contents (MCP `ResourceContents`: `{uri, mimeType, text}` or `{uri, mimeType,
    /// blob}`).
    pub contents: Vec<Value>,
    /// Always `null`.
    pub origin_call_id: Option<String>,
}

/// A startup state (`status` of `mcpServer/startupStatus/updated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum McpServerStartupState {
    /// Starting.
    Starting,
    /// Ready.
    Ready,
    /// Failed (to start, or later).
    Failed,
    /// The start was abandoned.
    Cancelled,
}

/// Why a start failed, when a client can do something about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum McpServerStartupFailureReason {
    /// The server asks for (new) credentials.
    ReauthenticationRequired,
}

/// `mcpServer/startupStatus/updated`: a server's startup state changed. Sent to every
/// initialized connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatusUpdatedNotification {
    /// Always `null`: Tandem's servers are shared by every thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The server.
    pub name: String,
    /// Its new state.
    pub status: McpServerStartupState,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Set when it failed for want of credentials.
    #[serde(default)]
    pub failure_reason: Option<McpServerStartupFailureReason>,
}

/// Status of an `mcpToolCall` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum McpToolCallStatus {
    /// Waiting for approval or running.
    InProgress,
    /// The server answered (possibly with a tool error: see `result`).
    Completed,
    /// The call failed, timed out, was declined or was cancelled (see `error`).
    Failed,
}

/// What an `mcpToolCall` item's server answered; `structuredContent` and `_meta` are always
/// present (`null` when the server sent none), as the reference sends them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallResult {
    /// The content blocks, as the server sent them.
    pub content: Vec<Value>,
    /// Structured content, when the tool gives it.
    #[serde(default)]
    pub structured_content: Option<Value>,
    /// The result's `_meta`.
    #[serde(rename = "_meta", default)]
    pub meta: Option<Value>,
}

/// Why an `mcpToolCall` item failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallError {
    /// What went wrong, as the model is told.
    pub message: String,
}

/// `item/mcpToolCall/progress`: a progress notification of an MCP server about a call in
/// flight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallProgressNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `mcpToolCall` item.
    pub item_id: String,
    /// The server's message, or `progress/total` when it sent none.
    pub message: String,
}

/// What an MCP server asks the user for (`mode` and its members).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(tag = "mode")]
pub enum McpElicitationRequest {
    /// A form: values for the properties of `requestedSchema`.
    #[serde(rename = "form", rename_all = "camelCase")]
    Form {
        /// What the server says to the user.
        message: String,
        /// The form: a flat object schema of primitive properties (MCP's
        /// `ElicitRequestFormParams.requestedSchema`).
        requested_schema: Value,
        /// The request's `_meta`.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
    /// A URL the user should open.
    #[serde(rename = "url", rename_all = "camelCase")]
    Url {
        /// What the server says to the user.
        message: String,
        /// The URL.
        url: String,
        /// The server's id of the elicitation.
        elicitation_id: String,
        /// The request's `_meta`.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
}

/// `mcpServer/elicitation/request` params: an MCP server asks the user something in the
/// course of a tool call of this thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpServerElicitationRequestParams {
    /// The thread whose call the server is serving.
    pub thread_id: String,
    /// The turn of that call.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The `NAME` of `[mcp_servers.NAME]`.
    pub server_name: String,
    /// What it asks.
    #[serde(flatten)]
    pub request: McpElicitationRequest,
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum McpServerElicitationAction {
    /// Accepted, with `content`.
    Accept,
    /// Declined; the server goes on without it.
    Decline,
    /// Dismissed.
    Cancel,
}

/// The client's result for `mcpServer/elicitation/request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct McpServerElicitationRequestResponse {
    /// The answer.
    pub action: McpServerElicitationAction,
    /// The form's values, for `accept`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// The client's metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl McpServerElicitationRequestResponse {
    /// The least-privilege answer: `decline`, no content.
    pub fn decline() -> Self {
        Self {
            action: McpServerElicitationAction::Decline,
            content: None,
            meta: None,
        }
    }
}
