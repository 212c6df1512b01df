//! MCP tools in turns (issue 30, step 4), offline: the scripted agent's `/mcp-tools` and
//! `/mcp SERVER TOOL JSON` against tandem-test-support's MCP test server over stdio, through
//! the in-process host. What the model is offered (names, descriptions, schemas), the
//! `mcpToolCall` item sequence with the server's progress, the bound on what the model is
//! told, the tool timeout, `turn/interrupt` cancelling the call (the test server logs the
//! `notifications/cancelled` it got), the wait for `required` servers and a required server
//! that failed, and approvals (`approval_mode = "prompt"`) accepted and declined as the
//! reference asks them (`mcpServer/elicitation/request`). And the OpenAI-compatible agent
//! against the mock model: the tool offered by its model name, called, its result told.

mod agent_support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor};
use tandem_protocol::{
    ClientRequest, JSONRPCRequest, McpToolCallStatus, RequestId, ServerNotification, ServerRequest,
    ThreadItem, Turn, TurnStatus,
};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::{initialize_params, within};

const PROMPT: Duration = Duration::from_secs(60);

/// A server whose home's config.toml is `config`.
async fn start(home: &Path, config: &str) -> InProcessClientHandle {
    std::fs::write(home.join("config.toml"), config).expect("config");
    let options = ServerOptions::load(ServerConfig::builder().tandem_home(home)).expect("options");
    let args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(false),
    );
    within(PROMPT, "start", in_process::start(args))
        .await
        .expect("host starts")
}

async fn call(handle: &InProcessClientHandle, method: &str, params: Value) -> Value {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    let request = ClientRequest::try_from(JSONRPCRequest {
        id: RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed)),
        method: method.to_owned(),
        params: Some(params),
    })
    .expect("request decodes");
    within(PROMPT, method, handle.request(request))
        .await
        .expect("host answers")
        .unwrap_or_else(|error| panic!("{method} failed: {error:?}"))
}

/// Waits until `server` is connected.
async fn connected(handle: &InProcessClientHandle, server: &str) {
    within(PROMPT, "server connects", async {
        loop {
            let list = call(
                handle,
                "mcpServerStatus/list",
                json!({"serverName": server}),
            )
            .await;
            if list["data"][0]["runtimeStatus"] == "connected" {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// Starts a thread under `approval_policy`; its id.
async fn start_thread(handle: &InProcessClientHandle, approval_policy: &str) -> String {
    let started = call(
        handle,
        "thread/start",
        json!({"approvalPolicy": approval_policy}),
    )
    .await;
    started["thread"]["id"].as_str().expect("id").to_owned()
}

async fn start_turn(handle: &InProcessClientHandle, thread: &str, text: &str) {
    call(
        handle,
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "text", "text": text}]}),
    )
    .await;
}

/// Everything up to `turn/completed`, answering each server request with `answer`; `on`
/// sees every event first (to interrupt, say).
async fn drive(
    handle: &mut InProcessClientHandle,
    mut answer: impl FnMut(&ServerRequest) -> Value,
    mut on: impl FnMut(&InProcessServerEvent, &InProcessClientHandle),
) -> (Vec<InProcessServerEvent>, Turn) {
    let mut events = Vec::new();
    let turn = within(PROMPT, "turn/completed", async {
        loop {
            let event = handle.next_event().await.expect("events");
            on(&event, handle);
            if let InProcessServerEvent::ServerRequest(request) = &event {
                handle
                    .respond_to_server_request(request.id().clone(), answer(request))
                    .expect("answer delivered");
            }
            let done = match &event {
                InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(
                    done,
                )) => Some(done.turn.clone()),
                _ => None,
            };
            events.push(event);
            if let Some(turn) = done {
                return turn;
            }
        }
    })
    .await;
    (events, turn)
}

fn no_requests(request: &ServerRequest) -> Value {
    panic!("unexpected server request {request:?}")
}

