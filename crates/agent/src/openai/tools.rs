//! Running the tools the model calls, through the [`TurnDriver`]: `shell` becomes
//! [`TurnDriver::run_command`] (under the thread's approval policy), `apply_patch`
//! [`TurnDriver::apply_patch`], `ask_user` [`TurnDriver::ask_user`], `update_plan`
//! [`TurnDriver::update_plan`], an MCP tool's model name [`TurnDriver::call_mcp_tool`], any
//! other name the thread's dynamic tool of that name (`item/tool/call`). Whatever happens, the model gets a result text for the call, so a bad
//! call or a declined command never breaks the conversation.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tandem_protocol::DynamicToolCallOutputContentItem;

use super::apply_patch::{self, APPLY_PATCH_TOOL};
use super::tool_calls::ToolCall;
use crate::{AgentError, CommandOptions, CommandOutcome, TurnDriver};

/// The built-in tool that runs shell commands.
pub(crate) const SHELL_TOOL: &str = "shell";

/// The built-in tool that asks the user a question.
pub(crate) const ASK_USER_TOOL: &str = "ask_user";

/// The built-in tool that sets the turn's plan (the reference's `update_plan`).
pub(crate) const UPDATE_PLAN_TOOL: &str = "update_plan";

/// What the model is told once its plan was sent, as the reference tells it.
pub(crate) const PLAN_UPDATED_RESULT: &str = "Plan updated";

/// What the model is told when the user declined a command.
pub(crate) const DECLINED_RESULT: &str =
    "The user declined to run this command; it did not run. Do not retry it unchanged.";

/// The result the model sees for a call that never produced an output: the server stopped
/// (or crashed) while it ran. Every call in the history gets a result, so the model never
/// meets a call left unanswered.
pub(crate) const INTERRUPTED_RESULT: &str = "interrupted, no output: the server stopped before \
     this call finished; it may or may not have taken effect, so check before repeating it.";

/// The most command output the model sees; longer output keeps its head and tail.
pub(crate) const MAX_OUTPUT_BYTES: usize = 16 * 1024;

#[derive(Debug, Deserialize)]
struct ShellArguments {
    command: String,
    #[serde(default)]
    workdir: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct AskUserArguments {
    question: String,
}

/// Runs `call` and returns the text the model sees as its result. `patch_item` is the
/// `fileChange` item id an `apply_patch` call's streamed progress announced.
pub(crate) async fn run(
    call: &ToolCall,
    patch_item: Option<String>,
    driver: &mut TurnDriver,
) -> Result<String, AgentError> {
    let arguments = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        call.arguments.as_str()
    };
    match call.name.as_str() {
        SHELL_TOOL => {
            let arguments: ShellArguments = match serde_json::from_str(arguments) {
                Ok(arguments) => arguments,
                Err(error) => return Ok(bad_arguments(call, &error)),
            };
            let options = CommandOptions {
                workdir: arguments.workdir.filter(|dir| !dir.is_empty()),
                timeout: arguments.timeout_ms.map(Duration::from_millis),
            };
            match driver.run_command(&arguments.command, options).await? {
                CommandOutcome::Declined => Ok(DECLINED_RESULT.to_owned()),
                CommandOutcome::Ran { exit_code, output } => Ok(command_result(exit_code, &output)),
            }
        }
        APPLY_PATCH_TOOL => match apply_patch::patch_of(arguments) {
            Ok(patch) => {
                let outcome = match patch_item {
                    Some(item_id) => driver.apply_streamed_patch(item_id, &patch).await?,
                    None => driver.apply_patch(&patch).await?,
                };
                Ok(outcome.report().to_owned())
            }
            Err(error) => Ok(error),
        },
        ASK_USER_TOOL => {
            let arguments: AskUserArguments = match serde_json::from_str(arguments) {
                Ok(arguments) => arguments,
                Err(error) => return Ok(bad_arguments(call, &error)),
            };
            let answers = driver.ask_user(&arguments.question).await?;
            Ok(if answers.is_empty() {
                "The user gave no answer.".to_owned()
            } else {
                format!("The user answered: {}", answers.join("\n"))
            })
        }
        // reason29: the plan.
        UPDATE_PLAN_TOOL => match crate::reasoning::parse_update_plan(arguments) {
            // The reference's wording, so that models trained on it read it.
            Err(error) => Ok(format!("failed to parse function arguments: {error}")),
            Ok((explanation, plan)) => {
                driver.update_plan(explanation, plan).await?;
                Ok(PLAN_UPDATED_RESULT.to_owned())
            }
        },
        "" => Ok("error: the tool call had no function name; call one of the offered tools".into()),
        // mcp30: an MCP tool, by its model name.
        name if driver.mcp_tool(name).is_some() => {
            let Some(spec) = driver.mcp_tool(name).cloned() else {
                unreachable!("checked by the guard")
            };
            let arguments: Value = match serde_json::from_str(arguments) {
                Ok(arguments) => arguments,
                Err(error) => return Ok(bad_arguments(call, &error)),
            };
            let outcome = driver
                .call_mcp_tool(&spec.server, &spec.tool, arguments)
                .await?;
            Ok(outcome.model_text())
        }
        name if driver.has_tool(name) => {
            let arguments: Value = match serde_json::from_str(arguments) {
                Ok(arguments) => arguments,
                Err(error) => return Ok(bad_arguments(call, &error)),
            };
            let outcome = driver.call_tool(None, name, arguments).await?;
            let texts: Vec<&str> = outcome
                .content_items
                .iter()
                .map(|DynamicToolCallOutputContentItem::InputText { text }| text.as_str())
                .collect();
            Ok(dynamic_result(outcome.success, &texts.join("\n")))
        }
        name => Ok(format!(
            "error: there is no tool named {name}; call one of the offered tools"
        )),
    }
}

