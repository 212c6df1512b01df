//! Issue 20: two real `tandem app-server` processes on one throwaway PostgreSQL cluster
//! (`-c store.url=...`, a short `store.lease_ttl_ms`), and the writer lease between them:
//! exclusion with the reference's -32600, a race on fresh threads, handoff after an idle
//! unload, fencing of a paused owner, the database terminating the owner's connections, and
//! failover after SIGKILL. Plus the same exclusion on SQLite for two servers sharing a home.
//! Issue 32's resume that waits for the handoff is in `app_server_postgres_handoff.rs`.
//!
//! Each test skips (saying why) where PostgreSQL is not installed, unless
//! `TANDEM_REQUIRE_POSTGRES=1` (CI), which makes that a failure.

mod common;

use std::time::{Duration, Instant};

use common::client::Client;
use common::postgres::*;
use common::server::{AppServer, Launch, fresh_home};
use nix::sys::signal::Signal;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_has_one_writer_and_every_server_reads_it() {
    let Some(cluster) = cluster() else { return };
    let url = cluster.create_database();
    let (a, mut alice) = started("pg-exclusion-a", &url, 30_000, 600).await;
    let (_b, mut bob) = started("pg-exclusion-b", &url, 30_000, 600).await;
    let thread_id = new_thread(&mut alice, "t").await;
    let turn_id = start_turn(&mut alice, "turn", &thread_id, "hello from a").await;
    assert_eq!(completed(&mut alice, &turn_id).await["status"], "completed");

    let answer = bob
        .call("resume", "thread/resume", json!({"threadId": thread_id}))
        .await;
    assert_leased_elsewhere(&answer, &thread_id, a.pid);
    // Reading, listing and paging work from the other server.
    let turns = turns_of(&mut bob, "read", &thread_id).await;
    assert_eq!(turns.len(), 1);
    let listed = bob.ok("list", "thread/list", json!({})).await;
    assert!(
        listed["data"]
            .as_array()
            .expect("data")
            .iter()
            .any(|thread| thread["id"] == thread_id),
        "{listed}"
    );
    let page = bob
        .ok(
            "turns",
            "thread/turns/list",
            json!({"threadId": thread_id, "limit": 5}),
        )
        .await;
    assert_eq!(page["data"].as_array().expect("data").len(), 1, "{page}");
    // A write through the other server is refused the same way.
    let renamed = bob
        .call(
            "name",
            "thread/name/set",
            json!({"threadId": thread_id, "name": "bob's"}),
        )
        .await;
    assert!(is_leased_elsewhere(&renamed), "{renamed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_servers_each_win_a_thread_exactly_once() {
    const THREADS: usize = 20;
    let Some(cluster) = cluster() else { return };
    let url = cluster.create_database();
    let (_a, mut alice) = started("pg-race-a", &url, 30_000, 0).await;
    let (_b, mut bob) = started("pg-race-b", &url, 30_000, 0).await;
    // Fresh threads, created by A and handed back at once: unsubscribing unloads them
    // (delay 0), which releases their leases.
    let mut threads = Vec::new();
    for n in 0..THREADS {
        let id = new_thread(&mut alice, &format!("start-{n}")).await;
        alice
            .ok(
                format!("unsub-{n}"),
                "thread/unsubscribe",
                json!({"threadId": id}),
            )
            .await;
        threads.push(id);
    }
    // The unloads run concurrently: their notifications come in any order.
    let mut open: std::collections::HashSet<&String> = threads.iter().collect();
    while !open.is_empty() {
        let closed = alice
            .notification("thread/closed", |params| {
                open.iter().any(|id| params["threadId"] == **id)
            })
            .await;
        open.retain(|id| closed["params"]["threadId"] != **id);
    }
    // Both servers ask for every thread at once.
    for (n, id) in threads.iter().enumerate() {
        let resume =
            common::client::request(format!("r-{n}"), "thread/resume", json!({"threadId": id}));
        alice.send(&resume).await;
        bob.send(&resume).await;
    }
    let mut winners = Vec::new();
    for (n, id) in threads.iter().enumerate() {
        let from_a = alice.answer(format!("r-{n}")).await;
        let from_b = bob.answer(format!("r-{n}")).await;
        let a_won = from_a.get("result").is_some();
        let b_won = from_b.get("result").is_some();
        assert!(
            a_won != b_won,
            "thread {id}: exactly one winner:\n{from_a}\n{from_b}"
        );
        let loser = if a_won { &from_b } else { &from_a };
        assert!(is_leased_elsewhere(loser), "{loser}");
        winners.push(a_won);
    }
    for (n, (id, a_won)) in threads.iter().zip(&winners).enumerate() {
        let client = if *a_won { &mut alice } else { &mut bob };
        let turn = start_turn(client, &format!("turn-{n}"), id, "the winner's turn").await;
        assert_eq!(completed(client, &turn).await["status"], "completed");
    }
    for (n, id) in threads.iter().enumerate() {
        let turns = turns_of(&mut alice, format!("read-{n}").as_str(), id).await;
        assert_eq!(turns.len(), 1, "thread {id}: {turns:?}");
    }
    eprintln!(
        "server A won {} threads, server B {}",
        winners.iter().filter(|won| **won).count(),
        winners.iter().filter(|won| !**won).count()
    );
}

/// A websocket server on `url` (lease TTL `ttl_ms`, idle threads unloaded at once) and its
/// address, for tests that open many connections to one server.
async fn started_ws(test: &str, url: &str, ttl_ms: u64) -> (AppServer, std::net::SocketAddr) {
    Launch::new(test)
        .args([
            "app-server".to_owned(),
            "--listen".to_owned(),
            "ws://127.0.0.1:0".to_owned(),
            "-c".to_owned(),
            format!("store.url={url}"),
            "-c".to_owned(),
            format!("store.lease_ttl_ms={ttl_ms}"),
            "-c".to_owned(),
            "thread_unload_delay_secs=0".to_owned(),
            "-c".to_owned(),
            NO_HANDOFF_WAIT.to_owned(),
        ])
        .websocket()
        .await
}

async fn ws_client(address: std::net::SocketAddr) -> Client {
    let mut client = Client::Ws(
        common::client::connect(address, &[])
            .await
            .expect("connect"),
    );
    client.initialize(false).await;
    client
}

/// How many fresh threads the 20-way race runs on (`TANDEM_PG_RACE_THREADS`, default 4).
fn race_threads() -> usize {
    std::env::var("TANDEM_PG_RACE_THREADS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(4)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_racers_on_two_servers_one_writer_and_one_turn_per_thread() {
    const RACERS: usize = 20;
    let Some(cluster) = cluster() else { return };
    let (database, url) = cluster.create_named_database();
    let (a, address_a) = started_ws("pg-race20-a", &url, 30_000).await;
    let (b, address_b) = started_ws("pg-race20-b", &url, 30_000).await;
    let pids = [a.pid, b.pid];
    // Fresh threads, created on A and handed back at once (unsubscribing unloads them).
    let mut setup = ws_client(address_a).await;
    let mut threads = Vec::new();
    for n in 0..race_threads() {
        let id = new_thread(&mut setup, &format!("start-{n}")).await;
        setup
            .ok(
                format!("unsub-{n}"),
                "thread/unsubscribe",
                json!({"threadId": id}),
            )
            .await;
        setup
            .notification("thread/closed", |params| params["threadId"] == id)
            .await;
        threads.push(id);
    }
    // Racer r talks to server r % 2: ten connections on each.
    let mut racers = Vec::new();
    for r in 0..RACERS {
        racers.push(ws_client(if r % 2 == 0 { address_a } else { address_b }).await);
    }
    // Every racer takes every thread and starts a turn on it, all at once, without waiting
    // for answers. A racer that joins a turn already running on its server adds its input to
    // that turn (each input sleeps, so the turn outlives the racers' requests).
    for (r, racer) in racers.iter_mut().enumerate() {
        for (k, id) in threads.iter().enumerate() {
            racer
                .send(&common::client::request(
                    format!("resume-{k}"),
                    "thread/resume",
                    json!({"threadId": id}),
                ))
                .await;
            racer
                .send(&common::client::request(
                    format!("turn-{k}"),
                    "turn/start",
                    json!({"threadId": id, "input": [{"type": "text", "text": format!("/sleep 400\nracer {r}")}]}),
                ))
                .await;
        }
    }
    // Every answer first: waiting for a notification drops what a connection read before it.
    let mut answers = Vec::new();
    for (r, racer) in racers.iter_mut().enumerate() {
        let mut of_racer = Vec::new();
        for k in 0..threads.len() {
            let resume = racer.answer(format!("resume-{k}")).await;
            let turn = racer.answer(format!("turn-{k}")).await;
            of_racer.push((resume, turn));
        }
        answers.push((r, of_racer));
    }
    let mut wins = [0usize; 2];
    for (k, id) in threads.iter().enumerate() {
        let mut resumed = Vec::new();
        let mut refused = Vec::new();
        let mut turn_ids = std::collections::BTreeSet::new();
        for (r, of_racer) in &answers {
            let (resume, turn) = &of_racer[k];
            if resume.get("result").is_some() {
                resumed.push(*r);
                let turn_id = turn["result"]["turn"]["id"].as_str().unwrap_or_else(|| {
                    panic!("racer {r} resumed {id} but its turn/start failed: {turn}")
                });
                turn_ids.insert(turn_id.to_owned());
            } else {
                refused.push((*r, resume));
                assert!(turn.get("error").is_some(), "racer {r} on {id}: {turn}");
            }
        }
        // Exactly one server won the thread: every racer on it shares its writer, every racer
        // on the other is refused with the winner as the owner.
        let winner = resumed
            .first()
            .map(|r| r % 2)
            .unwrap_or_else(|| panic!("nobody won thread {id}: {refused:?}"));
        assert!(
            resumed.iter().all(|r| r % 2 == winner),
            "thread {id}: both servers won ({resumed:?})"
        );
        assert_eq!(resumed.len(), RACERS / 2, "thread {id}: {refused:?}");
        for (r, answer) in &refused {
            assert_eq!(
                r % 2,
                1 - winner,
                "racer {r} on the winning server was refused"
            );
            assert_leased_elsewhere(answer, id, pids[winner]);
        }
        assert_eq!(
            turn_ids.len(),
            1,
            "thread {id}: more than one turn: {turn_ids:?}"
        );
        wins[winner] += 1;
        let turn_id = turn_ids.into_iter().next().expect("one turn");
        // What the database holds once the turn ended: one turn, the winner's, completed.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let stored = cluster
                .sql_in(
                    &database,
                    &format!("SELECT id, status FROM turns WHERE thread_id = '{id}'"),
                )
                .expect("read the turns");
            if stored.trim() != format!("{turn_id}|inProgress") {
                assert_eq!(stored.trim(), format!("{turn_id}|completed"), "thread {id}");
                break;
            }
            assert!(Instant::now() < deadline, "the turn on {id} never ended");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    eprintln!("server A won {} threads, server B {}", wins[0], wins[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_unload_hands_the_thread_over_without_waiting_for_the_ttl() {
    let Some(cluster) = cluster() else { return };
    let url = cluster.create_database();
    // A TTL no test waits out: the handoff must come from the release.
    let (_a, mut alice) = started("pg-handoff-a", &url, 600_000, 0).await;
    let (_b, mut bob) = started("pg-handoff-b", &url, 600_000, 0).await;
    let thread_id = new_thread(&mut alice, "t").await;
    let turn = start_turn(&mut alice, "turn", &thread_id, "first").await;
    completed(&mut alice, &turn).await;
    alice
        .ok(
            "unsub",
            "thread/unsubscribe",
            json!({"threadId": thread_id}),
        )
        .await;
    alice
        .notification("thread/closed", |params| params["threadId"] == thread_id)
        .await;
    let since = Instant::now();
    bob.ok("resume", "thread/resume", json!({"threadId": thread_id}))
        .await;
    let turn = start_turn(&mut bob, "turn", &thread_id, "second").await;
    assert_eq!(completed(&mut bob, &turn).await["status"], "completed");
    assert!(since.elapsed() < Duration::from_secs(60));
    assert_eq!(turns_of(&mut bob, "read", &thread_id).await.len(), 2);
}

/// Resumes `thread_id` through `client` until it succeeds; every refusal must be the
/// -32600 naming `owner_pid`. Returns how many refusals came first.
async fn resume_until_granted(
    client: &mut Client,
    thread_id: &str,
    owner_pid: u32,
    within: Duration,
) -> usize {
    let deadline = Instant::now() + within;
    for attempt in 0.. {
        let answer = client
            .call(
                format!("resume-{thread_id}-{attempt}"),
                "thread/resume",
                json!({"threadId": thread_id}),
            )
            .await;
        if answer.get("result").is_some() {
            return attempt;
        }
        assert_leased_elsewhere(&answer, thread_id, owner_pid);
        assert!(Instant::now() < deadline, "never handed over: {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    unreachable!("the loop returns or fails")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_owner_hands_a_thread_over_on_request_and_a_busy_one_keeps_it() {
    // The lease is renewed every second and never runs out while A lives: B can only get a
    // thread A holds through a handoff.
    const TTL_MS: u64 = 3_000;
    let Some(cluster) = cluster() else { return };
    let url = cluster.create_database();
    let (a, mut alice) = started("pg-ask-a", &url, TTL_MS, 600).await;
    let (b, mut bob) = started("pg-ask-b", &url, TTL_MS, 600).await;

    // Idle on A (loaded, subscribed, no turn running): B asks and gets it.
    let idle = new_thread(&mut alice, "idle").await;
    let turn = start_turn(&mut alice, "idle-turn", &idle, "before the handoff").await;
    assert_eq!(completed(&mut alice, &turn).await["status"], "completed");
    resume_until_granted(&mut bob, &idle, a.pid, Duration::from_millis(TTL_MS)).await;
    // A's client is told the thread left A.
    alice
        .notification("thread/status/changed", |params| {
            params["threadId"] == idle && params["status"]["type"] == "notLoaded"
        })
        .await;
    alice
        .notification("thread/closed", |params| params["threadId"] == idle)
        .await;
    let turn = start_turn(&mut bob, "idle-turn-b", &idle, "after the handoff").await;
    assert_eq!(completed(&mut bob, &turn).await["status"], "completed");
    assert_eq!(turns_of(&mut bob, "idle-read", &idle).await.len(), 2);
    // A writes no more: its client's turn/start is told to resume, and the resume is refused
    // with B as the owner.
    let answer = alice
        .call(
            "idle-again",
            "turn/start",
            json!({"threadId": idle, "input": [{"type": "text", "text": "late"}]}),
        )
        .await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        format!("thread not loaded: {idle}; resume it first"),
        "{answer}"
    );
    let answer = alice
        .call("idle-resume", "thread/resume", json!({"threadId": idle}))
        .await;
    assert_leased_elsewhere(&answer, &idle, b.pid);

    // A turn running on A: B is refused, again after more than two renewals, and A's turn
    // goes on; once it ends, A hands the thread over.
    let busy = new_thread(&mut alice, "busy").await;
    let a_turn = start_turn(&mut alice, "busy-turn", &busy, "/sleep 60000").await;
    alice
        .notification("turn/started", |params| params["turn"]["id"] == a_turn)
        .await;
    let answer = bob
        .call("busy-1", "thread/resume", json!({"threadId": busy}))
        .await;
    assert_leased_elsewhere(&answer, &busy, a.pid);
    tokio::time::sleep(Duration::from_millis(TTL_MS * 5 / 6)).await;
    let answer = bob
        .call("busy-2", "thread/resume", json!({"threadId": busy}))
        .await;
    assert_leased_elsewhere(&answer, &busy, a.pid);
    alice
        .ok(
            "interrupt",
            "turn/interrupt",
            json!({"threadId": busy, "turnId": a_turn}),
        )
        .await;
    assert_eq!(
        completed(&mut alice, &a_turn).await["status"],
        "interrupted"
    );
    resume_until_granted(&mut bob, &busy, a.pid, Duration::from_millis(TTL_MS)).await;
    alice
        .notification("thread/closed", |params| params["threadId"] == busy)
        .await;
    let turns = turns_of(&mut bob, "busy-read", &busy).await;
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert_eq!(turns[0]["status"], "interrupted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_owner_is_fenced_and_nothing_it_writes_after_is_kept() {
    const TTL_MS: u64 = 1_500;
    let Some(cluster) = cluster() else { return };
    let url = cluster.create_database();
    let (a, mut alice) = started("pg-pause-a", &url, TTL_MS, 600).await;
    let (_b, mut bob) = started("pg-pause-b", &url, TTL_MS, 600).await;
    let thread_id = new_thread(&mut alice, "t").await;
    // The turn sleeps through the pause, then answers: that answer is the write the paused
    // server attempts after losing its lease.
    let a_turn = start_turn(&mut alice, "turn", &thread_id, "/sleep 1000\nwritten late").await;
    alice
        .notification("turn/started", |params| params["turn"]["id"] == a_turn)
        .await;
    a.signal(Signal::SIGSTOP);
    tokio::time::sleep(Duration::from_millis(TTL_MS * 2)).await;
    bob.ok("resume", "thread/resume", json!({"threadId": thread_id}))
        .await;
    let b_turn = start_turn(&mut bob, "turn", &thread_id, "written by the new owner").await;
    assert_eq!(completed(&mut bob, &b_turn).await["status"], "completed");
    a.signal(Signal::SIGCONT);

    // The paused server's turn ends without being recorded as completed, and its client is
    // told the thread is gone from that server.
    let ended = completed(&mut alice, &a_turn).await;
    assert_ne!(ended["status"], "completed", "{ended}");
    alice
        .notification("thread/closed", |params| params["threadId"] == thread_id)
        .await;
    // Give a late commit every chance to land, then read what the database holds.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let turns = turns_of(&mut bob, "read", &thread_id).await;
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert_eq!(turns[0]["id"], a_turn);
    assert_eq!(turns[0]["status"], "interrupted", "{:?}", turns[0]);
    // Only the input, stored before the pause: not the answer written after it.
    let items = turns[0]["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "the late answer was stored: {:?}", turns[0]);
    assert_eq!(items[0]["type"], "userMessage");
    assert_eq!(turns[1]["id"], b_turn);
    assert_eq!(turns[1]["status"], "completed");
}

/// Per-server roles, so that one server's access can be cut while the other's stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_connections_cost_nothing_when_short_and_fence_when_longer_than_the_ttl() {
    const TTL_MS: u64 = 2_000;
    let Some(cluster) = cluster() else { return };
    let (database, _) = cluster.create_named_database();
    let role_a = format!("{database}_a");
    let url_a = role_url(cluster, &database, &role_a);
    let url_b = role_url(cluster, &database, &format!("{database}_b"));
    let (a, mut alice) = launch_logged("pg-terminate-a", &url_a, TTL_MS).await;
    let (_b, mut bob) = started("pg-terminate-b", &url_b, TTL_MS, 600).await;
    let thread_id = new_thread(&mut alice, "t").await;

    // Short: every connection of A's is terminated once; A goes on as if nothing happened.
    terminate_backends_of(cluster, &role_a);
    let turn = start_turn(&mut alice, "turn-1", &thread_id, "after the cut").await;
    assert_eq!(
        completed_on(&mut alice, &turn, &a).await["status"],
        "completed"
    );
    tokio::time::sleep(Duration::from_millis(TTL_MS + 500)).await;
    let answer = bob
        .call("resume-1", "thread/resume", json!({"threadId": thread_id}))
        .await;
    assert_leased_elsewhere(&answer, &thread_id, a.pid);

    // Longer than the TTL: A cannot connect at all. It fences itself: its running turn stops
    // and its client is told; B then takes the thread.
    let a_turn = start_turn(&mut alice, "turn-2", &thread_id, "/sleep 60000").await;
    alice
        .notification("turn/started", |params| params["turn"]["id"] == a_turn)
        .await;
    cluster
        .sql(&format!("ALTER ROLE {role_a} NOLOGIN"))
        .expect("cut A off");
    terminate_backends_of(cluster, &role_a);
    let cut = Instant::now();
    let ended = completed_on(&mut alice, &a_turn, &a).await;
    assert_ne!(ended["status"], "completed", "{ended}");
    alice
        .notification("thread/status/changed", |params| {
            params["threadId"] == thread_id && params["status"]["type"] == "systemError"
        })
        .await;
    alice
        .notification("thread/closed", |params| params["threadId"] == thread_id)
        .await;
    eprintln!("A fenced itself {:?} after the cut", cut.elapsed());
    // B takes over once the lease ran out on the database's clock.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = bob
            .call("resume-2", "thread/resume", json!({"threadId": thread_id}))
            .await;
        if answer.get("result").is_some() {
            break;
        }
        assert!(is_leased_elsewhere(&answer), "{answer}");
        assert!(
            Instant::now() < deadline,
            "B never got the thread: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let turns = turns_of(&mut bob, "read", &thread_id).await;
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert_eq!(turns[1]["status"], "interrupted", "{:?}", turns[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_of_the_owner_the_other_resumes_within_the_ttl_and_a_renewal() {
    const TTL_MS: u64 = 1_500;
    let Some(cluster) = cluster() else { return };
    let url = cluster.create_database();
    let (a, mut alice) = started("pg-kill-a", &url, TTL_MS, 600).await;
    let (_b, mut bob) = started("pg-kill-b", &url, TTL_MS, 600).await;
    let thread_id = new_thread(&mut alice, "t").await;
    let a_turn = start_turn(&mut alice, "turn", &thread_id, "/sleep 60000").await;
    alice
        .notification("turn/started", |params| params["turn"]["id"] == a_turn)
        .await;
    a.signal(Signal::SIGKILL);
    let killed = Instant::now();
    drop(a.wait_exit(killed, Duration::from_secs(10)).await);
    loop {
        let answer = bob
            .call("resume", "thread/resume", json!({"threadId": thread_id}))
            .await;
        if answer.get("result").is_some() {
            break;
        }
        assert!(is_leased_elsewhere(&answer), "{answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let waited = killed.elapsed();
    let bound = Duration::from_millis(TTL_MS + TTL_MS / 3 + 1_000);
    assert!(
        waited <= bound,
        "resumed {waited:?} after the kill, bound {bound:?}"
    );
    let turns = turns_of(&mut bob, "read", &thread_id).await;
    assert_eq!(turns[0]["status"], "interrupted", "{:?}", turns[0]);
    let turn = start_turn(&mut bob, "turn", &thread_id, "carry on").await;
    assert_eq!(completed(&mut bob, &turn).await["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_sharing_a_sqlite_home_have_one_writer_per_thread() {
    let home = fresh_home("sqlite-shared");
    let launch = |test: &str| {
        Launch::new(test)
            .args(["app-server", "-c", "thread_unload_delay_secs=0"])
            .home(home.clone())
            .stdio()
    };
    let (a, alice) = launch("sqlite-shared-a");
    let (_b, bob) = launch("sqlite-shared-b");
    let (mut alice, mut bob) = (Client::Stdio(alice), Client::Stdio(bob));
    alice.initialize(false).await;
    bob.initialize(false).await;
    let thread_id = new_thread(&mut alice, "t").await;
    let answer = bob
        .call("resume", "thread/resume", json!({"threadId": thread_id}))
        .await;
    assert_leased_elsewhere(&answer, &thread_id, a.pid);
    alice
        .ok(
            "unsub",
            "thread/unsubscribe",
            json!({"threadId": thread_id}),
        )
        .await;
    alice
        .notification("thread/closed", |params| params["threadId"] == thread_id)
        .await;
    bob.ok("resume-2", "thread/resume", json!({"threadId": thread_id}))
        .await;
    let turn = start_turn(&mut bob, "turn", &thread_id, "mine now").await;
    assert_eq!(completed(&mut bob, &turn).await["status"], "completed");
}
