//! The Chat Completions wire: the request body of `POST {base_url}/chat/completions` with
//! `stream: true`, and lenient types for its streamed chunks. Real servers omit envelope
//! fields, send `null` or empty `finish_reason`, usage-only chunks with no choices, reasoning
//! under `reasoning` or `reasoning_content`, and errors inside a 200 stream; all of that
//! decodes.

use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use super::images::UserPart;
use super::reasoning::ReasoningEvent;
use super::retry::{ApiError, AttemptError};
use super::tool_calls::{ToolCall, ToolCallAssembler, ToolCallDelta};
use super::transcript::{Conversation, Entry};
use super::{Decoded, StreamDecoder};
use crate::ReasoningDelta;

/// `null` decodes as the default, like a missing field.
fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// One streamed chunk (`data: {...}`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChatChunk {
    #[serde(default, deserialize_with = "null_default")]
    pub(crate) choices: Vec<ChatChoice>,
    #[serde(default)]
    pub(crate) usage: Option<Value>,
}

/// One choice of a chunk.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChatChoice {
    #[serde(default)]
    pub(crate) index: Option<u32>,
    #[serde(default, deserialize_with = "null_default")]
    pub(crate) delta: ChatDelta,
}

/// What a chunk adds to the answer.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChatDelta {
    #[serde(default)]
    pub(crate) content: Option<String>,
    #[serde(default)]
    pub(crate) reasoning: Option<String>,
    #[serde(default)]
    pub(crate) reasoning_content: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub(crate) tool_calls: Vec<ToolCallDelta>,
}

