//! Issue 31, point 4: how many durable commits (each one fsync) the turns bench's unit costs,
//! `thread/start` plus one scripted `hello` turn, counted by the database itself rather than by
//! the store's own bookkeeping:
//!
//! - SQLite (`synchronous = FULL`, WAL): every commit appends a commit frame to the log and
//!   syncs it, so the commit frames of the current log are the fsyncs;
//! - PostgreSQL: every transaction that writes takes a transaction id and flushes the WAL at
//!   its commit (read-only ones take none), so the ids handed out in between are the commits.
//!
//! docs/reliability.md ("What is durable when") promises the thread once, the turn with its
//! input before `turn/start` answers, each item before its `item/completed` and the end before
//! `turn/completed`, where the turn's last item and its end may share a commit: three commits,
//! which is what this asserts. Both counts only go up when something else writes, so the
//! bound cannot pass by accident.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor};
use tandem_protocol::client_methods::{ThreadStart, TurnStart};
use tandem_protocol::{ClientRequest, RequestId, RequestMethod, ServerNotification};
use tandem_server::{ServerConfig, ServerConfigBuilder, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tandem_test_support::postgres::PostgresCluster;
use tokio::time::timeout;

/// Upper bound for anything that should happen promptly.
const PROMPT: Duration = Duration::from_secs(30);

/// The promise: the thread, the turn's start with its input, its last item with its end.
const COMMITS_PER_UNIT: u64 = 3;

/// A lease that is not renewed while the test runs (a renewal is a commit of its own).
const LONG_LEASE_MS: i64 = 600_000;

async fn within<F: std::future::Future>(what: &str, future: F) -> F::Output {
    match timeout(PROMPT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {PROMPT:?}: {what}"),
    }
}

async fn start(config: ServerConfigBuilder) -> InProcessClientHandle {
    let options =
        ServerOptions::load(config.config_override("store.lease_ttl_ms", LONG_LEASE_MS.into()))
            .expect("options load");
    let args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    );
    within("start", in_process::start(args))
        .await
        .expect("host starts")
}

async fn call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> Value {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    let request = M::into_request(
        RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed)),
        serde_json::from_value(params).expect("params decode"),
    );
    within(M::METHOD, handle.request(request))
        .await
        .expect("host")
        .unwrap_or_else(|error| panic!("{}: {error:?}", M::METHOD))
}

/// The turns bench's unit: `thread/start`, then a `hello` turn until its `turn/completed`.
async fn unit(handle: &mut InProcessClientHandle) {
    turn_of(handle, "hello", 2).await;
}

/// `thread/start`, then a turn of `text` (one answer per line) until its `turn/completed`,
/// which must carry `items` items.
async fn turn_of(handle: &mut InProcessClientHandle, text: &str, items: usize) {
    let started = call::<ThreadStart>(handle, json!({})).await;
    let thread_id = started["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    let turn = call::<TurnStart>(
        handle,
        json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
    )
    .await;
    let turn_id = turn["turn"]["id"].as_str().expect("turn id").to_owned();
    within("turn/completed", async {
        loop {
            let event = handle.next_event().await.expect("event stream");
            if let InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(
                done,
            )) = event
                && done.turn.id == turn_id
            {
                assert_eq!(done.turn.items.len(), items, "the input and the answers");
                return;
            }
        }
    })
    .await;
}

/// The commit frames of the SQLite log at `wal` (those of its current generation: a frame
/// whose salts differ from the header's is left over from before a checkpoint), with the
/// header's salts, so that a log restarted in between is noticed.
fn wal_commits(wal: &Path) -> (u64, [u8; 8]) {
    let log = std::fs::read(wal).expect("the store's log");
    assert!(log.len() >= 32, "a WAL header");
    let page_size = u32::from_be_bytes(log[8..12].try_into().expect("4 bytes")) as usize;
    let salts: [u8; 8] = log[16..24].try_into().expect("8 bytes");
    let mut commits = 0;
    let mut offset = 32;
    while offset + 24 + page_size <= log.len() {
        let frame = &log[offset..offset + 24];
        if frame[8..16] != salts {
            break;
        }
        // A commit frame records the database's size after the commit; others hold 0.
        if frame[4..8] != [0; 4] {
            commits += 1;
        }
        offset += 24 + page_size;
    }
    (commits, salts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_costs_three_sqlite_commits() {
    let home = tempfile::tempdir().expect("temp home");
    let mut handle = start(ServerConfig::builder().tandem_home(home.path())).await;
    // The first unit opens the store (schema, recovery); the second is the one counted.
    unit(&mut handle).await;
    let wal = home.path().join("threads.sqlite-wal");
    let (before, salts) = wal_commits(&wal);
    unit(&mut handle).await;
    let (after, salts_after) = wal_commits(&wal);
    assert_eq!(
        salts, salts_after,
        "the log restarted during the unit; run again"
    );
    let commits = after - before;
    assert!(
        commits <= COMMITS_PER_UNIT,
        "thread/start + one turn took {commits} commits (fsyncs), at most {COMMITS_PER_UNIT} \
         promised"
    );
    // Nothing durable may be skipped: fewer than one per request would be a bug too.
    assert!(
        commits >= 2,
        "{commits} commits: the thread and the turn went unwritten"
    );
    eprintln!("SQLite: thread/start + one turn = {commits} commits");
    // The count sees every commit: a turn of two answers writes the first on its own (before
    // its `item/completed`, at the second's start), so it takes one more.
    let (before, _) = wal_commits(&wal);
    turn_of(&mut handle, "one\ntwo", 3).await;
    let (after, _) = wal_commits(&wal);
    assert_eq!(
        after - before,
        COMMITS_PER_UNIT + 1,
        "a turn of two answers: the thread, the input, the first answer, the second with the end"
    );
    within("shutdown", handle.shutdown())
        .await
        .expect("shutdown");
}

/// The transaction id the next writing transaction of the cluster will take.
fn next_transaction_id(cluster: &PostgresCluster, database: &str) -> u64 {
    // `txid_current()` takes an id itself: the next one is past it.
    let current = cluster
        .sql_in(database, "SELECT txid_current()")
        .expect("txid_current");
    current.trim().parse::<u64>().expect("a transaction id") + 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_costs_three_postgres_commits() {
    let Some(cluster) = PostgresCluster::shared() else {
        return;
    };
    let (database, url) = cluster.create_named_database();
    let home = tempfile::tempdir().expect("temp home");
    let mut handle = start(
        ServerConfig::builder()
            .tandem_home(home.path())
            .config_override("store.url", url.as_str().into()),
    )
    .await;
    unit(&mut handle).await;
    // The fewest of three units: the cluster's autovacuum may take an id now and then, which
    // can only add to a count, never hide a commit of the unit.
    let mut fewest = u64::MAX;
    for _ in 0..3 {
        let before = next_transaction_id(cluster, &database);
        unit(&mut handle).await;
        let after = next_transaction_id(cluster, &database);
        // The ids in between, less the one `txid_current()` took for itself.
        fewest = fewest.min(after - before - 1);
    }
    assert!(
        fewest <= COMMITS_PER_UNIT,
        "thread/start + one turn took {fewest} writing transactions (commits), at most \
         {COMMITS_PER_UNIT} promised"
    );
    assert!(
        fewest >= 2,
        "{fewest} commits: the thread and the turn went unwritten"
    );
    eprintln!("PostgreSQL: thread/start + one turn = {fewest} commits (fewest of three)");
    within("shutdown", handle.shutdown())
        .await
        .expect("shutdown");
}
