//! The conversation sent to the model, independent of the wire: the thread's earlier turns
//! and this turn's items replayed as user text, assistant text, assistant tool calls (with the
//! items' ids as call ids) and tool results, plus what the live turn adds. The wire modules
//! turn it into Chat Completions messages or Responses input items.

use serde_json::{Value, json};
use tandem_protocol::{
    CommandExecutionSource, CommandExecutionStatus, DynamicToolCallOutputContentItem,
    DynamicToolCallStatus, DynamicToolSpec, McpToolCallStatus, ThreadItem, Turn, UserInput,
};

use super::apply_patch::{self, APPLY_PATCH_TOOL};
use super::images::{self, UserPart};
use super::tool_calls::ToolCall;
use super::tools::{self, ASK_USER_TOOL, SHELL_TOOL, UPDATE_PLAN_TOOL};
use crate::ReasoningSettings;

/// One entry of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// What the user sent: text and images, in order.
    User(Vec<UserPart>),
    /// What the model said: text, tool calls, or both.
    Assistant { text: String, calls: Vec<ToolCall> },
    /// The result of the call `call_id`.
    ToolResult { call_id: String, output: String },
    // reason29:
    /// The model's reasoning before what it said next (Responses only; Chat Completions
    /// requests leave it out).
    Reasoning(ReasoningOutput),
}

/// The reasoning of an answer as the next request of the turn carries it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReasoningOutput {
    /// The summary parts.
    pub(crate) summary: Vec<String>,
    /// The reasoning text parts.
    pub(crate) content: Vec<String>,
    /// The provider's encrypted reasoning (Responses `include`), without which OpenAI cannot
    /// take the reasoning back when nothing is stored.
    pub(crate) encrypted_content: Option<String>,
}

/// A function the model may call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FunctionTool {
    pub(crate) name: String,
    pub(crate) description: String,
    /// JSON schema of the arguments.
    pub(crate) parameters: Value,
}

/// Everything one request carries besides the model name.
#[derive(Debug, Clone)]
pub(crate) struct Conversation {
    pub(crate) instructions: String,
    pub(crate) entries: Vec<Entry>,
    pub(crate) tools: Vec<FunctionTool>,
    /// `model_reasoning_effort` and `model_reasoning_summary`.
    pub(crate) reasoning: ReasoningSettings,
}

/// The system instructions: what the agent is and where it works.
pub(crate) fn instructions(cwd: &str) -> String {
    format!(
        "You are a coding agent running inside Tandem. You work in the directory {cwd}. Use the \
         `{SHELL_TOOL}` tool to run shell commands there (the user may decline a command), \
         `{APPLY_PATCH_TOOL}` to edit files (not the shell), `{ASK_USER_TOOL}` when you need an \
         answer from the user, and `{UPDATE_PLAN_TOOL}` to keep the user informed of the steps \
         of a longer task. Be concise."
    )
}

/// The instructions of a compaction request: the model writes the summary that replaces the
/// history in later turns.
pub(crate) const COMPACT_INSTRUCTIONS: &str = "You are summarizing a conversation between a user \
     and a coding agent so that the agent can continue the work from the summary alone.";

/// The request that follows the history in a compaction request.
pub(crate) const COMPACT_PROMPT: &str = "Summarize the conversation so far for handing it over: \
     the user's goals and constraints, decisions made, commands run and their outcomes, files \
     touched, and what remains to do. Reply with the summary only.";

