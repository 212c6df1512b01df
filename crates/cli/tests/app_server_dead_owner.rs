//! Issue 27, point 3: a server killed with `kill -9` leaves no lock behind. A server restarted
//! on the same `TANDEM_HOME` (and, on PostgreSQL, the same database) writes every thread the
//! dead one leased at once, through every write path, with a lease TTL far longer than the
//! test; the dead server's lock file is cleaned up. Nor does a live server keep the lease of a
//! thread it archived.
//!
//! The PostgreSQL case skips (saying why) where PostgreSQL is not installed, unless
//! `TANDEM_REQUIRE_POSTGRES=1` (CI), which makes that a failure.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::client::Client;
use common::server::{AppServer, Launch, fresh_home};
use common::{PROMPT, within};
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use tandem_test_support::postgres::PostgresCluster;

/// Ten minutes: no write in this test may wait for a lease to run out.
const TTL_MS: u64 = 600_000;

/// Every write request that works on a thread the server has not loaded, and compaction,
/// which resumes the thread first. Each gets a thread of its own that the dead server leased.
const PATHS: &[&str] = &[
    "attachment/add",
    "attachment/remove",
    "name/set",
    "archive",
    "unarchive",
    "delete",
    "revert",
    "rollback",
    "compact",
];

async fn launch(test: &str, home: &Path, store: &[String]) -> (AppServer, Client) {
    let mut args = vec![
        "app-server".to_owned(),
        "-c".to_owned(),
        format!("store.lease_ttl_ms={TTL_MS}"),
    ];
    args.extend(store.iter().cloned());
    let (server, client) = Launch::new(test)
        .args(args)
        .home(home.to_owned())
        .env("TANDEM_LOG", "tandem_server=info")
        .stdio();
    let mut client = Client::Stdio(client);
    within(PROMPT, "initialize", client.initialize(false)).await;
    (server, client)
}

async fn call(client: &mut Client, id: &str, method: &str, params: Value) -> Value {
    within(PROMPT, method, client.call(id, method, params)).await
}

async fn ok(client: &mut Client, id: &str, method: &str, params: Value) -> Value {
    let answer = call(client, id, method, params).await;
    match answer.get("result") {
        Some(result) => result.clone(),
        None => panic!("{method} failed: {answer}"),
    }
}

async fn completed(client: &mut Client, thread_id: &str) -> Value {
    within(
        PROMPT,
        "turn/completed",
        client.notification("turn/completed", |params| params["threadId"] == thread_id),
    )
    .await["params"]["turn"]
        .clone()
}

/// A thread with one completed turn; returns its id and the turn's.
async fn thread_with_a_turn(client: &mut Client, name: &str) -> (String, String) {
    let started = ok(
        client,
        &format!("start-{name}"),
        "thread/start",
        json!({"approvalPolicy": "never"}),
    )
    .await;
    let thread_id = started["thread"]["id"].as_str().expect("id").to_owned();
    let turn = ok(
        client,
        &format!("turn-{name}"),
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]}),
    )
    .await;
    let turn_id = turn["turn"]["id"].as_str().expect("turn id").to_owned();
    assert_eq!(completed(client, &thread_id).await["status"], "completed");
    (thread_id, turn_id)
}

/// The lock files in the home's `lease-owners` directory.
fn lock_files(home: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.join("lease-owners"))
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// The request each path makes on `thread_id` (whose first turn is `turn_id`).
fn request(path: &str, thread_id: &str, turn_id: &str) -> (&'static str, Value) {
    match path {
        "attachment/add" => (
            "thread/attachment/add",
            json!({"threadId": thread_id, "attachmentType": "note", "identityKey": "after",
                   "payload": {"text": "added after the crash"}}),
        ),
        "attachment/remove" => (
            "thread/attachment/remove",
            json!({"threadId": thread_id, "attachmentType": "note", "identityKey": "before"}),
        ),
        "name/set" => (
            "thread/name/set",
            json!({"threadId": thread_id, "name": "renamed after the crash"}),
        ),
        "archive" => ("thread/archive", json!({"threadId": thread_id})),
        "unarchive" => ("thread/unarchive", json!({"threadId": thread_id})),
        "delete" => ("thread/delete", json!({"threadId": thread_id})),
        "revert" => (
            "thread/revert",
            json!({"threadId": thread_id, "beforeTurnId": turn_id}),
        ),
        "rollback" => (
            "thread/rollback",
            json!({"threadId": thread_id, "numTurns": 1}),
        ),
        "compact" => ("thread/resume", json!({"threadId": thread_id})),
        other => panic!("unknown path {other}"),
    }
}

