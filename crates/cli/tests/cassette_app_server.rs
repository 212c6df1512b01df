//! Cassettes through the real binary (issue 33, points 2 and 3): `tandem app-server` records a
//! session against the loopback model mock with `-c model_providers.mock.cassette=...`, the
//! mock is stopped, and a second server replays the session offline; the two transcripts of
//! notifications are equal apart from ids and times. The cassette never holds the API key or
//! a configured header's value.

mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use common::client::{Client, StdioClient};
use common::server::{AppServer, Launch};
use serde_json::json;
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};
use tandem_test_support::model_streams::chat;
use tandem_test_support::transcript::TranscriptNormalizer;

/// A port nothing listens on.
const DEAD_URL: &str = "http://127.0.0.1:9/v1";
const KEY_VAR: &str = "TANDEM_CASSETTE_TEST_KEY";
const KEY: &str = "sk-cassette-test-4f9a1c2e7b";
const HEADER_SECRET: &str = "hdr-secret-0d8e5b3a";

fn launch(test: &str, cassette: &Path, mode: &str, base_url: &str) -> (AppServer, Client) {
    let (server, stdio): (AppServer, StdioClient) = Launch::new(test)
        .args([
            "app-server",
            "--listen",
            "stdio://",
            "-c",
            "model_provider=mock",
            "-c",
            &format!("model_providers.mock.base_url=\"{base_url}\""),
            "-c",
            &format!("model_providers.mock.env_key=\"{KEY_VAR}\""),
            "-c",
            &format!("model_providers.mock.http_headers.x-team-token=\"{HEADER_SECRET}\""),
            "-c",
            &format!("model_providers.mock.cassette=\"{}\"", cassette.display()),
            "-c",
            &format!("model_providers.mock.cassette_mode=\"{mode}\""),
            "-c",
            "model=mock-model",
            "-c",
            "sandbox_mode=danger-full-access",
        ])
        .env(KEY_VAR, if mode == "replay" { "" } else { KEY })
        .stdio();
    (server, Client::Stdio(stdio))
}

/// Runs one thread with one turn per prompt in `cwd`; returns every notification and server
/// request from `thread/start` on, in order, normalized (see [`TranscriptNormalizer`]).
async fn session(client: &mut Client, cwd: &Path, prompts: &[&str]) -> Vec<String> {
    client.initialize(false).await;
    let mut seen = Vec::new();
    client
        .send(&json!({"id": 1, "method": "thread/start",
        "params": {"cwd": cwd, "approvalPolicy": "never"}}))
        .await;
    let mut thread = None;
    while thread.is_none() {
        let message = client.recv().await;
        if message.get("id") == Some(&json!(1)) {
            thread = Some(message["result"]["thread"]["id"].clone());
        } else {
            seen.push(message);
        }
    }
    for (n, prompt) in prompts.iter().enumerate() {
        let id = json!(10 + n);
        client
            .send(&json!({"id": id, "method": "turn/start", "params": {
                "threadId": thread, "input": [{"type": "text", "text": prompt}]}}))
            .await;
        loop {
            let message = client.recv().await;
            if message.get("id") == Some(&id) && message.get("method").is_none() {
                continue;
            }
            let done = message["method"] == "turn/completed";
            seen.push(message);
            if done {
                break;
            }
        }
    }
    let mut normalizer = TranscriptNormalizer::new(cwd.display().to_string());
    seen.into_iter()
        .map(|message| normalizer.normalize(message).to_string())
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cassette-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("record-cwd")).unwrap();
    std::fs::create_dir_all(dir.join("replay-cwd")).unwrap();
    dir
}

