//! Acceptance tests of issue 3: the `process/*` API of `TandemServer`, driven through the
//! in-process host exactly as an embedder would (typed requests, `next_event`, shutdown).
//!
//! They run real children on real time (no paused clock): what is under test is pipes, process
//! groups and wall-clock budgets. Every await that could hang sits under a timeout, so a
//! regression fails with a message instead of wedging the suite. Processes are found in
//! `/proc` by an environment variable unique to each test, which every descendant inherits.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{
    ConnectionId, ConnectionSessionState, DEFAULT_IN_PROCESS_CHANNEL_CAPACITY,
    InProcessClientHandle, InProcessClientSender, MessageProcessor, RequestResult,
};
use tandem_protocol::{
    ClientRequest, JSONRPCErrorError, JSONRPCRequest, ProcessExitedNotification, ProcessKillParams,
    ProcessOutputDeltaNotification, ProcessOutputStream, ProcessResizePtyParams,
    ProcessSpawnParams, ProcessWriteStdinParams, PtySize, RequestId, ServerNotification,
    error_codes,
};
use tandem_server::{ServerOptions, TandemServer};
use tandem_test_support::{eventually, initialize_params, live_pids_with_env, within};
use tokio::task::JoinHandle;

/// Upper bound for anything that should happen "promptly" (the "within 10 s").
const PROMPT: Duration = Duration::from_secs(10);
const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;
/// The largest delta the server sends (docs/protocol.md section 10).
const DELTA_MERGE_BYTES: usize = 64 * KIB;
/// How long an ordinary-lane probe must stay unanswered to count as stuck behind a parked
/// notification; see [`until_event_queue_is_full`].
const PROBE_WINDOW: Duration = Duration::from_millis(500);

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// A home directory shared by the tests of this binary (the server creates it on initialize).
fn test_home() -> PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tandem-server-tests-{}", std::process::id()))
}

fn start_args(capacity: usize, experimental_api: bool) -> InProcessStartArgs {
    let options = ServerOptions::new(test_home()).expect("absolute home");
    let mut args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(experimental_api),
    );
    args.channel_capacity = capacity;
    args
}

async fn start(capacity: usize) -> InProcessClientHandle {
    within(
        PROMPT,
        "start",
        in_process::start(start_args(capacity, true)),
    )
    .await
    .expect("host starts")
}

fn next_id() -> RequestId {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Sends `request` and resolves to its reply; the future owns everything it needs, so it can be
/// spawned or held while events are read. Retries while a queue is full (the client queue's
/// `WouldBlock`, the processor queue's -32001): both are "try again later", and at capacity 1
/// the processor queue is briefly full whenever the processor is busy.
async fn send(sender: InProcessClientSender, request: ClientRequest) -> RequestResult {
    loop {
        match sender.request(request.clone()).await {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(error) => panic!("host did not answer: {error}"),
            Ok(Err(error)) if error.code == error_codes::OVERLOADED => {}
            Ok(result) => return result,
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Sends `request` and waits (at most [`PROMPT`]) for the reply.
async fn call(handle: &InProcessClientHandle, request: ClientRequest) -> RequestResult {
    let what = format!("reply to {}", request.method());
    within(PROMPT, &what, send(handle.sender(), request)).await
}

/// What the base64 decoder says of `text`, as docs/protocol.md's `invalid deltaBase64: ...` quotes it.
fn base64_decode_error(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect_err("not base64")
        .to_string()
}

fn assert_error(result: RequestResult, code: i64, message: &str) {
    let error = result.expect_err("request should fail");
    assert_eq!(
        (error.code, error.message.as_str()),
        (code, message),
        "unexpected error"
    );
}

fn spawn_request(params: ProcessSpawnParams) -> ClientRequest {
    ClientRequest::ProcessSpawn {
        request_id: next_id(),
        params,
    }
}

fn kill_request(handle: &str) -> ClientRequest {
    ClientRequest::ProcessKill {
        request_id: next_id(),
        params: ProcessKillParams {
            process_handle: handle.to_owned(),
        },
    }
}

fn resize_request(handle: &str, rows: u16, cols: u16) -> ClientRequest {
    ClientRequest::ProcessResizePty {
        request_id: next_id(),
        params: ProcessResizePtyParams {
            process_handle: handle.to_owned(),
            size: PtySize { rows, cols },
        },
    }
}

fn write_request(handle: &str, bytes: Option<&[u8]>, close: Option<bool>) -> ClientRequest {
    ClientRequest::ProcessWriteStdin {
        request_id: next_id(),
        params: ProcessWriteStdinParams {
            process_handle: handle.to_owned(),
            delta: bytes.map(Bytes::copy_from_slice),
            close_stdin: close,
        },
    }
}

/// Names the processes of one test: an environment entry every descendant inherits.
struct Marker {
    value: String,
}

const MARKER_VAR: &str = "TANDEM_SERVER_TEST_MARK";

impl Marker {
    fn new(test: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Self {
            value: format!("{test}-{}-{n}", std::process::id()),
        }
    }

    /// Spawn params for `command` carrying the marker, streaming output, in the temp dir.
    fn params(&self, handle: &str, command: &[&str]) -> ProcessSpawnParams {
        ProcessSpawnParams {
            process_handle: handle.to_owned(),
            command: command.iter().map(|arg| (*arg).to_owned()).collect(),
            cwd: Some(std::env::temp_dir().to_string_lossy().into_owned()),
            stream_stdout_stderr: Some(true),
            env: Some(BTreeMap::from([(
                MARKER_VAR.to_owned(),
                Some(self.value.clone()),
            )])),
            ..Default::default()
        }
    }

    /// Pids of live (non-zombie) processes carrying the marker.
    fn live_pids(&self) -> Vec<u32> {
        live_pids_with_env(MARKER_VAR, &self.value)
    }

    /// Live marked processes whose command name is `comm`.
    fn live_named(&self, comm: &str) -> Vec<u32> {
        self.live_pids()
            .into_iter()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|name| name.trim_end() == comm)
            })
            .collect()
    }
}

/// A file of `len` pseudo-random bytes in the temp dir.
fn random_file(name: &str, len: usize) -> (PathBuf, Vec<u8>) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ len as u64;
    let bytes: Vec<u8> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    let path = std::env::temp_dir().join(format!("tandem-server-{}-{name}", std::process::id()));
    std::fs::write(&path, &bytes).expect("write test file");
    (path, bytes)
}

