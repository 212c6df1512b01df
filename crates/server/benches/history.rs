//! `cargo bench -p tandem-server --bench history`: what a long history costs a client that
//! pages it (issue 16), through the in-process host on the durable SQLite store.
//!
//! - `thread/resume` with `initialTurnsPage: {limit: 10}` of a thread that is not loaded, for a
//!   thread of 10 turns and one of 100 000; the target is the long one within 2x of the short.
//!   Between samples the client unsubscribes and waits for `thread/closed` (unload delay 0),
//!   so every sample is a cold resume.
//! - On the same two threads, a page (4 turns, or their 8 items) from the middle of the
//!   history: `thread/turns/list` and `thread/items/list`, newest first from a cursor, and the
//!   newest page of `thread/items/list`; each should cost the same on both threads.
//! - The first page of `thread/list` (50 threads, newest first) with 1 000 threads stored and
//!   with 1 000 000; the target is within 2x.
//!
//! The stores are generated in SQL, not by running turns: one thread (with one turn, for the
//! history figures) is created through the store API, then its rows are copied in one
//! transaction with new ids (`INSERT ... SELECT` over a counter), so the generated rows are
//! exactly what the store writes. Each figure is the median of the samples; the ratios
//! compare figures measured in the same run.
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
use tandem_protocol::client_methods::{
    ThreadItemsList, ThreadList, ThreadResume, ThreadTurnsList, ThreadUnsubscribe,
};
use tandem_protocol::{
    ApprovalPolicy, ClientRequest, RequestId, RequestMethod, ServerNotification, SessionSource,
    ThreadItem, ThreadStatus, Turn, TurnItemsView, TurnStatus, UserInput,
};
use tandem_server::store::{SqliteThreadStore, ThreadRecord, ThreadStore, new_id};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tokio::runtime::Runtime;

/// Upper bound for one request, so a regression fails instead of hanging.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Turns in a history page figure: as many as sit before the middle of a 10-turn thread, so
/// that the page is full on both threads.
const PAGE_TURNS: usize = 4;

/// The history page figures, in the order [`page_medians`] returns them.
const PAGE_FIGURES: [&str; 3] = [
    "thread/turns/list from the middle",
    "thread/items/list from the middle",
    "thread/items/list newest page",
];

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
    let mut pages = Vec::new();
    for turns in [10, long_turns] {
        let home = tempfile::tempdir().expect("temp home");
        let began = Instant::now();
        let thread_id = fill_thread(&runtime, home.path(), turns);
        let filled = began.elapsed();
        let median = runtime.block_on(resume_median(home.path(), &thread_id, samples));
        println!(
            "  {turns:>9} turns: {:>9.1} us   (store filled in {:.1} s)",
            micros(median),
            filled.as_secs_f64()
        );
        resume.push(median);
        pages.push(runtime.block_on(page_medians(home.path(), &thread_id, turns, samples)));
    }
    println!(
        "  ratio {long_turns} / 10 turns: {:.2}x (target <= 2x)",
        ratio(resume[1], resume[0])
    );
    println!(
        "history pages of {PAGE_TURNS} turns or {} items (thread not loaded), median of {samples}",
        2 * PAGE_TURNS
    );
    for (index, name) in PAGE_FIGURES.iter().enumerate() {
        println!(
            "  {name:<36} {:>9.1} us at 10 turns, {:>9.1} us at {long_turns}: {:.2}x (target <= 2x)",
            micros(pages[0][index]),
            micros(pages[1][index]),
            ratio(pages[1][index], pages[0][index])
        );
    }

    println!("thread/list first page (50, newest first), SQLite store, median of {samples}");
    let mut list = Vec::new();
    for threads in [1_000, many_threads] {
        let home = tempfile::tempdir().expect("temp home");
        let began = Instant::now();
        fill_threads(&runtime, home.path(), threads);
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
        ratio(list[1], list[0])
    );
}

