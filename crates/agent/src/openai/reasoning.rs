//! The model's reasoning on both wires: the [`ReasoningEvent`]s the decoders produce, the
//! [`ReasoningStream`] that turns them into `reasoning` items through the [`TurnDriver`] and
//! keeps what the next request must carry back, and the reasoning settings of a request body.
//!
//! Chat Completions servers (DeepSeek, Qwen, llama.cpp, vLLM, Ollama) stream reasoning text
//! in a `reasoning_content` or `reasoning` delta field, before the answer; it becomes one
//! item of reasoning text. The Responses API streams reasoning output items with summary
//! parts and reasoning text, each its own item; with `store: false` (Tandem never stores
//! responses at the provider) an item is only usable by the next request with its
//! `encrypted_content`, which the request asks for with `include`.

use serde_json::{Value, json};

use super::TextSink;
use super::transcript::ReasoningOutput;
use crate::providers::WireApi;
use crate::{AgentError, ReasoningDelta, ReasoningSettings, StreamingReasoning, TurnDriver};

/// What to ask for in `include` so that reasoning can be sent back without `store`.
pub(crate) const ENCRYPTED_CONTENT_INCLUDE: &str = "reasoning.encrypted_content";

/// Reasoning as a decoder saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReasoningEvent {
    /// A reasoning output starts.
    Started,
    /// A piece of the open reasoning.
    Delta(ReasoningDelta),
    /// The open reasoning is complete. Parts given here are the provider's final ones and
    /// replace what was streamed; `encrypted_content` is what the next request sends back.
    Finished {
        summary: Option<Vec<String>>,
        content: Option<Vec<String>>,
        encrypted_content: Option<String>,
    },
}

/// The reasoning of one answer as it streams: at most one `reasoning` item open at a time,
/// and what each finished one leaves for the next request.
#[derive(Debug, Default)]
pub(crate) struct ReasoningStream {
    open: Option<StreamingReasoning>,
    outputs: Vec<ReasoningOutput>,
}

impl ReasoningStream {
    /// Shows `event` to the client (unless the answer is only collected, as a compaction's
    /// is: its only item is the compaction). Fails once the turn is interrupted.
    pub(crate) async fn handle(
        &mut self,
        event: ReasoningEvent,
        sink: TextSink,
        driver: &mut TurnDriver,
    ) -> Result<(), AgentError> {
        if sink == TextSink::Collected {
            return Ok(());
        }
        match event {
            ReasoningEvent::Started => {
                self.finish(driver).await;
                self.open = Some(driver.begin_reasoning().await?);
            }
            ReasoningEvent::Delta(delta) => {
                // Servers that skip the announcement still get an item.
                if self.open.is_none() {
                    self.open = Some(driver.begin_reasoning().await?);
                }
                if let Some(open) = &mut self.open {
                    driver.reasoning_delta(open, delta).await?;
                }
            }
            ReasoningEvent::Finished {
                summary,
                content,
                encrypted_content,
            } => {
                let Some(open) = self.open.take() else {
                    // A finished item never announced: nothing was shown, so nothing to end;
                    // its encrypted content still goes back to the model.
                    if encrypted_content.is_some() {
                        self.outputs.push(ReasoningOutput {
                            summary: summary.unwrap_or_default(),
                            content: content.unwrap_or_default(),
                            encrypted_content,
                        });
                    }
                    return Ok(());
                };
                let summary = summary.unwrap_or_else(|| open.summary().to_vec());
                let content = content.unwrap_or_else(|| open.content().to_vec());
                self.outputs.push(ReasoningOutput {
                    summary: summary.clone(),
                    content: content.clone(),
                    encrypted_content,
                });
                driver
                    .complete_reasoning(open, Some(summary), Some(content))
                    .await;
            }
        }
        Ok(())
    }

    /// Completes the open item with what it streamed (the answer moved on, or stopped).
    pub(crate) async fn finish(&mut self, driver: &mut TurnDriver) {
        if let Some(open) = self.open.take() {
            self.outputs.push(ReasoningOutput {
                summary: open.summary().to_vec(),
                content: open.content().to_vec(),
                encrypted_content: None,
            });
            driver.complete_reasoning(open, None, None).await;
        }
    }

    /// What the next request carries back, in order.
    pub(crate) fn into_outputs(self) -> Vec<ReasoningOutput> {
        self.outputs
    }
}

/// Adds `settings` to a request `body`: Chat Completions `reasoning_effort`; Responses
/// `reasoning: {effort, summary}` (a summary of `none` is left out) and, since nothing is
/// stored at the provider, `include: ["reasoning.encrypted_content"]` so that the reasoning
/// can be sent back. Nothing when neither key is set: a model that does not reason may refuse
/// the members.
pub(crate) fn add_settings(wire: WireApi, settings: &ReasoningSettings, body: &mut Value) {
    if !settings.is_set() {
        return;
    }
    let Some(members) = body.as_object_mut() else {
        return;
    };
    match wire {
        WireApi::Chat => {
            if let Some(effort) = &settings.effort {
                members.insert("reasoning_effort".into(), Value::from(effort.as_str()));
            }
        }
        WireApi::Responses => {
            let mut reasoning = serde_json::Map::new();
            if let Some(effort) = &settings.effort {
                reasoning.insert("effort".into(), Value::from(effort.as_str()));
            }
            if let Some(summary) = settings.summary.as_deref().filter(|s| *s != "none") {
                reasoning.insert("summary".into(), Value::from(summary));
            }
            members.insert("reasoning".into(), Value::Object(reasoning));
            members.insert("include".into(), json!([ENCRYPTED_CONTENT_INCLUDE]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(effort: Option<&str>, summary: Option<&str>) -> ReasoningSettings {
        ReasoningSettings {
            effort: effort.map(str::to_owned),
            summary: summary.map(str::to_owned),
        }
    }

    #[test]
    fn settings_go_where_each_wire_takes_them() {
        let mut body = json!({"model": "m"});
        add_settings(
            WireApi::Chat,
            &settings(Some("high"), Some("auto")),
            &mut body,
        );
        assert_eq!(body, json!({"model": "m", "reasoning_effort": "high"}));

        let mut body = json!({"model": "m"});
        add_settings(
            WireApi::Responses,
            &settings(Some("low"), Some("detailed")),
            &mut body,
        );
        assert_eq!(
            body["reasoning"],
            json!({"effort": "low", "summary": "detailed"})
        );
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));

        let mut body = json!({"model": "m"});
        add_settings(WireApi::Responses, &settings(None, Some("none")), &mut body);
        assert_eq!(body["reasoning"], json!({}));

        for wire in [WireApi::Chat, WireApi::Responses] {
            let mut body = json!({"model": "m"});
            add_settings(wire, &settings(None, None), &mut body);
            assert_eq!(body, json!({"model": "m"}));
        }
    }
}
