//! Issue 27, point 6: PostgreSQL restarting under load. Two real `tandem app-server` processes
//! share a throwaway cluster of this test's own (the restart must not disturb the tests that
//! share a cluster), each running turns back to back on three threads; the database is
//! restarted with `pg_ctl restart -m fast` while they run, then stopped for longer than the
//! servers go on trying a write, then stopped with no load. Checked: every request is answered
//! and every turn ends within a bound (no server hangs); the fast restart costs no turn; a turn
//! whose write fails ends `failed` with the store's message and is stored so (never
//! `completed` with lost items, never left `inProgress`); requests made while the database is
//! down are answered -32603 with the store's message; new turns work on both servers
//! afterwards without restarting them; every lease is renewed by its holder once the database
//! is back; every item whose `item/completed` a client saw, and every turn it was told
//! completed, is in the database when read back.
//!
//! Skips (saying why) where PostgreSQL is not installed, unless `TANDEM_REQUIRE_POSTGRES=1`
//! (CI), which makes that a failure.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::client::Client;
use common::server::{AppServer, Launch};
use common::{PROMPT, within};
use serde_json::{Value, json};
use tandem_test_support::postgres::PostgresCluster;

/// The lease TTL: the servers go on trying a write for a third of it (4 s) while the database
/// cannot be reached, and no outage here comes near the whole of it.
const TTL_MS: u64 = 12_000;

/// The slow restart: longer than the servers' reconnect window.
const OUTAGE: Duration = Duration::from_millis(5_000);

/// Threads per server, each running one turn after another.
const THREADS: usize = 3;

/// The most any request may wait for its answer, and any turn for its `turn/completed`.
const ANSWER_BOUND: Duration = Duration::from_secs(15);

/// Each turn: five items (the input and four answers) over about 300 ms.
const TURN_TEXT: &str = "one\n/sleep 100\ntwo\n/sleep 100\nthree\n/sleep 100\nfour";

/// What the store's failures say (`StoreError::Postgres`, `PostgresPool`).
const STORE_MESSAGE: &str = "PostgreSQL thread store";

async fn started(test: &str, url: &str) -> (AppServer, Client) {
    let (server, client) = Launch::new(test)
        .args([
            "app-server".to_owned(),
            "-c".to_owned(),
            format!("store.url={url}"),
            "-c".to_owned(),
            format!("store.lease_ttl_ms={TTL_MS}"),
            // The owner must keep its threads through the restart: another server's resume is
            // refused at once and asks only at the owner's next renewal, as in issue 20 (with
            // the default wait, an idle owner would hand the thread over on request).
            "-c".to_owned(),
            "store.handoff_wait_ms=0".to_owned(),
        ])
        .env("TANDEM_LOG", "tandem_server=info")
        .stdio();
    let mut client = Client::Stdio(client);
    within(PROMPT, "initialize", client.initialize(false)).await;
    (server, client)
}

async fn ok(client: &mut Client, id: &str, method: &str, params: Value) -> Value {
    let answer = within(ANSWER_BOUND, method, client.call(id, method, params)).await;
    match answer.get("result") {
        Some(result) => result.clone(),
        None => panic!("{method} failed: {answer}"),
    }
}

/// One turn as the client saw it.
#[derive(Debug, Default)]
struct SeenTurn {
    thread_id: String,
    /// Items whose `item/completed` arrived.
    items: BTreeSet<String>,
    /// `turn/completed`'s status and error message.
    status: Option<String>,
    error: Option<String>,
    started: Option<Instant>,
}

/// What one server's client saw over the whole load.
#[derive(Debug, Default)]
struct Seen {
    turns: HashMap<String, SeenTurn>,
    /// `turn/start` answers that were errors.
    refused_starts: Vec<Value>,
    /// The longest a request waited for its answer.
    slowest_answer: Duration,
    /// The longest a turn took from its `turn/start` answer to its `turn/completed`.
    slowest_turn: Duration,
}

