//! Acceptance tests of issue 10 for failures: retries and final errors (6), trouble in the
//! middle of a stream (7) and `turn/interrupt` while the stream is held open (8). Each test
//! starts its own mock on a loopback port.

mod agent_support;

use std::time::Duration;

use agent_support::*;
use serde_json::json;
use tandem_host::in_process::InProcessServerEvent;
use tandem_protocol::client_methods::TurnInterrupt;
use tandem_protocol::{ServerNotification, ThreadItem, TurnStatus};
use tandem_test_support::mock_http::{Gate, MockHttpServer, MockResponse};
use tandem_test_support::within;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The bound for an interrupted turn to stop (acceptance point 8).
const INTERRUPT_BOUND: Duration = Duration::from_secs(1);

fn sse_response(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

async fn mount_once(server: &MockServer, response: ResponseTemplate, times: u64) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(response)
        .up_to_n_times(times)
        .mount(server)
        .await;
}

async fn request_count(server: &MockServer) -> usize {
    server.received_requests().await.expect("recording").len()
}

/// Starts a host on `base_url` (with `extra` overrides), runs one turn saying `text` and
/// returns what it sent.
async fn one_turn(
    base_url: &str,
    extra: &[(&str, tandem_server::config::toml::Value)],
) -> TurnRecord {
    let home = home();
    let mut handle = start(memory_options(home.path(), base_url, extra)).await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "hello").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    shutdown(handle).await;
    record
}

fn last_agent_text(record: &TurnRecord) -> Option<String> {
    record.turn.items.iter().rev().find_map(|item| match item {
        ThreadItem::AgentMessage { text, .. } => Some(text.to_string()),
        _ => None,
    })
}

