//! The canonical form of a model request, its digest, and where two requests first differ.
//!
//! A cassette matches requests by content, so everything that changes between two runs of the
//! same session without changing what the model is asked has to be normalized first. What
//! counts as volatile (docs/cassettes.md, "Canonical requests"):
//!
//! - the thread's working directory, which the instructions name and command output may
//!   repeat: every occurrence inside a string becomes `<cwd>`;
//! - inline image data (`data:` URLs): replaced by `data:<media type>;sha256=<hex>`, which
//!   still tells two images apart but keeps megabytes of base64 out of the file;
//! - tool call ids (`tool_calls[].id`, `tool_call_id`, `call_id`): renumbered `call-1`,
//!   `call-2`, … in order of first appearance (arrays in order). Calls of earlier turns come back from the
//!   thread's history under the ids of their items, which the server generates afresh in
//!   every run; renumbering keeps which result answers which call.
//!
//! Object members are sorted, so the digest does not depend on the order a body was built in.
//! Nothing else is dropped: model, messages or input, tools and sampling parameters all count.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// What replaces the working directory in a canonical request.
pub(crate) const CWD_PLACEHOLDER: &str = "<cwd>";

/// The canonical form of the request body `body` of a thread working in `cwd`.
pub(crate) fn canonicalize(body: &Value, cwd: Option<&str>) -> Value {
    // A cwd of "/" would replace every slash: too short to be recognized reliably.
    let mut normalizer = Normalizer {
        cwd: cwd.filter(|cwd| cwd.len() > 1),
        calls: Vec::new(),
    };
    normalizer.value(body, Context::Other)
}

/// Where a value sits, as far as call ids are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// An element of a `tool_calls` array, whose `id` is a call id.
    ToolCall,
    /// Anything else.
    Other,
}

struct Normalizer<'a> {
    cwd: Option<&'a str>,
    /// Call ids in order of first appearance.
    calls: Vec<String>,
}

impl Normalizer<'_> {
    fn value(&mut self, value: &Value, context: Context) -> Value {
        match value {
            Value::String(text) => Value::String(normalize_text(text, self.cwd)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|item| self.value(item, context)).collect())
            }
            Value::Object(members) => {
                // Members in the map's own (fixed) order, so both runs number calls alike.
                let mut map = Map::new();
                for (key, member) in members {
                    let is_call_id = matches!(key.as_str(), "tool_call_id" | "call_id")
                        || (context == Context::ToolCall && key == "id");
                    let normalized = match member {
                        Value::String(id) if is_call_id => Value::String(self.call(id)),
                        _ if key == "tool_calls" => self.value(member, Context::ToolCall),
                        _ => self.value(member, Context::Other),
                    };
                    map.insert(key.clone(), normalized);
                }
                sort_members(map)
            }
            other => other.clone(),
        }
    }

    fn call(&mut self, id: &str) -> String {
        let position = match self.calls.iter().position(|seen| seen == id) {
            Some(position) => position,
            None => {
                self.calls.push(id.to_owned());
                self.calls.len() - 1
            }
        };
        format!("call-{}", position + 1)
    }
}

fn sort_members(map: Map<String, Value>) -> Value {
    let mut sorted: Vec<(String, Value)> = map.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Object(sorted.into_iter().collect())
}

fn normalize_text(text: &str, cwd: Option<&str>) -> String {
    if let Some(rest) = text.strip_prefix("data:")
        && let Some((media, payload)) = rest.split_once(";base64,")
    {
        return format!("data:{media};sha256={}", hex_sha256(payload.as_bytes()));
    }
    match cwd {
        Some(cwd) if text.contains(cwd) => text.replace(cwd, CWD_PLACEHOLDER),
        _ => text.to_owned(),
    }
}

/// `sha256:<hex>` of the canonical request's compact JSON text (members sorted).
pub(crate) fn digest(canonical: &Value) -> String {
    format!("sha256:{}", hex_sha256(sorted_text(canonical).as_bytes()))
}

