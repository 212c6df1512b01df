//! Idempotent mutations (docs/protocol.md, "Idempotent requests"): a retried `turn/start`,
//! `thread/start` or `thread/fork` with the same key answers as the first one did and starts
//! nothing; the same key with other params is refused.

use serde_json::json;

use crate::session::{Session, Transport, assert_json};

use super::*;

/// The -32600 message of a key reused by a different request.
fn conflict(key: &str, method: &str) -> String {
    format!(
        "idempotency key {key:?} was already used by a different {method} request; send a \
         new key for a new request, or repeat the original request exactly to get its result"
    )
}

/// `turn/start` with `clientUserMessageId`: the retry gets the first reply (same turn) and no
/// second turn runs; other input under the same id is refused. `turn/steer` keys share the
/// thread's ids.
pub(crate) async fn retried_turn_start_starts_one_turn(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    let params = json!({
        "threadId": THREAD, "clientUserMessageId": "msg-1",
        "input": [{"type": "text", "text": "hi"}],
    });
    let first = s.call("turn/start", params.clone()).await;
    let turn_id = first["turn"]["id"].clone();
    let (_, completed) = s.read_until("turn/completed").await;
    assert_json(&s, &completed["params"]["turn"]["id"], &turn_id);

    // The reply was "lost": the client sends the same request again.
    let retried = s.call("turn/start", params.clone()).await;
    assert_json(&s, &retried, &first);
    let other_input = patched(
        params.clone(),
        json!({"input": [{"type": "text", "text": "something else"}]}),
    );
    expect_error(
        &mut s,
        "turn/start",
        other_input,
        -32600,
        &conflict("msg-1", "turn/start"),
    )
    .await;
    // A steer cannot reuse the start's id either.
    expect_error(
        &mut s,
        "turn/steer",
        json!({"threadId": THREAD, "expectedTurnId": turn_id, "clientUserMessageId": "msg-1",
               "input": [{"type": "text", "text": "hi"}]}),
        -32600,
        &conflict("msg-1", "turn/start"),
    )
    .await;

    // One turn ran, and nothing else was sent: the next message answers the next request.
    let read = s
        .call(
            "thread/read",
            json!({"threadId": THREAD, "includeTurns": true}),
        )
        .await;
    let turns = read["thread"]["turns"].as_array().expect("turns").clone();
    assert_json(&s, &json!(turns.len()), &json!(1));
    assert_json(&s, &turns[0]["id"], &turn_id);
    if s.backlog_has("turn/started") {
        s.fail("the retried turn/start started a turn");
    }
    s.close().await;
}

/// `thread/start` and `thread/fork` with `idempotencyKey`: a retry answers with the thread
/// the first request created; the same key with other params is refused.
pub(crate) async fn retried_thread_start_and_fork_create_one_thread(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    let params = json!({"cwd": "<home>", "approvalPolicy": "never", "idempotencyKey": "start-1"});
    let first = s.call("thread/start", params.clone()).await;
    assert_json(
        &s,
        &first,
        &session_reply("never", thread(THREAD, json!({}))),
    );
    s.expect("thread/started").await;
    let retried = s.call("thread/start", params.clone()).await;
    assert_json(&s, &retried, &first);
    expect_error(
        &mut s,
        "thread/start",
        patched(params, json!({"approvalPolicy": "on-request"})),
        -32600,
        &conflict("start-1", "thread/start"),
    )
    .await;

    let fork = json!({"threadId": THREAD, "idempotencyKey": "fork-1"});
    let forked = s.call("thread/fork", fork.clone()).await;
    s.expect("thread/started").await;
    let forked_id = forked["thread"]["id"].clone();
    let again = s.call("thread/fork", fork.clone()).await;
    assert_json(&s, &again["thread"]["id"], &forked_id);
    expect_error(
        &mut s,
        "thread/fork",
        patched(fork, json!({"ephemeral": true})),
        -32600,
        &conflict("fork-1", "thread/fork"),
    )
    .await;

    // Two threads in all: the source and one fork.
    let listed = s.call("thread/loaded/list", json!({})).await;
    let mut data: Vec<String> = listed["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|id| id.as_str().unwrap_or_default().to_owned())
        .collect();
    data.sort();
    let mut want = vec![
        THREAD.to_owned(),
        forked_id.as_str().unwrap_or_default().to_owned(),
    ];
    want.sort();
    assert_json(&s, &json!(data), &json!(want));
    if s.backlog_has("thread/started") {
        s.fail("a retried thread/start or thread/fork created a thread");
    }
    s.close().await;
}
