//! `cargo bench -p tandem-cli --bench mcp`: what Tandem's MCP client costs (issue 30), each
//! figure a ratio to a baseline measured in the same run.
//!
//! - **Tool call.** `mcpServer/tool/call` of the test server's `echo` through
//!   `tandem app-server` over stdio, one call at a time, against the same call made by an rmcp
//!   client in this process straight to the same server. Target: at most 1.2x the direct call
//!   plus 1 ms per call.
//! - **`turn/start` while a server starts.** The time to the answer of `turn/start` (a turn of
//!   the scripted agent, each after the previous one completed) with one configured MCP server
//!   that takes 10 s to start, against the same with no MCP server; every turn runs within
//!   those 10 s (checked: the server is still `starting` at the end). Target: at most 1.2x
//!   plus 5 ms.
//!
//! The MCP server is tandem-test-support's test server (`mcp_server`), served by this bench
//! binary itself re-executed with `--mcp-test-server [--start-delay-ms N]`, so that it is
//! built like the bench (release). Rounds alternate the targets, each on a fresh server
//! process, after a warm-up; the median of the rounds' mean per-call times is reported.
//!
//! Without `--bench` (as under `cargo test --benches`) the sizes shrink to a quick pass.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Value, json};
use tandem_test_support::mcp_server::{CrashMode, TestMcpServer, serve_stdio};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The argument that makes this binary the MCP test server.
const SERVE_FLAG: &str = "--mcp-test-server";
/// How long the slow server takes to start.
const SLOW_START: Duration = Duration::from_secs(10);
/// How long any one answer may take.
const PATIENCE: Duration = Duration::from_secs(60);

/// Targets: `measured <= ratio * baseline + slack`.
const TOOL_CALL_TARGET: (f64, Duration) = (1.2, Duration::from_millis(1));
const TURN_START_TARGET: (f64, Duration) = (1.2, Duration::from_millis(5));

struct Sizes {
    rounds: usize,
    warm_up: usize,
    calls: usize,
    turns: usize,
}

const FULL: Sizes = Sizes {
    rounds: 5,
    warm_up: 200,
    calls: 2_000,
    turns: 40,
};

const QUICK: Sizes = Sizes {
    rounds: 1,
    warm_up: 5,
    calls: 20,
    turns: 3,
};

type BenchError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    if args.first().map(String::as_str) == Some(SERVE_FLAG) {
        let delay = match args.get(1..3) {
            Some([flag, millis]) if flag == "--start-delay-ms" => {
                Duration::from_millis(millis.parse().unwrap_or(0))
            }
            _ => Duration::ZERO,
        };
        return runtime.block_on(async move {
            tokio::time::sleep(delay).await;
            match serve_stdio(TestMcpServer::new(CrashMode::Exit)).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        });
    }
    let sizes = if args.iter().any(|arg| arg == "--bench") {
        FULL
    } else {
        QUICK
    };
    match runtime.block_on(run(&sizes)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("mcp bench: {error}");
            ExitCode::from(2)
        }
    }
}

async fn run(sizes: &Sizes) -> Result<bool, BenchError> {
    let home = tempfile::tempdir()?;
    let mut direct = Vec::new();
    let mut through = Vec::new();
    for round in 0..sizes.rounds {
        direct.push(direct_calls(sizes).await?);
        through.push(tandem_calls(sizes, &home.path().join(format!("call-{round}"))).await?);
    }
    let direct = median(direct);
    let through = median(through);
    let calls_met = report(
        "mcpServer/tool/call of echo (per call)",
        ("rmcp client, direct", direct),
        ("tandem app-server, stdio", through),
        TOOL_CALL_TARGET,
    );

    let mut without = Vec::new();
    let mut with_slow = Vec::new();
    for round in 0..sizes.rounds {
        let base = home.path().join(format!("turn-{round}"));
        without.push(turn_starts(sizes, &base.join("none"), false).await?);
        with_slow.push(turn_starts(sizes, &base.join("slow"), true).await?);
    }
    let turns_met = report(
        "turn/start answer (per turn)",
        ("no MCP server", median(without)),
        ("one MCP server starting for 10 s", median(with_slow)),
        TURN_START_TARGET,
    );
    Ok(calls_met && turns_met)
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// Prints a figure against its baseline; whether the target is met.
fn report(
    figure: &str,
    (base_name, base): (&str, Duration),
    (name, measured): (&str, Duration),
    (ratio, slack): (f64, Duration),
) -> bool {
    let bound = base.mul_f64(ratio) + slack;
    let met = measured <= bound;
    println!(
        "{figure}: {base_name} {:.1} µs, {name} {:.1} µs, ratio {:.2}x \
         (target {ratio}x + {} ms = {:.1} µs: {})",
        base.as_secs_f64() * 1e6,
        measured.as_secs_f64() * 1e6,
        measured.as_secs_f64() / base.as_secs_f64(),
        slack.as_millis(),
        bound.as_secs_f64() * 1e6,
        if met { "met" } else { "MISSED" },
    );
    met
}

/// This binary as the MCP test server.
fn server_command(delay: Option<Duration>) -> Result<(PathBuf, Vec<String>), BenchError> {
    let mut args = vec![SERVE_FLAG.to_owned()];
    if let Some(delay) = delay {
        args.extend(["--start-delay-ms".to_owned(), delay.as_millis().to_string()]);
    }
    Ok((std::env::current_exe()?, args))
}

fn echo_arguments() -> JsonObject {
    let Value::Object(arguments) = json!({"text": "hello"}) else {
        unreachable!("an object literal")
    };
    arguments
}

/// The mean time of one `echo` call from an rmcp client straight to the test server.
async fn direct_calls(sizes: &Sizes) -> Result<Duration, BenchError> {
    let (program, args) = server_command(None)?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err("the test server has no pipes".into());
    };
    let client = rmcp::service::serve_client((), AsyncRwTransport::new_client(stdout, stdin))
        .await
        .map_err(|error| format!("rmcp handshake: {error}"))?;
    let call = || async {
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = Some(echo_arguments());
        client.peer().call_tool(params).await
    };
    for _ in 0..sizes.warm_up {
        call().await?;
    }
    let began = Instant::now();
    for _ in 0..sizes.calls {
        let result = call().await?;
        if result.is_error == Some(true) {
            return Err("echo answered an error".into());
        }
    }
    let elapsed = began.elapsed();
    let _ = client.cancel().await;
    Ok(elapsed / sizes.calls as u32)
}

