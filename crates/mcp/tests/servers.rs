//! The MCP client against tandem-test-support's MCP test server (rmcp's server side), over
//! streamable HTTP (in process) and stdio (the `tandem-mcp-test-server` binary): startup and
//! status, tools, progress (all of it there when the call returns), resources, timeouts,
//! cancellation, a crash mid-call and the restart after it, an oversized message, a log line
//! and broken JSON on stdout (each failing the call at once), a flood of notifications, the
//! environment a stdio server gets.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tandem_mcp::model::JsonObject;
use tandem_mcp::{
    McpElicitor, McpError, McpManager, McpServerConfig, McpServerState, McpStartupState,
    McpStartupUpdate, parse_mcp_servers,
};
use tandem_test_support::mcp_server::{CrashMode, TestMcpServer, serve_http};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(60);

fn servers(toml_text: &str) -> BTreeMap<String, McpServerConfig> {
    let table: toml::Table = toml::from_str(toml_text).expect("toml");
    parse_mcp_servers(&table["mcp_servers"]).expect("valid servers")
}

fn args(value: Value) -> Option<JsonObject> {
    match value {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

/// Waits for `name` to reach `state`, returning the update.
async fn wait_for(
    updates: &mut broadcast::Receiver<McpStartupUpdate>,
    name: &str,
    state: McpStartupState,
) -> McpStartupUpdate {
    tokio::time::timeout(WAIT, async {
        loop {
            let update = updates.recv().await.expect("updates");
            if update.name == name && update.state == state {
                return update;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{name} never reached {state:?}"))
}

fn text_of(result: &tandem_mcp::model::CallToolResult) -> String {
    serde_json::to_value(&result.content).expect("json")[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_is_listed_called_and_read() {
    let http = serve_http(TestMcpServer::new(CrashMode::Refuse), 0)
        .await
        .expect("http server");
    let manager = McpManager::new(servers(&format!(
        "[mcp_servers.web]\nurl = \"{}\"\ndisabled_tools = [\"crash\"]\n\
         [mcp_servers.off]\ncommand = \"true\"\nenabled = false\n",
        http.url
    )));
    let mut updates = manager.subscribe();
    manager.start();
    wait_for(&mut updates, "web", McpStartupState::Ready).await;

    let statuses = manager.statuses();
    let web = statuses
        .iter()
        .find(|s| s.config.name == "web")
        .expect("web");
    assert_eq!(web.state, McpServerState::Connected);
    let tools: Vec<&str> = web.tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert!(
        tools.contains(&"echo") && !tools.contains(&"crash"),
        "{tools:?}"
    );
    assert_eq!(web.resources[0].uri, "test://greeting");
    assert_eq!(web.resource_templates[0].uri_template, "test://echo/{text}");
    assert_eq!(
        web.server_info.as_ref().map(|info| info.name.as_str()),
        Some("tandem-mcp-test-server")
    );
    let off = statuses
        .iter()
        .find(|s| s.config.name == "off")
        .expect("off");
    assert_eq!(off.state, McpServerState::Disabled);
    let names: Vec<String> = manager
        .ready_tools()
        .into_iter()
        .map(|tool| tool.model_name)
        .collect();
    assert!(names.contains(&"mcp__web__echo".to_owned()), "{names:?}");

    let echoed = manager
        .call_tool(
            "web",
            "echo",
            args(json!({"text": "hi"})),
            None,
            CancellationToken::new(),
        )
        .await
        .expect("echo");
    assert_eq!(text_of(&echoed), "hi");
    assert_eq!(echoed.structured_content, Some(json!({"echo": "hi"})));
    let failed = manager
        .call_tool("web", "fail", None, None, CancellationToken::new())
        .await
        .expect("a tool error is a result");
    assert_eq!(failed.is_error, Some(true));

    let (progress_tx, mut progress) = mpsc::channel(tandem_mcp::PROGRESS_QUEUE);
    let slow = manager
        .call_tool(
            "web",
            "slow",
            args(json!({"steps": 3, "delay_ms": 10})),
            Some(progress_tx),
            CancellationToken::new(),
        )
        .await
        .expect("slow");
    assert_eq!(text_of(&slow), "done");
    // Every update the server sent before its answer is there once the call returned.
    let mut messages = Vec::new();
    while let Ok(update) = progress.try_recv() {
        messages.extend(update.message);
    }
    assert_eq!(messages, ["step 1/3", "step 2/3", "step 3/3"]);

    let read = manager
        .read_resource("web", "test://echo/abc")
        .await
        .expect("read");
    let contents = serde_json::to_value(&read.contents).expect("json");
    assert_eq!(contents[0]["text"], "abc");

    let cancel = CancellationToken::new();
    let call = manager.call_tool("web", "never_answer", None, None, cancel.clone());
    let (result, ()) = tokio::join!(call, async { cancel.cancel() });
    assert!(
        matches!(result, Err(McpError::Cancelled { .. })),
        "{result:?}"
    );
    let unknown = manager
        .call_tool("nope", "echo", None, None, CancellationToken::new())
        .await;
    assert!(matches!(unknown, Err(McpError::UnknownServer(_))));
    manager.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_gets_the_allowed_environment_and_times_out_a_silent_tool() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let manager = McpManager::new(servers(&format!(
        "[mcp_servers.local]\ncommand = \"{binary}\"\ntool_timeout_sec = 0.5\n\
         env = {{ FROM_CONFIG = \"yes\" }}\n"
    )));
    let mut updates = manager.subscribe();
    manager.start();
    wait_for(&mut updates, "local", McpStartupState::Ready).await;
    let env = |name: &'static str| {
        let manager = manager.clone();
        async move {
            let result = manager
                .call_tool(
                    "local",
                    "env",
                    args(json!({"name": name})),
                    None,
                    CancellationToken::new(),
                )
                .await
                .expect("env");
            text_of(&result)
        }
    };
    assert_eq!(env("FROM_CONFIG").await, "yes");
    assert_ne!(env("PATH").await, "unset");
    // cargo sets it for the test process; it is not on the allow-list.
    assert!(std::env::var("CARGO_MANIFEST_DIR").is_ok());
    assert_eq!(env("CARGO_MANIFEST_DIR").await, "unset");

    let silent = manager
        .call_tool(
            "local",
            "never_answer",
            None,
            None,
            CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(silent, Err(McpError::ToolTimeout { .. })),
        "{silent:?}"
    );
    manager.shutdown();
}

/// Two test servers that log their events, both ready: `local` over stdio and `web` over
/// streamable HTTP. Dropping it stops the HTTP server and removes the logs.
struct LoggingServers {
    manager: McpManager,
    stdio_log: PathBuf,
    http_log: PathBuf,
    _http: tandem_test_support::mcp_server::HttpMcpServer,
    _home: tempfile::TempDir,
}

async fn logging_stdio_and_http_servers() -> LoggingServers {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let home = tempfile::tempdir().expect("home");
    let stdio_log = home.path().join("stdio.log");
    let http_log = home.path().join("http.log");
    let http = serve_http(
        TestMcpServer::new(CrashMode::Refuse).with_log(http_log.clone()),
        0,
    )
    .await
    .expect("http server");
    let manager = McpManager::new(servers(&format!(
        "[mcp_servers.local]\ncommand = \"{binary}\"\nargs = [\"--log\", \"{}\"]\n\
         [mcp_servers.web]\nurl = \"{}\"\n",
        stdio_log.display(),
        http.url
    )));
    let mut updates = manager.subscribe();
    manager.start();
    wait_for(&mut updates, "local", McpStartupState::Ready).await;
    wait_for(&mut updates, "web", McpStartupState::Ready).await;
    LoggingServers {
        manager,
        stdio_log,
        http_log,
        _http: http,
        _home: home,
    }
}

/// A call cancelled at once sends its request and `notifications/cancelled` back to back;
/// the server must get them in that order, or it finds nothing to cancel and runs the call
/// on. Many calls, so that a reordering (rmcp runs each send on a task of its own) shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_at_once_is_cancelled_at_the_server() {
    let servers = logging_stdio_and_http_servers().await;
    let (manager, stdio_log, http_log) = (&servers.manager, &servers.stdio_log, &servers.http_log);
    // Over stdio every request is written, then its cancellation. rmcp's HTTP transport
    // drops a request cancelled before it is posted, so there only those the server got
    // must be cancelled.
    cancel_at_once(manager, "local", stdio_log, true).await;
    cancel_at_once(manager, "web", http_log, false).await;
    manager.shutdown();
}

/// Makes calls cancelled before they start, then waits until the server cancelled each one it
/// got (with `all_sent`, each one).
async fn cancel_at_once(manager: &McpManager, server: &str, log: &std::path::Path, all_sent: bool) {
    const CALLS: usize = 40;
    for _ in 0..CALLS {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let call = manager.call_tool(server, "never_answer", None, None, cancel);
        let result = tokio::time::timeout(WAIT, call)
            .await
            .expect("ends at once");
        assert!(
            matches!(result, Err(McpError::Cancelled { .. })),
            "{server}: {result:?}"
        );
    }
    let count = |event: &str| {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter(|line| *line == event)
            .count()
    };
    let cancelled = tokio::time::timeout(WAIT, async {
        loop {
            let (called, cancelled) = (
                count("called never_answer"),
                count("cancelled never_answer"),
            );
            if cancelled == called && (!all_sent || cancelled == CALLS) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        cancelled.is_ok(),
        "{server}: {} of {} calls were cancelled at the server",
        count("cancelled never_answer"),
        count("called never_answer")
    );
}

/// Waits for the test server to log `event`.
async fn logged(log: &std::path::Path, event: &str) {
    tokio::time::timeout(WAIT, async {
        while !std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .any(|line| line == event)
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the server never logged {event}"));
}

/// Answers every elicitation by accepting with its own name, so a result shows whose
/// elicitor answered.
struct AnswersWith(&'static str);

impl McpElicitor for AnswersWith {
    fn elicit(
        &self,
        _server: &str,
        _request: tandem_mcp::model::ElicitRequestParams,
    ) -> Pin<Box<dyn Future<Output = tandem_mcp::model::ElicitResult> + Send + 'static>> {
        let answer = self.0;
        Box::pin(async move {
            tandem_mcp::model::ElicitResult::new(tandem_mcp::model::ElicitationAction::Accept)
                .with_content(json!({"answer": answer}))
        })
    }
}

/// An elicitation reaches the elicitor of the call it belongs to. Over HTTP the request names
/// its call, so two calls eliciting at once, beside a third in flight, each get their own
/// answer; over stdio it names none, so it is answered only when its call is the one in
/// flight, and declined beside another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitations_reach_the_elicitor_of_their_call() {
    let servers = logging_stdio_and_http_servers().await;
    let (manager, stdio_log, http_log) = (&servers.manager, &servers.stdio_log, &servers.http_log);
    let elicit = |server: &'static str, who: &'static str| {
        let manager = manager.clone();
        async move {
            let call = manager.call_tool_for(
                server,
                "elicit",
                None,
                None,
                CancellationToken::new(),
                Some(Arc::new(AnswersWith(who))),
            );
            let result = tokio::time::timeout(WAIT, call).await.expect("answers");
            text_of(&result.expect("a result"))
        }
    };
    // A call that stays in flight throughout, with an elicitor of its own.
    let in_flight = |server: &'static str| {
        let manager = manager.clone();
        let cancel = CancellationToken::new();
        let call = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                manager
                    .call_tool_for(
                        server,
                        "never_answer",
                        None,
                        None,
                        cancel,
                        Some(Arc::new(AnswersWith("the other call"))),
                    )
                    .await
            }
        });
        (cancel, call)
    };

    assert_eq!(
        elicit("local", "alone").await,
        r#"accepted {"answer":"alone"}"#
    );
    let (stop, other) = in_flight("local");
    logged(stdio_log, "called never_answer").await;
    assert_eq!(elicit("local", "beside another").await, "declined");
    stop.cancel();
    other.await.expect("task").expect_err("cancelled");

    let (stop, other) = in_flight("web");
    logged(http_log, "called never_answer").await;
    let (first, second) = tokio::join!(elicit("web", "first"), elicit("web", "second"));
    assert_eq!(first, r#"accepted {"answer":"first"}"#);
    assert_eq!(second, r#"accepted {"answer":"second"}"#);
    stop.cancel();
    other.await.expect("task").expect_err("cancelled");
    manager.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_fails_the_call_and_the_server_restarts() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let manager = McpManager::with_restart_backoff(
        servers(&format!("[mcp_servers.local]\ncommand = \"{binary}\"\n")),
        Duration::from_millis(50),
    );
    let mut updates = manager.subscribe();
    manager.start();
    wait_for(&mut updates, "local", McpStartupState::Ready).await;
    let crashed = manager
        .call_tool("local", "crash", None, None, CancellationToken::new())
        .await;
    assert!(
        matches!(crashed, Err(McpError::ConnectionClosed { .. })),
        "{crashed:?}"
    );
    let failed = wait_for(&mut updates, "local", McpStartupState::Failed).await;
    assert!(failed.error.expect("why").contains("closed the connection"));
    wait_for(&mut updates, "local", McpStartupState::Ready).await;
    let echoed = manager
        .call_tool(
            "local",
            "echo",
            args(json!({"text": "back"})),
            None,
            CancellationToken::new(),
        )
        .await
        .expect("echo after the restart");
    assert_eq!(text_of(&echoed), "back");
    manager.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_sent_before_the_answer_is_there_when_the_call_returns() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let manager = McpManager::new(servers(&format!(
        "[mcp_servers.s]\ncommand = \"{binary}\"\n"
    )));
    let mut updates = manager.subscribe();
    manager.start();
    wait_for(&mut updates, "s", McpStartupState::Ready).await;
    // No delay between the updates and the answer: the closest race there is, end to end. It
    // is narrow (a spawned delivery, as rmcp's handler did, usually wins it too); the unit
    // test in src/progress.rs pins the order deterministically.
    for round in 0..20 {
        let (progress_tx, mut progress) = mpsc::channel(tandem_mcp::PROGRESS_QUEUE);
        let result = tokio::time::timeout(
            WAIT,
            manager.call_tool(
                "s",
                "slow",
                args(json!({"steps": 5, "delay_ms": 0})),
                Some(progress_tx),
                CancellationToken::new(),
            ),
        )
        .await
        .expect("answered")
        .expect("slow");
        assert_eq!(text_of(&result), "done");
        let mut steps = Vec::new();
        while let Ok(update) = progress.try_recv() {
            steps.push(update.progress);
        }
        assert_eq!(steps, [1.0, 2.0, 3.0, 4.0, 5.0], "round {round}");
    }
    manager.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_malformed_messages_close_only_that_connection() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let manager = McpManager::with_restart_backoff(
        servers(&format!(
            "[mcp_servers.big]\ncommand = \"{binary}\"\ntool_timeout_sec = 30\n\
             [mcp_servers.bad]\ncommand = \"{binary}\"\ntool_timeout_sec = 30\n\
             [mcp_servers.fine]\ncommand = \"{binary}\"\n"
        )),
        // Restarted at once, so that `bad` can be refused twice.
        Duration::from_millis(10),
    );
    let mut updates = manager.subscribe();
    manager.start();
    let mut ready = std::collections::BTreeSet::new();
    while ready.len() < 3 {
        let update = tokio::time::timeout(WAIT, updates.recv())
            .await
            .expect("startup")
            .expect("updates");
        if update.state == McpStartupState::Ready {
            ready.insert(update.name);
        }
    }
    let within = manager
        .call_tool(
            "big",
            "huge",
            args(json!({"bytes": 1 << 20})),
            None,
            CancellationToken::new(),
        )
        .await
        .expect("1 MiB fits");
    assert_eq!(text_of(&within).len(), 1 << 20);
    let past = manager
        .call_tool(
            "big",
            "huge",
            args(json!({"bytes": tandem_mcp::stdio::MAX_MESSAGE_BYTES + 1})),
            None,
            CancellationToken::new(),
        )
        .await;
    let Err(error @ McpError::Malformed { .. }) = past else {
        panic!("{past:?}");
    };
    assert!(error.to_string().contains("longer than"), "{error}");
    // A log line, then (once the server restarted) broken JSON: each fails its call at once
    // (not after tool_timeout_sec), saying why.
    for (line, why) in [
        (None, "not a JSON-RPC message"),
        (Some(r#"{"jsonrpc":"2.0","id":"#), "malformed JSON"),
    ] {
        let malformed = manager
            .call_tool(
                "bad",
                "malformed",
                line.and_then(|line| args(json!({ "line": line }))),
                None,
                CancellationToken::new(),
            )
            .await;
        let Err(error @ McpError::Malformed { .. }) = malformed else {
            panic!("{malformed:?}");
        };
        assert!(error.to_string().contains(why), "{error}");
        // Its restart (the next `ready` of `bad` is the one after this failure).
        wait_for(&mut updates, "bad", McpStartupState::Ready).await;
    }

    // A flood of progress the caller never reads is dropped past the queue's bound.
    let (progress_tx, mut progress) = mpsc::channel(tandem_mcp::PROGRESS_QUEUE);
    let flooded = manager
        .call_tool(
            "fine",
            "flood",
            args(json!({"count": 5000})),
            Some(progress_tx),
            CancellationToken::new(),
        )
        .await
        .expect("flood");
    assert_eq!(text_of(&flooded), "flooded");
    let mut kept = 0;
    while progress.try_recv().is_ok() {
        kept += 1;
    }
    assert!(kept <= tandem_mcp::PROGRESS_QUEUE, "{kept}");
    let echoed = manager
        .call_tool(
            "fine",
            "echo",
            args(json!({"text": "still here"})),
            None,
            CancellationToken::new(),
        )
        .await
        .expect("the other server is untouched");
    assert_eq!(text_of(&echoed), "still here");
    manager.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slow_to_start_times_out_and_only_a_required_one_is_waited_for() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let manager = McpManager::new(servers(&format!(
        "[mcp_servers.slow]\ncommand = \"{binary}\"\nargs = [\"--start-delay-ms\", \"60000\"]\n\
         startup_timeout_sec = 0.5\nrequired = true\n"
    )));
    let mut updates = manager.subscribe();
    manager.start();
    let failed = wait_for(&mut updates, "slow", McpStartupState::Failed).await;
    assert!(failed.error.expect("why").contains("startup_timeout_sec"));
    let required = tokio::time::timeout(WAIT, manager.wait_required())
        .await
        .expect("settled");
    assert!(
        matches!(required, Err(McpError::NotConnected { .. })),
        "{required:?}"
    );
    assert_eq!(manager.statuses()[0].state, McpServerState::Failed);
    manager.shutdown();
}
