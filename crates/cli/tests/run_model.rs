//! `tandem run` against a model provider started by the test (issue 10, acceptance 11): the
//! binary is run as a user runs it, with the provider given by the global `-c` options, and a
//! `wiremock` Chat Completions server on a loopback port scripts the model's streamed answers
//! and records the requests. Stdin is `/dev/null`, so approvals are declined unless `--yes`.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_test_support::within;
use tokio::process::Command;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Upper bound for one `tandem run`, start-up and both model requests included.
const DEADLINE: Duration = Duration::from_secs(60);

/// A fresh home per call; it is also the working directory of `tandem run` (the thread's cwd).
fn home() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let home = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tandem-run-model-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&home).expect("home created");
    home
}

/// `tandem -c model_provider=mock -c model_providers.mock.base_url=... ARGS`, as the issue
/// writes it; no API key variable is configured or needed.
fn tandem(home: &Path, server: &MockServer, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
    command
        .env("TANDEM_HOME", home)
        .env_remove("TANDEM_LOG")
        .env_remove("TANDEM_RUN_MODEL_KEY")
        .current_dir(home)
        .arg("-c")
        .arg("model_provider=mock")
        .arg("-c")
        .arg(format!(
            "model_providers.mock.base_url=\"{}/v1\"",
            server.uri()
        ))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

async fn run(mut command: Command) -> Output {
    let child = command.spawn().expect("tandem starts");
    within(DEADLINE, "tandem run exits", child.wait_with_output())
        .await
        .expect("output collected")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn sse(chunks: &[Value]) -> ResponseTemplate {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

fn text_chunk(text: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
}

fn finish_chunk(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

/// An answer that says `preamble` in two deltas, then calls `shell` with `command`.
fn shell_answer(preamble: &str, call_id: &str, command: &str) -> ResponseTemplate {
    let (first, second) = preamble.split_at(preamble.len() / 2);
    let arguments = json!({ "command": command }).to_string();
    let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{
        "index": 0, "id": call_id, "type": "function",
        "function": {"name": "shell", "arguments": arguments}}]}}]});
    sse(&[
        text_chunk(first),
        text_chunk(second),
        call,
        finish_chunk("tool_calls"),
    ])
}

/// An answer that streams `words` as separate deltas and stops.
fn text_answer(words: &[&str]) -> ResponseTemplate {
    let mut chunks: Vec<Value> = words.iter().map(|word| text_chunk(word)).collect();
    chunks.push(finish_chunk("stop"));
    sse(&chunks)
}