/// The built-in tools, then every dynamic tool the thread registered, then the turn's MCP
/// tools under their model names (a tool that reuses a name already offered is left out,
/// since the API refuses duplicate names).
pub(crate) fn function_tools(
    dynamic: &[DynamicToolSpec],
    mcp: &[crate::McpToolSpec],
) -> Vec<FunctionTool> {
    let mut all = vec![
        FunctionTool {
            name: SHELL_TOOL.to_owned(),
            description: "Runs a shell command with `sh -c` and returns its exit code and \
                          combined output (long output keeps its head and tail)."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line to run."},
                    "workdir": {
                        "type": "string",
                        "description": "Directory to run in, relative to the working directory; \
                                        default: the working directory."
                    },
                    "timeout_ms": {
                        "type": "integer",
                        "description": "Kill the command after this many milliseconds."
                    }
                },
                "required": ["command"]
            }),
        },
        apply_patch::function_tool(),
        FunctionTool {
            name: ASK_USER_TOOL.to_owned(),
            description: "Asks the user a question and returns their answer.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {"question": {"type": "string", "description": "The question."}},
                "required": ["question"]
            }),
        },
        // reason29: the reference's plan tool.
        FunctionTool {
            name: UPDATE_PLAN_TOOL.to_owned(),
            description: "Records the plan of the task for the user: every step with its \
                          status. Send the whole plan each time; keep at most one step \
                          in_progress."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "explanation": {"type": "string"},
                    "plan": {
                        "type": "array",
                        "description": "The steps, in order.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "step": {"type": "string"},
                                "status": {
                                    "type": "string",
                                    "description": "pending, in_progress or completed"
                                }
                            },
                            "required": ["step", "status"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["plan"],
                "additionalProperties": false
            }),
        },
    ];
    for spec in dynamic {
        if [
            SHELL_TOOL,
            APPLY_PATCH_TOOL,
            ASK_USER_TOOL,
            UPDATE_PLAN_TOOL,
        ]
        .contains(&spec.name.as_str())
        {
            tracing::warn!(tool = %spec.name, "dynamic tool shadows a built-in tool; not offered");
            continue;
        }
        let parameters = match &spec.input_schema {
            Value::Object(schema) if !schema.is_empty() => spec.input_schema.clone(),
            _ => json!({"type": "object", "properties": {}}),
        };
        all.push(FunctionTool {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters,
        });
    }
    // mcp30: MCP tools, with the schema the server gave (an object schema is what the APIs
    // take; anything else becomes an empty one).
    for spec in mcp {
        if all.iter().any(|tool| tool.name == spec.model_name) {
            tracing::warn!(tool = %spec.model_name, "MCP tool shadows another tool; not offered");
            continue;
        }
        let parameters = match &spec.input_schema {
            Value::Object(schema) if !schema.is_empty() => spec.input_schema.clone(),
            _ => json!({"type": "object", "properties": {}}),
        };
        all.push(FunctionTool {
            name: spec.model_name.clone(),
            description: spec.description.clone(),
            parameters,
        });
    }
    all
}

/// The user entry of `input` (unsupported kinds never get this far).
pub(crate) fn user_entry(input: &[UserInput]) -> Entry {
    Entry::User(images::user_parts(input))
}

impl Conversation {
    /// Reads the local image files of every user entry into `data:` URLs (see
    /// [`images::resolve_local_images`]); entries already read are left alone.
    pub(crate) async fn resolve_local_images(&mut self) {
        for entry in &mut self.entries {
            if let Entry::User(parts) = entry {
                images::resolve_local_images(parts).await;
            }
        }
    }
}

