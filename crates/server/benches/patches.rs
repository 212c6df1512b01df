//! `cargo bench -p tandem-server --bench patches`: applying a 1,000-hunk `apply_patch` patch
//! to a 10 MiB file and producing the turn's diff (issue 29), against baselines measured in the
//! same run on the same change:
//!
//! - the floor: reading the file and writing its new content beside it, renamed into place
//!   (what any all-or-nothing writer must do at least);
//! - GNU `patch` and `git apply`, each applying the same change as a unified diff (a process
//!   each, as a tool call through a shell would run them);
//! - `tandem-patch` alone, in memory: parse, apply, the item's diff and the turn's diff;
//! - the whole server path: a turn whose scripted agent runs `/patch`, through the in-process
//!   host with the SQLite store, from `turn/start` to `turn/completed` (the `fileChange` item
//!   stored as it starts and completes, the file written through a temporary file, the turn's
//!   diff rendered and sent as `turn/diff/updated`).
//!
//! Each figure is the median of several runs; the file is restored between runs, outside the
//! timing. Without `--bench` (as under `cargo test --benches`) it runs once on a 1 MiB file
//! with 100 hunks.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tandem_host::MessageProcessor;
use tandem_host::in_process::{
    self, InProcessClientHandle, InProcessServerEvent, InProcessStartArgs,
};
use tandem_protocol::client_methods::{ThreadStart, TurnStart};
use tandem_protocol::{ClientRequest, RequestId, RequestMethod, ServerNotification, TurnStatus};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;

/// Upper bound for one turn, so a regression fails instead of hanging.
const TURN_TIMEOUT: Duration = Duration::from_secs(300);

/// The file the patch changes, relative to the work directory.
const FILE: &str = "big.txt";

/// The change, in every form the measurements need.
struct Change {
    old: String,
    new: String,
    /// The `apply_patch` form.
    patch: String,
    /// The unified diff form (`a/big.txt`, `b/big.txt`), for `patch -p1` and `git apply`.
    diff: String,
}

/// A file of about `bytes` bytes of distinct lines, and `hunks` one-line changes spread evenly,
/// each with three lines of context on either side.
fn change(bytes: usize, hunks: usize) -> Change {
    let line = |i: usize| format!("line {i:07} the quick brown fox jumps over the lazy dog\n");
    let lines = bytes / line(0).len();
    let old: Vec<String> = (0..lines).map(line).collect();
    let mut new = old.clone();
    let step = lines / hunks;
    let mut patch = format!("*** Begin Patch\n*** Update File: {FILE}\n");
    for hunk in 0..hunks {
        let at = hunk * step + step / 2;
        new[at] = format!("line {at:07} changed by hunk {hunk}\n");
        patch.push_str("@@\n");
        for context in &old[at - 3..at] {
            patch.push(' ');
            patch.push_str(context);
        }
        patch.push('-');
        patch.push_str(&old[at]);
        patch.push('+');
        patch.push_str(&new[at]);
        for context in &old[at + 1..at + 4] {
            patch.push(' ');
            patch.push_str(context);
        }
    }
    patch.push_str("*** End Patch");
    let (old, new) = (old.concat(), new.concat());
    let diff = tandem_patch::unified_diff(FILE, FILE, Some(&old), Some(&new));
    Change {
        old,
        new,
        patch,
        diff,
    }
}