#[tokio::test]
async fn a_recorded_session_replays_through_the_binary_with_the_same_notifications() {
    let dir = scratch("replay");
    let cassette = dir.join("session.cassette.jsonl");
    let mock = MockHttpServer::start().await.expect("mock starts");
    mock.push(
        MockResponse::sse()
            .bytes(chat::reasoning("reasoning_content", "Check the directory."))
            .bytes(chat::tool_call(
                "call_a",
                "shell",
                &json!({"command": "echo e2e-$((6*7))"}),
            ))
            .bytes("data: [DONE]\n\n"),
    );
    mock.push(
        MockResponse::json(503, &json!({"error": {"message": "overloaded"}}))
            .header("retry-after-ms", "5"),
    );
    mock.push(
        MockResponse::sse()
            .bytes(chat::text("The command printed "))
            .bytes(chat::text("e2e-42."))
            .bytes(chat::done()),
    );
    mock.push(
        MockResponse::sse()
            .bytes(chat::text("Bye."))
            .bytes(chat::done()),
    );
    let prompts = ["run it", "thanks"];

    let (server, mut client) = launch("cassette-record", &cassette, "record", &mock.url("/v1"));
    let recorded = session(&mut client, &dir.join("record-cwd"), &prompts).await;
    drop(client);
    server.finish(Instant::now()).await;
    assert_eq!(mock.requests().len(), 4);
    drop(mock);

    let (server, mut client) = launch("cassette-replay", &cassette, "replay", DEAD_URL);
    let replayed = session(&mut client, &dir.join("replay-cwd"), &prompts).await;
    drop(client);
    server.finish(Instant::now()).await;

    assert!(
        recorded.iter().any(|line| line.contains("e2e-42.")),
        "the recording ran the command: {recorded:#?}"
    );
    assert!(
        recorded
            .iter()
            .any(|line| line.contains("\"willRetry\":true")),
        "the recording retried: {recorded:#?}"
    );
    if let Some((n, (a, b))) = recorded
        .iter()
        .zip(&replayed)
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        panic!("message {n} differs:\nrecorded {a}\nreplayed {b}");
    }
    assert_eq!(recorded, replayed, "the replay differs from the recording");
}

#[tokio::test]
async fn secrets_never_reach_the_cassette() {
    let dir = scratch("secrets");
    let cassette = dir.join("secrets.cassette.jsonl");
    let mock = MockHttpServer::start().await.expect("mock starts");
    // A provider that echoes what it was sent: the key and the header in the answer, an error
    // body and a response header.
    mock.push(
        MockResponse::json(
            429,
            &json!({"error": {"message": format!("key {KEY} is limited")}}),
        )
        .header("retry-after-ms", "5")
        .header("x-echo-token", HEADER_SECRET),
    );
    mock.push(
        MockResponse::sse()
            .bytes(chat::text(&format!("You sent {KEY} and {HEADER_SECRET}.")))
            .bytes(chat::done()),
    );
    let (server, mut client) = launch("cassette-secrets", &cassette, "record", &mock.url("/v1"));
    let transcript = session(&mut client, &dir.join("record-cwd"), &["echo my key"]).await;
    drop(client);
    server.finish(Instant::now()).await;

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "the key was sent"
    );
    assert_eq!(requests[0].header("x-team-token"), Some(HEADER_SECRET));
    assert!(
        transcript.iter().any(|line| line.contains(KEY)),
        "the live answer still shows what the provider said"
    );
    let text = std::fs::read_to_string(&cassette).expect("cassette written");
    assert!(!text.contains(KEY), "the API key leaked:\n{text}");
    assert!(
        !text.contains(HEADER_SECRET),
        "the header value leaked:\n{text}"
    );
    assert!(!text.to_lowercase().contains("authorization"), "{text}");
    assert!(
        text.contains("You sent <redacted> and <redacted>."),
        "{text}"
    );
}

/// `tandem run --cassette PATH --cassette-mode record`, then the same prompt replayed with
/// `--cassette PATH` (replay is the default) and the provider unreachable.
#[tokio::test]
async fn tandem_run_records_and_replays_with_its_flags() {
    let dir = scratch("run");
    let cassette = dir.join("run.cassette.jsonl");
    let mock = MockHttpServer::start().await.expect("mock starts");
    mock.push(
        MockResponse::sse()
            .bytes(chat::text("Recorded answer."))
            .bytes(chat::done()),
    );
    let run = |cwd: PathBuf, base_url: String, extra: Vec<&'static str>| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tandem"));
        command
            .env("TANDEM_HOME", dir.join("home"))
            .env_remove("TANDEM_LOG")
            .current_dir(cwd)
            .args(["-c", "model_provider=mock", "-c"])
            .arg(format!("model_providers.mock.base_url=\"{base_url}\""))
            .args(["-c", "model=mock-model", "run", "--cassette"])
            .arg(&cassette)
            .args(extra)
            .arg("say something")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        async move {
            let output = common::within(common::PROMPT, "tandem run", command.output())
                .await
                .expect("tandem run ran");
            (
                output.status.code(),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        }
    };
    let (code, recorded, stderr) = run(
        dir.join("record-cwd"),
        mock.url("/v1"),
        vec!["--cassette-mode", "record"],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(recorded, "Recorded answer.\n");
    drop(mock);

    let (code, replayed, stderr) = run(dir.join("replay-cwd"), DEAD_URL.to_owned(), vec![]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(replayed, recorded);

    // --cassette-mode needs --cassette; an unknown mode is a usage error.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_tandem"))
        .env("TANDEM_HOME", dir.join("home"))
        .args(["run", "--cassette-mode", "sometimes", "hi"])
        .output()
        .await
        .expect("tandem ran");
    assert_eq!(output.status.code(), Some(2));
}
