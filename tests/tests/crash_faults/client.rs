//! One run of `tandem app-server --listen stdio://` and the client that drives it: requests
//! matched to replies, waiters for `turn/completed` and `process/exited`, and the kill switch.
//!
//! The reader task is the only place that sees the server's messages, so it is where
//! acknowledgements are recorded in the [`Ledger`] (a reply counts as acknowledged the moment
//! it is read) and where the SIGKILL is sent: on the K-th message of the workload, before the
//! next one is read. That makes a kill point a message count rather than a wall-clock delay,
//! which keeps a seed's kill points close to each other across runs.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tandem_test_support::binary::{ServerProcess, tandem_command};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::ledger::{Ledger, Violations};

/// How long one request may wait for its reply.
const REQUEST_LIMIT: Duration = Duration::from_secs(30);
/// How long the server may take to start and answer `initialize` (a debug build on a loaded
/// 2-core machine, recovering a store that grew over the run).
const START_LIMIT: Duration = Duration::from_secs(60);
/// How many of the server's last stderr lines a failure quotes.
const STDERR_TAIL: usize = 20;
/// `kill_at` when no kill is armed.
const DISARMED: u64 = u64::MAX;

/// Why a request got no result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RequestError {
    /// The server is gone (killed, or its stdout closed) before it answered.
    #[error("the connection closed before the reply")]
    Closed,
    /// No reply within the limit while the server was still running.
    #[error("no reply to {method} within {limit:?}")]
    TimedOut {
        /// The request's method.
        method: String,
        /// How long it waited.
        limit: Duration,
    },
    /// The server answered with a JSON-RPC error.
    #[error("{method} failed: {code} {message}")]
    Rpc {
        /// The request's method.
        method: String,
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
}

/// A request waiting for its reply, with what the ledger needs when the reply is a success.
struct Pending {
    method: String,
    /// For `turn/start`: the thread and the input text.
    turn_input: Option<(String, String)>,
    reply: oneshot::Sender<Result<Value, RequestError>>,
}

#[derive(Default)]
struct Routing {
    pending: HashMap<i64, Pending>,
    /// `turn/completed` already read, by turn id: the status the client was told.
    completed_turns: HashMap<String, String>,
    turn_waiters: HashMap<String, oneshot::Sender<String>>,
    exited_processes: HashSet<String>,
    process_waiters: HashMap<String, oneshot::Sender<()>>,
    closed: bool,
}

struct Shared {
    routing: Mutex<Routing>,
    ledger: Arc<Mutex<Ledger>>,
    violations: Arc<Mutex<Violations>>,
    pid: i32,
    /// Messages read since the workload's kill point was armed.
    received: AtomicU64,
    kill_at: AtomicU64,
    killed_at: Mutex<Option<Instant>>,
    stderr: Mutex<Vec<String>>,
}

impl Shared {
    fn routing(&self) -> std::sync::MutexGuard<'_, Routing> {
        self.routing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sigkill(&self) {
        let mut killed_at = self
            .killed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if killed_at.is_none() {
            // The server may already be dead (it crashed by itself); the checks then run on
            // what it left, which is just as valid a fault.
            let _ = kill(Pid::from_raw(self.pid), Signal::SIGKILL);
            *killed_at = Some(Instant::now());
        }
    }

    fn stderr_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        lines[lines.len().saturating_sub(STDERR_TAIL)..].join("\n")
    }
}

/// A client of one server process; cheap to clone into the workload's lanes.
#[derive(Clone)]
pub(crate) struct Client {
    shared: Arc<Shared>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    next_id: Arc<AtomicI64>,
}

/// The server process and its client.
pub(crate) struct Server {
    process: ServerProcess,
    client: Client,
    reader: JoinHandle<()>,
}

