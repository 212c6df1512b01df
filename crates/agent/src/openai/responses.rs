//! The Responses wire (`wire_api = "responses"`): the request body of
//! `POST {base_url}/responses` with `stream: true`, and the `response.*` events that stream
//! back. Text arrives as `response.output_text.delta`; a function call is announced by
//! `response.output_item.added`, fed by `response.function_call_arguments.delta` and settled
//! by `response.output_item.done`; a custom tool call (the free-form `apply_patch`) likewise,
//! with `response.custom_tool_call_input.delta`. A reasoning output item is announced and
//! settled the same way, with `response.reasoning_summary_part.added`,
//! `response.reasoning_summary_text.delta` and `response.reasoning_text.delta` in between.
//! The end is `response.completed`.

use serde_json::{Value, json};

use super::apply_patch::{self, APPLY_PATCH_TOOL};
use super::images::UserPart;
use super::reasoning::ReasoningEvent;
use super::retry::{ApiError, AttemptError};
use super::tool_calls::ToolCall;
use super::transcript::{Conversation, Entry};
use super::{Decoded, StreamDecoder};
use crate::ReasoningDelta;

/// The request body. Nothing is stored server-side (`store: false`): the whole conversation
/// is sent each time, as with Chat Completions.
///
/// For the models trained on it, `apply_patch` is offered as the free-form custom tool, and
/// its calls and results are sent as `custom_tool_call` / `custom_tool_call_output`.
pub(crate) fn request_body(model: &str, conversation: &Conversation) -> Value {
    let custom_patch = apply_patch::uses_custom_tool(model);
    let mut custom_calls: Vec<&str> = Vec::new();
    let mut input = Vec::new();
    for entry in &conversation.entries {
        match entry {
            Entry::User(parts) => input.push(json!({
                "type": "message",
                "role": "user",
                "content": user_content(parts),
            })),
            Entry::Assistant { text, calls } => {
                if !text.is_empty() {
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }));
                }
                for call in calls {
                    let patch = (custom_patch && call.name == APPLY_PATCH_TOOL)
                        .then(|| apply_patch::patch_of(&call.arguments).ok())
                        .flatten();
                    match patch {
                        Some(patch) => {
                            custom_calls.push(&call.id);
                            input.push(json!({
                                "type": "custom_tool_call",
                                "call_id": call.id,
                                "name": call.name,
                                "input": patch,
                            }));
                        }
                        None => input.push(json!({
                            "type": "function_call",
                            "call_id": call.id,
                            "name": call.name,
                            "arguments": call.arguments,
                        })),
                    }
                }
            }
            Entry::ToolResult { call_id, output } => {
                let kind = if custom_calls.contains(&call_id.as_str()) {
                    "custom_tool_call_output"
                } else {
                    "function_call_output"
                };
                input.push(json!({
                    "type": kind,
                    "call_id": call_id,
                    "output": output,
                }));
            }
            Entry::Reasoning(reasoning) => {
                if let Some(item) = reasoning_input(reasoning) {
                    input.push(item);
                }
            }
        }
    }
    let tools: Vec<Value> = conversation
        .tools
        .iter()
        .map(|tool| {
            if custom_patch && tool.name == APPLY_PATCH_TOOL {
                return apply_patch::custom_tool();
            }
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            })
        })
        .collect();
    let offers_tools = !tools.is_empty();
    let mut body = json!({
        "model": model,
        "instructions": conversation.instructions,
        "input": input,
        "tools": tools,
        "tool_choice": "auto",
        "stream": true,
        "store": false,
    });
    // A request without tools (a compaction) leaves both members out: `tool_choice` needs
    // tools to choose from.
    if !offers_tools && let Some(members) = body.as_object_mut() {
        members.remove("tools");
        members.remove("tool_choice");
    }
    body
}

