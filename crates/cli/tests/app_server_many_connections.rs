//! Many websocket connections to one `tandem app-server` (issue 8, acceptance 4): 50
//! concurrent connections each run a thread with three turns to completion, and one extra
//! connection that never reads neither delays them nor is closed before its grace period.
//!
//! This is the one timing comparison of the suite, and it is measured in one test on one
//! server: the 50 conversations run once before the slow connection exists, once while it is
//! stalled, and once after it is gone; the stalled run must take at most twice the slower of
//! the other two (bracketing it absorbs load that other work on the machine adds or removes
//! meanwhile, without extra slack).
//!
//! How the slow connection's writer queue fills, deterministically: it starts [`FLOODERS`]
//! streamed processes that print without end. Each process has at most [`DELTAS_IN_FLIGHT`]
//! output deltas undelivered (its window, docs/protocol.md section 8; on the wire a delta counts
//! as delivered once the writer takes it), so once the socket buffers are full the connection
//! owes exactly that many deltas per process beside those the blocked writer already took
//! (whose processes already sent their next): [`WRITER_QUEUE`] in the full queue, the rest in
//! the router's backlog. The broadcasts the 50 conversations cause (`thread/started`) add
//! [`CONVERSATIONS`] more. The backlog stays below two writer queues, far from its ceiling
//! (seven queues), the point at which the router would close the connection at once, so it is
//! the grace period (no byte taken by the socket) that ends it, which is what is under test.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::client::{self, Client, Ended, WsClient};
use common::server::Launch;
use common::{PROMPT, within};
use serde_json::json;
use tandem_server::process::DELTAS_IN_FLIGHT;

const CONVERSATIONS: usize = 50;
const TURNS: usize = 3;
/// `--ws-writer-queue`: small, so that filling it takes few processes, yet larger than any
/// burst a reading connection meets (at most [`CONVERSATIONS`] broadcasts at once).
const WRITER_QUEUE: usize = 64;
/// Processes of the slow connection; see the module docs for the arithmetic.
const FLOODERS: usize = 6;
/// `--ws-slow-grace-secs`: long enough for a conversation run to fit inside the stall with room
/// to spare on a busy machine, short enough to keep the test well under 30 s.
const GRACE: Duration = Duration::from_secs(5);
/// How long a closed connection's processes wait for a client to resume them (short here:
/// nobody does).
const DETACH_GRACE: Duration = Duration::from_secs(1);

// What the module docs promise about the backlog.
const _: () =
    assert!(FLOODERS * DELTAS_IN_FLIGHT - WRITER_QUEUE + CONVERSATIONS < 2 * WRITER_QUEUE);
const _: () = assert!(FLOODERS * DELTAS_IN_FLIGHT > WRITER_QUEUE + 1);

/// One client: a thread with [`TURNS`] turns, each to completion.
async fn converse(address: SocketAddr, n: usize) {
    let mut client = Client::Ws(client::connect(address, &[]).await.expect("connect"));
    client.initialize(false).await;
    // Ephemeral: what is measured is the transport, not the disk.
    let started = client
        .ok("start", "thread/start", json!({"ephemeral": true}))
        .await;
    let thread_id = started["thread"]["id"].clone();
    for turn in 0..TURNS {
        let text = format!("conversation {n}, turn {turn}");
        client
            .ok(
                format!("turn-{turn}"),
                "turn/start",
                json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
            )
            .await;
        let completed = client
            .notification("turn/completed", |params| params["threadId"] == thread_id)
            .await;
        assert_eq!(
            completed["params"]["turn"]["status"], "completed",
            "{completed}"
        );
    }
    client.into_ws().close().await;
}

/// All conversations at once; how long until the last is done.
async fn run_conversations(address: SocketAddr) -> Duration {
    let began = Instant::now();
    let tasks: Vec<_> = (0..CONVERSATIONS)
        .map(|n| tokio::spawn(converse(address, n)))
        .collect();
    for task in tasks {
        within(PROMPT * 2, "a conversation", task)
            .await
            .expect("conversation");
    }
    began.elapsed()
}

