//! The command line of `tandem app-server` (issue 8, section 3): `--help` for every command,
//! usage errors (exit 2 with a message), global options before and after the subcommand,
//! unknown features as warnings, and a quiet stderr by default.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::process::{Output, Stdio};
use std::time::Instant;

use common::client::Client;
use common::server::{Launch, fresh_home};
use common::{PROMPT, within};
use serde_json::{Value, json};

/// Runs `tandem args` to its end, with a fresh home and stdin empty.
async fn run(args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tandem"));
    command
        .args(args)
        .env("TANDEM_HOME", fresh_home("cli"))
        .env_remove("TANDEM_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    within(PROMPT, "tandem to exit", command.output())
        .await
        .expect("run tandem")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn help_works_for_every_command() {
    let cases: [(&[&str], &[&str]); 5] = [
        (
            &["--help"],
            &["Usage: tandem", "app-server", "exec", "--config"],
        ),
        (&["help", "app-server"], &["Usage: tandem app-server"]),
        (
            &["app-server", "--help"],
            &[
                "Usage: tandem app-server",
                "--listen <URL>",
                "stdio://",
                "ws://IP:PORT",
                "--ws-auth <MODE>",
                "capability-token",
                "--ws-token-file <PATH>",
                "--ws-token-sha256 <HEX>",
                "--max-message-bytes <BYTES>",
                "--ws-writer-queue <N>",
                "--ws-slow-grace-secs <SECS>",
                "--writer-queue-bytes <BYTES>",
                "SIGHUP",
                "-c, --config <KEY=VALUE>",
                "--profile <NAME>",
                "--strict-config",
                "--trace-file <PATH>",
                "listening on: ws://ADDR",
                "TANDEM_HOME",
                "TANDEM_LOG",
            ],
        ),
        (
            &["exec", "--help"],
            &["Usage: tandem exec", "--tty", "<CMD>..."],
        ),
        (&["--version"], &["tandem "]),
    ];
    for (args, needles) in cases {
        let output = run(args).await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&output.stderr)
        );
        let stdout = text(&output.stdout);
        for needle in needles {
            assert!(
                stdout.contains(needle),
                "{args:?} lacks {needle:?}:\n{stdout}"
            );
        }
    }
}

#[tokio::test]
async fn usage_errors_exit_2_with_a_message() {
    let token_file = fresh_home("usage").with_extension("token");
    let cases: [(&[&str], &str); 10] = [
        (
            &["app-server", "--listen", "http://x"],
            "expected stdio://, ws://IP:PORT, unix://PATH or unix://",
        ),
        (
            &["app-server", "--listen", "ws://localhost:4500"],
            "with an IP literal",
        ),
        (
            &["app-server", "--listen", "ws://127.0.0.1"],
            "ws://IP:PORT",
        ),
        (&["app-server", "--bogus"], "--bogus"),
        (&["serve"], "serve"),
        (&["app-server", "-c", "no-equals"], "KEY=VALUE"),
        (&["-c", "=5", "app-server"], "KEY=VALUE"),
        (
            &["app-server", "--ws-token-file", "/nonexistent/token"],
            "--ws-auth capability-token",
        ),
        (
            &[
                "app-server",
                "--listen",
                "ws://127.0.0.1:0",
                "--ws-auth",
                "capability-token",
            ],
            "--ws-token-file PATH or --ws-token-sha256 HEX",
        ),
        (
            &[
                "app-server",
                "--ws-auth",
                "capability-token",
                "--ws-token-sha256",
                "abc",
            ],
            "64 hexadecimal digits",
        ),
    ];
    for (args, needle) in cases {
        let output = run(args).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?} lacks {needle:?}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    // Both forms of the token at once.
    std::fs::create_dir_all(token_file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&token_file, "s3cret\n").expect("token file");
    let token_file = token_file.to_str().expect("utf-8 path");
    let digest = "0".repeat(64);
    let args = [
        "app-server",
        "--ws-auth",
        "capability-token",
        "--ws-token-file",
        token_file,
        "--ws-token-sha256",
        &digest,
    ];
    let output = run(&args).await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("cannot be used with"));
}

