//! `cargo xtask proxy-interop [--reference BIN] [--tandem BIN]`: the raw proxies of Tandem and
//! of the reference app-server against each other's unix socket server (issue 32): the
//! reference's `codex app-server proxy --sock PATH` in front of Tandem's daemon, and Tandem's
//! `tandem app-server proxy --sock PATH` (raw, then `--lines`) in front of
//! `codex app-server --listen unix://PATH`. Through each, a client upgrades to a websocket
//! over the proxy's stdio (or, with `--lines`, writes JSON lines), initializes and starts a
//! thread; the command prints one line per pairing and fails if any did not get both answers.
//! It needs the reference, so it is not part of CI.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::Message;

/// The reference binary when `--reference` is not given.
const DEFAULT_REFERENCE: &str = "codex";
/// How long any one step may take.
const STEP_LIMIT: Duration = Duration::from_secs(30);

/// Why the check could not run.
#[derive(Debug, thiserror::Error)]
enum InteropError {
    #[error("{0}\nusage: cargo xtask proxy-interop [--reference BIN] [--tandem BIN]")]
    Usage(String),
    #[error("{what}: {reason}")]
    Step { what: String, reason: String },
}

fn step(what: &str) -> impl FnOnce(String) -> InteropError + '_ {
    move |reason| InteropError::Step {
        what: what.to_owned(),
        reason,
    }
}

