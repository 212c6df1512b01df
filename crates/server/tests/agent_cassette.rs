//! Cassettes (issue 33): a session recorded against the loopback mock provider replays with
//! the mock gone, giving the same notifications apart from ids and times, on both wires, with
//! retries and broken streams; and a cassette that cannot serve a run says why.

mod agent_support;

use std::path::Path;

use agent_support::*;
use serde_json::{Value, json};
use tandem_host::InProcessClientHandle;
use tandem_host::in_process::InProcessServerEvent;
use tandem_server::config::toml;
use tandem_server::{ServerConfig, ServerOptions};
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};
use tandem_test_support::model_streams::responses;
use tandem_test_support::transcript::TranscriptNormalizer;

/// A port nothing listens on: replay must not need the provider.
const DEAD_URL: &str = "http://127.0.0.1:9/v1";

fn cassette_overrides(path: &Path, mode: &str) -> Vec<(&'static str, toml::Value)> {
    vec![
        (
            "model_providers.mock.cassette",
            path.display().to_string().into(),
        ),
        ("model_providers.mock.cassette_mode", mode.into()),
        // Retries wait their backoff; keep them short.
        ("model_providers.mock.stream_max_retries", 3.into()),
    ]
}

/// One run of a session: a thread in `cwd` and one turn per prompt, every event of each turn.
async fn session(
    options: ServerOptions,
    cwd: &Path,
    prompts: &[&str],
) -> Vec<Vec<InProcessServerEvent>> {
    let mut handle = start(options).await;
    let thread = start_thread(&handle, json!({"cwd": cwd})).await;
    let mut turns = Vec::new();
    for prompt in prompts {
        start_turn(&handle, &thread, prompt).await;
        turns.push(drive_turn(&mut handle, &Answers::default()).await.events);
    }
    shutdown_handle(handle).await;
    turns
}

async fn shutdown_handle(handle: InProcessClientHandle) {
    shutdown(handle).await;
}

/// The turns' events as JSON lines with generated ids renumbered in order of appearance,
/// times blanked and `cwd` replaced: what must be equal between a recording and its replay.
fn transcript(turns: &[Vec<InProcessServerEvent>], cwd: &Path) -> Vec<String> {
    let mut normalizer = TranscriptNormalizer::new(cwd.display().to_string());
    let mut lines = Vec::new();
    for events in turns {
        for event in events {
            let value = match event {
                InProcessServerEvent::ServerNotification(notification) => serde_json::to_value(
                    notification
                        .clone()
                        .into_jsonrpc()
                        .expect("notification encodes"),
                )
                .expect("notification encodes"),
                InProcessServerEvent::ServerRequest(request) => {
                    serde_json::to_value(request.clone().into_jsonrpc().expect("request encodes"))
                        .expect("request encodes")
                }
                InProcessServerEvent::Lagged { .. } => panic!("events were dropped"),
            };
            lines.push(normalizer.normalize(value).to_string());
        }
    }
    lines
}

fn text_of(turn: &[InProcessServerEvent]) -> String {
    turn.iter()
        .filter_map(|event| match event {
            InProcessServerEvent::ServerNotification(
                tandem_protocol::ServerNotification::AgentMessageDelta(delta),
            ) => Some(delta.delta.as_str()),
            _ => None,
        })
        .collect()
}

/// Records `prompts` against `mock` (whose answers the caller queued), stops the mock,
/// replays offline in another working directory, and asserts the transcripts are equal.
/// Returns the cassette's text and the recorded turns.
async fn record_then_replay(
    mock: MockHttpServer,
    wire: &str,
    prompts: &[&str],
) -> (String, Vec<Vec<InProcessServerEvent>>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let cassette = dir.path().join("cassettes/session.jsonl");
    let (record_cwd, replay_cwd) = (dir.path().join("a"), dir.path().join("b/deeper"));
    std::fs::create_dir_all(&record_cwd).unwrap();
    std::fs::create_dir_all(&replay_cwd).unwrap();

    let record_home = home();
    let mut extra = cassette_overrides(&cassette, "record");
    extra.push(("model_providers.mock.wire_api", wire.into()));
    let recorded = session(
        memory_options(record_home.path(), &mock.url("/v1"), &extra),
        &record_cwd,
        prompts,
    )
    .await;
    let requests = mock.requests().len();
    drop(mock);

    let replay_home = home();
    let mut extra = cassette_overrides(&cassette, "replay");
    extra.push(("model_providers.mock.wire_api", wire.into()));
    let replayed = session(
        memory_options(replay_home.path(), DEAD_URL, &extra),
        &replay_cwd,
        prompts,
    )
    .await;

    let text = std::fs::read_to_string(&cassette).expect("cassette written");
    assert_eq!(
        text.lines().count(),
        requests + 1,
        "a header and one line per request:\n{text}"
    );
    assert_eq!(
        transcript(&recorded, &record_cwd),
        transcript(&replayed, &replay_cwd),
        "the replay differs from the recording"
    );
    (text, recorded)
}