/// Runs turns back to back on `threads` until `stop`, then until every turn ended. `running`
/// counts this server's turns in flight, so that the test restarts the database under load.
async fn run_load(
    mut client: Client,
    threads: Vec<String>,
    stop: Arc<AtomicBool>,
    running: Arc<AtomicUsize>,
) -> (Client, Seen) {
    let mut seen = Seen::default();
    // Per thread: its running turn, or the request starting one (id, sent at), or neither.
    let mut turn_of: HashMap<String, Option<String>> =
        threads.iter().map(|id| (id.clone(), None)).collect();
    let mut starting: HashMap<String, (String, Instant)> = HashMap::new();
    let mut retry_at: HashMap<String, Instant> = HashMap::new();
    let mut next = 0u64;
    loop {
        if !stop.load(Ordering::SeqCst) {
            for thread_id in &threads {
                let idle = turn_of[thread_id].is_none()
                    && !starting.values().any(|(id, _)| id == thread_id)
                    && retry_at
                        .get(thread_id)
                        .is_none_or(|at| Instant::now() >= *at);
                if idle {
                    next += 1;
                    let request = format!("start-{next}");
                    client
                        .send(&json!({"id": request, "method": "turn/start", "params": {
                            "threadId": thread_id,
                            "input": [{"type": "text", "text": TURN_TEXT}],
                        }}))
                        .await;
                    starting.insert(request, (thread_id.clone(), Instant::now()));
                }
            }
        }
        let busy = turn_of.values().any(Option::is_some) || !starting.is_empty();
        if !busy {
            if stop.load(Ordering::SeqCst) {
                return (client, seen);
            }
            // Every thread waits to retry a refused start.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        let message = client.recv().await;
        if let Some(id) = message.get("id").and_then(Value::as_str)
            && let Some((thread_id, sent)) = starting.remove(id)
        {
            seen.slowest_answer = seen.slowest_answer.max(sent.elapsed());
            match message.get("result") {
                Some(result) => {
                    let turn_id = result["turn"]["id"].as_str().expect("turn id").to_owned();
                    running.fetch_add(1, Ordering::SeqCst);
                    seen.turns.insert(
                        turn_id.clone(),
                        SeenTurn {
                            thread_id: thread_id.clone(),
                            started: Some(Instant::now()),
                            ..SeenTurn::default()
                        },
                    );
                    turn_of.insert(thread_id, Some(turn_id));
                }
                None => {
                    seen.refused_starts.push(message);
                    retry_at.insert(thread_id, Instant::now() + Duration::from_millis(100));
                }
            }
            continue;
        }
        let params = &message["params"];
        match message.get("method").and_then(Value::as_str) {
            Some("item/completed") => {
                if let Some(turn) = seen.turns.get_mut(params["turnId"].as_str().unwrap_or("")) {
                    let item = params["item"]["id"].as_str().expect("item id");
                    turn.items.insert(item.to_owned());
                }
            }
            Some("turn/completed") => {
                let turn_id = params["turn"]["id"].as_str().expect("turn id");
                if let Some(turn) = seen.turns.get_mut(turn_id) {
                    turn.status = params["turn"]["status"].as_str().map(str::to_owned);
                    turn.error = params["turn"]["error"]["message"]
                        .as_str()
                        .map(str::to_owned);
                    let took = turn.started.map(|at| at.elapsed()).unwrap_or_default();
                    seen.slowest_turn = seen.slowest_turn.max(took);
                    turn_of.insert(turn.thread_id.clone(), None);
                    running.fetch_sub(1, Ordering::SeqCst);
                }
            }
            _ => {}
        }
    }
}

async fn new_threads(client: &mut Client, server: &str) -> Vec<String> {
    let mut threads = Vec::new();
    for n in 0..THREADS {
        let started = ok(
            client,
            &format!("thread-{server}-{n}"),
            "thread/start",
            json!({"approvalPolicy": "never"}),
        )
        .await;
        threads.push(started["thread"]["id"].as_str().expect("id").to_owned());
    }
    threads
}

/// A turn on `thread_id` that must complete.
async fn turn_completes(client: &mut Client, id: &str, thread_id: &str, server: &AppServer) {
    let turn = ok(
        client,
        id,
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "after the restart"}]}),
    )
    .await;
    let turn_id = turn["turn"]["id"].as_str().expect("turn id").to_owned();
    let ended = tokio::time::timeout(
        ANSWER_BOUND,
        client.notification("turn/completed", |params| params["turn"]["id"] == turn_id),
    )
    .await
    .unwrap_or_else(|_| panic!("no turn/completed; stderr:\n{}", server.stderr()));
    assert_eq!(
        ended["params"]["turn"]["status"],
        "completed",
        "{ended}\nstderr:\n{}",
        server.stderr()
    );
}