/// Appends the entries of `items` (one turn's, in order) to `entries`. Consecutive tool items
/// become one assistant message with several calls, followed by their results, the way the
/// model produced them. `ask_user` exchanges leave no item, so they are not replayed.
pub(crate) fn replay_items(items: &[ThreadItem], entries: &mut Vec<Entry>) {
    let mut text = String::new();
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut results: Vec<Entry> = Vec::new();
    let flush = |text: &mut String,
                 calls: &mut Vec<ToolCall>,
                 results: &mut Vec<Entry>,
                 entries: &mut Vec<Entry>| {
        if !text.is_empty() || !calls.is_empty() {
            entries.push(Entry::Assistant {
                text: std::mem::take(text),
                calls: std::mem::take(calls),
            });
            entries.append(results);
        }
    };
    for item in items {
        match item {
            ThreadItem::UserMessage { content, .. } => {
                flush(&mut text, &mut calls, &mut results, entries);
                entries.push(user_entry(content));
            }
            ThreadItem::AgentMessage { text: said, .. } => {
                if !calls.is_empty() {
                    flush(&mut text, &mut calls, &mut results, entries);
                }
                text.push_str(said);
            }
            // search29: the user's own command (`thread/shellCommand`) is something the user
            // did, not a call of the model's: it reaches the model as the user's words, as
            // the reference hands it over.
            ThreadItem::CommandExecution {
                source: CommandExecutionSource::UserShell,
                command,
                exit_code,
                aggregated_output,
                ..
            } => {
                flush(&mut text, &mut calls, &mut results, entries);
                let output = aggregated_output.as_deref().unwrap_or("");
                let said = tools::user_shell_report(command, *exit_code, output);
                entries.push(Entry::User(vec![images::UserPart::Text(said.into())]));
            }
            ThreadItem::CommandExecution {
                id,
                command,
                status,
                exit_code,
                aggregated_output,
                ..
            } => {
                calls.push(ToolCall {
                    id: id.clone(),
                    name: SHELL_TOOL.to_owned(),
                    arguments: json!({ "command": command }).to_string(),
                });
                let output = if *status == CommandExecutionStatus::Declined {
                    tools::DECLINED_RESULT.to_owned()
                } else if *status == CommandExecutionStatus::InProgress
                    || (aggregated_output.is_none() && exit_code.is_none())
                {
                    // Left running by a crash (closed as failed on recovery, with nothing).
                    tools::INTERRUPTED_RESULT.to_owned()
                } else {
                    tools::command_result(*exit_code, aggregated_output.as_deref().unwrap_or(""))
                };
                results.push(Entry::ToolResult {
                    call_id: id.clone(),
                    output,
                });
            }
            // The summary a compaction stored reaches the model through the history the
            // thread hands over (as user input); the marker itself says nothing. Stored
            // reasoning has no encrypted content to send back, and providers discard the
            // reasoning of earlier turns anyway.
            ThreadItem::ContextCompaction { .. } | ThreadItem::Reasoning { .. } => {}
            ThreadItem::FileChange {
                id,
                changes,
                status,
            } => {
                let (arguments, output) = apply_patch::replay(changes, *status);
                calls.push(ToolCall {
                    id: id.clone(),
                    name: APPLY_PATCH_TOOL.to_owned(),
                    arguments,
                });
                results.push(Entry::ToolResult {
                    call_id: id.clone(),
                    output,
                });
            }
            // mcp30: an MCP call, under its server's sanitized name.
            ThreadItem::McpToolCall {
                id,
                server,
                tool,
                arguments,
                status,
                result,
                error,
                ..
            } => {
                calls.push(ToolCall {
                    id: id.clone(),
                    name: crate::mcp::replayed_name(server, tool),
                    arguments: arguments.to_string(),
                });
                let output = match (status, result, error) {
                    (McpToolCallStatus::InProgress, _, _) => tools::INTERRUPTED_RESULT.to_owned(),
                    (_, Some(result), _) => crate::McpToolOutcome {
                        success: *status == McpToolCallStatus::Completed,
                        text: crate::mcp_result_text(
                            &result.content,
                            result.structured_content.as_ref(),
                        ),
                    }
                    .model_text(),
                    (_, None, error) => crate::McpToolOutcome::failed(
                        error
                            .as_ref()
                            .map_or("no result", |error| error.message.as_str()),
                    )
                    .model_text(),
                };
                results.push(Entry::ToolResult {
                    call_id: id.clone(),
                    output,
                });
            }
            ThreadItem::DynamicToolCall {
                id,
                tool,
                arguments,
                content_items,
                success,
                status,
                ..
            } => {
                calls.push(ToolCall {
                    id: id.clone(),
                    name: tool.clone(),
                    arguments: arguments.to_string(),
                });
                let texts: Vec<&str> = content_items
                    .iter()
                    .flatten()
                    .map(|DynamicToolCallOutputContentItem::InputText { text }| text.as_str())
                    .collect();
                let output =
                    if *status == DynamicToolCallStatus::InProgress || content_items.is_none() {
                        tools::INTERRUPTED_RESULT.to_owned()
                    } else {
                        tools::dynamic_result(success.unwrap_or(false), &texts.join("\n"))
                    };
                results.push(Entry::ToolResult {
                    call_id: id.clone(),
                    output,
                });
            }
        }
    }
    flush(&mut text, &mut calls, &mut results, entries);
}