/// Issue 27, point 4: a `--ws-token-file` that users other than its owner may read is refused
/// (exit 2) with a message naming the file, its mode and the fix, as ssh refuses such a key;
/// a private one (0600) serves (here over stdio, until stdin's end).
#[tokio::test]
async fn a_ws_token_file_others_may_read_is_refused() {
    let dir = fresh_home("token_modes");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for mode in [0o600, 0o640, 0o644, 0o666] {
        let file = dir.join(format!("token-{mode:o}"));
        std::fs::write(&file, "s3cret\n").expect("token file");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let path = file.to_str().expect("utf-8 path");
        let output = run(&[
            "app-server",
            "--ws-auth",
            "capability-token",
            "--ws-token-file",
            path,
        ])
        .await;
        let stderr = text(&output.stderr);
        if mode == 0o600 {
            assert_eq!(output.status.code(), Some(0), "0600: {stderr}");
            continue;
        }
        assert_eq!(output.status.code(), Some(2), "{mode:o}: {stderr}");
        for needed in [
            format!("--ws-token-file: the token file {path} has mode 0{mode:o}"),
            format!("chmod 600 {path}"),
        ] {
            assert!(stderr.contains(&needed), "{needed:?} missing: {stderr}");
        }
    }
}

/// `config/read` of a server started with `args`.
async fn config_of(args: &[&str]) -> Value {
    let (server, client) = Launch::new("global_options")
        .args(args.iter().copied())
        .stdio();
    let mut client = Client::Stdio(client);
    client.initialize(false).await;
    let config = client.ok(1, "config/read", json!({})).await["config"].clone();
    let since = Instant::now();
    let _stdout = client.into_stdio().close_stdin();
    server.finish(since).await;
    config
}

#[tokio::test]
async fn global_options_go_before_or_after_the_subcommand() {
    assert_eq!(
        config_of(&["app-server"]).await["thread_unload_delay_secs"],
        60
    );
    let provider = "model_providers.local.base_url=http://127.0.0.1:9/v1";
    for args in [
        &[
            "-c",
            "thread_unload_delay_secs=5",
            "-c",
            provider,
            "app-server",
        ][..],
        &[
            "app-server",
            "-c",
            "thread_unload_delay_secs=5",
            "--config",
            provider,
        ],
    ] {
        let config = config_of(args).await;
        assert_eq!(config["thread_unload_delay_secs"], 5, "{args:?}: {config}");
        assert_eq!(
            config["model_providers"]["local"]["base_url"], "http://127.0.0.1:9/v1",
            "{args:?}: {config}"
        );
    }
}

#[tokio::test]
async fn an_unknown_feature_is_a_warning() {
    let (server, client) = Launch::new("unknown_feature")
        .args([
            "--enable",
            "guardian_approval",
            "app-server",
            "--disable",
            "warp_drive",
        ])
        .stdio();
    let mut client = Client::Stdio(client);
    client.initialize(false).await;
    client.assert_serves(1).await;
    let since = Instant::now();
    let _stdout = client.into_stdio().close_stdin();
    let exited = server.finish(since).await;
    for feature in ["guardian_approval", "warp_drive"] {
        assert!(
            exited
                .stderr
                .contains(&format!("warning: unknown feature `{feature}` ignored")),
            "{}",
            exited.stderr
        );
    }
}

/// Some clients never read the server's stderr: without `TANDEM_LOG`, an ordinary session
/// (a thread, a streamed turn, reads, a websocket connection) writes nothing there.
#[tokio::test]
async fn default_stderr_stays_empty() {
    let (server, client) = Launch::new("quiet_stdio").args(["app-server"]).stdio();
    let mut client = Client::Stdio(client);
    session(&mut client).await;
    let since = Instant::now();
    let _stdout = client.into_stdio().close_stdin();
    let exited = server.finish(since).await;
    assert_eq!(exited.stderr, "", "stderr of a stdio session");

    let (server, address) = Launch::new("quiet_websocket")
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .websocket()
        .await;
    let mut client = Client::Ws(
        common::client::connect(address, &[])
            .await
            .expect("connect"),
    );
    session(&mut client).await;
    client.into_ws().close().await;
    let exited = server.terminate().await;
    assert_eq!(
        exited.stderr,
        format!("listening on: ws://{address}\n"),
        "stderr of a websocket session"
    );
}

async fn session(client: &mut Client) {
    client.initialize(false).await;
    let started = client.ok(1, "thread/start", json!({})).await;
    let thread_id = started["thread"]["id"].clone();
    client
        .ok(
            2,
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello there"}]}),
        )
        .await;
    client
        .notification("turn/completed", |params| params["threadId"] == thread_id)
        .await;
    client
        .ok(
            3,
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await;
    client.ok(4, "config/read", json!({})).await;
    client.ok(5, "thread/list", json!({})).await;
}