/// Waits until the server stops sending to `slow`: the bytes waiting in its receive buffer stay
/// the same for half a second (its window is closed, so the server's writer is blocked).
async fn until_stalled(slow: &WsClient) -> usize {
    let mut buffer = vec![0u8; 64 * 1024 * 1024];
    let mut last = 0;
    let mut steady_since = Instant::now();
    within(PROMPT, "the slow connection's socket to fill", async {
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let queued = slow.tcp().peek(&mut buffer).await.expect("peek");
            if queued != last {
                last = queued;
                steady_since = Instant::now();
            } else if queued > 0 && steady_since.elapsed() >= Duration::from_millis(500) {
                return queued;
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_reads_delays_no_other_and_is_closed_after_the_grace_period() {
    let (server, address) = Launch::new("many_connections")
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .args(["--ws-writer-queue", &WRITER_QUEUE.to_string()])
        .args(["--ws-slow-grace-secs", &GRACE.as_secs_f64().to_string()])
        .args([
            "--process-detach-grace-secs",
            &DETACH_GRACE.as_secs_f64().to_string(),
        ])
        .websocket()
        .await;

    let before = run_conversations(address).await;

    let mut slow = Client::Ws(client::connect(address, &[]).await.expect("connect"));
    slow.initialize(true).await;
    let flood_began = Instant::now();
    for n in 0..FLOODERS {
        let spawn = client::request(
            n,
            "process/spawn",
            json!({
                "processHandle": format!("flood-{n}"),
                "command": ["head", "-c", "100000000000", "/dev/zero"],
                "cwd": std::env::temp_dir(),
                "streamStdoutStderr": true,
                "outputBytesCap": null,
                "timeoutMs": null,
            }),
        );
        slow.send(&spawn).await;
    }
    let mut slow = slow.into_ws();
    let buffered = until_stalled(&slow).await;
    let stalled = Instant::now();

    let during = run_conversations(address).await;
    let run_ended = Instant::now();
    assert!(
        server
            .find_stderr(|line| line.contains("closing connection"))
            .is_none(),
        "the slow connection was closed before the stalled run ended \
         (the grace period is too short for this machine):\n{}",
        server.stderr()
    );

    let (closed_at, line) = server
        .wait_for_stderr_until(GRACE + PROMPT, "the slow connection closed", |line| {
            line.contains("closing connection")
        })
        .await;
    assert!(
        line.contains("its peer took no bytes for the grace period"),
        "closed for the wrong reason: {line}"
    );
    // Everything it was owed is still held for it, beside what the blocked writer took: a
    // full window of deltas per process, and every broadcast of the stalled run.
    let queued = line
        .split_once("queued=")
        .and_then(|(_, rest)| rest.split_whitespace().next()?.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no queued count in {line}"));
    assert_eq!(
        queued,
        FLOODERS * DELTAS_IN_FLIGHT + CONVERSATIONS,
        "{line}"
    );
    // Not before the grace period: the stall cannot have begun before the flood did.
    assert!(
        closed_at >= flood_began + GRACE,
        "closed {:?} after the flood began, before the grace of {GRACE:?}",
        closed_at - flood_began
    );
    // And promptly after it (the stall began at the latest when it was observed).
    assert!(
        closed_at <= stalled + GRACE + Duration::from_secs(2),
        "closed {:?} after the stall was observed",
        closed_at - stalled
    );
    // The connection is over: whatever was queued, then a close frame (1008) or the end.
    let ended = slow.until_closed().await;
    if let Ended::Close(Some(frame)) = &ended {
        assert_eq!(u16::from(frame.code), 1008, "{ended:?}");
    }
    // Its processes are left for a reconnect to resume (`process/resume`), and nobody
    // resumes them: they end when the detach grace has passed.
    let deadline = Instant::now() + DETACH_GRACE + PROMPT;
    while !server.live_children().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the flood processes outlived the detach grace of their closed connection"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let after = run_conversations(address).await;
    eprintln!(
        "{CONVERSATIONS} conversations of {TURNS} turns: {before:?} before, {during:?} while \
         one connection was stalled ({buffered} bytes in its socket, the run ended {:?} before \
         it was closed), {after:?} after",
        closed_at - run_ended
    );
    let baseline = before.max(after);
    assert!(
        during <= baseline * 2,
        "the stalled connection delayed the others: {during:?} against {before:?} before and \
         {after:?} after"
    );
    server.terminate().await;
}
