//! The work a server is doing when it is killed: several threads, each running turns back to
//! back whose scripted input runs shell commands that stream output, plus a lane of streamed
//! `process/spawn` runs. The lanes never stop by themselves; the kill ends them.
//!
//! Every command writes its own pid (`$$`), and the pid of what it leaves running, to a file
//! under the cycle's pid directory, so the checks know which processes were started before the
//! kill. A command leaves a `sleep 30` behind in its process group, some a `setsid sleep 30`
//! in a session of its own: a child that stops writing does not die of SIGPIPE when the server
//! goes, so only the server's own mechanism can end it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::client::{Client, RequestError};
use crate::ledger::Counts;

/// Concurrent thread lanes per cycle.
pub(crate) const THREAD_LANES: u64 = 3;
/// Turns a lane runs on one thread before it starts another.
const TURNS_PER_THREAD: u32 = 3;
/// How long a turn may run before it counts as stuck (the longest scripted turn takes about a
/// second).
const TURN_LIMIT: Duration = Duration::from_secs(60);
/// How long a streamed process may run before it counts as stuck (it prints for ~1 s).
const PROCESS_LIMIT: Duration = Duration::from_secs(60);
/// How likely a lane is to resume a thread of an earlier server instead of starting one.
const RESUME_PROBABILITY: f64 = 0.4;

/// Where one cycle's workload runs.
#[derive(Clone)]
pub(crate) struct Cycle {
    pub(crate) client: Client,
    /// The number of this kill point (0-based); it names tokens and process handles.
    pub(crate) index: u64,
    pub(crate) seed: u64,
    /// The threads' cwd and the spawned processes' cwd.
    pub(crate) work_dir: PathBuf,
    /// Where this cycle's commands write their pids.
    pub(crate) pid_dir: PathBuf,
    pub(crate) counts: Arc<Mutex<Counts>>,
}

impl Cycle {
    fn rng(&self, lane: u64) -> StdRng {
        StdRng::seed_from_u64(
            self.seed
                ^ self.index.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                ^ lane.wrapping_mul(0xC2B2_AE3D_27D4_EB4F),
        )
    }

