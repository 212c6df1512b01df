//! `cargo bench -p tandem-server --bench history`: what a long history costs a client that
//! pages it (issue 16), through the in-process host on the durable SQLite store.
//!
//! - `thread/resume` with `initialTurnsPage: {limit: 10}` of a thread that is not loaded, for a
//!   thread of 10 turns and one of 100 000; the target is the long one within 2x of the short.
//!   Between samples the client unsubscribes and waits for `thread/closed` (unload delay 0),
//!   so every sample is a cold resume.
//! - The first page of `thread/list` (50 threads, newest first) with 1 000 threads stored and
//!   with 1 000 000; the target is within 2x.
//!
//! The stores are filled through the store API directly (`create_thread` with a whole history;
//! threads concurrently, so group commit batches them), not by running turns. Each figure is
//! the median of the samples; the ratios compare figures measured in the same run.
//!
//! Without `--bench` (as under `cargo test --benches`) the sizes shrink so it finishes in
//! seconds. `TANDEM_BENCH_HISTORY_TURNS` and `TANDEM_BENCH_HISTORY_THREADS` override the large
//! sizes.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tandem_host::MessageProcessor;
use tandem_host::in_process::{
    self, InProcessClientHandle, InProcessServerEvent, InProcessStartArgs,
};
use tandem_protocol::client_methods::{ThreadList, ThreadResume, ThreadUnsubscribe};
use tandem_protocol::{
    ApprovalPolicy, ClientRequest, RequestId, RequestMethod, ServerNotification, SessionSource,
    ThreadItem, ThreadStatus, Turn, TurnItemsView, TurnStatus, UserInput,
};
use tandem_server::store::{SqliteThreadStore, ThreadRecord, ThreadStore, new_id};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;

