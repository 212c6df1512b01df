//! Issue 13, point 6(b): a websocket client that stops reading cannot pin the server's memory.
//! Its writer queue is bounded in bytes (`--writer-queue-bytes`, default 64 MiB) as well as in
//! messages, so three `turn/start`s with 8 MB inputs (each turn echoes its input in about five
//! messages) fill it long before 32 768 messages would; the connection is closed once it has
//! been stalled for the grace period, holding no more than its bound, and the server's
//! resident memory stays under a limit the whole time.

mod common;

use std::time::{Duration, Instant};

use common::client::{self, Client};
use common::server::Launch;
use common::{PROMPT, within};
use futures::SinkExt as _;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

/// `--ws-slow-grace-secs`.
const GRACE: Duration = Duration::from_secs(2);
/// `--writer-queue-bytes`: a quarter of the default, so the second turn already overflows it
/// and the test stays short. (With the default 64 MiB all three turns are processed before
/// the stall; an unoptimized build then peaks at about 330 MB, most of it the turns' own
/// copies of their inputs, which issue 13 point 6(c) bounds.)
const QUEUE_BYTES: u64 = 16 * 1024 * 1024;
/// Bytes of each turn's input.
const INPUT_BYTES: usize = 8 * 1024 * 1024;
const TURNS: usize = 3;
/// The server's resident memory must stay under this (without the bound: ~400 MB, and the
/// connection is never closed).
const RSS_LIMIT_BYTES: u64 = 300 * 1024 * 1024;

/// The resident set of `pid`, from `/proc/PID/status`.
fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_8_mb_turns_is_closed_and_memory_stays_bounded() {
    let (server, address) = Launch::new("slow_consumer_bytes")
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .args(["--ws-slow-grace-secs", &GRACE.as_secs_f64().to_string()])
        .args(["--writer-queue-bytes", &QUEUE_BYTES.to_string()])
        .websocket()
        .await;
    let mut client = Client::Ws(client::connect(address, &[]).await.expect("connect"));
    client.initialize(false).await;
    let started = client
        .ok(1, "thread/start", json!({"approvalPolicy": "never"}))
        .await;
    let thread_id = started["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();

    // Sampled from here to the end: the peak is what matters.
    let pid = server.pid;
    let sampling = tokio::spawn(async move {
        let mut peak = 0;
        loop {
            match resident_bytes(pid) {
                Some(rss) => peak = peak.max(rss),
                None => return peak,
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });

    let began = Instant::now();
    let text = "x".repeat(INPUT_BYTES);
    let mut socket = client.into_ws().into_socket();
    for n in 0..TURNS {
        let request = client::request(
            10 + n,
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
        );
        // Sent, never read: the answers and every notification pile up for this connection.
        // The server may close it before the last one is sent: that is the behaviour wanted.
        let sending = socket.send(Message::text(request.to_string()));
        if let Err(error) = within(PROMPT, "sending a turn/start", sending).await {
            eprintln!("turn/start {n} not sent: {error}");
            break;
        }
    }
    let sent = began.elapsed();

    // Each turn is processed after it arrives, and the stall (the grace period's start) comes
    // once the socket buffers and the queue's bytes are full; an unoptimized build on a busy
    // machine takes a while for 24 MB of turns, hence the generous deadline. Without the byte
    // bound the connection is never closed at all.
    let (closed_at, line) = server
        .wait_for_stderr_until(GRACE + 4 * PROMPT, "the connection closed", |line| {
            line.contains("closing connection")
        })
        .await;
    assert!(
        line.contains("writer queue"),
        "closed for another reason: {line}"
    );
    eprintln!(
        "sent in {sent:?}, closed {:?} after the first turn/start: {line}",
        closed_at - began
    );
    // What it held for the connection when it gave up: at most the queue's bytes plus a
    // backlog under as many again (a larger backlog closes at once), give or take a message.
    let queued_bytes: u64 = line
        .split_once("queued_bytes=")
        .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no queued_bytes in {line}"));
    let one_message = 2 * INPUT_BYTES as u64;
    assert!(
        queued_bytes <= 2 * QUEUE_BYTES + one_message,
        "{queued_bytes} bytes were held for the connection"
    );
    // Let whatever the close frees be freed, and whatever a late spike would add show.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let peak_now = resident_bytes(pid).unwrap_or(0);
    drop(socket);
    let exited = server.terminate().await;
    let peak = sampling.await.expect("sampling").max(peak_now);
    eprintln!("peak resident memory: {} MiB", peak / (1024 * 1024));
    assert!(
        peak < RSS_LIMIT_BYTES,
        "the server peaked at {} MiB resident (limit {} MiB)",
        peak / (1024 * 1024),
        RSS_LIMIT_BYTES / (1024 * 1024)
    );
    exited.assert_no_panic();
}
