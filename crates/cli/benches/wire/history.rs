//! `--history` (issue 31, point 3): what a long history costs a client that pages it, measured
//! over stdio against `tandem app-server`, on SQLite and (where PostgreSQL is installed) on a
//! throwaway PostgreSQL cluster, for threads of 10, 2 000 and 100 000 turns:
//!
//! - a cold `thread/resume` with `initialTurnsPage: {limit: 10}`: between samples the client
//!   unsubscribes and waits for `thread/closed` (unload delay 0), so each resume loads the
//!   thread from the store again;
//! - a `thread/turns/list` page (4 turns) and a `thread/items/list` page (8 items), newest
//!   first from a cursor in the middle of the history, and the newest `thread/items/list` page
//!   (20 items).
//!
//! Each figure is the median time from writing the request to reading its answer; the ratios
//! divide by the 10-turn figure of the same store in the same run (target: at most 1.5x).
//! Every size has its own server, and the sizes take turns sample by sample, so that a burst
//! of load on a shared machine (which moved whole medians by 3-5x when each size was measured
//! in a block of its own) falls on all of them alike. The
//! threads are written through the store API before the server starts, each in one
//! transaction (`create_thread` with its whole history). A PostgreSQL database then gets the
//! `VACUUM ANALYZE` autovacuum would run on its own within a minute of such a fill: measured
//! without it (`--fresh-stats`), autovacuum's pass over the 300 000 new rows ran during the
//! samples of the 100 000-turn thread and took the CPU they were timed on (issue 31). A thread
//! that grows turn by turn is analyzed as it grows. The statements a cold resume runs are
//! pinned on a database never analyzed too (`plan_tests`), but for its pages, which such a
//! database can still plan as a sort of the whole thread (docs/performance.md, issue 31,
//! second pass).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tandem_protocol::client_methods::{
    ThreadItemsList, ThreadResume, ThreadTurnsList, ThreadUnsubscribe,
};
use tandem_protocol::wire::{ClientMessage, ServerMessage};
use tandem_protocol::{
    ApprovalPolicy, ClientRequest, RequestId, RequestMethod, ServerNotification, SessionSource,
    ThreadItem, ThreadStatus, Turn, TurnItemsView, TurnStatus, UserInput,
};
use tandem_server::store::{
    LeaseSettings, PostgresThreadStore, SqliteThreadStore, ThreadRecord, ThreadStore, new_id,
};
use tandem_test_support::postgres::PostgresCluster;

use crate::client::{WireClient, WireError, fresh_home};

/// The target of issue 31: every figure within this many times its 10-turn figure.
const TARGET: f64 = 1.5;

/// Turns in the resume page, and items in the newest items page (two per turn).
const PAGE: usize = 10;

/// Turns in a page from the middle, and twice as many items: as many turns as sit before the
/// middle of a 10-turn thread, so the page is full on every thread.
const MIDDLE_PAGE: usize = 4;

/// The figures, in the order [`measure`] returns them.
const FIGURES: [&str; 4] = [
    "cold thread/resume (page of 10)",
    "thread/turns/list from the middle",
    "thread/items/list from the middle",
    "thread/items/list newest page",
];

/// Where the threads are stored.
#[derive(Clone, Copy, PartialEq)]
enum Store {
    Sqlite,
    Postgres,
}

