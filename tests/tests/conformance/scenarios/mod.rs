//! The scenarios, each an `async fn(Transport)` listed once in `main.rs`, and the session steps
//! they share; the shapes of their expected results are in `crate::shapes`.
//!
//! Expected results are complete normalized messages (see `crate::normalize`): a scenario
//! compares whole replies and notifications, so a member added, dropped or renamed on one
//! transport fails it.

pub(crate) mod approvals_shared;
pub(crate) mod command_exec;
pub(crate) mod errors;
// apply29:
pub(crate) mod file_changes;
pub(crate) mod fs;
pub(crate) mod handshake;
pub(crate) mod idempotency;
// mcp30:
pub(crate) mod mcp;
pub(crate) mod models;
pub(crate) mod paging;
// reason29:
pub(crate) mod plan_reasoning;
pub(crate) mod processes;
pub(crate) mod replay;
pub(crate) mod search_shell;
pub(crate) mod thread_ops;
pub(crate) mod threads;
pub(crate) mod turns;

use serde_json::{Value, json};

use crate::session::{Session, assert_json};
pub(crate) use crate::shapes::*;

/// Takes the next messages and compares each with `expected`, in order.
pub(crate) async fn expect_sequence(session: &mut Session, expected: &[Value]) {
    for (index, want) in expected.iter().enumerate() {
        let method = want["method"].as_str().unwrap_or("a reply");
        let got = session.next(method).await;
        if &got != want {
            session.fail(format!(
                "message {index} of the expected sequence differs\nactual:\n{}\nexpected:\n{}",
                serde_json::to_string_pretty(&got).expect("serializes"),
                serde_json::to_string_pretty(want).expect("serializes"),
            ));
        }
    }
}

/// Sends `method` and compares its whole result with `expected`.
pub(crate) async fn expect_result(
    session: &mut Session,
    method: &str,
    params: Value,
    expected: Value,
) {
    let result = session.call(method, params).await;
    assert_json(session, &result, &expected);
}

/// Sends `method` and compares its error with `code` and `message`.
pub(crate) async fn expect_error(
    session: &mut Session,
    method: &str,
    params: Value,
    code: i64,
    message: &str,
) {
    let error = session.call_error(method, params).await;
    assert_json(session, &error, &rpc_error(code, message));
}

/// Starts a thread with cwd `<home>` and `approval_policy`, checks the reply and its
/// `thread/started`, and returns the thread as the reply showed it.
pub(crate) async fn start_thread(session: &mut Session, id: &str, approval_policy: &str) -> Value {
    start_thread_with(session, id, approval_policy, json!({})).await
}

/// [`start_thread`] with extra `thread/start` params.
pub(crate) async fn start_thread_with(
    session: &mut Session,
    id: &str,
    approval_policy: &str,
    extra: Value,
) -> Value {
    let params = patched(
        json!({"cwd": "<home>", "approvalPolicy": approval_policy}),
        extra,
    );
    let reply = session.call("thread/start", params).await;
    let expected_thread = thread(id, json!({}));
    assert_json(
        session,
        &reply,
        &session_reply(approval_policy, expected_thread.clone()),
    );
    expect_sequence(
        session,
        &[note("thread/started", json!({"thread": expected_thread}))],
    )
    .await;
    reply["thread"].clone()
}

/// Starts a turn on [`THREAD`] with one text input; checks the reply and returns nothing:
/// the turn's id is `turn_id` by the scenario's numbering.
pub(crate) async fn start_turn(session: &mut Session, turn_id: &str, text: &str) {
    expect_result(
        session,
        "turn/start",
        json!({"threadId": THREAD, "input": [{"type": "text", "text": text}]}),
        json!({"turn": turn(turn_id, "inProgress", vec![])}),
    )
    .await;
}
