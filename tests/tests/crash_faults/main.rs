//! The crash fault-injection suite of issue 13 ("Nothing lost at the edges"): the real
//! `tandem` binary on a real SQLite store is SIGKILLed at seeded random points while several
//! threads run turns whose commands stream output and a process lane streams `process/spawn`
//! output; the same `TANDEM_HOME` is restarted after every kill, so state accumulates.
//!
//! After each kill (server stopped):
//! - nothing the server started is alive 2 s after the kill (the pids the commands wrote, and
//!   every process carrying the run's marker in its environment);
//! - `PRAGMA integrity_check` is `ok` (and `foreign_key_check` finds nothing).
//!
//! After each restart, for everything any earlier server acknowledged:
//! - every thread `thread/start` answered is in `thread/list` and readable by `thread/read`;
//! - every turn `turn/start` answered is there, with its input, in a terminal status, and
//!   with the status `turn/completed` reported if the client read one;
//! - no `commandExecution` or `dynamicToolCall` item is left without an outcome.
//!
//! A kill point is a number of server messages read after the workload began (0 kills it
//! before any), drawn from the seed. Knobs:
//!
//! ```text
//! cargo test -p tandem-e2e --test crash_faults -- --nocapture
//! TANDEM_FAULT_POINTS=500 TANDEM_FAULT_SEED=7 cargo test -p tandem-e2e --test crash_faults -- --nocapture
//! ```
//!
//! The seed is printed at the start and with the result, so a failing run can be repeated
//! (the kill points are message counts, so a rerun kills at the same points of the protocol,
//! though not always at the same instruction of the server).

mod checks;
mod client;
mod ledger;
mod workload;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

use crate::client::Server;
use crate::ledger::{Counts, Ledger, Scope, Violations};
use crate::workload::Cycle;

/// Kill points per run unless `TANDEM_FAULT_POINTS` says otherwise (CI-sized).
const DEFAULT_POINTS: u64 = 50;
/// The seed unless `TANDEM_FAULT_SEED` says otherwise.
const DEFAULT_SEED: u64 = 0x7A4D_E113;
/// The latest kill point, in server messages after the workload began. Three thread lanes
/// and a process lane produce a few hundred messages a second, so kills land from before the
/// first reply to about two seconds into the workload.
const MAX_KILL_POINT: u64 = 400;
/// Up to this many acknowledged threads, every restart reads every one back.
const FULL_CHECK_THREADS: usize = 300;
/// Past [`FULL_CHECK_THREADS`], every this many restarts read every thread back; the others
/// read the threads the last two workloads touched and a sample of the rest.
const FULL_CHECK_EVERY: u64 = 10;
/// The older threads a sampled restart reads back.
const CHECK_SAMPLE: usize = 60;
/// How often a kill point is preceded by a kill during the restart itself.
const STARTUP_KILL_PROBABILITY: f64 = 0.2;
/// The latest startup kill, after the spawn: the debug binary opens its store and recovers
/// within this on an idle machine.
const MAX_STARTUP_KILL: Duration = Duration::from_millis(80);
/// How long a workload may take to reach its kill point before it counts as stalled.
const STALL_LIMIT: Duration = Duration::from_secs(60);
/// How long the lanes may take to notice the kill.
const LANES_LIMIT: Duration = Duration::from_secs(30);
/// The final clean shutdown (stdin EOF) budget: the server's 5 s plus a margin.
const EXIT_LIMIT: Duration = Duration::from_secs(10);
/// The environment variable that marks every process of one run.
const MARKER_VAR: &str = "TANDEM_FAULT_MARK";

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be an unsigned integer, got {value:?}")),
        Err(_) => default,
    }
}

