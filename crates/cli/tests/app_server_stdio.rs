//! Bad input to `tandem app-server` over stdio (issue 8, acceptance 2): the real binary, one
//! JSON object per line, each case its own test. The cases shared with the websocket transport
//! are in `common/bad_input.rs`; the line limit is stdio's own.

mod common;

use std::time::Instant;

use common::bad_input::{self, Transport, assert_error, close, open, padded_request};
use serde_json::Value;

#[tokio::test]
async fn invalid_json() {
    bad_input::invalid_json(Transport::Stdio).await;
}

#[tokio::test]
async fn json_array() {
    bad_input::json_array(Transport::Stdio).await;
}

#[tokio::test]
async fn number() {
    bad_input::number(Transport::Stdio).await;
}

#[tokio::test]
async fn request_without_method() {
    bad_input::request_without_method(Transport::Stdio).await;
}

#[tokio::test]
async fn unknown_method() {
    bad_input::unknown_method(Transport::Stdio).await;
}

#[tokio::test]
async fn params_of_the_wrong_type() {
    bad_input::params_of_the_wrong_type(Transport::Stdio).await;
}

#[tokio::test]
async fn invalid_utf8() {
    bad_input::invalid_utf8(Transport::Stdio).await;
}

#[tokio::test]
async fn response_to_an_unknown_server_request() {
    bad_input::response_to_an_unknown_server_request(Transport::Stdio).await;
}

#[tokio::test]
async fn request_before_initialize() {
    bad_input::request_before_initialize(Transport::Stdio).await;
}

#[tokio::test]
async fn second_initialize() {
    bad_input::second_initialize(Transport::Stdio).await;
}

#[tokio::test]
async fn duplicate_in_flight_id() {
    bad_input::duplicate_in_flight_id(Transport::Stdio).await;
}

#[tokio::test]
async fn an_id_reused_after_its_answer() {
    bad_input::an_id_reused_after_its_answer(Transport::Stdio).await;
}

#[tokio::test]
async fn a_line_over_the_limit() {
    let mut session = open(
        Transport::Stdio,
        "line_over_the_limit",
        &["--max-message-bytes", "1024"],
    )
    .await;
    session.client.initialize(false).await;
    // At the limit: an ordinary request.
    let answer = session.client.send_and_recv(&padded_request(1, 1024)).await;
    assert!(answer["result"]["data"].is_array(), "{answer}");
    // One byte over: skipped, answered with a null id, and the connection stays open.
    let answer = session.client.send_and_recv(&padded_request(2, 1025)).await;
    let message = assert_error(&answer, Value::Null, -32600);
    assert!(message.contains("1024"), "names the limit: {message}");
    // Far over, and the next line right behind it in the same write.
    let mut two = padded_request(3, 100_000);
    two.push('\n');
    two.push_str(&padded_request(4, 60));
    let answer = session.client.send_and_recv(&two).await;
    assert_error(&answer, Value::Null, -32600);
    let answer = session.client.recv().await;
    assert_eq!(answer["id"], 4, "{answer}");
    session.client.assert_serves(5).await;
    close(session).await;
}

/// The default limit is 64 MiB: a 65 MiB line is skipped without being kept.
#[tokio::test]
async fn a_line_over_the_default_limit() {
    let mut session = open(Transport::Stdio, "line_over_the_default_limit", &[]).await;
    session.client.initialize(false).await;
    let began = Instant::now();
    let answer = session
        .client
        .send_and_recv(&padded_request(1, 65 * 1024 * 1024))
        .await;
    let message = assert_error(&answer, Value::Null, -32600);
    assert!(
        message.contains(&(64 * 1024 * 1024).to_string()),
        "{message}"
    );
    eprintln!("a 65 MiB line was answered in {:?}", began.elapsed());
    session.client.assert_serves(2).await;
    close(session).await;
}