/// Runs the history figures with `tandem` (the binary) and prints them.
pub(crate) async fn run(tandem: &str, full: bool, analyze: bool) -> Result<(), WireError> {
    let sizes: &[usize] = if full {
        &[10, 2_000, 100_000]
    } else {
        &[10, 200]
    };
    let samples = if full { 100 } else { 3 };
    let cluster = PostgresCluster::shared();
    let mut stores = vec![Store::Sqlite];
    if cluster.is_some() {
        stores.push(Store::Postgres);
    } else {
        println!("history: no PostgreSQL found; SQLite only");
    }
    for store in stores {
        let name = match store {
            Store::Sqlite => "SQLite",
            Store::Postgres => "PostgreSQL",
        };
        println!(
            "history over stdio, {name} store, median of {samples}, the sizes taking turns \
             sample by sample (target <= {TARGET}x)"
        );
        // Every size is written and served first, then sampled in turn, so that a burst of
        // load on the shared machine falls on every size alike instead of on one of them.
        let mut served = Vec::with_capacity(sizes.len());
        for &turns in sizes {
            let home = fresh_home().expect("a bench home");
            let database = cluster.map(PostgresCluster::create_named_database);
            let url = database.as_ref().map(|(_, url)| url.clone());
            let began = Instant::now();
            let thread_id = fill(&home, store, url.as_deref(), turns).await;
            let filled = began.elapsed();
            if let (Store::Postgres, Some(cluster), Some((name, _)), true) =
                (store, cluster, &database, analyze)
            {
                cluster
                    .sql_in(name, "VACUUM ANALYZE")
                    .map_err(|detail| WireError::Protocol {
                        command: format!("psql {name} -c 'VACUUM ANALYZE'"),
                        detail,
                    })?;
            }
            let mut argv = vec![
                tandem.to_owned(),
                "app-server".to_owned(),
                "--listen".to_owned(),
                "stdio://".to_owned(),
                "-c".to_owned(),
                "thread_unload_delay_secs=0".to_owned(),
            ];
            if let Some(url) = url.filter(|_| store == Store::Postgres) {
                argv.push("-c".to_owned());
                argv.push(format!("store.url=\"{url}\""));
            }
            let client = WireClient::stdio_in(&argv, home).await?;
            served.push(Served {
                turns,
                thread_id,
                filled,
                client,
                times: Default::default(),
            });
        }
        measure(&mut served, samples).await?;
        let base = served[0].medians();
        for size in served {
            let medians = size.medians();
            println!(
                "  {:>7} turns (stored in {:.1} s):",
                size.turns,
                size.filled.as_secs_f64()
            );
            for (index, figure) in FIGURES.iter().enumerate() {
                let ratio = medians[index].as_secs_f64() / base[index].as_secs_f64();
                let verdict = if size.turns == sizes[0] {
                    String::new()
                } else if ratio <= TARGET {
                    format!("  {ratio:.2}x of 10 turns, met")
                } else {
                    format!("  {ratio:.2}x of 10 turns, MISSED")
                };
                println!(
                    "      {figure:<36} {:>9.1} us{verdict}",
                    medians[index].as_secs_f64() * 1e6
                );
            }
            size.client.close().await;
        }
    }
    Ok(())
}

/// One size's thread, its server and the samples taken of it.
struct Served {
    turns: usize,
    thread_id: String,
    filled: Duration,
    client: WireClient,
    /// The samples of each of the [`FIGURES`].
    times: [Vec<Duration>; 4],
}

impl Served {
    fn medians(&self) -> [Duration; 4] {
        self.times.clone().map(median)
    }
}

