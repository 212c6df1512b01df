//! Every error code of docs/protocol.md section 2, each with the message the table documents, and
//! the connection still serving afterwards.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::session::{Config, Session, Transport, client_info};

/// How many requests the overload scenario sends while the client is not reading: more than
/// the one-slot queues and the processor task can hold, whichever lane holds them up.
const BURST: usize = 16;

/// How long the overload scenario lets a flooding child fill the connection's pipeline.
const FLOOD_FILL: Duration = Duration::from_millis(500);

/// -32600 (params that do not decode, preconditions, a duplicate in-flight id), -32601,
/// -32602 and -32603, on one connection; an answer to an unknown server request and an
/// unknown notification are dropped without a reply.
pub(crate) async fn error_codes_and_messages(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(true).await;

    // -32600: params that do not decode, with the request's own id.
    expect_error(
        &mut s,
        "thread/read",
        json!({}),
        -32600,
        "Invalid request: missing field `threadId`",
    )
    .await;
    expect_error(
        &mut s,
        "thread/read",
        json!({"threadId": 123}),
        -32600,
        "Invalid request: invalid type: integer `123`, expected a string",
    )
    .await;
    // -32600: failed preconditions.
    start_thread(&mut s, THREAD, "never").await;
    expect_error(
        &mut s,
        "turn/steer",
        json!({"threadId": THREAD, "expectedTurnId": "t", "input": [{"type": "text", "text": "x"}]}),
        -32600,
        "no active turn to steer",
    )
    .await;
    expect_error(
        &mut s,
        "process/spawn",
        json!({"processHandle": "p", "command": [], "cwd": "<home>"}),
        -32600,
        "command must not be empty",
    )
    .await;

    // -32601.
    expect_error(
        &mut s,
        "foo/bar",
        json!({}),
        -32601,
        "method not found: foo/bar",
    )
    .await;

    // -32602: the shape is right, a value is not.
    expect_error(
        &mut s,
        "process/spawn",
        json!({
            "processHandle": "p", "command": ["true"], "cwd": "<home>",
            "size": {"rows": 24, "cols": 80},
        }),
        -32602,
        "process/spawn size requires tty: true",
    )
    .await;
    expect_error(
        &mut s,
        "turn/start",
        json!({"threadId": THREAD, "input": [{"type": "audio", "url": "https://example.invalid/x.mp3"}]}),
        -32602,
        "unsupported input type: audio",
    )
    .await;
    expect_error(
        &mut s,
        "thread/attachment/add",
        json!({"threadId": THREAD, "attachmentType": "", "identityKey": "k", "payload": null}),
        -32602,
        "attachmentType must not be empty",
    )
    .await;

    // -32603.
    expect_error(
        &mut s,
        "process/spawn",
        json!({"processHandle": "p", "command": ["/nonexistent/tandem-conformance"], "cwd": "<home>"}),
        -32603,
        "failed to spawn process: No such file or directory (os error 2)",
    )
    .await;

    // A duplicate in-flight id: a stdin write to a child that never reads stays in flight
    // (the pipe is full), and a second request with its id is refused; the first one is
    // unaffected and answered when the child dies.
    expect_result(
        &mut s,
        "process/spawn",
        json!({
            "processHandle": "stuck", "command": ["sleep", "30"], "cwd": "<home>",
            "streamStdin": true, "streamStdoutStderr": true,
        }),
        json!({}),
    )
    .await;
    let stuck = s.fresh_id();
    let megabyte = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        vec![b'x'; 1024 * 1024],
    );
    s.send(json!({
        "id": stuck, "method": "process/writeStdin",
        "params": {"processHandle": "stuck", "deltaBase64": megabyte},
    }))
    .await;
    s.send(json!({"id": stuck, "method": "config/read", "params": {}}))
        .await;
    let duplicate = s.reply(stuck).await;
    assert_json(
        &s,
        &duplicate,
        &json!({"id": stuck, "error": rpc_error(-32600, &format!("duplicate request id: {stuck}"))}),
    );
    expect_result(
        &mut s,
        "process/kill",
        json!({"processHandle": "stuck"}),
        json!({}),
    )
    .await;
    let first = s.reply(stuck).await;
    assert_json(
        &s,
        &first,
        &json!({"id": stuck, "error": rpc_error(-32600, "process \"stuck\" is no longer running")}),
    );
    expect_sequence(
        &mut s,
        &[note(
            "process/exited",
            json!({
                "processHandle": "stuck", "exitCode": 137, "stdout": "", "stderr": "",
                "stdoutCapReached": false, "stderrCapReached": false,
                "outputDrainTimedOut": false,
            }),
        )],
    )
    .await;

    // Dropped without an answer: a reply to a server request that does not exist, and a
    // notification nobody knows. The next request is answered as usual.
    s.send(json!({"id": 4242, "result": {"decision": "accept"}}))
        .await;
    s.send(json!({"id": 4243, "error": {"code": -32603, "message": "client failure"}}))
        .await;
    s.notify("foo/happened", json!({"x": 1})).await;
    expect_result(
        &mut s,
        "thread/loaded/list",
        json!({}),
        json!({"data": [THREAD], "nextCursor": null}),
    )
    .await;
    s.close().await;
}

