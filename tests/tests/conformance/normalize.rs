//! The one place that decides what may differ between two runs of a scenario: generated ids,
//! clocks, the home directory's path and the user agent. Everything else is compared exactly.
//!
//! Ids are replaced by `<id:N>`, numbered in the order the scenario first reads them, so their
//! identity survives. Scenarios take messages in the same order on every transport, so the
//! numbering is the same everywhere. Scenarios work in normalized terms throughout: what they
//! send is [`Normalizer::denormalize`]d, so `{"threadId": "<id:1>"}` reaches the server with
//! the real id.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Members holding a unix time or a duration: numbers become `"<time>"`; `null` stays, since
/// null-versus-set is part of the contract.
const CLOCK_MEMBERS: &[&str] = &[
    "createdAt",
    "updatedAt",
    "startedAt",
    "completedAt",
    "startedAtMs",
    "completedAtMs",
    "durationMs",
];

/// Stamped by wire transports only (in-process events carry no envelope).
const DROPPED_MEMBERS: &[&str] = &["emittedAtMs"];

/// An event cursor (`{epoch, seq}`, on notifications and in `thread/resume` results): its epoch
/// is random per server, and scenarios that care read it raw (`Session::last_cursor`).
fn is_event_cursor(key: &str, member: &Value) -> bool {
    key == "cursor" && member.get("epoch").is_some_and(Value::is_string) && member["seq"].is_u64()
}

/// Replaces what legitimately varies in server output.
#[derive(Debug, Default)]
pub(crate) struct Normalizer {
    /// Raw id -> its placeholder.
    ids: HashMap<String, String>,
    /// Placeholder -> raw id.
    raw: HashMap<String, String>,
    next_auto: usize,
    /// Path prefixes replaced by `<home>`, longest first.
    homes: Vec<String>,
    /// What `<home>` is replaced by on the way out: the spelling the server was given.
    given_home: Option<String>,
}

impl Normalizer {
    /// A normalizer that writes the home (in every spelling listed; the first is the one the
    /// server was given) as `<home>`.
    pub(crate) fn new(homes: impl IntoIterator<Item = String>) -> Self {
        let mut homes: Vec<String> = homes.into_iter().collect();
        let given_home = homes.first().cloned();
        homes.sort_by_key(|home| std::cmp::Reverse(home.len()));
        homes.dedup();
        Self {
            homes,
            given_home,
            ..Self::default()
        }
    }

    /// `value` with placeholders turned back into what the server knows: `<id:N>` into the
    /// id it stands for, `<home>` into the home's path.
    pub(crate) fn denormalize(&self, value: &Value) -> Value {
        match value {
            Value::Object(object) => Value::Object(
                object
                    .iter()
                    .map(|(key, member)| (key.clone(), self.denormalize(member)))
                    .collect(),
            ),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.denormalize(v)).collect())
            }
            Value::String(text) => {
                // Placeholders may sit inside a string too, as in an opaque cursor.
                let mut text = text.clone();
                for (placeholder, raw) in &self.raw {
                    text = text.replace(placeholder.as_str(), raw);
                }
                if let Some(home) = &self.given_home {
                    text = text.replace("<home>", home);
                }
                Value::String(text)
            }
            other => other.clone(),
        }
    }

    /// `value` with every varying part replaced (a `userAgent` only when it has the shape
    /// docs/protocol.md section 3 gives it).
    pub(crate) fn normalize(&mut self, value: &Value) -> Value {
        match value {
            Value::Object(object) => {
                let mut out = Map::new();
                for (key, member) in object {
                    if DROPPED_MEMBERS.contains(&key.as_str()) || is_event_cursor(key, member) {
                        continue;
                    }
                    let member = match (key.as_str(), member) {
                        (key, Value::Number(_)) if CLOCK_MEMBERS.contains(&key) => {
                            Value::String("<time>".into())
                        }
                        // Only the expected shape is normalized, so a wrong one shows in a diff.
                        ("userAgent", Value::String(agent)) if is_tandem_user_agent(agent) => {
                            Value::String("<userAgent>".into())
                        }
                        _ => self.normalize(member),
                    };
                    out.insert(key.clone(), member);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.normalize(v)).collect()),
            Value::String(text) => Value::String(self.string(text)),
            other => other.clone(),
        }
    }

    fn string(&mut self, text: &str) -> String {
        let mut text = self.ids_in(text);
        for home in &self.homes {
            text = text.replace(home.as_str(), "<home>");
        }
        text
    }

    /// `text` with every UUID in it (a whole id, or one quoted in an error message) replaced.
    fn ids_in(&mut self, text: &str) -> String {
        // Output deltas are long base64 strings, which never hold a '-': skip them cheaply.
        if !text.contains('-') {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        // A UUID's first hyphen sits 8 bytes in, so only those positions can start one.
        while let Some(start) = rest
            .match_indices('-')
            .filter_map(|(hyphen, _)| hyphen.checked_sub(8))
            .find(|start| rest.get(*start..start + UUID_LEN).is_some_and(is_uuid))
        {
            out.push_str(&rest[..start]);
            out.push_str(&self.placeholder(&rest[start..start + UUID_LEN]));
            rest = &rest[start + UUID_LEN..];
        }
        out.push_str(rest);
        out
    }

    fn placeholder(&mut self, id: &str) -> String {
        if let Some(placeholder) = self.ids.get(id) {
            return placeholder.clone();
        }
        self.next_auto += 1;
        let placeholder = format!("<id:{}>", self.next_auto);
        self.ids.insert(id.to_owned(), placeholder.clone());
        self.raw.insert(placeholder.clone(), id.to_owned());
        placeholder
    }
}

