//! A thread's server requests belong to the thread, not to one connection (docs/protocol.md,
//! "Shared server requests"): when the last subscriber leaves, a waiting approval is not
//! declined; a connection that resumes the thread is sent it again and may answer it.

use serde_json::json;

use crate::session::{Session, Transport, assert_json};

use super::*;

const TURN: &str = "<id:2>";

/// The only subscriber unsubscribes while an approval waits; the turn keeps waiting; resuming
/// the thread sends the approval again (same id) and answering it lets the command run.
pub(crate) async fn approval_waits_for_a_resuming_subscriber(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "on-request").await;
    start_turn(&mut s, TURN, "/sh echo approved-later").await;
    let (_, approval) = s.read_until("item/commandExecution/requestApproval").await;

    expect_result(
        &mut s,
        "thread/unsubscribe",
        json!({"threadId": THREAD}),
        json!({"status": "unsubscribed"}),
    )
    .await;
    let resumed = s
        .call(
            "thread/resume",
            json!({"threadId": THREAD, "excludeTurns": true}),
        )
        .await;
    // Still waiting on the approval: it was not declined when the subscriber left.
    assert_json(
        &s,
        &resumed["thread"]["status"],
        &active(&["waitingOnApproval"]),
    );
    let (_, again) = s.read_until("item/commandExecution/requestApproval").await;
    assert_json(&s, &again, &approval);
    s.respond(&again["id"], json!({"decision": "accept"})).await;

    let (before, completed) = s.read_until("turn/completed").await;
    let resolved = note(
        "serverRequest/resolved",
        json!({"threadId": THREAD, "turnId": TURN, "requestId": approval["id"]}),
    );
    if !before.contains(&resolved) {
        s.fail(format!(
            "no serverRequest/resolved for the approval among {before:?}"
        ));
    }
    let command = before
        .iter()
        .find(|m| {
            m["method"] == "item/completed" && m["params"]["item"]["type"] == "commandExecution"
        })
        .unwrap_or_else(|| s.fail("the command item never completed"));
    assert_json(
        &s,
        &json!([
            command["params"]["item"]["status"],
            command["params"]["item"]["exitCode"]
        ]),
        &json!(["completed", 0]),
    );
    assert_json(
        &s,
        &completed["params"]["turn"]["status"],
        &json!("completed"),
    );
    s.close().await;
}
