//! Acceptance tests of issue 10 for the Chat Completions wire: streaming (1), tool calls (2),
//! the follow-up request (3), declined approvals (4), dynamic tools (5), history and resume
//! (9), plus model selection and dynamic tool names. Each test starts its own mock on a
//! loopback port: `wiremock` for request assertions and whole-body SSE, the raw
//! `tandem_test_support::mock_http` server where a stream must be held open.

mod agent_support;

use std::sync::Arc;

use agent_support::*;
use serde_json::{Value, json};
use tandem_host::in_process::InProcessServerEvent;
use tandem_protocol::client_methods::{
    ConfigRead, ThreadRead, ThreadResume, ThreadStart, TurnStart,
};
use tandem_protocol::{
    CommandExecutionApprovalDecision, CommandExecutionStatus, ServerNotification, ServerRequest,
    ThreadItem, TurnStatus, error_codes,
};
use tandem_test_support::mock_http::{Gate, MockHttpServer, MockResponse};
use tandem_test_support::within;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn sse_response(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

/// Mounts `answers` in order, each served once, on `POST /v1/chat/completions`.
async fn mount_answers(server: &MockServer, answers: Vec<String>) {
    for answer in answers {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(sse_response(answer))
            .up_to_n_times(1)
            .mount(server)
            .await;
    }
}

async fn request_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("recording on")
        .iter()
        .map(|request| request.body_json::<Value>().expect("JSON body"))
        .collect()
}

fn commands(turn: &tandem_protocol::Turn) -> Vec<(String, CommandExecutionStatus, String)> {
    turn.items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::CommandExecution {
                command,
                status,
                aggregated_output,
                ..
            } => Some((
                command.clone(),
                *status,
                aggregated_output.clone().unwrap_or_default().into_string(),
            )),
            _ => None,
        })
        .collect()
}

fn agent_texts(turn: &tandem_protocol::Turn) -> Vec<String> {
    turn.items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::AgentMessage { text, .. } => Some(text.to_string()),
            _ => None,
        })
        .collect()
}