#[tokio::test]
async fn a_chat_session_with_a_command_replays_offline_as_recorded() {
    let mock = MockHttpServer::start().await.expect("mock starts");
    mock.push(
        MockResponse::sse()
            .bytes(format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"reasoning_content": "Look first."}}]})
            ))
            .bytes(shell_answer("call_1", "echo cassette-$((40+2))")),
    );
    mock.push(MockResponse::sse().bytes(sse(&[
        text_chunk("It printed "),
        text_chunk("cassette-42."),
        finish_chunk("stop"),
    ])));
    mock.push(MockResponse::sse().bytes(text_answer("Again: cassette-42.")));
    let (text, recorded) =
        record_then_replay(mock, "chat", &["run the command", "once more"]).await;
    assert_eq!(text_of(&recorded[0]), "It printed cassette-42.");
    assert_eq!(text_of(&recorded[1]), "Again: cassette-42.");
    // The command's output went to the model, and is in the cassette's second request.
    assert!(text.contains("cassette-42"), "{text}");
    assert!(
        text.contains("<cwd>"),
        "the working directory is normalized:\n{text}"
    );
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["tandem_cassette"], 1);
    assert_eq!(header["provider"], "mock");
}

#[tokio::test]
async fn a_responses_session_with_reasoning_and_a_tool_replays_offline_as_recorded() {
    let mock = MockHttpServer::start().await.expect("mock starts");
    mock.push(
        MockResponse::sse()
            .bytes(responses::reasoning(
                "rs_1",
                0,
                &["Plan it."],
                &["think"],
                Some("enc"),
            ))
            .bytes(responses::function_call(
                "call_1",
                "shell",
                1,
                &json!({"command": "echo responses-ok"}),
            ))
            .bytes(responses::completed()),
    );
    mock.push(
        MockResponse::sse()
            .bytes(responses::text("It said "))
            .bytes(responses::text("responses-ok."))
            .bytes(responses::completed()),
    );
    let (text, recorded) = record_then_replay(mock, "responses", &["go"]).await;
    assert_eq!(text_of(&recorded[0]), "It said responses-ok.");
    assert!(text.contains("\"event\":\"response.completed\""), "{text}");
}

