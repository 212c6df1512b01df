//! The bad-input cases of issue 8 (acceptance 2) that read the same on both transports, each a
//! function the stdio and websocket test files call from a test of its own. Every case checks
//! the documented answer (docs/protocol.md section 2: code, `id`, and the message where the protocol
//! gives it), then that the server answers the next valid request, then a clean exit with
//! nothing panicking.

use std::net::SocketAddr;
use std::time::Instant;

use serde_json::{Value, json};

use super::client::{self, Client, request};
use super::server::{AppServer, Exited, Launch};

/// Which transport a case runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    Stdio,
    WebSocket,
}

/// A server and one client connected to it.
pub(crate) struct Session {
    pub(crate) server: AppServer,
    pub(crate) client: Client,
    /// The websocket address (websocket sessions only).
    pub(crate) address: Option<SocketAddr>,
}

/// Starts `tandem app-server` on `transport` with `args` and connects a client.
pub(crate) async fn open(transport: Transport, test: &str, args: &[&str]) -> Session {
    let launch = Launch::new(test)
        .args(["app-server"])
        .args(args.iter().copied());
    match transport {
        Transport::Stdio => {
            let (server, client) = launch.stdio();
            Session {
                server,
                client: Client::Stdio(client),
                address: None,
            }
        }
        Transport::WebSocket => {
            let (server, address) = launch
                .args(["--listen", "ws://127.0.0.1:0"])
                .websocket()
                .await;
            let client = client::connect(address, &[]).await.expect("connect");
            Session {
                server,
                client: Client::Ws(client),
                address: Some(address),
            }
        }
    }
}

/// Ends the session the way its client would (stdin EOF; a websocket close, then SIGTERM)
/// and checks the exit: code 0 within 5 s, no panic, no process left behind.
pub(crate) async fn close(session: Session) -> Exited {
    let Session { server, client, .. } = session;
    match client {
        Client::Stdio(client) => {
            let since = Instant::now();
            // Keep reading stdout open until the exit: the server may still flush to it.
            let _stdout = client.close_stdin();
            server.finish(since).await
        }
        Client::Ws(client) => {
            client.close().await;
            server.terminate().await
        }
    }
}

/// Checks that `answer` is an error answer to `id` (JSON `null` for none) with `code`, and
/// returns its message.
pub(crate) fn assert_error(answer: &Value, id: Value, code: i64) -> String {
    assert_eq!(answer.get("id"), Some(&id), "id of {answer}");
    assert!(answer.get("result").is_none(), "not an error: {answer}");
    assert_eq!(answer["error"]["code"], code, "code of {answer}");
    answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no message in {answer}"))
        .to_owned()
}

/// A `thread/loaded/list` request padded with spaces to exactly `length` bytes.
pub(crate) fn padded_request(id: i64, length: usize) -> String {
    let mut text = json!({"id": id, "method": "thread/loaded/list", "params": {}}).to_string();
    assert!(text.len() <= length);
    text.insert_str(text.len() - 1, &" ".repeat(length - text.len()));
    text
}