impl Server {
    /// Starts `tandem app-server --listen stdio://` on `home` with `marker` (`name=value`) in
    /// its environment, which every process it starts inherits, and initializes it with the
    /// experimental API (for `process/spawn`).
    pub(crate) async fn start(
        home: &Path,
        marker: (&str, &str),
        ledger: Arc<Mutex<Ledger>>,
        violations: Arc<Mutex<Violations>>,
    ) -> Self {
        let mut command = tandem_command(home)
            .await
            .unwrap_or_else(|error| panic!("cannot build the tandem binary: {error}"));
        command
            .args(["app-server", "--listen", "stdio://"])
            .env(marker.0, marker.1)
            .current_dir(home);
        let mut process = ServerProcess::spawn(&mut command)
            .unwrap_or_else(|error| panic!("cannot start tandem app-server: {error}"));
        let child = process.child_mut();
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let pid = process
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .expect("a server that just started has a pid");
        let shared = Arc::new(Shared {
            routing: Mutex::new(Routing::default()),
            ledger,
            violations,
            pid,
            received: AtomicU64::new(0),
            kill_at: AtomicU64::new(DISARMED),
            killed_at: Mutex::new(None),
            stderr: Mutex::new(Vec::new()),
        });
        let stderr_shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                stderr_shared
                    .stderr
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line);
            }
        });
        let reader = tokio::spawn(read_messages(stdout, Arc::clone(&shared)));
        let client = Client {
            shared,
            stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            next_id: Arc::new(AtomicI64::new(1)),
        };
        let server = Self {
            process,
            client,
            reader,
        };
        let initialize = json!({
            "clientInfo": {"name": "crash-faults", "version": "0"},
            "capabilities": {"experimentalApi": true},
        });
        match tokio::time::timeout(START_LIMIT, server.client.request("initialize", initialize))
            .await
        {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => panic!(
                "initialize failed: {error}; server stderr:\n{}",
                server.client.shared.stderr_tail()
            ),
            Err(_) => panic!(
                "the server did not answer initialize within {START_LIMIT:?}; stderr:\n{}",
                server.client.shared.stderr_tail()
            ),
        }
        server.client.notify("initialized", json!({})).await;
        server
    }

    /// Starts the server as [`Self::start`] does and SIGKILLs it `delay` later, whatever it is
    /// doing then (opening the store, recovering what the previous kill left, answering
    /// `initialize`). Returns when the kill was sent, once the process is reaped.
    pub(crate) async fn start_and_kill(
        home: &Path,
        marker: (&str, &str),
        delay: Duration,
    ) -> Instant {
        let mut command = tandem_command(home)
            .await
            .unwrap_or_else(|error| panic!("cannot build the tandem binary: {error}"));
        command
            .args(["app-server", "--listen", "stdio://"])
            .env(marker.0, marker.1)
            .current_dir(home);
        let mut process = ServerProcess::spawn(&mut command)
            .unwrap_or_else(|error| panic!("cannot start tandem app-server: {error}"));
        // Held open until the kill: stdin EOF would start a clean shutdown instead.
        let _stdin = process.child_mut().stdin.take();
        tokio::time::sleep(delay).await;
        let _ = process.child_mut().start_kill();
        let killed_at = Instant::now();
        let _ = tokio::time::timeout(REQUEST_LIMIT, process.child_mut().wait()).await;
        killed_at
    }

    /// A handle for the workload and the checks.
    pub(crate) fn client(&self) -> Client {
        self.client.clone()
    }

    /// Arms the kill switch: the server is SIGKILLed once `messages` more messages have been
    /// read (at once for 0).
    pub(crate) fn arm_kill(&self, messages: u64) {
        self.client.shared.received.store(0, Ordering::SeqCst);
        self.client.shared.kill_at.store(messages, Ordering::SeqCst);
        if messages == 0 {
            self.client.shared.sigkill();
        }
    }

    /// Waits for the armed kill to happen and the process to be reaped. Returns when the kill
    /// was sent, and whether the kill point was reached: when the workload stops producing
    /// messages before it (a stalled server), the server is killed at `limit` instead.
    pub(crate) async fn wait_killed(&mut self, limit: Duration) -> (Instant, bool) {
        let reached = tokio::time::timeout(limit, self.process.child_mut().wait())
            .await
            .is_ok();
        if !reached {
            self.client.shared.sigkill();
            let _ = tokio::time::timeout(REQUEST_LIMIT, self.process.child_mut().wait()).await;
        }
        let _ = tokio::time::timeout(REQUEST_LIMIT, &mut self.reader).await;
        let killed_at = self
            .client
            .shared
            .killed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unwrap_or_else(Instant::now);
        (killed_at, reached)
    }

    /// Closes stdin (a clean shutdown request) and waits for the exit.
    pub(crate) async fn close(mut self, limit: Duration) -> std::io::Result<ExitStatus> {
        self.client.stdin.lock().await.take();
        let status = self.process.wait_within(limit).await;
        let _ = tokio::time::timeout(REQUEST_LIMIT, &mut self.reader).await;
        status
    }

    /// The last lines the server wrote on stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        self.client.shared.stderr_tail()
    }
}

