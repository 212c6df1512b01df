//! The credit window of a sink that queues deltas ([`ProcessEventSink::queue_output_delta`]):
//! up to [`DELTAS_IN_FLIGHT`] deltas ([`BYTES_IN_FLIGHT`] bytes) of a stream in flight, in
//! order, nothing lost; a stalled consumer still stalls the child, with what the stream holds
//! within the window plus the read-ahead.

use super::*;
use crate::{BYTES_IN_FLIGHT, DELTAS_IN_FLIGHT, DeltaDelivery, PIPE_BYTES, READ_AHEAD_LIMIT};

/// Takes deltas in order at once and delivers each when its gate opens; counts what is in
/// flight (handed over, not delivered) per stream, and the most ever.
struct WindowSink {
    deltas: Mutex<Vec<ProcessOutputDeltaNotification>>,
    exited: Mutex<Option<ProcessExitedNotification>>,
    gate: watch::Sender<bool>,
    /// Deltas and bytes in flight, per stream (stdout, stderr).
    in_flight: Arc<Mutex<[(usize, usize); 2]>>,
    most_in_flight: Mutex<(usize, usize)>,
}

impl WindowSink {
    fn new(open: bool) -> Arc<Self> {
        Arc::new(Self {
            deltas: Mutex::default(),
            exited: Mutex::default(),
            gate: watch::channel(open).0,
            in_flight: Arc::default(),
            most_in_flight: Mutex::default(),
        })
    }

    fn output(&self, stream: ProcessOutputStream) -> Vec<u8> {
        let deltas = self.deltas.lock().unwrap();
        deltas
            .iter()
            .filter(|delta| delta.stream == stream)
            .flat_map(|delta| delta.delta.iter().copied())
            .collect()
    }

    fn stdout_in_flight(&self) -> (usize, usize) {
        self.in_flight.lock().unwrap()[0]
    }

    fn most_in_flight(&self) -> (usize, usize) {
        *self.most_in_flight.lock().unwrap()
    }

    async fn wait_exited(&self, limit: Duration) -> ProcessExitedNotification {
        eventually(limit, "process/exited", || {
            self.exited.lock().unwrap().is_some()
        })
        .await;
        self.exited.lock().unwrap().clone().unwrap()
    }
}

#[async_trait::async_trait]
impl ProcessEventSink for WindowSink {
    async fn output_delta(&self, _delta: ProcessOutputDeltaNotification) {
        unreachable!("the pump queues deltas through queue_output_delta");
    }

    async fn queue_output_delta(&self, delta: ProcessOutputDeltaNotification) -> DeltaDelivery {
        let slot = usize::from(delta.stream == ProcessOutputStream::Stderr);
        let len = delta.delta.len();
        {
            let mut in_flight = self.in_flight.lock().unwrap();
            in_flight[slot].0 += 1;
            in_flight[slot].1 += len;
            let mut most = self.most_in_flight.lock().unwrap();
            most.0 = most.0.max(in_flight[slot].0);
            most.1 = most.1.max(in_flight[slot].1);
        }
        assert!(
            self.exited.lock().unwrap().is_none(),
            "a delta followed process/exited"
        );
        self.deltas.lock().unwrap().push(delta);
        let mut gate = self.gate.subscribe();
        let in_flight = Arc::clone(&self.in_flight);
        DeltaDelivery::pending(async move {
            let _ = gate.wait_for(|open| *open).await;
            let mut in_flight = in_flight.lock().unwrap();
            in_flight[slot].0 -= 1;
            in_flight[slot].1 -= len;
        })
    }

    async fn exited(&self, exited: ProcessExitedNotification) {
        assert_eq!(
            *self.in_flight.lock().unwrap(),
            [(0, 0); 2],
            "process/exited came before every delta was delivered"
        );
        *self.exited.lock().unwrap() = Some(exited);
    }
}

