//! [`SharedText`]: the string type of the protocol's payloads (a turn's input text, an agent
//! message's text, the text deltas), which can be tens of megabytes. It is allocated once,
//! where the text is made (decoded from the wire, produced by the agent), and every holder
//! after that (the stored turn, the turn's history, each notification and each subscriber's
//! copy of it) shares the same allocation; a clone is a reference count.
//!
//! On the wire it is a JSON string, exactly as `String` was: the same JSON, the same schema,
//! the same TypeScript type.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, RangeBounds};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An immutable string shared by reference count, or a slice of one (see
/// [`SharedText::slice`]). It derefs to `str`, compares, orders and hashes as its text, and
/// converts from `String` without copying the text.
#[derive(Clone, Default)]
pub struct SharedText {
    /// The allocation, shared by every clone and slice.
    buffer: Arc<String>,
    /// Where this text starts in `buffer` (a char boundary).
    start: usize,
    /// Where it ends (a char boundary).
    end: usize,
}

impl SharedText {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.buffer[self.start..self.end]
    }

    /// Whether `a` and `b` share one allocation (one is a clone or a slice of the other).
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.buffer, &b.buffer)
    }

    /// Holders of this text's allocation: clones and slices of it, this one included.
    pub fn holders(&self) -> usize {
        Arc::strong_count(&self.buffer)
    }

    /// The part of the text in `range` (byte offsets into this text), sharing the allocation;
    /// `None` when the range is out of bounds or does not fall on char boundaries, as
    /// [`str::get`].
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Option<Self> {
        use std::ops::Bound;
        let start = match range.start_bound() {
            Bound::Included(&start) => start,
            Bound::Excluded(&start) => start.checked_add(1)?,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&end) => end.checked_add(1)?,
            Bound::Excluded(&end) => end,
            Bound::Unbounded => self.len(),
        };
        self.as_str().get(start..end)?;
        Some(Self {
            buffer: Arc::clone(&self.buffer),
            start: self.start + start,
            end: self.start + end,
        })
    }

    /// The text as an owned `String`: moved out when this is the whole text and its only
    /// holder, else copied.
    pub fn into_string(self) -> String {
        if self.start == 0 && self.end == self.buffer.len() {
            return Arc::try_unwrap(self.buffer).unwrap_or_else(|shared| String::clone(&shared));
        }
        self.as_str().to_owned()
    }
}

