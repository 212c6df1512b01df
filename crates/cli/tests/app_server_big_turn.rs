//! Issue 27, point 1: one turn of the largest input the server accepts never disconnects a
//! websocket client that reads. A turn re-emits its input six times, so its burst is several
//! times the writer queue's bytes; the connection waits for its reader instead of being closed
//! the moment it goes over.
//!
//! The real binary, with `--max-message-bytes` and `--writer-queue-bytes` both scaled down from
//! their 64 MiB defaults to 4 MiB (an unoptimized build takes about a second per megabyte of
//! turn input), and an input as large as that limit allows: the `turn/start` message is
//! exactly 4 MiB. `tandem-host`'s router test `a_turn_of_the_largest_input_stays_within_the_
//! default_ceiling` routes the same turn at the default 64 MiB.

mod common;

use common::client::{self, Client};
use common::server::Launch;
use serde_json::json;

const LIMIT_BYTES: usize = 4 * 1024 * 1024;

/// A `turn/start` of `text`, as the JSON the client sends.
fn turn_start(thread_id: &str, text: &str) -> String {
    let input = json!([{"type": "text", "text": text}]);
    client::request(
        2,
        "turn/start",
        json!({"threadId": thread_id, "input": input}),
    )
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_of_the_largest_input_reaches_a_client_that_reads() {
    let limit = LIMIT_BYTES.to_string();
    let (server, address) = Launch::new("big_turn")
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .args([
            "--max-message-bytes",
            &limit,
            "--writer-queue-bytes",
            &limit,
        ])
        .websocket()
        .await;
    let mut client = Client::Ws(client::connect(address, &[]).await.expect("connect"));
    client.initialize(false).await;
    let started = client
        .ok(1, "thread/start", json!({"approvalPolicy": "never"}))
        .await;
    let thread_id = started["thread"]["id"].as_str().expect("thread id");
    let text_bytes = LIMIT_BYTES - turn_start(thread_id, "").len();
    let request = turn_start(thread_id, &"x".repeat(text_bytes));
    assert_eq!(request.len(), LIMIT_BYTES, "the largest message accepted");
    client.send_text(&request).await;
    drop(request);

    // Everything the turn sends arrives (a close fails the read), and it carries the input as
    // many times as a turn re-emits it.
    let mut received = 0;
    let completed = loop {
        let message = client.recv().await;
        received += message.to_string().len();
        if message["method"] == "turn/completed" {
            break message;
        }
        if message["method"] == "error" || message.get("error").is_some() {
            panic!("the turn failed: {message}");
        }
    };
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    let items = completed["params"]["turn"]["items"]
        .as_array()
        .expect("items");
    let echoed = items
        .iter()
        .filter_map(|item| item["text"].as_str())
        .map(str::len)
        .collect::<Vec<_>>();
    assert!(
        echoed.iter().all(|len| *len >= text_bytes),
        "the items carry the whole input: {echoed:?}"
    );
    assert!(
        received >= 6 * text_bytes,
        "the turn sent {received} bytes for a {text_bytes}-byte input"
    );
    // Still connected, and still served.
    client.assert_serves(3).await;
    assert!(
        server
            .find_stderr(|line| line.contains("closing"))
            .is_none(),
        "{}",
        server.stderr()
    );
    server.terminate().await.assert_no_panic();
}
