//! Real-process tests of the process manager against a recording sink that can stall or be slow.
//!
//! These run real children on real time (no paused clock): the properties under test are about
//! pipes, process groups and wall-clock budgets. Every await that could hang sits under a
//! timeout so a regression fails instead of wedging the suite.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tandem_protocol::{
    JSONRPCErrorError, ProcessExitedNotification, ProcessKillParams,
    ProcessOutputDeltaNotification, ProcessOutputStream, ProcessResizePtyParams,
    ProcessSpawnParams, ProcessWriteStdinParams, PtySize,
};
use tandem_test_support::{eventually, within};
use tokio::sync::watch;

use super::{DELTA_MERGE_BYTES, ProcessEventSink, ProcessManager};

mod errors;
mod kept_output;
mod window;

const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
/// Upper bound for anything that should happen "promptly".
const PROMPT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
enum Event {
    Delta(ProcessOutputDeltaNotification),
    Exited(ProcessExitedNotification),
}

/// Records what it is handed; can stall every delivery until released, or hold the first delta.
struct TestSink {
    events: Mutex<Vec<Event>>,
    /// `true` = deliveries pass.
    gate: watch::Sender<bool>,
    first_delta_hold: Option<Duration>,
    delta_calls: AtomicUsize,
    exit_calls: AtomicUsize,
    in_flight: [AtomicUsize; 2],
    /// Set when a protocol invariant was broken (two deltas of a stream in flight, or a delta
    /// after the exit notification).
    violation: AtomicBool,
}

impl TestSink {
    fn build(open: bool, first_delta_hold: Option<Duration>) -> Arc<Self> {
        Arc::new(Self {
            events: Mutex::new(Vec::new()),
            gate: watch::channel(open).0,
            first_delta_hold,
            delta_calls: AtomicUsize::new(0),
            exit_calls: AtomicUsize::new(0),
            in_flight: [AtomicUsize::new(0), AtomicUsize::new(0)],
            violation: AtomicBool::new(false),
        })
    }

    fn open() -> Arc<Self> {
        Self::build(true, None)
    }

    fn stalled() -> Arc<Self> {
        Self::build(false, None)
    }

    fn slow_first(hold: Duration) -> Arc<Self> {
        Self::build(true, Some(hold))
    }

    fn release(&self) {
        self.gate.send_replace(true);
    }

    async fn pass_gate(&self) {
        let mut gate = self.gate.subscribe();
        let _ = gate.wait_for(|open| *open).await;
    }

    fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    fn exited(&self) -> Option<ProcessExitedNotification> {
        self.events().into_iter().find_map(|event| match event {
            Event::Exited(exited) => Some(exited),
            Event::Delta(_) => None,
        })
    }

    fn deltas(&self, stream: ProcessOutputStream) -> Vec<ProcessOutputDeltaNotification> {
        self.events()
            .into_iter()
            .filter_map(|event| match event {
                Event::Delta(delta) if delta.stream == stream => Some(delta),
                _ => None,
            })
            .collect()
    }

    fn output(&self, stream: ProcessOutputStream) -> Vec<u8> {
        self.deltas(stream)
            .iter()
            .flat_map(|delta| delta.delta.iter().copied())
            .collect()
    }

    fn assert_invariants(&self) {
        assert!(
            !self.violation.load(Ordering::SeqCst),
            "a stream had two deltas in flight or a delta followed process/exited"
        );
    }
}

#[async_trait::async_trait]
impl ProcessEventSink for TestSink {
    async fn output_delta(&self, delta: ProcessOutputDeltaNotification) {
        let slot = &self.in_flight[usize::from(delta.stream == ProcessOutputStream::Stderr)];
        if slot.fetch_add(1, Ordering::SeqCst) > 0 {
            self.violation.store(true, Ordering::SeqCst);
        }
        let call = self.delta_calls.fetch_add(1, Ordering::SeqCst);
        if call == 0
            && let Some(hold) = self.first_delta_hold
        {
            tokio::time::sleep(hold).await;
        }
        self.pass_gate().await;
        let mut events = self.events.lock().unwrap();
        if events.iter().any(|event| matches!(event, Event::Exited(_))) {
            self.violation.store(true, Ordering::SeqCst);
        }
        events.push(Event::Delta(delta));
        slot.fetch_sub(1, Ordering::SeqCst);
    }