/// Upper bound for one request, so a regression fails instead of hanging.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Threads created concurrently per round while filling a store.
const FILL_CHUNK: usize = 5_000;

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let size = |var: &str, full: usize, quick_size: usize| {
        std::env::var(var)
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(if quick { quick_size } else { full })
    };
    let long_turns = size("TANDEM_BENCH_HISTORY_TURNS", 100_000, 1_000);
    let many_threads = size("TANDEM_BENCH_HISTORY_THREADS", 1_000_000, 5_000);
    let samples = if quick { 5 } else { 200 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    println!(
        "paged cold thread/resume (initialTurnsPage limit 10), SQLite store, median of {samples}"
    );
    let mut resume = Vec::new();
    for turns in [10, long_turns] {
        let home = tempfile::tempdir().expect("temp home");
        let began = Instant::now();
        let thread_id = runtime.block_on(fill_thread(home.path(), turns));
        let filled = began.elapsed();
        let median = runtime.block_on(resume_median(home.path(), &thread_id, samples));
        println!(
            "  {turns:>9} turns: {:>9.1} us   (store filled in {:.1} s)",
            micros(median),
            filled.as_secs_f64()
        );
        resume.push(median);
    }
    println!(
        "  ratio {long_turns} / 10 turns: {:.2}x (target <= 2x)",
        resume[1].as_secs_f64() / resume[0].as_secs_f64()
    );

    println!("thread/list first page (50, newest first), SQLite store, median of {samples}");
    let mut list = Vec::new();
    for threads in [1_000, many_threads] {
        let home = tempfile::tempdir().expect("temp home");
        let began = Instant::now();
        runtime.block_on(fill_threads(home.path(), threads));
        let filled = began.elapsed();
        let median = runtime.block_on(list_median(home.path(), samples));
        println!(
            "  {threads:>9} threads: {:>9.1} us   (store filled in {:.1} s)",
            micros(median),
            filled.as_secs_f64()
        );
        list.push(median);
    }
    println!(
        "  ratio {many_threads} / 1000 threads: {:.2}x (target <= 2x)",
        list[1].as_secs_f64() / list[0].as_secs_f64()
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn record(id: String, created_at: i64) -> ThreadRecord {
    ThreadRecord {
        id,
        name: None,
        preview: "hello".to_owned(),
        ephemeral: false,
        created_at,
        updated_at: created_at,
        status: ThreadStatus::Idle,
        cwd: "/bench".to_owned(),
        source: SessionSource::AppServer,
        forked_from_id: None,
        model: None,
        model_provider: "tandem".to_owned(),
        cli_version: "bench".to_owned(),
        approval_policy: ApprovalPolicy::Never,
        dynamic_tools: Vec::new(),
        config: Default::default(),
    }
}

/// A completed turn as the scripted agent leaves one: the input and the answer.
fn turn(n: usize) -> Turn {
    Turn {
        id: new_id(),
        items: vec![
            ThreadItem::UserMessage {
                id: new_id(),
                content: vec![UserInput::text(format!("request number {n}"))],
                client_id: None,
            },
            ThreadItem::AgentMessage {
                id: new_id(),
                text: format!("You said: \"request number {n}\""),
            },
        ],
        items_view: TurnItemsView::Full,
        status: TurnStatus::Completed,
        error: None,
        started_at: Some(1_700_000_000),
        completed_at: Some(1_700_000_001),
        duration_ms: Some(1_000),
    }
}

/// Stores one thread with `turns` turns under `home`; returns its id.
async fn fill_thread(home: &Path, turns: usize) -> String {
    let store = SqliteThreadStore::open(home).await.expect("store");
    let id = new_id();
    let history: Vec<Turn> = (0..turns).map(turn).collect();
    store
        .create_thread(&record(id.clone(), 1_700_000_000), &history)
        .await
        .expect("create");
    store.checkpoint().await.expect("checkpoint");
    id
}

/// Stores `count` threads without turns under `home`.
async fn fill_threads(home: &Path, count: usize) {
    let store = Arc::new(SqliteThreadStore::open(home).await.expect("store"));
    let mut created = 0;
    while created < count {
        let chunk = FILL_CHUNK.min(count - created);
        let writes = (created..created + chunk).map(|n| {
            let store = Arc::clone(&store);
            let record = record(new_id(), 1_600_000_000 + n as i64);
            tokio::spawn(async move { store.create_thread(&record, &[]).await })
        });
        for write in futures::future::join_all(writes).await {
            write.expect("task").expect("create");
        }
        created += chunk;
    }
    store.checkpoint().await.expect("checkpoint");
}

async fn start(home: &Path) -> InProcessClientHandle {
    let config = ServerConfig::builder()
        .tandem_home(home)
        .thread_unload_delay_secs(0);
    let options = ServerOptions::load(config).expect("options");
    let mut args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    );
    args.channel_capacity = 1024;
    in_process::start(args).await.expect("host")
}

async fn call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    id: &mut i64,
    params: Value,
) -> Value {
    *id += 1;
    let request = M::into_request(
        RequestId::Integer(*id),
        serde_json::from_value(params).expect("params"),
    );
    tokio::time::timeout(REQUEST_TIMEOUT, handle.request(request))
        .await
        .expect("answered in time")
        .expect("host")
        .unwrap_or_else(|error| panic!("{}: {error:?}", M::METHOD))
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The median time of a paged cold `thread/resume` of `thread_id`.
async fn resume_median(home: &Path, thread_id: &str, samples: usize) -> Duration {
    let mut handle = start(home).await;
    let mut id = 0;
    let mut times = Vec::with_capacity(samples);
    // The first round opens the database; it is not counted.
    for round in 0..=samples {
        let began = Instant::now();
        let reply = call::<ThreadResume>(
            &handle,
            &mut id,
            json!({"threadId": thread_id, "initialTurnsPage": {"limit": 10}}),
        )
        .await;
        let elapsed = began.elapsed();
        assert_eq!(
            reply["initialTurnsPage"]["data"].as_array().map(Vec::len),
            Some(10),
            "a page of ten turns"
        );
        if round > 0 {
            times.push(elapsed);
        }
        call::<ThreadUnsubscribe>(&handle, &mut id, json!({"threadId": thread_id})).await;
        wait_closed(&mut handle, thread_id).await;
    }
    handle.shutdown().await.expect("shutdown");
    median(times)
}

/// Waits for `thread/closed` of `thread_id`: the next resume is a cold one.
async fn wait_closed(handle: &mut InProcessClientHandle, thread_id: &str) {
    let closed = async {
        loop {
            if let InProcessServerEvent::ServerNotification(ServerNotification::ThreadClosed(
                closed,
            )) = handle.next_event().await.expect("event stream")
                && closed.thread_id == thread_id
            {
                return;
            }
        }
    };
    tokio::time::timeout(REQUEST_TIMEOUT, closed)
        .await
        .expect("the thread unloads");
}

/// The median time of the first `thread/list` page.
async fn list_median(home: &Path, samples: usize) -> Duration {
    let mut handle = start(home).await;
    let mut id = 0;
    let mut times = Vec::with_capacity(samples);
    for round in 0..=samples {
        let began = Instant::now();
        let reply = call::<ThreadList>(&handle, &mut id, json!({})).await;
        let elapsed = began.elapsed();
        assert_eq!(
            reply["data"].as_array().map(Vec::len),
            Some(50),
            "a full page"
        );
        if round > 0 {
            times.push(elapsed);
        }
    }
    handle.shutdown().await.expect("shutdown");
    median(times)
}
