//! The wire codec's encoding side: every method's encode -> decode round trip in both
//! directions, the same JSON as the envelope types produce, and the exact bytes of a few
//! encodings (member order, `emittedAtMs`, the null id, no trailing newline).

mod common;

use common::*;
use serde_json::{Value, json};
use tandem_protocol::error_codes::{INVALID_PARAMS, PARSE_ERROR};
use tandem_protocol::wire::*;
use tandem_protocol::*;

fn encode_client(message: &ClientMessage) -> Vec<u8> {
    let mut out = Vec::new();
    encode_client_message(message, &mut out).unwrap();
    out
}

fn encode_server(message: &ServerMessage) -> Vec<u8> {
    let mut out = Vec::new();
    encode_server_message(message, &mut out).unwrap();
    out
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap()
}

/// Encodes, checks the bytes against the existing envelope serialization (so both paths put
/// the same JSON on the wire), and decodes back.
fn client_round_trip(message: ClientMessage, envelope: JSONRPCMessage) {
    let bytes = encode_client(&message);
    let as_value: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        as_value,
        serde_json::to_value(&envelope).unwrap(),
        "{}",
        text(&bytes)
    );
    assert_eq!(
        decode_client_message(&bytes).unwrap(),
        message,
        "{}",
        text(&bytes)
    );
}

fn server_round_trip(message: ServerMessage, envelope: JSONRPCMessage) {
    let bytes = encode_server(&message);
    let as_value: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        as_value,
        serde_json::to_value(&envelope).unwrap(),
        "{}",
        text(&bytes)
    );
    assert_eq!(
        decode_server_message(&bytes).unwrap(),
        message,
        "{}",
        text(&bytes)
    );
}

#[test]
fn every_client_method_round_trips() {
    let mut covered = Vec::new();
    for request in client_requests() {
        covered.push(request.method().to_owned());
        let envelope = JSONRPCMessage::Request(request.clone().into_jsonrpc().unwrap());
        client_round_trip(ClientMessage::Request(request), envelope);
    }
    assert_eq!(covered, ClientRequest::METHODS);

    let initialized = ClientNotification::Initialized(EmptyParams {});
    let envelope = JSONRPCMessage::Notification(initialized.clone().into_jsonrpc().unwrap());
    client_round_trip(ClientMessage::Notification(initialized), envelope);
    assert_eq!(ClientNotification::METHODS, ["initialized"]);

    let custom = ClientRequest::Custom {
        request_id: RequestId::from("ext"),
        method: s("tandem/ext"),
        params: json!([1, {"deep": [null, 2.5, "x"]}]),
    };
    let envelope = JSONRPCMessage::Request(custom.clone().into_jsonrpc().unwrap());
    client_round_trip(ClientMessage::Request(custom), envelope);
}

#[test]
fn every_server_method_and_notification_round_trips() {
    let mut covered = Vec::new();
    for request in server_requests() {
        covered.push(request.method().to_owned());
        let envelope = JSONRPCMessage::Request(request.clone().into_jsonrpc().unwrap());
        server_round_trip(ServerMessage::Request(request), envelope);
    }
    assert_eq!(covered, ServerRequest::METHODS);

    let mut covered = Vec::new();
    for notification in server_notifications() {
        covered.push(notification.method().to_owned());
        for emitted_at_ms in [None, Some(1_750_000_000_123), Some(-1)] {
            let mut wire = notification.clone().into_jsonrpc().unwrap();
            wire.emitted_at_ms = emitted_at_ms;
            server_round_trip(
                ServerMessage::Notification {
                    notification: notification.clone(),
                    emitted_at_ms,
                    cursor: None,
                },
                JSONRPCMessage::Notification(wire),
            );
        }
    }
    assert_eq!(covered, ServerNotification::METHODS);
}

