//! mcp30: the tools of MCP servers as an agent sees them. The turn's runtime offers the tools
//! of every server ready when the turn started ([`TurnDriver::mcp_tools`], under the model's
//! names `mcp__SERVER__TOOL`) and runs a call ([`TurnDriver::call_mcp_tool`]): approval as
//! configured, the `mcpToolCall` item, its progress, the tool timeout, the interruption. This
//! module holds the agent's side: the tool's description, what became of a call, and the
//! text the model is told of a result, bounded in bytes as command output is.

use serde_json::Value;

use crate::openai::{MAX_OUTPUT_BYTES, truncate_middle};
use crate::{AgentError, TurnDriver};

/// An MCP tool offered to the model this turn.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolSpec {
    /// The model's name for it: `mcp__SERVER__TOOL`, sanitized and cut to 64 characters by
    /// a stable rule (docs/agents.md, "MCP servers").
    pub model_name: String,
    /// The `NAME` of `[mcp_servers.NAME]`.
    pub server: String,
    /// The tool, as the server names it.
    pub tool: String,
    /// Its description, as the server gave it.
    pub description: String,
    /// Its input schema (a JSON Schema object), as the server gave it.
    pub input_schema: Value,
}

/// What became of an MCP tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpToolOutcome {
    /// Whether the server answered without a tool error.
    pub success: bool,
    /// The result as text, whole: the structured content's JSON when the server gave some
    /// (as the reference tells the model), else the content blocks; or why the call failed.
    pub text: String,
}

impl McpToolOutcome {
    /// A call that failed (declined, timed out, the server gone), for `reason`.
    pub fn failed(reason: impl Into<String>) -> Self {
        Self {
            success: false,
            text: reason.into(),
        }
    }

    /// What the model is told: the text, keeping its head and tail when it is longer than
    /// the bound of command output (16 KiB, the agent's `MAX_OUTPUT_BYTES`), prefixed with `the tool
    /// failed: ` for a failure.
    pub fn model_text(&self) -> String {
        let text = truncate_middle(&self.text, MAX_OUTPUT_BYTES);
        if self.success {
            text
        } else {
            format!("the tool failed: {text}")
        }
    }
}

/// The text of an MCP result: `structured` as JSON when present, else every content block
/// (a text block's text, an image or audio block as a note of its type and size, anything
/// else as its JSON), one per line.
pub fn mcp_result_text(content: &[Value], structured: Option<&Value>) -> String {
    if let Some(structured) = structured.filter(|value| !value.is_null()) {
        return structured.to_string();
    }
    let blocks: Vec<String> = content
        .iter()
        .map(|block| {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
            match kind {
                "text" => block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                "image" | "audio" => format!(
                    "[{kind} {}, {} bytes of base64 not shown]",
                    block
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .unwrap_or("of unknown type"),
                    block
                        .get("data")
                        .and_then(Value::as_str)
                        .map_or(0, str::len)
                ),
                _ => block.to_string(),
            }
        })
        .collect();
    blocks.join("\n")
}

/// The model's name of a tool of an earlier turn's `mcpToolCall` item, when that tool is not
/// offered any more: `mcp__SERVER__TOOL` with every character outside `A-Z a-z 0-9 _ -` as
/// `_` (no cut: the history only pairs the call with its result).
pub(crate) fn replayed_name(server: &str, tool: &str) -> String {
    let clean = |name: &str| -> String {
        name.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("mcp__{}__{}", clean(server), clean(tool))
}

impl TurnDriver {
    /// The MCP tools offered this turn: those of every server ready when the turn started
    /// (after waiting for the `required` ones).
    pub fn mcp_tools(&self) -> &[McpToolSpec] {
        self.runtime().mcp_tools()
    }

    /// The offered MCP tool the model calls `model_name`.
    pub fn mcp_tool(&self, model_name: &str) -> Option<&McpToolSpec> {
        self.mcp_tools()
            .iter()
            .find(|spec| spec.model_name == model_name)
    }

    /// Calls `tool` of MCP server `server` with `arguments` (a JSON object, or `null`): asks
    /// for approval when its `approval_mode` says `prompt`, reports an `mcpToolCall` item with
    /// the server's progress, under the server's `tool_timeout_sec`; an interruption cancels
    /// the call (`notifications/cancelled`) and returns [`AgentError::Interrupted`].
    pub async fn call_mcp_tool(
        &mut self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<McpToolOutcome, AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        self.runtime_dyn_mut()
            .call_mcp_tool(server, tool, arguments)
            .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn structured_content_wins_and_blocks_are_described() {
        assert_eq!(
            mcp_result_text(
                &[json!({"type": "text", "text": "hi"})],
                Some(&json!({"a": 1}))
            ),
            "{\"a\":1}"
        );
        let text = mcp_result_text(
            &[
                json!({"type": "text", "text": "one"}),
                json!({"type": "image", "mimeType": "image/png", "data": "AAAA"}),
                json!({"type": "resource_link", "uri": "x://y"}),
            ],
            None,
        );
        assert_eq!(
            text,
            "one\n[image image/png, 4 bytes of base64 not shown]\n\
             {\"type\":\"resource_link\",\"uri\":\"x://y\"}"
        );
    }

    #[test]
    fn what_the_model_is_told_is_bounded_like_command_output() {
        let huge = McpToolOutcome {
            success: true,
            text: "x".repeat(10 * MAX_OUTPUT_BYTES),
        };
        let told = huge.model_text();
        assert!(told.len() <= MAX_OUTPUT_BYTES + 64, "{}", told.len());
        assert!(told.contains("bytes omitted"));
        assert_eq!(
            McpToolOutcome::failed("timed out").model_text(),
            "the tool failed: timed out"
        );
    }

    #[test]
    fn replayed_names_are_sanitized() {
        assert_eq!(replayed_name("my server", "do.it"), "mcp__my_server__do_it");
    }
}