/// Mounts `answers` on `POST /v1/chat/completions`, each served once, in order.
async fn mount_answers(server: &MockServer, answers: Vec<ResponseTemplate>) {
    for answer in answers {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(answer)
            .up_to_n_times(1)
            .expect(1)
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

/// The `(tool_call_id, content)` of the tool messages of a request body.
fn tool_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .expect("messages")
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

#[tokio::test]
async fn run_yes_streams_the_answer_and_runs_the_models_command() {
    let server = MockServer::start().await;
    mount_answers(
        &server,
        vec![
            shell_answer("Let me check. ", "call_echo", "echo from-the-model"),
            text_answer(&["The command ", "printed ", "from-the-model."]),
        ],
    )
    .await;
    let home = home();
    let output = run(tandem(
        &home,
        &server,
        &[
            "-c",
            "model=M",
            "run",
            "--yes",
            "say something via the shell",
        ],
    ))
    .await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert_eq!(
        stdout, "Let me check. The command printed from-the-model.\n",
        "stderr: {stderr}"
    );
    // `tandem run` shows command output on stderr, apart from the answer.
    assert!(
        stderr.lines().any(|line| line == "from-the-model"),
        "{stderr}"
    );

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert_eq!(bodies[0]["model"], "M");
    let first_user = bodies[0]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .expect("a user message")
        .clone();
    assert_eq!(first_user["content"], "say something via the shell");
    let results = tool_results(&bodies[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].0, "call_echo");
    assert!(results[0].1.contains("exit code: 0"), "{}", results[0].1);
    assert!(results[0].1.contains("from-the-model"), "{}", results[0].1);
}

#[tokio::test]
async fn run_without_yes_declines_the_command_and_tells_the_model() {
    let server = MockServer::start().await;
    let home = home();
    let marker = home.join("created-by-the-model");
    let command = format!("touch {}", marker.display());
    mount_answers(
        &server,
        vec![
            shell_answer("Creating it. ", "call_touch", &command),
            text_answer(&["Understood, ", "I will not."]),
        ],
    )
    .await;
    let output = run(tandem(
        &home,
        &server,
        &["-c", "model=M", "run", "create the file"],
    ))
    .await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert_eq!(stdout, "Creating it. Understood, I will not.\n");
    assert!(
        stderr.contains(&format!("declined `{command}`")),
        "{stderr}"
    );
    assert!(!marker.exists(), "the declined command must not run");

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    let results = tool_results(&bodies[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].0, "call_touch");
    assert!(results[0].1.contains("declined"), "{}", results[0].1);
}

#[tokio::test]
async fn run_model_flag_selects_the_model_over_the_config() {
    let server = MockServer::start().await;
    mount_answers(&server, vec![text_answer(&["one"]), text_answer(&["two"])]).await;
    let home = home();

    // `--model` wins over `-c model=...`; the global `-c` may follow the subcommand too.
    let flagged = run(tandem(
        &home,
        &server,
        &["run", "--model", "M", "-c", "model=N", "hi"],
    ))
    .await;
    assert_eq!(flagged.status.code(), Some(0), "{}", text(&flagged.stderr));
    assert_eq!(text(&flagged.stdout), "one\n");
    let configured = run(tandem(&home, &server, &["-c", "model=N", "run", "hi"])).await;
    assert_eq!(
        configured.status.code(),
        Some(0),
        "{}",
        text(&configured.stderr)
    );
    assert_eq!(text(&configured.stdout), "two\n");

    let bodies = request_bodies(&server).await;
    let models: Vec<&Value> = bodies.iter().map(|body| &body["model"]).collect();
    assert_eq!(models, [&json!("M"), &json!("N")]);
}

#[tokio::test]
async fn run_fails_with_the_key_hint_when_the_provider_answers_401() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"message": "Incorrect API key provided"}})),
        )
        .expect(2)
        .mount(&server)
        .await;
    let home = home();
    let keyed = [
        "-c",
        "model=M",
        "-c",
        "model_providers.mock.env_key=TANDEM_RUN_MODEL_KEY",
        "run",
        "hi",
    ];
    // An unset key variable is reported at start, before any request (issue 18).
    let unset = run(tandem(&home, &server, &keyed)).await;
    let stderr = text(&unset.stderr);
    assert_eq!(unset.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("reads its API key from TANDEM_RUN_MODEL_KEY, which is not set"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("HTTP 401"),
        "no request was sent: {stderr}"
    );

    // A key the provider refuses: the hint names the variable to check.
    let mut wrong_key = tandem(&home, &server, &keyed);
    wrong_key.env("TANDEM_RUN_MODEL_KEY", "sk-wrong");
    let output = run(wrong_key).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the turn failed"), "{stderr}");
    assert!(stderr.contains("HTTP 401"), "{stderr}");
    assert!(stderr.contains("check TANDEM_RUN_MODEL_KEY"), "{stderr}");

    // A provider without env_key sends no key; the hint says how to configure one.
    let keyless = run(tandem(&home, &server, &["-c", "model=M", "run", "hi"])).await;
    let stderr = text(&keyless.stderr);
    assert_eq!(keyless.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("provider mock sends no API key; set env_key in [model_providers.mock]"),
        "{stderr}"
    );
    let requests = server.received_requests().await.expect("recording on");
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0]
            .headers
            .get("authorization")
            .map(|value| value.to_str().unwrap()),
        Some("Bearer sk-wrong")
    );
    assert!(
        !requests[1].headers.contains_key("authorization"),
        "no key was configured, so none is sent"
    );
}