#[test]
fn responses_and_errors_round_trip_in_both_directions() {
    let result = serde_json::to_value(thread_start_response()).unwrap();
    let error = JSONRPCErrorError {
        code: INVALID_PARAMS,
        message: s("attachmentType must not be empty"),
        data: Some(json!({"field": "attachmentType"})),
    };
    for id in [RequestId::Integer(0), RequestId::from("a-1")] {
        server_round_trip(
            ServerMessage::Response {
                id: id.clone(),
                result: result.clone(),
            },
            JSONRPCMessage::Response(JSONRPCResponse {
                id: id.clone(),
                result: result.clone(),
            }),
        );
        client_round_trip(
            ClientMessage::Response {
                id: id.clone(),
                result: json!({"decision": "acceptForSession"}),
            },
            JSONRPCMessage::Response(JSONRPCResponse {
                id: id.clone(),
                result: json!({"decision": "acceptForSession"}),
            }),
        );
        client_round_trip(
            ClientMessage::Error {
                id: id.clone(),
                error: error.clone(),
            },
            JSONRPCMessage::Error(JSONRPCError {
                id: Some(id.clone()),
                error: error.clone(),
            }),
        );
    }
    server_round_trip(
        ServerMessage::Error {
            id: None,
            error: error.clone(),
        },
        JSONRPCMessage::Error(JSONRPCError { id: None, error }),
    );
}

