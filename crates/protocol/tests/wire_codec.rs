//! The wire codec's decoding rules, against docs/protocol.md sections 1 and 2: which error (code and
//! id) answers each kind of malformed frame, what is only logged, and the tolerances real
//! clients rely on. Encoding and round trips are in `wire_encoding.rs`.

mod common;

use common::*;
use serde_json::{Value, json};
use tandem_protocol::error_codes::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR};
use tandem_protocol::wire::*;
use tandem_protocol::*;

fn frame(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

fn client(value: Value) -> Result<ClientMessage, DecodeError> {
    decode_client_message(&frame(&value))
}

fn server(value: Value) -> Result<ServerMessage, DecodeError> {
    decode_server_message(&frame(&value))
}

fn client_request(value: Value) -> ClientRequest {
    match client(value.clone()) {
        Ok(ClientMessage::Request(request)) => request,
        other => panic!("{value}: expected a request, got {other:?}"),
    }
}

/// The reply a client frame must get; panics on anything else.
fn reply_to(frame: &[u8]) -> JSONRPCError {
    match decode_client_message(frame) {
        Err(DecodeError::Reply(reply)) => reply,
        other => panic!(
            "{}: expected a reply, got {other:?}",
            String::from_utf8_lossy(frame)
        ),
    }
}

fn assert_reply(frame: &[u8], code: i64, id: Option<RequestId>, message_start: &str) {
    let reply = reply_to(frame);
    let text = String::from_utf8_lossy(frame);
    assert_eq!(reply.error.code, code, "{text}: {reply:?}");
    assert_eq!(reply.id, id, "{text}");
    assert!(
        reply.error.message.starts_with(message_start),
        "{text}: {:?} does not start with {message_start:?}",
        reply.error.message
    );
}

fn assert_ignored<T: std::fmt::Debug>(result: Result<T, DecodeError>, mentions: &str) {
    match result {
        Err(DecodeError::Ignore(reason)) => {
            assert!(
                reason.contains(mentions),
                "{reason:?} does not mention {mentions:?}"
            )
        }
        other => panic!("expected Ignore mentioning {mentions:?}, got {other:?}"),
    }
}

// ----- section 2: what is answered, with which code and id -----

#[test]
fn invalid_json_is_a_parse_error_with_null_id() {
    let frames: &[&[u8]] = &[
        b"{\"id\": 1, \"method\": ",
        b"",
        b"   ",
        b"{} trailing",
        b"{'id': 1}",
        // Invalid UTF-8 inside a string, and outside one.
        b"{\"id\": 1, \"method\": \"thread/\xff\"}",
        b"\xfe{\"id\": 1, \"method\": \"x\"}",
        // A lone surrogate escape is not a Unicode string either.
        b"{\"id\": 1, \"method\": \"\\ud800\"}",
    ];
    for frame in frames {
        assert_reply(frame, PARSE_ERROR, None, "Parse error: ");
        // A client cannot address an answer to a server frame it could not read.
        assert_ignored(decode_server_message(frame), "Parse error: ");
    }
}

#[test]
fn json_that_is_not_a_message_object_is_invalid_with_null_id() {
    for value in [
        json!([]),
        json!([{"id": 1, "method": "thread/read", "params": {"threadId": "t"}}]),
        json!(7),
        json!("thread/start"),
        json!(null),
        json!(true),
        json!({}),
        json!({"params": {"threadId": "t"}}),
        json!({"jsonrpc": "2.0"}),
    ] {
        assert_reply(
            &frame(&value),
            INVALID_REQUEST,
            None,
            "Invalid request: expected a JSON-RPC message object",
        );
    }
    let reply = reply_to(b"[1, 2]");
    assert_eq!(
        reply.error.message,
        "Invalid request: expected a JSON-RPC message object, got an array"
    );
}

#[test]
fn an_object_with_a_readable_id_but_no_method_is_answered_with_that_id() {
    for (value, id) in [
        (json!({"id": 5}), RequestId::Integer(5)),
        (
            json!({"id": "req-9", "params": {"threadId": "t"}}),
            RequestId::from("req-9"),
        ),
        (json!({"id": 0, "jsonrpc": "2.0"}), RequestId::Integer(0)),
    ] {
        assert_reply(
            &frame(&value),
            INVALID_REQUEST,
            Some(id),
            "Invalid request: expected a JSON-RPC message object with `method`",
        );
    }
    // An id that is not a request id cannot be echoed.
    for id in [json!(1.5), json!({}), json!([1]), json!(null)] {
        assert_reply(
            &frame(&json!({"id": id})),
            INVALID_REQUEST,
            None,
            "Invalid request: ",
        );
    }
}

/// What `ClientRequest::try_from` says about the same request, as the wire reply.
fn typed_conversion_reply(value: &Value) -> JSONRPCError {
    let wire: JSONRPCRequest = serde_json::from_value(value.clone()).unwrap();
    let id = wire.id.clone();
    let error = ClientRequest::try_from(wire).expect_err("params must not decode");
    JSONRPCError {
        id: Some(id),
        error,
    }
}

#[test]
fn params_that_do_not_decode_are_answered_exactly_as_the_typed_conversion_does() {
    for value in [
        json!({"id": 1, "method": "thread/read", "params": {}}),
        json!({"id": "r", "method": "thread/read", "params": {"threadId": 123}}),
        json!({"id": 0, "method": "thread/fork", "params": null}),
        json!({"id": 2, "method": "turn/start", "params": {"threadId": "t", "input": [{"type": "video"}]}}),
        json!({"id": 3, "method": "thread/start", "params": [1, 2]}),
        json!({"id": 4, "method": "initialize", "params": "hello"}),
        json!({"id": 5, "method": "process/resizePty", "params": {"processHandle": "h", "size": {"rows": 70000, "cols": 1}}}),
    ] {
        let expected = typed_conversion_reply(&value);
        assert_eq!(expected.error.code, INVALID_REQUEST, "{value}");
        assert!(expected.error.message.starts_with("Invalid request: "));
        assert_eq!(reply_to(&frame(&value)), expected, "{value}");
    }
    assert_eq!(
        reply_to(&frame(
            &json!({"id": 1, "method": "thread/read", "params": {}})
        ))
        .error
        .message,
        "Invalid request: missing field `threadId`"
    );
}

#[test]
fn bad_base64_is_invalid_params_with_the_request_id() {
    let value = json!({"id": 8, "method": "process/writeStdin",
                       "params": {"processHandle": "p", "deltaBase64": "not base64!"}});
    let reply = reply_to(&frame(&value));
    assert_eq!(reply, typed_conversion_reply(&value));
    assert_eq!(reply.id, Some(RequestId::Integer(8)));
    assert_eq!(reply.error.code, INVALID_PARAMS);
    assert!(reply.error.message.starts_with("invalid deltaBase64: "));
}

#[test]
fn a_request_id_that_is_neither_integer_nor_string_is_invalid_with_null_id() {
    for id in [
        json!(1.5),
        json!({}),
        json!([7]),
        json!(null),
        json!(true),
        json!(u64::MAX),
    ] {
        let value = json!({"id": id, "method": "thread/read", "params": {"threadId": "t"}});
        assert_reply(
            &frame(&value),
            INVALID_REQUEST,
            None,
            "Invalid request: `id` must be an integer or a string",
        );
        // The same from a server: nothing the client could address its answer to.
        assert_ignored(server(value), "`id` must be an integer or a string");
    }
}

#[test]
fn a_method_that_is_not_a_string_is_invalid_with_the_request_id() {
    assert_reply(
        &frame(&json!({"id": 3, "method": 7})),
        INVALID_REQUEST,
        Some(RequestId::Integer(3)),
        "Invalid request: `method` must be a string, got the number 7",
    );
    assert_reply(
        &frame(&json!({"id": "n", "method": null})),
        INVALID_REQUEST,
        Some(RequestId::from("n")),
        "Invalid request: `method` must be a string, got null",
    );
}

#[test]
fn jsonrpc_member_may_be_absent_or_2_0_and_nothing_else() {
    let expected = request::<client_methods::ThreadRead>(
        1,
        ThreadReadParams {
            thread_id: s("t"),
            include_turns: None,
        },
    );
    for value in [
        json!({"id": 1, "method": "thread/read", "params": {"threadId": "t"}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "thread/read", "params": {"threadId": "t"}}),
    ] {
        assert_eq!(client_request(value), expected);
    }
    for version in [json!("1.0"), json!(2.0), json!(null)] {
        assert_reply(
            &frame(
                &json!({"jsonrpc": version, "id": "v", "method": "thread/read",
                           "params": {"threadId": "t"}}),
            ),
            INVALID_REQUEST,
            Some(RequestId::from("v")),
            "Invalid request: unsupported jsonrpc version",
        );
    }
    // Without a readable id the answer goes to the null id.
    assert_reply(
        &frame(&json!({"jsonrpc": "1.0", "id": 0.5, "method": "thread/read"})),
        INVALID_REQUEST,
        None,
        "Invalid request: ",
    );
    assert_reply(
        &frame(&json!({"jsonrpc": "1.0", "id": 4})),
        INVALID_REQUEST,
        Some(RequestId::Integer(4)),
        "Invalid request: unsupported jsonrpc version",
    );
    // Notifications and replies are never answered, whatever their version.
    assert_ignored(
        client(json!({"jsonrpc": "1.0", "method": "initialized"})),
        "unsupported jsonrpc version",
    );
    assert_ignored(
        client(json!({"jsonrpc": "1.0", "id": 2, "result": {}})),
        "unsupported jsonrpc version",
    );
    assert_ignored(
        client(json!({"jsonrpc": "3", "id": 2, "error": {"code": 1, "message": "m"}})),
        "unsupported jsonrpc version",
    );
}

// ----- section 2: what is only logged -----

#[test]
fn notifications_that_do_not_decode_are_ignored() {
    assert_ignored(
        server(json!({"method": "thread/closed", "params": {}})),
        "malformed `thread/closed` notification: Invalid request: missing field `threadId`",
    );
    assert_ignored(
        client(json!({"method": "initialized", "params": 5})),
        "malformed `initialized` notification",
    );
    assert_ignored(
        client(json!({"method": ["initialized"]})),
        "notification `method` must be a string",
    );
    assert_ignored(
        server(
            json!({"method": "thread/closed", "params": {"threadId": "t"},
                      "emittedAtMs": "yesterday"}),
        ),
        "`emittedAtMs` must be an integer",
    );
}

#[test]
fn client_errors_without_a_usable_id_are_ignored() {
    let error = json!({"code": -32603, "message": "boom"});
    assert_ignored(client(json!({"id": null, "error": error})), "without an id");
    assert_ignored(client(json!({"error": error})), "without an id");
    assert_ignored(client(json!({"id": 1.5, "error": error})), "not an integer");
    assert_ignored(client(json!({"id": {}, "error": error})), "not an integer");
    assert_ignored(server(json!({"id": [], "error": error})), "not an integer");
    assert_ignored(
        client(json!({"id": 3, "error": {"code": "bad", "message": "m"}})),
        "error reply to 3: malformed `error` member",
    );
    assert_ignored(
        server(json!({"id": "s", "error": "just a string"})),
        "error reply to \"s\": malformed `error` member",
    );
}

#[test]
fn responses_without_a_usable_id_are_ignored() {
    for id in [json!(null), json!(1.5), json!({}), json!(u64::MAX)] {
        assert_ignored(client(json!({"id": id, "result": {}})), "response without");
        assert_ignored(server(json!({"id": id, "result": {}})), "response without");
    }
    assert_ignored(client(json!({"result": {"ok": true}})), "response without");
}

#[test]
fn a_server_error_may_carry_a_null_or_missing_id() {
    let error = JSONRPCErrorError::new(PARSE_ERROR, "Parse error: x");
    for value in [
        json!({"id": null, "error": {"code": -32700, "message": "Parse error: x"}}),
        json!({"error": {"code": -32700, "message": "Parse error: x", "data": null}}),
    ] {
        assert_eq!(
            server(value).unwrap(),
            ServerMessage::Error {
                id: None,
                error: error.clone()
            }
        );
    }
}

#[test]
fn server_requests_with_bad_params_are_answered_by_the_client() {
    let reply = match server(json!({"id": 4, "method": "item/tool/call", "params": {}})) {
        Err(DecodeError::Reply(reply)) => reply,
        other => panic!("expected a reply, got {other:?}"),
    };
    assert_eq!(reply.id, Some(RequestId::Integer(4)));
    assert_eq!(reply.error.code, INVALID_REQUEST);
    assert_eq!(
        reply.error.message,
        "Invalid request: missing field `threadId`"
    );
}

#[test]
fn shape_is_decided_by_method_then_error_then_result() {
    assert!(matches!(
        client(json!({"id": 1, "method": "x", "result": {}, "error": {}})),
        Ok(ClientMessage::Request(ClientRequest::Custom { .. }))
    ));
    assert!(matches!(
        client(json!({"id": 1, "result": {}, "error": {"code": 1, "message": "m"}})),
        Ok(ClientMessage::Error { .. })
    ));
    assert_eq!(
        client(json!({"id": 1, "result": null})).unwrap(),
        ClientMessage::Response {
            id: RequestId::Integer(1),
            result: Value::Null
        }
    );
}

// ----- section 1: tolerance of what real clients send -----

#[test]
fn request_ids_zero_negative_large_and_strings_are_kept_exactly() {
    for id in [
        RequestId::Integer(0),
        RequestId::Integer(-1),
        RequestId::Integer(i64::MIN),
        RequestId::Integer(i64::MAX),
        RequestId::from("1"),
        RequestId::from(""),
        RequestId::from("ünïcode id"),
    ] {
        let decoded = client_request(json!({"id": id, "method": "thread/closedSoon"}));
        assert_eq!(decoded.id(), &id);
    }
    let one = client_request(json!({"id": 1, "method": "m"}));
    let one_text = client_request(json!({"id": "1", "method": "m"}));
    assert_ne!(one.id(), one_text.id());
}

#[test]
fn omitted_and_null_params_count_as_empty() {
    for params in [None, Some(Value::Null), Some(json!({}))] {
        let mut value = json!({"id": 1, "method": "thread/start"});
        let mut notification = json!({"method": "initialized"});
        if let Some(params) = params {
            value["params"] = params.clone();
            notification["params"] = params;
        }
        assert_eq!(
            client_request(value),
            request::<client_methods::ThreadStart>(1, ThreadStartParams::default())
        );
        assert_eq!(
            client(notification).unwrap(),
            ClientMessage::Notification(ClientNotification::Initialized(EmptyParams {}))
        );
    }
    let custom = client_request(json!({"id": 2, "method": "tandem/ext", "params": null}));
    assert_eq!(
        custom,
        ClientRequest::Custom {
            request_id: RequestId::Integer(2),
            method: s("tandem/ext"),
            params: json!({})
        }
    );
}

#[test]
fn initialize_tolerates_null_capabilities_and_extra_members() {
    let decoded = client_request(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"clientInfo": {"name": "ext", "title": null, "version": "1", "vendor": "x"},
                   "capabilities": null, "protocolVersion": "2025-06-18"}
    }));
    let expected = InitializeParams {
        client_info: ClientInfo {
            name: s("ext"),
            title: None,
            version: s("1"),
        },
        capabilities: None,
    };
    assert_eq!(
        decoded,
        request::<client_methods::Initialize>(0, expected.clone())
    );

    let decoded = client_request(json!({
        "id": 0, "method": "initialize",
        "params": {"clientInfo": {"name": "ext", "version": "1"},
                   "capabilities": {"experimentalApi": null, "optOutNotificationMethods": null,
                                    "elicitation": {}}}
    }));
    let ClientRequest::Initialize { params, .. } = decoded else {
        panic!("not initialize")
    };
    assert_eq!(params.capabilities, Some(InitializeCapabilities::default()));
}

