//! tandem-client's wire backends against the mock app-server: the spawned child
//! (`tandem-mock-app-server` over stdio) and the loopback websocket mock. The same scenario
//! bodies run on both; the child-only and websocket-only rules have tests of their own.
//!
//! These live here rather than in tandem-client because the mock is a binary of this package,
//! and only this package's tests can name it (`CARGO_BIN_EXE_*`).

use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tandem_client::{
    ApprovalRequest, ChildCommand, Client, ClientError, ClientOptions, Event, ServerRequestHandler,
    SubscriptionFilter, SubscriptionOptions, Transport, WebSocketTarget,
};
use tandem_protocol::ThreadLoadedListParams;
use tandem_test_support::{MockWebSocketServer, eventually, live_pids_with_env, within};

const LIMIT: Duration = Duration::from_secs(30);

fn mock_command() -> ChildCommand {
    ChildCommand::new(env!("CARGO_BIN_EXE_tandem-mock-app-server"))
}

fn approval_params() -> Value {
    json!({
        "method": "item/commandExecution/requestApproval",
        "params": {
            "threadId": "t", "turnId": "u", "itemId": "i", "startedAtMs": 0,
            "command": "rm -rf /", "cwd": "/", "reason": null,
            "commandActions": [{"type": "unknown", "command": "rm -rf /"}],
            "availableDecisions": ["accept", "acceptForSession", "decline", "cancel"]
        }
    })
}

/// Starts each backend's client with `options`.
async fn clients(
    options: ClientOptions,
) -> Vec<(&'static str, Client, Option<MockWebSocketServer>)> {
    let child = Client::start(Transport::Child(mock_command()), options.clone())
        .await
        .expect("child client");
    let server = MockWebSocketServer::start(None)
        .await
        .expect("mock listens");
    let websocket = Client::start(
        Transport::WebSocket(WebSocketTarget::new(server.url())),
        options,
    )
    .await
    .expect("websocket client");
    vec![
        ("child", child, None),
        ("websocket", websocket, Some(server)),
    ]
}

/// Lazy connection, generation 1, typed and raw requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_over_every_wire_backend() {
    for (name, client, _server) in clients(ClientOptions::new()).await {
        assert_eq!(
            client.generation(),
            0,
            "{name}: nothing started before the first request"
        );
        assert!(client.initialize_response().is_none());
        let echoed = within(
            LIMIT,
            name,
            client.request("mock/echo", json!({"a": [1, 2]})),
        )
        .await
        .expect("echo");
        assert_eq!(echoed, json!({"a": [1, 2]}), "{name}");
        assert_eq!(client.generation(), 1, "{name}");
        let info = client.initialize_response().expect("initialized");
        assert_eq!(info.server_info.name, "tandem-test");
        let loaded = client
            .list_loaded_threads(ThreadLoadedListParams::new())
            .await
            .expect("typed request");
        assert!(loaded.data.is_empty());
        let error = client
            .request("mock/unknown", json!({}))
            .await
            .expect_err("unknown method");
        assert_eq!(error.server_error().map(|e| e.code), Some(-32601), "{name}");
        client.close().await;
    }
}

/// Acceptance 3 on the wire: a server that never answers times out as sent and unsafe; a
/// closed client does not send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_and_closed_clients_on_the_wire() {
    let options = ClientOptions::new().request_timeout(Some(Duration::from_millis(300)));
    for (name, client, _server) in clients(options).await {
        let error = within(LIMIT, name, client.request("mock/never", json!({})))
            .await
            .expect_err("never answered");
        assert!(
            matches!(error, ClientError::TimedOut { sent: true, .. }),
            "{name}: {error:?}"
        );
        assert!(!error.is_retry_safe());
        client.close().await;
        let error = client
            .request("mock/echo", json!({}))
            .await
            .expect_err("closed");
        assert!(
            matches!(error, ClientError::Closed { .. }),
            "{name}: {error:?}"
        );
        assert!(!error.was_sent() && error.is_retry_safe());
    }
}

/// Replies arrive while the client reads no events and 10 000 notifications flow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_while_notifications_flood_the_wire() {
    for (name, client, _server) in clients(ClientOptions::new()).await {
        let unread = client.subscribe(SubscriptionOptions::new(SubscriptionFilter::All));
        let mut flooded = client.subscribe(
            SubscriptionOptions::new(SubscriptionFilter::All)
                .capacity(16)
                .lossless(),
        );
        let flood = tokio::spawn({
            let client = client.clone();
            async move { client.request("mock/flood", json!({"count": 10_000})).await }
        });
        let mut received = 0;
        while received < 10_000 {
            match within(LIMIT, name, flooded.next()).await {
                Some(Ok(Event::Notification(_))) => received += 1,
                other => panic!("{name}: unexpected {other:?}"),
            }
        }
        let reply = within(LIMIT, name, flood).await.unwrap().expect("flood");
        assert_eq!(reply, json!({"sent": 10_000}));
        drop(flooded);
        let echoed = client.request("mock/echo", json!(1)).await.expect("echo");
        assert_eq!(echoed, json!(1), "{name}");
        drop(unread);
        client.close().await;
    }
}