/// Runs `sh -c script` with no cap and no timeout, streaming to `sink`.
async fn stream_script(
    manager: &ProcessManager,
    handle: &str,
    script: &str,
    sink: &Arc<WindowSink>,
) {
    let mut params = streaming(handle, &["sh", "-c", script]);
    params.output_bytes_cap = Some(None);
    params.timeout_ms = Some(None);
    let dyn_sink: Arc<dyn ProcessEventSink> = sink.clone();
    let spawned = within(PROMPT, "spawn", manager.spawn(params, dyn_sink))
        .await
        .expect("spawn succeeds");
    spawned.start_streaming();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_consumer_stalls_the_child_within_the_window_and_the_read_ahead() {
    // The child writes 200 chunks of 64 KiB (12.5 MiB), counting each one written in a file:
    // far more than the window, the read-ahead and the pipe hold together.
    let dir = tempfile::tempdir().unwrap();
    let (count, done) = (dir.path().join("count"), dir.path().join("done"));
    let script = format!(
        "i=0; while [ $i -lt 200 ]; do head -c 65536 /dev/zero; i=$((i+1)); echo $i > '{}'; \
         done; touch '{}'",
        count.display(),
        done.display()
    );
    let manager = ProcessManager::new();
    let sink = WindowSink::new(false);
    stream_script(&manager, "window", &script, &sink).await;

    // The window fills: exactly DELTAS_IN_FLIGHT deltas handed over and none delivered.
    eventually(PROMPT, "a full window", || {
        sink.stdout_in_flight().0 == DELTAS_IN_FLIGHT
    })
    .await;
    // Give the child every chance to run ahead, then read how far it got.
    let written_chunks = || -> usize {
        std::fs::read_to_string(&count)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0)
    };
    let mut last = usize::MAX;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = written_chunks();
        if now == last {
            break;
        }
        last = now;
    }
    let written = written_chunks() * 65536;
    // What the stream can hold: the window, the read-ahead (plus the chunk a read may add past
    // it), and the pipe.
    let bound = BYTES_IN_FLIGHT + READ_AHEAD_LIMIT + DELTA_MERGE_BYTES + PIPE_BYTES;
    assert!(
        written <= bound,
        "the child wrote {written} bytes to a stalled consumer; the bound is {bound}"
    );
    assert!(!done.exists(), "the child was not held back");
    let (deltas, bytes) = sink.most_in_flight();
    assert!(deltas <= DELTAS_IN_FLIGHT && bytes <= BYTES_IN_FLIGHT);

    sink.gate.send_replace(true);
    let exited = sink.wait_exited(Duration::from_secs(30)).await;
    assert_eq!(exited.exit_code, 0);
    assert!(done.exists());
    assert_eq!(sink.output(ProcessOutputStream::Stdout).len(), 200 * 65536);
    let (deltas, bytes) = sink.most_in_flight();
    assert!(deltas <= DELTAS_IN_FLIGHT && bytes <= BYTES_IN_FLIGHT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_consumer_gets_every_byte_in_order_through_the_window() {
    let (path, expected) = random_file("window-fast", 16 * 1024 * 1024);
    let manager = ProcessManager::new();
    let sink = WindowSink::new(true);
    let path_arg = path.to_string_lossy().into_owned();
    let mut params = streaming("window-fast", &["cat", &path_arg]);
    params.output_bytes_cap = Some(None);
    params.timeout_ms = Some(None);
    let dyn_sink: Arc<dyn ProcessEventSink> = sink.clone();
    let spawned = within(PROMPT, "spawn", manager.spawn(params, dyn_sink))
        .await
        .expect("spawn succeeds");
    spawned.start_streaming();

    let exited = sink.wait_exited(Duration::from_secs(30)).await;
    assert_eq!(exited.exit_code, 0);
    assert!(!exited.output_drain_timed_out && !exited.stdout_cap_reached);
    let stdout = sink.output(ProcessOutputStream::Stdout);
    assert_eq!(stdout.len(), expected.len());
    assert!(stdout == expected, "streamed bytes differ from the file");
    for delta in sink.deltas.lock().unwrap().iter() {
        assert!(delta.delta.len() <= DELTA_MERGE_BYTES);
    }
    let (deltas, bytes) = sink.most_in_flight();
    assert!(deltas <= DELTAS_IN_FLIGHT && bytes <= BYTES_IN_FLIGHT);
    let _ = std::fs::remove_file(path);
}

/// A child that writes `early` lines, one write each, until the file `full` exists (the test
/// creates it once the window is full), then runs `then`.
fn until_full_then(full: &std::path::Path, then: &str) -> String {
    format!(
        "while [ ! -e '{}' ]; do echo early; sleep 0.01; done; {then}",
        full.display()
    )
}

/// `early` lines, then `rest`: what a child of [`until_full_then`] wrote.
fn early_lines_then(output: &[u8], rest: &str) -> bool {
    let output = String::from_utf8_lossy(output);
    output
        .strip_suffix(rest)
        .is_some_and(|early| early.len() % 6 == 0 && early == "early\n".repeat(early.len() / 6))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_written_while_the_window_is_full_leaves_merged() {
    // The first lines leave as the window has room, one delta per read; once it is full the
    // child writes 200 more lines, one write each, and they wait and merge.
    let dir = tempfile::tempdir().unwrap();
    let (full, done) = (dir.path().join("full"), dir.path().join("done"));
    let script = until_full_then(
        &full,
        &format!(
            "i=0; while [ $i -lt 200 ]; do echo line $i; i=$((i+1)); done; touch '{}'; sleep 0.2",
            done.display()
        ),
    );
    let manager = ProcessManager::new();
    let sink = WindowSink::new(false);
    stream_script(&manager, "merged", &script, &sink).await;

    eventually(PROMPT, "the window full", || {
        sink.stdout_in_flight().0 == DELTAS_IN_FLIGHT
    })
    .await;
    std::fs::write(&full, b"").unwrap();
    eventually(PROMPT, "the 200 lines written", || done.exists()).await;
    // Real time in which the pump reads them (at once, with nothing to hand over): the only
    // way to see a read that hands nothing over.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(sink.deltas.lock().unwrap().len(), DELTAS_IN_FLIGHT);

    sink.gate.send_replace(true);
    let exited = sink.wait_exited(Duration::from_secs(30)).await;
    assert_eq!(exited.exit_code, 0);
    let lines: String = (0..200).map(|i| format!("line {i}\n")).collect();
    assert!(early_lines_then(
        &sink.output(ProcessOutputStream::Stdout),
        &lines
    ));
    // What was read while the window was full left in a delta or two, not a delta per line.
    let deltas = sink.deltas.lock().unwrap().len();
    assert!(
        deltas <= DELTAS_IN_FLIGHT + 2,
        "{deltas} deltas for the lines written behind a window of {DELTAS_IN_FLIGHT}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_held_for_the_window_leaves_when_it_empties_while_the_child_is_silent() {
    // Deliveries are looked at when the pump wakes, and waited for only when something waits
    // on them: here a line held behind a full window does, and nothing else will wake the
    // pump (the child stays alive and writes nothing more until told).
    let dir = tempfile::tempdir().unwrap();
    let (full, written, finish) = (
        dir.path().join("full"),
        dir.path().join("written"),
        dir.path().join("finish"),
    );
    let script = until_full_then(
        &full,
        &format!(
            "echo held; touch '{written}'; while [ ! -e '{finish}' ]; do sleep 0.01; done",
            written = written.display(),
            finish = finish.display()
        ),
    );
    let manager = ProcessManager::new();
    let sink = WindowSink::new(false);
    stream_script(&manager, "held", &script, &sink).await;

    eventually(PROMPT, "the window full", || {
        sink.stdout_in_flight().0 == DELTAS_IN_FLIGHT
    })
    .await;
    std::fs::write(&full, b"").unwrap();
    eventually(PROMPT, "the held line written", || written.exists()).await;
    // Real time for the pump to read it and hold it behind the window.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let output = sink.output(ProcessOutputStream::Stdout);
    assert!(!String::from_utf8_lossy(&output).contains("held"));

    sink.gate.send_replace(true);
    eventually(PROMPT, "the held line handed over", || {
        early_lines_then(&sink.output(ProcessOutputStream::Stdout), "held\n")
    })
    .await;
    assert!(
        sink.exited.lock().unwrap().is_none(),
        "the child is still running"
    );
    std::fs::write(&finish, b"").unwrap();
    let exited = sink.wait_exited(Duration::from_secs(30)).await;
    assert_eq!(exited.exit_code, 0);
}
