//! Acceptance point 10 of issue 10: the Responses wire (`wire_api = "responses"`) passes the
//! streaming (1), single tool call (2), 429 retry (6) and interrupt (8) tests.

mod agent_support;

use std::time::Duration;

use agent_support::*;
use serde_json::{Value, json};
use tandem_host::in_process::InProcessServerEvent;
use tandem_protocol::client_methods::TurnInterrupt;
use tandem_protocol::{ServerNotification, ThreadItem, TurnStatus};
use tandem_server::config::toml;
use tandem_test_support::mock_http::{Gate, MockHttpServer, MockResponse};
use tandem_test_support::within;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const INTERRUPT_BOUND: Duration = Duration::from_secs(1);

fn responses_wire() -> Vec<(&'static str, toml::Value)> {
    vec![("model_providers.mock.wire_api", "responses".into())]
}

/// One Responses event: the `event:` line and the data, whose `type` repeats it.
fn event(kind: &str, mut data: Value) -> String {
    data["type"] = json!(kind);
    format!("event: {kind}\ndata: {data}\n\n")
}

fn text_delta(text: &str) -> String {
    event(
        "response.output_text.delta",
        json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
    )
}

fn completed() -> String {
    event(
        "response.completed",
        json!({"response": {"id": "resp_1", "status": "completed", "usage": {"total_tokens": 9}}}),
    )
}

fn text_response(text: &str) -> String {
    [
        event("response.created", json!({"response": {"id": "resp_1"}})),
        text_delta(text),
        completed(),
    ]
    .concat()
}

/// A response whose only output is a `shell` call with `command`, its arguments streamed in
/// fragments.
fn shell_call_response(call_id: &str, command: &str) -> String {
    let arguments = json!({ "command": command }).to_string();
    let (head, tail) = arguments.split_at(arguments.len() / 2);
    let item = |arguments: &str| {
        json!({"type": "function_call", "id": "fc_1", "call_id": call_id, "name": "shell",
               "arguments": arguments, "status": "in_progress"})
    };
    [
        event("response.created", json!({"response": {"id": "resp_2"}})),
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": item("")}),
        ),
        event(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "output_index": 0, "delta": head}),
        ),
        event(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "output_index": 0, "delta": tail}),
        ),
        event(
            "response.function_call_arguments.done",
            json!({"item_id": "fc_1", "output_index": 0, "arguments": arguments}),
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 0, "item": item(&arguments)}),
        ),
        completed(),
    ]
    .concat()
}

fn sse_response(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

async fn mount(server: &MockServer, response: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(response)
        .up_to_n_times(1)
        .mount(server)
        .await;
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("recording")
        .iter()
        .map(|request| request.body_json().expect("JSON"))
        .collect()
}

#[tokio::test]
async fn responses_text_deltas_reach_the_client_before_the_stream_ends() {
    let mock = MockHttpServer::start().await.expect("mock");
    let gate = Gate::new();
    let served = mock.push(
        MockResponse::sse()
            .bytes(text_delta("Hel"))
            .wait(&gate)
            .bytes(text_delta("lo"))
            .bytes(completed()),
    );
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &mock.url("/v1"),
        &responses_wire(),
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "greet me").await;
    let first = within(PROMPT, "first delta", async {
        loop {
            match handle.next_event().await.expect("events") {
                InProcessServerEvent::ServerNotification(
                    ServerNotification::AgentMessageDelta(delta),
                ) => return delta.delta,
                InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(
                    done,
                )) => panic!("turn ended first: {done:?}"),
                _ => {}
            }
        }
    })
    .await;
    assert_eq!(first, "Hel");
    assert!(!served.is_client_closed());
    gate.open();
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    assert_eq!(record.streamed_text(), "lo");
    let requests = mock.requests();
    assert_eq!(requests[0].path, "/v1/responses");
    let body = requests[0].json();
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], true);
    assert!(body["instructions"].is_string());
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "greet me"}]}])
    );
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(tools, vec!["shell", "ask_user", "update_plan"]);
    shutdown(handle).await;
}

#[tokio::test]
async fn a_responses_function_call_runs_shell_and_its_output_goes_back() {
    let server = MockServer::start().await;
    mount(
        &server,
        sse_response(shell_call_response("call_r", "echo via responses")),
    )
    .await;
    mount(&server, sse_response(text_response("done"))).await;
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &format!("{}/v1", server.uri()),
        &responses_wire(),
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
    let ran: Vec<(String, Option<String>)> = record
        .turn
        .items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::CommandExecution {
                command,
                aggregated_output,
                ..
            } => Some((
                command.clone(),
                aggregated_output.as_deref().map(str::to_owned),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        ran,
        vec![(
            "echo via responses".to_owned(),
            Some("via responses\n".to_owned())
        )]
    );
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let input = bodies[1]["input"].as_array().expect("input");
    let call = input
        .iter()
        .find(|item| item["type"] == "function_call")
        .expect("the call is replayed");
    assert_eq!(call["call_id"], "call_r");
    assert_eq!(call["name"], "shell");
    let output = input
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .expect("its output");
    assert_eq!(output["call_id"], "call_r");
    assert!(
        output["output"]
            .as_str()
            .is_some_and(|text| text.contains("exit code: 0") && text.contains("via responses")),
        "{output}"
    );
    shutdown(handle).await;
}

#[tokio::test]
async fn a_responses_429_with_retry_after_is_retried_once() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(429).insert_header("retry-after", "1"),
    )
    .await;
    mount(&server, sse_response(text_response("after the wait"))).await;
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &format!("{}/v1", server.uri()),
        &responses_wire(),
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "hi").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    let flags: Vec<bool> = record
        .errors()
        .iter()
        .map(|error| error.will_retry)
        .collect();
    assert_eq!(flags, vec![true]);
    assert_eq!(record.streamed_text(), "after the wait");
    assert_eq!(bodies(&server).await.len(), 2);
    shutdown(handle).await;
}

#[tokio::test]
async fn interrupting_a_held_responses_stream_closes_the_connection() {
    let mock = MockHttpServer::start().await.expect("mock");
    let gate = Gate::new();
    let served = mock.push(
        MockResponse::sse()
            .bytes(text_delta("thinking"))
            .wait(&gate)
            .bytes(completed()),
    );
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &mock.url("/v1"),
        &responses_wire(),
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    let turn = start_turn(&handle, &thread, "think").await;
    within(PROMPT, "first delta", async {
        loop {
            if let InProcessServerEvent::ServerNotification(
                ServerNotification::AgentMessageDelta(_),
            ) = handle.next_event().await.expect("events")
            {
                return;
            }
        }
    })
    .await;
    let sender = handle.sender();
    let interrupt = tokio::spawn(async move {
        sender
            .request(request::<TurnInterrupt>(
                json!({"threadId": thread, "turnId": turn}),
            ))
            .await
    });
    let record = within(
        INTERRUPT_BOUND,
        "interrupted turn completes",
        drive_turn(&mut handle, &Answers::default()),
    )
    .await;
    assert_eq!(record.turn.status, TurnStatus::Interrupted);
    within(
        INTERRUPT_BOUND,
        "the mock sees the close",
        served.client_closed(),
    )
    .await;
    assert_eq!(interrupt.await.expect("task").expect("host"), Ok(json!({})));
    gate.open();
    shutdown(handle).await;
}
