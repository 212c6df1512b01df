//! The server requests and the client's results (docs/protocol.md section 5): tool calls, command
//! approvals and user-input questions.

#[allow(unused_imports)]
use super::*;

/// `item/tool/call` params: call a dynamic tool the client provided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
/// [`CommandExecutionApprovalDecision::Decline`], because docs/protocol.md counts any other answer
/// as a refusal rather than as an invalid reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
            // `allow`, `allowForSession`, `approved` and `approved_for_session` are other
            // clients' words for the same answers (codexed 1.2.2 sends `allow`; the legacy
            // `execCommandApproval` said `approved`): reading them as a refusal would decline
            // what the user approved.
            Some("accept" | "allow" | "approved") => Self::Accept,
            Some("acceptForSession" | "allowForSession" | "approved_for_session") => {
                Self::AcceptForSession
            }
            Some("cancel" | "abort") => Self::Cancel,
            _ => Self::Decline,
        })
    }
}

/// `item/commandExecution/requestApproval` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
    /// The decisions a client may offer: experimental and optional in the reference. Tandem's
    /// server never sends it, since its approvals always offer all four (docs/protocol.md,
    /// section 12); the client reads it from other servers. `None` is omitted on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_decisions: Option<Vec<CommandExecutionApprovalDecision>>,
}

/// The client's result for `item/commandExecution/requestApproval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalResponse {
    /// The decision; unknown values read as `decline`.
    pub decision: CommandExecutionApprovalDecision,
}

/// One option of a user-input question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct UserInputQuestionOption {
    /// Short label.
    pub label: String,
    /// What choosing it means.
    pub description: String,
}

/// One question of `item/tool/requestUserInput`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct UserInputAnswer {
    /// The chosen labels or typed text.
    pub answers: Vec<String>,
}

/// The client's result for `item/tool/requestUserInput`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputResponse {
    /// Answers by question id.
    pub answers: BTreeMap<String, UserInputAnswer>,
}
