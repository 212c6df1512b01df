//! The wire trace of `tandem app-server` (issue 18): with `TANDEM_LOG=tandem::wire=trace`
//! every JSON message in and out is logged on stderr, per connection, and stdout carries the
//! protocol alone; `--trace-file PATH` writes the same trace to a file instead.

mod common;

use std::time::{Duration, Instant};

use common::client::{self, Client};
use common::server::Launch;
use common::within;
use serde_json::json;

/// The trace lines of `stderr` for `connection` and `direction` (`in` or `out`), as JSON text.
fn traced(stderr: &str, connection: u64, direction: &str) -> Vec<String> {
    let marker = format!("tandem::wire: connection {connection} {direction:<3} ");
    stderr
        .lines()
        .filter_map(|line| line.split_once(&marker).map(|(_, json)| json.to_owned()))
        .collect()
}

#[tokio::test]
async fn stdio_traces_every_message_on_stderr_and_keeps_stdout_clean() {
    let (server, client) = Launch::new("wire_trace_stdio")
        .args(["app-server"])
        .env("TANDEM_LOG", "tandem::wire=trace")
        .stdio();
    let mut client = Client::Stdio(client);
    // Every message read from stdout parses as JSON-RPC: the trace never reaches it.
    client.initialize(false).await;
    let thread = client.ok(2, "thread/start", json!({})).await;
    let since = Instant::now();
    let _stdout = client_into_stdout(client);
    let exited = server.finish(since).await;

    let inbound = traced(&exited.stderr, 1, "in");
    let outbound = traced(&exited.stderr, 1, "out");
    assert!(
        inbound
            .iter()
            .any(|line| line.contains(r#""method":"initialize""#)),
        "{}",
        exited.stderr
    );
    assert!(
        inbound
            .iter()
            .any(|line| line.contains(r#""method":"thread/start""#)),
        "{}",
        exited.stderr
    );
    let thread_id = thread["thread"]["id"].as_str().expect("thread id");
    assert!(
        outbound
            .iter()
            .any(|line| line.contains(r#""id":2"#) && line.contains(thread_id)),
        "the thread/start answer is traced as written: {}",
        exited.stderr
    );
    assert!(
        outbound
            .iter()
            .any(|line| line.contains(r#""method":"thread/started""#)),
        "{}",
        exited.stderr
    );
    for line in inbound.iter().chain(&outbound) {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|error| panic!("not one JSON message ({error}): {line}"));
    }
}

#[tokio::test]
async fn websocket_traces_each_connection_apart_and_trace_file_takes_the_trace() {
    let trace_file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("wire-trace-{}.log", std::process::id()));
    let (server, address) = Launch::new("wire_trace_ws")
        .args(["app-server", "--listen", "ws://127.0.0.1:0", "--trace-file"])
        .args([trace_file.display().to_string()])
        .websocket()
        .await;
    let mut first = Client::Ws(client::connect(address, &[]).await.expect("connects"));
    first.initialize(false).await;
    let mut second = Client::Ws(client::connect(address, &[]).await.expect("connects"));
    second.initialize(false).await;
    second.ok(7, "thread/list", json!({})).await;
    drop(first);
    drop(second);
    let exited = server.terminate().await;
    assert!(
        !exited.stderr.contains("tandem::wire"),
        "the trace went to the file, not stderr: {}",
        exited.stderr
    );
    let trace = within(Duration::from_secs(5), "the trace file", async {
        std::fs::read_to_string(&trace_file).expect("trace file written")
    })
    .await;
    let (first_in, second_in) = (traced(&trace, 1, "in"), traced(&trace, 2, "in"));
    assert!(
        first_in
            .iter()
            .any(|line| line.contains(r#""method":"initialize""#)),
        "{trace}"
    );
    assert!(
        !first_in.iter().any(|line| line.contains("thread/list")),
        "connection 1 never listed threads: {trace}"
    );
    assert!(
        second_in
            .iter()
            .any(|line| line.contains(r#""method":"thread/list""#)),
        "{trace}"
    );
    assert!(
        traced(&trace, 2, "out")
            .iter()
            .any(|line| line.contains(r#""id":7"#)),
        "{trace}"
    );
    let _ = std::fs::remove_file(&trace_file);
}

fn client_into_stdout(client: Client) -> impl Sized {
    match client {
        Client::Stdio(stdio) => stdio.close_stdin(),
        Client::Ws(_) => unreachable!("a stdio client"),
    }
}