/// The tool messages of a request body, as `(tool_call_id, content)`.
fn tool_messages(body: &Value) -> Vec<(String, String)> {
    messages(body)
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            (
                message["tool_call_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                message["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The ids of the tool calls of the assistant messages of a request body.
fn assistant_call_ids(body: &Value) -> Vec<String> {
    messages(body)
        .iter()
        .filter(|message| message["role"] == "assistant")
        .flat_map(|message| {
            message["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|call| call["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 1. Deltas arrive while the model's stream is still open
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn text_deltas_reach_the_client_before_the_stream_ends() {
    let mock = MockHttpServer::start().await.expect("mock");
    let gate = Gate::new();
    let served = mock.push(
        MockResponse::sse()
            .event(&text_chunk("Hel").to_string())
            .wait(&gate)
            .event(&text_chunk("lo").to_string())
            .event("[DONE]"),
    );
    let home = home();
    let mut handle = start(memory_options(home.path(), &mock.url("/v1"), &[])).await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "greet me").await;

    // The first delta arrives while the mock holds the rest of the body behind the gate.
    let first = within(PROMPT, "first delta", async {
        loop {
            match handle.next_event().await.expect("events") {
                InProcessServerEvent::ServerNotification(
                    ServerNotification::AgentMessageDelta(delta),
                ) => return delta.delta,
                InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(
                    done,
                )) => panic!("turn ended before its first delta: {done:?}"),
                _ => {}
            }
        }
    })
    .await;
    assert_eq!(first, "Hel");
    assert!(!served.is_client_closed(), "the stream is still open");
    gate.open();

    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(record.turn.status, TurnStatus::Completed);
    assert_eq!(record.streamed_text(), "lo");
    assert_eq!(agent_texts(&record.turn), vec!["Hello"]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    let body = requests[0].json();
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(
        roles_and_texts(&body).last().cloned(),
        Some(("user".to_owned(), "greet me".to_owned()))
    );
    shutdown(handle).await;
}

// ---------------------------------------------------------------------------------------------
// 2. Tool calls as real servers stream them; 3. the follow-up request
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_call_split_across_many_fragments_runs_the_right_command() {
    let server = MockServer::start().await;
    let fragments = ["{\"com", "mand\"", ": \"echo", " frag", "mented\"", "}"];
    let mut chunks = vec![call_chunk(Some(0), Some("call_a"), Some("shell"), "")];
    chunks.extend(
        fragments
            .iter()
            .map(|fragment| call_chunk(Some(0), None, None, fragment)),
    );
    chunks.push(finish_chunk("tool_calls"));
    mount_answers(&server, vec![sse(&chunks), text_answer("done")]).await;
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &format!("{}/v1", server.uri()),
        &[],
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "run it").await;

    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    let ran = commands(&record.turn);
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(ran[0].0, "echo fragmented");
    assert_eq!(ran[0].1, CommandExecutionStatus::Completed);
    assert_eq!(ran[0].2, "fragmented\n");

    // 3: the second request carries the assistant's call and the result for its id.
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let assistant = messages(&bodies[1])
        .into_iter()
        .find(|message| message["role"] == "assistant")
        .expect("assistant message");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_a");
    assert_eq!(assistant["tool_calls"][0]["type"], "function");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "shell");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        "{\"command\": \"echo fragmented\"}"
    );
    let results = tool_messages(&bodies[1]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "call_a");
    assert!(results[0].1.contains("exit code: 0"), "{}", results[0].1);
    assert!(results[0].1.contains("fragmented"), "{}", results[0].1);
    assert_eq!(agent_texts(&record.turn), vec!["done"]);
    shutdown(handle).await;
}

/// Runs one turn whose first answer is `first` (two calls: `echo one`, `echo two`) and checks
/// both ran and the follow-up request answers both ids, the way protocol point 3 asks.
async fn two_calls_run_and_are_answered(first: String, ids: [&str; 2]) {
    let server = MockServer::start().await;
    mount_answers(&server, vec![first, text_answer("both done")]).await;
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &format!("{}/v1", server.uri()),
        &[],
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "run both").await;

    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    let ran: Vec<String> = commands(&record.turn).into_iter().map(|c| c.0).collect();
    assert_eq!(ran, vec!["echo one", "echo two"]);
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(assistant_call_ids(&bodies[1]), ids);
    let answered: Vec<String> = tool_messages(&bodies[1]).into_iter().map(|m| m.0).collect();
    assert_eq!(answered, ids);
    shutdown(handle).await;
}

fn echo(word: &str) -> String {
    json!({ "command": format!("echo {word}") }).to_string()
}

#[tokio::test]
async fn openai_style_parallel_calls_at_indices_zero_and_one_both_run() {
    let one = echo("one");
    let two = echo("two");
    let (one_head, one_tail) = one.split_at(5);
    let (two_head, two_tail) = two.split_at(5);
    let answer = sse(&[
        call_chunk(Some(0), Some("call_1"), Some("shell"), one_head),
        call_chunk(Some(1), Some("call_2"), Some("shell"), two_head),
        call_chunk(Some(0), None, None, one_tail),
        call_chunk(Some(1), None, None, two_tail),
        finish_chunk("tool_calls"),
    ]);
    two_calls_run_and_are_answered(answer, ["call_1", "call_2"]).await;
}

#[tokio::test]
async fn ollama_style_parallel_calls_at_index_zero_with_two_ids_both_run() {
    let answer = sse(&[
        call_chunk(Some(0), Some("call_x"), Some("shell"), &echo("one")),
        call_chunk(Some(0), Some("call_y"), Some("shell"), &echo("two")),
        finish_chunk("tool_calls"),
    ]);
    two_calls_run_and_are_answered(answer, ["call_x", "call_y"]).await;
}

#[tokio::test]
async fn parallel_calls_without_index_both_run() {
    let answer = sse(&[
        call_chunk(None, Some("call_p"), Some("shell"), &echo("one")),
        call_chunk(None, Some("call_q"), Some("shell"), &echo("two")),
        finish_chunk("tool_calls"),
    ]);
    two_calls_run_and_are_answered(answer, ["call_p", "call_q"]).await;
}

#[tokio::test]
async fn finish_reason_stop_with_tool_calls_still_runs_them() {
    let answer = sse(&[
        call_chunk(Some(0), Some("call_s"), Some("shell"), &echo("stopped")),
        finish_chunk("stop"),
    ]);
    let server = MockServer::start().await;
    mount_answers(&server, vec![answer, text_answer("ok")]).await;
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &format!("{}/v1", server.uri()),
        &[],
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "go").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(record.turn.status, TurnStatus::Completed);
    assert_eq!(commands(&record.turn)[0].0, "echo stopped");
    assert_eq!(request_bodies(&server).await.len(), 2);
    shutdown(handle).await;
}

// ---------------------------------------------------------------------------------------------
// 4. A declined approval; 5. a dynamic tool
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_declined_command_is_reported_to_the_model_and_the_turn_goes_on() {
    let server = MockServer::start().await;
    mount_answers(
        &server,
        vec![
            shell_answer("call_rm", "rm -rf /tmp/nothing-here"),
            text_answer("understood"),
        ],
    )
    .await;
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &format!("{}/v1", server.uri()),
        &[],
    ))
    .await;
    let thread = start_thread(&handle, json!({"approvalPolicy": "on-request"})).await;
    start_turn(&handle, &thread, "clean up").await;
    let answers = Answers {
        approval: CommandExecutionApprovalDecision::Decline,
        ..Answers::default()
    };
    let record = drive_turn(&mut handle, &answers).await;
    assert_eq!(record.turn.status, TurnStatus::Completed);
    assert!(matches!(
        record.server_requests().as_slice(),
        [ServerRequest::CommandExecutionRequestApproval { .. }]
    ));
    let ran = commands(&record.turn);
    assert_eq!(ran[0].1, CommandExecutionStatus::Declined);
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let results = tool_messages(&bodies[1]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "call_rm");
    assert!(results[0].1.contains("declined"), "{}", results[0].1);
    assert_eq!(agent_texts(&record.turn), vec!["understood"]);
    shutdown(handle).await;
}

