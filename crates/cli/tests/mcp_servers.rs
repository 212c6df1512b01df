//! MCP servers (issue 30) against the real binary: `tandem app-server`, over stdio and over a
//! websocket, starts the configured test server in the background and serves
//! `mcpServerStatus/list` and `mcpServer/tool/call` on the wire; a `kill -9` of the app-server
//! takes the MCP server with it (its group is registered with the watchdog); `tandem mcp list`
//! prints the server's state and the tools a session gets.

mod common;

use std::time::{Duration, Instant};

use common::PROMPT;
use common::client::Client;
use common::server::{Launch, fresh_home};
use nix::sys::signal::Signal;
use serde_json::{Value, json};

/// How long the MCP server may outlive a killed app-server (issue 13's bound for children).
const OUTLIVE_LIMIT: Duration = Duration::from_secs(2);

/// A home whose config names the test server as `test`, with `crash` hidden.
async fn home_with_test_server(test: &str) -> std::path::PathBuf {
    let binary = tandem_test_support::binary::mcp_test_server_path().await;
    let home = fresh_home(test);
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join("config.toml"),
        format!("[mcp_servers.test]\ncommand = \"{binary}\"\ndisabled_tools = [\"crash\"]\n"),
    )
    .expect("config");
    home
}

/// The pids of running `tandem-mcp-test-server` processes whose parent is `parent`.
fn mcp_servers_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let running = fields.next().is_some_and(|state| state != "Z");
            let child = fields.next().and_then(|ppid| ppid.parse::<u32>().ok()) == Some(parent);
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            running && child && String::from_utf8_lossy(&cmdline).contains("tandem-mcp-test-server")
        })
        .collect()
}

fn is_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(')')?;
            rest.split_whitespace().next().map(|state| state != "Z")
        })
        .unwrap_or(false)
}

/// Waits until the test server is connected (as `mcpServerStatus/list` tells), then calls
/// its echo tool: the MCP methods on a wire connection.
async fn list_and_call(client: &mut Client) {
    client.initialize(false).await;
    let deadline = Instant::now() + PROMPT;
    let mut id = 1;
    let status = loop {
        let list = client.ok(id, "mcpServerStatus/list", json!({})).await;
        id += 1;
        let status = list["data"][0].clone();
        if status["runtimeStatus"] == "connected" {
            break status;
        }
        assert!(Instant::now() < deadline, "never connected: {list}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status["name"], "test");
    assert!(status["tools"]["echo"].is_object() && status["tools"]["crash"].is_null());
    // A tool call names a thread the server knows.
    let thread = client
        .ok(id, "thread/start", json!({"ephemeral": true}))
        .await;
    id += 1;
    let thread_id = thread["thread"]["id"].clone();
    let echoed = client
        .ok(
            id,
            "mcpServer/tool/call",
            json!({"threadId": thread_id, "server": "test", "tool": "echo", "arguments": {"text": "over the wire"}}),
        )
        .await;
    assert_eq!(echoed["content"][0]["text"], "over the wire");
    assert_eq!(echoed["isError"], Value::Bool(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_serves_mcp_over_a_websocket() {
    let home = home_with_test_server("mcp_ws").await;
    let (server, address) = Launch::new("mcp_ws")
        .home(home)
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .websocket()
        .await;
    let mut client = Client::Ws(
        common::client::connect(address, &[])
            .await
            .expect("connect"),
    );
    list_and_call(&mut client).await;
    server.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_serves_mcp_over_stdio_and_its_server_dies_with_it() {
    let home = home_with_test_server("mcp_stdio").await;
    let (server, client) = Launch::new("mcp_stdio")
        .home(home)
        .args(["app-server"])
        .stdio();
    let mut client = Client::Stdio(client);
    list_and_call(&mut client).await;
    let children = mcp_servers_of(server.pid);
    assert_eq!(children.len(), 1, "one MCP server process: {children:?}");
    let since = Instant::now();
    server.signal(Signal::SIGKILL);
    while is_alive(children[0]) {
        assert!(
            since.elapsed() < OUTLIVE_LIMIT,
            "the MCP server outlived a kill -9 of the app-server by {OUTLIVE_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tandem_mcp_list_prints_states_and_the_tools_a_session_gets() {
    let home = home_with_test_server("mcp_list").await;
    let output = tokio::time::timeout(
        PROMPT,
        tokio::process::Command::new(env!("CARGO_BIN_EXE_tandem"))
            .args(["mcp", "list"])
            .env("TANDEM_HOME", &home)
            .env_remove("TANDEM_LOG")
            .output(),
    )
    .await
    .expect("tandem mcp list ends")
    .expect("run tandem mcp list");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout.starts_with("test  connected  (stdio: "), "{stdout}");
    assert!(
        stdout.contains("  tool mcp__test__echo  Answers its text\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  hidden crash  (in disabled_tools)\n"),
        "{stdout}"
    );
}