pub(crate) fn run(args: &[String]) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("xtask proxy-interop: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(check(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("xtask proxy-interop: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn check(args: &[String]) -> Result<bool, InteropError> {
    let mut reference = PathBuf::from(DEFAULT_REFERENCE);
    let mut tandem = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let value = rest
            .next()
            .map(PathBuf::from)
            .ok_or_else(|| InteropError::Usage(format!("{arg} needs a value")))?;
        match arg.as_str() {
            "--reference" => reference = value,
            "--tandem" => tandem = Some(value),
            other => return Err(InteropError::Usage(format!("unknown argument {other}"))),
        }
    }
    let tandem = match tandem {
        Some(tandem) => tandem,
        None => tokio::task::spawn_blocking(tandem_test_support::binary::tandem_binary)
            .await
            .map_err(|error| InteropError::Usage(error.to_string()))?
            .map_err(|error| InteropError::Usage(error.to_string()))?
            .to_path_buf(),
    };
    let scratch = std::env::temp_dir().join(format!("tandem-proxy-interop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)
        .map_err(|error| step("scratch directory")(error.to_string()))?;
    let mut all = true;

    // The reference's proxy in front of Tandem's daemon.
    let tandem_home = scratch.join("tandem-home");
    let started = command(&tandem, &tandem_home)
        .args(["app-server", "daemon", "start"])
        .output()
        .await
        .map_err(|error| step("tandem app-server daemon start")(error.to_string()))?;
    if !started.status.success() {
        return Err(step("tandem app-server daemon start")(
            String::from_utf8_lossy(&started.stderr).into_owned(),
        ));
    }
    let socket = tandem_home
        .join("app-server-control")
        .join("app-server-control.sock");
    let proxy = command(&reference, &scratch.join("codex-home"))
        .args(["app-server", "proxy", "--sock"])
        .arg(&socket)
        .spawn()
        .map_err(|error| step("codex app-server proxy")(error.to_string()))?;
    all &= report(
        "codex app-server proxy -> tandem daemon",
        websocket_through(proxy).await,
    );
    let _ = command(&tandem, &tandem_home)
        .args(["app-server", "daemon", "stop"])
        .output()
        .await;

    // Tandem's proxies in front of the reference's unix socket server.
    let reference_socket = scratch.join("reference.sock");
    // In a process group of its own: `codex` is a launcher whose server is its child, and
    // both must go at the end.
    let server = command(&reference, &scratch.join("codex-home"))
        .args(["app-server", "--listen"])
        .arg(format!("unix://{}", reference_socket.display()))
        .process_group(0)
        .spawn()
        .map_err(|error| step("codex app-server --listen unix://")(error.to_string()))?;
    wait_for_socket(&reference_socket).await?;
    let raw = command(&tandem, &tandem_home)
        .args(["app-server", "proxy", "--sock"])
        .arg(&reference_socket)
        .spawn()
        .map_err(|error| step("tandem app-server proxy")(error.to_string()))?;
    all &= report(
        "tandem app-server proxy -> codex --listen unix://",
        websocket_through(raw).await,
    );
    let lines = command(&tandem, &tandem_home)
        .args(["app-server", "proxy", "--lines", "--sock"])
        .arg(&reference_socket)
        .spawn()
        .map_err(|error| step("tandem app-server proxy --lines")(error.to_string()))?;
    all &= report(
        "tandem app-server proxy --lines -> codex --listen unix://",
        lines_through(lines).await,
    );
    if let Some(pid) = server.id().and_then(|pid| i32::try_from(pid).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(all)
}

/// `program` with its home set (both homes: whichever server it is) and piped stdio.
fn command(program: &Path, home: &Path) -> Command {
    let _ = std::fs::create_dir_all(home);
    let mut command = Command::new(program);
    command
        .env("TANDEM_HOME", home)
        .env("CODEX_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    command
}

async fn wait_for_socket(path: &Path) -> Result<(), InteropError> {
    let waited = tokio::time::timeout(STEP_LIMIT, async {
        while tokio::net::UnixStream::connect(path).await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    waited.map_err(|_| {
        step("the reference's unix socket")(format!("nothing listens on {}", path.display()))
    })
}

fn report(pairing: &str, outcome: Result<String, String>) -> bool {
    match outcome {
        Ok(detail) => {
            println!("pass  {pairing}: {detail}");
            true
        }
        Err(reason) => {
            println!("FAIL  {pairing}: {reason}");
            false
        }
    }
}

/// The requests every pairing sends, and the check of their answers.
fn requests() -> [Value; 3] {
    [
        json!({"id": 1, "method": "initialize",
               "params": {"clientInfo": {"name": "proxy-interop", "version": "1"}}}),
        json!({"method": "initialized"}),
        json!({"id": 2, "method": "thread/start", "params": {"cwd": std::env::temp_dir()}}),
    ]
}

/// A websocket client over the proxy's stdio: the upgrade, then the requests.
async fn websocket_through(mut proxy: Child) -> Result<String, String> {
    let io = tokio::io::join(
        proxy.stdout.take().ok_or("no stdout")?,
        proxy.stdin.take().ok_or("no stdin")?,
    );
    let exchange = async {
        let (mut socket, response) = tokio_tungstenite::client_async("ws://localhost/", io)
            .await
            .map_err(|error| format!("the upgrade failed: {error}"))?;
        for request in requests() {
            socket
                .send(Message::text(request.to_string()))
                .await
                .map_err(|error| error.to_string())?;
        }
        let mut answered = Vec::new();
        while answered.len() < 2 {
            let frame = socket
                .next()
                .await
                .ok_or("the proxy closed")?
                .map_err(|error| error.to_string())?;
            if let Ok(text) = frame.to_text()
                && let Ok(message) = serde_json::from_str::<Value>(text)
                && let Some(id) = message.get("id").and_then(Value::as_i64)
            {
                if message.get("result").is_none() {
                    return Err(format!("request {id} failed: {message}"));
                }
                answered.push(id);
            }
        }
        let _ = socket.close(None).await;
        Ok(format!(
            "{}, initialize and thread/start answered",
            response.status()
        ))
    };
    tokio::time::timeout(STEP_LIMIT, exchange)
        .await
        .map_err(|_| format!("no answers within {STEP_LIMIT:?}"))?
}

/// A JSON-lines client on the line proxy's stdio.
async fn lines_through(mut proxy: Child) -> Result<String, String> {
    let mut stdin = proxy.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(proxy.stdout.take().ok_or("no stdout")?).lines();
    let exchange = async {
        for request in requests() {
            stdin
                .write_all(format!("{request}\n").as_bytes())
                .await
                .map_err(|error| error.to_string())?;
        }
        let mut answered = 0;
        while answered < 2 {
            let line = stdout
                .next_line()
                .await
                .map_err(|error| error.to_string())?
                .ok_or("the proxy closed")?;
            let message: Value = serde_json::from_str(&line).map_err(|error| error.to_string())?;
            if message.get("id").is_some() && message.get("method").is_none() {
                if message.get("result").is_none() {
                    return Err(format!("a request failed: {message}"));
                }
                answered += 1;
            }
        }
        drop(stdin);
        Ok("initialize and thread/start answered".to_owned())
    };
    tokio::time::timeout(STEP_LIMIT, exchange)
        .await
        .map_err(|_| format!("no answers within {STEP_LIMIT:?}"))?
}
