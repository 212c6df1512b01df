//! The MCP methods (issue 30) through the in-process host, against tandem-test-support's MCP
//! test server over stdio (the `tandem-mcp-test-server` binary) and streamable HTTP, in the
//! reference's shapes (compared with the reference app-server 0.169.0 serving the same test
//! server): `mcpServer/startupStatus/updated` as servers start or fail, `mcpServerStatus/list`,
//! `mcpServer/tool/call`, `mcpServer/resource/read`, and `config/mcpServer/reload` picking up
//! a server added to the config file.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor};
use tandem_protocol::{
    ClientRequest, JSONRPCErrorError, JSONRPCRequest, RequestId, ServerNotification,
};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::mcp_server::{CrashMode, TestMcpServer, serve_http};
use tandem_test_support::{initialize_params, within};

const PROMPT: Duration = Duration::from_secs(60);

async fn start(home: &Path) -> InProcessClientHandle {
    let options = ServerOptions::load(ServerConfig::builder().tandem_home(home)).expect("options");
    let args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(false),
    );
    within(PROMPT, "start", in_process::start(args))
        .await
        .expect("host starts")
}

async fn try_call(
    handle: &InProcessClientHandle,
    method: &str,
    params: Value,
) -> Result<Value, JSONRPCErrorError> {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    let request = ClientRequest::try_from(JSONRPCRequest {
        id: RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed)),
        method: method.to_owned(),
        params: Some(params),
    })?;
    within(PROMPT, method, handle.request(request))
        .await
        .expect("host answers")
}

async fn call(handle: &InProcessClientHandle, method: &str, params: Value) -> Value {
    try_call(handle, method, params)
        .await
        .unwrap_or_else(|error| panic!("{method} failed: {error:?}"))
}

/// Reads events until every server of `expected` reported its status, returning the
/// `mcpServer/startupStatus/updated` params seen.
async fn startup_statuses(
    handle: &mut InProcessClientHandle,
    expected: &[(&str, &str)],
) -> Vec<Value> {
    let mut seen = Vec::new();
    within(PROMPT, "startup statuses", async {
        while !expected.iter().all(|(name, status)| {
            seen.iter()
                .any(|params: &Value| params["name"] == *name && params["status"] == *status)
        }) {
            match handle.next_event().await {
                Some(InProcessServerEvent::ServerNotification(
                    ServerNotification::McpServerStartupStatusUpdated(params),
                )) => seen.push(serde_json::to_value(params).expect("json")),
                Some(_) => {}
                None => panic!("the host stopped"),
            }
        }
    })
    .await;
    seen
}

