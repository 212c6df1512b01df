//! The handshake of docs/protocol.md section 3 as a client sees it: the client performs
//! `initialize` itself (with what `ClientOptions` says), a second `initialize` is refused and
//! changes nothing, notification opt-outs and experimental gating follow the options.

use serde_json::{Value, json};
use tandem_protocol::client_methods::Initialize;
use tandem_protocol::{
    ApprovalPolicy, DynamicToolSpec, InitializeParams, ProcessKillParams, ProcessResizePtyParams,
    ProcessSpawnParams, ProcessWriteStdinParams, ThreadLoadedListParams, ThreadStartParams,
};

use super::*;
use crate::events::turn_event;
use crate::harness::{Backend, Harness, Setup, client_options};

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
async fn expect_serving(h: &Harness, loaded: Value) {
    let reply = h
        .call(
            "thread/loaded/list",
            h.client.list_loaded_threads(ThreadLoadedListParams::new()),
        )
        .await;
    h.expect_json(
        "thread/loaded/list",
        &reply,
        json!({"data": loaded, "nextCursor": null}),
    );
}

/// The client initializes on connecting (generation 1, the server's answer kept); another
/// `initialize`, typed or raw, is refused, whatever its params, and does not turn the
/// experimental API on.
pub(crate) async fn the_client_performs_the_handshake(backend: Backend) {
    let options = client_options().experimental_api(false);
    let h = Harness::start(backend, Setup::default(), options).await;
    if h.client.generation() != 1 {
        h.fail(format!(
            "one initialize makes generation 1, got {}",
            h.client.generation()
        ));
    }
    let Some(response) = h.client.initialize_response() else {
        h.fail("a connected client keeps the initialize result");
    };
    h.expect_json("the initialize result", &response, initialize_result());

    let again = InitializeParams::new("tandem-conformance", "1.0.0").experimental_api(true);
    h.expect_server_error(
        "a second, typed initialize",
        h.client.call::<Initialize>(again),
        -32600,
        "Already initialized",
    )
    .await;
    // Params that do not decode are refused as such first.
    h.expect_server_error(
        "a raw initialize without clientInfo",
        h.client
            .request("initialize", json!({"capabilities": null})),
        -32600,
        "Invalid request: missing field `clientInfo`",
    )
    .await;
    h.expect_server_error(
        "a raw initialize with experimentalApi",
        h.client.request(
            "initialize",
            json!({"clientInfo": {"name": "x", "version": "1"}, "capabilities": {"experimentalApi": true}}),
        ),
        -32600,
        "Already initialized",
    )
    .await;
    h.expect_server_error(
        "process/kill after the refused initialize",
        h.client.kill_process(ProcessKillParams::new("none")),
        -32600,
        "process/kill requires experimentalApi capability",
    )
    .await;
    expect_serving(&h, json!([])).await;
    h.close().await;
}

/// Notifications named in `ClientOptions::opt_out_notifications` never reach the client; the
/// rest arrive in the usual order, and the turn handle's text comes from the completed turn
/// when no delta streamed.
pub(crate) async fn opted_out_notifications_are_not_sent(backend: Backend) {
    let options = client_options()
        .experimental_api(false)
        .opt_out_notifications(["thread/started", "item/agentMessage/delta"]);
    let h = Harness::start(backend, Setup::default(), options).await;
    let mut events = h.subscribe_all();
    let params = ThreadStartParams::new()
        .cwd(h.home())
        .approval_policy(ApprovalPolicy::Never);
    let reply = h.call("thread/start", h.client.start_thread(params)).await;
    h.expect_json(
        "thread/start",
        &reply,
        session_reply("never", thread(THREAD, json!({}))),
    );
    let thread_id = reply.thread.id;

    let mut turn = start_turn(&h, &thread_id, TURN, "quiet please").await;
    let (input, answer) = (INPUT_ITEM, "<id:4>");
    let text = "You said: \"quiet please\"";
    let items = vec![
        user_message(input, "quiet please"),
        agent_message(answer, text),
    ];
    let mut expected = crate::events::turn_opening(TURN, input, "quiet please");
    expected.extend([
        json!({"itemStarted": agent_message(answer, "")}),
        json!({"itemCompleted": agent_message(answer, text)}),
    ]);
    expected.extend(crate::events::turn_closing(TURN, items.clone()));
    for (index, want) in expected.iter().enumerate() {
        let event = next_event(&h, &mut turn).await;
        let got = h.json(&turn_event(&event));
        h.assert_json(&format!("turn event {index}"), &got, want);
    }
    if turn.text() != text {
        h.fail(format!(
            "text() without deltas is the completed turn's: {:?}",
            turn.text()
        ));
    }

    // The subscription to everything saw the same order, and nothing opted out.
    let mut notes = crate::shapes::turn_opening(TURN, input, "quiet please");
    notes.extend([
        item_note("item/started", TURN, agent_message(answer, "")),
        item_note("item/completed", TURN, agent_message(answer, text)),
    ]);
    notes.extend(crate::shapes::turn_closing(TURN, items));
    h.expect_messages(&mut events, &notes).await;
    h.close().await;
}

/// With `experimental_api(false)`, experimental methods and fields are refused by name; a
/// field sent as `null` counts as omitted.
pub(crate) async fn experimental_api_is_gated(backend: Backend) {
    let options = client_options().experimental_api(false);
    let h = Harness::start(backend, Setup::default(), options).await;
    let home = h.home();
    h.expect_server_error(
        "process/spawn",
        h.client
            .spawn_process(ProcessSpawnParams::new("p", ["true"], &home)),
        -32600,
        "process/spawn requires experimentalApi capability",
    )
    .await;
    h.expect_server_error(
        "process/writeStdin",
        h.client.write_stdin(ProcessWriteStdinParams::close("p")),
        -32600,
        "process/writeStdin requires experimentalApi capability",
    )
    .await;
    h.expect_server_error(
        "process/kill",
        h.client.kill_process(ProcessKillParams::new("p")),
        -32600,
        "process/kill requires experimentalApi capability",
    )
    .await;
    h.expect_server_error(
        "process/resizePty",
        h.client.resize_pty(ProcessResizePtyParams::new("p", 1, 1)),
        -32600,
        "process/resizePty requires experimentalApi capability",
    )
    .await;
    let tool: DynamicToolSpec = serde_json::from_value(json!({
        "type": "function", "name": "lookup", "description": "d", "inputSchema": {},
    }))
    .expect("a tool spec");
    h.expect_server_error(
        "thread/start with dynamicTools",
        h.client.start_thread(
            ThreadStartParams::new()
                .cwd(&home)
                .dynamic_tools(vec![tool]),
        ),
        -32600,
        "thread/start.dynamicTools requires experimentalApi capability",
    )
    .await;
    let reply = h
        .call(
            "thread/start with dynamicTools: null",
            h.client.request(
                "thread/start",
                json!({"cwd": home, "approvalPolicy": "never", "dynamicTools": null}),
            ),
        )
        .await;
    h.expect_json(
        "thread/start",
        &reply,
        session_reply("never", thread(THREAD, json!({}))),
    );
    h.close().await;
}