fn notifications(events: &[InProcessServerEvent]) -> Vec<&ServerNotification> {
    events
        .iter()
        .filter_map(|event| match event {
            InProcessServerEvent::ServerNotification(note) => Some(note),
            _ => None,
        })
        .collect()
}

/// The completed agent messages' texts.
fn messages(turn: &Turn) -> Vec<String> {
    turn.items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::AgentMessage { text, .. } => Some(text.to_string()),
            _ => None,
        })
        .collect()
}

/// The completed `mcpToolCall` items.
fn calls(turn: &Turn) -> Vec<ThreadItem> {
    turn.items
        .iter()
        .filter(|item| matches!(item, ThreadItem::McpToolCall { .. }))
        .cloned()
        .collect()
}

fn status_and_error(item: &ThreadItem) -> (McpToolCallStatus, Option<String>) {
    match item {
        ThreadItem::McpToolCall { status, error, .. } => {
            (*status, error.as_ref().map(|error| error.message.clone()))
        }
        other => panic!("not an MCP call: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_offered_item_sequence_progress_and_a_bounded_result() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let home = tempfile::tempdir().expect("home");
    let mut handle = start(
        home.path(),
        &format!("[mcp_servers.test]\ncommand = \"{binary}\"\ndisabled_tools = [\"crash\"]\n"),
    )
    .await;
    connected(&handle, "test").await;
    let thread = start_thread(&handle, "never").await;
    start_turn(
        &handle,
        &thread,
        "/mcp-tools\n/mcp test slow {\"steps\": 3, \"delay_ms\": 10}\n\
         /mcp test huge {\"bytes\": 100000}\n/mcp test fail",
    )
    .await;
    let (events, turn) = drive(&mut handle, no_requests, |_, _| {}).await;
    assert_eq!(turn.status, TurnStatus::Completed, "{turn:?}");

    // The model is offered every tool the configuration lets through, by its model name,
    // with the server's description and input schema.
    let said = messages(&turn);
    let offered: Value =
        serde_json::from_str(said[0].strip_prefix("mcp tools: ").expect("tools")).expect("json");
    let offered = offered.as_array().expect("array");
    let echo = offered
        .iter()
        .find(|tool| tool["name"] == "mcp__test__echo")
        .expect("echo offered");
    assert_eq!(echo["description"], "Answers its text");
    assert_eq!(
        echo["inputSchema"],
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    );
    assert!(
        offered
            .iter()
            .all(|tool| tool["name"] != "mcp__test__crash")
    );

    // `slow`: item/started, three progress notifications of that item, item/completed.
    let notes = notifications(&events);
    let slow_id = notes
        .iter()
        .find_map(|note| match note {
            ServerNotification::ItemStarted(started) => match &started.item {
                ThreadItem::McpToolCall {
                    id, tool, status, ..
                } if tool == "slow" => {
                    assert_eq!(*status, McpToolCallStatus::InProgress);
                    Some(id.clone())
                }
                _ => None,
            },
            _ => None,
        })
        .expect("slow started");
    let sequence: Vec<String> = notes
        .iter()
        .filter_map(|note| match note {
            ServerNotification::ItemStarted(n) if n.item.id() == slow_id => {
                Some("started".to_owned())
            }
            ServerNotification::McpToolCallProgress(n) if n.item_id == slow_id => {
                assert_eq!(
                    (n.thread_id.as_str(), n.turn_id.as_str()),
                    (thread.as_str(), turn.id.as_str())
                );
                Some(n.message.clone())
            }
            ServerNotification::ItemCompleted(n) if n.item.id() == slow_id => {
                Some("completed".to_owned())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        sequence,
        ["started", "step 1/3", "step 2/3", "step 3/3", "completed"]
    );
    let items = calls(&turn);
    let ThreadItem::McpToolCall {
        server,
        status,
        result,
        arguments,
        duration_ms,
        ..
    } = &items[0]
    else {
        unreachable!()
    };
    assert_eq!(
        (server.as_str(), *status),
        ("test", McpToolCallStatus::Completed)
    );
    assert_eq!(arguments, &json!({"steps": 3, "delay_ms": 10}));
    assert!(duration_ms.is_some());
    assert_eq!(
        result.as_ref().expect("result").content,
        vec![json!({"type": "text", "text": "done"})]
    );
    assert_eq!(said[1], "mcp test/slow: done");

    // `huge`: the item keeps the whole result; the model is told at most 16 KiB of it.
    let ThreadItem::McpToolCall { result, .. } = &items[1] else {
        unreachable!()
    };
    let whole = result.as_ref().expect("result").content[0]["text"]
        .as_str()
        .expect("text")
        .len();
    assert_eq!(whole, 100_000);
    assert!(
        said[2].len() < 16 * 1024 + 100,
        "{} bytes told",
        said[2].len()
    );
    assert!(said[2].contains("bytes omitted"), "{}", &said[2][..80]);

    // `fail`: the server answered with a tool error; the model is told it failed.
    assert_eq!(
        said[3],
        "mcp test/fail: the tool failed: it failed, as asked"
    );
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("shutdown");
}

/// A call that times out, then one that `turn/interrupt` ends as soon as its item starts:
/// the server must be told of both (`notifications/cancelled`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_and_interrupt_cancel_the_call_at_the_server() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let home = tempfile::tempdir().expect("home");
    let log = home.path().join("events.log");
    let mut handle = start(
        home.path(),
        &format!(
            "[mcp_servers.test]\ncommand = \"{binary}\"\nargs = [\"--log\", \"{}\"]\n\
             tool_timeout_sec = 0.5\n\
             [mcp_servers.patient]\ncommand = \"{binary}\"\nargs = [\"--log\", \"{}\"]\n",
            log.display(),
            log.display()
        ),
    )
    .await;
    connected(&handle, "test").await;
    connected(&handle, "patient").await;
    let thread = start_thread(&handle, "never").await;

    // The tool timeout fails the call, and the server is told to stop.
    start_turn(&handle, &thread, "/mcp test never_answer").await;
    let (_, turn) = drive(&mut handle, no_requests, |_, _| {}).await;
    assert_eq!(turn.status, TurnStatus::Completed);
    let (status, error) = status_and_error(&calls(&turn)[0]);
    assert_eq!(status, McpToolCallStatus::Failed);
    assert!(
        error
            .as_deref()
            .is_some_and(|error| error.contains("did not answer within 0.5 s")),
        "{error:?}"
    );
    assert!(messages(&turn)[0].starts_with("mcp test/never_answer: the tool failed: "));

    // turn/interrupt cancels the call: the item fails, the turn is interrupted, and the
    // server got notifications/cancelled.
    start_turn(&handle, &thread, "/mcp patient never_answer").await;
    let thread_id = thread.clone();
    let (_, turn) = drive(&mut handle, no_requests, move |event, handle| {
        if let InProcessServerEvent::ServerNotification(ServerNotification::ItemStarted(started)) =
            event
            && matches!(started.item, ThreadItem::McpToolCall { .. })
        {
            let request = ClientRequest::try_from(JSONRPCRequest {
                id: RequestId::Integer(9_999),
                method: "turn/interrupt".to_owned(),
                params: Some(json!({"threadId": thread_id, "turnId": started.turn_id})),
            })
            .expect("decodes");
            // Sent at once, while the call's request may still be on its way to the server:
            // the cancellation must not overtake it (crates/mcp/src/in_order.rs).
            tokio::spawn(handle.request(request));
        }
    })
    .await;
    assert_eq!(turn.status, TurnStatus::Interrupted);
    let (status, error) = status_and_error(&calls(&turn)[0]);
    assert_eq!(status, McpToolCallStatus::Failed);
    assert_eq!(
        error.as_deref(),
        Some("the turn was interrupted; the call was cancelled")
    );
    within(PROMPT, "the cancellations logged", async {
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.matches("cancelled never_answer").count() == 2 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_servers_are_waited_for_and_one_that_failed_fails_the_turn() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let home = tempfile::tempdir().expect("home");
    // No wait for the server before the turn: `required` makes the turn wait.
    let mut handle = start(
        home.path(),
        &format!("[mcp_servers.test]\ncommand = \"{binary}\"\nrequired = true\n"),
    )
    .await;
    let thread = start_thread(&handle, "never").await;
    start_turn(&handle, &thread, "/mcp test echo {\"text\": \"ready\"}").await;
    let (_, turn) = drive(&mut handle, no_requests, |_, _| {}).await;
    assert_eq!(messages(&turn), ["mcp test/echo: {\"echo\":\"ready\"}"]);
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("shutdown");

    let home = tempfile::tempdir().expect("home");
    let mut handle = start(
        home.path(),
        "[mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\nrequired = true\n",
    )
    .await;
    let thread = start_thread(&handle, "never").await;
    start_turn(&handle, &thread, "hello").await;
    let (_, turn) = drive(&mut handle, no_requests, |_, _| {}).await;
    assert_eq!(turn.status, TurnStatus::Failed);
    let message = turn.error.expect("error").message;
    assert!(
        message.starts_with("a required MCP server is not ready: MCP server broken")
            && message.contains("cannot start MCP server broken"),
        "{message}"
    );
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompted_tools_ask_as_the_reference_does_accepted_and_declined() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let home = tempfile::tempdir().expect("home");
    let mut handle = start(
        home.path(),
        &format!(
            "[mcp_servers.test]\ncommand = \"{binary}\"\n\
             [mcp_servers.test.tools.echo]\napproval_mode = \"prompt\"\n"
        ),
    )
    .await;
    connected(&handle, "test").await;
    let thread = start_thread(&handle, "on-request").await;
    start_turn(
        &handle,
        &thread,
        "/mcp test echo {\"text\": \"one\"}\n/mcp test echo {\"text\": \"two\"}\n\
         /mcp test echo {\"text\": \"three\"}",
    )
    .await;
    let mut answers = vec![
        json!({"action": "accept", "content": {}}),
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
    ]
    .into_iter();
    let mut asked = Vec::new();
    let (_, turn) = drive(
        &mut handle,
        |request| {
            let ServerRequest::McpServerElicitationRequest { params, .. } = request else {
                panic!("unexpected {request:?}")
            };
            asked.push(serde_json::to_value(params).expect("json"));
            answers.next().expect("three questions")
        },
        |_, _| {},
    )
    .await;
    assert_eq!(asked.len(), 3);
    assert_eq!(
        asked[0],
        json!({"threadId": thread, "turnId": turn.id, "serverName": "test", "mode": "form",
               "message": "Allow the test MCP server to run tool \"echo\"?",
               "requestedSchema": {"type": "object", "properties": {}},
               "_meta": {"codex_approval_kind": "mcp_tool_call", "tool_name": "echo",
                         "tool_description": "Answers its text",
                         "tool_params": {"text": "one"},
                         "tool_params_display": [
                             {"name": "text", "value": "one", "display_name": "text"}]}})
    );
    let items = calls(&turn);
    assert_eq!(
        items.iter().map(status_and_error).collect::<Vec<_>>(),
        [
            (McpToolCallStatus::Completed, None),
            (
                McpToolCallStatus::Failed,
                Some("user rejected MCP tool call".to_owned())
            ),
            (
                McpToolCallStatus::Failed,
                Some("user cancelled MCP tool call".to_owned())
            ),
        ]
    );
    assert_eq!(
        messages(&turn),
        [
            "mcp test/echo: {\"echo\":\"one\"}",
            "mcp test/echo: the tool failed: user rejected MCP tool call",
            "mcp test/echo: the tool failed: user cancelled MCP tool call",
        ]
    );
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("shutdown");
}

/// Runs a turn of `prompt` whose MCP elicitation requests are answered `answer`: the
/// requests' params, the turn's events, and the turn.
async fn elicit_turn(
    handle: &mut InProcessClientHandle,
    thread: &str,
    prompt: &str,
    answer: Value,
) -> (Vec<Value>, Vec<InProcessServerEvent>, Turn) {
    start_turn(handle, thread, prompt).await;
    let mut asked = Vec::new();
    let (events, turn) = drive(
        handle,
        |request| {
            let ServerRequest::McpServerElicitationRequest { params, .. } = request else {
                panic!("unexpected {request:?}")
            };
            asked.push(serde_json::to_value(params).expect("json"));
            answer.clone()
        },
        |_, _| {},
    )
    .await;
    (asked, events, turn)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_reaches_the_calls_thread_and_an_unattributable_one_is_declined() {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let home = tempfile::tempdir().expect("home");
    let mut handle = start(
        home.path(),
        &format!("[mcp_servers.test]\ncommand = \"{binary}\"\n"),
    )
    .await;
    connected(&handle, "test").await;
    let thread = start_thread(&handle, "never").await;
    let (asked, events, turn) = elicit_turn(
        &mut handle,
        &thread,
        "/mcp test elicit {\"message\": \"Which answer?\"}",
        json!({"action": "accept", "content": {"answer": "42"}}),
    )
    .await;
    assert_eq!(
        asked,
        [
            json!({"threadId": thread, "turnId": turn.id, "serverName": "test", "mode": "form",
                "message": "Which answer?",
                "requestedSchema": {"type": "object",
                                    "properties": {"answer": {"type": "string"}},
                                    "required": ["answer"]}})
        ]
    );
    assert!(notifications(&events).iter().any(|note| matches!(
        note,
        ServerNotification::ServerRequestResolved(resolved) if resolved.turn_id == turn.id
    )));
    assert_eq!(
        messages(&turn),
        ["mcp test/elicit: accepted {\"answer\":\"42\"}"]
    );

    // URL mode: the URL to open reaches the client as the server sent it.
    let (asked, _, turn) = elicit_turn(
        &mut handle,
        &thread,
        "/mcp test elicit {\"message\": \"Sign in\", \"url\": \"https://example.test/login\"}",
        json!({"action": "accept"}),
    )
    .await;
    assert_eq!(
        asked,
        [
            json!({"threadId": thread, "turnId": turn.id, "serverName": "test", "mode": "url",
                "message": "Sign in", "url": "https://example.test/login",
                "elicitationId": "test-elicitation"})
        ]
    );
    assert_eq!(messages(&turn), ["mcp test/elicit: accepted null"]);

    // A client's own mcpServer/tool/call belongs to no turn: its elicitation is declined.
    let direct = call(
        &handle,
        "mcpServer/tool/call",
        json!({"threadId": thread, "server": "test", "tool": "elicit"}),
    )
    .await;
    assert_eq!(direct["content"][0]["text"], "declined");
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_offered_the_tool_calls_it_by_name_and_is_told_the_result() {
    use tandem_test_support::mock_http::{MockHttpServer, MockResponse};
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let mock = MockHttpServer::start().await.expect("mock");
    mock.push(
        MockResponse::sse()
            .event(
                &agent_support::call_chunk(
                    Some(0),
                    Some("call_1"),
                    Some("mcp__test__echo"),
                    "{\"text\": \"from the model\"}",
                )
                .to_string(),
            )
            .event(&agent_support::finish_chunk("tool_calls").to_string())
            .event("[DONE]"),
    );
    mock.push(
        MockResponse::sse()
            .event(&agent_support::text_chunk("done").to_string())
            .event(&agent_support::finish_chunk("stop").to_string())
            .event("[DONE]"),
    );
    let home = tempfile::tempdir().expect("home");
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp_servers.test]\ncommand = \"{binary}\"\nrequired = true\n"),
    )
    .expect("config");
    let mut handle = agent_support::start(agent_support::memory_options(
        home.path(),
        &mock.url("/v1"),
        &[],
    ))
    .await;
    let thread = agent_support::start_thread(&handle, json!({})).await;
    agent_support::start_turn(&handle, &thread, "echo something").await;
    let (_, turn) = drive(&mut handle, no_requests, |_, _| {}).await;
    assert_eq!(turn.status, TurnStatus::Completed, "{turn:?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let offered = requests[0].json()["tools"].clone();
    let echo = offered
        .as_array()
        .expect("tools")
        .iter()
        .find(|tool| tool["function"]["name"] == "mcp__test__echo")
        .expect("echo offered")
        .clone();
    assert_eq!(echo["function"]["description"], "Answers its text");
    assert_eq!(
        echo["function"]["parameters"],
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    );
    let told: Vec<Value> = requests[1].json()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|message| message["role"] == "tool")
        .cloned()
        .collect();
    assert_eq!(told.len(), 1);
    assert_eq!(told[0]["tool_call_id"], "call_1");
    assert_eq!(told[0]["content"], "{\"echo\":\"from the model\"}");
    let (status, error) = status_and_error(&calls(&turn)[0]);
    assert_eq!((status, error), (McpToolCallStatus::Completed, None));
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_responses_wire_too() {
    use tandem_test_support::mock_http::{MockHttpServer, MockResponse};
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let mock = MockHttpServer::start().await.expect("mock");
    let item = json!({"type": "function_call", "id": "fc_1", "call_id": "call_r",
                      "name": "mcp__test__echo", "arguments": "{\"text\": \"responses\"}",
                      "status": "completed"});
    let event = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        (kind.to_owned(), data.to_string())
    };
    let completed = |id: &str| {
        event(
            "response.completed",
            json!({"response": {"id": id, "status": "completed", "usage": {"total_tokens": 9}}}),
        )
    };
    let mut call = MockResponse::sse();
    for (kind, data) in [
        event("response.created", json!({"response": {"id": "resp_1"}})),
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": item}),
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        ),
        completed("resp_1"),
    ] {
        call = call.named_event(&kind, &data);
    }
    mock.push(call);
    let mut answer = MockResponse::sse();
    for (kind, data) in [
        event("response.created", json!({"response": {"id": "resp_2"}})),
        event(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "done"}),
        ),
        completed("resp_2"),
    ] {
        answer = answer.named_event(&kind, &data);
    }
    mock.push(answer);
    let home = tempfile::tempdir().expect("home");
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp_servers.test]\ncommand = \"{binary}\"\nrequired = true\n"),
    )
    .expect("config");
    let mut handle = agent_support::start(agent_support::memory_options(
        home.path(),
        &mock.url("/v1"),
        &[("model_providers.mock.wire_api", "responses".into())],
    ))
    .await;
    let thread = agent_support::start_thread(&handle, json!({})).await;
    agent_support::start_turn(&handle, &thread, "echo something").await;
    let (_, turn) = drive(&mut handle, no_requests, |_, _| {}).await;
    assert_eq!(turn.status, TurnStatus::Completed, "{turn:?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/responses");
    let tools = requests[0].json()["tools"].clone();
    let echo = tools
        .as_array()
        .expect("tools")
        .iter()
        .find(|tool| tool["name"] == "mcp__test__echo")
        .expect("echo offered")
        .clone();
    assert_eq!(
        echo["parameters"],
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    );
    let input = requests[1].json()["input"].clone();
    let output = input
        .as_array()
        .expect("input")
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .expect("the result goes back")
        .clone();
    assert_eq!(output["call_id"], "call_r");
    assert_eq!(output["output"], "{\"echo\":\"responses\"}");
    let (status, _) = status_and_error(&calls(&turn)[0]);
    assert_eq!(status, McpToolCallStatus::Completed);
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("shutdown");
}