#[test]
fn exact_bytes_of_a_few_encodings() {
    let delta = ServerMessage::Notification {
        notification: process_output_delta(),
        emitted_at_ms: Some(1_750_000_000_123),
        cursor: None,
    };
    assert_eq!(
        text(&encode_server(&delta)),
        r#"{"method":"process/outputDelta","params":{"processHandle":"build","stream":"stderr","deltaBase64":"d2FybmluZwo=","capReached":true},"emittedAtMs":1750000000123}"#
    );
    let closed = ServerMessage::Notification {
        notification: thread_closed(),
        emitted_at_ms: None,
        cursor: None,
    };
    assert_eq!(
        text(&encode_server(&closed)),
        format!(r#"{{"method":"thread/closed","params":{{"threadId":"{THREAD_ID}"}}}}"#)
    );
    let parse_error = ServerMessage::Error {
        id: None,
        error: JSONRPCErrorError::new(PARSE_ERROR, "Parse error: x"),
    };
    assert_eq!(
        text(&encode_server(&parse_error)),
        r#"{"id":null,"error":{"code":-32700,"message":"Parse error: x"}}"#
    );
    let request = ClientMessage::Request(request::<client_methods::ThreadRead>(
        "r1",
        ThreadReadParams {
            thread_id: s("t"),
            include_turns: None,
        },
    ));
    assert_eq!(
        text(&encode_client(&request)),
        r#"{"id":"r1","method":"thread/read","params":{"threadId":"t"}}"#
    );
    let initialized = ClientMessage::Notification(ClientNotification::Initialized(EmptyParams {}));
    assert_eq!(
        text(&encode_client(&initialized)),
        r#"{"method":"initialized","params":{}}"#
    );
    let response = ServerMessage::Response {
        id: RequestId::Integer(3),
        result: json!({}),
    };
    assert_eq!(text(&encode_server(&response)), r#"{"id":3,"result":{}}"#);
    let answer = ClientMessage::Error {
        id: RequestId::Integer(0),
        error: JSONRPCErrorError::internal("tool crashed"),
    };
    assert_eq!(
        text(&encode_client(&answer)),
        r#"{"id":0,"error":{"code":-32603,"message":"tool crashed"}}"#
    );
}

#[test]
fn encoding_appends_to_the_buffer_without_a_newline() {
    let mut out = b"{\"id\":1,\"result\":{}}\n".to_vec();
    let before = out.clone();
    let message = ServerMessage::Response {
        id: RequestId::Integer(2),
        result: json!({"ok": true}),
    };
    encode_server_message(&message, &mut out).unwrap();
    assert_eq!(&out[..before.len()], &before[..]);
    assert_eq!(
        text(&out[before.len()..]),
        r#"{"id":2,"result":{"ok":true}}"#
    );
}

#[test]
fn a_decode_reply_becomes_the_server_error_to_send() {
    let Err(DecodeError::Reply(JSONRPCError { id, error })) = decode_client_message(b"{\"id\": 9}")
    else {
        panic!("a frame without a method must be answered")
    };
    let message = ServerMessage::from(JSONRPCError {
        id: id.clone(),
        error: error.clone(),
    });
    assert_eq!(message, ServerMessage::Error { id, error });
    let bytes = encode_server(&message);
    assert!(text(&bytes).starts_with(r#"{"id":9,"error":{"code":-32600,"#));
}

/// A raw request goes out with its params untouched, so the server, not the client, judges
/// them: good params decode to the typed request, bad ones get the server's -32600 with the
/// request's id.
#[test]
fn raw_requests_carry_their_params_as_given() {
    let raw = |id: i64, params: Value| JSONRPCRequest {
        id: RequestId::Integer(id),
        method: "thread/read".into(),
        params: Some(params),
    };
    let mut out = Vec::new();
    encode_raw_request(&raw(1, json!({"threadId": 123, "extra": [1]})), &mut out).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&out).unwrap(),
        json!({"id": 1, "method": "thread/read", "params": {"threadId": 123, "extra": [1]}})
    );
    let Err(DecodeError::Reply(JSONRPCError { id, error })) = decode_client_message(&out) else {
        panic!("params of the wrong type are answered")
    };
    assert_eq!(id, Some(RequestId::Integer(1)));
    assert_eq!(
        error.message,
        "Invalid request: invalid type: integer `123`, expected a string"
    );

    let mut out = Vec::new();
    encode_raw_request(&raw(2, json!({"threadId": "t"})), &mut out).unwrap();
    let Ok(ClientMessage::Request(ClientRequest::ThreadRead { request_id, params })) =
        decode_client_message(&out)
    else {
        panic!("good params decode: {}", text(&out))
    };
    assert_eq!(
        (request_id, params.thread_id.as_str()),
        (RequestId::Integer(2), "t")
    );

    let mut out = Vec::new();
    let without = JSONRPCRequest {
        params: None,
        ..raw(3, json!(null))
    };
    encode_raw_request(&without, &mut out).unwrap();
    assert_eq!(
        text(&out),
        r#"{"id":3,"method":"thread/read","params":null}"#
    );
}

/// Found by the property test: without serde_json's `float_roundtrip` the parser may land one
/// ulp off, so a relayed number changed and the re-encoded message decoded to another value.
#[test]
fn numbers_in_custom_params_and_results_survive_a_relay_exactly() {
    let frame = br#"{"id":1,"method":"tandem/ext","params":{"x":2.2146904488075857e-308,"y":[0.1,1e300,-5e-324]}}"#;
    let ClientMessage::Request(ClientRequest::Custom { params, .. }) =
        decode_client_message(frame).unwrap()
    else {
        panic!("a custom request")
    };
    assert_eq!(params["x"].as_f64(), Some(2.2146904488075857e-308));
    assert_eq!(params["y"][2].as_f64(), Some(-5e-324));

    let message = decode_client_message(frame).unwrap();
    let mut out = Vec::new();
    encode_client_message(&message, &mut out).unwrap();
    assert_eq!(decode_client_message(&out).unwrap(), message);
}

/// The generic shape of a notification on the wire, serialized the way every other
/// notification is: what the dedicated output delta path must reproduce byte for byte.
#[derive(serde::Serialize)]
struct GenericNotification<'a, P> {
    method: &'a str,
    params: &'a P,
    #[serde(rename = "emittedAtMs", skip_serializing_if = "Option::is_none")]
    emitted_at_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<EventCursor>,
}

#[test]
fn output_deltas_encode_byte_for_byte_as_the_generic_path() {
    let data: Vec<u8> = (0..70_000u32).map(|n| (n * 7 % 256) as u8).collect();
    let handles = ["exec", "", "a \"quoted\" \\ handle\n\u{1}\u{7f} é ☃"];
    let streams = [ProcessOutputStream::Stdout, ProcessOutputStream::Stderr];
    let times = [None, Some(0), Some(-1), Some(1_767_225_600_123)];
    let mut checked = 0;
    for handle in handles {
        for stream in streams {
            // Every remainder mod 3, and a length past the serde path's 3 KiB pieces; the
            // 64 KiB of a real delta once per handle (below), as unoptimized tests are slow.
            for len in [0, 1, 2, 3, 4, 3 * 1024 + 1] {
                for cap_reached in [false, true] {
                    let cursors = [
                        None,
                        Some(EventCursor {
                            epoch: "9f2c61d0a4be7731".to_owned(),
                            seq: 1042,
                        }),
                    ];
                    let stamps = times
                        .iter()
                        .flat_map(|time| cursors.iter().map(move |cursor| (*time, cursor.clone())));
                    for (emitted_at_ms, cursor) in stamps {
                        let delta = Bytes::copy_from_slice(&data[..len]);
                        let process = ProcessOutputDeltaNotification {
                            process_handle: handle.to_owned(),
                            stream,
                            delta: delta.clone(),
                            cap_reached,
                        };
                        let expected = serde_json::to_vec(&GenericNotification {
                            method: "process/outputDelta",
                            params: &process,
                            emitted_at_ms,
                            cursor: cursor.clone(),
                        })
                        .unwrap();
                        let message = ServerMessage::Notification {
                            notification: ServerNotification::ProcessOutputDelta(process),
                            emitted_at_ms,
                            cursor: cursor.clone(),
                        };
                        let bytes = encode_server(&message);
                        assert_eq!(text(&bytes), text(&expected));
                        assert_eq!(decode_server_message(&bytes).unwrap(), message);

                        let command = CommandExecOutputDeltaNotification {
                            process_id: handle.to_owned(),
                            stream,
                            delta,
                            cap_reached,
                        };
                        let expected = serde_json::to_vec(&GenericNotification {
                            method: "command/exec/outputDelta",
                            params: &command,
                            emitted_at_ms,
                            cursor: cursor.clone(),
                        })
                        .unwrap();
                        let message = ServerMessage::Notification {
                            notification: ServerNotification::CommandExecOutputDelta(command),
                            emitted_at_ms,
                            cursor,
                        };
                        let bytes = encode_server(&message);
                        assert_eq!(text(&bytes), text(&expected));
                        assert_eq!(decode_server_message(&bytes).unwrap(), message);
                        checked += 2;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 3 * 2 * 6 * 2 * 4 * 2 * 2);
    for handle in handles {
        let delta = ProcessOutputDeltaNotification {
            process_handle: handle.to_owned(),
            stream: ProcessOutputStream::Stdout,
            delta: Bytes::from(data.clone()),
            cap_reached: false,
        };
        let expected = serde_json::to_vec(&GenericNotification {
            method: "process/outputDelta",
            params: &delta,
            emitted_at_ms: Some(1),
            cursor: None,
        })
        .unwrap();
        let message = ServerMessage::Notification {
            notification: ServerNotification::ProcessOutputDelta(delta),
            emitted_at_ms: Some(1),
            cursor: None,
        };
        assert_eq!(text(&encode_server(&message)), text(&expected));
    }
}

#[test]
fn an_output_delta_appends_to_what_the_buffer_holds() {
    let mut out = b"kept".to_vec();
    let message = ServerMessage::Notification {
        notification: ServerNotification::ProcessOutputDelta(ProcessOutputDeltaNotification {
            process_handle: "p".to_owned(),
            stream: ProcessOutputStream::Stdout,
            delta: Bytes::from_static(b"hi"),
            cap_reached: false,
        }),
        emitted_at_ms: Some(5),
        cursor: None,
    };
    encode_server_message(&message, &mut out).unwrap();
    assert_eq!(
        text(&out),
        r#"kept{"method":"process/outputDelta","params":{"processHandle":"p","stream":"stdout","deltaBase64":"aGk=","capReached":false},"emittedAtMs":5}"#
    );
}