fn bad_arguments(call: &ToolCall, error: &serde_json::Error) -> String {
    format!(
        "error: the arguments of {} are not valid ({error}); send a JSON object matching its \
         schema",
        call.name
    )
}

/// The result of a command: its exit code and its output, truncated to head and tail.
pub(crate) fn command_result(exit_code: Option<i32>, output: &str) -> String {
    let output = truncate_middle(output, MAX_OUTPUT_BYTES);
    match exit_code {
        Some(code) => format!("exit code: {code}\noutput:\n{output}"),
        None => format!("the command did not run to completion (no exit code)\noutput:\n{output}"),
    }
}

/// What the model is told of a command the user ran in the thread (`thread/shellCommand`):
/// the user's words, with the command line as run, its exit code and its output (cut in the
/// middle as a command result is).
pub fn user_shell_report(command: &str, exit_code: Option<i32>, output: &str) -> String {
    format!(
        "I ran this shell command myself: {command}\n{}",
        command_result(exit_code, output)
    )
}

/// The result of a dynamic tool call.
pub(crate) fn dynamic_result(success: bool, text: &str) -> String {
    if success {
        text.to_owned()
    } else {
        format!("the tool failed: {text}")
    }
}

/// `text` if it fits in `max` bytes, else its first and last `max / 2` bytes (on character
/// boundaries) around a note of how much was left out: the start says what ran, the end how
/// it finished.
pub(crate) fn truncate_middle(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let half = max / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[... {} bytes omitted ...]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        assert_eq!(truncate_middle("abc", 10), "abc");
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let text = format!("{}{}{}", "h".repeat(100), "m".repeat(1000), "t".repeat(100));
        let cut = truncate_middle(&text, 200);
        assert!(cut.starts_with(&"h".repeat(100)), "{cut}");
        assert!(cut.ends_with(&"t".repeat(100)), "{cut}");
        assert!(cut.contains("[... 1000 bytes omitted ...]"), "{cut}");
        assert!(!cut.contains("mm"), "{cut}");
    }

    #[test]
    fn truncation_respects_character_boundaries() {
        let text = "é".repeat(100);
        let cut = truncate_middle(&text, 51);
        assert!(cut.starts_with('é') && cut.ends_with('é'));
    }

    #[test]
    fn command_results_hold_the_exit_code_and_the_output() {
        let result = command_result(Some(2), &"x".repeat(40_000));
        assert!(result.starts_with("exit code: 2\noutput:\n"));
        assert!(result.len() < MAX_OUTPUT_BYTES + 100);
        assert!(command_result(None, "boom").contains("no exit code"));
    }
}