#[tokio::test]
async fn a_dynamic_tool_call_goes_to_the_client_and_its_answer_to_the_model() {
    let server = MockServer::start().await;
    let call = sse(&[
        call_chunk(
            Some(0),
            Some("call_l"),
            Some("lookup"),
            "{\"key\": \"colour\"}",
        ),
        finish_chunk("tool_calls"),
    ]);
    mount_answers(&server, vec![call, text_answer("it is teal")]).await;
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &format!("{}/v1", server.uri()),
        &[],
    ))
    .await;
    let tools = json!([{"type": "function", "name": "lookup", "description": "looks a key up",
                        "inputSchema": {"type": "object",
                                        "properties": {"key": {"type": "string"}}}}]);
    let thread = start_thread(&handle, json!({"dynamicTools": tools})).await;
    start_turn(&handle, &thread, "what colour?").await;
    let answers = Answers {
        tool: Arc::new(|tool, arguments| {
            assert_eq!(tool, "lookup");
            assert_eq!(arguments["key"], "colour");
            json!({"contentItems": [{"type": "inputText", "text": "teal"}], "success": true})
        }),
        ..Answers::default()
    };
    let record = drive_turn(&mut handle, &answers).await;
    assert_eq!(record.turn.status, TurnStatus::Completed);
    assert!(matches!(
        record.server_requests().as_slice(),
        [ServerRequest::ToolCall { params, .. }] if params.tool == "lookup"
    ));
    let bodies = request_bodies(&server).await;
    // The tool is offered to the model with the client's schema.
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    assert_eq!(
        offered,
        vec!["shell", "apply_patch", "ask_user", "update_plan", "lookup"]
    );
    assert_eq!(
        bodies[0]["tools"][4]["function"]["parameters"]["properties"]["key"]["type"],
        "string"
    );
    assert_eq!(
        tool_messages(&bodies[1]),
        vec![("call_l".to_owned(), "teal".to_owned())]
    );
    assert_eq!(agent_texts(&record.turn), vec!["it is teal"]);
    shutdown(handle).await;
}