/// The input item that carries `reasoning` back: without an id (nothing is stored at the
/// provider to refer to), with its encrypted content, and with its reasoning text (which
/// servers that send no encrypted content need). `None` when it has neither: the provider
/// could not use it.
fn reasoning_input(reasoning: &super::transcript::ReasoningOutput) -> Option<Value> {
    let content: Vec<&String> = reasoning
        .content
        .iter()
        .filter(|text| !text.is_empty())
        .collect();
    if reasoning.encrypted_content.is_none() && content.is_empty() {
        return None;
    }
    let mut item = json!({
        "type": "reasoning",
        "summary": reasoning.summary.iter()
            .map(|text| json!({"type": "summary_text", "text": text}))
            .collect::<Vec<_>>(),
    });
    if let Some(encrypted) = &reasoning.encrypted_content {
        item["encrypted_content"] = Value::from(encrypted.as_str());
    }
    if !content.is_empty() {
        item["content"] = content
            .iter()
            .map(|text| json!({"type": "reasoning_text", "text": text}))
            .collect();
    }
    Some(item)
}

/// The texts of the `{type, text}` parts of `item[key]`, if it has that member.
fn part_texts(item: &Value, key: &str) -> Option<Vec<String>> {
    let parts = item.get(key)?.as_array()?;
    Some(
        parts
            .iter()
            .map(|part| text_of(part, "text").unwrap_or_default().to_owned())
            .collect(),
    )
}

/// A reasoning event's part index (`summary_index`, `content_index`); 0 when absent.
fn index_of(value: &Value, key: &str) -> usize {
    value
        .get(key)
        .and_then(Value::as_u64)
        .and_then(|index| usize::try_from(index).ok())
        .unwrap_or(0)
}

/// A user message's `content` parts: `input_text` and `input_image` (whose `detail` the API
/// requires: `auto` unless the input chose one).
fn user_content(parts: &[UserPart]) -> Vec<Value> {
    if parts.is_empty() {
        return vec![json!({"type": "input_text", "text": ""})];
    }
    parts
        .iter()
        .map(|part| match part {
            UserPart::Text(text) => json!({"type": "input_text", "text": text}),
            UserPart::Image { url, detail } => json!({
                "type": "input_image",
                "image_url": url,
                "detail": detail.map_or("auto", |detail| detail.as_str()),
            }),
            // Resolved before any request is built; a path is never sent.
            UserPart::LocalImage { path, .. } => {
                json!({"type": "input_text", "text": format!("[image file {path} not read]")})
            }
        })
        .collect()
}

#[derive(Debug, Default)]
struct PartialCall {
    /// The output item's id, which argument deltas refer to.
    item_id: Option<String>,
    output_index: Option<u64>,
    call_id: Option<String>,
    name: Option<String>,
    /// The arguments' JSON text, or a custom call's raw input.
    arguments: String,
    /// Whether it is a custom tool call (`custom_tool_call`), whose input is free text.
    custom: bool,
    /// How much of `arguments` went out as a patch's progress ([`Decoded::PatchInput`]).
    streamed: usize,
}

/// Decodes one streamed response.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    calls: Vec<PartialCall>,
    usage: Option<tandem_protocol::TokenUsageBreakdown>,
}

fn text_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

impl ResponsesDecoder {
    /// The position of the call an event refers to, by item id, else output index; created if
    /// new.
    fn position_for(&mut self, item_id: Option<&str>, output_index: Option<u64>) -> usize {
        let found = self
            .calls
            .iter()
            .position(|call| match (item_id, &call.item_id) {
                (Some(id), Some(existing)) => id == existing,
                _ => output_index.is_some() && call.output_index == output_index,
            });
        found.unwrap_or_else(|| {
            self.calls.push(PartialCall {
                item_id: item_id.map(str::to_owned),
                output_index,
                ..PartialCall::default()
            });
            self.calls.len() - 1
        })
    }

    /// What the call at `position` adds to a patch's progress, when it is an `apply_patch`
    /// call whose arguments grew.
    fn patch_input(&mut self, position: usize) -> Vec<Decoded> {
        let call = &mut self.calls[position];
        if call.name.as_deref() != Some(apply_patch::APPLY_PATCH_TOOL) {
            return Vec::new();
        }
        super::patch_stream::unstreamed(&call.arguments, &mut call.streamed)
            .map(|fragment| Decoded::PatchInput {
                call: position,
                fragment,
                raw: call.custom,
            })
            .into_iter()
            .collect()
    }

