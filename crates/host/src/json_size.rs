//! How many bytes a value takes as JSON, estimated without encoding it: a serde serializer
//! that only adds up lengths. A string counts its bytes plus its quotes, in constant time
//! whatever its size, so measuring a message with an 8 MB string costs as much as measuring
//! one with a short string (serializing into a counter would scan all 8 MB for characters to
//! escape, which in an unoptimized build is slower than the wire). Escapes are not counted: a
//! string of quotes or control characters encodes larger than estimated, which a byte bound
//! that is about memory, not framing, can live with.

use serde::ser::{self, Serialize};

/// The JSON size of `value` (escapes aside); `None` if it cannot be serialized.
pub(crate) fn estimate<T: Serialize + ?Sized>(value: &T) -> Option<usize> {
    let mut size = Size(0);
    value.serialize(&mut size).ok()?;
    Some(size.0)
}

struct Size(usize);

impl Size {
    fn add(&mut self, bytes: usize) {
        self.0 = self.0.saturating_add(bytes);
    }

    fn string(&mut self, text_bytes: usize) {
        // The quotes.
        self.add(text_bytes + 2);
    }
}

/// Serializing never fails here; the type only satisfies serde.
#[derive(Debug)]
struct Never(String);

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Never {}

impl ser::Error for Never {
    fn custom<T: std::fmt::Display>(message: T) -> Self {
        Self(message.to_string())
    }
}

/// Digits of `n` in decimal.
fn digits(mut n: u128) -> usize {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

fn signed_digits(n: i128) -> usize {
    digits(n.unsigned_abs()) + usize::from(n < 0)
}

/// A float's text is at most this long (`-1.7976931348623157e308`).
const FLOAT_BYTES: usize = 24;

impl<'a> ser::Serializer for &'a mut Size {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, value: bool) -> Result<(), Never> {
        self.add(if value { 4 } else { 5 });
        Ok(())
    }

    fn serialize_i8(self, value: i8) -> Result<(), Never> {
        self.serialize_i128(value.into())
    }

    fn serialize_i16(self, value: i16) -> Result<(), Never> {
        self.serialize_i128(value.into())
    }

    fn serialize_i32(self, value: i32) -> Result<(), Never> {
        self.serialize_i128(value.into())
    }

    fn serialize_i64(self, value: i64) -> Result<(), Never> {
        self.serialize_i128(value.into())
    }

    fn serialize_i128(self, value: i128) -> Result<(), Never> {
        self.add(signed_digits(value));
        Ok(())
    }

    fn serialize_u8(self, value: u8) -> Result<(), Never> {
        self.serialize_u128(value.into())
    }

    fn serialize_u16(self, value: u16) -> Result<(), Never> {
        self.serialize_u128(value.into())
    }

    fn serialize_u32(self, value: u32) -> Result<(), Never> {
        self.serialize_u128(value.into())
    }

    fn serialize_u64(self, value: u64) -> Result<(), Never> {
        self.serialize_u128(value.into())
    }

    fn serialize_u128(self, value: u128) -> Result<(), Never> {
        self.add(digits(value));
        Ok(())
    }

    fn serialize_f32(self, _value: f32) -> Result<(), Never> {
        self.add(FLOAT_BYTES);
        Ok(())
    }

    fn serialize_f64(self, _value: f64) -> Result<(), Never> {
        self.add(FLOAT_BYTES);
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result<(), Never> {
        self.string(value.len_utf8());
        Ok(())
    }

    fn serialize_str(self, value: &str) -> Result<(), Never> {
        self.string(value.len());
        Ok(())
    }

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<(), Never> {
        // Counted as it is written, piece by piece: the default would build the whole string.
        struct Count(usize);
        impl std::fmt::Write for Count {
            fn write_str(&mut self, piece: &str) -> std::fmt::Result {
                self.0 += piece.len();
                Ok(())
            }
        }
        let mut count = Count(0);
        let _ = std::fmt::Write::write_fmt(&mut count, format_args!("{value}"));
        self.string(count.0);
        Ok(())
    }

    fn serialize_bytes(self, value: &[u8]) -> Result<(), Never> {
        // serde_json writes bytes as an array of numbers: up to 3 digits and a comma each.
        self.add(2 + value.len() * 4);
        Ok(())
    }

    fn serialize_none(self) -> Result<(), Never> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Never> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Never> {
        self.add(4);
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Never> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Never> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        // {"variant":value}
        self.string(variant.len());
        self.add(3);
        value.serialize(self)
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, Never> {
        Ok(Compound::open(self, 0))
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, Never> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, Never> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Never> {
        // {"variant":[...]}
        self.string(variant.len());
        Ok(Compound::open(self, 3))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, Never> {
        Ok(Compound::open(self, 0))
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Compound<'a>, Never> {
        Ok(Compound::open(self, 0))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Never> {
        // {"variant":{...}}
        self.string(variant.len());
        Ok(Compound::open(self, 3))
    }
}

/// An array or object being measured: its brackets, and a comma between members.
struct Compound<'a> {
    size: &'a mut Size,
    members: usize,
}

impl<'a> Compound<'a> {
    fn open(size: &'a mut Size, extra: usize) -> Self {
        // The brackets, and whatever the variant wrapping adds.
        size.add(2 + extra);
        Self { size, members: 0 }
    }

    fn member(&mut self) {
        if self.members > 0 {
            self.size.add(1);
        }
        self.members += 1;
    }

    fn field(&mut self, key: &str) {
        self.member();
        // "key":
        self.size.string(key.len());
        self.size.add(1);
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Never;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
        self.member();
        value.serialize(&mut *self.size)
    }

    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Never;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Never;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Never;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Never;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Never> {
        self.member();
        key.serialize(&mut *self.size)?;
        // The colon.
        self.size.add(1);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
        value.serialize(&mut *self.size)
    }

    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Never;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        self.field(key);
        value.serialize(&mut *self.size)
    }

    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Never;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        self.field(key);
        value.serialize(&mut *self.size)
    }

    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_written_in_pieces_is_counted_whole() {
        // Base64 fields serialize through `collect_str`, in pieces.
        let params = tandem_protocol::ProcessWriteStdinParams {
            process_handle: "h".to_owned(),
            delta: Some(tandem_protocol::Bytes::from(vec![1u8; 10_000])),
            close_stdin: None,
        };
        let encoded = serde_json::to_vec(&params).unwrap();
        assert_eq!(estimate(&params), Some(encoded.len()));
    }

    #[test]
    fn the_estimate_is_the_encoded_size_without_escapes() {
        let values = [
            json!(null),
            json!(true),
            json!(-12345),
            json!(u64::MAX),
            json!("plain text"),
            json!([]),
            json!({}),
            json!([1, "two", {"three": [null, false]}]),
            json!({"id": 7, "result": {"items": ["a", "bb", "ccc"], "nested": {"k": "v"}}}),
            json!({"text": "x".repeat(100_000)}),
        ];
        for value in values {
            let encoded = serde_json::to_vec(&value).unwrap().len();
            assert_eq!(estimate(&value), Some(encoded), "{value}");
        }
    }

    #[test]
    fn escapes_make_the_encoding_larger_not_smaller() {
        let value = json!({"text": "a \"quoted\"\nline"});
        let encoded = serde_json::to_vec(&value).unwrap().len();
        let estimated = estimate(&value).unwrap();
        assert!(
            estimated <= encoded && encoded - estimated == 3,
            "{estimated} vs {encoded}"
        );
    }
}
