//! A new user's first hour (issue 18), run as a user runs the binary: configuration typos are
//! caught, the scripted agent says what it is, `--model` needs a provider, a provider's missing
//! key or model is reported before any request, the model agent's retries show in text mode,
//! `run --json` stamps `emittedAtMs`, chat's `/help` and `/resume` say what a user needs, and
//! help pages do not offer feature switches that do not exist.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};
use tandem_test_support::within;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// Upper bound for one run of the binary.
const DEADLINE: Duration = Duration::from_secs(60);

/// The notice's stable start.
const NOTICE: &str = "tandem: note: no model is configured, so the scripted test agent answers";

/// A fresh home per call; it is also the working directory.
fn home() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let home = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tandem-first-hour-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&home).expect("home created");
    home
}

fn tandem(home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
    command
        .env("TANDEM_HOME", home)
        .env_remove("TANDEM_LOG")
        .env_remove("OPENAI_API_KEY")
        .current_dir(home)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

async fn run(mut command: Command) -> Output {
    let child = command.spawn().expect("tandem starts");
    within(DEADLINE, "tandem exits", child.wait_with_output())
        .await
        .expect("output collected")
}

/// Runs `tandem chat` with `input` on its (non-terminal) stdin.
async fn chat(home: &Path, args: &[&str], input: &str) -> Output {
    let mut command = tandem(home, args);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().expect("tandem starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(input.as_bytes())
        .await
        .expect("input written");
    drop(stdin);
    within(DEADLINE, "tandem chat exits", child.wait_with_output())
        .await
        .expect("output collected")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn code_and_streams(output: &Output) -> (Option<i32>, String, String) {
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

#[tokio::test]
async fn config_typos_warn_with_a_suggestion_and_strict_mode_refuses_them() {
    let home = home();
    std::fs::write(home.join("config.toml"), "modle = \"x\"\n").expect("config written");
    let output = run(tandem(
        &home,
        &["-c", "model_provder=openai", "run", "--quiet-notices", "hi"],
    ))
    .await;
    let (code, stdout, stderr) = code_and_streams(&output);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "You said: \"hi\"\n");
    let config = home.join("config.toml");
    assert!(
        stderr.contains(&format!(
            "tandem: warning: unknown config key `modle` in {}; did you mean `model`?",
            config.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "tandem: warning: unknown config key `model_provder` in a -c override; did you mean \
             `model_provider`?"
        ),
        "{stderr}"
    );

    let strict = run(tandem(
        &home,
        &["--strict-config", "-c", "model_provder=openai", "run", "hi"],
    ))
    .await;
    let (code, stdout, stderr) = code_and_streams(&strict);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stdout, "", "nothing ran");
    assert!(
        stderr.contains("`modle`") && stderr.contains("`model_provder`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("strict mode: correct or remove them"),
        "{stderr}"
    );

    // app-server warns at start too (exit at once: its stdin is empty).
    let server = run(tandem(&home, &["app-server", "-c", "modle=y"])).await;
    let (code, _, stderr) = code_and_streams(&server);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("did you mean `model`?"), "{stderr}");
}

#[tokio::test]
async fn the_scripted_agent_is_announced_unless_quiet_and_model_needs_a_provider() {
    let home = home();
    let output = run(tandem(&home, &["run", "hello"])).await;
    let (code, stdout, stderr) = code_and_streams(&output);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "You said: \"hello\"\n");
    assert_eq!(
        stderr
            .lines()
            .filter(|line| line.starts_with(NOTICE))
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("model_provider and model"), "{stderr}");

    let quiet = run(tandem(&home, &["run", "--quiet-notices", "hello"])).await;
    assert_eq!(text(&quiet.stderr), "", "--quiet-notices hides the notice");

    let model = run(tandem(&home, &["run", "--model", "gpt-5", "hi"])).await;
    let (code, stdout, stderr) = code_and_streams(&model);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stdout, "", "no agent answered");
    assert!(
        stderr.starts_with(
            "tandem: --model gpt-5: no model provider is selected, so no model would answer; \
             select one of the configured providers (ollama, openai)"
        ),
        "{stderr}"
    );

    // The same check holds for a spawned server: its config/read decides.
    let spawn = format!(
        "'{}' app-server --listen stdio://",
        env!("CARGO_BIN_EXE_tandem")
    );
    let spawned = run(tandem(
        &home,
        &["run", "--spawn", &spawn, "--model", "gpt-5", "hi"],
    ))
    .await;
    let (code, _, stderr) = code_and_streams(&spawned);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no model provider is selected"), "{stderr}");
    // ... and so does the notice.
    let spawned = run(tandem(&home, &["run", "--spawn", &spawn, "hi"])).await;
    let (code, stdout, stderr) = code_and_streams(&spawned);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "You said: \"hi\"\n");
    assert!(stderr.contains(NOTICE), "{stderr}");
}

#[tokio::test]
async fn a_providers_missing_key_or_model_is_reported_before_any_request() {
    let server = MockHttpServer::start().await.expect("mock starts");
    let home = home();
    let base_url = format!("model_providers.mock.base_url=\"{}\"", server.url("/v1"));
    let keyed = [
        "-c",
        "model_provider=mock",
        "-c",
        &base_url,
        "-c",
        "model_providers.mock.env_key=TANDEM_FIRST_HOUR_KEY_NEVER_SET",
    ];
    let mut args = keyed.to_vec();
    args.extend(["-c", "model=M", "run", "hi"]);
    let output = run(tandem(&home, &args)).await;
    let (code, _, stderr) = code_and_streams(&output);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "model provider mock reads its API key from TANDEM_FIRST_HOUR_KEY_NEVER_SET, which is \
             not set: export TANDEM_FIRST_HOUR_KEY_NEVER_SET="
        ),
        "{stderr}"
    );

    let output = run(tandem(
        &home,
        &["-c", "model_provider=mock", "-c", &base_url, "run", "hi"],
    ))
    .await;
    let (code, _, stderr) = code_and_streams(&output);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("model provider mock is selected but no model is configured"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "no request was sent");
}