impl Client {
    /// Sends a request and waits (at most [`REQUEST_LIMIT`]) for its reply.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, RequestError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let turn_input = (method == "turn/start").then(|| {
            let thread = params["threadId"].as_str().unwrap_or_default().to_owned();
            let text = params["input"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (thread, text)
        });
        let (reply, answer) = oneshot::channel();
        {
            let mut routing = self.shared.routing();
            if routing.closed {
                return Err(RequestError::Closed);
            }
            routing.pending.insert(
                id,
                Pending {
                    method: method.to_owned(),
                    turn_input,
                    reply,
                },
            );
        }
        let line = json!({"id": id, "method": method, "params": params});
        if !self.write(&line).await {
            self.shared.routing().pending.remove(&id);
            return Err(RequestError::Closed);
        }
        match tokio::time::timeout(REQUEST_LIMIT, answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(RequestError::Closed),
            Err(_) => {
                self.shared.routing().pending.remove(&id);
                Err(RequestError::TimedOut {
                    method: method.to_owned(),
                    limit: REQUEST_LIMIT,
                })
            }
        }
    }

    /// Sends a notification; a closed connection is not an error here (the caller learns it
    /// from its next request).
    pub(crate) async fn notify(&self, method: &str, params: Value) {
        self.write(&json!({"method": method, "params": params}))
            .await;
    }

    /// Writes one line; `false` when the server's stdin is closed.
    async fn write(&self, message: &Value) -> bool {
        let mut line = message.to_string();
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        let Some(stdin) = stdin.as_mut() else {
            return false;
        };
        stdin.write_all(line.as_bytes()).await.is_ok() && stdin.flush().await.is_ok()
    }

    /// The status `turn/completed` reports for `turn_id`, or `None` when the connection closed
    /// first or `limit` passed.
    pub(crate) async fn turn_completed(&self, turn_id: &str, limit: Duration) -> Option<String> {
        let waiter = {
            let mut routing = self.shared.routing();
            if let Some(status) = routing.completed_turns.get(turn_id) {
                return Some(status.clone());
            }
            if routing.closed {
                return None;
            }
            let (sender, waiter) = oneshot::channel();
            routing.turn_waiters.insert(turn_id.to_owned(), sender);
            waiter
        };
        tokio::time::timeout(limit, waiter).await.ok()?.ok()
    }

    /// `true` once `process/exited` for `handle` was read; `false` when the connection closed
    /// first or `limit` passed.
    pub(crate) async fn process_exited(&self, handle: &str, limit: Duration) -> bool {
        let waiter = {
            let mut routing = self.shared.routing();
            if routing.exited_processes.contains(handle) {
                return true;
            }
            if routing.closed {
                return false;
            }
            let (sender, waiter) = oneshot::channel();
            routing.process_waiters.insert(handle.to_owned(), sender);
            waiter
        };
        matches!(tokio::time::timeout(limit, waiter).await, Ok(Ok(())))
    }

    /// Whether the server is gone (its stdout closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.routing().closed
    }

    /// Records a violation found by a workload lane.
    pub(crate) fn violation(&self, kind: &str, key: &str, detail: String) {
        self.shared
            .violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(kind, key, detail);
    }
}

