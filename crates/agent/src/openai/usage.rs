//! Token usage as the two wires report it: Chat Completions in its last chunk (asked for with
//! `stream_options.include_usage`), Responses in `response.completed`. Both become the
//! protocol's [`TokenUsageBreakdown`], which `thread/tokenUsage/updated` carries.

use serde_json::Value;
use tandem_protocol::TokenUsageBreakdown;

fn count(value: &Value, pointer: &str) -> i64 {
    value.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// A Chat Completions `usage` object (`prompt_tokens`, `completion_tokens`, `total_tokens`,
/// with `prompt_tokens_details.cached_tokens` and `completion_tokens_details.reasoning_tokens`
/// where the server reports them); `None` if it is not an object.
pub(crate) fn from_chat(usage: &Value) -> Option<TokenUsageBreakdown> {
    usage.as_object()?;
    let input = count(usage, "/prompt_tokens");
    let output = count(usage, "/completion_tokens");
    Some(TokenUsageBreakdown {
        total_tokens: usage
            .get("total_tokens")
            .and_then(Value::as_i64)
            .unwrap_or(input.saturating_add(output)),
        input_tokens: input,
        cached_input_tokens: count(usage, "/prompt_tokens_details/cached_tokens"),
        cache_write_input_tokens: 0,
        output_tokens: output,
        reasoning_output_tokens: count(usage, "/completion_tokens_details/reasoning_tokens"),
    })
}

/// A Responses `usage` object (`input_tokens`, `output_tokens`, `total_tokens`, with
/// `input_tokens_details.cached_tokens` and `output_tokens_details.reasoning_tokens`); `None`
/// if it is not an object.
pub(crate) fn from_responses(usage: &Value) -> Option<TokenUsageBreakdown> {
    usage.as_object()?;
    let input = count(usage, "/input_tokens");
    let output = count(usage, "/output_tokens");
    Some(TokenUsageBreakdown {
        total_tokens: usage
            .get("total_tokens")
            .and_then(Value::as_i64)
            .unwrap_or(input.saturating_add(output)),
        input_tokens: input,
        cached_input_tokens: count(usage, "/input_tokens_details/cached_tokens"),
        cache_write_input_tokens: 0,
        output_tokens: output,
        reasoning_output_tokens: count(usage, "/output_tokens_details/reasoning_tokens"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_wires_map_onto_the_breakdown() {
        let chat = from_chat(&json!({
            "prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
            "prompt_tokens_details": {"cached_tokens": 4},
            "completion_tokens_details": {"reasoning_tokens": 2}
        }))
        .expect("usage");
        let responses = from_responses(&json!({
            "input_tokens": 12, "output_tokens": 5, "total_tokens": 17,
            "input_tokens_details": {"cached_tokens": 4},
            "output_tokens_details": {"reasoning_tokens": 2}
        }))
        .expect("usage");
        let want = TokenUsageBreakdown {
            total_tokens: 17,
            input_tokens: 12,
            cached_input_tokens: 4,
            cache_write_input_tokens: 0,
            output_tokens: 5,
            reasoning_output_tokens: 2,
        };
        assert_eq!(chat, want);
        assert_eq!(responses, want);
        // Local servers often send only the three totals, or no total at all.
        let sparse =
            from_chat(&json!({"prompt_tokens": 3, "completion_tokens": 4})).expect("usage");
        assert_eq!((sparse.total_tokens, sparse.cached_input_tokens), (7, 0));
        assert_eq!(from_chat(&Value::Null), None);
    }
}
