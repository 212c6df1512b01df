//! The PostgreSQL tests' servers and checks (issues 20 and 32): two real `tandem app-server`
//! processes on one throwaway cluster (`-c store.url=...`), the requests they share, and the
//! -32600 of a thread leased elsewhere.

use std::time::Duration;

use serde_json::{Value, json};
use tandem_test_support::postgres::PostgresCluster;

use super::client::Client;
use super::server::{AppServer, Launch};

/// A server on `url` with lease TTL `ttl_ms`, idle threads unloaded after `unload_secs`, and
/// the exclusion of issue 20 ([`NO_HANDOFF_WAIT`]).
pub(crate) fn launch(test: &str, url: &str, ttl_ms: u64, unload_secs: u64) -> (AppServer, Client) {
    launch_with(test, url, ttl_ms, unload_secs, &["-c", NO_HANDOFF_WAIT])
}

/// [`launch`] with `extra` arguments instead of the exclusion.
pub(crate) fn launch_with(
    test: &str,
    url: &str,
    ttl_ms: u64,
    unload_secs: u64,
    extra: &[&str],
) -> (AppServer, Client) {
    let (server, client) = Launch::new(test)
        .args([
            "app-server".to_owned(),
            "-c".to_owned(),
            format!("store.url={url}"),
            "-c".to_owned(),
            format!("store.lease_ttl_ms={ttl_ms}"),
            "-c".to_owned(),
            format!("thread_unload_delay_secs={unload_secs}"),
        ])
        .args(extra.iter().copied())
        .stdio();
    (server, Client::Stdio(client))
}

/// The exclusion of issue 20, which most tests here check: a resume of a thread another
/// server holds is refused at once, and the holder hears of the request at its next renewal.
/// [`started_waiting`] is issue 32's resume that waits for the handoff.
pub(crate) const NO_HANDOFF_WAIT: &str = "store.handoff_wait_ms=0";

/// A server like [`started`] with the default handoff wait (2 s).
pub(crate) async fn started_waiting(
    test: &str,
    url: &str,
    ttl_ms: u64,
    unload_secs: u64,
) -> (AppServer, Client) {
    let (server, mut client) = launch_with(test, url, ttl_ms, unload_secs, &[]);
    client.initialize(false).await;
    (server, client)
}

/// A server like [`started`] that logs the store and the leases to stderr.
pub(crate) async fn launch_logged(test: &str, url: &str, ttl_ms: u64) -> (AppServer, Client) {
    let (server, client) = Launch::new(test)
        .args([
            "app-server".to_owned(),
            "-c".to_owned(),
            format!("store.url={url}"),
            "-c".to_owned(),
            format!("store.lease_ttl_ms={ttl_ms}"),
            "-c".to_owned(),
            NO_HANDOFF_WAIT.to_owned(),
        ])
        .env("TANDEM_LOG", "tandem_server=debug")
        .stdio();
    let mut client = Client::Stdio(client);
    client.initialize(false).await;
    (server, client)
}

pub(crate) async fn started(
    test: &str,
    url: &str,
    ttl_ms: u64,
    unload_secs: u64,
) -> (AppServer, Client) {
    let (server, mut client) = launch(test, url, ttl_ms, unload_secs);
    client.initialize(false).await;
    (server, client)
}

pub(crate) async fn new_thread(client: &mut Client, id: &str) -> String {
    let started = client
        .ok(id, "thread/start", json!({"approvalPolicy": "never"}))
        .await;
    started["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned()
}

/// Starts a turn with `text` and returns its id.
pub(crate) async fn start_turn(
    client: &mut Client,
    id: &str,
    thread_id: &str,
    text: &str,
) -> String {
    let turn = client
        .ok(
            id,
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
        )
        .await;
    turn["turn"]["id"].as_str().expect("turn id").to_owned()
}

/// [`completed`], failing with `server`'s stderr if it does not come.
pub(crate) async fn completed_on(client: &mut Client, turn_id: &str, server: &AppServer) -> Value {
    match tokio::time::timeout(Duration::from_secs(15), completed(client, turn_id)).await {
        Ok(turn) => turn,
        Err(_) => panic!(
            "no turn/completed for {turn_id}; server stderr:\n{}",
            server.stderr()
        ),
    }
}

pub(crate) async fn completed(client: &mut Client, turn_id: &str) -> Value {
    client
        .notification("turn/completed", |params| params["turn"]["id"] == turn_id)
        .await["params"]["turn"]
        .clone()
}

pub(crate) async fn turns_of(client: &mut Client, id: &str, thread_id: &str) -> Vec<Value> {
    let read = client
        .ok(
            id,
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await;
    read["thread"]["turns"].as_array().expect("turns").clone()
}

/// The pid in a refusal's `data.owner` (`host/pid/suffix`).
pub(crate) fn owner_pid_of(answer: &Value) -> u32 {
    answer["error"]["data"]["owner"]
        .as_str()
        .and_then(|owner| owner.split('/').nth(1))
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no owner pid in {answer}"))
}

/// Asserts the -32600 answer of a thread leased by `owner_pid`.
pub(crate) fn assert_leased_elsewhere(answer: &Value, thread_id: &str, owner_pid: u32) {
    let error = &answer["error"];
    assert_eq!(error["code"], -32600, "{answer}");
    assert_eq!(
        error["message"],
        format!("thread {thread_id} already has an active writer"),
        "{answer}"
    );
    let owner = error["data"]["owner"].as_str().expect("owner in data");
    assert!(
        owner.contains(&format!("/{owner_pid}/")),
        "owner {owner} is not pid {owner_pid}"
    );
    assert!(error["data"]["expiresAtMs"].as_i64().is_some(), "{answer}");
    // Refused only after the handoff wait (issue 32): a retry is worth its wait.
    assert!(
        error["data"]["retryAfterMs"]
            .as_u64()
            .is_some_and(|ms| ms >= 1000),
        "{answer}"
    );
}

/// The -32600 answer's `data.expiresAtMs`, if the answer is that error.
pub(crate) fn is_leased_elsewhere(answer: &Value) -> bool {
    answer["error"]["code"] == -32600
        && answer["error"]["message"]
            .as_str()
            .is_some_and(|message| message.ends_with("already has an active writer"))
}

pub(crate) fn cluster() -> Option<&'static PostgresCluster> {
    PostgresCluster::shared()
}

pub(crate) fn role_url(cluster: &PostgresCluster, database: &str, role: &str) -> String {
    cluster
        .sql(&format!("CREATE ROLE {role} SUPERUSER LOGIN"))
        .expect("create role");
    cluster
        .url(database)
        .replacen("postgres://postgres@", &format!("postgres://{role}@"), 1)
}

pub(crate) fn terminate_backends_of(cluster: &PostgresCluster, role: &str) {
    cluster
        .sql(&format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = '{role}'"
        ))
        .expect("terminate");
}