/// `willRetry` of every `error` notification, in order.
fn retry_flags(record: &TurnRecord) -> Vec<bool> {
    record
        .errors()
        .iter()
        .map(|error| error.will_retry)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 6. Retries
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_429_with_retry_after_is_retried_once_and_the_turn_completes() {
    let server = MockServer::start().await;
    mount_once(
        &server,
        ResponseTemplate::new(429)
            .insert_header("retry-after", "1")
            .set_body_json(json!({"error": {"message": "slow down", "type": "rate_limit"}})),
        1,
    )
    .await;
    mount_once(&server, sse_response(text_answer("after the wait")), 1).await;
    let record = one_turn(&format!("{}/v1", server.uri()), &[]).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    assert_eq!(retry_flags(&record), vec![true]);
    let error = &record.errors()[0];
    assert_eq!(error.error.message, "Reconnecting... 1/5");
    assert!(
        error
            .error
            .additional_details
            .as_deref()
            .is_some_and(|details| details.contains("429")),
        "{error:?}"
    );
    assert_eq!(last_agent_text(&record).as_deref(), Some("after the wait"));
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn three_500s_then_a_200_send_three_notifications_and_complete() {
    let server = MockServer::start().await;
    mount_once(
        &server,
        ResponseTemplate::new(500).set_body_string("oops"),
        3,
    )
    .await;
    mount_once(&server, sse_response(text_answer("finally")), 1).await;
    let record = one_turn(&format!("{}/v1", server.uri()), &[]).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    assert_eq!(retry_flags(&record), vec![true, true, true]);
    let messages: Vec<String> = record
        .errors()
        .into_iter()
        .map(|error| error.error.message)
        .collect();
    assert_eq!(
        messages,
        vec![
            "Reconnecting... 1/5",
            "Reconnecting... 2/5",
            "Reconnecting... 3/5"
        ]
    );
    assert_eq!(request_count(&server).await, 4);
}

#[tokio::test]
async fn more_500s_than_stream_max_retries_fail_the_turn() {
    let server = MockServer::start().await;
    mount_once(
        &server,
        ResponseTemplate::new(500).set_body_string("down"),
        100,
    )
    .await;
    let record = one_turn(
        &format!("{}/v1", server.uri()),
        &[("model_providers.mock.stream_max_retries", 2.into())],
    )
    .await;
    assert_eq!(record.turn.status, TurnStatus::Failed);
    assert_eq!(retry_flags(&record), vec![true, true, false]);
    let error = record.turn.error.clone().expect("turn error");
    assert!(error.message.contains("HTTP 500"), "{error:?}");
    assert!(
        error.message.contains("gave up after 2 retries"),
        "{error:?}"
    );
    assert_eq!(request_count(&server).await, 3);
    // The final error precedes turn/completed.
    let methods: Vec<&str> = record
        .events
        .iter()
        .map(tandem_test_support::event_method)
        .collect();
    let last_error = methods.iter().rposition(|m| *m == "error").expect("error");
    assert!(last_error < methods.len() - 1);
}

#[tokio::test]
async fn a_400_context_length_exceeded_is_not_retried() {
    let server = MockServer::start().await;
    mount_once(
        &server,
        ResponseTemplate::new(400).set_body_json(json!({"error": {
            "message": "This model's maximum context length is 8192 tokens.",
            "type": "invalid_request_error", "code": "context_length_exceeded"}})),
        10,
    )
    .await;
    let record = one_turn(&format!("{}/v1", server.uri()), &[]).await;
    assert_eq!(record.turn.status, TurnStatus::Failed);
    assert_eq!(retry_flags(&record), vec![false]);
    let message = record.turn.error.expect("error").message;
    assert!(message.contains("context_length_exceeded"), "{message}");
    assert!(message.contains("too long"), "{message}");
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn a_401_fails_with_the_key_hint() {
    let server = MockServer::start().await;
    mount_once(
        &server,
        ResponseTemplate::new(401)
            .set_body_json(json!({"error": {"message": "Incorrect API key provided"}})),
        10,
    )
    .await;
    let unset = one_turn(
        &format!("{}/v1", server.uri()),
        &[(
            "model_providers.mock.env_key",
            "TANDEM_TEST_KEY_NEVER_SET".into(),
        )],
    )
    .await;
    assert_eq!(unset.turn.status, TurnStatus::Failed);
    assert_eq!(retry_flags(&unset), vec![false]);
    let message = unset.turn.error.expect("error").message;
    assert!(
        message.contains("check TANDEM_TEST_KEY_NEVER_SET: it is not set"),
        "{message}"
    );
    assert!(message.contains("401"), "{message}");
    let requests = server.received_requests().await.expect("recording");
    assert_eq!(requests.len(), 1);
    assert!(!requests[0].headers.contains_key("authorization"));

    // With the variable set, its value is the bearer token and the hint names it. Cargo sets
    // CARGO_PKG_NAME for the tests it runs; a test binary run by hand has no such variable
    // and checks that no key is sent instead.
    let set = one_turn(
        &format!("{}/v1", server.uri()),
        &[("model_providers.mock.env_key", "CARGO_PKG_NAME".into())],
    )
    .await;
    let message = set.turn.error.expect("error").message;
    assert!(message.contains("check CARGO_PKG_NAME"), "{message}");
    let requests = server.received_requests().await.expect("recording");
    let sent = requests[1]
        .headers
        .get("authorization")
        .map(|value| value.to_str().expect("ascii").to_owned());
    let expected = std::env::var("CARGO_PKG_NAME")
        .ok()
        .map(|key| format!("Bearer {key}"));
    assert_eq!(sent, expected);
}

#[tokio::test]
async fn configured_headers_are_sent() {
    let server = MockServer::start().await;
    mount_once(&server, sse_response(text_answer("hi")), 1).await;
    let record = one_turn(
        &format!("{}/v1", server.uri()),
        &[("model_providers.mock.http_headers.x-team", "core".into())],
    )
    .await;
    assert_eq!(record.turn.status, TurnStatus::Completed);
    let requests = server.received_requests().await.expect("recording");
    assert_eq!(requests[0].headers.get("x-team").expect("header"), "core");
    assert_eq!(
        requests[0].headers.get("accept").expect("accept"),
        "text/event-stream"
    );
}

#[tokio::test]
async fn an_unreachable_provider_is_retried_then_fails() {
    // A port that was just free: nothing listens there, so every connect is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port();
    let record = one_turn(
        &format!("http://127.0.0.1:{port}/v1"),
        &[("model_providers.mock.stream_max_retries", 1.into())],
    )
    .await;
    assert_eq!(record.turn.status, TurnStatus::Failed);
    assert_eq!(retry_flags(&record), vec![true, false]);
    let message = record.turn.error.expect("error").message;
    assert!(message.contains("cannot connect to"), "{message}");
}

// ---------------------------------------------------------------------------------------------
// 7. Trouble in the middle of a stream
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_stream_that_ends_without_done_is_retried() {
    let server = MockServer::start().await;
    let cut_short = format!("data: {}\n\n", text_chunk("par"));
    mount_once(&server, sse_response(cut_short), 1).await;
    mount_once(&server, sse_response(text_answer("whole")), 1).await;
    let record = one_turn(&format!("{}/v1", server.uri()), &[]).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    assert_eq!(retry_flags(&record), vec![true]);
    assert_eq!(last_agent_text(&record).as_deref(), Some("whole"));
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn a_body_cut_mid_chunk_is_retried() {
    let mock = MockHttpServer::start().await.expect("mock");
    mock.push(
        MockResponse::sse()
            .event(&text_chunk("par").to_string())
            .truncate(),
    );
    mock.push(MockResponse::sse().bytes(text_answer("whole")));
    let record = one_turn(&mock.url("/v1"), &[]).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    assert_eq!(retry_flags(&record), vec![true]);
    assert_eq!(last_agent_text(&record).as_deref(), Some("whole"));
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn a_tcp_reset_mid_stream_is_retried() {
    let mock = MockHttpServer::start().await.expect("mock");
    mock.push(
        MockResponse::sse()
            .event(&text_chunk("par").to_string())
            .reset(),
    );
    mock.push(MockResponse::sse().bytes(text_answer("whole")));
    let record = one_turn(&mock.url("/v1"), &[]).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    assert_eq!(retry_flags(&record), vec![true]);
    let details = record.errors()[0].error.additional_details.clone();
    assert!(
        details
            .as_deref()
            .is_some_and(|d| d.contains("stream broke")),
        "{details:?}"
    );
    assert_eq!(last_agent_text(&record).as_deref(), Some("whole"));
}

#[tokio::test]
async fn a_stall_longer_than_the_idle_timeout_is_retried() {
    let mock = MockHttpServer::start().await.expect("mock");
    let stalled = mock.push(
        MockResponse::sse()
            .event(&text_chunk("par").to_string())
            .stall(),
    );
    mock.push(MockResponse::sse().bytes(text_answer("whole")));
    let record = one_turn(
        &mock.url("/v1"),
        &[("model_providers.mock.stream_idle_timeout_ms", 300.into())],
    )
    .await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    assert_eq!(retry_flags(&record), vec![true]);
    let details = record.errors()[0].error.additional_details.clone();
    assert!(
        details.as_deref().is_some_and(|d| d.contains("stalled")),
        "{details:?}"
    );
    // The stalled connection was given up, not left open.
    within(PROMPT, "stalled connection closed", stalled.client_closed()).await;
    assert_eq!(last_agent_text(&record).as_deref(), Some("whole"));
}

#[tokio::test]
async fn an_error_event_in_a_200_stream_fails_the_turn() {
    let server = MockServer::start().await;
    let body = format!(
        "data: {}\n\ndata: {}\n\n",
        text_chunk("start"),
        json!({"error": {"message": "the model crashed", "code": "internal"}})
    );
    mount_once(&server, sse_response(body), 10).await;
    let record = one_turn(&format!("{}/v1", server.uri()), &[]).await;
    assert_eq!(record.turn.status, TurnStatus::Failed);
    assert_eq!(retry_flags(&record), vec![false]);
    let message = record.turn.error.expect("error").message;
    assert!(message.contains("the model crashed"), "{message}");
    assert_eq!(request_count(&server).await, 1);
}

// ---------------------------------------------------------------------------------------------
// 8. turn/interrupt drops the stream
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn interrupting_a_held_stream_closes_the_connection_and_the_turn() {
    let mock = MockHttpServer::start().await.expect("mock");
    let gate = Gate::new();
    let served = mock.push(
        MockResponse::sse()
            .event(&text_chunk("thinking").to_string())
            .wait(&gate)
            .event("[DONE]"),
    );
    let home = home();
    let mut handle = start(memory_options(home.path(), &mock.url("/v1"), &[])).await;
    let thread = start_thread(&handle, json!({})).await;
    let turn = start_turn(&handle, &thread, "think hard").await;
    within(PROMPT, "the first delta", async {
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
    let completed = within(
        INTERRUPT_BOUND,
        "turn/completed after the interrupt",
        async {
            loop {
                if let InProcessServerEvent::ServerNotification(
                    ServerNotification::TurnCompleted(done),
                ) = handle.next_event().await.expect("events")
                {
                    return done.turn;
                }
            }
        },
    )
    .await;
    assert_eq!(completed.status, TurnStatus::Interrupted);
    within(
        INTERRUPT_BOUND,
        "the mock sees the connection close",
        served.client_closed(),
    )
    .await;
    // The message cut short still completed, with what the client saw.
    let texts: Vec<&str> = completed
        .items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::AgentMessage { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec!["thinking"]);
    let reply = within(PROMPT, "interrupt reply", interrupt)
        .await
        .expect("task")
        .expect("host");
    assert_eq!(reply, Ok(json!({})));
    assert_eq!(mock.requests().len(), 1);
    gate.open();
    shutdown(handle).await;
}

#[tokio::test]
async fn interrupting_a_retry_wait_ends_the_turn_at_once() {
    let server = MockServer::start().await;
    // A minute's wait that the interrupt must cut short.
    mount_once(
        &server,
        ResponseTemplate::new(429).insert_header("retry-after", "60"),
        10,
    )
    .await;
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &format!("{}/v1", server.uri()),
        &[],
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    let turn = start_turn(&handle, &thread, "hi").await;
    within(PROMPT, "the retry notification", async {
        loop {
            if let InProcessServerEvent::ServerNotification(ServerNotification::Error(error)) =
                handle.next_event().await.expect("events")
            {
                assert!(error.will_retry);
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
        "interrupted",
        drive_turn(&mut handle, &Answers::default()),
    )
    .await;
    assert_eq!(record.turn.status, TurnStatus::Interrupted);
    interrupt
        .await
        .expect("task")
        .expect("host")
        .expect("reply");
    assert_eq!(request_count(&server).await, 1);
    shutdown(handle).await;
}