    /// Takes the settled fields of a `function_call` output item; returns the position of its
    /// call.
    fn function_item(
        &mut self,
        item: &Value,
        output_index: Option<u64>,
        done: bool,
    ) -> Option<usize> {
        let (custom, arguments_key) = match text_of(item, "type") {
            Some("function_call") => (false, "arguments"),
            Some("custom_tool_call") => (true, "input"),
            _ => return None,
        };
        let position = self.position_for(text_of(item, "id"), output_index);
        let call = &mut self.calls[position];
        call.custom = custom;
        if let Some(call_id) = text_of(item, "call_id").filter(|id| !id.is_empty()) {
            call.call_id = Some(call_id.to_owned());
        }
        if let Some(name) = text_of(item, "name").filter(|name| !name.is_empty()) {
            call.name = Some(name.to_owned());
        }
        if let Some(arguments) = text_of(item, arguments_key)
            && (done || call.arguments.is_empty())
        {
            call.arguments = arguments.to_owned();
        }
        Some(position)
    }
}

fn failure(value: &Value) -> String {
    let error = value
        .get("response")
        .and_then(ApiError::from_value)
        .or_else(|| ApiError::from_value(value))
        // A bare `error` event carries message and code at the top level.
        .or_else(|| ApiError::from_value(&json!({ "error": value })))
        .unwrap_or_default();
    error.stream_failure()
}