pub(crate) async fn invalid_json(transport: Transport) {
    let mut session = open(transport, "invalid_json", &[]).await;
    session.client.initialize(false).await;
    session
        .client
        .send_text(r#"{"id": 1, "method": "thread/loaded/list""#)
        .await;
    let answer = session.client.recv().await;
    let message = assert_error(&answer, Value::Null, -32700);
    assert!(message.starts_with("Parse error: "), "{message}");
    session.client.assert_serves(2).await;
    close(session).await;
}

pub(crate) async fn json_array(transport: Transport) {
    let mut session = open(transport, "json_array", &[]).await;
    session.client.initialize(false).await;
    // A JSON-RPC batch, which the protocol does not have, and an empty array.
    for text in [r#"[{"id": 1, "method": "thread/loaded/list"}]"#, "[]"] {
        session.client.send_text(text).await;
        let answer = session.client.recv().await;
        let message = assert_error(&answer, Value::Null, -32600);
        assert!(message.starts_with("Invalid request"), "{message}");
    }
    session.client.assert_serves(2).await;
    close(session).await;
}

pub(crate) async fn number(transport: Transport) {
    let mut session = open(transport, "number", &[]).await;
    session.client.initialize(false).await;
    for text in ["42", "-1.5e3"] {
        session.client.send_text(text).await;
        let answer = session.client.recv().await;
        let message = assert_error(&answer, Value::Null, -32600);
        assert!(message.starts_with("Invalid request"), "{message}");
    }
    session.client.assert_serves(2).await;
    close(session).await;
}

pub(crate) async fn request_without_method(transport: Transport) {
    let mut session = open(transport, "request_without_method", &[]).await;
    session.client.initialize(false).await;
    // Its id is readable, so the answer carries it and the caller's pending call resolves.
    session
        .client
        .send(&json!({"jsonrpc": "2.0", "id": 4, "params": {}}))
        .await;
    let answer = session.client.recv().await;
    let message = assert_error(&answer, json!(4), -32600);
    assert!(message.starts_with("Invalid request"), "{message}");
    session.client.assert_serves(5).await;
    close(session).await;
}

pub(crate) async fn unknown_method(transport: Transport) {
    let mut session = open(transport, "unknown_method", &[]).await;
    session.client.initialize(false).await;
    let answer = session.client.call(5, "foo/bar", json!({})).await;
    let message = assert_error(&answer, json!(5), -32601);
    assert_eq!(message, "method not found: foo/bar");
    session.client.assert_serves(6).await;
    close(session).await;
}

pub(crate) async fn params_of_the_wrong_type(transport: Transport) {
    let mut session = open(transport, "params_of_the_wrong_type", &[]).await;
    session.client.initialize(false).await;
    let answer = session
        .client
        .call(6, "thread/read", json!({"threadId": 123}))
        .await;
    let message = assert_error(&answer, json!(6), -32600);
    assert_eq!(
        message,
        "Invalid request: invalid type: integer `123`, expected a string"
    );
    // Params that are not an object at all.
    let answer = session.client.call(7, "thread/read", json!([1, 2])).await;
    let message = assert_error(&answer, json!(7), -32600);
    assert!(message.starts_with("Invalid request: "), "{message}");
    session.client.assert_serves(8).await;
    close(session).await;
}

pub(crate) async fn invalid_utf8(transport: Transport) {
    let mut session = open(transport, "invalid_utf8", &[]).await;
    session.client.initialize(false).await;
    // A request whose string holds a byte that is never UTF-8.
    session
        .client
        .send_bytes(
            b"{\"id\": 9, \"method\": \"thread/loaded/list\", \"params\": {\"cursor\": \"\xff\"}}",
        )
        .await;
    let answer = session.client.recv().await;
    let message = assert_error(&answer, Value::Null, -32700);
    assert!(message.starts_with("Parse error: "), "{message}");
    session.client.assert_serves(10).await;
    close(session).await;
}

pub(crate) async fn response_to_an_unknown_server_request(transport: Transport) {
    let mut session = open(transport, "unknown_server_request", &[]).await;
    session.client.initialize(false).await;
    // The server sent no request at all, so neither names one of its requests.
    session.client.send(&json!({"id": 99, "result": {}})).await;
    session
        .client
        .send(&json!({"id": "nobody", "error": {"code": -1, "message": "no"}}))
        .await;
    // Logged and dropped: the very next message answers the next request.
    session.client.assert_serves(3).await;
    session
        .server
        .wait_for_stderr("the dropped answer logged", |line| {
            line.contains("answer to an unknown server request dropped") && line.contains("99")
        })
        .await;
    session
        .server
        .wait_for_stderr("the dropped error logged", |line| {
            line.contains("answer to an unknown server request dropped") && line.contains("nobody")
        })
        .await;
    close(session).await;
}

pub(crate) async fn request_before_initialize(transport: Transport) {
    let mut session = open(transport, "request_before_initialize", &[]).await;
    let answer = session
        .client
        .call(1, "thread/loaded/list", json!({}))
        .await;
    assert_eq!(assert_error(&answer, json!(1), -32600), "Not initialized");
    // An unknown method is still -32601.
    let answer = session.client.call(2, "foo/bar", json!({})).await;
    assert_eq!(
        assert_error(&answer, json!(2), -32601),
        "method not found: foo/bar"
    );
    session.client.initialize(false).await;
    session.client.assert_serves(3).await;
    close(session).await;
}

pub(crate) async fn second_initialize(transport: Transport) {
    let mut session = open(transport, "second_initialize", &[]).await;
    session.client.initialize(false).await;
    let answer = session
        .client
        .call(2, "initialize", client::initialize_params(true))
        .await;
    assert_eq!(
        assert_error(&answer, json!(2), -32600),
        "Already initialized"
    );
    session.client.assert_serves(3).await;
    // Capabilities are frozen at the first initialize: experimental methods stay gated.
    let answer = session
        .client
        .call(4, "process/kill", json!({"processHandle": "none"}))
        .await;
    assert_eq!(
        assert_error(&answer, json!(4), -32600),
        "process/kill requires experimentalApi capability"
    );
    close(session).await;
}

/// A request that stays in flight is a `process/writeStdin` larger than a pipe to a child that
/// never reads its stdin: the server answers it only once the write completes or the child is
/// gone, so the duplicate is read while the first is certainly unanswered.
pub(crate) async fn duplicate_in_flight_id(transport: Transport) {
    let mut session = open(transport, "duplicate_in_flight_id", &[]).await;
    session.client.initialize(true).await;
    let spawned = session
        .client
        .ok(
            1,
            "process/spawn",
            json!({
                "processHandle": "deaf",
                "command": ["sleep", "600"],
                "cwd": std::env::temp_dir(),
                "streamStdin": true,
                "streamStdoutStderr": true,
                "timeoutMs": null,
            }),
        )
        .await;
    assert_eq!(spawned, json!({}));
    // 4 MiB of zero bytes ("AAAA" is three of them): far more than a pipe holds.
    let delta = "AAAA".repeat(4 * 1024 * 1024 / 3);
    session
        .client
        .send(&request(
            7,
            "process/writeStdin",
            json!({"processHandle": "deaf", "deltaBase64": delta}),
        ))
        .await;
    session
        .client
        .send(&request(7, "thread/loaded/list", json!({})))
        .await;
    let answer = session.client.answer(7).await;
    assert_eq!(
        assert_error(&answer, json!(7), -32600),
        "duplicate request id: 7"
    );
    // The first request was not answered, and is once its child is gone.
    let killed = session
        .client
        .ok(8, "process/kill", json!({"processHandle": "deaf"}))
        .await;
    assert_eq!(killed, json!({}));
    let answer = session.client.answer(7).await;
    assert_eq!(
        assert_error(&answer, json!(7), -32600),
        r#"process "deaf" is no longer running"#
    );
    // Answered, the id is free again.
    session.client.assert_serves(7).await;
    close(session).await;
}

/// Not bad input, the boundary of the previous case: an id is free again as soon as its answer
/// has arrived. Clients that number every request 1 rely on it, so it must hold every time,
/// not only when the server's writer has caught up with the client.
pub(crate) async fn an_id_reused_after_its_answer(transport: Transport) {
    let mut session = open(transport, "id_reused_after_its_answer", &[]).await;
    session.client.initialize(false).await;
    for _ in 0..200 {
        session.client.assert_serves(1).await;
    }
    close(session).await;
}
