//! Stream bodies of OpenAI-compatible model providers, for scripting a
//! [`MockResponse`](crate::mock_http::MockResponse): answer text, tool calls (`update_plan`
//! among them) and reasoning, on the Chat Completions wire ([`chat`]) and the Responses wire
//! ([`responses`]). Each function returns the exact text of one or more server-sent events,
//! to pass to `MockResponse::bytes`; a test can cut them, delay them or gate them as it
//! pleases.
//!
//! ```
//! use serde_json::json;
//! use tandem_test_support::mock_http::MockResponse;
//! use tandem_test_support::model_streams::chat;
//!
//! let answer = MockResponse::sse()
//!     .bytes(chat::reasoning("reasoning_content", "Let me think."))
//!     .bytes(chat::text("Done."))
//!     .bytes(chat::done());
//! # let _ = answer;
//! let plan = chat::tool_call("call_1", "update_plan", &json!({"plan": []}));
//! assert!(plan.starts_with("data: "));
//! ```

use serde_json::{Value, json};

/// The Chat Completions wire: `data: {chunk}` events, ended by `data: [DONE]`.
pub mod chat {
    use super::*;

    fn event(chunk: &Value) -> String {
        format!("data: {chunk}\n\n")
    }

    fn delta(delta: Value) -> String {
        event(&json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}))
    }

    /// Answer text.
    pub fn text(text: &str) -> String {
        delta(json!({ "content": text }))
    }

    /// Reasoning text in the delta member `field`: `reasoning_content` (DeepSeek, llama.cpp)
    /// or `reasoning` (vLLM, Ollama).
    pub fn reasoning(field: &str, text: &str) -> String {
        delta(json!({ field: text }))
    }

    /// One whole tool call (id, name and arguments in a single fragment) at index 0.
    pub fn tool_call(id: &str, name: &str, arguments: &Value) -> String {
        delta(json!({"tool_calls": [{
            "index": 0, "id": id, "type": "function",
            "function": {"name": name, "arguments": arguments.to_string()},
        }]}))
    }

    /// The last chunk of an answer and the end of the stream.
    pub fn done() -> String {
        let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        format!("{}data: [DONE]\n\n", event(&finish))
    }
}

/// The Responses wire: `event: KIND` and `data: {..., "type": KIND}` events, ended by
/// `response.completed`.
pub mod responses {
    use super::*;

    /// One event of `kind` with `data` (whose `type` is set to `kind`).
    pub fn event(kind: &str, mut data: Value) -> String {
        data["type"] = json!(kind);
        format!("event: {kind}\ndata: {data}\n\n")
    }

    /// Answer text of message `msg_1`.
    pub fn text(text: &str) -> String {
        event(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
        )
    }

    /// A reasoning output item `id` at `output_index`: announced, each summary part added and
    /// streamed, each reasoning text part streamed, then settled with the summary parts and,
    /// when given, `encrypted_content`.
    pub fn reasoning(
        id: &str,
        output_index: u64,
        summary: &[&str],
        text: &[&str],
        encrypted_content: Option<&str>,
    ) -> String {
        let mut events = vec![event(
            "response.output_item.added",
            json!({"output_index": output_index,
                   "item": {"type": "reasoning", "id": id, "summary": []}}),
        )];
        for (index, part) in summary.iter().enumerate() {
            events.push(event(
                "response.reasoning_summary_part.added",
                json!({"item_id": id, "output_index": output_index, "summary_index": index,
                       "part": {"type": "summary_text", "text": ""}}),
            ));
            events.push(event(
                "response.reasoning_summary_text.delta",
                json!({"item_id": id, "output_index": output_index, "summary_index": index,
                       "delta": part}),
            ));
            events.push(event(
                "response.reasoning_summary_text.done",
                json!({"item_id": id, "output_index": output_index, "summary_index": index,
                       "text": part}),
            ));
        }
        for (index, part) in text.iter().enumerate() {
            events.push(event(
                "response.reasoning_text.delta",
                json!({"item_id": id, "output_index": output_index, "content_index": index,
                       "delta": part}),
            ));
        }
        let mut item = json!({
            "type": "reasoning", "id": id,
            "summary": summary.iter()
                .map(|text| json!({"type": "summary_text", "text": text}))
                .collect::<Vec<_>>(),
        });
        if !text.is_empty() {
            item["content"] = text
                .iter()
                .map(|text| json!({"type": "reasoning_text", "text": text}))
                .collect();
        }
        if let Some(encrypted) = encrypted_content {
            item["encrypted_content"] = json!(encrypted);
        }
        events.push(event(
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        ));
        events.concat()
    }

    /// A whole function call `call_id` of `name` at `output_index`.
    pub fn function_call(
        call_id: &str,
        name: &str,
        output_index: u64,
        arguments: &Value,
    ) -> String {
        let item = json!({"type": "function_call", "id": format!("fc_{call_id}"),
                          "call_id": call_id, "name": name,
                          "arguments": arguments.to_string(), "status": "completed"});
        [
            event(
                "response.output_item.added",
                json!({"output_index": output_index, "item": item}),
            ),
            event(
                "response.output_item.done",
                json!({"output_index": output_index, "item": item}),
            ),
        ]
        .concat()
    }

    /// The end of a response.
    pub fn completed() -> String {
        event(
            "response.completed",
            json!({"response": {"id": "resp_1", "status": "completed"}}),
        )
    }
}
