//! Acceptance 1 to 4: a full event queue, a stalled consumer, inherited pipes, a slow client,
//! and bytes that arrive unaltered.

use super::*;

// ---------------------------------------------------------------------------------------------
// Acceptance 1 and 11: a full event queue
// ---------------------------------------------------------------------------------------------

/// The child's output: at least this many deltas (512 KiB in deltas of at most 64 KiB).
const DOWNLOAD_BYTES: usize = 512 * KIB;

/// Acceptance 1 at `capacity`. The download's own output fills a small queue; a queue that
/// holds more than its deltas is first filled by another process, so that in every case the
/// download's `process/exited` is stuck behind a full queue when `process/kill` is sent.
async fn full_event_queue_scenario(capacity: usize) {
    let (file, expected) = random_file(&format!("download-{capacity}"), DOWNLOAD_BYTES);
    let exited_marker = std::env::temp_dir().join(format!(
        "tandem-server-{}-download-{capacity}-exited",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&exited_marker);
    let marker = Marker::new("full-queue");
    let mut handle = start(capacity).await;
    let mut stuck_probes = Vec::new();

    // The exit is held back only if the queue plus one parked delta cannot take every delta.
    let download_min_deltas = DOWNLOAD_BYTES / DELTA_MERGE_BYTES;
    let filler_bytes =
        (capacity + 1 >= download_min_deltas).then(|| (capacity + 2) * DELTA_MERGE_BYTES);
    if let Some(bytes) = filler_bytes {
        let count = bytes.to_string();
        let mut params = marker.params("filler", &["head", "-c", &count, "/dev/zero"]);
        params.output_bytes_cap = Some(None);
        params.timeout_ms = Some(None);
        spawn_ok(&handle, params).await;
        stuck_probes.push(until_event_queue_is_full(&handle).await);
    }

    // `exec cat` keeps the child's pid; a watcher in its own session (holding none of the
    // child's pipes) creates the marker file once that pid is gone, i.e. reaped.
    let script = r#"setsid sh -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.02; done; : > "$2"' watcher "$$" "$2" </dev/null >/dev/null 2>&1 &
exec cat "$1""#;
    let file_arg = file.to_string_lossy().into_owned();
    let marker_arg = exited_marker.to_string_lossy().into_owned();
    spawn_ok(
        &handle,
        marker.params(
            "download",
            &["sh", "-c", script, "sh", &file_arg, &marker_arg],
        ),
    )
    .await;
    eventually(PROMPT, "the child exits (marker file)", || {
        exited_marker.exists()
    })
    .await;
    stuck_probes.push(until_event_queue_is_full(&handle).await);

    let began = Instant::now();
    let kill = call(&handle, kill_request("download")).await;
    assert_error(
        kill,
        error_codes::INVALID_REQUEST,
        "process \"download\" is no longer running",
    );
    assert!(began.elapsed() < PROMPT, "kill took {:?}", began.elapsed());

    let mut events = Events::default();
    let mut handles = vec!["download"];
    if filler_bytes.is_some() {
        handles.push("filler");
    }
    events
        .read_exits(&mut handle, &handles, Duration::from_secs(30))
        .await;
    let download = events.run("download");
    assert!(download.stdout == expected, "download bytes differ");
    assert!(download.stderr.is_empty());
    let exited = download.exited();
    assert_eq!(exited.exit_code, 0);
    assert!(!exited.output_drain_timed_out, "output complete");
    assert!(!exited.stdout_cap_reached && !exited.stderr_cap_reached);
    if let Some(bytes) = filler_bytes {
        let filler = events.run("filler");
        assert_eq!(filler.stdout.len(), bytes);
        assert!(filler.stdout.iter().all(|byte| *byte == 0));
        assert_eq!(filler.exited().exit_code, 0);
    }
    // The probes were held behind the parked output, not lost.
    for probe in stuck_probes {
        assert_probe_answer(within(PROMPT, "probe answer", probe).await.unwrap());
    }

    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
    let _ = std::fs::remove_file(&exited_marker);
    let _ = std::fs::remove_file(&file);
}

// Acceptance 1
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_event_queue_capacity_2_kill_says_no_longer_running_and_every_byte_arrives() {
    full_event_queue_scenario(2).await;
}

// Acceptance 11
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_event_queue_capacity_1_kill_says_no_longer_running_and_every_byte_arrives() {
    full_event_queue_scenario(1).await;
}

// Acceptance 11
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_event_queue_default_capacity_kill_says_no_longer_running_and_every_byte_arrives() {
    full_event_queue_scenario(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
}

// ---------------------------------------------------------------------------------------------
// Acceptance 2: a stalled consumer
// ---------------------------------------------------------------------------------------------

// Acceptance 2
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_consumer_resize_fails_and_kill_succeeds_before_any_event_is_read() {
    // Capacity 2, so that the stall reaches the server: its output waits on a full queue.
    let mut handle = start(2).await;
    let marker = Marker::new("stalled");
    let mut params = marker.params(
        "stalled",
        &[
            "sh",
            "-c",
            "head -c 524288 /dev/zero; head -c 524288 /dev/zero >&2; exec sleep 30",
        ],
    );
    params.timeout_ms = Some(None);
    spawn_ok(&handle, params).await;
    // Once the child sleeps, all its output was written (the server read it ahead).
    eventually(PROMPT, "the child reaches its sleep", || {
        !marker.live_named("sleep").is_empty()
    })
    .await;

    let began = Instant::now();
    assert_error(
        call(&handle, resize_request("stalled", 30, 100)).await,
        error_codes::INVALID_REQUEST,
        "failed to resize PTY: process is not attached to a PTY",
    );
    assert_eq!(call(&handle, kill_request("stalled")).await, Ok(json!({})));
    assert!(began.elapsed() < PROMPT, "took {:?}", began.elapsed());

    // Only now does the client read: everything arrives, then the kill's exit code.
    let mut events = Events::default();
    events.read_exits(&mut handle, &["stalled"], PROMPT).await;
    let run = events.run("stalled");
    assert_eq!(run.stdout.len(), 512 * KIB);
    assert_eq!(run.stderr.len(), 512 * KIB);
    assert_eq!(run.exited().exit_code, 137);
    assert!(!run.exited().output_drain_timed_out);
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
    eventually(Duration::from_secs(3), "child gone", || {
        marker.live_pids().is_empty()
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Acceptance 3: inherited pipes
// ---------------------------------------------------------------------------------------------

// Acceptance 3
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inherited_pipes_time_out_the_drain_and_the_descendant_dies_with_the_host() {
    let mut handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("inherited");
    let began = Instant::now();
    spawn_ok(
        &handle,
        marker.params("bg", &["sh", "-c", "sleep 30 & echo done"]),
    )
    .await;
    let mut events = Events::default();
    events.read_exits(&mut handle, &["bg"], PROMPT).await;
    let elapsed = began.elapsed();
    // The 2 s drain budget plus slack: "about 3 s, not 30 s".
    assert!(elapsed < Duration::from_secs(4), "exited after {elapsed:?}");
    let run = events.run("bg");
    assert_eq!(run.exited().exit_code, 0);
    assert!(run.exited().output_drain_timed_out);
    assert_eq!(run.stdout_text(), "done\n");
    assert_eq!(
        marker.live_named("sleep").len(),
        1,
        "the sleeper outlives its parent until the host goes"
    );

    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
    eventually(Duration::from_secs(3), "the sleeper is killed", || {
        marker.live_pids().is_empty()
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Acceptance 4: a slow client
// ---------------------------------------------------------------------------------------------

// Acceptance 4
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_client_gets_every_byte_of_8_mib_without_drain_timeout() {
    let (file, expected) = random_file("slow-client", 8 * MIB);
    let mut handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("slow");
    let file_arg = file.to_string_lossy().into_owned();
    let mut params = marker.params("slow", &["cat", &file_arg]);
    params.output_bytes_cap = Some(None);
    params.timeout_ms = Some(None);
    spawn_ok(&handle, params).await;

    // Longer than the 2 s drain budget, without reading.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        marker.live_pids().is_empty(),
        "the child exited while the client was not reading"
    );
    let mut events = Events::default();
    events
        .read_until(
            &mut handle,
            Duration::from_secs(30),
            "slow read",
            Some(Duration::from_millis(5)),
            |events| events.has_exited("slow"),
        )
        .await;
    let run = events.run("slow");
    assert_eq!(run.stdout.len(), expected.len());
    assert!(run.stdout == expected, "bytes differ");
    assert_eq!(run.exited().exit_code, 0);
    assert!(!run.exited().output_drain_timed_out);
    assert!(!run.exited().stdout_cap_reached);
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
    let _ = std::fs::remove_file(file);
}

/// Output is bytes end to end in-process: 16 MiB of random bytes (every byte value, no UTF-8
/// structure) come out of a streamed `cat` exactly as they went in, on both streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_mib_of_random_bytes_arrive_unaltered_on_both_streams() {
    let (file, expected) = random_file("random-bytes", 16 * MIB);
    let mut handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("random");
    let file_arg = file.to_string_lossy().into_owned();
    let script = format!("cat '{file_arg}'; cat '{file_arg}' >&2");
    let mut params = marker.params("random", &["sh", "-c", &script]);
    params.output_bytes_cap = Some(None);
    params.timeout_ms = Some(None);
    spawn_ok(&handle, params).await;

    let mut events = Events::default();
    events
        .read_until(
            &mut handle,
            Duration::from_secs(60),
            "random bytes",
            None,
            |events| events.has_exited("random"),
        )
        .await;
    let run = events.run("random");
    assert_eq!(run.exited().exit_code, 0);
    for (stream, bytes) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert_eq!(bytes.len(), expected.len(), "{stream} length");
        let first_difference = bytes.iter().zip(&expected).position(|(a, b)| a != b);
        assert_eq!(first_difference, None, "{stream} differs");
    }
    assert!(events.violations.is_empty(), "{:?}", events.violations);
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
    let _ = std::fs::remove_file(file);
}
