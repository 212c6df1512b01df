//! The one place where process bytes meet base64: [`bytes::Bytes`] fields of the typed messages
//! are base64 strings on the wire, and nowhere else.
//!
//! In-process, a delta read from a pipe travels to the consumer as the same `Bytes` without a
//! copy or an encoding step. A transport that writes JSON encodes it here, in the writer, and a
//! reader decodes it here.
//!
//! Encoding is SIMD (`base64-simd`, AVX2/SSSE3/NEON picked at run time): at 64 KiB per
//! `process/outputDelta`, the scalar encoder was the largest single cost of streaming output
//! over a wire. [`encode_into`] appends straight into a frame buffer (the wire codec's path for
//! output deltas); the serde path writes the text in stack-sized pieces
//! ([`serialize`]), never as one intermediate string. Decoding stays on the `base64` crate,
//! whose strict rules (canonical padding and trailing bits) and error texts clients see.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64_simd::AsOut as _;
use bytes::Bytes;
use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};

/// Prefix of the decode error of a base64 field. [`crate::messages`] recognizes it to answer
/// -32602 `invalid deltaBase64: ...` (a bad value) instead of -32600 (a bad shape), as
/// docs/protocol.md section 8 asks.
pub(crate) const INVALID_BASE64: &str = "invalid deltaBase64: ";

/// Encodes `bytes` as standard base64 with padding.
pub fn encode(bytes: &[u8]) -> String {
    base64_simd::STANDARD.encode_to_string(bytes)
}

/// Appends the standard base64 (with padding) of `bytes` to `out`.
pub fn encode_into(bytes: &[u8], out: &mut Vec<u8>) {
    base64_simd::STANDARD.encode_append(bytes, out);
}

/// The length of the standard base64 (with padding) of `len` bytes.
pub const fn encoded_len(len: usize) -> usize {
    len.div_ceil(3) * 4
}

/// Input bytes encoded per piece by [`Base64Text`]: a multiple of 3, so that only the last
/// piece can carry padding.
const PIECE_BYTES: usize = 3 * 1024;

/// The base64 text of some bytes, written in pieces of [`PIECE_BYTES`] encoded on the stack:
/// `collect_str` hands each piece to the serializer, so no string of the whole text is made.
struct Base64Text<'a>(&'a [u8]);

impl std::fmt::Display for Base64Text<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut piece = [0u8; encoded_len(PIECE_BYTES)];
        for input in self.0.chunks(PIECE_BYTES) {
            let text = base64_simd::STANDARD.encode_as_str(input, piece.as_mut_slice().as_out());
            formatter.write_str(text)?;
        }
        Ok(())
    }
}

/// Decodes standard base64 with padding.
///
/// The SIMD decoder accepts exactly what the `base64` crate's strict engine accepts (canonical
/// padding, no bits set past the last byte; tested against it). Where it refuses, the strict
/// engine decodes again, so an error reads as it always has: the texts clients see come from
/// `base64::DecodeError`.
pub fn decode(text: &str) -> Result<Bytes, base64::DecodeError> {
    match base64_simd::STANDARD.decode_to_vec(text) {
        Ok(bytes) => Ok(Bytes::from(bytes)),
        Err(_) => BASE64.decode(text).map(Bytes::from),
    }
}

/// Serializes bytes as a base64 string.
pub fn serialize<S: Serializer>(bytes: &Bytes, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&Base64Text(bytes))
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

    #[test]
    fn the_simd_encoder_agrees_with_the_strict_decoder_at_every_length() {
        // Every remainder mod 3, and lengths around the serializer's piece size.
        let data: Vec<u8> = (0..3 * PIECE_BYTES + 7)
            .map(|n| (n * 131 % 251) as u8)
            .collect();
        for len in (0..40)
            .chain(PIECE_BYTES - 2..PIECE_BYTES + 3)
            .chain([data.len()])
        {
            let bytes = &data[..len];
            let text = encode(bytes);
            assert_eq!(text, BASE64.encode(bytes), "length {len}");
            assert_eq!(text.len(), encoded_len(len));
            let mut appended = b"prefix".to_vec();
            encode_into(bytes, &mut appended);
            assert_eq!(&appended[6..], text.as_bytes());
            assert_eq!(Base64Text(bytes).to_string(), text, "pieces, length {len}");
            assert_eq!(decode(&text).unwrap(), bytes);
        }
    }

    proptest::proptest! {
        /// The SIMD decoder and the strict engine accept and refuse the same texts: strings
        /// over the alphabet and `=` (valid encodings, bad padding, set trailing bits, `=` in
        /// the middle), valid encodings with one character changed, and any text.
        #[test]
        fn the_simd_decoder_accepts_exactly_what_the_strict_decoder_accepts(
            near in "[A-Za-z0-9+/=]{0,24}",
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
            at in 0usize..64,
            with in "[A-Za-z0-9+/=_\\- ]",
            any in ".{0,12}",
        ) {
            let mut changed = BASE64.encode(&bytes);
            if !changed.is_empty() {
                let at = at % changed.len();
                changed.replace_range(at..at + 1, &with);
            }
            for text in [near.as_str(), changed.as_str(), any.as_str()] {
                let strict = BASE64.decode(text).map(Bytes::from).map_err(|e| e.to_string());
                let simd = decode(text).map_err(|e| e.to_string());
                proptest::prop_assert_eq!(simd, strict, "{:?}", text);
            }
        }
    }

    #[test]
    fn refusals_keep_the_strict_decoders_texts() {
        for text in [
            "QQ",
            "QR==",
            "Q===",
            "QQ=A",
            "QQ==QQ==",
            "Q\u{e9}==",
            " QQ==",
        ] {
            let strict = BASE64.decode(text).unwrap_err();
            assert_eq!(decode(text).unwrap_err(), strict, "{text:?}");
        }
        assert_eq!(decode("QQ==").unwrap(), Bytes::from_static(b"A"));
    }

    #[test]
    fn serializing_writes_the_base64_as_a_json_string() {
        #[derive(serde::Serialize)]
        struct Field {
            #[serde(with = "super")]
            delta: Bytes,
        }
        let delta = Bytes::from((0..=255u8).cycle().take(10_000).collect::<Vec<u8>>());
        let json = serde_json::to_string(&Field {
            delta: delta.clone(),
        })
        .unwrap();
        assert_eq!(json, format!(r#"{{"delta":"{}"}}"#, BASE64.encode(&delta)));
    }
}
