//! `tandem_test_support::cassette` (issue 33, point 4): a harness records a turn against the
//! loopback model mock through the helper, then replays it with the mock gone; a missing
//! cassette fails the start with what to do.

use std::time::Duration;

use tandem_server::agent::CassetteMode;
use tandem_test_support::cassette::{CassetteServer, MODE_ENV, agent_text};
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};
use tandem_test_support::model_streams::chat;
use tandem_test_support::within;

const LIMIT: Duration = Duration::from_secs(30);

fn builder(
    cassette: &std::path::Path,
    base_url: &str,
) -> tandem_test_support::cassette::CassetteServerBuilder {
    CassetteServer::builder(cassette)
        .provider("local")
        .config_override("model_providers.local.base_url", base_url)
        .model("test-model")
}

/// Starts a server from `builder` and runs one turn of `prompt` on a new thread; returns the
/// server, still running, and the turn's events.
async fn one_turn(
    builder: tandem_test_support::cassette::CassetteServerBuilder,
    prompt: &str,
) -> (
    CassetteServer,
    Vec<tandem_host::in_process::InProcessServerEvent>,
) {
    let mut server = within(LIMIT, "the server starts", builder.start())
        .await
        .expect("starts");
    let thread = server
        .start_thread(serde_json::json!({}))
        .await
        .expect("thread");
    let events = within(LIMIT, "the turn", server.run_turn(&thread, prompt))
        .await
        .expect("turn");
    (server, events)
}

#[tokio::test]
async fn the_helper_records_once_and_replays_offline() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cassette = dir.path().join("helper.jsonl");
    let mock = MockHttpServer::start().await.expect("mock starts");
    mock.push(
        MockResponse::sse()
            .bytes(chat::text("From the model."))
            .bytes(chat::done()),
    );

    let (mut server, recorded) = one_turn(
        builder(&cassette, &mock.url("/v1")).mode(CassetteMode::Record),
        "hi",
    )
    .await;
    assert_eq!(server.mode(), CassetteMode::Record);
    server.shutdown().await.expect("shutdown");
    assert_eq!(agent_text(&recorded), "From the model.");
    drop(mock);

    let replay = builder(&cassette, "http://127.0.0.1:9/v1");
    if std::env::var_os(MODE_ENV).is_none() {
        assert_eq!(
            replay.resolved_mode().expect("mode"),
            CassetteMode::Replay,
            "replay by default"
        );
    }
    let (mut server, replayed) = one_turn(replay.mode(CassetteMode::Replay), "hi").await;
    server.shutdown().await.expect("shutdown");
    assert_eq!(agent_text(&replayed), "From the model.");
    assert_eq!(replayed.len(), recorded.len());
}

#[tokio::test]
async fn a_missing_cassette_fails_the_start_with_what_to_do() {
    let dir = tempfile::tempdir().expect("temp dir");
    let error = builder(
        &dir.path().join("never-recorded.jsonl"),
        "http://127.0.0.1:9/v1",
    )
    .mode(CassetteMode::Replay)
    .start()
    .await
    .expect_err("nothing to replay");
    let message = error.to_string();
    assert!(
        message.contains("does not exist: record it first"),
        "{message}"
    );
}

#[tokio::test]
async fn a_shut_down_recorder_lets_the_next_one_record() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cassette = dir.path().join("twice.jsonl");
    let mock = MockHttpServer::start().await.expect("mock starts");
    for text in ["First.", "Second."] {
        mock.push(
            MockResponse::sse()
                .bytes(chat::text(text))
                .bytes(chat::done()),
        );
    }
    let (mut first, _) = one_turn(
        builder(&cassette, &mock.url("/v1")).mode(CassetteMode::Record),
        "one",
    )
    .await;
    // Shut down but not dropped: a harness that keeps its server value to the end of the test
    // must still be able to record again once the server has stopped.
    within(LIMIT, "the first shutdown", first.shutdown())
        .await
        .expect("shutdown");
    // Starting at all is the point: the first server's lock went with its shutdown.
    let (mut second, turn) = one_turn(
        builder(&cassette, &mock.url("/v1")).mode(CassetteMode::RecordMissing),
        "two",
    )
    .await;
    assert_eq!(agent_text(&turn), "Second.");
    second.shutdown().await.expect("shutdown");
    drop(first);
}