/// The entries of the thread's earlier turns, oldest first.
pub(crate) fn replay_history(history: &[Turn]) -> Vec<Entry> {
    let mut entries = Vec::new();
    for turn in history {
        replay_items(&turn.items, &mut entries);
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_a_crash_left_without_output_replay_as_interrupted() {
        let mut command = ThreadItem::CommandExecution {
            id: "c1".into(),
            command: "make".into(),
            cwd: "/".into(),
            status: CommandExecutionStatus::InProgress,
            command_actions: Vec::new(),
            process_id: None,
            exit_code: None,
            aggregated_output: None,
            duration_ms: None,
            source: tandem_protocol::CommandExecutionSource::Agent,
        };
        let tool = ThreadItem::DynamicToolCall {
            id: "t1".into(),
            tool: "lookup".into(),
            namespace: None,
            arguments: json!({}),
            status: DynamicToolCallStatus::InProgress,
            content_items: None,
            success: None,
            duration_ms: None,
        };
        for items in [vec![command.clone(), tool], {
            // As recovery leaves it (tandem-store's `close_unfinished_item`): closed as
            // failed, still without output.
            if let ThreadItem::CommandExecution { status, .. } = &mut command {
                *status = CommandExecutionStatus::Failed;
            }
            vec![command]
        }] {
            let mut entries = Vec::new();
            replay_items(&items, &mut entries);
            let results: Vec<&Entry> = entries
                .iter()
                .filter(|entry| matches!(entry, Entry::ToolResult { .. }))
                .collect();
            assert_eq!(results.len(), items.len(), "{entries:#?}");
            for result in results {
                assert!(
                    matches!(result, Entry::ToolResult { output, .. } if output.starts_with("interrupted, no output")),
                    "{result:?}"
                );
            }
        }
    }

    #[test]
    fn tool_items_replay_as_one_call_message_then_results() {
        let items = vec![
            ThreadItem::UserMessage {
                id: "u".into(),
                content: vec![UserInput::text("list")],
                client_id: None,
            },
            ThreadItem::AgentMessage {
                id: "a".into(),
                text: "Looking.".into(),
            },
            ThreadItem::CommandExecution {
                id: "c1".into(),
                command: "ls".into(),
                cwd: "/".into(),
                status: CommandExecutionStatus::Completed,
                command_actions: Vec::new(),
                process_id: None,
                exit_code: Some(0),
                aggregated_output: Some("file\n".into()),
                duration_ms: None,
                source: tandem_protocol::CommandExecutionSource::Agent,
            },
            ThreadItem::CommandExecution {
                id: "c2".into(),
                command: "rm x".into(),
                cwd: "/".into(),
                status: CommandExecutionStatus::Declined,
                command_actions: Vec::new(),
                process_id: None,
                exit_code: None,
                aggregated_output: None,
                duration_ms: None,
                source: tandem_protocol::CommandExecutionSource::Agent,
            },
            ThreadItem::AgentMessage {
                id: "b".into(),
                text: "Done.".into(),
            },
        ];
        let mut entries = Vec::new();
        replay_items(&items, &mut entries);
        assert_eq!(entries.len(), 5, "{entries:#?}");
        assert_eq!(entries[0], Entry::User(vec![UserPart::Text("list".into())]));
        let Entry::Assistant { text, calls } = &entries[1] else {
            panic!("{entries:?}");
        };
        assert_eq!(text, "Looking.");
        let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
        assert_eq!(ids, vec!["c1", "c2"]);
        assert_eq!(calls[0].arguments, r#"{"command":"ls"}"#);
        assert!(
            matches!(&entries[2], Entry::ToolResult { call_id, output } if call_id == "c1" && output.contains("exit code: 0") && output.contains("file"))
        );
        assert!(
            matches!(&entries[3], Entry::ToolResult { call_id, output } if call_id == "c2" && output.contains("declined"))
        );
        assert_eq!(
            entries[4],
            Entry::Assistant {
                text: "Done.".into(),
                calls: Vec::new()
            }
        );
    }

    #[test]
    fn dynamic_tools_follow_the_builtins_and_cannot_shadow_them() {
        let spec = |name: &str| DynamicToolSpec {
            kind: Default::default(),
            name: name.into(),
            description: "d".into(),
            input_schema: json!({}),
            defer_loading: None,
        };
        let mcp = |model_name: &str, schema: Value| crate::McpToolSpec {
            model_name: model_name.into(),
            server: "docs".into(),
            tool: "echo".into(),
            description: "Answers its text".into(),
            input_schema: schema,
        };
        let echo_schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let tools = function_tools(
            &[
                spec("lookup"),
                spec("shell"),
                spec("apply_patch"),
                spec("update_plan"),
            ],
            &[
                mcp("mcp__docs__echo", echo_schema.clone()),
                mcp("lookup", json!({})),
                mcp("mcp__docs__bare", json!({})),
            ],
        );
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "shell",
                "apply_patch",
                "ask_user",
                "update_plan",
                "lookup",
                "mcp__docs__echo",
                "mcp__docs__bare"
            ]
        );
        assert_eq!(tools[3].parameters["type"], "object");
        // mcp30: an MCP tool keeps the server's description and schema.
        assert_eq!(tools[5].description, "Answers its text");
        assert_eq!(tools[5].parameters, echo_schema);
        assert_eq!(
            tools[6].parameters,
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn a_users_shell_command_replays_as_the_users_words_not_a_call() {
        let items = vec![
            ThreadItem::AgentMessage {
                id: "a".into(),
                text: "Hello.".into(),
            },
            ThreadItem::CommandExecution {
                id: "s1".into(),
                command: "/bin/sh -lc 'git status'".into(),
                cwd: "/".into(),
                status: CommandExecutionStatus::Failed,
                command_actions: Vec::new(),
                process_id: None,
                exit_code: Some(128),
                aggregated_output: Some("fatal: not a git repository\n".into()),
                duration_ms: Some(3),
                source: CommandExecutionSource::UserShell,
            },
        ];
        let mut entries = Vec::new();
        replay_items(&items, &mut entries);
        assert_eq!(entries.len(), 2, "{entries:#?}");
        assert!(matches!(&entries[0], Entry::Assistant { calls, .. } if calls.is_empty()));
        let Entry::User(parts) = &entries[1] else {
            panic!("{entries:?}");
        };
        let [UserPart::Text(text)] = parts.as_slice() else {
            panic!("{parts:?}");
        };
        assert!(text.contains("/bin/sh -lc 'git status'"), "{text}");
        assert!(text.contains("exit code: 128"), "{text}");
        assert!(text.contains("fatal: not a git repository"), "{text}");
    }
}