/// Every optional member of every client method sent as explicit `null`.
#[test]
fn explicit_null_for_every_optional_member_decodes() {
    use client_methods as m;
    let cases = [
        (
            json!({"id": 1, "method": "thread/start", "params": {
                "cwd": null, "model": null, "approvalPolicy": null, "name": null,
                "config": null, "ephemeral": null, "dynamicTools": null, "sandbox": null}}),
            request::<m::ThreadStart>(
                1,
                ThreadStartParams {
                    overrides: ThreadOverrides {
                        cwd: Some(None),
                        model: Some(None),
                        approval_policy: Some(None),
                        sandbox: Some(None),
                        name: Some(None),
                        config: Some(None),
                    },
                    ephemeral: None,
                    dynamic_tools: None,
                    idempotency_key: None,
                },
            ),
        ),
        (
            json!({"id": 2, "method": "thread/start", "params": {"dynamicTools": [
                {"type": null, "name": "n", "description": "d", "inputSchema": {},
                 "deferLoading": null}]}}),
            request::<m::ThreadStart>(
                2,
                ThreadStartParams {
                    dynamic_tools: Some(vec![DynamicToolSpec {
                        kind: DynamicToolType::Function,
                        name: s("n"),
                        description: s("d"),
                        input_schema: json!({}),
                        defer_loading: None,
                    }]),
                    ..ThreadStartParams::default()
                },
            ),
        ),
        (
            json!({"id": 3, "method": "config/read", "params": {"cwd": null, "includeLayers": null}}),
            request::<m::ConfigRead>(3, ConfigReadParams::default()),
        ),
        (
            json!({"id": 4, "method": "thread/resume", "params": {"threadId": "t", "cwd": null,
                   "model": null, "approvalPolicy": null, "name": null, "config": null,
                   "excludeTurns": null}}),
            request::<m::ThreadResume>(
                4,
                ThreadResumeParams {
                    thread_id: s("t"),
                    overrides: ThreadOverrides {
                        cwd: Some(None),
                        model: Some(None),
                        approval_policy: Some(None),
                        sandbox: None,
                        name: Some(None),
                        config: Some(None),
                    },
                    exclude_turns: None,
                    initial_turns_page: None,
                    cursor: None,
                },
            ),
        ),
        (
            json!({"id": 5, "method": "thread/read", "params": {"threadId": "t", "includeTurns": null}}),
            request::<m::ThreadRead>(
                5,
                ThreadReadParams {
                    thread_id: s("t"),
                    include_turns: None,
                },
            ),
        ),
        (
            json!({"id": 6, "method": "thread/list", "params": {"cursor": null, "limit": null,
                   "sortDirection": null, "sourceKinds": null, "cwd": null, "searchTerm": null,
                   "archived": null, "parentThreadId": null, "ancestorThreadId": null}}),
            request::<m::ThreadList>(6, ThreadListParams::default()),
        ),
        (
            json!({"id": 7, "method": "thread/loaded/list", "params": {"cursor": null, "limit": null}}),
            request::<m::ThreadLoadedList>(7, ThreadLoadedListParams::default()),
        ),
        (
            json!({"id": 8, "method": "thread/turns/list", "params": {"threadId": "t",
                   "limit": null, "sortDirection": null, "cursor": null, "itemsView": null}}),
            request::<m::ThreadTurnsList>(
                8,
                ThreadTurnsListParams {
                    thread_id: s("t"),
                    ..ThreadTurnsListParams::default()
                },
            ),
        ),
        (
            json!({"id": 9, "method": "thread/fork", "params": {"threadId": "t", "cwd": null,
                   "model": null, "approvalPolicy": null, "name": null, "config": null,
                   "ephemeral": null, "excludeTurns": null, "lastTurnId": null}}),
            request::<m::ThreadFork>(
                9,
                ThreadForkParams {
                    thread_id: s("t"),
                    overrides: ThreadOverrides {
                        cwd: Some(None),
                        model: Some(None),
                        approval_policy: Some(None),
                        sandbox: None,
                        name: Some(None),
                        config: Some(None),
                    },
                    ..ThreadForkParams::default()
                },
            ),
        ),
        (
            json!({"id": 10, "method": "turn/start", "params": {"threadId": "t",
                   "input": [{"type": "text", "text": "hi", "text_elements": null}],
                   "clientUserMessageId": null, "approvalPolicy": null, "model": null,
                   "sandboxPolicy": null, "effort": null, "summary": null}}),
            request::<m::TurnStart>(
                10,
                TurnStartParams {
                    thread_id: s("t"),
                    input: vec![UserInput::text("hi")],
                    client_user_message_id: None,
                    approval_policy: Some(None),
                    model: Some(None),
                    sandbox_policy: Some(None),
                    effort: Some(None),
                    summary: Some(None),
                },
            ),
        ),
        (
            json!({"id": 11, "method": "turn/steer", "params": {"threadId": "t",
                   "expectedTurnId": "u", "input": [], "clientUserMessageId": null}}),
            request::<m::TurnSteer>(
                11,
                TurnSteerParams {
                    thread_id: s("t"),
                    expected_turn_id: s("u"),
                    ..TurnSteerParams::default()
                },
            ),
        ),
        (
            json!({"id": 12, "method": "process/spawn", "params": {"processHandle": "h",
                   "command": ["ls"], "cwd": null, "tty": null, "streamStdin": null,
                   "streamStdoutStderr": null, "outputBytesCap": null, "timeoutMs": null,
                   "env": null, "size": null}}),
            request::<m::ProcessSpawn>(
                12,
                ProcessSpawnParams {
                    process_handle: s("h"),
                    command: vec![s("ls")],
                    output_bytes_cap: Some(None),
                    timeout_ms: Some(None),
                    ..ProcessSpawnParams::default()
                },
            ),
        ),
        (
            json!({"id": 13, "method": "process/writeStdin", "params": {"processHandle": "h",
                   "deltaBase64": null, "closeStdin": null}}),
            request::<m::ProcessWriteStdin>(
                13,
                ProcessWriteStdinParams {
                    process_handle: s("h"),
                    ..ProcessWriteStdinParams::default()
                },
            ),
        ),
    ];
    for (value, expected) in cases {
        assert_eq!(client_request(value.clone()), expected, "{value}");
    }
}