/// The request body.
pub(crate) fn request_body(model: &str, conversation: &Conversation) -> Value {
    let mut messages = vec![json!({"role": "system", "content": conversation.instructions})];
    for entry in &conversation.entries {
        messages.push(match entry {
            Entry::User(parts) => json!({"role": "user", "content": user_content(parts)}),
            Entry::Assistant { text, calls } if calls.is_empty() => {
                json!({"role": "assistant", "content": text})
            }
            Entry::Assistant { text, calls } => json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { Value::from(text.as_str()) },
                "tool_calls": calls.iter().map(|call| json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })).collect::<Vec<_>>(),
            }),
            Entry::ToolResult { call_id, output } => {
                json!({"role": "tool", "tool_call_id": call_id, "content": output})
            }
            // Servers that stream reasoning want none of it back (DeepSeek refuses it).
            Entry::Reasoning(_) => continue,
        });
    }
    let tools: Vec<Value> = conversation
        .tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            })
        })
        .collect();
    let offers_tools = !tools.is_empty();
    let mut body = json!({
        "model": model,
        "messages": messages,
        "tools": tools,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    // A request without tools (a compaction) leaves the member out: the API refuses an
    // empty `tools` array.
    if !offers_tools && let Some(members) = body.as_object_mut() {
        members.remove("tools");
    }
    body
}

/// A user message's `content`: a plain string when it is all text (what every server takes),
/// else an array of `text` and `image_url` parts.
fn user_content(parts: &[UserPart]) -> Value {
    if let [UserPart::Text(text)] = parts {
        return Value::from(text.as_str());
    }
    if parts.is_empty() {
        return Value::from("");
    }
    parts
        .iter()
        .map(|part| match part {
            UserPart::Text(text) => json!({"type": "text", "text": text}),
            UserPart::Image { url, detail } => {
                let mut image = json!({ "url": url });
                if let Some(detail) = detail {
                    image["detail"] = Value::from(detail.as_str());
                }
                json!({"type": "image_url", "image_url": image})
            }
            // Resolved before any request is built; a path is never sent.
            UserPart::LocalImage { path, .. } => {
                json!({"type": "text", "text": format!("[image file {path} not read]")})
            }
        })
        .collect()
}

/// Decodes one streamed answer; the end is `data: [DONE]`.
#[derive(Debug, Default)]
pub(crate) struct ChatDecoder {
    calls: ToolCallAssembler,
    usage: Option<tandem_protocol::TokenUsageBreakdown>,
    /// Whether reasoning text is streaming: it ends when the answer's content or a tool call
    /// starts, or with the stream.
    reasoning: bool,
}

impl ChatDecoder {
    fn end_reasoning(&mut self, decoded: &mut Vec<Decoded>) {
        if std::mem::take(&mut self.reasoning) {
            decoded.push(Decoded::Reasoning(ReasoningEvent::Finished {
                summary: None,
                content: None,
                encrypted_content: None,
            }));
        }
    }
}

impl StreamDecoder for ChatDecoder {
    fn decode(&mut self, _event: &str, data: &str) -> Result<Vec<Decoded>, AttemptError> {
        let mut decoded = Vec::new();
        let data = data.trim();
        if data == "[DONE]" {
            self.end_reasoning(&mut decoded);
            decoded.push(Decoded::Done);
            return Ok(decoded);
        }
        if data.is_empty() {
            return Ok(decoded);
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(value) => value,
            Err(error) => {
                tracing::debug!(%error, data, "skipping a chunk that is not JSON");
                return Ok(decoded);
            }
        };
        if let Some(error) = ApiError::from_value(&value) {
            return Err(AttemptError::Fatal(error.stream_failure()));
        }
        let chunk: ChatChunk = match serde_json::from_value(value) {
            Ok(chunk) => chunk,
            Err(error) => {
                tracing::debug!(%error, data, "skipping a chunk of an unexpected shape");
                return Ok(decoded);
            }
        };
        if let Some(usage) = chunk.usage.as_ref().and_then(super::usage::from_chat) {
            self.usage = Some(usage);
        }
        // Only the first choice is the answer; servers asked for one send no other.
        for choice in chunk
            .choices
            .into_iter()
            .filter(|choice| choice.index.unwrap_or(0) == 0)
        {
            let delta = choice.delta;
            // DeepSeek and llama.cpp say `reasoning_content`, vLLM and Ollama `reasoning`.
            let thought = delta
                .reasoning_content
                .or(delta.reasoning)
                .filter(|text| !text.is_empty());
            if let Some(thought) = thought {
                if !std::mem::replace(&mut self.reasoning, true) {
                    decoded.push(Decoded::Reasoning(ReasoningEvent::Started));
                }
                decoded.push(Decoded::Reasoning(ReasoningEvent::Delta(
                    ReasoningDelta::Text {
                        content_index: 0,
                        delta: thought,
                    },
                )));
            }
            let content = delta.content.filter(|text| !text.is_empty());
            if content.is_some() || !delta.tool_calls.is_empty() {
                self.end_reasoning(&mut decoded);
            }
            if let Some(content) = content {
                decoded.push(Decoded::Text(content));
            }
            for call in delta.tool_calls {
                let position = self.calls.push(call);
                if let Some(fragment) = self.calls.patch_fragment(position) {
                    decoded.push(Decoded::PatchInput {
                        call: position,
                        fragment,
                        raw: false,
                    });
                }
            }
        }
        Ok(decoded)
    }

    fn usage(&self) -> Option<tandem_protocol::TokenUsageBreakdown> {
        self.usage
    }

    fn finish(self: Box<Self>) -> Vec<ToolCall> {
        self.calls.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&str]) -> (Vec<Vec<Decoded>>, Vec<ToolCall>) {
        let mut decoder = ChatDecoder::default();
        let decoded = chunks
            .iter()
            .map(|data| decoder.decode("", data).expect("decodes"))
            .collect();
        (decoded, Box::new(decoder).finish())
    }

    #[test]
    fn lenient_chunks_decode() {
        let (decoded, calls) = decode_all(&[
            r#"{"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"hm"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":""}]}"#,
            r#"{"choices":null,"usage":{"total_tokens":3}}"#,
            r#"{"id":"x","object":"chat.completion.chunk","choices":[{"delta":null}]}"#,
            "[DONE]",
        ]);
        let thought = |text: &str| {
            Decoded::Reasoning(ReasoningEvent::Delta(ReasoningDelta::Text {
                content_index: 0,
                delta: text.into(),
            }))
        };
        assert_eq!(
            decoded,
            vec![
                vec![],
                vec![Decoded::Reasoning(ReasoningEvent::Started), thought("hmm")],
                vec![thought("hm")],
                vec![
                    Decoded::Reasoning(ReasoningEvent::Finished {
                        summary: None,
                        content: None,
                        encrypted_content: None
                    }),
                    Decoded::Text("Hi".into())
                ],
                vec![],
                vec![],
                vec![Decoded::Done]
            ]
        );
        assert!(calls.is_empty());
    }

    #[test]
    fn reasoning_left_open_ends_with_the_stream_or_a_tool_call() {
        let (decoded, _) = decode_all(&[r#"{"choices":[{"delta":{"reasoning":"a"}}]}"#, "[DONE]"]);
        assert!(matches!(
            decoded[1].as_slice(),
            [
                Decoded::Reasoning(ReasoningEvent::Finished { .. }),
                Decoded::Done
            ]
        ));
        let (decoded, calls) = decode_all(&[
            r#"{"choices":[{"delta":{"reasoning_content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"shell","arguments":"{}"}}]}}]}"#,
        ]);
        assert!(matches!(
            decoded[1].as_slice(),
            [Decoded::Reasoning(ReasoningEvent::Finished { .. })]
        ));
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn an_error_event_is_final() {
        let mut decoder = ChatDecoder::default();
        let error = decoder
            .decode(
                "",
                r#"{"error":{"message":"model overloaded","code":"boom"}}"#,
            )
            .expect_err("error event");
        assert!(
            matches!(&error, AttemptError::Fatal(message) if message.contains("model overloaded")),
            "{error:?}"
        );
    }

    #[test]
    fn the_request_replays_calls_and_results() {
        let conversation = Conversation {
            instructions: "be brief".into(),
            entries: vec![
                Entry::User(vec![UserPart::Text("hi".into())]),
                Entry::Assistant {
                    text: String::new(),
                    calls: vec![ToolCall {
                        id: "c".into(),
                        name: "shell".into(),
                        arguments: "{}".into(),
                    }],
                },
                Entry::ToolResult {
                    call_id: "c".into(),
                    output: "ok".into(),
                },
            ],
            tools: Vec::new(),
            reasoning: Default::default(),
        };
        let body = request_body("m", &conversation);
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(messages[2]["content"], Value::Null);
        assert_eq!(messages[2]["tool_calls"][0]["id"], "c");
        assert_eq!(
            messages[3],
            json!({"role": "tool", "tool_call_id": "c", "content": "ok"})
        );
    }
}