/// The other server is refused `thread_id`, naming its owner's pid: the owner still holds it.
async fn still_leased_by(client: &mut Client, id: &str, thread_id: &str, owner_pid: u32) {
    let answer = within(
        ANSWER_BOUND,
        "thread/resume",
        client.call(id, "thread/resume", json!({"threadId": thread_id})),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let owner = answer["error"]["data"]["owner"].as_str().expect("owner");
    assert!(owner.contains(&format!("/{owner_pid}/")), "{answer}");
}

/// Checks what `seen` was told against what the database holds (read through `client`).
async fn check_stored(client: &mut Client, seen: &Seen, threads: &[String]) {
    for (n, thread_id) in threads.iter().enumerate() {
        let read = ok(
            client,
            &format!("read-{thread_id}-{n}"),
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await;
        let stored: HashMap<&str, &Value> = read["thread"]["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .map(|turn| (turn["id"].as_str().expect("id"), turn))
            .collect();
        for turn in stored.values() {
            assert_ne!(turn["status"], "inProgress", "left running: {turn}");
        }
        for (turn_id, told) in seen.turns.iter().filter(|(_, t)| t.thread_id == *thread_id) {
            let turn = stored
                .get(turn_id.as_str())
                .unwrap_or_else(|| panic!("turn {turn_id} is not stored ({told:?})"));
            let items: BTreeSet<String> = turn["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|item| item["id"].as_str().expect("item id").to_owned())
                .collect();
            assert!(
                told.items.is_subset(&items),
                "turn {turn_id}: items reported completed are missing: told {:?}, stored {items:?}",
                told.items
            );
            match told.status.as_deref() {
                Some("completed") => assert_eq!(turn["status"], "completed", "{turn}"),
                Some("failed") => {
                    let message = told.error.as_deref().unwrap_or_default();
                    assert!(message.contains(STORE_MESSAGE), "{told:?}");
                    assert_eq!(turn["status"], "failed", "{turn}");
                    assert_eq!(turn["error"]["message"], message, "{turn}");
                }
                other => panic!("turn {turn_id} ended {other:?}: {told:?}"),
            }
        }
    }
}

/// A `turn/start` on `thread_id` and a `thread/list`, sent together; their answers.
async fn refused_while_down(client: &mut Client, thread_id: &str) -> [Value; 2] {
    client
        .send(
            &json!({"id": "down-turn", "method": "turn/start", "params": {
                "threadId": thread_id,
                "input": [{"type": "text", "text": "refused"}],
            }}),
        )
        .await;
    client
        .send(&json!({"id": "down-list", "method": "thread/list", "params": {}}))
        .await;
    let turn = within(
        ANSWER_BOUND,
        "turn/start while down",
        client.answer("down-turn"),
    )
    .await;
    let list = within(
        ANSWER_BOUND,
        "thread/list while down",
        client.answer("down-list"),
    )
    .await;
    [turn, list]
}

/// Runs turns on both servers' threads, waits until turns run on both, has `outage` happen to
/// the database (on a blocking task), keeps the load on for `after`, then lets every turn
/// end. Returns the clients and what each saw.
async fn under_load(
    (alice, a_threads): (Client, &[String]),
    (bob, b_threads): (Client, &[String]),
    outage: impl FnOnce() + Send + 'static,
    after: Duration,
) -> ((Client, Seen), (Client, Seen)) {
    let stop = Arc::new(AtomicBool::new(false));
    let (a_running, b_running) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let a_load = tokio::spawn(run_load(
        alice,
        a_threads.to_vec(),
        Arc::clone(&stop),
        Arc::clone(&a_running),
    ));
    let b_load = tokio::spawn(run_load(
        bob,
        b_threads.to_vec(),
        Arc::clone(&stop),
        Arc::clone(&b_running),
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    within(PROMPT, "turns running on both servers", async {
        while a_running.load(Ordering::SeqCst) == 0 || b_running.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let in_flight = (
        a_running.load(Ordering::SeqCst),
        b_running.load(Ordering::SeqCst),
    );
    let began = Instant::now();
    within(PROMPT, "the outage", tokio::task::spawn_blocking(outage))
        .await
        .expect("outage task");
    eprintln!(
        "outage of {:?} with {in_flight:?} turns in flight",
        began.elapsed()
    );
    tokio::time::sleep(after).await;
    stop.store(true, Ordering::SeqCst);
    let a = within(Duration::from_secs(60), "A's load to end", a_load)
        .await
        .expect("A's load");
    let b = within(Duration::from_secs(60), "B's load to end", b_load)
        .await
        .expect("B's load");
    (a, b)
}

fn failed_turns(seen: &Seen) -> usize {
    seen.turns
        .values()
        .filter(|turn| turn.status.as_deref() == Some("failed"))
        .count()
}

/// No request waited past the bound and no turn ran past it; a refused start names the store.
fn check_answers(server: &str, seen: &Seen) {
    let summary = format!(
        "{server}: {} turns ({} failed), {} refused starts, slowest answer {:?}, slowest turn {:?}",
        seen.turns.len(),
        failed_turns(seen),
        seen.refused_starts.len(),
        seen.slowest_answer,
        seen.slowest_turn
    );
    eprintln!("{summary}");
    assert!(seen.slowest_answer < ANSWER_BOUND, "{summary}");
    assert!(seen.slowest_turn < ANSWER_BOUND, "{summary}");
    for refused in &seen.refused_starts {
        assert_eq!(refused["error"]["code"], -32603, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(STORE_MESSAGE), "{refused}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarting_under_load_loses_nothing_acknowledged_and_hangs_nothing() {
    let Some(cluster) = PostgresCluster::private() else {
        return;
    };
    let cluster = Arc::new(cluster);
    let (database, url) = cluster.create_named_database();
    let (a, mut alice) = started("pg-restart-a", &url).await;
    let (b, mut bob) = started("pg-restart-b", &url).await;
    let a_threads = new_threads(&mut alice, "a").await;
    let b_threads = new_threads(&mut bob, "b").await;

    // `pg_ctl restart -m fast` while turns run: shorter than the servers' reconnect window,
    // so it costs nothing.
    let restarting = Arc::clone(&cluster);
    let ((alice, fast_a), (bob, fast_b)) = under_load(
        (alice, &a_threads),
        (bob, &b_threads),
        move || restarting.restart_fast().expect("pg_ctl restart"),
        Duration::from_millis(1_000),
    )
    .await;
    check_answers("fast restart, A", &fast_a);
    check_answers("fast restart, B", &fast_b);
    for seen in [&fast_a, &fast_b] {
        assert_eq!(failed_turns(seen), 0, "{seen:?}");
        assert!(seen.refused_starts.is_empty(), "{seen:?}");
    }

    // A restart longer than the window: the turns whose writes fail end failed with the
    // store's message, and are stored so once the database is back.
    let stopping = Arc::clone(&cluster);
    let ((mut alice, slow_a), (mut bob, slow_b)) = under_load(
        (alice, &a_threads),
        (bob, &b_threads),
        move || {
            stopping.stop_fast().expect("pg_ctl stop");
            std::thread::sleep(OUTAGE);
            stopping.start_again().expect("pg_ctl start");
        },
        Duration::from_millis(1_500),
    )
    .await;
    let back_ms: i64 = cluster
        .sql_in(
            &database,
            "SELECT (extract(epoch FROM now()) * 1000)::bigint",
        )
        .expect("the database's clock")
        .parse()
        .expect("milliseconds");
    check_answers("slow restart, A", &slow_a);
    check_answers("slow restart, B", &slow_b);
    assert!(
        failed_turns(&slow_a) + failed_turns(&slow_b) > 0,
        "no turn was running when the writes failed"
    );

    // Every lease is renewed after the database came back, by the server that held it.
    let ids: Vec<String> = a_threads
        .iter()
        .chain(&b_threads)
        .map(|id| format!("'{id}'"))
        .collect();
    let renewed = format!(
        "SELECT count(*) FROM thread_leases WHERE thread_id IN ({}) \
         AND (extract(epoch FROM expires_at) * 1000)::bigint - {TTL_MS} > {back_ms}",
        ids.join(", ")
    );
    within(
        Duration::from_millis(TTL_MS),
        "every lease renewed after the restart",
        async {
            while cluster.sql_in(&database, &renewed).expect("leases") != ids.len().to_string() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        },
    )
    .await;

    // Requests that need the database while it is down are answered, within the bound, with
    // the store's message; both servers at once, so that the outage stays well inside the
    // leases' TTL.
    cluster.stop_fast().expect("pg_ctl stop");
    let began = Instant::now();
    let (a_answers, b_answers) = tokio::join!(
        refused_while_down(&mut alice, &a_threads[0]),
        refused_while_down(&mut bob, &b_threads[0]),
    );
    eprintln!(
        "requests refused {:?} after the database stopped",
        began.elapsed()
    );
    cluster.start_again().expect("pg_ctl start");
    for answer in a_answers.iter().chain(&b_answers) {
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(STORE_MESSAGE), "{answer}");
    }

    // New turns work on both servers without restarting them.
    for (n, thread_id) in a_threads.iter().enumerate() {
        turn_completes(&mut alice, &format!("after-a-{n}"), thread_id, &a).await;
    }
    for (n, thread_id) in b_threads.iter().enumerate() {
        turn_completes(&mut bob, &format!("after-b-{n}"), thread_id, &b).await;
    }
    for (n, thread_id) in a_threads.iter().enumerate() {
        still_leased_by(&mut bob, &format!("steal-a-{n}"), thread_id, a.pid).await;
    }
    for (n, thread_id) in b_threads.iter().enumerate() {
        still_leased_by(&mut alice, &format!("steal-b-{n}"), thread_id, b.pid).await;
    }

    // Everything acknowledged is in the database, read from the other server.
    for seen in [&fast_a, &slow_a] {
        check_stored(&mut bob, seen, &a_threads).await;
    }
    for seen in [&fast_b, &slow_b] {
        check_stored(&mut alice, seen, &b_threads).await;
    }
    drop((alice, bob));
    a.terminate().await;
    b.terminate().await;
}