async fn read_messages(stdout: ChildStdout, shared: Arc<Shared>) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&line) {
            Ok(message) => route(&shared, message),
            Err(error) => shared
                .violations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(
                    "server wrote a line that is not JSON",
                    &line,
                    format!("{error}: {line}"),
                ),
        }
        let read = shared.received.fetch_add(1, Ordering::SeqCst) + 1;
        if read >= shared.kill_at.load(Ordering::SeqCst) {
            shared.sigkill();
        }
    }
    // Everyone still waiting learns the server is gone: their senders are dropped.
    let mut routing = shared.routing();
    routing.closed = true;
    routing.pending.clear();
    routing.turn_waiters.clear();
    routing.process_waiters.clear();
}

/// Records what the message acknowledges and wakes whoever waits for it.
fn route(shared: &Shared, message: Value) {
    let method = message["method"].as_str();
    let id = message["id"].as_i64();
    match (method, id) {
        (None, Some(id)) => {
            let Some(pending) = shared.routing().pending.remove(&id) else {
                return;
            };
            let result = match message.get("error") {
                Some(error) => Err(RequestError::Rpc {
                    method: pending.method.clone(),
                    code: error["code"].as_i64().unwrap_or_default(),
                    message: error["message"].as_str().unwrap_or_default().to_owned(),
                }),
                None => {
                    let result = message["result"].clone();
                    acknowledge(shared, &pending, &result);
                    Ok(result)
                }
            };
            let _ = pending.reply.send(result);
        }
        (Some("turn/completed"), _) => {
            let turn = &message["params"]["turn"];
            let turn_id = turn["id"].as_str().unwrap_or_default().to_owned();
            let status = turn["status"].as_str().unwrap_or_default().to_owned();
            shared
                .ledger
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .told_turn_status(&turn_id, &status);
            let mut routing = shared.routing();
            if let Some(waiter) = routing.turn_waiters.remove(&turn_id) {
                let _ = waiter.send(status.clone());
            }
            routing.completed_turns.insert(turn_id, status);
        }
        (Some("process/exited"), _) => {
            let handle = message["params"]["processHandle"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mut routing = shared.routing();
            if let Some(waiter) = routing.process_waiters.remove(&handle) {
                let _ = waiter.send(());
            }
            routing.exited_processes.insert(handle);
        }
        (Some(method), Some(_)) => {
            // Every thread runs with approvalPolicy never and registers no dynamic tool, so
            // the server has nothing to ask.
            shared
                .violations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(
                    "unexpected server request",
                    method,
                    format!("{method}: {message}"),
                );
        }
        _ => {}
    }
}

/// What a successful reply acknowledges: a thread (`thread/start`, `thread/resume`) or a
/// turn and its input (`turn/start`).
fn acknowledge(shared: &Shared, pending: &Pending, result: &Value) {
    let mut ledger = shared.ledger.lock().unwrap_or_else(PoisonError::into_inner);
    match pending.method.as_str() {
        "thread/start" => {
            if let Some(thread_id) = result["thread"]["id"].as_str() {
                ledger.thread_acknowledged(thread_id);
            }
        }
        "turn/start" => {
            if let (Some(turn_id), Some((thread_id, text))) =
                (result["turn"]["id"].as_str(), pending.turn_input.as_ref())
            {
                ledger.turn_acknowledged(thread_id, turn_id, text);
            }
        }
        _ => {}
    }
}