/// Compact JSON with object members in sorted order, whatever order the value holds them in.
fn sorted_text(value: &Value) -> String {
    match value {
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = sorted
                .into_iter()
                .map(|(key, member)| {
                    format!("{}:{}", Value::from(key.as_str()), sorted_text(member))
                })
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(sorted_text).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Where a request first differs from a recorded one, walking both in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Difference {
    /// The path of the first differing value: `messages[3].content`, `model`.
    pub(crate) path: String,
    /// The recorded value there (shortened), or `(absent)`.
    pub(crate) recorded: String,
    /// The requested value there (shortened), or `(absent)`.
    pub(crate) requested: String,
    /// How many leaf values were equal before it: the larger, the nearer the recording.
    pub(crate) equal_before: usize,
}

/// The first difference between `recorded` and `requested`, or `None` when they are equal.
pub(crate) fn first_difference(recorded: &Value, requested: &Value) -> Option<Difference> {
    let mut equal = 0;
    walk(recorded, requested, String::new(), &mut equal)
}

fn walk(
    recorded: &Value,
    requested: &Value,
    path: String,
    equal: &mut usize,
) -> Option<Difference> {
    match (recorded, requested) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => {
                        if let Some(found) = walk(x, y, child, equal) {
                            return Some(found);
                        }
                    }
                    (x, y) => return Some(difference(child, x, y, *equal)),
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) => {
            for index in 0..a.len().max(b.len()) {
                let child = format!("{path}[{index}]");
                match (a.get(index), b.get(index)) {
                    (Some(x), Some(y)) => {
                        if let Some(found) = walk(x, y, child, equal) {
                            return Some(found);
                        }
                    }
                    (x, y) => return Some(difference(child, x, y, *equal)),
                }
            }
            None
        }
        (x, y) if x == y => {
            *equal += 1;
            None
        }
        (x, y) => Some(difference(path, Some(x), Some(y), *equal)),
    }
}

fn difference(
    path: String,
    recorded: Option<&Value>,
    requested: Option<&Value>,
    equal: usize,
) -> Difference {
    let show = |value: Option<&Value>| match value {
        None => "(absent)".to_owned(),
        Some(value) => shorten(&value.to_string()),
    };
    Difference {
        path: if path.is_empty() {
            "(the whole body)".to_owned()
        } else {
            path
        },
        recorded: show(recorded),
        requested: show(requested),
        equal_before: equal,
    }
}

/// At most 80 characters of `text`, marked when cut.
fn shorten(text: &str) -> String {
    const LIMIT: usize = 80;
    if text.chars().count() <= LIMIT {
        return text.to_owned();
    }
    let cut: String = text.chars().take(LIMIT).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_working_directory_and_image_data_are_normalized() {
        let body = json!({
            "messages": [{"role": "system", "content": "You work in /tmp/abc/project. Be brief."}],
            "image": "data:image/png;base64,AAAA",
        });
        let canonical = canonicalize(&body, Some("/tmp/abc/project"));
        assert_eq!(
            canonical["messages"][0]["content"],
            "You work in <cwd>. Be brief."
        );
        let image = canonical["image"].as_str().unwrap();
        assert!(image.starts_with("data:image/png;sha256="), "{image}");
        let other = canonicalize(&json!({"image": "data:image/png;base64,AAAB"}), None);
        assert_ne!(other["image"], canonical["image"]);
    }

    #[test]
    fn call_ids_are_numbered_in_order_of_appearance() {
        let body = json!({"messages": [
            {"role": "assistant", "tool_calls": [{"id": "0193-uuid", "type": "function"}]},
            {"role": "tool", "tool_call_id": "0193-uuid"},
            {"role": "assistant", "tool_calls": [{"id": "call_x", "type": "function"}]},
            {"role": "tool", "tool_call_id": "call_x"},
        ]});
        let canonical = canonicalize(&body, None);
        assert_eq!(canonical["messages"][0]["tool_calls"][0]["id"], "call-1");
        assert_eq!(canonical["messages"][1]["tool_call_id"], "call-1");
        assert_eq!(canonical["messages"][3]["tool_call_id"], "call-2");
        let responses = json!({"input": [
            {"type": "function_call", "call_id": "a"},
            {"type": "function_call_output", "call_id": "a"},
        ]});
        let canonical = canonicalize(&responses, None);
        assert_eq!(canonical["input"][1]["call_id"], "call-1");
    }

    #[test]
    fn the_digest_ignores_member_order_but_not_values() {
        let a = json!({"model": "m", "stream": true});
        let b: Value = serde_json::from_str(r#"{"stream": true, "model": "m"}"#).unwrap();
        assert_eq!(
            digest(&canonicalize(&a, None)),
            digest(&canonicalize(&b, None))
        );
        assert_ne!(digest(&a), digest(&json!({"model": "n", "stream": true})));
        assert!(digest(&a).starts_with("sha256:"));
    }

    #[test]
    fn the_first_difference_is_found_in_document_order() {
        let recorded = json!({"model": "m", "messages": [{"content": "hi"}, {"content": "a"}]});
        let requested =
            json!({"model": "m", "messages": [{"content": "hi"}, {"content": "b"}, {}]});
        let found = first_difference(&recorded, &requested).unwrap();
        assert_eq!(found.path, "messages[1].content");
        assert_eq!(found.recorded, "\"a\"");
        assert_eq!(found.requested, "\"b\"");
        assert_eq!(found.equal_before, 1);
        assert_eq!(first_difference(&recorded, &recorded), None);
        let missing = first_difference(&json!({"a": 1}), &json!({"a": 1, "b": 2})).unwrap();
        assert_eq!(
            (missing.path.as_str(), missing.recorded.as_str()),
            ("b", "(absent)")
        );
    }
}
