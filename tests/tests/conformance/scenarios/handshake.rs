//! The handshake of docs/protocol.md section 3: what is answered before `initialize`, a failed
//! `initialize` retried, a second one refused, the `initialized` notification in each form a
//! client may send it (or not at all), notification opt-outs and experimental gating.

use serde_json::{Value, json};

use super::*;
use crate::session::{Session, Transport, client_info};

/// The `initialize` result for this suite's client (`userAgent` is normalized).
fn initialize_result() -> Value {
    json!({
        "userAgent": "<userAgent>", "platformFamily": std::env::consts::FAMILY,
        "platformOs": std::env::consts::OS, "tandemHome": "<home>", "codexHome": "<home>",
        "serverInfo": {"name": "tandem", "version": tandem_protocol::UPSTREAM_PROTOCOL_VERSION},
        "tandemVersion": tandem_server::server::SERVER_VERSION,
    })
}

/// A cheap request that needs an initialized connection.
async fn expect_serving(s: &mut Session) {
    expect_result(
        s,
        "thread/loaded/list",
        json!({}),
        json!({"data": [], "nextCursor": null}),
    )
    .await;
}

/// Before `initialize` every request is `Not initialized` (an unknown method is still
/// -32601); an `initialize` whose params do not decode may be retried; a second one is
/// refused and changes nothing.
pub(crate) async fn initialize_rules(transport: Transport) {
    let mut s = Session::open(transport).await;
    if transport.has_uninitialized_state() {
        expect_error(
            &mut s,
            "thread/loaded/list",
            json!({}),
            -32600,
            "Not initialized",
        )
        .await;
        expect_error(
            &mut s,
            "foo/bar",
            json!({}),
            -32601,
            "method not found: foo/bar",
        )
        .await;
        // `initialized` before `initialize` is ignored like any early notification.
        s.notify("initialized", json!({})).await;
        expect_error(&mut s, "config/read", json!({}), -32600, "Not initialized").await;
    }

    expect_error(
        &mut s,
        "initialize",
        json!({"capabilities": null}),
        -32600,
        "Invalid request: missing field `clientInfo`",
    )
    .await;
    expect_error(
        &mut s,
        "initialize",
        json!({"clientInfo": {"name": 7, "version": "1"}}),
        -32600,
        "Invalid request: invalid type: integer `7`, expected a string",
    )
    .await;
    expect_result(
        &mut s,
        "initialize",
        json!({"clientInfo": client_info()}),
        initialize_result(),
    )
    .await;
    s.notify("initialized", json!({})).await;
    expect_error(
        &mut s,
        "initialize",
        json!({"clientInfo": client_info(), "capabilities": {"experimentalApi": true}}),
        -32600,
        "Already initialized",
    )
    .await;
    // The refused second initialize did not turn the experimental API on.
    expect_error(
        &mut s,
        "process/kill",
        json!({"processHandle": "none"}),
        -32600,
        "process/kill requires experimentalApi capability",
    )
    .await;
    expect_serving(&mut s).await;
    s.close().await;
}

/// The forms of `initialize` and `initialized` that real clients send: the `jsonrpc` member,
/// a string id, extra members such as `protocolVersion`, `capabilities: null`, and
/// `initialized` with `{}`, with no params, with `null`, or never sent at all.
pub(crate) async fn initialized_in_every_form(transport: Transport) {
    let forms: [Option<Value>; 4] = [
        Some(json!({"method": "initialized", "params": {}})),
        Some(json!({"jsonrpc": "2.0", "method": "initialized"})),
        Some(json!({"method": "initialized", "params": null})),
        None,
    ];
    for initialized in forms {
        let mut s = Session::open(transport).await;
        s.send(json!({
            "jsonrpc": "2.0", "id": "init-0", "method": "initialize",
            "params": {
                "clientInfo": client_info(), "capabilities": null,
                "protocolVersion": "2025-06-18", "locale": "en",
            },
        }))
        .await;
        let reply = s.reply("init-0").await;
        assert_json(
            &s,
            &reply,
            &json!({"id": "init-0", "result": initialize_result()}),
        );
        if let Some(initialized) = initialized {
            s.send(initialized).await;
        }
        expect_serving(&mut s).await;
        s.close().await;
    }
}

/// Notifications named in `optOutNotificationMethods` never reach the connection; the rest
/// arrive in the usual order.
pub(crate) async fn opted_out_notifications_are_not_sent(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize_with(json!({
        "experimentalApi": false,
        "optOutNotificationMethods": ["thread/started", "item/agentMessage/delta"],
    }))
    .await;
    expect_result(
        &mut s,
        "thread/start",
        json!({"cwd": "<home>", "approvalPolicy": "never"}),
        session_reply("never", thread(THREAD, json!({}))),
    )
    .await;
    let turn_id = "<id:2>";
    start_turn(&mut s, turn_id, "quiet please").await;
    let (input, answer) = ("<id:3>", "<id:4>");
    let text = "You said: \"quiet please\"";
    let mut expected = turn_opening(turn_id, input, "quiet please");
    expected.extend([
        item_note("item/started", turn_id, agent_message(answer, "")),
        item_note("item/completed", turn_id, agent_message(answer, text)),
    ]);
    expected.extend(turn_closing(
        turn_id,
        vec![
            user_message(input, "quiet please"),
            agent_message(answer, text),
        ],
    ));
    expect_sequence(&mut s, &expected).await;
    s.close().await;
}

/// Without `experimentalApi`, experimental methods and fields are refused by name; a field
/// sent as `null` counts as omitted.
pub(crate) async fn experimental_api_is_gated(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    for method in [
        "process/spawn",
        "process/writeStdin",
        "process/kill",
        "process/resizePty",
    ] {
        // Valid params, so that only the capability is in question.
        let params = match method {
            "process/spawn" => json!({"processHandle": "p", "command": ["true"], "cwd": "<home>"}),
            "process/writeStdin" => json!({"processHandle": "p", "closeStdin": true}),
            "process/resizePty" => {
                json!({"processHandle": "p", "size": {"rows": 1, "cols": 1}})
            }
            _ => json!({"processHandle": "p"}),
        };
        expect_error(
            &mut s,
            method,
            params,
            -32600,
            &format!("{method} requires experimentalApi capability"),
        )
        .await;
    }
    let tool = json!({
        "type": "function", "name": "lookup", "description": "d", "inputSchema": {},
    });
    expect_error(
        &mut s,
        "thread/start",
        json!({"cwd": "<home>", "dynamicTools": [tool]}),
        -32600,
        "thread/start.dynamicTools requires experimentalApi capability",
    )
    .await;
    start_thread_with(&mut s, THREAD, "never", json!({"dynamicTools": null})).await;
    s.close().await;
}
