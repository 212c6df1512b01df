//! The one place where process bytes meet base64: [`bytes::Bytes`] fields of the typed messages
//! are base64 strings on the wire, and nowhere else.
//!
//! In-process, a delta read from a pipe travels to the consumer as the same `Bytes` without a
//! copy or an encoding step. A transport that writes JSON encodes it here, in the writer, and a
//! reader decodes it here.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};

/// Prefix of the decode error of a base64 field. [`crate::messages`] recognizes it to answer
/// -32602 `invalid deltaBase64: ...` (a bad value) instead of -32600 (a bad shape), as
/// docs/protocol.md section 8 asks.
pub(crate) const INVALID_BASE64: &str = "invalid deltaBase64: ";

/// Encodes `bytes` as standard base64 with padding.
pub fn encode(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// Decodes standard base64 with padding.
pub fn decode(text: &str) -> Result<Bytes, base64::DecodeError> {
    BASE64.decode(text).map(Bytes::from)
}

/// Serializes bytes as a base64 string.
pub fn serialize<S: Serializer>(bytes: &Bytes, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&encode(bytes))
}

/// Deserializes a base64 string into bytes.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Bytes, D::Error> {
    deserializer.deserialize_str(Base64Visitor)
}

struct Base64Visitor;

impl Visitor<'_> for Base64Visitor {
    type Value = Bytes;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a base64 string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Bytes, E> {
        decode(text).map_err(|error| E::custom(format!("{INVALID_BASE64}{error}")))
    }
}

/// The same for an optional member: omitted (with `default`) and `null` are `None`.
pub mod option {
    use super::*;

    /// Serializes `Some(bytes)` as a base64 string and `None` as `null`; pair with
    /// `skip_serializing_if = "Option::is_none"`.
    pub fn serialize<S: Serializer>(
        bytes: &Option<Bytes>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(bytes) => super::serialize(bytes, serializer),
            None => serializer.serialize_none(),
        }
    }

    /// Deserializes a base64 string or `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Bytes>, D::Error> {
        deserializer.deserialize_option(OptionVisitor)
    }

    struct OptionVisitor;

    impl<'de> Visitor<'de> for OptionVisitor {
        type Value = Option<Bytes>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a base64 string or null")
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<Self::Value, D::Error> {
            super::deserialize(deserializer).map(Some)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_value_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        let text = encode(&all);
        assert_eq!(decode(&text).unwrap(), Bytes::from(all));
        assert_eq!(encode(b""), "");
        assert_eq!(decode("").unwrap(), Bytes::new());
    }
}