    async fn exited(&self, exited: ProcessExitedNotification) {
        self.exit_calls.fetch_add(1, Ordering::SeqCst);
        self.pass_gate().await;
        self.events.lock().unwrap().push(Event::Exited(exited));
    }
}

async fn wait_exited(sink: &TestSink, limit: Duration) -> ProcessExitedNotification {
    eventually(limit, "process/exited", || sink.exited().is_some()).await;
    sink.exited().unwrap()
}

fn spawn_params(handle: &str, command: &[&str]) -> ProcessSpawnParams {
    ProcessSpawnParams {
        process_handle: handle.to_owned(),
        command: command.iter().map(|arg| (*arg).to_owned()).collect(),
        cwd: Some(std::env::temp_dir().to_string_lossy().into_owned()),
        ..Default::default()
    }
}

fn streaming(handle: &str, command: &[&str]) -> ProcessSpawnParams {
    ProcessSpawnParams {
        stream_stdout_stderr: Some(true),
        ..spawn_params(handle, command)
    }
}

/// Spawns and immediately starts streaming (as if the reply went out); returns the pid.
async fn start(manager: &ProcessManager, params: ProcessSpawnParams, sink: &Arc<TestSink>) -> u32 {
    let sink: Arc<dyn ProcessEventSink> = sink.clone();
    let spawned = within(PROMPT, "spawn", manager.spawn(params, sink))
        .await
        .expect("spawn succeeds");
    let pid = spawned.pid();
    spawned.start_streaming();
    pid
}

fn assert_error<T: std::fmt::Debug>(
    result: Result<T, JSONRPCErrorError>,
    code: i64,
    message: &str,
) {
    let error = result.expect_err("request should fail");
    assert_eq!(
        (error.code, error.message.as_str()),
        (code, message),
        "unexpected error"
    );
}

fn kill_params(handle: &str) -> ProcessKillParams {
    ProcessKillParams {
        process_handle: handle.to_owned(),
    }
}

fn resize_params(handle: &str, rows: u16, cols: u16) -> ProcessResizePtyParams {
    ProcessResizePtyParams {
        process_handle: handle.to_owned(),
        size: PtySize { rows, cols },
    }
}

fn write_params(
    handle: &str,
    bytes: Option<&[u8]>,
    close: Option<bool>,
) -> ProcessWriteStdinParams {
    ProcessWriteStdinParams {
        process_handle: handle.to_owned(),
        delta: bytes.map(Bytes::copy_from_slice),
        close_stdin: close,
    }
}

/// Pids of non-zombie processes in process group `pgid`, read from `/proc` (a zombie waiting
/// for an init that does not reap counts as gone).
fn live_group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the parenthesised command: state, ppid, pgrp, ...
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            members.push(pid);
        }
    }
    members
}

/// Whether `pid` exists and is not a zombie.
fn is_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().next() != Some("Z"))
        })
        .unwrap_or(false)
}

