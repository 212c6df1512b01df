//! Issue 17 point 5's acceptance on the real `tandem` binary: a tandem-client runs turns on
//! three threads (each turn streams agent text, asks for an approval and runs a command whose
//! output streams) while its connection is taken away at seeded points, and loses nothing.
//!
//! - Over a websocket, through a loopback proxy that cuts the connection after a drawn number
//!   of server bytes (mid-frame as often as not): the transcript each turn's handle saw
//!   equals, byte for byte, that of the same script run with no cuts; the store holds each
//!   turn once and every command ran (no approval lost). The same over a unix socket
//!   (`--listen unix://PATH`, a client of `unix://PATH`) through a proxy of unix sockets.
//! - Over a stdio child that is SIGKILLed on the approval of seeded turns and restarted by the
//!   client: the turns cut short report an explicit gap, resync from the durable snapshot and
//!   end `interrupted`; every handle saw each stored item of its turn exactly once; no turn
//!   started twice.
//!
//! Knobs (CI-sized defaults):
//!
//! ```text
//! cargo test -p tandem-e2e --test reconnect_chaos -- --nocapture
//! TANDEM_CHAOS_TURNS=300 TANDEM_CHAOS_SEED=7 TANDEM_CHAOS_KILLS=10 cargo test -p tandem-e2e --test reconnect_chaos -- --nocapture
//! ```

mod edges;
mod proxy;
mod script;

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rand::SeedableRng as _;
use rand::rngs::StdRng;
use rand::seq::index::sample;
use tandem_client::{
    ChildCommand, ChildStderr, Client, ClientOptions, ReconnectPolicy, Transport, TurnEvent,
    WebSocketTarget,
};
use tandem_protocol::TurnStatus;
use tandem_test_support::binary::{ServerProcess, tandem_binary, tandem_command};
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::proxy::{CutPlan, Proxy, Upstream};
use crate::script::{Hook, Seen};

/// Turns per run unless `TANDEM_CHAOS_TURNS` says otherwise.
const DEFAULT_TURNS: u64 = 30;
/// The seed unless `TANDEM_CHAOS_SEED` says otherwise.
const DEFAULT_SEED: u64 = 0x5EC0_4417;
/// Child kills per run unless `TANDEM_CHAOS_KILLS` says otherwise.
const DEFAULT_KILLS: u64 = 3;
/// Threads the turns are spread over (turn `n` runs on thread `n % THREADS`).
const THREADS: usize = 3;
/// Server bytes between two cuts: a turn sends a few kilobytes, so most turns see a cut.
const CUT_BYTES: std::ops::RangeInclusive<u64> = 1_000..=12_000;
/// How long the websocket server may take to start listening.
const START_LIMIT: Duration = Duration::from_secs(60);

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be an unsigned integer, got {value:?}")),
        Err(_) => default,
    }
}

/// Comes back quickly: the test's outages are a proxy cut or a restart away.
pub(crate) fn client_options() -> ClientOptions {
    ClientOptions::new()
        .request_timeout(Some(Duration::from_secs(30)))
        .reconnect(
            ReconnectPolicy::new()
                .first_backoff(Duration::from_millis(10))
                .max_backoff(Duration::from_millis(200))
                .max_attempts(100),
        )
}

/// A [`Hook`] for every turn: called with the turn's number and each of its events.
type ScriptHook = Arc<dyn Fn(usize, &TurnEvent) -> bool + Send + Sync>;

/// What one run of the script produced.
struct Outcome {
    /// By turn number.
    seen: BTreeMap<usize, Seen>,
    threads: Vec<String>,
    /// Stored turns per thread, after the run.
    stored: Vec<Vec<tandem_protocol::Turn>>,
    stats: tandem_client::ReconnectStats,
}