// ---------------------------------------------------------------------------------------------
// 9. History: the next turn, and a resumed thread after a restart
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn later_turns_send_the_earlier_ones_also_after_a_restart() {
    let server = MockServer::start().await;
    mount_answers(
        &server,
        vec![
            shell_answer("call_h", "echo history"),
            text_answer("ran it"),
            text_answer("second answer"),
            text_answer("third answer"),
        ],
    )
    .await;
    let base_url = format!("{}/v1", server.uri());
    let home = home();
    // The durable store: the restart below must find the thread on disk.
    let mut handle = start(options_at(home.path(), &base_url, &[])).await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "first question").await;
    let first = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(first.turn.status, TurnStatus::Completed);
    start_turn(&handle, &thread, "second question").await;
    let second = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(second.turn.status, TurnStatus::Completed);

    let command_id = first
        .turn
        .items
        .iter()
        .find_map(|item| match item {
            ThreadItem::CommandExecution { id, .. } => Some(id.clone()),
            _ => None,
        })
        .expect("the command item");
    let expected_history = |body: &Value| {
        let texts = roles_and_texts(body);
        assert_eq!(texts[0].0, "system");
        let conversation: Vec<(String, String)> = texts[1..].to_vec();
        assert_eq!(conversation[0], ("user".into(), "first question".into()));
        assert_eq!(conversation[1].0, "assistant");
        assert_eq!(conversation[2].0, "tool");
        assert_eq!(conversation[3], ("assistant".into(), "ran it".into()));
        assert_eq!(conversation[4], ("user".into(), "second question".into()));
        // Replayed calls carry the items' ids.
        assert_eq!(assistant_call_ids(body), vec![command_id.clone()]);
        let results = tool_messages(body);
        assert_eq!(results[0].0, command_id);
        assert!(results[0].1.contains("history"), "{results:?}");
        conversation
    };
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    assert_eq!(expected_history(&bodies[2]).len(), 5);
    shutdown(handle).await;

    // A new host on the same home resumes the thread and sends the whole history again.
    let mut handle = start(options_at(home.path(), &base_url, &[])).await;
    call::<ThreadResume>(&handle, json!({"threadId": thread})).await;
    start_turn(&handle, &thread, "third question").await;
    let third = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(third.turn.status, TurnStatus::Completed);
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 4);
    let conversation = expected_history(&bodies[3]);
    assert_eq!(
        conversation[5..],
        [
            ("assistant".to_owned(), "second answer".to_owned()),
            ("user".to_owned(), "third question".to_owned())
        ]
    );
    shutdown(handle).await;
}

// ---------------------------------------------------------------------------------------------
// Model selection, tool names, config/read
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn thread_and_turn_models_select_the_model_and_thread_model_reports_it() {
    let server = MockServer::start().await;
    mount_answers(
        &server,
        vec![text_answer("a"), text_answer("b"), text_answer("c")],
    )
    .await;
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &format!("{}/v1", server.uri()),
        &[],
    ))
    .await;

    let default = call::<ThreadStart>(&handle, json!({})).await;
    assert_eq!(default.thread.model.as_deref(), Some(MODEL));
    assert_eq!(default.session.model, MODEL);
    assert_eq!(default.thread.model_provider, "mock");

    let chosen = call::<ThreadStart>(&handle, json!({"model": "thread-model"})).await;
    assert_eq!(chosen.thread.model.as_deref(), Some("thread-model"));
    let thread = chosen.thread.id;
    start_turn(&handle, &thread, "one").await;
    drive_turn(&mut handle, &Answers::default()).await;
    call::<TurnStart>(
        &handle,
        json!({"threadId": thread, "model": "turn-model",
               "input": [{"type": "text", "text": "two"}]}),
    )
    .await;
    drive_turn(&mut handle, &Answers::default()).await;
    let read = call::<ThreadRead>(&handle, json!({"threadId": thread})).await;
    assert_eq!(read.thread.model.as_deref(), Some("turn-model"));
    // `null` goes back to the server's default.
    call::<TurnStart>(
        &handle,
        json!({"threadId": thread, "model": null, "input": [{"type": "text", "text": "three"}]}),
    )
    .await;
    drive_turn(&mut handle, &Answers::default()).await;

    let models: Vec<Value> = request_bodies(&server)
        .await
        .iter()
        .map(|body| body["model"].clone())
        .collect();
    assert_eq!(
        models,
        vec![json!("thread-model"), json!("turn-model"), json!(MODEL)]
    );
    shutdown(handle).await;
}

