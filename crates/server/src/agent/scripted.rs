//! [`ScriptedAgent`]: the deterministic default agent, whose input lines are commands. Tests
//! and benchmarks use it to drive every [`TurnDriver`] path without a model.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tandem_protocol::{DynamicToolCallOutputContentItem, ThreadItem, Turn, UserInput};

use super::{Agent, AgentError, CommandOptions, TurnDriver};

/// The deterministic default agent. Each input line is a command:
///
/// - `/tool NAME JSON`: calls the dynamic tool `NAME` (registered at `thread/start`) with the
///   JSON arguments, then reports the tool's text;
/// - `/sh CMD`: runs `CMD` with `sh -c` (asking for approval unless the policy is `never`);
/// - `/ask QUESTION`: asks the user and echoes the answer;
/// - `/sleep MS`: waits MS milliseconds (interruptible);
/// - `/fail MESSAGE`: fails the turn;
/// - `/history`: answers `history: ` and a JSON array with the user text of each turn of the
///   history it was given (after `thread/compact/start`, the summary comes first);
/// - any other text: answered with a message quoting it, streamed in several deltas.
///
/// Steered input is executed the same way once the lines before it are done. A compaction
/// uses the default [`Agent::compact`]: the deterministic [`super::summarize_transcript`].
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
            for line in input_lines(&pending) {
                run_line(line, history, driver).await?;
            }
            pending = driver.take_steered_input().await?;
        }
        Ok(())
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
            UserInput::Unsupported { .. } => None,
        })
        .collect();
    texts.join("\n")
}

/// The non-empty lines of every text input, in order (borrowed: an input can be large).
fn input_lines(input: &[UserInput]) -> Vec<&str> {
    input
        .iter()
        .filter_map(|input| match input {
            UserInput::Text { text } => Some(text.as_str()),
            UserInput::Unsupported { .. } => None,
        })
        .flat_map(str::lines)
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect()
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
                .agent_message(&format!("tool {name} {verdict}: {}", text.join("\n")))
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
                .agent_message(&format!("you answered: {}", answers.join(", ")))
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
            driver.agent_message(&format!("history: {listed}")).await
        }
        "/fail" => Err(AgentError::Failed(if rest.is_empty() {
            "the scripted agent was told to fail".into()
        } else {
            rest.to_owned()
        })),
        _ => driver.agent_message(&format!("You said: \"{line}\"")).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_from_every_text_input_in_order() {
        let input = vec![
            UserInput::text("hello\n\n  /sleep 5 "),
            UserInput::text("/fail x"),
        ];
        assert_eq!(input_lines(&input), vec!["hello", "/sleep 5", "/fail x"]);
    }
}