    fn count(&self, update: impl FnOnce(&mut Counts)) {
        update(&mut self.counts.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Reports a failed request unless it failed because the server was killed.
    fn unexpected(&self, what: &str, error: &RequestError) {
        if !matches!(error, RequestError::Closed) {
            self.client
                .violation("request failed", what, format!("{what}: {error}"));
        }
    }
}

/// Starts the lanes: [`THREAD_LANES`] thread lanes (some resume a thread of `resumable`, no
/// two the same one: a second `turn/start` would steer the first lane's turn) and one process
/// lane.
pub(crate) fn start(cycle: &Cycle, resumable: &[String]) -> Vec<JoinHandle<()>> {
    let mut chooser = cycle.rng(THREAD_LANES);
    let mut candidates = resumable.to_vec();
    let mut lanes = Vec::new();
    for lane in 0..THREAD_LANES {
        let resume = (!candidates.is_empty() && chooser.random_bool(RESUME_PROBABILITY))
            .then(|| candidates.swap_remove(chooser.random_range(0..candidates.len())));
        lanes.push(tokio::spawn(thread_lane(
            cycle.clone(),
            lane,
            cycle.rng(lane),
            resume,
        )));
    }
    lanes.push(tokio::spawn(process_lane(cycle.clone())));
    lanes
}

async fn thread_lane(cycle: Cycle, lane: u64, mut rng: StdRng, resume: Option<String>) {
    let mut thread = match resume {
        Some(thread_id) => resume_thread(&cycle, &thread_id).await,
        None => start_thread(&cycle).await,
    };
    let mut turn = 0u32;
    while let Some(thread_id) = thread {
        for _ in 0..TURNS_PER_THREAD {
            let token = format!("c{}l{lane}t{turn}", cycle.index);
            turn += 1;
            let (input, expected) = scripted_input(&mut rng, &token, &cycle.pid_dir);
            if !run_turn(&cycle, &thread_id, &input, expected).await {
                return;
            }
        }
        thread = start_thread(&cycle).await;
    }
}

async fn start_thread(cycle: &Cycle) -> Option<String> {
    // The commands write their pids to `pid_dir`, outside the thread's cwd: the default
    // read-only sandbox would deny that, and this suite is about crashes, not the sandbox.
    let params = json!({
        "cwd": cycle.work_dir,
        "approvalPolicy": "never",
        "sandbox": "danger-full-access",
    });
    match cycle.client.request("thread/start", params).await {
        Ok(result) => {
            cycle.count(|counts| counts.threads_started += 1);
            result["thread"]["id"].as_str().map(str::to_owned)
        }
        Err(error) => {
            cycle.unexpected("thread/start", &error);
            None
        }
    }
}

/// Resumes a thread an earlier (killed) server left: it must load, with its interrupted
/// turns closed, and take new turns.
async fn resume_thread(cycle: &Cycle, thread_id: &str) -> Option<String> {
    let params = json!({"threadId": thread_id, "approvalPolicy": "never"});
    match cycle.client.request("thread/resume", params).await {
        Ok(_) => {
            cycle.count(|counts| counts.threads_resumed += 1);
            Some(thread_id.to_owned())
        }
        Err(error) => {
            cycle.unexpected(&format!("thread/resume {thread_id}"), &error);
            None
        }
    }
}

/// Runs one turn to its end; `false` when the lane should stop (the server is gone, or the
/// turn went wrong and was reported).
async fn run_turn(cycle: &Cycle, thread_id: &str, input: &str, expected: &str) -> bool {
    let params = json!({
        "threadId": thread_id,
        "input": [{"type": "text", "text": input}],
        "approvalPolicy": "never",
    });
    let turn_id = match cycle.client.request("turn/start", params).await {
        Ok(result) => match result["turn"]["id"].as_str() {
            Some(id) => id.to_owned(),
            None => {
                cycle.client.violation(
                    "request failed",
                    "turn/start",
                    format!("turn/start answered without a turn id: {result}"),
                );
                return false;
            }
        },
        Err(error) => {
            cycle.unexpected(&format!("turn/start on {thread_id}"), &error);
            return false;
        }
    };
    cycle.count(|counts| counts.turns_started += 1);
    match cycle.client.turn_completed(&turn_id, TURN_LIMIT).await {
        Some(status) if status == expected => true,
        Some(status) => {
            cycle.client.violation(
                "turn ended other than its script says",
                &turn_id,
                format!("turn {turn_id} ended {status}, expected {expected}; input {input:?}"),
            );
            true
        }
        None if cycle.client.is_closed() => false,
        None => {
            cycle.client.violation(
                "turn did not complete",
                &turn_id,
                format!("no turn/completed for {turn_id} within {TURN_LIMIT:?}"),
            );
            false
        }
    }
}

/// A turn input for the scripted agent, and the status its turn must end with.
fn scripted_input(rng: &mut StdRng, token: &str, pid_dir: &Path) -> (String, &'static str) {
    let pids = pid_dir.display();
    // The command's own pid, and a `sleep 30` left in its process group.
    let stream = |lines: u32| {
        format!(
            "/sh echo $$ > {pids}/{token}.sh; sleep 30 >/dev/null 2>&1 & echo $! > {pids}/{token}.bg; \
             for i in $(seq 1 {lines}); do echo {token} line $i; sleep 0.01; done"
        )
    };
    match rng.random_range(0..100u32) {
        0..45 => (stream(rng.random_range(10..50)), "completed"),
        45..55 => (
            format!(
                "/sh echo $$ > {pids}/{token}.sh; setsid sleep 30 >/dev/null 2>&1 & \
                 echo $! > {pids}/{token}.setsid; for i in $(seq 1 20); do echo {token} $i; \
                 sleep 0.01; done"
            ),
            "completed",
        ),
        55..75 => (
            format!("{}\n/sleep 50\nsummary of {token}", stream(20)),
            "completed",
        ),
        75..87 => (format!("hello {token}, nothing to run"), "completed"),
        87..95 => (format!("/sleep 300\nwoke up {token}"), "completed"),
        _ => (format!("/fail {token} was told to fail"), "failed"),
    }
}

/// Streams `process/spawn` runs one after the other, after starting one that only sleeps
/// (without a timeout) and so outlives the server unless something kills it.
async fn process_lane(cycle: Cycle) {
    let pids = cycle.pid_dir.display().to_string();
    let sleeper = format!("sleeper-c{}", cycle.index);
    let spawn = |handle: &str, script: String, stream: bool| -> Value {
        json!({
            "processHandle": handle,
            "command": ["sh", "-c", script],
            "cwd": cycle.work_dir,
            "streamStdoutStderr": stream,
            "timeoutMs": null,
        })
    };
    let params = spawn(
        &sleeper,
        format!("echo $$ > {pids}/{sleeper}.idle; exec sleep 30"),
        false,
    );
    if let Err(error) = cycle.client.request("process/spawn", params).await {
        cycle.unexpected("process/spawn (sleeper)", &error);
        return;
    }
    cycle.count(|counts| counts.processes_spawned += 1);
    for run in 0u64.. {
        let handle = format!("stream-c{}-{run}", cycle.index);
        let script = format!(
            "echo $$ > {pids}/{handle}.proc; for i in $(seq 1 60); do echo {handle} $i; sleep 0.01; done"
        );
        if let Err(error) = cycle
            .client
            .request("process/spawn", spawn(&handle, script, true))
            .await
        {
            cycle.unexpected("process/spawn", &error);
            return;
        }
        cycle.count(|counts| counts.processes_spawned += 1);
        if !cycle.client.process_exited(&handle, PROCESS_LIMIT).await {
            if !cycle.client.is_closed() {
                cycle.client.violation(
                    "process did not exit",
                    &handle,
                    format!("no process/exited for {handle} within {PROCESS_LIMIT:?}"),
                );
            }
            return;
        }
    }
}