#[tokio::test]
async fn retries_show_one_line_each_in_text_mode() {
    let server = MockHttpServer::start().await.expect("mock starts");
    for _ in 0..2 {
        server.push(
            MockResponse::json(
                503,
                &serde_json::json!({"error": {"message": "overloaded"}}),
            )
            .header("retry-after-ms", "1"),
        );
    }
    server.push(
        MockResponse::sse()
            .event(r#"{"choices":[{"index":0,"delta":{"content":"back again"},"finish_reason":null}]}"#)
            .event(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#)
            .event("[DONE]"),
    );
    let home = home();
    let base_url = format!("model_providers.mock.base_url=\"{}\"", server.url("/v1"));
    let output = run(tandem(
        &home,
        &[
            "-c",
            "model_provider=mock",
            "-c",
            &base_url,
            "-c",
            "model=M",
            "run",
            "hi",
        ],
    ))
    .await;
    let (code, stdout, stderr) = code_and_streams(&output);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "back again\n");
    let retries: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("tandem: Reconnecting..."))
        .collect();
    assert_eq!(retries.len(), 2, "{stderr}");
    assert!(
        retries[0].starts_with("tandem: Reconnecting... 1/5 ("),
        "{stderr}"
    );
    assert!(
        retries[1].starts_with("tandem: Reconnecting... 2/5 ("),
        "{stderr}"
    );
    assert!(retries[0].contains("503"), "{stderr}");
    assert_eq!(server.requests().len(), 3);

    // With --json the retries are `error` notifications on stdout, not lines on stderr.
    let json = run(tandem(
        &home,
        &[
            "-c",
            "model_provider=mock",
            "-c",
            &base_url,
            "-c",
            "model=M",
            "run",
            "--json",
            "hi",
        ],
    ))
    .await;
    assert!(
        !text(&json.stderr).contains("Reconnecting"),
        "{}",
        text(&json.stderr)
    );
}

#[tokio::test]
async fn run_json_stamps_every_notification_with_emitted_at_ms() {
    let home = home();
    let output = run(tandem(&home, &["run", "--json", "--quiet-notices", "hi"])).await;
    let (code, stdout, stderr) = code_and_streams(&output);
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert!(lines.len() >= 3, "{stdout}");
    for line in &lines {
        let stamp = line["emittedAtMs"]
            .as_i64()
            .unwrap_or_else(|| panic!("{line}"));
        assert!(stamp > 1_600_000_000_000, "unix milliseconds: {line}");
    }
    assert_eq!(lines.last().expect("lines")["method"], "turn/completed");
}

#[tokio::test]
async fn chat_help_lists_the_scripted_commands_and_resume_shows_the_history() {
    let home = home();
    let first = chat(&home, &["chat", "--quiet-notices"], "hello\n/help\n").await;
    let (code, stdout, stderr) = code_and_streams(&first);
    assert_eq!(code, Some(0), "{stderr}");
    for needle in [
        "/resume ID",
        "The scripted agent",
        "/sh CMD",
        "/ask TEXT",
        "/sleep MS",
        "/fail TEXT",
    ] {
        assert!(stdout.contains(needle), "/help lacks {needle:?}:\n{stdout}");
    }
    let thread = stdout
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("thread "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the thread id is announced")
        .to_owned();

    let second = chat(&home, &["chat"], &format!("/resume {thread}\n")).await;
    let (code, stdout, stderr) = code_and_streams(&second);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "resumed thread {thread}:\n> hello\nYou said: \"hello\"\n"
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("turns)"), "{stdout}");
    // The notice comes with the scripted agent's first answer: none was asked for here.
    assert!(!stderr.contains(NOTICE), "{stderr}");
    // Once per chat, however many answers follow.
    let third = chat(&home, &["chat"], "one\ntwo\nthree\n").await;
    let (code, stdout, stderr) = code_and_streams(&third);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("You said: \"three\""), "{stdout}");
    assert_eq!(
        stderr
            .lines()
            .filter(|line| line.starts_with(NOTICE))
            .count(),
        1,
        "{stderr}"
    );
}

#[tokio::test]
async fn help_pages_offer_no_feature_switches_yet_accept_them() {
    let home = home();
    for page in [
        &["--help"][..],
        &["run", "--help"],
        &["chat", "--help"],
        &["exec", "--help"],
        &["app-server", "--help"],
    ] {
        let output = run(tandem(&home, page)).await;
        let stdout = text(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{page:?}");
        assert!(
            !stdout.contains("--enable") && !stdout.contains("--disable"),
            "{page:?}:\n{stdout}"
        );
    }
    let output = run(tandem(
        &home,
        &[
            "--enable",
            "guardian_approval",
            "run",
            "--quiet-notices",
            "hi",
        ],
    ))
    .await;
    let (code, _, stderr) = code_and_streams(&output);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("unknown feature `guardian_approval` ignored"),
        "{stderr}"
    );
}
