//! Issue 13 point 6(c): a turn's input of N bytes costs the server a small constant times N at
//! peak and nothing once the thread is unloaded. One test in a binary of its own, so that no
//! other test's allocations move the process's resident size while it is measured.
//!
//! The input is one line of text, which the scripted agent answers by quoting it: the turn
//! legitimately holds the input and an answer of the same size, and streams the answer.
//!
//! The measured turn runs in a child process (this test binary again) with glibc's mmap
//! threshold fixed at 1 MiB (`MALLOC_MMAP_THRESHOLD_`): freed large buffers then go back to
//! the system at once, so the resident size follows the server's live copies rather than
//! glibc's retention heuristics (with the default, dynamic threshold, buffers of a few MiB are
//! kept in the heap after they are freed, and what is kept varies from run to run by several
//! times N). The bounds: peak growth under 6 N (measured 5.1 N since issue 27 shares the
//! payloads; 9.1-9.2 N before, 11.1-11.2 N before a turn's items were kept once), growth after
//! unload under 2 N (measured 0 to 1.1 N).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;
use tandem_host::MessageProcessor;
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_protocol::client_methods::{ThreadStart, ThreadUnsubscribe, TurnStart};
use tandem_protocol::{ClientRequest, RequestId, RequestMethod, ServerNotification, TurnStatus};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tokio::time::timeout;

/// The input size: large against the process's own few megabytes.
const INPUT_BYTES: usize = 16 * 1024 * 1024;

/// The bound on the peak growth, in multiples of the input: measured 5.1 N with the payloads
/// shared (issue 27), 9.1-9.2 N before.
const PEAK_GROWTH_AT_MOST: f64 = 6.0;

const PROMPT: Duration = Duration::from_secs(120);

/// The process's resident set in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .expect("resident pages");
    pages * 4096
}

fn request<M: RequestMethod<Request = ClientRequest>>(
    id: i64,
    params: serde_json::Value,
) -> ClientRequest {
    M::into_request(
        RequestId::Integer(id),
        serde_json::from_value(params).expect("params"),
    )
}

/// Set in the child that measures.
const CHILD_ENV: &str = "TANDEM_TEST_TURN_MEMORY_CHILD";

#[test]
fn a_large_turn_input_costs_a_small_multiple_and_nothing_after_unload() {
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "measure_a_large_turn",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .env("MALLOC_MMAP_THRESHOLD_", "1048576")
        .output()
        .expect("run the measuring child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    print!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the measuring child failed:\n{stdout}\n{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run in a child process by a_large_turn_input_costs_a_small_multiple_and_nothing_after_unload"]
async fn measure_a_large_turn() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "run by a_large_turn_input_costs_a_small_multiple_and_nothing_after_unload"
    );
    let home = tempfile::tempdir().expect("temp home");
    let options = ServerOptions::load(
        ServerConfig::builder()
            .tandem_home(home.path())
            .thread_unload_delay_secs(0),
    )
    .expect("options");
    let mut handle = in_process::start(InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    ))
    .await
    .expect("host");
    let sender = handle.sender();
    // Warm up: the database open and a small turn, so their one-time costs are not counted.
    let mut ids = 0;
    let mut next_id = || {
        ids += 1;
        ids
    };
    let warm = sender
        .request(request::<ThreadStart>(next_id(), json!({})))
        .await
        .expect("host")
        .expect("thread/start");
    let warm_thread = warm["thread"]["id"].as_str().unwrap().to_owned();
    run_turn(&mut handle, next_id(), &warm_thread, "warm up".to_owned()).await;

    let reply = sender
        .request(request::<ThreadStart>(next_id(), json!({})))
        .await
        .expect("host")
        .expect("thread/start");
    let thread_id = reply["thread"]["id"].as_str().unwrap().to_owned();
    let input = "x".repeat(INPUT_BYTES);
    let before = rss();

    let peak = Arc::new(AtomicU64::new(before));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (Arc::clone(&peak), Arc::clone(&sampling));
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(rss(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    run_turn(&mut handle, next_id(), &thread_id, input).await;
    for thread in [&thread_id, &warm_thread] {
        sender
            .request(request::<ThreadUnsubscribe>(
                next_id(),
                json!({"threadId": thread}),
            ))
            .await
            .expect("host")
            .expect("thread/unsubscribe");
    }
    // Unloaded: wait for its thread/closed.
    timeout(PROMPT, async {
        loop {
            if let Some(InProcessServerEvent::ServerNotification(ServerNotification::ThreadClosed(
                closed,
            ))) = handle.next_event().await
                && closed.thread_id == thread_id
            {
                return;
            }
        }
    })
    .await
    .expect("thread/closed");
    sampling.store(false, Ordering::Relaxed);
    sampler.join().expect("sampler");
    let after = rss();
    let peak = peak.load(Ordering::Relaxed);
    let n = INPUT_BYTES as f64;
    let peak_growth = peak.saturating_sub(before) as f64 / n;
    let kept = after.saturating_sub(before) as f64 / n;
    println!(
        "input {} MiB: resident before {} MiB, peak {} MiB (+{peak_growth:.1} N), after unload {} MiB (+{kept:.1} N)",
        INPUT_BYTES >> 20,
        before >> 20,
        peak >> 20,
        after >> 20
    );
    assert!(
        peak_growth < PEAK_GROWTH_AT_MOST,
        "peak grew by {peak_growth:.1} times the input (at most {PEAK_GROWTH_AT_MOST})"
    );
    assert!(kept < 2.0, "{kept:.1} times the input kept after unload");
    handle.shutdown().await.expect("shutdown");
}

/// Runs one turn with `text` and drains its events to `turn/completed` (dropping them, as a
/// client that has handled them would).
async fn run_turn(
    handle: &mut tandem_host::InProcessClientHandle,
    id: i64,
    thread_id: &str,
    text: String,
) {
    let params = json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]});
    let started = handle
        .sender()
        .request(request::<TurnStart>(id, params))
        .await
        .expect("host")
        .expect("turn/start");
    drop(started);
    timeout(PROMPT, async {
        loop {
            if let Some(InProcessServerEvent::ServerNotification(
                ServerNotification::TurnCompleted(done),
            )) = handle.next_event().await
                && done.thread_id == thread_id
            {
                assert_eq!(done.turn.status, TurnStatus::Completed);
                return;
            }
        }
    })
    .await
    .expect("turn/completed");
}