/// Frames that are not JSON (-32700) or not a message (-32600) are answered with a `null` id,
/// or with their own id where one can be read; malformed notifications are dropped; the
/// connection keeps serving throughout.
pub(crate) async fn malformed_frames_are_answered(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    let cases: [(&[u8], Value); 7] = [
        (br#"{"id": 1, "method": "thread/loaded/list""#, json!(null)),
        (b"[1, 2]", json!(null)),
        (b"42", json!(null)),
        (b"\"initialize\"", json!(null)),
        (br#"{"id": 3, "params": {}}"#, json!(3)),
        (br#"{"id": 4, "method": 5}"#, json!(4)),
        (
            br#"{"jsonrpc": "1.0", "id": 5, "method": "thread/loaded/list"}"#,
            json!(5),
        ),
    ];
    let mut answers = Vec::new();
    for (frame, id) in cases {
        s.send_raw(frame).await;
        answers.push(s.reply(id).await);
        // Dropped without an answer: the reply above would otherwise be followed by one.
        s.send_raw(br#"{"method": 5}"#).await;
        s.send_raw(br#"{"method": "initialized", "params": 7}"#)
            .await;
        expect_serving_on(&mut s).await;
    }
    let answer =
        |id: Value, code: i64, message: &str| json!({"id": id, "error": rpc_error(code, message)});
    let expected = [
        answer(
            json!(null),
            -32700,
            "Parse error: EOF while parsing an object at line 1 column 40",
        ),
        answer(
            json!(null),
            -32600,
            "Invalid request: expected a JSON-RPC message object, got an array",
        ),
        answer(
            json!(null),
            -32600,
            "Invalid request: expected a JSON-RPC message object, got the number 42",
        ),
        answer(
            json!(null),
            -32600,
            "Invalid request: expected a JSON-RPC message object, got a string",
        ),
        answer(
            json!(3),
            -32600,
            "Invalid request: expected a JSON-RPC message object with `method`, `result` or `error`",
        ),
        answer(
            json!(4),
            -32600,
            "Invalid request: `method` must be a string, got the number 5",
        ),
        answer(
            json!(5),
            -32600,
            "Invalid request: unsupported jsonrpc version \"1.0\", expected \"2.0\" or none",
        ),
    ];
    for (got, want) in answers.iter().zip(&expected) {
        assert_json(&s, got, want);
    }
    s.close().await;
}

/// A cheap request answered as usual.
async fn expect_serving_on(s: &mut Session) {
    expect_result(
        s,
        "thread/loaded/list",
        json!({}),
        json!({"data": [], "nextCursor": null}),
    )
    .await;
}

/// -32001 while the connection's writer is full: with one-slot queues and a client that has
/// stopped reading while a child floods it, the processor task soon waits to hand over an
/// answer (an ordinary one where the writer applies backpressure, a process-control one on
/// the reply lane where a stalled writer holds it up), and the requests behind it meet a full
/// processor queue. Once the client reads again every request has exactly one answer, the
/// overloaded ones -32001 `request queue is full` (openai/codex #19608 drops these).
pub(crate) async fn overload_is_answered_while_the_writer_is_full(transport: Transport) {
    let config = Config {
        channel_capacity: Some(1),
        ..Config::default()
    };
    let mut s = Session::open_with(transport, config).await;
    // With one-slot queues anything may meet a full one (the connection's own bookkeeping
    // sits in the processor queue too), so the steps around the burst retry on -32001.
    let initialize =
        json!({"clientInfo": client_info(), "capabilities": {"experimentalApi": true}});
    let reply = s.reply_when_not_overloaded("initialize", initialize).await;
    if reply.get("result").is_none() {
        s.fail(format!("initialize failed: {reply}"));
    }
    s.notify("initialized", json!({})).await;
    let spawn = json!({
        "processHandle": "flood", "command": ["yes", "tandem conformance"],
        "cwd": "<home>", "streamStdoutStderr": true, "outputBytesCap": null, "timeoutMs": null,
    });
    let reply = s.reply_when_not_overloaded("process/spawn", spawn).await;
    assert_json(&s, &reply["result"], &json!({}));

    s.pause();
    // Nothing observable says when the flood has filled the pipeline, short of reading it;
    // a child printing as fast as it can needs a few milliseconds for the handful of deltas
    // that takes (more over a websocket, whose socket buffers hold more).
    tokio::time::sleep(FLOOD_FILL).await;
    let mut burst = Vec::with_capacity(BURST);
    for index in 0..BURST {
        let id = if index % 2 == 0 {
            s.request("process/kill", json!({"processHandle": "ghost"}))
                .await
        } else {
            s.request("foo/bar", json!({})).await
        };
        burst.push((id, index % 2 == 0));
    }
    s.resume();

    let overloaded = rpc_error(-32001, "request queue is full");
    let mut answers: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, is_kill) in &burst {
        let reply = s.reply(*id).await;
        let served = if *is_kill {
            rpc_error(-32600, "no active process for process handle \"ghost\"")
        } else {
            rpc_error(-32601, "method not found: foo/bar")
        };
        let kind = if reply == json!({"id": id, "error": served}) {
            "answered"
        } else if reply == json!({"id": id, "error": overloaded}) {
            "overloaded"
        } else {
            s.fail(format!("neither its answer nor -32001: {reply}"))
        };
        *answers.entry(kind).or_default() += 1;
    }
    if !answers.contains_key("overloaded") {
        s.fail(format!("no request met the full queue: {answers:?}"));
    }

    let reply = s
        .reply_when_not_overloaded("process/kill", json!({"processHandle": "flood"}))
        .await;
    assert_json(&s, &reply["result"], &json!({}));
    let (output, exited) = s.read_until("process/exited").await;
    if let Some(other) = output
        .iter()
        .find(|m| m["method"] != "process/outputDelta" || m["params"]["processHandle"] != "flood")
    {
        s.fail(format!("only the flood's output was due, got {other}"));
    }
    assert_json(
        &s,
        &exited["params"],
        &json!({
            "processHandle": "flood", "exitCode": 137, "stdout": "", "stderr": "",
            "stdoutCapReached": false, "stderrCapReached": false, "outputDrainTimedOut": false,
        }),
    );
    // A retry is served normally.
    let reply = s.reply_when_not_overloaded("foo/bar", json!({})).await;
    assert_json(
        &s,
        &reply["error"],
        &rpc_error(-32601, "method not found: foo/bar"),
    );
    s.close().await;
}