/// Server A leases one thread per write path (the compaction's thread with a turn still
/// running, the unarchive's archived), is killed with SIGKILL, and server B, started on the
/// same home and store, takes every path at once.
async fn every_write_path_works_at_once_after_kill_9(test: &str, store: &[String]) {
    let home = fresh_home(test);
    let (a, mut alice) = launch(&format!("{test}-a"), &home, store).await;
    let mut threads = Vec::new();
    for path in PATHS {
        let (thread_id, turn_id) = thread_with_a_turn(&mut alice, path).await;
        threads.push((*path, thread_id, turn_id));
    }
    let thread_of = |wanted: &str| {
        threads
            .iter()
            .find(|(path, _, _)| *path == wanted)
            .map(|(_, thread_id, _)| thread_id.clone())
            .expect("a thread per path")
    };
    let removed = thread_of("attachment/remove");
    ok(
        &mut alice,
        "attach-before",
        "thread/attachment/add",
        json!({"threadId": removed, "attachmentType": "note", "identityKey": "before",
               "payload": {}}),
    )
    .await;
    let archived = thread_of("unarchive");
    ok(
        &mut alice,
        "archive-before",
        "thread/archive",
        json!({"threadId": archived}),
    )
    .await;
    let busy = thread_of("compact");
    ok(
        &mut alice,
        "busy",
        "turn/start",
        json!({"threadId": busy, "input": [{"type": "text", "text": "/sleep 600000"}]}),
    )
    .await;
    within(
        PROMPT,
        "the busy turn to start",
        alice.notification("turn/started", |params| params["threadId"] == busy),
    )
    .await;
    assert_eq!(lock_files(&home).len(), 1, "A's lock file");

    a.signal(Signal::SIGKILL);
    let killed = Instant::now();
    drop(a.wait_exit(killed, Duration::from_secs(10)).await);

    let (b, mut bob) = launch(&format!("{test}-b"), &home, store).await;
    let started = Instant::now();
    let mut refused = Vec::new();
    for (path, thread_id, turn_id) in &threads {
        let (method, params) = request(path, thread_id, turn_id);
        let answer = call(&mut bob, path, method, params).await;
        if answer.get("result").is_none() {
            refused.push(format!("{method}: {answer}"));
        }
    }
    assert!(
        refused.is_empty(),
        "refused after the kill:\n{}\nB's stderr:\n{}",
        refused.join("\n"),
        b.stderr()
    );
    // The resumed thread reads the running turn back as interrupted, and compacts.
    let read = ok(
        &mut bob,
        "read-busy",
        "thread/read",
        json!({"threadId": busy, "includeTurns": true}),
    )
    .await;
    assert_eq!(
        read["thread"]["turns"][1]["status"], "interrupted",
        "{read}"
    );
    ok(
        &mut bob,
        "compact-busy",
        "thread/compact/start",
        json!({"threadId": busy}),
    )
    .await;
    assert_eq!(completed(&mut bob, &busy).await["status"], "completed");
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_millis(TTL_MS / 2),
        "the writes waited {waited:?}"
    );
    // What each write did is there.
    let attachments = ok(
        &mut bob,
        "list-added",
        "thread/attachment/list",
        json!({"threadId": thread_of("attachment/add")}),
    )
    .await;
    assert_eq!(
        attachments["data"][0]["identityKey"], "after",
        "{attachments}"
    );
    let attachments = ok(
        &mut bob,
        "list-removed",
        "thread/attachment/list",
        json!({"threadId": removed}),
    )
    .await;
    assert_eq!(attachments["data"], json!([]), "{attachments}");
    let listed = ok(
        &mut bob,
        "list-archived",
        "thread/list",
        json!({"archived": true}),
    )
    .await;
    let archived_ids: Vec<&Value> = listed["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|thread| &thread["id"])
        .collect();
    assert_eq!(archived_ids, [&json!(thread_of("archive"))], "{listed}");
    let deleted = call(
        &mut bob,
        "read-deleted",
        "thread/read",
        json!({"threadId": thread_of("delete")}),
    )
    .await;
    assert!(deleted.get("error").is_some(), "{deleted}");
    for path in ["revert", "rollback"] {
        let read = ok(
            &mut bob,
            &format!("read-{path}"),
            "thread/read",
            json!({"threadId": thread_of(path), "includeTurns": true}),
        )
        .await;
        assert_eq!(read["thread"]["turns"], json!([]), "{path}: {read}");
    }
    // A's lock file is gone: only B's is left.
    let files = lock_files(&home);
    assert_eq!(files.len(), 1, "{files:?}");
    let owner = std::fs::read_to_string(&files[0]).expect("B's lock file");
    assert!(owner.contains(&format!("/{}/", b.pid)), "{owner}");
    drop(bob);
    b.terminate().await;
    assert!(
        lock_files(&home).is_empty(),
        "B removed its lock file on exit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_kill_9_every_write_path_works_at_once_on_sqlite() {
    every_write_path_works_at_once_after_kill_9("dead-owner-sqlite", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_kill_9_every_write_path_works_at_once_on_postgres() {
    let Some(cluster) = PostgresCluster::shared() else {
        return;
    };
    let url = cluster.create_database();
    every_write_path_works_at_once_after_kill_9(
        "dead-owner-postgres",
        &["-c".to_owned(), format!("store.url={url}")],
    )
    .await;
}

/// A server that archives a thread gives its lease back (once the turn it interrupted recorded
/// its end), so another server sharing the home unarchives it at once. Before, the archiving
/// server went on renewing the lease of the thread it had unloaded for as long as it lived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_thread_is_free_for_another_server_at_once() {
    let home = fresh_home("archive-releases");
    let (_a, mut alice) = launch("archive-releases-a", &home, &[]).await;
    let (b, mut bob) = launch("archive-releases-b", &home, &[]).await;
    let (idle, _) = thread_with_a_turn(&mut alice, "idle").await;
    let (busy, _) = thread_with_a_turn(&mut alice, "busy").await;
    ok(
        &mut alice,
        "busy-turn",
        "turn/start",
        json!({"threadId": busy, "input": [{"type": "text", "text": "/sleep 600000"}]}),
    )
    .await;
    within(
        PROMPT,
        "the busy turn to start",
        alice.notification("turn/started", |params| params["threadId"] == busy),
    )
    .await;
    for thread_id in [&idle, &busy] {
        ok(
            &mut alice,
            &format!("archive-{thread_id}"),
            "thread/archive",
            json!({"threadId": thread_id}),
        )
        .await;
    }
    // The idle thread at once; the busy one as soon as its interrupted turn is stored (the
    // lease goes right after), far sooner than the TTL.
    let unarchive = json!({"threadId": idle});
    let answer = call(&mut bob, "unarchive-idle", "thread/unarchive", unarchive).await;
    assert!(answer.get("result").is_some(), "{answer}");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut tries = 0;
    loop {
        tries += 1;
        let params = json!({"threadId": busy});
        let id = format!("unarchive-busy-{tries}");
        let answer = call(&mut bob, &id, "thread/unarchive", params).await;
        if answer.get("result").is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{answer}\nB's stderr:\n{}",
            b.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for thread_id in [&idle, &busy] {
        let read = ok(
            &mut bob,
            &format!("resume-{thread_id}"),
            "thread/resume",
            json!({"threadId": thread_id}),
        )
        .await;
        let turns = read["thread"]["turns"].as_array().expect("turns");
        assert!(
            turns.iter().all(|turn| turn["status"] != "inProgress"),
            "{read}"
        );
    }
}