impl Deref for SharedText {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for SharedText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for SharedText {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for SharedText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SharedText {}

impl PartialOrd for SharedText {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SharedText {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for SharedText {
    /// As `str` hashes, so that `Borrow<str>` lookups work.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl From<String> for SharedText {
    /// Takes the string's buffer: no copy of the text. A buffer with much more room than
    /// text (a string grown by doubling) gives the room back first: the text is kept for as
    /// long as anything holds it.
    fn from(mut text: String) -> Self {
        if text.capacity() - text.len() > text.len() / 4 {
            text.shrink_to_fit();
        }
        Self {
            start: 0,
            end: text.len(),
            buffer: Arc::new(text),
        }
    }
}

impl From<&str> for SharedText {
    fn from(text: &str) -> Self {
        Self::from(text.to_owned())
    }
}

impl From<SharedText> for String {
    fn from(text: SharedText) -> Self {
        text.into_string()
    }
}

impl PartialEq<str> for SharedText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for SharedText {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<SharedText> for str {
    fn eq(&self, other: &SharedText) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<SharedText> for &str {
    fn eq(&self, other: &SharedText) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<SharedText> for String {
    fn eq(&self, other: &SharedText) -> bool {
        self == other.as_str()
    }
}

impl Serialize for SharedText {
    /// A JSON string, written straight from the shared text.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SharedText {
    /// Takes the decoded `String` as it is: the text is allocated once.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for SharedText {
    fn inline_schema() -> bool {
        String::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        String::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        String::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[cfg(feature = "schema")]
impl ts_rs::TS for SharedText {
    type WithoutGenerics = Self;
    type OptionInnerType = Self;

    fn name(config: &ts_rs::Config) -> String {
        String::name(config)
    }

    fn inline(config: &ts_rs::Config) -> String {
        String::inline(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_shares_the_text_and_a_string_is_taken_without_a_copy() {
        let text = "x".repeat(1024);
        let buffer = text.as_ptr();
        let shared = SharedText::from(text);
        assert_eq!(shared.as_ptr(), buffer, "the String's buffer is kept");
        let clone = shared.clone();
        assert!(SharedText::ptr_eq(&shared, &clone));
        assert_eq!(clone.as_ptr(), buffer);
        drop(shared);
        let owned = clone.into_string();
        assert_eq!(owned.as_ptr(), buffer, "the last holder moves it out");
    }

    #[test]
    fn a_slice_shares_the_allocation_and_checks_its_bounds() {
        let shared = SharedText::from("héllo world".to_owned());
        let word = shared.slice(7..).unwrap();
        assert_eq!(word, "world");
        assert!(SharedText::ptr_eq(&shared, &word));
        assert_eq!(word.slice(..=2).unwrap(), "wor");
        assert_eq!(shared.holders(), 2);
        assert!(shared.slice(2..3).is_none(), "inside the two bytes of é");
        assert!(shared.slice(..100).is_none());
        assert_eq!(word.into_string(), "world");
    }

    #[test]
    fn equal_texts_are_equal_whatever_their_allocation() {
        use std::collections::HashSet;
        let whole = SharedText::from("ab ab");
        let (first, second) = (whole.slice(..2).unwrap(), whole.slice(3..).unwrap());
        assert_eq!(first, second);
        assert_eq!(first, SharedText::from("ab"));
        let set: HashSet<SharedText> = [first].into_iter().collect();
        assert!(set.contains("ab"), "hashes as str");
    }

    #[test]
    fn a_notification_cloned_or_encoded_for_two_connections_copies_no_text() {
        use crate::wire::{ServerMessage, encode_server_message};
        use crate::{ItemCompletedNotification, ServerNotification, ThreadItem};
        let text = SharedText::from("y".repeat(1 << 20));
        let note = ServerNotification::ItemCompleted(ItemCompletedNotification {
            thread_id: "t".into(),
            turn_id: "u".into(),
            item: ThreadItem::AgentMessage {
                id: "i".into(),
                text: text.clone(),
            },
            completed_at_ms: 0,
        });
        let copy = note.clone();
        let ServerNotification::ItemCompleted(ItemCompletedNotification {
            item: ThreadItem::AgentMessage { text: copied, .. },
            ..
        }) = &copy
        else {
            panic!("the clone is the same notification")
        };
        assert!(
            SharedText::ptr_eq(copied, &text),
            "the clone shares the text"
        );
        assert_eq!(
            text.holders(),
            3,
            "the original, the notification and its clone"
        );
        let messages = [note, copy].map(|notification| ServerMessage::Notification {
            notification,
            emitted_at_ms: None,
            cursor: None,
        });
        let mut frames = [Vec::new(), Vec::new()];
        for (frame, message) in frames.iter_mut().zip(&messages) {
            encode_server_message(message, frame).unwrap();
            assert_eq!(text.holders(), 3, "encoding takes no copy of the value");
        }
        assert_eq!(frames[0], frames[1]);
        assert!(frames[0].len() > 1 << 20);
    }

    #[test]
    fn it_is_a_json_string_both_ways() {
        let shared = SharedText::from("a \"quoted\" line\n");
        let json = serde_json::to_string(&shared).unwrap();
        assert_eq!(json, serde_json::to_string("a \"quoted\" line\n").unwrap());
        let back: SharedText = serde_json::from_str(&json).unwrap();
        assert_eq!(back, "a \"quoted\" line\n");
    }
}