/// Approves everything: proves that a handler other than the default is used.
struct ApproveAll;

#[async_trait]
impl ServerRequestHandler for ApproveAll {
    async fn approval(&self, request: ApprovalRequest) {
        request.accept().await.expect("answered");
    }
}

/// Server requests over the wire go to the handler; the default one declines approvals and
/// fails tool calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_over_the_wire() {
    for (name, client, _server) in clients(ClientOptions::new()).await {
        let answer = within(
            LIMIT,
            name,
            client.request("mock/serverRequest", approval_params()),
        )
        .await
        .expect("answered");
        assert_eq!(answer, json!({"result": {"decision": "decline"}}), "{name}");
        let tool = json!({"method": "item/tool/call", "params": {
            "threadId": "t", "turnId": "u", "callId": "c", "namespace": null,
            "tool": "search", "arguments": {}}});
        let answer = client
            .request("mock/serverRequest", tool)
            .await
            .expect("answered");
        assert_eq!(answer["result"]["success"], json!(false), "{name}");
        let text = answer["result"]["contentItems"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.contains("no handler for the tool `search`"),
            "{name}: {text}"
        );
        client.close().await;
    }
    let options = ClientOptions::new().server_request_handler(Arc::new(ApproveAll));
    for (name, client, _server) in clients(options).await {
        let answer = client
            .request("mock/serverRequest", approval_params())
            .await
            .expect("answered");
        assert_eq!(answer, json!({"result": {"decision": "accept"}}), "{name}");
        client.close().await;
    }
}

/// Acceptance 4: killing the child mid-request fails the pending request as disconnected and
/// sent; the next request restarts the child with generation + 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_child_fails_pending_requests_and_restarts() {
    let client = Client::start(
        Transport::Child(mock_command()),
        ClientOptions::new().request_timeout(None),
    )
    .await
    .expect("client");
    client.connect().await.expect("started");
    assert_eq!(client.generation(), 1);
    let first_pid = client.child_pid().expect("a child");

    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.request("mock/never", json!({})).await }
    });
    // The request must have reached the child before the kill: the mock answers requests in
    // order, so once a later echo is answered the `mock/never` frame was written and read.
    client.request("mock/echo", json!({})).await.expect("echo");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first_pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");

    let error = within(LIMIT, "the pending request fails", pending)
        .await
        .unwrap()
        .expect_err("disconnected");
    assert!(
        matches!(error, ClientError::Disconnected { sent: true, .. }),
        "{error:?}"
    );
    assert!(error.was_sent() && !error.is_retry_safe());

    let echoed = within(
        LIMIT,
        "restart",
        client.request("mock/echo", json!("again")),
    )
    .await
    .expect("the next request restarts the child");
    assert_eq!(echoed, json!("again"));
    assert_eq!(client.generation(), 2);
    assert_ne!(client.child_pid(), Some(first_pid));
    client.close().await;
}

/// A dropped websocket connection also fails pending requests as sent, and the next request
/// reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_websocket_fails_pending_requests_and_reconnects() {
    let server = MockWebSocketServer::start(None).await.expect("mock");
    let client = Client::start(
        Transport::WebSocket(WebSocketTarget::new(server.url())),
        ClientOptions::new().request_timeout(None),
    )
    .await
    .expect("client");
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.request("mock/never", json!({})).await }
    });
    client.request("mock/echo", json!({})).await.expect("echo");
    let exit = client
        .request("mock/exit", json!({}))
        .await
        .expect_err("the connection drops");
    assert!(
        matches!(exit, ClientError::Disconnected { sent: true, .. }),
        "{exit:?}"
    );
    let error = within(LIMIT, "pending fails", pending)
        .await
        .unwrap()
        .expect_err("lost");
    assert!(
        matches!(error, ClientError::Disconnected { sent: true, .. }),
        "{error:?}"
    );
    client
        .request("mock/echo", json!({}))
        .await
        .expect("reconnected");
    assert_eq!(client.generation(), 2);
    client.close().await;
}

/// `close()` ends a child that ignores stdin EOF and SIGTERM, and everything in its process
/// group, within its bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_escalates_to_sigkill_of_the_process_group() {
    let marker = format!("close-{}", std::process::id());
    let mock = env!("CARGO_BIN_EXE_tandem-mock-app-server");
    // The shell and its `sleep` ignore SIGTERM (an ignored signal stays ignored across exec);
    // the mock exits on stdin EOF, then `sleep` keeps the group alive.
    let script = format!("trap '' TERM; '{mock}'; sleep 30");
    let command = ChildCommand::new("sh")
        .args(["-c", &script])
        .env("TANDEM_CLOSE_MARKER", &marker);
    let client = Client::start(
        Transport::Child(command),
        ClientOptions::new().close_timeout(Duration::from_millis(300)),
    )
    .await
    .expect("client");
    client
        .request("mock/echo", json!({}))
        .await
        .expect("started");
    assert!(!live_pids_with_env("TANDEM_CLOSE_MARKER", &marker).is_empty());

    let started = std::time::Instant::now();
    within(LIMIT, "close", client.close()).await;
    assert!(started.elapsed() < Duration::from_secs(5), "bounded close");
    eventually(LIMIT, "the process group is gone", || {
        live_pids_with_env("TANDEM_CLOSE_MARKER", &marker).is_empty()
    })
    .await;
}