#[tokio::test]
async fn retries_and_broken_streams_replay_as_recorded() {
    let mock = MockHttpServer::start().await.expect("mock starts");
    mock.push(
        MockResponse::json(
            429,
            &json!({"error": {"message": "slow down", "code": "rate_limit"}}),
        )
        .header("retry-after-ms", "10"),
    );
    mock.push(
        MockResponse::sse()
            .bytes(sse(&[text_chunk("partial")])[..40].to_owned())
            .reset(),
    );
    mock.push(MockResponse::sse().bytes(text_answer("made it")));
    let (text, recorded) = record_then_replay(mock, "chat", &["try hard"]).await;
    let errors: Vec<Value> = recorded[0]
        .iter()
        .filter_map(|event| match event {
            InProcessServerEvent::ServerNotification(
                tandem_protocol::ServerNotification::Error(error),
            ) => Some(serde_json::to_value(error).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 2, "two retries announced: {errors:?}");
    assert!(
        errors.iter().all(|error| error["willRetry"] == true),
        "{errors:?}"
    );
    assert_eq!(text_of(&recorded[0]), "made it");
    assert!(text.contains("\"status\":429"), "{text}");
    assert!(text.contains("\"retry-after-ms\":\"10\""), "{text}");
    assert!(
        text.contains("{\"error\":{\"message\":"),
        "the broken stream's end:\n{text}"
    );
}

/// The turn of a replay that has no recording fails at once, naming the cassette and the
/// first differing field.
#[tokio::test]
async fn a_request_without_a_recording_fails_the_turn_and_says_where_it_differs() {
    let mock = MockHttpServer::start().await.expect("mock starts");
    mock.push(MockResponse::sse().bytes(text_answer("hello")));
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    session(
        memory_options(
            home().path(),
            &mock.url("/v1"),
            &cassette_overrides(&cassette, "record"),
        ),
        dir.path(),
        &["say hello"],
    )
    .await;
    drop(mock);

    let turns = session(
        memory_options(
            home().path(),
            DEAD_URL,
            &cassette_overrides(&cassette, "replay"),
        ),
        dir.path(),
        &["say goodbye"],
    )
    .await;
    let failure = turns[0]
        .iter()
        .find_map(|event| match event {
            InProcessServerEvent::ServerNotification(
                tandem_protocol::ServerNotification::Error(error),
            ) => Some(error.clone()),
            _ => None,
        })
        .expect("the turn fails");
    assert!(!failure.will_retry, "not retried");
    let message = failure.error.message;
    assert!(
        message.contains(&cassette.display().to_string()),
        "{message}"
    );
    assert!(message.contains("messages[1].content"), "{message}");
    assert!(
        message.contains("\"say hello\"") && message.contains("\"say goodbye\""),
        "{message}"
    );

    let turns = session(
        memory_options(
            home().path(),
            DEAD_URL,
            &[
                cassette_overrides(&cassette, "replay"),
                vec![("model", "another-model".into())],
            ]
            .concat(),
        ),
        dir.path(),
        &["say hello"],
    )
    .await;
    let failure = turns[0]
        .iter()
        .find_map(|event| match event {
            InProcessServerEvent::ServerNotification(
                tandem_protocol::ServerNotification::Error(error),
            ) => Some(error.error.message.clone()),
            _ => None,
        })
        .expect("the turn fails");
    assert!(
        failure.contains("no recording for model \"another-model\"")
            && failure.contains("\"mock-model\""),
        "{failure}"
    );
}

/// record-missing replays what the cassette has and records only the rest.
#[tokio::test]
async fn record_missing_records_only_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let mock = MockHttpServer::start().await.expect("mock starts");
    mock.push(MockResponse::sse().bytes(text_answer("one")));
    session(
        memory_options(
            home().path(),
            &mock.url("/v1"),
            &cassette_overrides(&cassette, "record"),
        ),
        dir.path(),
        &["first"],
    )
    .await;
    drop(mock);
    // The host's shutdown let go of the recorder, and with it of its lock: a second server in
    // the same process records to the same cassette.
    let lock = dir.path().join("c.jsonl.lock");
    assert!(!lock.exists(), "{} outlived the shutdown", lock.display());

    let mock = MockHttpServer::start().await.expect("mock starts");
    mock.push(MockResponse::sse().bytes(text_answer("two")));
    let turns = session(
        memory_options(
            home().path(),
            &mock.url("/v1"),
            &cassette_overrides(&cassette, "record-missing"),
        ),
        dir.path(),
        &["first", "second"],
    )
    .await;
    assert_eq!(text_of(&turns[0]), "one", "replayed");
    assert_eq!(text_of(&turns[1]), "two", "recorded");
    assert_eq!(
        mock.requests().len(),
        1,
        "only the missing request went out"
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
}

fn load_error(cassette: &Path, mode: &str, provider: &str) -> String {
    let home = home();
    let builder = ServerConfig::builder()
        .tandem_home(home.path())
        .config_override("model_provider", provider.into())
        .config_override(
            &format!("model_providers.{provider}.base_url"),
            DEAD_URL.into(),
        )
        .config_override(
            &format!("model_providers.{provider}.cassette"),
            cassette.display().to_string().into(),
        )
        .config_override(
            &format!("model_providers.{provider}.cassette_mode"),
            mode.into(),
        )
        .config_override("model", MODEL.into());
    match ServerOptions::load(builder) {
        Ok(_) => panic!("{} loads in {mode} mode", cassette.display()),
        Err(error) => error.to_string(),
    }
}

const HEADER: &str = r#"{"tandem_cassette":1,"provider":"mock","wire_api":"chat"}"#;

#[test]
fn bad_cassettes_are_refused_at_start_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let missing = load_error(&dir.path().join("none.jsonl"), "replay", "mock");
    assert!(
        missing.contains("does not exist: record it first"),
        "{missing}"
    );

    let truncated = path(
        "truncated.jsonl",
        &format!("{HEADER}\n{{\"digest\":\"sha256:"),
    );
    let message = load_error(&truncated, "replay", "mock");
    assert!(
        message.contains("is truncated: line 2 has no end"),
        "{message}"
    );

    let corrupt = path("corrupt.jsonl", &format!("{HEADER}\n{{\"digest\": 3}}\n"));
    let message = load_error(&corrupt, "replay", "mock");
    assert!(
        message.contains("line 2 is not a valid exchange"),
        "{message}"
    );

    let future = path(
        "future.jsonl",
        "{\"tandem_cassette\":2,\"provider\":\"mock\",\"wire_api\":\"chat\"}\n",
    );
    let message = load_error(&future, "replay", "mock");
    assert!(message.contains("format version 2"), "{message}");
    // Recording onto it would have to rewrite it in another version: refused too, untouched.
    let message = load_error(&future, "record-missing", "mock");
    assert!(message.contains("format version 2"), "{message}");
    assert!(
        std::fs::read_to_string(&future)
            .unwrap()
            .contains("\"tandem_cassette\":2")
    );

    let other = path("other.jsonl", &format!("{HEADER}\n"));
    let message = load_error(&other, "replay", "elsewhere");
    assert!(
        message.contains("recorded against provider mock (chat wire), not elsewhere"),
        "{message}"
    );

    let mode = {
        let home = home();
        let builder = ServerConfig::builder()
            .tandem_home(home.path())
            .config_override("model_providers.mock.base_url", DEAD_URL.into())
            .config_override("model_providers.mock.cassette_mode", "reply".into());
        ServerOptions::load(builder)
            .expect_err("a bad mode fails")
            .to_string()
    };
    assert!(
        mode.contains("expected one of live, record, replay, record-missing"),
        "{mode}"
    );
}

#[test]
fn two_recorders_on_one_cassette_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("shared.jsonl");
    let first = options_at(
        home().path(),
        DEAD_URL,
        &cassette_overrides(&cassette, "record"),
    );
    let message = load_error(&cassette, "record", "mock");
    assert!(
        message.contains("is being recorded by another server"),
        "{message}"
    );
    drop(first);
    let again = options_at(
        home().path(),
        DEAD_URL,
        &cassette_overrides(&cassette, "record"),
    );
    drop(again);
}
