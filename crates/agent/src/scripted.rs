//! [`ScriptedAgent`]: the deterministic default agent, whose input lines are commands. Tests
//! and benchmarks use it to drive every [`TurnDriver`] path without a model.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tandem_protocol::{DynamicToolCallOutputContentItem, ThreadItem, Turn, UserInput};

use super::{Agent, AgentError, CommandOptions, ReasoningDelta, TurnDriver};

/// The deterministic default agent. Each input line is a command:
///
/// - `/tool NAME JSON`: calls the dynamic tool `NAME` (registered at `thread/start`) with the
///   JSON arguments, then reports the tool's text;
/// - `/mcp SERVER TOOL JSON`: calls tool `TOOL` of MCP server `SERVER` with the JSON
///   arguments (an `mcpToolCall` item), then answers `mcp SERVER/TOOL: ` and what the model
///   would be told of the result (bounded as command output is);
/// - `/mcp-tools`: answers `mcp tools: ` and the JSON array of the MCP tools offered this
///   turn, each `{"name", "description", "inputSchema"}` as the model would get them;
/// - `/sh CMD`: runs `CMD` with `sh -c` (asking for approval unless the policy is `never`);
/// - `/patch`, then the lines of a patch up to and including `*** End Patch` (kept as
///   written, leading spaces included): applies it and answers `patch: ` and what became of it
///   (what the model would be told);
/// - `/ask QUESTION`: asks the user and echoes the answer;
/// - `/sleep MS`: waits MS milliseconds (interruptible);
/// - `/fail MESSAGE`: fails the turn;
/// - `/history`: answers `history: ` and a JSON array with the user text of each turn of the
///   history it was given (after `thread/compact/start`, the summary comes first);
/// - `/plan JSON`: sets the turn's plan (`turn/plan/updated`) from the arguments of the
///   `update_plan` tool, `{"explanation": ..., "plan": [{"step": ..., "status": ...}]}`
///   with status `pending`, `in_progress` or `completed`;
/// - `/think TEXT`: streams a `reasoning` item whose summary has one part per `|`-separated
///   piece of TEXT and whose reasoning text is TEXT, each in several deltas;
/// - any other text: answered with a message quoting it, streamed in several deltas.
///
/// Each image input (`image`, `localImage`) is acknowledged with a message naming it, in the
/// order it came among the lines; the scripted agent does not open the image.
///
/// Steered input is executed the same way once the lines before it are done. A compaction
/// uses the default [`Agent::compact`]: the deterministic [`crate::summarize_transcript`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptedAgent;

#[async_trait]
impl Agent for ScriptedAgent {
    async fn run_turn(
        &self,
        history: &[Turn],
        input: Vec<UserInput>,
        driver: &mut TurnDriver,
    ) -> Result<(), AgentError> {
        let mut pending = input;
        while !pending.is_empty() {
            for step in input_steps(&pending) {
                match step {
                    Step::Line(line) => run_line(line, history, driver).await?,
                    Step::Patch(patch) => {
                        let outcome = driver.apply_patch(&patch).await?;
                        driver
                            .agent_message(format!("patch: {}", outcome.report()))
                            .await?;
                    }
                    Step::Image(what) => {
                        driver
                            .agent_message(format!("Received an image: {what}"))
                            .await?;
                    }
                }
            }
            pending = driver.take_steered_input().await?;
        }
        Ok(())
    }

    /// Every wait of a scripted turn (`/sleep`, approvals, tool calls) is the driver's.
    fn waits_only_through_driver(&self) -> bool {
        true
    }
}

