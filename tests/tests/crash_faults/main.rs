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
    let dir = run_dir();
    let home = dir.join("home");
    let work_dir = dir.join("work");
    std::fs::create_dir_all(&work_dir).expect("create the work directory");
    std::fs::create_dir_all(&home).expect("create the tandem home");
    let marker_value = format!("{}-{seed}", std::process::id());
    let marker = format!("{MARKER_VAR}={marker_value}");
    println!(
        "crash faults: {points} kill points, TANDEM_FAULT_SEED={seed}, home {}",
        home.display()
    );

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let violations = Arc::new(Mutex::new(Violations::default()));
    let counts = Arc::new(Mutex::new(Counts::default()));
    let mut kill_points = StdRng::seed_from_u64(seed);
    let began = Instant::now();

    for index in 0..points {
        ledger
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .begin_cycle(index);
        if kill_points.random_bool(STARTUP_KILL_PROBABILITY) {
            let delay = Duration::from_micros(
                kill_points.random_range(0..=MAX_STARTUP_KILL.as_micros() as u64),
            );
            let killed_at = Server::start_and_kill(&home, (MARKER_VAR, &marker_value), delay).await;
            counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .startup_kills += 1;
            let none_recorded = dir.join("pids").join(format!("startup-{index}"));
            checks::processes_dead(
                &marker,
                &none_recorded,
                killed_at,
                index,
                &violations,
                &counts,
            )
            .await;
            checks::database_intact(
                &home,
                &format!(
                    "after the startup kill before kill {index} ({} ms)",
                    delay.as_millis()
                ),
                &violations,
                &counts,
            );
        }
        let mut server = Server::start(
            &home,
            (MARKER_VAR, &marker_value),
            Arc::clone(&ledger),
            Arc::clone(&violations),
        )
        .await;
        if index > 0 {
            counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .restarts += 1;
        }
        let client = server.client();
        let checks_began = Instant::now();
        let scope = restart_scope(&ledger, index, seed);
        checks::after_restart(&client, &ledger, scope, &violations, &counts, false).await;
        let checks_took = checks_began.elapsed();

        let pid_dir = dir.join("pids").join(format!("cycle-{index}"));
        std::fs::create_dir_all(&pid_dir).expect("create the pid directory");
        let cycle = Cycle {
            client,
            index,
            seed,
            work_dir: work_dir.clone(),
            pid_dir: pid_dir.clone(),
            counts: Arc::clone(&counts),
        };
        let resumable = resumable_threads(&ledger, &violations);
        let kill_point = kill_points.random_range(0..=MAX_KILL_POINT);
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
        {
            let mut counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
            counts.kills += 1;
            if !reached {
                counts.stalled_kills += 1;
            }
        }
        if !reached {
            violations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(
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
        checks::processes_dead(&marker, &pid_dir, killed_at, index, &violations, &counts).await;
        checks::database_intact(
            &home,
            &format!("after kill {index} (point {kill_point})"),
            &violations,
            &counts,
        );
    }

    ledger
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .begin_cycle(points);
    // The last restart: everything checked once more (with the final tally), then a clean
    // shutdown and the database checked after it too.
    let server = Server::start(
        &home,
        (MARKER_VAR, &marker_value),
        Arc::clone(&ledger),
        Arc::clone(&violations),
    )
    .await;
    counts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .restarts += u64::from(points > 0);
    checks::after_restart(
        &server.client(),
        &ledger,
        Scope::All,
        &violations,
        &counts,
        true,
    )
    .await;
    let tail = server.stderr_tail();
    match server.close(EXIT_LIMIT).await {
        Ok(status) if status.success() => {}
        Ok(status) => violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(
                "clean shutdown failed",
                "",
                format!("exit {status} after stdin EOF; stderr:\n{tail}"),
            ),
        Err(error) => violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add("clean shutdown failed", "", error.to_string()),
    }
    checks::database_intact(&home, "after the clean shutdown", &violations, &counts);

    let counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
    let violations = violations.lock().unwrap_or_else(PoisonError::into_inner);
    let ledger = ledger.lock().unwrap_or_else(PoisonError::into_inner);
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
        dir.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
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