/// A child that answers on stdin EOF exits cleanly at close: no signal needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_lets_a_well_behaved_child_exit_on_eof() {
    let client = Client::start(Transport::Child(mock_command()), ClientOptions::new())
        .await
        .expect("client");
    client.connect().await.expect("started");
    let pid = client.child_pid().expect("pid");
    within(LIMIT, "close", client.close()).await;
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the child was reaped"
    );
}

/// Bearer tokens: missing and wrong tokens are refused with 401 before anything is sent; the
/// right one connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_bearer_tokens() {
    let server = MockWebSocketServer::start(Some("s3cret".into()))
        .await
        .expect("mock");
    for target in [
        WebSocketTarget::new(server.url()),
        WebSocketTarget::new(server.url()).token("wrong"),
    ] {
        let client = Client::websocket(target);
        let error = client
            .request("mock/echo", json!({}))
            .await
            .expect_err("refused");
        assert!(
            matches!(&error, ClientError::Connect { reason } if reason.contains("401")),
            "{error:?}"
        );
        assert!(!error.was_sent() && error.is_retry_safe());
    }
    let token_file = token_file_with("s3cret\n");
    let target = WebSocketTarget::new(server.url())
        .token_file(token_file.path())
        .expect("token file");
    let client = Client::websocket(target);
    assert_eq!(
        client
            .request("mock/echo", json!(7))
            .await
            .expect("accepted"),
        json!(7)
    );
    client.close().await;
}

/// A token file holding `contents`, private to its owner as a token file must be.
fn token_file_with(contents: &str) -> TempFile {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "token-{}-{}",
        std::process::id(),
        contents.len()
    ));
    std::fs::write(&path, contents).expect("write token");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
    TempFile(path)
}

/// A file removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Issue 17 point 5: a dropped websocket comes back by itself (no request needed), and a
/// watcher sees it reconnecting, then reconnected with the count; with reconnect disabled
/// the client reports the loss and waits for the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_websocket_comes_back_by_itself_and_says_so() {
    use tandem_client::{ConnectionState, ReconnectPolicy};

    let server = MockWebSocketServer::start(None).await.expect("mock");
    let client = Client::start(
        Transport::WebSocket(WebSocketTarget::new(server.url())),
        ClientOptions::new()
            .reconnect(ReconnectPolicy::new().first_backoff(Duration::from_millis(10))),
    )
    .await
    .expect("client");
    let mut states = client.connection_state();
    assert_eq!(*states.borrow_and_update(), ConnectionState::Idle);
    client.connect().await.expect("connected");
    assert_eq!(
        *states.borrow_and_update(),
        ConnectionState::Connected { generation: 1 }
    );
    let _ = client.request("mock/exit", json!({})).await;
    let mut seen = Vec::new();
    within(LIMIT, "the reconnect", async {
        loop {
            states.changed().await.expect("the client lives");
            let state = states.borrow_and_update().clone();
            seen.push(state.clone());
            if matches!(state, ConnectionState::Reconnected { .. }) {
                break;
            }
        }
    })
    .await;
    assert!(
        matches!(
            seen.first(),
            Some(ConnectionState::Reconnecting { attempt: 1, .. })
        ),
        "{seen:?}"
    );
    assert_eq!(
        seen.last(),
        Some(&ConnectionState::Reconnected {
            generation: 2,
            reconnects: 1
        })
    );
    assert_eq!(client.generation(), 2, "back without a request");
    assert_eq!(client.reconnect_stats().reconnects, 1);
    client.close().await;
    assert_eq!(*states.borrow_and_update(), ConnectionState::Closed);

    let lazy = Client::start(
        Transport::WebSocket(WebSocketTarget::new(server.url())),
        ClientOptions::new().reconnect(ReconnectPolicy::disabled()),
    )
    .await
    .expect("client");
    lazy.connect().await.expect("connected");
    let mut states = lazy.connection_state();
    let _ = lazy.request("mock/exit", json!({})).await;
    within(LIMIT, "the loss is reported", async {
        while !matches!(
            *states.borrow_and_update(),
            ConnectionState::Disconnected { .. }
        ) {
            states.changed().await.expect("the client lives");
        }
    })
    .await;
    assert_eq!(lazy.generation(), 1, "no reconnect by itself");
    lazy.request("mock/echo", json!({}))
        .await
        .expect("the next request reconnects");
    assert_eq!(lazy.generation(), 2);
    lazy.close().await;
}
