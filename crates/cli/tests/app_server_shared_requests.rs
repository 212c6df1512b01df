//! Issue 17, point 4, on the real binary over websocket: a thread's server requests go to
//! every connection subscribed to it, the first answer wins and `serverRequest/resolved` goes
//! to all; a connection that resumes the thread is sent the waiting ones again; when the last
//! subscriber leaves, an approval waits (`--unanswered-request-secs`) for a client to come
//! back instead of being declined at once, and is declined, with the reason in the item, when
//! nobody does.

mod common;

use std::net::SocketAddr;

use common::client::{self, Client};
use common::server::Launch;
use serde_json::{Value, json};

/// Ends the server with SIGTERM and checks that it exits cleanly, leaving nothing running.
async fn stop(server: common::server::AppServer) {
    let since = std::time::Instant::now();
    server.signal(nix::sys::signal::Signal::SIGTERM);
    server.finish(since).await;
}

/// A websocket client on `address`, initialized.
async fn attach(address: SocketAddr) -> Client {
    let mut client = Client::Ws(client::connect(address, &[]).await.expect("connect"));
    client.initialize(false).await;
    client
}

/// Starts an `on-request` thread with a turn that runs one command, and waits for the
/// command's approval request; returns the thread id, the turn id and the request.
async fn turn_waiting_on_approval(client: &mut Client, command: &str) -> (String, String, Value) {
    let started = client
        .ok(
            "start",
            "thread/start",
            json!({"approvalPolicy": "on-request"}),
        )
        .await;
    let thread_id = started["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    let turn = client
        .ok(
            "turn",
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": format!("/sh {command}")}]}),
        )
        .await;
    let turn_id = turn["turn"]["id"].as_str().expect("turn id").to_owned();
    let approval = server_request(client, "item/commandExecution/requestApproval").await;
    (thread_id, turn_id, approval)
}

/// Reads until the server request `method`.
async fn server_request(client: &mut Client, method: &str) -> Value {
    loop {
        let message = client.recv().await;
        if message["method"] == method && message.get("id").is_some() {
            return message;
        }
    }
}

/// Reads until `turn/completed` of `turn_id`; returns the messages before it and it.
async fn until_turn_completed(client: &mut Client, turn_id: &str) -> (Vec<Value>, Value) {
    let mut before = Vec::new();
    loop {
        let message = client.recv().await;
        if message["method"] == "turn/completed" && message["params"]["turn"]["id"] == turn_id {
            return (before, message);
        }
        before.push(message);
    }
}

fn command_item(messages: &[Value]) -> Value {
    messages
        .iter()
        .find(|m| {
            m["method"] == "item/completed" && m["params"]["item"]["type"] == "commandExecution"
        })
        .map(|m| m["params"]["item"].clone())
        .unwrap_or_else(|| panic!("no completed command item among {messages:?}"))
}

fn resolved(messages: &[Value], request_id: &Value) -> bool {
    messages
        .iter()
        .any(|m| m["method"] == "serverRequest/resolved" && &m["params"]["requestId"] == request_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_client_answers_and_both_see_resolved() {
    let (server, address) = Launch::new("shared-approval-second-answers")
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .websocket()
        .await;
    let mut first = attach(address).await;
    let (thread_id, turn_id, approval) =
        turn_waiting_on_approval(&mut first, "echo answered-by-second").await;

    let mut second = attach(address).await;
    second
        .ok(
            "resume",
            "thread/resume",
            json!({"threadId": thread_id, "excludeTurns": true}),
        )
        .await;
    let again = server_request(&mut second, "item/commandExecution/requestApproval").await;
    assert_eq!(
        again, approval,
        "the resuming client is sent the same request"
    );
    second
        .send(&json!({"id": again["id"], "result": {"decision": "accept"}}))
        .await;
    // The first client's answer comes too late: the second's won. Sent once the second has
    // seen the request resolved, since two connections' answers race otherwise.
    let mut seen_by_second = Vec::new();
    while !resolved(&seen_by_second, &approval["id"]) {
        seen_by_second.push(second.recv().await);
    }
    first
        .send(&json!({"id": approval["id"], "result": {"decision": "decline"}}))
        .await;

    let (rest_seen_by_second, completed) = until_turn_completed(&mut second, &turn_id).await;
    seen_by_second.extend(rest_seen_by_second);
    let (seen_by_first, _) = until_turn_completed(&mut first, &turn_id).await;
    assert!(
        resolved(&seen_by_first, &approval["id"]),
        "first: {seen_by_first:?}"
    );
    assert!(
        resolved(&seen_by_second, &approval["id"]),
        "second: {seen_by_second:?}"
    );
    let item = command_item(&seen_by_first);
    assert_eq!(
        (&item["status"], &item["exitCode"]),
        (&json!("completed"), &json!(0)),
        "the accepted command ran: {item}"
    );
    assert_eq!(command_item(&seen_by_second), item);
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    first.assert_serves("alive").await;
    drop((first, second));
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_waits_for_a_client_that_comes_back() {
    let (server, address) = Launch::new("shared-approval-comes-back")
        .args([
            "app-server",
            "--listen",
            "ws://127.0.0.1:0",
            "--unanswered-request-secs",
            "60",
        ])
        .websocket()
        .await;
    let mut first = attach(address).await;
    let (thread_id, turn_id, approval) =
        turn_waiting_on_approval(&mut first, "echo answered-after-reconnect").await;
    // The last subscriber goes away (a laptop sleeps, a proxy restarts).
    first.into_ws().close().await;

    let mut back = attach(address).await;
    let resumed = back
        .ok(
            "resume",
            "thread/resume",
            json!({"threadId": thread_id, "excludeTurns": true}),
        )
        .await;
    assert_eq!(
        resumed["thread"]["status"],
        json!({"type": "active", "activeFlags": ["waitingOnApproval"]}),
        "the turn kept running, waiting: {resumed}"
    );
    let again = server_request(&mut back, "item/commandExecution/requestApproval").await;
    assert_eq!(again["params"], approval["params"]);
    back.send(&json!({"id": again["id"], "result": {"decision": "accept"}}))
        .await;
    let (seen, completed) = until_turn_completed(&mut back, &turn_id).await;
    assert!(resolved(&seen, &again["id"]), "{seen:?}");
    assert_eq!(command_item(&seen)["status"], "completed");
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    drop(back);
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_approval_is_declined_after_the_timeout() {
    let (server, address) = Launch::new("shared-approval-expires")
        .args([
            "app-server",
            "--listen",
            "ws://127.0.0.1:0",
            "--unanswered-request-secs",
            "1",
        ])
        .websocket()
        .await;
    let mut first = attach(address).await;
    let (thread_id, turn_id, _) = turn_waiting_on_approval(&mut first, "echo never-answered").await;
    first.into_ws().close().await;
    server
        .wait_for_stderr("the expiry report", |line| {
            line.contains("no connection came back for it; declined")
        })
        .await;

    let mut later = attach(address).await;
    // The turn went on after the decline; read it back once it ended.
    let turn = loop {
        let read = later
            .ok(
                "read",
                "thread/read",
                json!({"threadId": thread_id, "includeTurns": true}),
            )
            .await;
        let turn = read["thread"]["turns"]
            .as_array()
            .and_then(|turns| turns.iter().find(|turn| turn["id"] == turn_id))
            .cloned()
            .expect("the turn is there");
        if turn["status"] != "inProgress" {
            break turn;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(turn["status"], "completed", "{turn}");
    let item = turn["items"]
        .as_array()
        .and_then(|items| items.iter().find(|item| item["type"] == "commandExecution"))
        .cloned()
        .expect("the command item");
    assert_eq!(item["status"], "declined", "{item}");
    let reason = item["aggregatedOutput"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("no client answered this server request"),
        "the item says why: {item}"
    );
    drop(later);
    stop(server).await;
}