fn ratio(long: Duration, short: Duration) -> f64 {
    long.as_secs_f64() / short.as_secs_f64()
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn record(id: String, created_at: i64) -> ThreadRecord {
    ThreadRecord {
        id,
        name: None,
        preview: "hello".to_owned().into(),
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
        archived_at: None,
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
                text: format!("You said: \"request number {n}\"").into(),
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

/// The id of the generated turn number `n` (from 2; turn 1 is the one the store wrote).
fn generated_turn_id(n: usize) -> String {
    format!("bench-turn-{n:09}")
}

/// The columns of `table` other than `replaced`, comma-separated, read from the schema so
/// that the generator copies whatever the store writes.
fn other_columns(connection: &rusqlite::Connection, table: &str, replaced: &[&str]) -> String {
    let columns: Vec<String> = connection
        .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
        .expect("table info")
        .query_map([], |row| row.get(0))
        .expect("columns")
        .collect::<Result<_, _>>()
        .expect("column names");
    columns
        .into_iter()
        .filter(|column| !replaced.contains(&column.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Opens the store under `home` (creating its schema) for `create` to write the template
/// rows through the store API, then returns a raw connection to copy them.
fn store_with(
    runtime: &Runtime,
    home: &Path,
    create: impl AsyncFnOnce(&SqliteThreadStore),
) -> rusqlite::Connection {
    let store = SqliteThreadStore::open_blocking(home).expect("store");
    runtime.block_on(create(&store));
    let path = store.database_path().to_owned();
    drop(store);
    rusqlite::Connection::open(path).expect("raw connection")
}

/// Stores one thread with `turns` turns under `home`; returns its id. The first turn goes
/// through the store; the others are copies of its rows with new ids.
fn fill_thread(runtime: &Runtime, home: &Path, turns: usize) -> String {
    let id = new_id();
    let template = turn(0);
    let mut connection = store_with(runtime, home, async |store| {
        let record = record(id.clone(), 1_700_000_000);
        store
            .create_thread(&record, std::slice::from_ref(&template))
            .await
            .expect("create");
    });
    let turn_columns = other_columns(&connection, "turns", &["id", "seq"]);
    let item_columns = other_columns(&connection, "items", &["turn_id", "item"]);
    let item_values = item_columns
        .split(", ")
        .map(|column| format!("i.{column}"))
        .collect::<Vec<_>>()
        .join(", ");
    let transaction = connection.transaction().expect("transaction");
    transaction
        .execute(
            &format!(
                "WITH RECURSIVE n(value) AS (SELECT 2 UNION ALL SELECT value + 1 FROM n \
                 WHERE value < ?2) \
                 INSERT INTO turns (id, seq, {turn_columns}) \
                 SELECT printf('bench-turn-%09d', n.value), n.value, {turn_columns} \
                 FROM n CROSS JOIN (SELECT * FROM turns WHERE id = ?1)"
            ),
            rusqlite::params![template.id, turns as i64],
        )
        .expect("copy turns");
    // Each copied item gets an id of its own (the template's with the turn number added).
    transaction
        .execute(
            &format!(
                "INSERT INTO items (turn_id, item, {item_columns}) \
                 SELECT t.id, replace(i.item, json_extract(i.item, '$.id'), \
                 json_extract(i.item, '$.id') || '-' || t.seq), {item_values} \
                 FROM turns AS t CROSS JOIN (SELECT * FROM items WHERE turn_id = ?1) AS i \
                 WHERE t.thread_id = ?2 AND t.seq > 1"
            ),
            rusqlite::params![template.id, id],
        )
        .expect("copy items");
    transaction.commit().expect("commit");
    checkpoint(&connection);
    id
}

/// Moves the generated rows from the log into the database file, as a store that has been
/// shut down holds them.
fn checkpoint(connection: &rusqlite::Connection) {
    connection
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
}

/// Stores `count` threads without turns under `home`: one through the store, the others
/// copies of its row with new ids, each created one second after the previous one.
fn fill_threads(runtime: &Runtime, home: &Path, count: usize) {
    let template = record(new_id(), 1_600_000_000);
    let connection = store_with(runtime, home, async |store| {
        store.create_thread(&template, &[]).await.expect("create");
    });
    let columns = other_columns(&connection, "threads", &["id", "created_at", "updated_at"]);
    connection
        .execute(
            &format!(
                "WITH RECURSIVE n(value) AS (SELECT 2 UNION ALL SELECT value + 1 FROM n \
                 WHERE value < ?2) \
                 INSERT INTO threads (id, created_at, updated_at, {columns}) \
                 SELECT printf('00000000-0000-7000-8000-%012d', n.value), \
                 1600000000 + n.value, 1600000000 + n.value, {columns} \
                 FROM n CROSS JOIN (SELECT * FROM threads WHERE id = ?1)"
            ),
            rusqlite::params![template.id, count as i64],
        )
        .expect("copy threads");
    checkpoint(&connection);
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

/// The medians of the [`PAGE_FIGURES`] on `thread_id` (of `turns` turns, not loaded): pages
/// of [`PAGE_TURNS`] turns (or their items) newest first, from a cursor in the middle of the
/// history and from the newest end.
async fn page_medians(home: &Path, thread_id: &str, turns: usize, samples: usize) -> [Duration; 3] {
    let mut handle = start(home).await;
    let mut id = 0;
    let middle = generated_turn_id(turns / 2);
    let requests = [
        json!({"threadId": thread_id, "cursor": middle, "limit": PAGE_TURNS, "itemsView": "full"}),
        json!({"threadId": thread_id, "cursor": format!("{middle}/0"), "limit": 2 * PAGE_TURNS,
               "sortDirection": "desc"}),
        json!({"threadId": thread_id, "limit": 2 * PAGE_TURNS, "sortDirection": "desc"}),
    ];
    let mut medians = [Duration::ZERO; 3];
    for (figure, params) in requests.into_iter().enumerate() {
        let mut times = Vec::with_capacity(samples);
        for round in 0..=samples {
            let began = Instant::now();
            let reply = if figure == 0 {
                call::<ThreadTurnsList>(&handle, &mut id, params.clone()).await
            } else {
                call::<ThreadItemsList>(&handle, &mut id, params.clone()).await
            };
            let elapsed = began.elapsed();
            // Every turn holds two items.
            let expected = if figure == 0 {
                PAGE_TURNS
            } else {
                2 * PAGE_TURNS
            };
            assert_eq!(
                reply["data"].as_array().map(Vec::len),
                Some(expected),
                "{}: a full page",
                PAGE_FIGURES[figure]
            );
            if round > 0 {
                times.push(elapsed);
            }
        }
        medians[figure] = median(times);
    }
    handle.shutdown().await.expect("shutdown");
    medians
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