/// A thread record as `thread/start` leaves one.
fn record(id: String) -> ThreadRecord {
    ThreadRecord {
        id,
        name: None,
        preview: "request number 0".into(),
        ephemeral: false,
        created_at: 1_700_000_000,
        updated_at: 1_700_000_000,
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

/// The id of turn number `n` of a generated thread.
fn turn_id(n: usize) -> String {
    format!("bench-turn-{n:09}")
}

/// A completed turn as the scripted agent leaves one: the input and the answer.
fn turn(n: usize) -> Turn {
    Turn {
        id: turn_id(n),
        items: vec![
            ThreadItem::UserMessage {
                id: format!("bench-input-{n:09}"),
                content: vec![UserInput::text(format!("request number {n}"))],
                client_id: None,
            },
            ThreadItem::AgentMessage {
                id: format!("bench-answer-{n:09}"),
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

/// Stores a thread of `turns` turns in `store` (SQLite under `home`, or the PostgreSQL
/// database at `url`) in one transaction; returns its id.
async fn fill(home: &Path, store: Store, url: Option<&str>, turns: usize) -> String {
    let id = new_id();
    let history: Vec<Turn> = (1..=turns).map(turn).collect();
    let thread = record(id.clone());
    match store {
        Store::Sqlite => {
            let store = SqliteThreadStore::open(home).await.expect("SQLite store");
            store
                .create_thread(&thread, &history)
                .await
                .expect("stored");
            store.checkpoint().await.expect("checkpoint");
        }
        Store::Postgres => {
            let settings = LeaseSettings::for_this_process(Duration::from_secs(30));
            let store = PostgresThreadStore::connect(url.expect("a database"), settings)
                .await
                .expect("PostgreSQL store");
            store
                .create_thread(&thread, &history)
                .await
                .expect("stored");
        }
    }
    id
}

/// Sends `params` as request `M` and waits for its answer; collects nothing else.
async fn call<M: RequestMethod<Request = ClientRequest>>(
    client: &mut WireClient,
    params: Value,
) -> Result<Value, WireError> {
    let id = client.next_request_id();
    let request = M::into_request(
        RequestId::Integer(id),
        serde_json::from_value(params).expect("params"),
    );
    client.queue(&ClientMessage::Request(request));
    client.flush().await?;
    loop {
        match client.next().await? {
            ServerMessage::Response {
                id: RequestId::Integer(answered),
                result,
            } if answered == id => return Ok(result),
            ServerMessage::Error { error, .. } => {
                return Err(client.protocol_error(format!("{}: {error:?}", M::METHOD)));
            }
            _ => {}
        }
    }
}

/// Waits for `thread/closed` of `thread_id`.
async fn closed(client: &mut WireClient, thread_id: &str) -> Result<(), WireError> {
    loop {
        if let ServerMessage::Notification {
            notification: ServerNotification::ThreadClosed(closed),
            ..
        } = client.next().await?
            && closed.thread_id == thread_id
        {
            return Ok(());
        }
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Takes `samples` of each of the [`FIGURES`] on every size, the sizes in turn (see `run`).
/// The first round of each figure (the store opening, statements prepared) is not counted.
async fn measure(served: &mut [Served], samples: usize) -> Result<(), WireError> {
    for round in 0..=samples {
        for size in served.iter_mut() {
            let elapsed = resume_sample(&mut size.client, &size.thread_id).await?;
            if round > 0 {
                size.times[0].push(elapsed);
            }
        }
    }
    for figure in 0..3 {
        for round in 0..=samples {
            for size in served.iter_mut() {
                let elapsed =
                    page_sample(&mut size.client, &size.thread_id, size.turns, figure).await?;
                if round > 0 {
                    size.times[figure + 1].push(elapsed);
                }
            }
        }
    }
    Ok(())
}

/// One cold `thread/resume` of `thread_id` (not loaded), then its unload.
async fn resume_sample(client: &mut WireClient, thread_id: &str) -> Result<Duration, WireError> {
    let began = Instant::now();
    let reply = call::<ThreadResume>(
        client,
        json!({"threadId": thread_id, "initialTurnsPage": {"limit": PAGE}}),
    )
    .await?;
    let elapsed = began.elapsed();
    let page = reply["initialTurnsPage"]["data"].as_array().map(Vec::len);
    if page != Some(PAGE) {
        return Err(client.protocol_error(format!("a resume page of {page:?} turns")));
    }
    call::<ThreadUnsubscribe>(client, json!({"threadId": thread_id})).await?;
    closed(client, thread_id).await?;
    Ok(elapsed)
}

/// One page of figure `figure + 1` of the [`FIGURES`] on `thread_id` (of `turns` turns).
async fn page_sample(
    client: &mut WireClient,
    thread_id: &str,
    turns: usize,
    figure: usize,
) -> Result<Duration, WireError> {
    let middle = turn_id(turns / 2);
    let (params, expected) = match figure {
        0 => (
            json!({"threadId": thread_id, "cursor": middle, "limit": MIDDLE_PAGE,
                   "itemsView": "full"}),
            MIDDLE_PAGE,
        ),
        1 => (
            json!({"threadId": thread_id, "cursor": format!("{middle}/0"),
                   "limit": 2 * MIDDLE_PAGE, "sortDirection": "desc"}),
            2 * MIDDLE_PAGE,
        ),
        _ => (
            json!({"threadId": thread_id, "limit": 2 * PAGE, "sortDirection": "desc"}),
            2 * PAGE,
        ),
    };
    let began = Instant::now();
    let reply = if figure == 0 {
        call::<ThreadTurnsList>(client, params).await?
    } else {
        call::<ThreadItemsList>(client, params).await?
    };
    let elapsed = began.elapsed();
    let got = reply["data"].as_array().map(Vec::len);
    if got != Some(expected) {
        return Err(client.protocol_error(format!(
            "{}: a page of {got:?}, expected {expected}",
            FIGURES[figure + 1]
        )));
    }
    Ok(elapsed)
}