/// A file of `len` pseudo-random bytes in the temp dir.
fn random_file(name: &str, len: usize) -> (PathBuf, Vec<u8>) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    let path = std::env::temp_dir().join(format!("tandem-process-{}-{name}", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_a_512k_file_byte_exact_via_cat() {
    let (path, expected) = random_file("cat", 512 * 1024);
    let manager = ProcessManager::new();
    let sink = TestSink::open();
    let path_arg = path.to_string_lossy().into_owned();
    start(&manager, streaming("cat", &["cat", &path_arg]), &sink).await;

    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.exit_code, 0);
    assert_eq!(sink.output(ProcessOutputStream::Stdout), expected);
    assert!(sink.output(ProcessOutputStream::Stderr).is_empty());
    for delta in sink.deltas(ProcessOutputStream::Stdout) {
        assert!(delta.delta.len() <= DELTA_MERGE_BYTES);
        assert!(!delta.cap_reached);
    }
    assert_eq!(exited.stdout, "");
    assert_eq!(exited.stderr, "");
    assert!(!exited.stdout_cap_reached && !exited.stderr_cap_reached);
    assert!(!exited.output_drain_timed_out);
    sink.assert_invariants();
    let _ = std::fs::remove_file(path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_precedes_output_until_start_streaming() {
    let manager = ProcessManager::new();
    let sink = TestSink::open();
    let dyn_sink: Arc<dyn ProcessEventSink> = sink.clone();
    let spawned = manager
        .spawn(streaming("early", &["echo", "hello"]), dyn_sink)
        .await
        .unwrap();
    // The child is done long before this; nothing may reach the sink until the reply is out.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(sink.events().is_empty());
    assert_eq!(sink.delta_calls.load(Ordering::SeqCst), 0);
    assert_eq!(sink.exit_calls.load(Ordering::SeqCst), 0);
    spawned.start_streaming();
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.exit_code, 0);
    assert_eq!(sink.output(ProcessOutputStream::Stdout), b"hello\n");
    sink.assert_invariants();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_sink_does_not_block_control_requests() {
    let manager = ProcessManager::new();
    let sink = TestSink::stalled();
    let mut params = streaming(
        "stalled",
        &[
            "sh",
            "-c",
            "head -c 524288 /dev/zero; head -c 524288 /dev/zero >&2; sleep 30",
        ],
    );
    params.timeout_ms = Some(None);
    start(&manager, params, &sink).await;
    eventually(PROMPT, "a delta reaches the stalled sink", || {
        sink.delta_calls.load(Ordering::SeqCst) >= 1
    })
    .await;
    // Let the pumps fill their read-ahead while nothing is delivered.
    tokio::time::sleep(Duration::from_millis(300)).await;

    assert_error(
        within(
            PROMPT,
            "resize",
            manager.resize_pty(resize_params("stalled", 10, 10)),
        )
        .await,
        INVALID_REQUEST,
        "failed to resize PTY: process is not attached to a PTY",
    );
    assert_error(
        within(
            PROMPT,
            "writeStdin",
            manager.write_stdin(write_params("stalled", Some(b"x"), None)),
        )
        .await,
        INVALID_REQUEST,
        "stdin streaming is not enabled for this process",
    );
    within(PROMPT, "kill", manager.kill(kill_params("stalled")))
        .await
        .expect("kill succeeds while the sink is stalled");

    // Once the child is reaped, and while its exit notification is stuck behind the sink, the
    // handle answers `is no longer running`.
    within(PROMPT, "kill reports no longer running", async {
        loop {
            match manager.kill(kill_params("stalled")).await {
                Ok(()) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(error) => break error,
            }
        }
    })
    .await;
    assert_error(
        manager.kill(kill_params("stalled")).await,
        INVALID_REQUEST,
        "process \"stalled\" is no longer running",
    );
    assert!(
        sink.events().is_empty(),
        "nothing was delivered while stalled"
    );

    sink.release();
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.exit_code, 137);
    assert_eq!(sink.output(ProcessOutputStream::Stdout).len(), 524_288);
    assert_eq!(sink.output(ProcessOutputStream::Stderr).len(), 524_288);
    assert!(!exited.output_drain_timed_out);
    sink.assert_invariants();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descendant_holding_pipes_times_out_the_drain_and_kill_all_reaps_it() {
    let manager = ProcessManager::new();
    let sink = TestSink::open();
    let began = Instant::now();
    let pgid = start(
        &manager,
        streaming("bg", &["sh", "-c", "sleep 30 & echo $!; echo done"]),
        &sink,
    )
    .await;

    let exited = wait_exited(&sink, Duration::from_secs(6)).await;
    let elapsed = began.elapsed();
    assert!(
        elapsed < Duration::from_millis(3500),
        "exited took {elapsed:?}"
    );
    assert!(
        elapsed >= Duration::from_millis(1900),
        "drain budget was not waited: {elapsed:?}"
    );
    assert_eq!(exited.exit_code, 0);
    assert!(exited.output_drain_timed_out);
    let stdout = String::from_utf8(sink.output(ProcessOutputStream::Stdout)).unwrap();
    let mut lines = stdout.lines();
    let sleeper: u32 = lines.next().unwrap().parse().unwrap();
    assert_eq!(lines.next(), Some("done"));
    assert!(is_alive(sleeper), "the sleeper outlives its parent");

    // The handle is released once its exit was delivered.
    eventually(PROMPT, "handle released", || {
        kill_says_unknown(&manager, "bg")
    })
    .await;

    within(PROMPT, "kill_all", manager.kill_all()).await;
    eventually(Duration::from_secs(3), "sleeper killed", || {
        !is_alive(sleeper)
    })
    .await;
    assert!(live_group_members(pgid).is_empty());
    sink.assert_invariants();
}

/// Whether `process/kill` answers `no active process` for `handle` (synchronously polled: the
/// manager's kill never awaits anything).
fn kill_says_unknown(manager: &ProcessManager, handle: &str) -> bool {
    let result = now_or_never(manager.kill(kill_params(handle)));
    matches!(result, Some(Err(error)) if error.message.starts_with("no active process"))
}

/// Polls `future` once with a no-op waker.
fn now_or_never<F: Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_sink_gets_every_byte_without_drain_timeout() {
    let manager = ProcessManager::new();
    let sink = TestSink::slow_first(Duration::from_secs(5));
    let (path, expected) = random_file("slow", 8 * 1024 * 1024);
    let path_arg = path.to_string_lossy().into_owned();
    let mut params = streaming("slow", &["cat", &path_arg]);
    params.output_bytes_cap = Some(None);
    params.timeout_ms = Some(None);
    start(&manager, params, &sink).await;

    let exited = wait_exited(&sink, Duration::from_secs(30)).await;
    assert_eq!(exited.exit_code, 0);
    assert!(!exited.output_drain_timed_out);
    assert!(!exited.stdout_cap_reached);
    let stdout = sink.output(ProcessOutputStream::Stdout);
    assert_eq!(stdout.len(), expected.len());
    assert!(stdout == expected, "streamed bytes differ from the file");
    sink.assert_invariants();
    let _ = std::fs::remove_file(path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_budget_ignores_time_spent_waiting_for_the_sink() {
    // The child exits at once, but a descendant keeps stdout open for 4 s and then writes.
    // The first delta is held 3 s; only ~1 s of budget is used before "late" arrives, so the
    // stream completes. A wall-clock budget would have expired at 2 s.
    let manager = ProcessManager::new();
    let sink = TestSink::slow_first(Duration::from_secs(3));
    start(
        &manager,
        streaming(
            "paused-budget",
            &["sh", "-c", "echo early; (sleep 4; echo late) 2>/dev/null &"],
        ),
        &sink,
    )
    .await;
    let exited = wait_exited(&sink, Duration::from_secs(15)).await;
    assert_eq!(exited.exit_code, 0);
    assert!(!exited.output_drain_timed_out);
    assert_eq!(
        sink.output(ProcessOutputStream::Stdout),
        b"early\nlate\n".to_vec()
    );
    sink.assert_invariants();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cap_delivers_exactly_one_mib_of_a_ten_mib_writer() {
    let manager = ProcessManager::new();
    let sink = TestSink::open();
    let mut params = streaming("capped", &["head", "-c", "10485760", "/dev/zero"]);
    params.output_bytes_cap = Some(Some(1024 * 1024));
    start(&manager, params, &sink).await;

    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(
        exited.exit_code, 0,
        "the child never blocks on a capped stream"
    );
    assert!(exited.stdout_cap_reached);
    assert!(!exited.stderr_cap_reached);
    assert!(!exited.output_drain_timed_out);
    let deltas = sink.deltas(ProcessOutputStream::Stdout);
    let (last, rest) = deltas.split_last().unwrap();
    assert!(last.cap_reached);
    assert!(rest.iter().all(|delta| !delta.cap_reached));
    assert_eq!(sink.output(ProcessOutputStream::Stdout).len(), 1024 * 1024);
    sink.assert_invariants();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_the_whole_group_with_exit_code_124() {
    let manager = ProcessManager::new();
    let sink = TestSink::open();
    let mut params = streaming("timeout", &["sh", "-c", "sleep 30 & exec sleep 30"]);
    params.timeout_ms = Some(Some(200));
    let began = Instant::now();
    let pgid = start(&manager, params, &sink).await;

    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.exit_code, 124);
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "timeout took {:?}",
        began.elapsed()
    );
    assert!(!exited.output_drain_timed_out);
    eventually(Duration::from_secs(3), "group gone", || {
        live_group_members(pgid).is_empty()
    })
    .await;
    sink.assert_invariants();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pty_shell_echoes_resizes_and_ends_on_close_stdin() {
    let manager = ProcessManager::new();
    let sink = TestSink::open();
    let mut params = spawn_params("pty", &["sh"]);
    params.tty = Some(true);
    params.size = Some(PtySize { rows: 24, cols: 80 });
    params.timeout_ms = Some(None);
    params.env = Some(BTreeMap::from([("PS1".to_owned(), Some("$ ".to_owned()))]));
    start(&manager, params, &sink).await;

    let stdout_lines = || {
        String::from_utf8_lossy(&sink.output(ProcessOutputStream::Stdout))
            .split(['\r', '\n'])
            // The prompt may precede output when input was typed ahead of it.
            .map(|line| line.strip_prefix("$ ").unwrap_or(line).to_owned())
            .collect::<Vec<_>>()
    };
    within(
        PROMPT,
        "write echo",
        manager.write_stdin(write_params("pty", Some(b"echo hi\n"), None)),
    )
    .await
    .unwrap();
    // The terminal echoes the typed line too; the command's own output is a line "hi".
    eventually(PROMPT, "hi", || {
        stdout_lines().iter().any(|line| line == "hi")
    })
    .await;

    within(
        PROMPT,
        "resize",
        manager.resize_pty(resize_params("pty", 40, 100)),
    )
    .await
    .unwrap();
    within(
        PROMPT,
        "write stty",
        manager.write_stdin(write_params("pty", Some(b"stty size\n"), None)),
    )
    .await
    .unwrap();
    eventually(PROMPT, "stty size", || {
        stdout_lines().iter().any(|line| line == "40 100")
    })
    .await;

    within(
        PROMPT,
        "close stdin",
        manager.write_stdin(write_params("pty", None, Some(true))),
    )
    .await
    .unwrap();
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.exit_code, 0);
    assert_eq!(exited.stdout, "");
    assert!(sink.deltas(ProcessOutputStream::Stderr).is_empty());
    sink.assert_invariants();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_entries_are_merged_and_null_removes() {
    let removed = ["CARGO_PKG_NAME", "HOME", "PATH"]
        .into_iter()
        .find(|name| std::env::var_os(name).is_some())
        .expect("some variable to remove");
    let manager = ProcessManager::new();
    let sink = TestSink::open();
    let script =
        format!("echo \"new=$TANDEM_PROCESS_TEST_VAR\"; echo \"removed=${{{removed}-unset}}\"");
    let mut params = spawn_params("env", &["/bin/sh", "-c", &script]);
    params.env = Some(BTreeMap::from([
        (
            "TANDEM_PROCESS_TEST_VAR".to_owned(),
            Some("hello".to_owned()),
        ),
        (removed.to_owned(), None),
    ]));
    start(&manager, params, &sink).await;
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.exit_code, 0, "stderr: {}", exited.stderr);
    assert_eq!(exited.stdout, "new=hello\nremoved=unset\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_output_is_captured_in_exited() {
    let manager = ProcessManager::new();
    let sink = TestSink::open();
    start(
        &manager,
        spawn_params("capture", &["sh", "-c", "echo out; echo err >&2; exit 3"]),
        &sink,
    )
    .await;
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.exit_code, 3);
    assert_eq!(exited.stdout, "out\n");
    assert_eq!(exited.stderr, "err\n");
    assert!(!exited.stdout_cap_reached && !exited.stderr_cap_reached);
    assert_eq!(sink.delta_calls.load(Ordering::SeqCst), 0);

    // Captured output is capped too.
    let sink = TestSink::open();
    let mut params = spawn_params("capture", &["sh", "-c", "printf abcdefghij"]);
    params.output_bytes_cap = Some(Some(4));
    start(&manager, params, &sink).await;
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.stdout, "abcd");
    assert!(exited.stdout_cap_reached);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_all_is_bounded_and_leaves_nothing_alive() {
    let manager = ProcessManager::new();
    // A stalled sink: kill_all must not wait for exit notifications.
    let sink = TestSink::stalled();
    let mut pgids = Vec::new();
    for handle in ["a", "b"] {
        let mut params = streaming(handle, &["sh", "-c", "sleep 30 & sleep 30 & wait"]);
        params.timeout_ms = Some(None);
        pgids.push(start(&manager, params, &sink).await);
    }
    let began = Instant::now();
    within(PROMPT, "kill_all", manager.kill_all()).await;
    assert!(began.elapsed() < Duration::from_secs(3));
    for pgid in pgids {
        eventually(Duration::from_secs(3), "group gone", || {
            live_group_members(pgid).is_empty()
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_sink_backpressures_the_child_through_its_pipe() {
    // 16 MiB is far past the read-ahead limit plus the pipe buffer, so with nothing delivered
    // the child must be blocked in its write and never reach `touch`.
    let marker = std::env::temp_dir().join(format!(
        "tandem-process-{}-backpressure",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&marker);
    let script = format!("head -c 16777216 /dev/zero; touch '{}'", marker.display());
    let manager = ProcessManager::new();
    let sink = TestSink::stalled();
    let mut params = streaming("bp", &["sh", "-c", &script]);
    params.output_bytes_cap = Some(None);
    params.timeout_ms = Some(None);
    start(&manager, params, &sink).await;

    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !marker.exists(),
        "the child was not held back by the stalled sink"
    );
    assert_eq!(
        sink.delta_calls.load(Ordering::SeqCst),
        1,
        "one delta in flight"
    );

    sink.release();
    let exited = wait_exited(&sink, Duration::from_secs(30)).await;
    assert_eq!(exited.exit_code, 0);
    assert!(marker.exists());
    assert_eq!(
        sink.output(ProcessOutputStream::Stdout).len(),
        16 * 1024 * 1024
    );
    sink.assert_invariants();
    let _ = std::fs::remove_file(&marker);
}

/// The process group of `pid`, from `/proc/<pid>/stat`.
fn process_group_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pty_kill_reaches_background_jobs_in_their_own_groups() {
    // An interactive shell on a terminal runs each job in a group of its own; kill must still
    // reach them (the whole session is swept).
    let manager = ProcessManager::new();
    let sink = TestSink::open();
    let mut params = spawn_params("job", &["sh", "-i"]);
    params.tty = Some(true);
    params.timeout_ms = Some(None);
    let leader = start(&manager, params, &sink).await;
    manager
        .write_stdin(write_params(
            "job",
            Some(b"sleep 30 &\necho pid=$!\n"),
            None,
        ))
        .await
        .unwrap();
    let sleeper = within(PROMPT, "sleeper pid", async {
        loop {
            let output =
                String::from_utf8_lossy(&sink.output(ProcessOutputStream::Stdout)).into_owned();
            let pid = output
                .split(['\r', '\n', ' '])
                .find_map(|word| word.strip_prefix("pid=")?.parse::<u32>().ok());
            if let Some(pid) = pid {
                break pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(is_alive(sleeper));
    // The premise: job control put the job outside the leader's group.
    assert_ne!(process_group_of(sleeper), Some(leader));

    manager.kill(kill_params("job")).await.unwrap();
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.exit_code, 137);
    eventually(Duration::from_secs(3), "background job killed", || {
        !is_alive(sleeper)
    })
    .await;
    sink.assert_invariants();
}

#[test]
fn manager_and_its_futures_can_move_between_threads() {
    fn assert_send_sync<T: Send + Sync>(_: &T) {}
    fn assert_send<T: Send>(_: &T) {}
    let manager = ProcessManager::new();
    assert_send_sync(&manager);
    let sink: Arc<dyn ProcessEventSink> = TestSink::open();
    assert_send(&manager.spawn(spawn_params("x", &["true"]), sink));
    assert_send(&manager.write_stdin(write_params("x", None, Some(true))));
    assert_send(&manager.kill(kill_params("x")));
    assert_send(&manager.resize_pty(resize_params("x", 1, 1)));
    assert_send(&manager.kill_all());
}