#[tokio::test]
async fn the_scripted_agent_reports_its_model_on_the_thread() {
    let home = home();
    let options = tandem_server::ServerOptions::load(
        tandem_server::ServerConfig::builder().tandem_home(home.path()),
    )
    .expect("options")
    .with_store(Arc::new(tandem_server::store::InMemoryThreadStore::new()));
    let handle = start(options).await;
    let started = call::<ThreadStart>(&handle, json!({})).await;
    assert_eq!(
        started.thread.model.as_deref(),
        Some(tandem_server::DEFAULT_MODEL)
    );
    assert_eq!(started.session.model, tandem_server::DEFAULT_MODEL);
    assert_eq!(started.thread.model_provider, tandem_server::MODEL_PROVIDER);
    shutdown(handle).await;
}

#[tokio::test]
async fn dynamic_tool_names_the_api_would_refuse_are_refused_at_thread_start() {
    let home = home();
    let handle = start(memory_options(home.path(), "http://127.0.0.1:9/v1", &[])).await;
    for name in ["has space", "dotted.name", "", &"x".repeat(65), "ünïcode"] {
        let tools = json!([{"name": name, "description": "d", "inputSchema": {}}]);
        let error = try_call::<ThreadStart>(&handle, json!({"dynamicTools": tools}))
            .await
            .expect_err(name);
        assert_eq!(error.code, error_codes::INVALID_PARAMS, "{name}: {error:?}");
        assert!(error.message.contains("dynamic tool name"), "{error:?}");
    }
    let fine = json!([{"name": format!("ok_name-{}", "y".repeat(56)), "description": "d",
                       "inputSchema": {}}]);
    try_call::<ThreadStart>(&handle, json!({"dynamicTools": fine}))
        .await
        .expect("64 characters of the allowed set");
    shutdown(handle).await;
}

#[tokio::test]
async fn config_read_shows_the_effective_provider_but_not_the_key() {
    let home = home();
    let handle = start(memory_options(
        home.path(),
        "http://127.0.0.1:9/v1",
        &[(
            "model_providers.mock.env_key",
            "TANDEM_TEST_UNSET_KEY".into(),
        )],
    ))
    .await;
    let read = call::<ConfigRead>(&handle, json!({})).await;
    assert_eq!(read.config["model"], MODEL);
    assert_eq!(read.config["model_provider"], "mock");
    let provider = &read.config["model_providers"]["mock"];
    assert_eq!(provider["base_url"], "http://127.0.0.1:9/v1");
    assert_eq!(provider["env_key"], "TANDEM_TEST_UNSET_KEY");
    assert_eq!(provider["wire_api"], "chat");
    assert_eq!(
        read.config["model_providers"]["openai"]["env_key"],
        "OPENAI_API_KEY"
    );
    shutdown(handle).await;
}

#[tokio::test]
async fn shell_calls_honour_workdir_and_timeout() {
    let server = MockServer::start().await;
    let calls = sse(&[
        call_chunk(
            Some(0),
            Some("call_pwd"),
            Some("shell"),
            &json!({"command": "pwd", "workdir": "sub"}).to_string(),
        ),
        call_chunk(
            Some(1),
            Some("call_slow"),
            Some("shell"),
            &json!({"command": "sleep 30", "timeout_ms": 200}).to_string(),
        ),
        finish_chunk("tool_calls"),
    ]);
    mount_answers(&server, vec![calls, text_answer("ok")]).await;
    let home = home();
    let cwd = tempfile::tempdir().expect("cwd");
    std::fs::create_dir(cwd.path().join("sub")).expect("sub");
    let mut handle = start(memory_options(
        home.path(),
        &format!("{}/v1", server.uri()),
        &[],
    ))
    .await;
    let thread = start_thread(&handle, json!({"cwd": cwd.path().display().to_string()})).await;
    start_turn(&handle, &thread, "where am I").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    let sub = cwd.path().join("sub").display().to_string();
    let items: Vec<(String, Option<i32>, String)> = record
        .turn
        .items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::CommandExecution {
                cwd,
                exit_code,
                aggregated_output,
                ..
            } => Some((
                cwd.clone(),
                *exit_code,
                aggregated_output.clone().unwrap_or_default().into_string(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(items[0], (sub.clone(), Some(0), format!("{sub}\n")));
    assert_eq!(items[1].1, Some(124), "the timeout killed it: {items:?}");
    let results = tool_messages(&request_bodies(&server).await[1]);
    assert!(results[1].1.contains("exit code: 124"), "{results:?}");
    shutdown(handle).await;
}
