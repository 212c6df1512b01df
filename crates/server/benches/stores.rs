//! `cargo bench -p tandem-server --bench stores`: the PostgreSQL store beside SQLite
//! (issue 20, docs/scaling.md). In the same run, for each store:
//!
//! - turns per second: `thread/start` plus one `hello` turn (scripted agent) through the
//!   in-process host, timed to `turn/completed`, 1 and 16 threads at a time (as the `turns`
//!   bench does for SQLite);
//! - `thread/list` latency: a page of 50 from the threads those turns created, 1 caller and 16
//!   concurrent callers;
//! - the fence: the same write (`update_thread`, read and rewrite of the record) on a thread
//!   this store leases (compare-and-set on the lease row first) against the bare statements,
//!   and the check alone (an empty transaction with and without it).
//!
//! PostgreSQL is a throwaway cluster of this process (`tandem_test_support::postgres`: unix
//! socket, `fsync` off, as the tests run it), so its figures are the protocol and statement
//! costs, not a disk's; SQLite runs with its usual `synchronous = FULL`. Without `--bench` (as
//! under `cargo test --benches`) a handful of each runs, in about a second.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tandem_host::MessageProcessor;
use tandem_host::in_process::{
    self, InProcessClientHandle, InProcessServerEvent, InProcessStartArgs,
};
use tandem_protocol::client_methods::{ThreadList, ThreadStart, TurnStart};
use tandem_protocol::{ClientRequest, RequestId, RequestMethod, ServerNotification};
use tandem_server::store::{
    LeaseSettings, PostgresThreadStore, SqliteThreadStore, ThreadRecord, ThreadStore, ThreadUpdate,
};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tandem_test_support::postgres::PostgresCluster;

/// Upper bound for every wait of the bench (a batch of turns, the `thread/list` callers, the
/// host's shutdown), so that a stall fails, saying where, instead of hanging.
const BATCH_TIMEOUT: Duration = Duration::from_secs(120);

/// Ends the bench on a stall. Exits rather than panics: unwinding out of `block_on` drops the
/// runtime, which waits for every blocking task and could hang in turn.
fn stalled(what: std::fmt::Arguments<'_>) -> ! {
    eprintln!("stores bench stalled: {what} within {BATCH_TIMEOUT:?}");
    std::process::exit(3);
}

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let (turns, lists, writes) = if quick { (16, 8, 16) } else { (400, 400, 2000) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let Some(cluster) = PostgresCluster::shared() else {
        println!("no PostgreSQL: nothing to compare");
        return;
    };
    println!("thread/start + one `hello` turn; thread/list (limit 50); {turns} turns per figure");
    for concurrency in [1, 16] {
        let home = tempfile::tempdir().expect("temp home");
        let sqlite = ServerConfig::builder().tandem_home(home.path());
        let sqlite = runtime.block_on(measure(sqlite, concurrency, turns, lists));
        let pg_home = tempfile::tempdir().expect("temp home");
        let url = cluster.create_database();
        let postgres = ServerConfig::builder()
            .tandem_home(pg_home.path())
            .config_override("store.url", url.as_str().into());
        let postgres = runtime.block_on(measure(postgres, concurrency, turns, lists));
        println!("  {concurrency:>2} concurrent threads / callers:");
        println!(
            "      turns/s:        SQLite {:>8.0}   PostgreSQL {:>8.0}   ratio {:.2}",
            sqlite.turns_per_second,
            postgres.turns_per_second,
            postgres.turns_per_second / sqlite.turns_per_second
        );
        println!(
            "      thread/list ms: SQLite {:>8.3}   PostgreSQL {:>8.3}   ratio {:.2}",
            sqlite.list_ms,
            postgres.list_ms,
            postgres.list_ms / sqlite.list_ms
        );
    }
    let url = cluster.create_database();
    runtime.block_on(fence_cost(&url, writes));
}

struct Figures {
    turns_per_second: f64,
    /// Mean time from sending one `thread/list` to its answer.
    list_ms: f64,
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

async fn measure(
    config: tandem_server::ServerConfigBuilder,
    concurrency: usize,
    total: usize,
    lists: usize,
) -> Figures {
    let options = ServerOptions::load(config).expect("options");
    let mut args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    );
    args.channel_capacity = 1024;
    let mut handle = in_process::start(args).await.expect("host");
    run_batch(&mut handle, 1, 0).await;
    let began = Instant::now();
    let mut done = 0;
    let mut next_id = 1_000;
    while done < total {
        let batch = concurrency.min(total - done);
        run_batch(&mut handle, batch, next_id).await;
        next_id += 10 * batch as i64;
        done += batch;
    }
    let turns_per_second = total as f64 / began.elapsed().as_secs_f64();
    let sender = handle.sender();
    let began = Instant::now();
    let mut callers = Vec::new();
    for caller in 0..concurrency {
        let sender = sender.clone();
        let share = lists / concurrency;
        callers.push(tokio::spawn(async move {
            for n in 0..share {
                let id = 1_000_000 + (caller * lists + n) as i64;
                let page = sender
                    .request(request::<ThreadList>(id, json!({"limit": 50})))
                    .await
                    .expect("host")
                    .expect("thread/list");
                assert!(!page["data"].as_array().expect("data").is_empty());
            }
            share
        }));
    }
    let mut calls = 0;
    for caller in callers {
        match tokio::time::timeout(BATCH_TIMEOUT, caller).await {
            Ok(share) => calls += share.expect("caller"),
            Err(_) => stalled(format_args!(
                "a thread/list caller ({concurrency} concurrent) got no answer"
            )),
        }
    }
    // Each caller waits for its answers one after the other: the mean latency of a call is
    // the wall time times the callers over the calls.
    let list_ms = began.elapsed().as_secs_f64() * 1000.0 * concurrency as f64 / calls as f64;
    match tokio::time::timeout(BATCH_TIMEOUT, handle.shutdown()).await {
        Ok(result) => result.expect("shutdown"),
        Err(_) => stalled(format_args!("the host did not shut down")),
    }
    Figures {
        turns_per_second,
        list_ms,
    }
}

