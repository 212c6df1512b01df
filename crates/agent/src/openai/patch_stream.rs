//! A patch as the model streams it: the `apply_patch` call's input, taken out of its argument
//! fragments as they arrive, shown to the client as `item/fileChange/patchUpdated` before the
//! call is complete, as the reference shows it.
//!
//! The reference's rhythm: the first update as soon as the patch names a change, then at most
//! one every [`UPDATE_INTERVAL`] with the latest state (the states in between are skipped, so a
//! long patch costs the client a few updates, not one per token), and the latest state at the
//! end of the answer if it was held back. The updates carry the id the `fileChange` item will
//! have, taken from the turn before the call is complete and handed to
//! [`TurnDriver::apply_streamed_patch`] when the call runs.
//!
//! The function form's input arrives as fragments of JSON (`{"input": "*** Begin Patch\n...`);
//! [`InputExtractor`] decodes the `input` string as far as it has arrived, without parsing the
//! whole text again for each fragment. The Responses API's free-form form streams the input
//! itself.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::TurnDriver;

/// The least time between two updates of one patch (the reference's buffer interval).
pub(crate) const UPDATE_INTERVAL: Duration = Duration::from_millis(500);

/// The `apply_patch` calls of one streamed answer, by their position among its tool calls.
#[derive(Debug, Default)]
pub(crate) struct PatchStreams {
    streams: HashMap<usize, PatchStream>,
}

#[derive(Debug)]
struct PatchStream {
    /// The id the `fileChange` item gets.
    item_id: String,
    /// Where the patch text comes from.
    source: Source,
    /// The patch text so far.
    input: String,
    /// When an update was last sent; `None` before the first.
    last_sent: Option<Instant>,
    /// Whether `input` grew since the last update (or since the start).
    held_back: bool,
}

#[derive(Debug)]
enum Source {
    /// The free-form tool's input: the fragments are the text.
    Raw,
    /// The function tool's JSON arguments.
    Json(InputExtractor),
}

impl PatchStreams {
    /// Takes `fragment` of the call at `call` (its JSON arguments, or its raw input when
    /// `raw`), and sends an update when one is due.
    pub(crate) async fn push(
        &mut self,
        call: usize,
        fragment: &str,
        raw: bool,
        driver: &TurnDriver,
    ) {
        let stream = self.streams.entry(call).or_insert_with(|| PatchStream {
            item_id: driver.new_item_id(),
            source: if raw {
                Source::Raw
            } else {
                Source::Json(InputExtractor::default())
            },
            input: String::new(),
            last_sent: None,
            held_back: false,
        });
        let before = stream.input.len();
        match &mut stream.source {
            Source::Raw => stream.input.push_str(fragment),
            Source::Json(extractor) => extractor.push(fragment, &mut stream.input),
        }
        if stream.input.len() == before {
            return;
        }
        stream.held_back = true;
        let due = stream
            .last_sent
            .is_none_or(|last| last.elapsed() >= UPDATE_INTERVAL);
        if due {
            stream.send(driver).await;
        }
    }

    /// Sends what was held back, at the end of the answer: the client's last update before
    /// the item starts is the patch as the model finished it.
    pub(crate) async fn finish(&mut self, driver: &TurnDriver) {
        let mut calls: Vec<usize> = self.streams.keys().copied().collect();
        calls.sort_unstable();
        for call in calls {
            if let Some(stream) = self.streams.get_mut(&call)
                && stream.held_back
            {
                stream.send(driver).await;
            }
        }
    }

    /// The item id given to the call at `call`, if its patch streamed.
    pub(crate) fn item_id(&self, call: usize) -> Option<&str> {
        self.streams
            .get(&call)
            .map(|stream| stream.item_id.as_str())
    }
}

impl PatchStream {
    async fn send(&mut self, driver: &TurnDriver) {
        // A text that names no change yet is no update: the first one is still due.
        if driver.patch_progress(&self.item_id, &self.input).await {
            self.last_sent = Some(Instant::now());
            self.held_back = false;
        }
    }
}

/// What of `arguments` is past `streamed` (then all of it is), if anything: a call's
/// arguments only grow while it streams, but a final event may restate them whole, and what
/// differs from what went out is not shown.
pub(crate) fn unstreamed(arguments: &str, streamed: &mut usize) -> Option<String> {
    let fragment = arguments.get(*streamed..).filter(|rest| !rest.is_empty())?;
    *streamed = arguments.len();
    Some(fragment.to_owned())
}