/// The mean round trip of one `mcpServer/tool/call` of `echo` through `tandem app-server`.
async fn tandem_calls(sizes: &Sizes, home: &Path) -> Result<Duration, BenchError> {
    let (program, args) = server_command(None)?;
    let mut server = AppServer::start(home, Some(("test", program, args))).await?;
    server.wait_for_status("test", "connected").await?;
    // The call names a thread of this server, as a client's must.
    let started = server.call("thread/start", json!({})).await?;
    let call = json!({"threadId": started["thread"]["id"], "server": "test", "tool": "echo",
        "arguments": {"text": "hello"}});
    for _ in 0..sizes.warm_up {
        server.call("mcpServer/tool/call", call.clone()).await?;
    }
    let began = Instant::now();
    for _ in 0..sizes.calls {
        let answer = server.call("mcpServer/tool/call", call.clone()).await?;
        if answer["content"][0]["text"] != "hello" {
            return Err(format!("echo answered {answer}").into());
        }
    }
    let elapsed = began.elapsed();
    server.stop().await;
    Ok(elapsed / sizes.calls as u32)
}

/// The mean time to the answer of `turn/start`, with or without a server slow to start.
async fn turn_starts(sizes: &Sizes, home: &Path, slow: bool) -> Result<Duration, BenchError> {
    let mcp = if slow {
        let (program, args) = server_command(Some(SLOW_START))?;
        Some(("slow", program, args))
    } else {
        None
    };
    let mut server = AppServer::start(home, mcp).await?;
    let started = server.call("thread/start", json!({})).await?;
    let thread_id = started["thread"]["id"].clone();
    let turn = json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]});
    let mut total = Duration::ZERO;
    for _ in 0..sizes.turns {
        let began = Instant::now();
        server.call("turn/start", turn.clone()).await?;
        total += began.elapsed();
        server.wait_for_notification("turn/completed").await?;
    }
    if slow {
        // Every turn ran while the server was still starting.
        let status = server.call("mcpServerStatus/list", json!({})).await?;
        if status["data"][0]["runtimeStatus"] != "starting" {
            return Err(format!(
                "the slow server was no longer starting at the end of the turns: {status}"
            )
            .into());
        }
    }
    server.stop().await;
    Ok(total / sizes.turns as u32)
}

/// `tandem app-server` over stdio, with a fresh home.
struct AppServer {
    child: Child,
    input: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl AppServer {
    /// Starts it with `mcp` (name, program, arguments) as its one MCP server, if any.
    async fn start(
        home: &Path,
        mcp: Option<(&str, PathBuf, Vec<String>)>,
    ) -> Result<Self, BenchError> {
        std::fs::create_dir_all(home)?;
        if let Some((name, program, args)) = mcp {
            std::fs::write(
                home.join("config.toml"),
                format!(
                    "[mcp_servers.{name}]\ncommand = {}\nargs = {}\nstartup_timeout_sec = 60\n",
                    Value::from(program.display().to_string()),
                    Value::from(args),
                ),
            )?;
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_tandem"))
            .arg("app-server")
            .env("TANDEM_HOME", home)
            .env_remove("TANDEM_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("tandem app-server has no pipes".into());
        };
        let mut server = Self {
            child,
            input,
            lines: BufReader::new(output).lines(),
            next_id: 0,
        };
        server
            .call(
                "initialize",
                json!({"clientInfo": {"name": "mcp-bench", "version": "1"},
                    "capabilities": {"experimentalApi": true}}),
            )
            .await?;
        server.send(&json!({"method": "initialized"})).await?;
        Ok(server)
    }

    async fn send(&mut self, message: &Value) -> Result<(), BenchError> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.input.write_all(&line).await?;
        self.input.flush().await?;
        Ok(())
    }

    async fn next_message(&mut self) -> Result<Value, BenchError> {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .map_err(|_| "tandem app-server sent nothing for a minute")??
            .ok_or("tandem app-server closed its output")?;
        Ok(serde_json::from_str(&line)?)
    }

    /// Sends a request and returns its result (an error answer is an error).
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, BenchError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"id": id, "method": method, "params": params}))
            .await?;
        loop {
            let message = self.next_message().await?;
            if message["id"] == id {
                return match message.get("error") {
                    Some(error) => Err(format!("{method} failed: {error}").into()),
                    None => Ok(message["result"].clone()),
                };
            }
        }
    }

    async fn wait_for_notification(&mut self, method: &str) -> Result<(), BenchError> {
        while self.next_message().await?["method"] != method {}
        Ok(())
    }

    async fn wait_for_status(&mut self, name: &str, state: &str) -> Result<(), BenchError> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let status = self.call("mcpServerStatus/list", json!({})).await?;
            let reached = status["data"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|server| server["name"] == name && server["runtimeStatus"] == state);
            if reached {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("{name} never reached {state}: {status}").into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(mut self) {
        drop(self.input);
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