#[test]
fn unknown_members_are_ignored_at_every_level() {
    assert_eq!(
        client_request(
            json!({"id": 1, "method": "thread/read", "trace": {"span": 3},
                              "params": {"threadId": "t", "future": [1]}})
        ),
        request::<client_methods::ThreadRead>(
            1,
            ThreadReadParams {
                thread_id: s("t"),
                include_turns: None,
            }
        )
    );
    assert_eq!(
        client(json!({"id": 2, "result": {"decision": "accept"}, "meta": 1})).unwrap(),
        ClientMessage::Response {
            id: RequestId::Integer(2),
            result: json!({"decision": "accept"})
        }
    );
    assert_eq!(
        client(json!({"id": 3, "error": {"code": -32603, "message": "m", "hint": "x"}})).unwrap(),
        ClientMessage::Error {
            id: RequestId::Integer(3),
            error: JSONRPCErrorError::internal("m")
        }
    );
    assert_eq!(
        client(json!({"method": "initialized", "params": {"x": 1}, "emittedAtMs": "n/a"})).unwrap(),
        ClientMessage::Notification(ClientNotification::Initialized(EmptyParams {}))
    );
    let ServerMessage::Notification {
        notification,
        emitted_at_ms,
        cursor: None,
    } = server(
        json!({"method": "process/exited", "emittedAtMs": null, "params": {
        "processHandle": "h", "exitCode": 0, "stdout": "", "stdoutCapReached": false,
        "stderr": "", "stderrCapReached": false, "outputDrainTimedOut": null, "pid": 7}}),
    )
    .unwrap()
    else {
        panic!("not a notification")
    };
    assert_eq!(emitted_at_ms, None);
    assert!(matches!(
        notification,
        ServerNotification::ProcessExited(ProcessExitedNotification {
            output_drain_timed_out: false,
            ..
        })
    ));
}