/// Runs `turns` turns over [`THREADS`] threads, each thread's turns in order, the threads at
/// once. `hook` sees every event of turn `n` first.
async fn run_script(
    client: &Client,
    run: &str,
    turns: usize,
    hook: Option<ScriptHook>,
    calm: impl FnOnce(),
) -> Outcome {
    let mut threads = Vec::new();
    for index in 0..THREADS {
        threads.push(script::start_thread(client, run, index).await);
    }
    let events = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let mut lanes = tokio::task::JoinSet::new();
    for (lane, thread) in threads.iter().enumerate() {
        let (client, thread, run) = (client.clone(), thread.clone(), run.to_owned());
        let (events, seen, hook) = (events.clone(), seen.clone(), hook.clone());
        lanes.spawn(async move {
            for n in (lane..turns).step_by(THREADS) {
                let turn_hook = hook
                    .clone()
                    .map(|hook| Arc::new(move |event: &TurnEvent| hook(n, event)) as Hook);
                let outcome = script::run_turn(&client, &run, &thread, n, turn_hook, &events).await;
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(n, outcome);
            }
        });
    }
    while let Some(lane) = lanes.join_next().await {
        lane.expect("a lane panicked");
    }
    calm();
    let mut stored = Vec::new();
    for thread in &threads {
        stored.push(script::stored_turns(client, thread).await);
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner));
    Outcome {
        seen,
        threads,
        stored,
        stats: client.reconnect_stats(),
    }
}

/// No turn started twice: each thread stores exactly its turns, each key once.
fn assert_each_turn_once(outcome: &Outcome, run: &str, turns: usize) {
    for (lane, stored) in outcome.stored.iter().enumerate() {
        let expected: Vec<String> = (lane..turns)
            .step_by(THREADS)
            .map(|n| format!("{run}-turn-{n}"))
            .collect();
        let keys: Vec<String> = stored.iter().filter_map(script::turn_key).collect();
        assert_eq!(
            keys, expected,
            "thread {} stores each of its turns exactly once, in order",
            outcome.threads[lane]
        );
    }
}

/// A websocket server on a fresh home; its stderr is drained for the test's lifetime.
async fn websocket_server(home: &Path) -> (ServerProcess, SocketAddr) {
    websocket_server_with(home, &[]).await
}

/// [`websocket_server`] with more arguments.
pub(crate) async fn websocket_server_with(
    home: &Path,
    args: &[&str],
) -> (ServerProcess, SocketAddr) {
    let (server, address) = server_listening(home, "ws://127.0.0.1:0", args).await;
    (server, address.parse().expect("a socket address"))
}

/// A server started with `--listen LISTEN` on a fresh home, and the address (after its
/// scheme) it printed; its stderr is drained for the test's lifetime.
async fn server_listening(home: &Path, listen: &str, args: &[&str]) -> (ServerProcess, String) {
    let scheme = listen
        .split_once("://")
        .map(|(scheme, _)| format!("listening on: {scheme}://"))
        .expect("a listen URL");
    let mut command = tandem_command(home).await.expect("the tandem binary");
    command.args(["app-server", "--listen", listen]);
    command.args(args);
    let mut server = ServerProcess::spawn(&mut command).expect("start the server");
    let stderr = server.child_mut().stderr.take().expect("piped stderr");
    let (address_tx, address_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut address_tx = Some(address_tx);
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(address) = line.strip_prefix(scheme.as_str())
                && let Some(tx) = address_tx.take()
            {
                let _ = tx.send(address.trim().to_owned());
            }
            if std::env::var_os("TANDEM_CHAOS_VERBOSE").is_some() {
                eprintln!("server: {line}");
            }
        }
    });
    let address = tokio::time::timeout(START_LIMIT, address_rx)
        .await
        .expect("the server listens in time")
        .expect("the server printed its address");
    (server, address)
}

/// How the client reaches the server through the cutting proxy.
#[derive(Clone, Copy, Debug)]
enum Socket {
    /// A websocket over TCP.
    Tcp,
    /// The same protocol over a unix socket (`Client::connect_unix`'s transport).
    Unix,
}