/// A directory of its own for this run, under the target's temporary directory; kept when the
/// run fails, for inspection.
fn run_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("crash-faults")
        .join(format!("run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_loses_nothing_acknowledged() {
    let points = env_u64("TANDEM_FAULT_POINTS", DEFAULT_POINTS);
    let seed = env_u64("TANDEM_FAULT_SEED", DEFAULT_SEED);
    let run = Run::new(seed);
    println!(
        "crash faults: {points} kill points, TANDEM_FAULT_SEED={seed}, home {}",
        run.home.display()
    );
    let mut kill_points = StdRng::seed_from_u64(seed);
    let began = Instant::now();
    for index in 0..points {
        run.ledger().begin_cycle(index);
        if kill_points.random_bool(STARTUP_KILL_PROBABILITY) {
            let delay = Duration::from_micros(
                kill_points.random_range(0..=MAX_STARTUP_KILL.as_micros() as u64),
            );
            run.kill_during_restart(index, delay).await;
        }
        let kill_point = kill_points.random_range(0..=MAX_KILL_POINT);
        run.kill_during_workload(index, kill_point).await;
    }
    run.ledger().begin_cycle(points);
    run.last_restart(points > 0).await;

    let counts = run.counts.lock().unwrap_or_else(PoisonError::into_inner);
    let violations = run
        .violations
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let ledger = run.ledger();
    println!(
        "crash faults: {points} kill points in {:.1} s (TANDEM_FAULT_SEED={seed}); {} threads and \
         {} turns acknowledged\n{counts}",
        began.elapsed().as_secs_f64(),
        ledger.threads().len(),
        ledger.turn_count(),
    );
    assert!(
        violations.is_empty(),
        "crash faults: violations (TANDEM_FAULT_SEED={seed}, TANDEM_FAULT_POINTS={points}; \
         data kept in {}):\n{violations}",
        run.dir.display()
    );
    let _ = std::fs::remove_dir_all(&run.dir);
}

/// One run: its directories, its marker, and what it has learned so far.
struct Run {
    seed: u64,
    dir: PathBuf,
    /// The `TANDEM_HOME` every server of the run shares.
    home: PathBuf,
    work_dir: PathBuf,
    /// The value of [`MARKER_VAR`] in every server's environment.
    marker_value: String,
    /// `MARKER_VAR=value`, as it appears in `/proc/PID/environ`.
    marker: String,
    ledger: Arc<Mutex<Ledger>>,
    violations: Arc<Mutex<Violations>>,
    counts: Arc<Mutex<Counts>>,
}

impl Run {
    fn new(seed: u64) -> Self {
        let dir = run_dir();
        let home = dir.join("home");
        let work_dir = dir.join("work");
        std::fs::create_dir_all(&work_dir).expect("create the work directory");
        std::fs::create_dir_all(&home).expect("create the tandem home");
        let marker_value = format!("{}-{seed}", std::process::id());
        let marker = format!("{MARKER_VAR}={marker_value}");
        Self {
            seed,
            dir,
            home,
            work_dir,
            marker_value,
            marker,
            ledger: Arc::default(),
            violations: Arc::default(),
            counts: Arc::default(),
        }
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn count(&self, update: impl FnOnce(&mut Counts)) {
        update(&mut self.counts.lock().unwrap_or_else(PoisonError::into_inner));
    }

    fn violation(&self, kind: &str, key: &str, detail: String) {
        self.violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(kind, key, detail);
    }

    async fn start_server(&self) -> Server {
        Server::start(
            &self.home,
            (MARKER_VAR, &self.marker_value),
            Arc::clone(&self.ledger),
            Arc::clone(&self.violations),
        )
        .await
    }

    /// A kill `delay` after a server starts (store open, recovery, handshake), then the
    /// checks that need no server.
    async fn kill_during_restart(&self, index: u64, delay: Duration) {
        let killed_at =
            Server::start_and_kill(&self.home, (MARKER_VAR, &self.marker_value), delay).await;
        self.count(|counts| counts.startup_kills += 1);
        let nothing_recorded = self.dir.join("pids").join(format!("startup-{index}"));
        checks::processes_dead(
            &self.marker,
            &nothing_recorded,
            killed_at,
            index,
            &self.violations,
            &self.counts,
        )
        .await;
        checks::database_intact(
            &self.home,
            &format!(
                "after the startup kill before kill {index} ({} ms)",
                delay.as_millis()
            ),
            &self.violations,
            &self.counts,
        );
    }

    /// Kill point `index`: a restart and its checks, the workload, the kill at `kill_point`
    /// messages, then the checks that need no server.
    async fn kill_during_workload(&self, index: u64, kill_point: u64) {
        let mut server = self.start_server().await;
        if index > 0 {
            self.count(|counts| counts.restarts += 1);
        }
        let client = server.client();
        let checks_began = Instant::now();
        let scope = restart_scope(&self.ledger, index, self.seed);
        checks::after_restart(
            &client,
            &self.ledger,
            scope,
            &self.violations,
            &self.counts,
            false,
        )
        .await;
        let checks_took = checks_began.elapsed();

        let pid_dir = self.dir.join("pids").join(format!("cycle-{index}"));
        std::fs::create_dir_all(&pid_dir).expect("create the pid directory");
        let cycle = Cycle {
            client,
            index,
            seed: self.seed,
            work_dir: self.work_dir.clone(),
            pid_dir: pid_dir.clone(),
            counts: Arc::clone(&self.counts),
        };
        let resumable = resumable_threads(&self.ledger, &self.violations);
        let workload_began = Instant::now();
        let lanes = workload::start(&cycle, &resumable);
        server.arm_kill(kill_point);
        let (killed_at, reached) = server.wait_killed(STALL_LIMIT).await;
        println!(
            "kill {index}: at message {kill_point}, {} ms into the workload (restart checks took \
             {} ms)",
            killed_at
                .saturating_duration_since(workload_began)
                .as_millis(),
            checks_took.as_millis()
        );
        self.count(|counts| {
            counts.kills += 1;
            counts.stalled_kills += u64::from(!reached);
        });
        if !reached {
            self.violation(
                "workload stalled before its kill point",
                &index.to_string(),
                format!(
                    "kill {index}: fewer than {kill_point} messages in {STALL_LIMIT:?}; \
                     server stderr:\n{}",
                    server.stderr_tail()
                ),
            );
        }
        let joined = tokio::time::timeout(LANES_LIMIT, futures::future::join_all(lanes)).await;
        assert!(
            joined.is_ok(),
            "the workload lanes did not notice the kill within {LANES_LIMIT:?}"
        );
        checks::processes_dead(
            &self.marker,
            &pid_dir,
            killed_at,
            index,
            &self.violations,
            &self.counts,
        )
        .await;
        checks::database_intact(
            &self.home,
            &format!("after kill {index} (point {kill_point})"),
            &self.violations,
            &self.counts,
        );
    }

    /// The last restart: everything checked once more (with the final tally), then a clean
    /// shutdown (stdin EOF), and the database checked after it too.
    async fn last_restart(&self, after_a_kill: bool) {
        let server = self.start_server().await;
        self.count(|counts| counts.restarts += u64::from(after_a_kill));
        checks::after_restart(
            &server.client(),
            &self.ledger,
            Scope::All,
            &self.violations,
            &self.counts,
            true,
        )
        .await;
        let tail = server.stderr_tail();
        match server.close(EXIT_LIMIT).await {
            Ok(status) if status.success() => {}
            Ok(status) => self.violation(
                "clean shutdown failed",
                "",
                format!("exit {status} after stdin EOF; stderr:\n{tail}"),
            ),
            Err(error) => self.violation("clean shutdown failed", "", error.to_string()),
        }
        checks::database_intact(
            &self.home,
            "after the clean shutdown",
            &self.violations,
            &self.counts,
        );
    }
}

/// What the restart before kill point `index` reads back: everything while the run is small
/// (the CI size), and past that everything every [`FULL_CHECK_EVERY`] restarts and otherwise
/// what the last two workloads touched plus a seeded sample, so that a long run
/// (`TANDEM_FAULT_POINTS=500`) stays linear. The last restart always reads everything.
fn restart_scope(ledger: &Mutex<Ledger>, index: u64, seed: u64) -> Scope {
    let threads = ledger
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .threads()
        .len();
    if threads <= FULL_CHECK_THREADS || index.is_multiple_of(FULL_CHECK_EVERY) {
        Scope::All
    } else {
        Scope::Recent {
            since_kill: index.saturating_sub(2),
            sample: CHECK_SAMPLE,
            seed: seed ^ index,
        }
    }
}

/// Threads a lane may resume: acknowledged, and not already found missing.
fn resumable_threads(ledger: &Mutex<Ledger>, violations: &Mutex<Violations>) -> Vec<String> {
    let ledger = ledger.lock().unwrap_or_else(PoisonError::into_inner);
    let violations = violations.lock().unwrap_or_else(PoisonError::into_inner);
    ledger
        .threads()
        .iter()
        .filter(|thread| {
            !violations.has("acknowledged thread missing from thread/list", thread)
                && !violations.has("acknowledged thread unreadable", thread)
        })
        .cloned()
        .collect()
}