async fn run_batch(handle: &mut InProcessClientHandle, count: usize, first_id: i64) {
    let sender = handle.sender();
    // Per request of the batch: 1 once thread/start answered, 2 once turn/start did.
    let answered = Arc::new(std::sync::Mutex::new(vec![0u8; count]));
    for index in 0..count {
        let sender = sender.clone();
        let id = first_id + 2 * index as i64;
        let answered = Arc::clone(&answered);
        tokio::spawn(async move {
            let reply = sender
                .request(request::<ThreadStart>(id, json!({})))
                .await
                .expect("host")
                .expect("thread/start");
            let thread_id = reply["thread"]["id"].as_str().expect("id").to_owned();
            answered.lock().expect("answered")[index] = 1;
            sender
                .request(request::<TurnStart>(
                    id + 1,
                    json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]}),
                ))
                .await
                .expect("host")
                .expect("turn/start");
            answered.lock().expect("answered")[index] = 2;
        });
    }
    let mut completed = 0;
    let drain = async {
        while completed < count {
            if let InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(_)) =
                handle.next_event().await.expect("event stream")
            {
                completed += 1;
            }
        }
    };
    if tokio::time::timeout(BATCH_TIMEOUT, drain).await.is_err() {
        stalled(format_args!(
            "{completed} of {count} turns completed (per request, 1: thread/start answered, \
             2: turn/start answered: {:?})",
            answered.lock().expect("answered")
        ));
    }
}

fn record(id: &str) -> ThreadRecord {
    ThreadRecord {
        id: id.to_owned(),
        name: None,
        preview: Default::default(),
        ephemeral: false,
        created_at: 1,
        updated_at: 1,
        status: tandem_protocol::ThreadStatus::Idle,
        cwd: "/work".to_owned(),
        source: tandem_protocol::SessionSource::AppServer,
        forked_from_id: None,
        model: None,
        model_provider: "bench".to_owned(),
        cli_version: "0".to_owned(),
        approval_policy: tandem_protocol::ApprovalPolicy::Never,
        dynamic_tools: Vec::new(),
        config: serde_json::Map::new(),
        archived_at: None,
    }
}

/// Mean milliseconds of `update_thread` on a leased thread of `store`, over `writes`.
async fn leased_write_ms(store: &dyn ThreadStore, writes: usize) -> f64 {
    let id = tandem_server::store::new_id();
    store
        .create_thread(&record(&id), &[])
        .await
        .expect("create");
    store.acquire_lease(&id).await.expect("lease");
    let began = Instant::now();
    for n in 0..writes {
        let update = ThreadUpdate {
            updated_at: Some(n as i64),
            ..ThreadUpdate::default()
        };
        store.update_thread(&id, &update).await.expect("write");
    }
    began.elapsed().as_secs_f64() * 1000.0 / writes as f64
}

async fn fence_cost(url: &str, writes: usize) {
    let settings = LeaseSettings::for_this_process(Duration::from_secs(60));
    let postgres = PostgresThreadStore::connect(url, settings.clone())
        .await
        .expect("connect");
    let postgres_write = leased_write_ms(&postgres, writes).await;
    let home = tempfile::tempdir().expect("temp home");
    let sqlite = SqliteThreadStore::open_with_leases(home.path(), settings)
        .await
        .expect("open");
    let sqlite_write = leased_write_ms(&sqlite, writes.min(400)).await;
    let (empty, fenced) = postgres
        .fence_statement_cost(writes)
        .await
        .expect("fence cost");
    // Signed: on a loaded machine the fenced loop can come out faster than the empty one
    // (the check is then lost in the noise, and the figure says so by its sign).
    let fence = (fenced.as_secs_f64() - empty.as_secs_f64()) * 1000.0 / writes as f64;
    println!("the fence, per write ({writes} writes):");
    println!(
        "  PostgreSQL empty transaction:              {:>8.3} ms",
        empty.as_secs_f64() * 1000.0 / writes as f64
    );
    println!("  PostgreSQL write (update_thread, leased): {postgres_write:>8.3} ms");
    println!("  SQLite write (update_thread, leased):     {sqlite_write:>8.3} ms");
    println!(
        "  PostgreSQL fence statement alone:         {fence:>8.3} ms ({:.1}% of a write)",
        fence / postgres_write * 100.0
    );
}
