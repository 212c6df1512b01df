//! Comparing what a server sent in two runs that should match (a recorded session and its
//! replay, a run before and after a change): [`TranscriptNormalizer`] takes out what differs
//! from run to run by design, the generated ids, the times and the working directory, so that
//! the rest compares byte for byte.
//!
//! ```
//! use serde_json::json;
//! use tandem_test_support::transcript::TranscriptNormalizer;
//!
//! let mut first = TranscriptNormalizer::new("/tmp/a");
//! let mut second = TranscriptNormalizer::new("/tmp/b");
//! let one = json!({"threadId": "t-1", "startedAt": 17, "cwd": "/tmp/a/src"});
//! let two = json!({"threadId": "t-9", "startedAt": 42, "cwd": "/tmp/b/src"});
//! assert_eq!(first.normalize(one), second.normalize(two));
//! ```

use serde_json::Value;

/// Normalizes the JSON messages of one run: each generated id becomes `<id N>`, numbered by
/// its first appearance in the run (so the same id keeps its number and ids that differ stay
/// apart), each time `<time>`, and the working directory `<cwd>` wherever it appears in text.
///
/// An id is the string of a member named `id`, ending in `Id`, or `epoch` (the random epoch
/// of a server's replay cursors); a time is any member named `timestamp` or `duration`, or
/// ending in `At` or `Ms`.
#[derive(Debug, Clone)]
pub struct TranscriptNormalizer {
    cwd: String,
    ids: Vec<String>,
}

impl TranscriptNormalizer {
    /// A normalizer for a run whose working directory is `cwd`.
    pub fn new(cwd: impl Into<String>) -> Self {
        Self {
            cwd: cwd.into(),
            ids: Vec::new(),
        }
    }

    /// `message` normalized, ids numbered on from the messages before it.
    pub fn normalize(&mut self, message: Value) -> Value {
        self.value(message, None)
    }

    fn value(&mut self, value: Value, key: Option<&str>) -> Value {
        match value {
            Value::Object(members) => Value::Object(
                members
                    .into_iter()
                    .map(|(name, member)| {
                        let normalized = self.value(member, Some(&name));
                        (name, normalized)
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|item| self.value(item, key))
                    .collect(),
            ),
            Value::String(text) if key.is_some_and(is_id) => {
                let position = match self.ids.iter().position(|seen| *seen == text) {
                    Some(position) => position,
                    None => {
                        self.ids.push(text);
                        self.ids.len() - 1
                    }
                };
                Value::from(format!("<id {position}>"))
            }
            _ if key.is_some_and(is_time) => Value::from("<time>"),
            Value::String(text) if !self.cwd.is_empty() => {
                Value::from(text.replace(&self.cwd, "<cwd>"))
            }
            other => other,
        }
    }
}

fn is_id(key: &str) -> bool {
    key == "id" || key.ends_with("Id") || key == "epoch"
}

fn is_time(key: &str) -> bool {
    key.ends_with("At") || key.ends_with("Ms") || key == "timestamp" || key == "duration"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_keep_their_number_and_different_ones_stay_apart() {
        // Members are visited in the map's order, which is by name.
        let mut normalizer = TranscriptNormalizer::new("/w");
        let normalized = normalizer.normalize(json!([
            {"id": "a", "turnId": "b", "items": [{"id": "a"}], "startedAtMs": 5, "text": "/w/x"},
            {"threadId": "c", "duration": 3, "epoch": "e", "count": 2}
        ]));
        assert_eq!(
            normalized,
            json!([
                {"id": "<id 0>", "turnId": "<id 1>", "items": [{"id": "<id 0>"}],
                 "startedAtMs": "<time>", "text": "<cwd>/x"},
                {"threadId": "<id 3>", "duration": "<time>", "epoch": "<id 2>", "count": 2}
            ])
        );
    }
}