/// The text of a turn's user input (every text input of its user messages, joined by a
/// newline).
fn user_text(turn: &Turn) -> String {
    let texts: Vec<&str> = turn
        .items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::UserMessage { content, .. } => Some(content),
            _ => None,
        })
        .flatten()
        .filter_map(|input| match input {
            UserInput::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// One thing the scripted agent does for its input.
#[derive(Debug, PartialEq, Eq)]
enum Step<'a> {
    /// A non-empty line of text, trimmed (borrowed: an input can be large).
    Line(&'a str),
    /// An image to acknowledge, described.
    Image(String),
    /// A patch to apply (the lines after `/patch`, as written).
    Patch(String),
}

/// The line that starts a patch step.
const PATCH_COMMAND: &str = "/patch";

/// The line that ends a patch.
const PATCH_END: &str = "*** End Patch";

/// The steps of every input, in order: each text's non-empty lines, each image.
fn input_steps(input: &[UserInput]) -> Vec<Step<'_>> {
    let mut steps = Vec::new();
    for input in input {
        match input {
            UserInput::Text { text } => {
                let mut lines = text.lines();
                while let Some(line) = lines.next() {
                    let line = line.trim();
                    if line == PATCH_COMMAND {
                        // A patch's lines keep their leading space (context lines start
                        // with one), so they are taken untrimmed up to the end marker.
                        let mut patch = Vec::new();
                        for raw in lines.by_ref() {
                            patch.push(raw);
                            if raw.trim() == PATCH_END {
                                break;
                            }
                        }
                        steps.push(Step::Patch(patch.join("\n")));
                    } else if !line.is_empty() {
                        steps.push(Step::Line(line));
                    }
                }
            }
            UserInput::Image { url, .. } => {
                // `data:image/png;base64,...`: the media type, not the (large) payload.
                let media_type = url
                    .strip_prefix(tandem_protocol::IMAGE_DATA_URL_PREFIX)
                    .and_then(|rest| rest.split([';', ',']).next())
                    .filter(|media_type| !media_type.is_empty())
                    .unwrap_or("unknown type");
                steps.push(Step::Image(format!(
                    "inline {media_type}, {} bytes of data URL",
                    url.len()
                )));
            }
            UserInput::LocalImage { path, .. } => steps.push(Step::Image(format!("file {path}"))),
            UserInput::Unsupported { .. } => {}
        }
    }
    steps
}

async fn run_line(line: &str, history: &[Turn], driver: &mut TurnDriver) -> Result<(), AgentError> {
    let (command, rest) = match line.split_once(char::is_whitespace) {
        Some((command, rest)) => (command, rest.trim()),
        None => (line, ""),
    };
    match command {
        "/tool" => {
            let (name, arguments) = match rest.split_once(char::is_whitespace) {
                Some((name, json)) => (name, json.trim()),
                None => (rest, ""),
            };
            let arguments: Value = if arguments.is_empty() {
                Value::Object(Default::default())
            } else {
                serde_json::from_str(arguments).map_err(|error| {
                    AgentError::Failed(format!("/tool {name}: arguments are not JSON: {error}"))
                })?
            };
            if !driver.has_tool(name) {
                return Err(AgentError::Failed(format!(
                    "/tool {name}: no dynamic tool named {name} was registered at thread/start"
                )));
            }
            let outcome = driver.call_tool(None, name, arguments).await?;
            let text: Vec<&str> = outcome
                .content_items
                .iter()
                .map(|DynamicToolCallOutputContentItem::InputText { text }| text.as_str())
                .collect();
            let verdict = if outcome.success {
                "returned"
            } else {
                "failed"
            };
            driver
                .agent_message(format!("tool {name} {verdict}: {}", text.join("\n")))
                .await
        }
        // mcp30:
        "/mcp" => {
            let mut parts = rest.splitn(3, char::is_whitespace);
            let (Some(server), Some(tool)) = (parts.next(), parts.next()) else {
                return Err(AgentError::Failed("/mcp needs a server and a tool".into()));
            };
            let arguments = parts.next().map(str::trim).unwrap_or("");
            let arguments: Value = if arguments.is_empty() {
                Value::Object(Default::default())
            } else {
                serde_json::from_str(arguments).map_err(|error| {
                    AgentError::Failed(format!(
                        "/mcp {server} {tool}: arguments are not JSON: {error}"
                    ))
                })?
            };
            let outcome = driver.call_mcp_tool(server, tool, arguments).await?;
            driver
                .agent_message(format!("mcp {server}/{tool}: {}", outcome.model_text()))
                .await
        }
        "/mcp-tools" => {
            let tools: Vec<Value> = driver
                .mcp_tools()
                .iter()
                .map(|spec| {
                    serde_json::json!({"name": spec.model_name, "description": spec.description,
                                       "inputSchema": spec.input_schema})
                })
                .collect();
            driver
                .agent_message(format!("mcp tools: {}", Value::Array(tools)))
                .await
        }
        "/sh" => {
            if rest.is_empty() {
                return Err(AgentError::Failed("/sh needs a command".into()));
            }
            driver
                .run_command(rest, CommandOptions::default())
                .await
                .map(|_| ())
        }
        "/ask" => {
            let answers = driver.ask_user(rest).await?;
            driver
                .agent_message(format!("you answered: {}", answers.join(", ")))
                .await
        }
        "/sleep" => {
            let millis: u64 = rest.parse().map_err(|_| {
                AgentError::Failed(format!("/sleep needs milliseconds, got {rest:?}"))
            })?;
            driver.sleep(Duration::from_millis(millis)).await
        }
        "/history" => {
            let texts: Vec<String> = history.iter().map(user_text).collect();
            let listed = serde_json::to_string(&texts).map_err(|error| {
                AgentError::Failed(format!("/history: cannot encode the history: {error}"))
            })?;
            driver.agent_message(format!("history: {listed}")).await
        }
        // reason29: plans and reasoning.
        "/plan" => {
            let (explanation, plan) =
                crate::reasoning::parse_update_plan(rest).map_err(|error| {
                    AgentError::Failed(format!(
                        "/plan needs the update_plan arguments as JSON, {{\"plan\": [{{\"step\": \
                     ..., \"status\": \"pending\"}}]}}: {error}"
                    ))
                })?;
            driver.update_plan(explanation, plan).await
        }
        "/think" => think(rest, driver).await,
        "/fail" => Err(AgentError::Failed(if rest.is_empty() {
            "the scripted agent was told to fail".into()
        } else {
            rest.to_owned()
        })),
        _ => driver.agent_message(format!("You said: \"{line}\"")).await,
    }
}

/// `/think TEXT`: a reasoning item with a summary part per `|`-separated piece and TEXT as
/// its reasoning text, streamed a word at a time; completed even when interrupted midway.
async fn think(text: &str, driver: &mut TurnDriver) -> Result<(), AgentError> {
    let mut reasoning = driver.begin_reasoning().await?;
    let mut deltas = Vec::new();
    for (summary_index, piece) in text.split('|').map(str::trim).enumerate() {
        deltas.push(ReasoningDelta::SummaryPartAdded { summary_index });
        deltas.extend(
            piece
                .split_inclusive(' ')
                .map(|word| ReasoningDelta::SummaryText {
                    summary_index,
                    delta: word.to_owned(),
                }),
        );
    }
    deltas.extend(text.split_inclusive(' ').map(|word| ReasoningDelta::Text {
        content_index: 0,
        delta: word.to_owned(),
    }));
    let mut outcome = Ok(());
    for delta in deltas {
        outcome = driver.reasoning_delta(&mut reasoning, delta).await;
        if outcome.is_err() {
            break;
        }
    }
    driver.complete_reasoning(reasoning, None, None).await;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_come_from_every_input_in_order() {
        let input = vec![
            UserInput::text("hello\n\n  /sleep 5 "),
            UserInput::Image {
                url: "data:image/png;base64,AAAA".into(),
                detail: None,
            },
            UserInput::text("/fail x"),
            UserInput::LocalImage {
                path: "/tmp/cat.jpg".into(),
                detail: Some(tandem_protocol::ImageDetail::Low),
            },
        ];
        assert_eq!(
            input_steps(&input),
            vec![
                Step::Line("hello"),
                Step::Line("/sleep 5"),
                Step::Image("inline image/png, 26 bytes of data URL".into()),
                Step::Line("/fail x"),
                Step::Image("file /tmp/cat.jpg".into()),
            ]
        );
    }

    #[test]
    fn a_patch_step_keeps_its_lines_as_written() {
        let input = vec![UserInput::text(
            "before\n/patch\n*** Begin Patch\n*** Update File: a\n@@\n keep\n-old\n+new\n\
             *** End Patch\nafter",
        )];
        assert_eq!(
            input_steps(&input),
            vec![
                Step::Line("before"),
                Step::Patch(
                    "*** Begin Patch\n*** Update File: a\n@@\n keep\n-old\n+new\n*** End Patch"
                        .into()
                ),
                Step::Line("after"),
            ]
        );
    }
}