impl StreamDecoder for ResponsesDecoder {
    fn decode(&mut self, event: &str, data: &str) -> Result<Vec<Decoded>, AttemptError> {
        let value: Value = match serde_json::from_str(data.trim()) {
            Ok(value) => value,
            Err(error) => {
                tracing::debug!(%error, data, "skipping an event that is not JSON");
                return Ok(Vec::new());
            }
        };
        // Servers put the kind in `type`, in the SSE `event:` line, or both.
        let kind = text_of(&value, "type")
            .map(str::to_owned)
            .unwrap_or_else(|| event.to_owned());
        let output_index = value.get("output_index").and_then(Value::as_u64);
        match kind.as_str() {
            "response.output_text.delta" => Ok(match text_of(&value, "delta") {
                Some(delta) if !delta.is_empty() => vec![Decoded::Text(delta.to_owned())],
                _ => Vec::new(),
            }),
            "response.output_item.added" | "response.output_item.done" => {
                let Some(item) = value.get("item") else {
                    return Ok(Vec::new());
                };
                let done = kind.ends_with(".done");
                if text_of(item, "type") == Some("reasoning") {
                    return Ok(vec![Decoded::Reasoning(if done {
                        ReasoningEvent::Finished {
                            summary: part_texts(item, "summary"),
                            content: part_texts(item, "content"),
                            encrypted_content: text_of(item, "encrypted_content")
                                .map(str::to_owned),
                        }
                    } else {
                        ReasoningEvent::Started
                    })]);
                }
                Ok(match self.function_item(item, output_index, done) {
                    Some(position) => self.patch_input(position),
                    None => Vec::new(),
                })
            }
            "response.reasoning_summary_part.added" => Ok(vec![Decoded::Reasoning(
                ReasoningEvent::Delta(ReasoningDelta::SummaryPartAdded {
                    summary_index: index_of(&value, "summary_index"),
                }),
            )]),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let delta = text_of(&value, "delta").unwrap_or_default().to_owned();
                if delta.is_empty() {
                    return Ok(Vec::new());
                }
                Ok(vec![Decoded::Reasoning(ReasoningEvent::Delta(
                    if kind == "response.reasoning_text.delta" {
                        ReasoningDelta::Text {
                            content_index: index_of(&value, "content_index"),
                            delta,
                        }
                    } else {
                        ReasoningDelta::SummaryText {
                            summary_index: index_of(&value, "summary_index"),
                            delta,
                        }
                    },
                ))])
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                let Some(delta) = text_of(&value, "delta") else {
                    return Ok(Vec::new());
                };
                let position = self.position_for(text_of(&value, "item_id"), output_index);
                let call = &mut self.calls[position];
                call.arguments.push_str(delta);
                if kind.starts_with("response.custom") {
                    call.custom = true;
                }
                Ok(self.patch_input(position))
            }
            "response.function_call_arguments.done" | "response.custom_tool_call_input.done" => {
                let key = if kind.starts_with("response.custom") {
                    "input"
                } else {
                    "arguments"
                };
                let Some(arguments) = text_of(&value, key) else {
                    return Ok(Vec::new());
                };
                let position = self.position_for(text_of(&value, "item_id"), output_index);
                self.calls[position].arguments = arguments.to_owned();
                Ok(self.patch_input(position))
            }
            "response.completed" => {
                self.usage = value
                    .pointer("/response/usage")
                    .and_then(super::usage::from_responses);
                Ok(vec![Decoded::Done])
            }
            "response.failed" | "error" => Err(AttemptError::Fatal(failure(&value))),
            "response.incomplete" => {
                let reason = value
                    .pointer("/response/incomplete_details/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given");
                Err(AttemptError::Fatal(format!(
                    "the model stopped before finishing its answer ({reason})"
                )))
            }
            other => {
                // Content-part, `.done` and lifecycle events carry nothing a turn needs.
                tracing::trace!(event = other, "ignoring a Responses event");
                Ok(Vec::new())
            }
        }
    }

    fn usage(&self) -> Option<tandem_protocol::TokenUsageBreakdown> {
        self.usage
    }

    fn finish(self: Box<Self>) -> Vec<ToolCall> {
        self.calls
            .into_iter()
            .enumerate()
            .map(|(position, call)| ToolCall {
                id: call
                    .call_id
                    .or(call.item_id)
                    .unwrap_or_else(|| format!("call_{position}")),
                name: call.name.unwrap_or_default(),
                // Inside the agent a custom call is the function form's call.
                arguments: if call.custom {
                    apply_patch::arguments_of_input(&call.arguments)
                } else {
                    call.arguments
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_without_tools_leaves_tools_and_tool_choice_out() {
        use crate::openai::transcript::{Conversation, Entry};
        let mut conversation = Conversation {
            instructions: "summarize".into(),
            entries: vec![Entry::User(vec![crate::openai::images::UserPart::Text(
                "hi".into(),
            )])],
            tools: Vec::new(),
            reasoning: Default::default(),
        };
        let body = request_body("m", &conversation);
        assert!(body.get("tools").is_none(), "{body}");
        assert!(body.get("tool_choice").is_none(), "{body}");
        conversation.tools = crate::openai::transcript::function_tools(&[], &[]);
        let body = request_body("m", &conversation);
        assert!(
            body["tools"]
                .as_array()
                .is_some_and(|tools| !tools.is_empty())
        );
        assert_eq!(body["tool_choice"], "auto");
    }

    #[test]
    fn a_function_call_is_assembled_from_its_events() {
        let mut decoder = ResponsesDecoder::default();
        let events = [
            r#"{"type":"response.created","response":{}}"#,
            r#"{"type":"response.output_text.delta","delta":"Running"}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shell","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"command\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"\"ls\"}"}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shell","arguments":"{\"command\":\"ls\"}"}}"#,
            r#"{"type":"response.completed","response":{"usage":{}}}"#,
        ];
        let decoded: Vec<Vec<Decoded>> = events
            .iter()
            .map(|data| decoder.decode("", data).expect("decodes"))
            .collect();
        assert_eq!(decoded[1], vec![Decoded::Text("Running".into())]);
        assert_eq!(decoded[6], vec![Decoded::Done]);
        let calls = Box::new(decoder).finish();
        assert_eq!(
            calls,
            vec![ToolCall {
                id: "call_1".into(),
                name: "shell".into(),
                arguments: "{\"command\":\"ls\"}".into()
            }]
        );
    }

    #[test]
    fn a_reasoning_item_streams_its_summary_and_text_and_settles_at_done() {
        let mut decoder = ResponsesDecoder::default();
        let events = [
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}"#,
            r#"{"type":"response.reasoning_summary_part.added","item_id":"rs_1","summary_index":0,"part":{"type":"summary_text","text":""}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","summary_index":0,"delta":"Plan"}"#,
            r#"{"type":"response.reasoning_text.delta","item_id":"rs_1","content_index":0,"delta":"raw"}"#,
            r#"{"type":"response.reasoning_summary_text.done","item_id":"rs_1","summary_index":0,"text":"Plan"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Plan"}],"encrypted_content":"gAAA"}}"#,
        ];
        let decoded: Vec<Decoded> = events
            .iter()
            .flat_map(|data| decoder.decode("", data).expect("decodes"))
            .collect();
        assert_eq!(
            decoded,
            vec![
                Decoded::Reasoning(ReasoningEvent::Started),
                Decoded::Reasoning(ReasoningEvent::Delta(ReasoningDelta::SummaryPartAdded {
                    summary_index: 0
                })),
                Decoded::Reasoning(ReasoningEvent::Delta(ReasoningDelta::SummaryText {
                    summary_index: 0,
                    delta: "Plan".into()
                })),
                Decoded::Reasoning(ReasoningEvent::Delta(ReasoningDelta::Text {
                    content_index: 0,
                    delta: "raw".into()
                })),
                Decoded::Reasoning(ReasoningEvent::Finished {
                    summary: Some(vec!["Plan".into()]),
                    content: None,
                    encrypted_content: Some("gAAA".into())
                }),
            ]
        );
    }

    #[test]
    fn reasoning_goes_back_without_its_id_and_only_when_usable() {
        use crate::openai::transcript::{Conversation, Entry, ReasoningOutput};
        let carried = ReasoningOutput {
            summary: vec!["Plan".into()],
            content: Vec::new(),
            encrypted_content: Some("gAAA".into()),
        };
        let unusable = ReasoningOutput {
            encrypted_content: None,
            ..carried.clone()
        };
        let conversation = Conversation {
            instructions: String::new(),
            entries: vec![Entry::Reasoning(carried), Entry::Reasoning(unusable)],
            tools: Vec::new(),
            reasoning: Default::default(),
        };
        let body = request_body("m", &conversation);
        assert_eq!(
            body["input"],
            json!([{"type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan"}],
                    "encrypted_content": "gAAA"}])
        );
    }

    #[test]
    fn a_custom_patch_call_is_assembled_and_sent_back_as_one() {
        let mut decoder = ResponsesDecoder::default();
        let events = [
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"custom_tool_call","id":"ct_1","call_id":"call_p","name":"apply_patch","input":""}}"#,
            r#"{"type":"response.custom_tool_call_input.delta","item_id":"ct_1","output_index":0,"delta":"*** Begin Patch\n"}"#,
            r#"{"type":"response.custom_tool_call_input.delta","item_id":"ct_1","output_index":0,"delta":"*** Delete File: a\n*** End Patch"}"#,
            r#"{"type":"response.completed","response":{}}"#,
        ];
        for data in events {
            decoder.decode("", data).expect("decodes");
        }
        let calls = Box::new(decoder).finish();
        let patch = "*** Begin Patch\n*** Delete File: a\n*** End Patch";
        assert_eq!(
            calls,
            vec![ToolCall {
                id: "call_p".into(),
                name: "apply_patch".into(),
                arguments: apply_patch::arguments_of_input(patch),
            }]
        );

        use crate::openai::transcript::{Conversation, Entry, function_tools};
        let conversation = Conversation {
            instructions: "i".into(),
            entries: vec![
                Entry::Assistant {
                    text: String::new(),
                    calls,
                },
                Entry::ToolResult {
                    call_id: "call_p".into(),
                    output: "done".into(),
                },
            ],
            tools: function_tools(&[], &[]),
            reasoning: Default::default(),
        };
        let custom = request_body("gpt-5-codex", &conversation);
        assert_eq!(custom["input"][0]["type"], "custom_tool_call");
        assert_eq!(custom["input"][0]["input"], patch);
        assert_eq!(custom["input"][1]["type"], "custom_tool_call_output");
        let tools = custom["tools"].as_array().expect("tools");
        assert!(tools.iter().any(|tool| tool["type"] == "custom"
            && tool["name"] == "apply_patch"
            && tool["format"]["type"] == "grammar"));

        let function = request_body("qwen3", &conversation);
        assert_eq!(function["input"][0]["type"], "function_call");
        assert_eq!(function["input"][1]["type"], "function_call_output");
        let tools = function["tools"].as_array().expect("tools");
        let patch_tool = tools
            .iter()
            .find(|tool| tool["name"] == "apply_patch")
            .expect("offered");
        assert_eq!(patch_tool["type"], "function");
        assert_eq!(patch_tool["parameters"]["required"][0], "input");
    }

    #[test]
    fn failures_are_final_and_carry_the_message() {
        let mut decoder = ResponsesDecoder::default();
        let failed = r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"broke"}}}"#;
        assert!(matches!(
            decoder.decode("", failed),
            Err(AttemptError::Fatal(message)) if message.contains("broke")
        ));
        assert!(matches!(
            decoder.decode("error", r#"{"code":"x","message":"bad"}"#),
            Err(AttemptError::Fatal(message)) if message.contains("bad")
        ));
    }
}
