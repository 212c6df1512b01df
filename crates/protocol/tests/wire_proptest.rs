//! Properties of the wire codec over generated input: no bytes make a decoder panic, every
//! request-shaped object gets exactly one answer (a typed request or an error reply, never
//! silence), and whatever decodes re-encodes to bytes that decode to the same message.
//!
//! 256 cases per property by default; `PROPTEST_CASES` raises it for a longer local run.

use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use tandem_protocol::wire::*;
use tandem_protocol::*;

/// Member names the codec or the typed params look at, so generated objects hit real paths.
const INTERESTING_KEYS: &[&str] = &[
    "id",
    "method",
    "params",
    "result",
    "error",
    "jsonrpc",
    "emittedAtMs",
    "code",
    "message",
    "data",
    "threadId",
    "turnId",
    "processHandle",
    "deltaBase64",
    "input",
    "type",
    "text",
    "clientInfo",
    "name",
    "version",
    "capabilities",
    "command",
    "cwd",
    "size",
    "rows",
    "cols",
    "timeoutMs",
    "approvalPolicy",
    "config",
    "dynamicTools",
    "stream",
    "capReached",
];

fn every_method() -> Vec<&'static str> {
    let mut methods = vec!["tandem/ext", "", "initialized"];
    methods.extend_from_slice(ClientRequest::METHODS);
    methods.extend_from_slice(ServerRequest::METHODS);
    methods.extend_from_slice(ServerNotification::METHODS);
    methods
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        (0i64..4).prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|float| Number::from_f64(float).map_or(Value::Null, Value::Number)),
        Just(Value::from(1.5)),
    ]
}

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9/+=_ -]{0,12}",
        any::<String>(),
        proptest::sample::select(every_method()).prop_map(str::to_owned),
        Just("2.0".to_owned()),
        Just("aGVsbG8=".to_owned()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(INTERESTING_KEYS).prop_map(str::to_owned),
        1 => string(),
    ]
}

/// Any JSON value, nested a few levels, with objects keyed mostly by names the codec reads.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// An id: mostly a valid one, sometimes anything at all.
fn id_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => any::<i64>().prop_map(Value::from),
        2 => (0i64..3).prop_map(Value::from),
        2 => "[a-z0-9-]{0,6}".prop_map(Value::String),
        2 => json_value(),
    ]
}

fn method_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => proptest::sample::select(every_method()).prop_map(Value::from),
        1 => json_value(),
    ]
}

fn error_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => (any::<i64>(), string(), proptest::option::of(json_value())).prop_map(
            |(code, message, data)| {
                let mut error = Map::new();
                error.insert("code".to_owned(), code.into());
                error.insert("message".to_owned(), message.into());
                if let Some(data) = data {
                    error.insert("data".to_owned(), data);
                }
                Value::Object(error)
            }
        ),
        1 => json_value(),
    ]
}

/// An object that looks like a message: each envelope member present or not, with values that
/// are right most of the time, plus unknown members.
fn message_like() -> impl Strategy<Value = Value> {
    (
        proptest::option::of(id_value()),
        proptest::option::of(method_value()),
        proptest::option::of(json_value()),
        proptest::option::of(json_value()),
        proptest::option::of(error_value()),
        proptest::option::weighted(0.3, json_value()),
        proptest::option::weighted(0.2, json_value()),
        proptest::collection::vec((string(), json_value()), 0..2),
    )
        .prop_map(
            |(id, method, params, result, error, jsonrpc, emitted_at_ms, extra)| {
                let mut object: Map<String, Value> = extra.into_iter().collect();
                let members = [
                    ("id", id),
                    ("method", method),
                    ("params", params),
                    ("result", result),
                    ("error", error),
                    ("jsonrpc", jsonrpc),
                    ("emittedAtMs", emitted_at_ms),
                ];
                for (name, value) in members {
                    match value {
                        Some(value) => object.insert(name.to_owned(), value),
                        None => object.remove(name),
                    };
                }
                Value::Object(object)
            },
        )
}

/// The id a reply must carry for a request-shaped object with this `id` member.
fn readable_id(id: &Value) -> Option<RequestId> {
    match id {
        Value::Number(number) => number.as_i64().map(RequestId::Integer),
        Value::String(text) => Some(RequestId::String(text.clone())),
        _ => None,
    }
}

fn assert_client_round_trip(message: &ClientMessage) {
    let mut out = Vec::new();
    encode_client_message(message, &mut out).expect("a decoded message encodes");
    let again = decode_client_message(&out).expect("encoded output decodes");
    assert_eq!(&again, message, "{}", String::from_utf8_lossy(&out));
}

fn assert_server_round_trip(message: &ServerMessage) {
    let mut out = Vec::new();
    encode_server_message(message, &mut out).expect("a decoded message encodes");
    let again = decode_server_message(&out).expect("encoded output decodes");
    assert_eq!(&again, message, "{}", String::from_utf8_lossy(&out));
}

/// Decodes `frame` both ways and round-trips whatever decodes.
fn decode_both_and_round_trip(frame: &[u8]) -> Result<ClientMessage, DecodeError> {
    let client = decode_client_message(frame);
    if let Ok(message) = &client {
        assert_client_round_trip(message);
    }
    if let Ok(message) = decode_server_message(frame) {
        assert_server_round_trip(&message);
    }
    if let Err(DecodeError::Reply(reply)) = decode_server_message(frame) {
        assert!(reply.id.is_some(), "a client can only answer with an id");
    }
    client
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(frame in proptest::collection::vec(any::<u8>(), 0..256)) {
        decode_both_and_round_trip(&frame).ok();
    }

    /// Valid messages with bytes overwritten, inserted or cut: close to real input, far from
    /// what the JSON strategy writes.
    #[test]
    fn damaged_messages_never_panic(
        message in message_like(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
    ) {
        let mut frame = serde_json::to_vec(&message).unwrap();
        for (at, byte, kind) in edits {
            let index = at.index(frame.len() + 1);
            match kind {
                0 if index < frame.len() => frame[index] = byte,
                1 => frame.insert(index, byte),
                _ => frame.truncate(index),
            }
        }
        decode_both_and_round_trip(&frame).ok();
    }

    #[test]
    fn arbitrary_json_never_panics(value in json_value()) {
        decode_both_and_round_trip(&serde_json::to_vec(&value).unwrap()).ok();
    }

    #[test]
    fn every_request_shaped_object_gets_exactly_one_answer(message in message_like()) {
        let frame = serde_json::to_vec(&message).unwrap();
        let decoded = decode_both_and_round_trip(&frame);
        let (Some(id), true) = (message.get("id"), message.get("method").is_some()) else {
            return Ok(());
        };
        let expected_id = readable_id(id);
        match decoded {
            Ok(ClientMessage::Request(request)) => {
                prop_assert_eq!(Some(request.id()), expected_id.as_ref());
            }
            Err(DecodeError::Reply(reply)) => {
                // A readable id is always echoed; otherwise the answer goes to the null id.
                prop_assert_eq!(reply.id, expected_id);
            }
            other => prop_assert!(false, "request-shaped {} gave {:?}", message, other),
        }
    }
}