/// Decodes the string value of the top-level key `input` out of a JSON object that arrives in
/// fragments, appending what it decodes to an output; other keys' values are skipped. Text is
/// decoded once: a fragment cut inside an escape waits for the rest. What does not scan as a
/// JSON object stops the extraction (the call fails later, when its arguments are parsed whole).
#[derive(Debug, Default)]
pub(crate) struct InputExtractor {
    /// The arguments not decoded yet: at most a cut escape, or a cut key.
    pending: String,
    state: Scan,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
enum Scan {
    /// Before the object's `{`.
    #[default]
    Start,
    /// Where a key (or the end) is expected.
    Key,
    /// Inside a key: its text so far, and whether a backslash came last.
    InKey(String, bool),
    /// After a key, before its `:`; whether it is `input`.
    Colon(bool),
    /// Where a value is expected; whether it is `input`'s.
    Value(bool),
    /// Inside `input`'s string.
    Input,
    /// Inside another value: nesting depth, inside a string, after a backslash.
    Skip {
        depth: u32,
        string: bool,
        escaped: bool,
    },
    /// After a value, where `,` or `}` is expected.
    AfterValue,
    /// The object ended, or the text is not one.
    Stopped,
}

impl InputExtractor {
    /// Takes `fragment`, appending to `out` what it decodes of the input.
    pub(crate) fn push(&mut self, fragment: &str, out: &mut String) {
        self.pending.push_str(fragment);
        let text = std::mem::take(&mut self.pending);
        let mut rest = text.as_str();
        while let Some(c) = rest.chars().next() {
            let step = c.len_utf8();
            match &mut self.state {
                Scan::Stopped => return,
                Scan::Start | Scan::Key | Scan::AfterValue | Scan::Colon(_) | Scan::Value(_)
                    if c.is_ascii_whitespace() => {}
                Scan::Start => self.state = if c == '{' { Scan::Key } else { Scan::Stopped },
                Scan::Key => {
                    self.state = match c {
                        '"' => Scan::InKey(String::new(), false),
                        _ => Scan::Stopped,
                    }
                }
                Scan::InKey(key, escaped) => match (c, *escaped) {
                    (_, true) => {
                        key.push(c);
                        *escaped = false;
                    }
                    ('"', false) => {
                        let is_input = key == "input";
                        self.state = Scan::Colon(is_input);
                    }
                    // A key with an escape is no key of ours: keep it unequal to `input`.
                    ('\\', false) => {
                        key.push('\u{0}');
                        *escaped = true;
                    }
                    _ => key.push(c),
                },
                Scan::Colon(is_input) => {
                    self.state = match c {
                        ':' => Scan::Value(*is_input),
                        _ => Scan::Stopped,
                    }
                }
                Scan::Value(true) if c == '"' => self.state = Scan::Input,
                Scan::Value(_) => {
                    self.state = Scan::Skip {
                        depth: u32::from(c == '{' || c == '['),
                        string: c == '"',
                        escaped: false,
                    };
                }
                Scan::Input => match c {
                    '"' => self.state = Scan::AfterValue,
                    '\\' => match decode_escape(rest) {
                        Escape::Decoded(decoded, length) => {
                            out.push(decoded);
                            rest = &rest[length..];
                            continue;
                        }
                        Escape::Incomplete => {
                            self.pending = rest.to_owned();
                            return;
                        }
                        Escape::Invalid => self.state = Scan::Stopped,
                    },
                    _ => out.push(c),
                },
                Scan::Skip {
                    depth,
                    string,
                    escaped,
                } => {
                    if *string {
                        match (c, *escaped) {
                            (_, true) => *escaped = false,
                            ('\\', false) => *escaped = true,
                            ('"', false) => *string = false,
                            _ => {}
                        }
                    } else {
                        match c {
                            '"' => *string = true,
                            '{' | '[' => *depth += 1,
                            '}' | ']' if *depth > 0 => *depth -= 1,
                            // The end of a scalar at the top level, or of the object.
                            ',' if *depth == 0 => self.state = Scan::Key,
                            '}' => self.state = Scan::Stopped,
                            _ => {}
                        }
                    }
                    // A string or container value at the top level ends with its closer.
                    if let Scan::Skip {
                        depth: 0,
                        string: false,
                        ..
                    } = self.state
                        && matches!(c, '"' | '}' | ']')
                    {
                        self.state = Scan::AfterValue;
                    }
                }
                Scan::AfterValue => {
                    self.state = match c {
                        ',' => Scan::Key,
                        _ => Scan::Stopped,
                    }
                }
            }
            rest = &rest[step..];
        }
    }
}

enum Escape {
    /// The character and the escape's length in bytes.
    Decoded(char, usize),
    /// The fragment ends inside it.
    Incomplete,
    /// Not an escape JSON has.
    Invalid,
}

/// Decodes the escape `text` starts with (at its backslash).
fn decode_escape(text: &str) -> Escape {
    let bytes = text.as_bytes();
    let Some(&kind) = bytes.get(1) else {
        return Escape::Incomplete;
    };
    let simple = match kind {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return decode_unicode(text),
        _ => return Escape::Invalid,
    };
    Escape::Decoded(simple, 2)
}

/// Decodes `\uXXXX`, and the low half that must follow a high surrogate.
fn decode_unicode(text: &str) -> Escape {
    let unit = |at: usize| -> Option<Result<u16, ()>> {
        let digits = text.get(at..at + 4)?;
        Some(u16::from_str_radix(digits, 16).map_err(|_| ()))
    };
    let first = match unit(2) {
        None => return Escape::Incomplete,
        Some(Err(())) => return Escape::Invalid,
        Some(Ok(first)) => first,
    };
    if !(0xD800..0xDC00).contains(&first) {
        return match char::from_u32(u32::from(first)) {
            Some(c) => Escape::Decoded(c, 6),
            // A lone low surrogate: what serde_json would refuse too.
            None => Escape::Invalid,
        };
    }
    // The first six bytes are ASCII (`\\u` and four hex digits): the rest starts at a boundary.
    let low = &text.as_bytes()[6..];
    if !low
        .iter()
        .zip(b"\\u")
        .all(|(byte, expected)| byte == expected)
    {
        return Escape::Invalid;
    }
    if low.len() < 6 {
        return Escape::Incomplete;
    }
    match unit(8) {
        Some(Ok(second)) => match char::decode_utf16([first, second]).next() {
            Some(Ok(c)) => Escape::Decoded(c, 12),
            _ => Escape::Invalid,
        },
        _ => Escape::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Extracts the input of `arguments` fed in fragments of `size` characters.
    fn extract_in_fragments(arguments: &str, size: usize) -> String {
        let mut extractor = InputExtractor::default();
        let mut out = String::new();
        let chars: Vec<char> = arguments.chars().collect();
        for fragment in chars.chunks(size) {
            extractor.push(&fragment.iter().collect::<String>(), &mut out);
        }
        out
    }

    #[test]
    fn the_input_is_decoded_however_the_fragments_are_cut() {
        let patch = "*** Begin Patch\n*** Add File: \"a\" \\ b.txt\n+tab\there é 😀\n*** End Patch";
        let arguments = serde_json::json!({"input": patch}).to_string();
        // And with every character escaped the way some servers write them.
        let escaped: String = patch
            .encode_utf16()
            .map(|unit| format!("\\u{unit:04x}"))
            .collect();
        let arguments_escaped = format!("{{\"input\":\"{escaped}\"}}");
        for size in 1..=arguments.len() {
            assert_eq!(extract_in_fragments(&arguments, size), patch, "{size}");
        }
        for size in [1, 2, 3, 5, 7, 11, 13] {
            assert_eq!(extract_in_fragments(&arguments_escaped, size), patch);
        }
    }

    #[test]
    fn other_keys_are_skipped_before_and_after_the_input() {
        let arguments = r#" { "note" : {"input": "no", "x": [1, "]}"]}, "n": -1.5e3, "t": true,
            "input" : "yes\n", "after": "x" } "#;
        for size in 1..=arguments.len() {
            assert_eq!(extract_in_fragments(arguments, size), "yes\n", "{size}");
        }
    }

    #[test]
    fn what_is_not_an_object_gives_nothing_and_never_panics() {
        for arguments in [
            "[\"input\"]",
            "\"input\"",
            "{\"input\" 1}",
            "{\"input\": \"\\x\"}",
            "{\"input\": \"\\udc00\"}",
            "{\"input\": \"a\\ud800\\u0041\"}",
            "{\"in\\u0070ut\": \"escaped key\"}",
        ] {
            for size in 1..=arguments.len() {
                let out = extract_in_fragments(arguments, size);
                assert!(out.is_empty() || out == "a", "{arguments}: {out:?}");
            }
        }
    }
}
