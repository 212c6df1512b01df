//! mcp30: the MCP methods (docs/protocol.md section 4, "MCP servers") against
//! tandem-test-support's MCP test server over stdio: an empty `mcpServerStatus/list`, a server
//! added to `config.toml` and picked up by `config/mcpServer/reload` with its
//! `mcpServer/startupStatus/updated` notifications, its status, a direct tool call, the
//! refusals (an unknown thread, an unknown server), a resource read, and a turn's call as an
//! `mcpToolCall` item with `item/mcpToolCall/progress`. Stable methods, so the scenario
//! initializes without `experimentalApi`.
//!
//! The server starts with no MCP server configured: startup notifications of servers started
//! with the process reach only the connections initialized by then, which differs between
//! transports; those of a reload follow the reload on every one.

use base64::Engine as _;
use serde_json::json;

use super::*;
use crate::session::{Session, Transport, assert_json};

fn startup(status: &str) -> serde_json::Value {
    note(
        "mcpServer/startupStatus/updated",
        json!({"threadId": null, "name": "test", "status": status, "error": null,
               "failureReason": null}),
    )
}

/// Status, reload, a tool call, its refusals, a resource read.
pub(crate) async fn mcp_servers_status_calls_and_reload(transport: Transport) {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let mut s = Session::open(transport).await;
    s.initialize(false).await;

    expect_result(
        &mut s,
        "mcpServerStatus/list",
        json!({}),
        json!({"data": [], "nextCursor": null}),
    )
    .await;

    let config = format!("[mcp_servers.test]\ncommand = \"{binary}\"\n");
    expect_result(
        &mut s,
        "fs/writeFile",
        json!({"path": "<home>/config.toml",
               "dataBase64": base64::engine::general_purpose::STANDARD.encode(config)}),
        json!({}),
    )
    .await;
    expect_result(&mut s, "config/mcpServer/reload", json!(null), json!({})).await;
    expect_sequence(&mut s, &[startup("starting"), startup("ready")]).await;

    let list = s
        .call(
            "mcpServerStatus/list",
            json!({"serverName": "test", "detail": "toolsAndAuthOnly"}),
        )
        .await;
    let status = &list["data"][0];
    let mut tools: Vec<&str> = status["tools"]
        .as_object()
        .expect("tools by name")
        .keys()
        .map(String::as_str)
        .collect();
    tools.sort_unstable();
    assert_eq!(
        tools,
        [
            "crash",
            "echo",
            "elicit",
            "env",
            "fail",
            "flood",
            "huge",
            "malformed",
            "never_answer",
            "slow"
        ]
    );
    assert_json(
        &s,
        &status["tools"]["echo"],
        &json!({"name": "echo", "description": "Answers its text",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}),
    );
    let mut without_tools = status.clone();
    without_tools["tools"] = json!({});
    without_tools["serverInfo"]["version"] = json!("<version>");
    assert_json(
        &s,
        &without_tools,
        &json!({"name": "test", "runtimeStatus": "connected", "pluginId": null,
                "httpOrigin": null,
                "serverInfo": {"name": "tandem-mcp-test-server", "version": "<version>"},
                "serverCapabilities": {"resources": {}, "tools": {}},
                "toolListMeta": null, "tools": {}, "toolsError": null,
                "resources": [], "resourceTemplates": [], "authStatus": "unsupported"}),
    );
    assert_eq!(list["nextCursor"], json!(null));

    start_thread(&mut s, THREAD, "never").await;
    expect_result(
        &mut s,
        "mcpServer/tool/call",
        json!({"threadId": THREAD, "server": "test", "tool": "echo",
               "arguments": {"text": "hi"}}),
        json!({"content": [{"type": "text", "text": "hi"}],
               "structuredContent": {"echo": "hi"}, "isError": false}),
    )
    .await;
    expect_error(
        &mut s,
        "mcpServer/tool/call",
        json!({"threadId": "no-such-thread", "server": "test", "tool": "echo"}),
        -32600,
        "thread not found: no-such-thread",
    )
    .await;
    expect_error(
        &mut s,
        "mcpServer/tool/call",
        json!({"threadId": THREAD, "server": "nope", "tool": "echo"}),
        -32603,
        "no MCP server named nope is configured: add [mcp_servers.nope] to config.toml",
    )
    .await;
    expect_result(
        &mut s,
        "mcpServer/resource/read",
        json!({"server": "test", "uri": "test://greeting"}),
        json!({"contents": [{"uri": "test://greeting", "mimeType": "text/plain",
                              "text": "hello from the test server"}],
               "originCallId": null}),
    )
    .await;

    // A turn's call (the scripted agent's `/mcp`): an `mcpToolCall` item around the server's
    // progress. Checked by kind, not whole: the item's duration differs from run to run.
    s.call(
        "turn/start",
        json!({"threadId": THREAD, "input": [{"type": "text",
               "text": "/mcp test slow {\"steps\": 2, \"delay_ms\": 1}"}]}),
    )
    .await;
    let (during, done) = s.read_until("turn/completed").await;
    assert_eq!(done["params"]["turn"]["status"], "completed", "{done}");
    let kinds: Vec<String> = during
        .iter()
        .filter_map(|message| match message["method"].as_str()? {
            "item/started" | "item/completed"
                if message["params"]["item"]["type"] == "mcpToolCall" =>
            {
                Some(format!(
                    "{} {}",
                    message["method"].as_str()?,
                    message["params"]["item"]["status"].as_str()?
                ))
            }
            "item/mcpToolCall/progress" => Some(format!(
                "progress {}",
                message["params"]["message"].as_str()?
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "item/started inProgress",
            "progress step 1/2",
            "progress step 2/2",
            "item/completed completed"
        ]
    );
    s.close().await;
}