/// s-seq: a stream notification's `cursor` is a top-level member beside `emittedAtMs`; it
/// round-trips, is omitted when absent, and one that does not decode costs the cursor only.
#[test]
fn notification_cursor_is_a_top_level_member() {
    let cursor = EventCursor {
        epoch: s("e1"),
        seq: 42,
    };
    let message = ServerMessage::Notification {
        notification: ServerNotification::ThreadStatusChanged(ThreadStatusChangedNotification {
            thread_id: s("t"),
            status: ThreadStatus::Idle,
        }),
        emitted_at_ms: Some(1),
        cursor: Some(cursor.clone()),
    };
    let mut out = Vec::new();
    encode_server_message(&message, &mut out).unwrap();
    let value: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(value["cursor"], json!({"epoch": "e1", "seq": 42}));
    assert!(
        value["params"].get("cursor").is_none(),
        "params are unchanged: {value}"
    );
    assert_eq!(server(value.clone()).unwrap(), message);

    let ServerMessage::Notification { cursor, .. } = server(
        json!({"method": "thread/status/changed", "cursor": "garbage",
                      "params": {"threadId": "t", "status": {"type": "idle"}}}),
    )
    .unwrap() else {
        panic!("not a notification")
    };
    assert_eq!(cursor, None);
}