/// What one process handle has delivered so far.
#[derive(Debug, Default)]
struct Run {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    deltas: Vec<ProcessOutputDeltaNotification>,
    exited: Option<ProcessExitedNotification>,
}

impl Run {
    fn exited(&self) -> &ProcessExitedNotification {
        self.exited.as_ref().expect("process/exited received")
    }

    fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Collects process events by handle and records protocol violations.
#[derive(Debug, Default)]
struct Events {
    runs: HashMap<String, Run>,
    violations: Vec<String>,
}

impl Events {
    fn run(&self, handle: &str) -> &Run {
        self.runs
            .get(handle)
            .unwrap_or_else(|| panic!("no events for {handle:?}"))
    }

    fn has_exited(&self, handle: &str) -> bool {
        self.runs
            .get(handle)
            .is_some_and(|run| run.exited.is_some())
    }

    fn absorb(&mut self, event: InProcessServerEvent) {
        match event {
            InProcessServerEvent::ServerNotification(ServerNotification::ProcessOutputDelta(
                delta,
            )) => {
                let run = self.runs.entry(delta.process_handle.clone()).or_default();
                if run.exited.is_some() {
                    self.violations
                        .push(format!("delta after exited: {}", delta.process_handle));
                }
                let bytes = delta.delta.clone();
                if bytes.len() > DELTA_MERGE_BYTES {
                    self.violations
                        .push(format!("delta of {} bytes", bytes.len()));
                }
                match delta.stream {
                    ProcessOutputStream::Stdout => run.stdout.extend_from_slice(&bytes),
                    ProcessOutputStream::Stderr => run.stderr.extend_from_slice(&bytes),
                }
                run.deltas.push(delta);
            }
            InProcessServerEvent::ServerNotification(ServerNotification::ProcessExited(exited)) => {
                let run = self.runs.entry(exited.process_handle.clone()).or_default();
                if run.exited.is_some() {
                    self.violations
                        .push(format!("second exit: {}", exited.process_handle));
                }
                run.exited = Some(exited);
            }
            other => self.violations.push(format!("unexpected event: {other:?}")),
        }
    }

    /// Reads events until `done` holds, pausing `pace` after each event (a slow consumer).
    async fn read_until(
        &mut self,
        handle: &mut InProcessClientHandle,
        limit: Duration,
        what: &str,
        pace: Option<Duration>,
        done: impl Fn(&Self) -> bool,
    ) {
        within(limit, what, async {
            while !done(self) {
                let event = handle.next_event().await.expect("event stream open");
                self.absorb(event);
                if let Some(pace) = pace {
                    tokio::time::sleep(pace).await;
                }
            }
        })
        .await;
        assert!(self.violations.is_empty(), "{:?}", self.violations);
    }

    /// Reads events until every handle in `handles` has exited.
    async fn read_exits(
        &mut self,
        handle: &mut InProcessClientHandle,
        handles: &[&str],
        limit: Duration,
    ) {
        let what = format!("process/exited of {handles:?}");
        self.read_until(handle, limit, &what, None, |events| {
            handles.iter().all(|name| events.has_exited(name))
        })
        .await;
    }
}

/// Spawns `params` and asserts the `{}` reply.
async fn spawn_ok(handle: &InProcessClientHandle, params: ProcessSpawnParams) {
    let what = params.process_handle.clone();
    let reply = call(handle, spawn_request(params)).await;
    assert_eq!(reply, Ok(json!({})), "spawn {what}");
}

/// A request answered on the ordinary lane: a custom method this server does not claim, which
/// the host answers with -32601 through the outbound router.
fn probe_request() -> ClientRequest {
    ClientRequest::Custom {
        request_id: next_id(),
        method: "tandem-test/probe".into(),
        params: json!({}),
    }
}

/// Waits until a guaranteed notification is parked in front of a full event queue: from then
/// on an ordinary-lane reply cannot reach the client. Probes until one stays unanswered for
/// [`PROBE_WINDOW`] and returns it, still pending, so the test can check its answer after
/// draining (a parked notification never un-parks while nobody reads events).
async fn until_event_queue_is_full(handle: &InProcessClientHandle) -> JoinHandle<RequestResult> {
    let deadline = Instant::now() + PROMPT;
    loop {
        assert!(
            Instant::now() < deadline,
            "the event queue did not fill up within {PROMPT:?}"
        );
        let probe = tokio::spawn(send(handle.sender(), probe_request()));
        tokio::time::sleep(PROBE_WINDOW).await;
        if !probe.is_finished() {
            return probe;
        }
        // Answered: the queue still had room. Try again once more output arrived.
        assert_probe_answer(probe.await.expect("probe task"));
    }
}

fn assert_probe_answer(result: RequestResult) {
    assert_error(
        result,
        error_codes::METHOD_NOT_FOUND,
        "method not found: tandem-test/probe",
    );
}

// The tests, by concern; each module uses the harness above.
mod backpressure;
mod errors;
mod lifecycle;
mod limits;