/// One websocket run: through a proxy that cuts with `seed`, or never.
async fn websocket_run(socket: Socket, turns: usize, seed: Option<u64>) -> (Outcome, u64) {
    let home = tempfile::tempdir().expect("a home");
    let (mut server, upstream) = match socket {
        Socket::Tcp => {
            let (server, address) = websocket_server(home.path()).await;
            (server, Upstream::Tcp(address))
        }
        Socket::Unix => {
            // A short private directory: a socket address holds about 108 bytes.
            let sockets = tempfile::Builder::new()
                .prefix("chaos")
                .tempdir_in("/tmp")
                .expect("a socket directory")
                .keep();
            let listen = format!("unix://{}", sockets.join("server.sock").display());
            let (server, path) = server_listening(home.path(), &listen, &[]).await;
            (server, Upstream::Unix(path.into()))
        }
    };
    let socket_dir = match &upstream {
        Upstream::Unix(path) => path.parent().map(Path::to_path_buf),
        Upstream::Tcp(_) => None,
    };
    let proxy = Proxy::start(upstream, seed.map(|seed| CutPlan::seeded(seed, CUT_BYTES))).await;
    let target = WebSocketTarget::new(proxy.url.clone());
    let client = Client::start(Transport::WebSocket(target), client_options())
        .await
        .expect("a client");
    let outcome = run_script(&client, "ws", turns, None, || proxy.calm()).await;
    let cuts = proxy.cuts();
    client.close().await;
    drop(proxy);
    server
        .terminate_within(Duration::from_secs(10))
        .await
        .expect("the server stops");
    if let Some(dir) = socket_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    (outcome, cuts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_cuts_lose_nothing() {
    cuts_lose_nothing(Socket::Tcp).await;
}

/// The same over a unix socket: `--listen unix://PATH` and a client of `unix://PATH`
/// reconnect by cursor exactly as over TCP (issue 32, point 4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_socket_cuts_lose_nothing() {
    cuts_lose_nothing(Socket::Unix).await;
}

/// Runs the script without cuts and with seeded cuts over `socket`, and compares.
async fn cuts_lose_nothing(socket: Socket) {
    let turns = env_u64("TANDEM_CHAOS_TURNS", DEFAULT_TURNS) as usize;
    let seed = env_u64("TANDEM_CHAOS_SEED", DEFAULT_SEED);
    println!(
        "{socket:?} websocket chaos: {turns} turns over {THREADS} threads, TANDEM_CHAOS_SEED={seed}"
    );
    let (baseline, no_cuts) = websocket_run(socket, turns, None).await;
    assert_eq!(no_cuts, 0);
    let (chaos, cuts) = websocket_run(socket, turns, Some(seed)).await;
    println!(
        "{socket:?} websocket chaos: {cuts} cuts, {} reconnects, {} events replayed, {} duplicates dropped, \
         {} gaps (TANDEM_CHAOS_SEED={seed})",
        chaos.stats.reconnects,
        chaos.stats.replayed_events,
        chaos.stats.duplicates_dropped,
        chaos.stats.gaps
    );
    assert!(cuts > 0, "the proxy cut the connection at least once");
    assert_eq!(
        chaos.stats.gaps, 0,
        "every cut was replayed from the window"
    );
    for n in 0..turns {
        let (expected, got) = (&baseline.seen[&n], &chaos.seen[&n]);
        // The script did what it says: streamed text, and command output in order.
        let output = format!("out-{n}-a\nout-{n}-b\n");
        assert!(
            expected
                .transcript
                .iter()
                .any(|line| line.starts_with("output") && line.ends_with(&output))
                && expected
                    .transcript
                    .iter()
                    .any(|line| line.starts_with("text")
                        && line.contains(&format!("hello from turn {n}"))),
            "turn {n}: {:#?}",
            expected.transcript
        );
        assert_eq!(
            got.transcript, expected.transcript,
            "turn {n}: the handle's transcript with cuts equals the one without (seed {seed})"
        );
        assert_eq!(got.approvals, 1, "turn {n}: one approval, seen once");
    }
    assert_each_turn_once(&baseline, "ws", turns);
    assert_each_turn_once(&chaos, "ws", turns);
    for stored in &chaos.stored {
        for turn in stored {
            assert!(
                script::command_ran(turn),
                "no approval lost: every turn ran its command: {turn:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_kills_resync_from_the_durable_snapshot() {
    let turns = env_u64("TANDEM_CHAOS_TURNS", DEFAULT_TURNS) as usize;
    let seed = env_u64("TANDEM_CHAOS_SEED", DEFAULT_SEED);
    let kills = (env_u64("TANDEM_CHAOS_KILLS", DEFAULT_KILLS) as usize).min(turns);
    let killed: HashSet<usize> = sample(&mut StdRng::seed_from_u64(seed), turns, kills)
        .into_iter()
        .collect();
    println!(
        "child chaos: {turns} turns over {THREADS} threads, SIGKILL on the approval of turns \
         {killed:?} (TANDEM_CHAOS_SEED={seed})"
    );
    let home = tempfile::tempdir().expect("a home");
    let binary = tokio::task::spawn_blocking(tandem_binary)
        .await
        .expect("the build task")
        .expect("the tandem binary");
    let command = ChildCommand::tandem(binary)
        .env("TANDEM_HOME", home.path())
        .env_remove("TANDEM_LOG")
        .stderr(ChildStderr::Null);
    let client = Client::start(Transport::Child(command), client_options())
        .await
        .expect("a client");
    let kill_client = client.clone();
    let killed_for_hook = killed.clone();
    let done_kills = Arc::new(AtomicU64::new(0));
    let done = done_kills.clone();
    let hook = Arc::new(move |n: usize, event: &TurnEvent| {
        if !(killed_for_hook.contains(&n) && matches!(event, TurnEvent::Approval(_))) {
            return false;
        }
        let pid = kill_client.child_pid().expect("a running child");
        // Its whole group, as a crash of the machine's server would end it.
        killpg(Pid::from_raw(pid as i32), Signal::SIGKILL).expect("SIGKILL the server");
        done.fetch_add(1, Ordering::SeqCst);
        true
    });
    let outcome = run_script(&client, "child", turns, Some(hook), || {}).await;
    println!(
        "child chaos: {} kills, {} restarts, {} gaps, {} events replayed, {} duplicates dropped",
        done_kills.load(Ordering::SeqCst),
        outcome.stats.reconnects,
        outcome.stats.gaps,
        outcome.stats.replayed_events,
        outcome.stats.duplicates_dropped
    );
    assert_eq!(done_kills.load(Ordering::SeqCst) as usize, kills);
    assert!(
        outcome.stats.reconnects >= kills as u64,
        "the child was restarted after every kill"
    );
    assert_each_turn_once(&outcome, "child", turns);
    let stored: std::collections::HashMap<String, &tandem_protocol::Turn> = outcome
        .stored
        .iter()
        .flatten()
        .map(|turn| (turn.id.clone(), turn))
        .collect();
    for (n, seen) in &outcome.seen {
        let end = seen
            .final_turn
            .as_ref()
            .unwrap_or_else(|| panic!("turn {n} ended on its handle"));
        if killed.contains(n) {
            assert!(
                seen.gaps >= 1,
                "turn {n}: the handle saw an explicit gap: {seen:?}"
            );
            assert_eq!(
                end.status,
                TurnStatus::Interrupted,
                "turn {n} was running at the kill"
            );
        }
        let stored = stored[&end.id];
        assert_eq!(
            stored.status, end.status,
            "turn {n}: the handle ends as the store says"
        );
        let stored_items: Vec<&str> = stored.items.iter().map(|item| item.id()).collect();
        let seen_items: Vec<&str> = seen.completed_items.iter().map(String::as_str).collect();
        assert_eq!(
            seen_items, stored_items,
            "turn {n}: every item completed before the kill is seen exactly once: {seen:?}"
        );
    }
    client.close().await;
}
