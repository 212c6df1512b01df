//! The server-wide bound on kept output ([`ProcessManager::with_kept_output_max`]): it holds
//! whatever cap the request asked for (`null` included), counts stdout and stderr together,
//! sets the same `capReached` flags as the request's cap, and leaves streamed output alone
//! unless the sink keeps it.

use super::*;

/// Writes `bytes` to stdout and the same to stderr, then exits 0.
fn both_streams(handle: &str, bytes: usize) -> ProcessSpawnParams {
    let script = format!("head -c {bytes} /dev/zero; head -c {bytes} /dev/zero >&2");
    ProcessSpawnParams {
        output_bytes_cap: Some(None),
        ..spawn_params(handle, &["sh", "-c", &script])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captured_output_is_bounded_even_without_a_request_cap() {
    const MAX: usize = 100_000;
    let manager = ProcessManager::new().with_kept_output_max(MAX as u64);
    let sink = TestSink::open();
    // Far past the bound on both streams; the child must still run to its end.
    start(&manager, both_streams("bounded", 1_000_000), &sink).await;
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(
        exited.exit_code, 0,
        "the child never blocks on dropped output"
    );
    assert_eq!(
        exited.stdout.len() + exited.stderr.len(),
        MAX,
        "stdout and stderr share one bound"
    );
    // Which stream takes the budget is up to the scheduler: the child's pipes hold all it
    // writes, so both readers can be racing for it at once. Either way each stream lost bytes
    // and says so.
    assert!(exited.stdout_cap_reached && exited.stderr_cap_reached);

    // Under the bound nothing is flagged, and a request cap below the bound still applies.
    let sink = TestSink::open();
    start(&manager, both_streams("small", 1000), &sink).await;
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!((exited.stdout.len(), exited.stderr.len()), (1000, 1000));
    assert!(!exited.stdout_cap_reached && !exited.stderr_cap_reached);
    let sink = TestSink::open();
    let mut params = both_streams("request-cap", 1000);
    params.output_bytes_cap = Some(Some(10));
    start(&manager, params, &sink).await;
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!((exited.stdout.len(), exited.stderr.len()), (10, 10));
    assert!(exited.stdout_cap_reached && exited.stderr_cap_reached);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_output_is_bounded_only_where_the_sink_keeps_it() {
    const MAX: usize = 100_000;
    const WRITTEN: usize = 300_000;
    let command = format!("head -c {WRITTEN} /dev/zero");
    let params = |handle: &str| ProcessSpawnParams {
        output_bytes_cap: Some(None),
        ..streaming(handle, &["sh", "-c", &command])
    };

    // A client that streams consumes the output as it comes: no bound beyond its own cap.
    let manager = ProcessManager::new().with_kept_output_max(MAX as u64);
    let sink = TestSink::open();
    start(&manager, params("streamed"), &sink).await;
    let exited = wait_exited(&sink, PROMPT).await;
    assert!(!exited.stdout_cap_reached);
    assert_eq!(sink.output(ProcessOutputStream::Stdout).len(), WRITTEN);

    // A turn keeps what its command streams: bounded, and the last delta says so.
    let manager = ProcessManager::new()
        .with_kept_output_max(MAX as u64)
        .keeping_streamed_output();
    let sink = TestSink::open();
    start(&manager, params("kept"), &sink).await;
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.exit_code, 0);
    assert!(exited.stdout_cap_reached);
    assert_eq!(sink.output(ProcessOutputStream::Stdout).len(), MAX);
    let deltas = sink.deltas(ProcessOutputStream::Stdout);
    assert!(deltas.last().expect("deltas").cap_reached);
    sink.assert_invariants();
}