const UUID_LEN: usize = 36;

/// Whether `text` is a lowercase hyphenated UUID (thread, turn, item and attachment ids).
fn is_uuid(text: &str) -> bool {
    text.len() == UUID_LEN
        && text.char_indices().all(|(index, c)| match index {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_digit() || ('a'..='f').contains(&c),
        })
}

/// Whether `agent` is `tandem/<protocol revision> (tandem <version>; <os> <arch>; <family>)
/// <client>/<version>` for the suite's client: what clients split the version from.
pub(crate) fn is_tandem_user_agent(agent: &str) -> bool {
    let expected_prefix = format!(
        "tandem/{} (tandem {}; {} {}; {}) ",
        tandem_protocol::UPSTREAM_PROTOCOL_VERSION,
        tandem_server::server::SERVER_VERSION,
        std::env::consts::OS,
        std::env::consts::ARCH,
        std::env::consts::FAMILY,
    );
    agent
        .strip_prefix(&expected_prefix)
        .is_some_and(|client| client.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_keep_their_identity_and_clocks_their_nullness() {
        let mut normalizer =
            Normalizer::new(["/tmp/home".to_owned(), "/private/tmp/home".to_owned()]);
        let thread = "01890a5d-ac96-774b-bcce-b302099a8057";
        let turn = "01890a5d-ac96-774b-bcce-b302099a8058";
        let value = json!({
            "threadId": thread, "turn": {"id": turn, "startedAt": 12, "completedAt": null},
            "again": thread, "cwd": "/private/tmp/home/work", "emittedAtMs": 5,
            "userAgent": format!(
                "tandem/{} (tandem {}; {} {}; {}) client/1",
                tandem_protocol::UPSTREAM_PROTOCOL_VERSION,
                tandem_server::server::SERVER_VERSION,
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::env::consts::FAMILY,
            ),
            "message": format!("thread not found: {turn}!"),
        });
        assert_eq!(
            normalizer.normalize(&value),
            json!({
                "threadId": "<id:1>",
                "turn": {"id": "<id:2>", "startedAt": "<time>", "completedAt": null},
                "again": "<id:1>", "cwd": "<home>/work", "userAgent": "<userAgent>",
                "message": "thread not found: <id:2>!",
            })
        );
        assert_eq!(
            normalizer
                .denormalize(&json!({"threadId": "<id:2>", "cwd": "<home>/x", "c": "7:<id:1>"})),
            json!({"threadId": turn, "cwd": "/tmp/home/x", "c": format!("7:{thread}")})
        );
        assert!(!is_uuid("01890A5D-AC96-774B-BCCE-B302099A8057"));
        // A user agent of another shape (the old one, without the protocol revision) is kept.
        assert_eq!(
            normalizer.normalize(&json!({"userAgent": "tandem/0.1.0 (linux x86_64; unix) c/1"})),
            json!({"userAgent": "tandem/0.1.0 (linux x86_64; unix) c/1"})
        );
    }
}