/// The median of `runs` timings of `work`, each after `reset` (not timed).
fn median(runs: usize, mut reset: impl FnMut(), mut work: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            reset();
            let began = Instant::now();
            work();
            began.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let (bytes, hunks, runs) = if quick {
        (1 << 20, 100, 1)
    } else {
        (10 << 20, 1_000, 7)
    };
    let change = change(bytes, hunks);
    let work = tempfile::tempdir().expect("work dir");
    let dir = work.path();
    let file = dir.join(FILE);
    let diff_file = work.path().join("change.diff");
    std::fs::write(&diff_file, &change.diff).expect("diff written");
    let reset = || std::fs::write(&file, &change.old).expect("file restored");
    let check = |what: &str| {
        let now = std::fs::read_to_string(&file).expect("file read");
        assert!(now == change.new, "{what} did not produce the new content");
    };
    println!(
        "a {hunks}-hunk patch to a {:.1} MiB file ({} bytes of apply_patch text, {} bytes of \
         unified diff); median of {runs} runs",
        change.old.len() as f64 / f64::from(1 << 20),
        change.patch.len(),
        change.diff.len()
    );

    let floor = median(runs, reset, || {
        let text = std::fs::read_to_string(&file).expect("read");
        let temp = dir.join(".big.txt.tmp");
        std::fs::write(&temp, text).expect("write");
        std::fs::rename(&temp, &file).expect("rename");
    });
    report("read + write + rename (floor)", floor, floor);

    let external = |program: &str, args: &[&str]| {
        let available = Command::new(program).arg("--version").output().is_ok();
        available.then(|| {
            let time = median(runs, reset, || {
                let status = Command::new(program)
                    .args(args)
                    .arg(&diff_file)
                    .current_dir(dir)
                    .status()
                    .expect("runs");
                assert!(status.success(), "{program} failed");
            });
            check(program);
            time
        })
    };
    match external(
        "patch",
        &["-p1", "--quiet", "--no-backup-if-mismatch", "-i"],
    ) {
        Some(time) => report("GNU patch -p1 (process)", time, floor),
        None => println!("  GNU patch: not installed"),
    }
    match external("git", &["apply"]) {
        Some(time) => report("git apply (process)", time, floor),
        None => println!("  git apply: not installed"),
    }

    let in_memory = median(
        runs,
        || {},
        || {
            let patch = tandem_patch::parse(&change.patch).expect("parses");
            let applied = tandem_patch::apply(&patch, |_| {
                Ok::<_, std::convert::Infallible>(Some(change.old.clone()))
            })
            .expect("applies");
            let item_diff = applied[0].unified_diff();
            let turn_diff = tandem_patch::unified_diff(
                FILE,
                FILE,
                applied[0].old_contents(),
                applied[0].new_contents(),
            );
            assert_eq!(item_diff.len(), turn_diff.len());
        },
    );
    report(
        "tandem-patch in memory (parse, apply, 2 diffs)",
        in_memory,
        floor,
    );
    let parse = median(
        runs,
        || {},
        || {
            tandem_patch::parse(&change.patch).expect("parses");
        },
    );
    report("  of which parse", parse, floor);
    let parsed = tandem_patch::parse(&change.patch).expect("parses");
    let apply = median(
        runs,
        || {},
        || {
            tandem_patch::apply(&parsed, |_| {
                Ok::<_, std::convert::Infallible>(Some(change.old.clone()))
            })
            .expect("applies");
        },
    );
    report("  of which apply", apply, floor);
    let diff = median(
        runs,
        || {},
        || {
            tandem_patch::unified_diff(FILE, FILE, Some(&change.old), Some(&change.new));
        },
    );
    report("  of which one diff", diff, floor);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let home = tempfile::tempdir().expect("home");
    let server = runtime.block_on(server_path(home.path(), dir, &change, runs, &reset));
    check("the server");
    report(
        "Tandem server: /patch turn to turn/completed",
        server,
        floor,
    );
}

fn report(what: &str, time: Duration, floor: Duration) {
    println!(
        "  {what:<48} {:>9.1} ms   {:>5.1}x the floor",
        time.as_secs_f64() * 1000.0,
        time.as_secs_f64() / floor.as_secs_f64()
    );
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

/// The median time of a `/patch` turn, each on the file as it was.
async fn server_path(
    home: &Path,
    dir: &Path,
    change: &Change,
    runs: usize,
    reset: &dyn Fn(),
) -> Duration {
    let options = ServerOptions::load(
        ServerConfig::builder()
            .tandem_home(home)
            // No approval and no sandbox: the measurement is the write, not a question.
            .config_override("sandbox_mode", "danger-full-access".into()),
    )
    .expect("options");
    let mut args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    );
    // Room for a turn's notifications, so that `turn/diff/updated` is never dropped.
    args.channel_capacity = 1024;
    let mut handle = in_process::start(args).await.expect("host");
    let reply = handle
        .request(request::<ThreadStart>(
            1,
            json!({"cwd": dir, "approvalPolicy": "never"}),
        ))
        .await
        .expect("host")
        .expect("thread/start");
    let thread = reply["thread"]["id"].as_str().expect("id").to_owned();
    let text = format!("/patch\n{}", change.patch);
    let mut times = Vec::new();
    // One warm-up turn, then the measured ones.
    for run in 0..=runs {
        reset();
        let began = Instant::now();
        turn(&mut handle, &thread, &text, 10 + run as i64).await;
        if run > 0 {
            times.push(began.elapsed());
        }
    }
    handle.shutdown().await.expect("shutdown");
    times.sort();
    times[times.len() / 2]
}

/// Runs one turn of `text` and waits for its end; checks its turn diff arrived first.
async fn turn(handle: &mut InProcessClientHandle, thread: &str, text: &str, id: i64) {
    handle
        .request(request::<TurnStart>(
            id,
            json!({"threadId": thread, "input": [{"type": "text", "text": text}]}),
        ))
        .await
        .expect("host")
        .expect("turn/start");
    let mut diff = None;
    let drain = async {
        loop {
            match handle.next_event().await.expect("event stream") {
                InProcessServerEvent::ServerNotification(ServerNotification::TurnDiffUpdated(
                    update,
                )) => diff = Some(update.diff.len()),
                InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(
                    done,
                )) => return done.turn.status,
                _ => {}
            }
        }
    };
    let status = tokio::time::timeout(TURN_TIMEOUT, drain)
        .await
        .expect("the turn completes");
    assert_eq!(status, TurnStatus::Completed);
    assert!(
        diff.is_some_and(|bytes| bytes > 0),
        "turn/diff/updated was sent"
    );
}