fn server<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|server| server["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_start_in_the_background_and_serve_the_reference_methods() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let http = serve_http(TestMcpServer::new(CrashMode::Refuse), 0)
        .await
        .expect("http server");
    let home = tempfile::tempdir().expect("home");
    let config = format!(
        "[mcp_servers.local]\ncommand = \"{binary}\"\n\
         [mcp_servers.web]\nurl = \"{}\"\n\
         [mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n\
         [mcp_servers.off]\ncommand = \"{binary}\"\nenabled = false\n",
        http.url
    );
    std::fs::write(home.path().join("config.toml"), &config).expect("config");
    let mut handle = start(home.path()).await;

    // The servers started with the server, before this client connected: their states are
    // read from the list until they settle.
    within(PROMPT, "servers settle", async {
        loop {
            let list = call(&handle, "mcpServerStatus/list", json!({})).await;
            let settled = [
                ("local", "connected"),
                ("web", "connected"),
                ("broken", "failed"),
            ]
            .iter()
            .all(|(name, state)| server(&list, name)["runtimeStatus"] == *state);
            if settled {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let list = call(&handle, "mcpServerStatus/list", json!({})).await;
    assert_eq!(list["nextCursor"], Value::Null);
    let local = server(&list, "local");
    assert_eq!(local["runtimeStatus"], "connected");
    assert_eq!(local["authStatus"], "unsupported");
    assert_eq!(local["httpOrigin"], Value::Null);
    assert_eq!(local["serverInfo"]["name"], "tandem-mcp-test-server");
    assert_eq!(local["tools"]["echo"]["name"], "echo");
    assert_eq!(local["tools"]["echo"]["inputSchema"]["type"], "object");
    assert_eq!(local["resources"][0]["uri"], "test://greeting");
    assert_eq!(
        local["resourceTemplates"][0]["uriTemplate"],
        "test://echo/{text}"
    );
    assert_eq!(local["toolsError"], Value::Null);
    let web = server(&list, "web");
    assert_eq!(web["runtimeStatus"], "connected");
    assert!(
        web["httpOrigin"]
            .as_str()
            .expect("origin")
            .starts_with("http://127.0.0.1:")
    );
    assert_eq!(server(&list, "broken")["runtimeStatus"], "failed");
    assert!(server(&list, "broken")["toolsError"].is_string());
    assert_eq!(server(&list, "off")["runtimeStatus"], "disabled");
    let one = call(
        &handle,
        "mcpServerStatus/list",
        json!({"serverName": "web"}),
    )
    .await;
    assert_eq!(one["data"].as_array().expect("data").len(), 1);

    // A tool call names a thread the server knows, as the reference's does.
    let thread = call(&handle, "thread/start", json!({})).await;
    let thread_id = thread["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    let unknown_thread = try_call(
        &handle,
        "mcpServer/tool/call",
        json!({"threadId": "0190f3a2-0000-7000-8000-000000000000", "server": "local", "tool": "echo"}),
    )
    .await
    .expect_err("no such thread");
    assert_eq!(
        (unknown_thread.code, unknown_thread.message.as_str()),
        (
            -32600,
            "thread not found: 0190f3a2-0000-7000-8000-000000000000"
        )
    );
    for name in ["local", "web"] {
        let echoed = call(
            &handle,
            "mcpServer/tool/call",
            json!({"threadId": thread_id, "server": name, "tool": "echo", "arguments": {"text": "hi"}}),
        )
        .await;
        assert_eq!(echoed["content"][0], json!({"type": "text", "text": "hi"}));
        assert_eq!(echoed["structuredContent"], json!({"echo": "hi"}));
        assert_eq!(echoed["isError"], false);
    }
    let failed = call(
        &handle,
        "mcpServer/tool/call",
        json!({"threadId": thread_id, "server": "local", "tool": "fail"}),
    )
    .await;
    assert_eq!(failed["isError"], true);
    let read = call(
        &handle,
        "mcpServer/resource/read",
        json!({"server": "local", "uri": "test://greeting"}),
    )
    .await;
    assert_eq!(read["contents"][0]["uri"], "test://greeting");
    assert_eq!(read["contents"][0]["text"], "hello from the test server");
    assert_eq!(read["originCallId"], Value::Null);
    let unknown = try_call(
        &handle,
        "mcpServer/tool/call",
        json!({"threadId": thread_id, "server": "nope", "tool": "echo"}),
    )
    .await
    .expect_err("no such server");
    assert_eq!(unknown.code, -32603);
    assert!(
        unknown.message.contains("[mcp_servers.nope]"),
        "{unknown:?}"
    );

    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "{config}[mcp_servers.second]\ncommand = \"{binary}\"\n\
             [mcp_servers.broken2]\ncommand = \"/nonexistent/mcp-server\"\n"
        ),
    )
    .expect("config");
    assert_eq!(
        call(&handle, "config/mcpServer/reload", json!({})).await,
        json!({})
    );
    let statuses = startup_statuses(
        &mut handle,
        &[
            ("second", "starting"),
            ("second", "ready"),
            ("broken2", "failed"),
        ],
    )
    .await;
    let broken = statuses
        .iter()
        .find(|params| params["name"] == "broken2" && params["status"] == "failed")
        .expect("failed");
    assert!(
        broken["error"]
            .as_str()
            .expect("error")
            .contains("cannot start MCP server broken2"),
        "{broken}"
    );
    assert_eq!(broken["threadId"], Value::Null);
    assert!(statuses.iter().all(|params| {
        params
            .as_object()
            .expect("object")
            .keys()
            .collect::<Vec<_>>()
            == ["error", "failureReason", "name", "status", "threadId"]
    }));
    let list = call(&handle, "mcpServerStatus/list", json!({})).await;
    assert_eq!(server(&list, "second")["runtimeStatus"], "connected");
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("shutdown");
}
