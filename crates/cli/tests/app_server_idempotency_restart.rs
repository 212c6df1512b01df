//! Issue 17, point 3, on the real binary: idempotency keys are durable. A `thread/start` and a
//! `turn/start` made with keys are retried after the server restarted on the same home: the
//! retries answer with the original thread and turn and start nothing; other input under the
//! turn's key is refused.

mod common;

use std::time::Instant;

use common::client::Client;
use common::server::Launch;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_idempotency_keys() {
    let thread_params = json!({"approvalPolicy": "never", "idempotencyKey": "start-after-crash"});
    let (server, client) = Launch::new("idempotency-restart")
        .args(["app-server"])
        .stdio();
    let mut client = Client::Stdio(client);
    client.initialize(false).await;
    let started = client.ok(1, "thread/start", thread_params.clone()).await;
    let thread_id = started["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    let turn_params = json!({
        "threadId": thread_id, "clientUserMessageId": "message-1",
        "input": [{"type": "text", "text": "hello"}],
    });
    let first = client.ok(2, "turn/start", turn_params.clone()).await;
    let turn_id = first["turn"]["id"].as_str().expect("turn id").to_owned();
    client
        .notification("turn/completed", |params| params["turn"]["id"] == turn_id)
        .await;
    let home = server.home.clone();
    let since = Instant::now();
    let _stdout = client.into_stdio().close_stdin();
    server.finish(since).await;

    let (restarted, client) = Launch::new("idempotency-restart-again")
        .args(["app-server"])
        .home(home)
        .stdio();
    let mut client = Client::Stdio(client);
    client.initialize(false).await;
    let again = client.ok(1, "thread/start", thread_params).await;
    assert_eq!(again["thread"]["id"], thread_id, "the same thread: {again}");
    let retried = client.ok(2, "turn/start", turn_params.clone()).await;
    assert_eq!(retried, first, "the original reply");
    let mut other = turn_params;
    other["input"] = json!([{"type": "text", "text": "not the same"}]);
    let refused = client.call(3, "turn/start", other).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("\"message-1\" was already used"),
        "{refused}"
    );
    let read = client
        .ok(
            4,
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await;
    let turns = read["thread"]["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 1, "one turn ran: {read}");
    let listed = client.ok(5, "thread/list", json!({})).await;
    assert_eq!(
        listed["data"].as_array().map(Vec::len),
        Some(1),
        "one thread: {listed}"
    );
    let since = Instant::now();
    let _stdout = client.into_stdio().close_stdin();
    restarted.finish(since).await;
}
