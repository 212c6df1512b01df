//! Thread maintenance (issue 15): archive and unarchive with their notifications and the
//! `archived` filter of `thread/list`; `thread/compact/start` with its compaction turn and
//! `thread/compacted`, and the summary later turns are given; `thread/revert` with
//! `thread/reverted`, and `thread/rollback`; `thread/attachment/list` one page at a time.

use serde_json::{Value, json};

use super::*;
use crate::session::{Session, Transport};

/// Runs a scripted turn `turn_id` on [`THREAD`] with `text` as input (item `input_item`),
/// expecting the agent's reply `answer` (item `answer_item`); returns the completed items.
async fn scripted_turn(
    s: &mut Session,
    ids: (&str, &str, &str),
    text: &str,
    answer: &str,
) -> Vec<Value> {
    let (turn_id, input_item, answer_item) = ids;
    start_turn(s, turn_id, text).await;
    let items = vec![
        user_message(input_item, text),
        agent_message(answer_item, answer),
    ];
    let words: Vec<&str> = answer.split_inclusive(' ').collect();
    let mut expected = turn_opening(turn_id, input_item, text);
    expected.extend(streamed_agent_message(turn_id, answer_item, &words));
    expected.extend(turn_closing(turn_id, items.clone()));
    expect_sequence(s, &expected).await;
    items
}

/// A turn whose input is plain text, answered with the scripted agent's echo.
async fn echo_turn(s: &mut Session, ids: (&str, &str, &str), text: &str) -> Vec<Value> {
    scripted_turn(s, ids, text, &format!("You said: \"{text}\"")).await
}

/// `thread/archive` unloads the thread and hides it from `thread/list`; an archived thread is
/// read and listed with `archived: true` but not resumed or given turns; `thread/unarchive`
/// lists it again.
pub(crate) async fn archive_and_unarchive(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    echo_turn(&mut s, ("<id:2>", "<id:3>", "<id:4>"), "hi").await;
    let stored = thread(
        THREAD,
        json!({"preview": "hi", "status": {"type": "notLoaded"}}),
    );

    expect_result(
        &mut s,
        "thread/archive",
        json!({"threadId": THREAD}),
        json!({}),
    )
    .await;
    expect_sequence(
        &mut s,
        &[
            status_note(json!({"type": "notLoaded"})),
            note("thread/closed", json!({"threadId": THREAD})),
            note("thread/archived", json!({"threadId": THREAD})),
        ],
    )
    .await;

    let page =
        |data: Vec<Value>| json!({"data": data, "nextCursor": null, "backwardsCursor": null});
    expect_result(&mut s, "thread/list", json!({}), page(vec![])).await;
    expect_result(
        &mut s,
        "thread/list",
        json!({"archived": true}),
        page(vec![stored.clone()]),
    )
    .await;
    expect_result(
        &mut s,
        "thread/read",
        json!({"threadId": THREAD}),
        json!({"thread": stored.clone()}),
    )
    .await;
    let not_found = format!("thread not found: {THREAD}");
    expect_error(
        &mut s,
        "turn/start",
        json!({"threadId": THREAD, "input": [{"type": "text", "text": "again"}]}),
        -32600,
        &not_found,
    )
    .await;
    expect_error(
        &mut s,
        "thread/resume",
        json!({"threadId": THREAD}),
        -32600,
        &format!("thread {THREAD} is archived; call thread/unarchive first"),
    )
    .await;
    expect_error(
        &mut s,
        "thread/archive",
        json!({"threadId": THREAD}),
        -32600,
        &not_found,
    )
    .await;

    let unarchived = expect_unarchive(&mut s, &stored).await;
    expect_error(
        &mut s,
        "thread/unarchive",
        json!({"threadId": THREAD}),
        -32600,
        &format!("thread {THREAD} is not archived"),
    )
    .await;
    expect_result(&mut s, "thread/list", json!({}), page(vec![unarchived])).await;
    expect_result(
        &mut s,
        "thread/list",
        json!({"archived": true}),
        page(vec![]),
    )
    .await;
    s.close().await;
}

async fn expect_unarchive(s: &mut Session, stored: &Value) -> Value {
    expect_result(
        s,
        "thread/unarchive",
        json!({"threadId": THREAD}),
        json!({"thread": stored}),
    )
    .await;
    expect_sequence(s, &[note("thread/unarchived", json!({"threadId": THREAD}))]).await;
    stored.clone()
}

/// `thread/compact/start` answers `{}` and runs a compaction turn: a `contextCompaction`
/// item, `thread/compacted`, `turn/completed`; the next turn is given the summary in place
/// of the turns it replaced.
pub(crate) async fn compaction_turn_and_summary(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    echo_turn(&mut s, ("<id:2>", "<id:3>", "<id:4>"), "hi").await;

    expect_result(
        &mut s,
        "thread/compact/start",
        json!({"threadId": THREAD}),
        json!({}),
    )
    .await;
    let compaction_turn = "<id:5>";
    let item = json!({"type": "contextCompaction", "id": "<id:5>-compaction"});
    expect_sequence(
        &mut s,
        &[
            status_note(active(&[])),
            note(
                "turn/started",
                json!({"threadId": THREAD, "turn": turn(compaction_turn, "inProgress", vec![])}),
            ),
            item_note("item/started", compaction_turn, item.clone()),
            item_note("item/completed", compaction_turn, item.clone()),
            note(
                "thread/compacted",
                json!({"threadId": THREAD, "turnId": compaction_turn}),
            ),
            status_note(json!({"type": "idle"})),
            note(
                "turn/completed",
                json!({"threadId": THREAD, "turn": turn(compaction_turn, "completed", vec![item])}),
            ),
        ],
    )
    .await;

    // The scripted agent's `/history` shows what it was given: the summary, not the turn.
    let summary = "Summary of 1 earlier turn:\n- user: hi\n- agent: You said: \"hi\"";
    let answer = format!("history: {}", json!([summary]));
    scripted_turn(&mut s, ("<id:6>", "<id:7>", "<id:8>"), "/history", &answer).await;

    expect_error(
        &mut s,
        "thread/compact/start",
        json!({"threadId": "missing"}),
        -32600,
        "thread not found: missing",
    )
    .await;
    s.close().await;
}

/// `thread/revert` drops a turn and every later one (then `thread/reverted`);
/// `thread/rollback` drops the last turns and answers with the rest; the agent is given only
/// what is left.
pub(crate) async fn revert_and_rollback(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    let first = echo_turn(&mut s, ("<id:2>", "<id:3>", "<id:4>"), "a").await;
    let second = echo_turn(&mut s, ("<id:5>", "<id:6>", "<id:7>"), "b").await;
    echo_turn(&mut s, ("<id:8>", "<id:9>", "<id:10>"), "c").await;

    expect_result(
        &mut s,
        "thread/revert",
        json!({"threadId": THREAD, "beforeTurnId": "<id:8>"}),
        json!({
            "thread": thread(THREAD, json!({"preview": "a"})),
            "turnsBackwardsCursor": null, "itemsBackwardsCursor": null,
        }),
    )
    .await;
    expect_sequence(
        &mut s,
        &[note("thread/reverted", json!({"threadId": THREAD}))],
    )
    .await;
    let first_turn = turn("<id:2>", "completed", first);
    expect_result(
        &mut s,
        "thread/turns/list",
        json!({"threadId": THREAD, "sortDirection": "asc", "itemsView": "full"}),
        json!({
            "data": [first_turn.clone(), turn("<id:5>", "completed", second)],
            "nextCursor": null, "backwardsCursor": "at:<id:2>",
        }),
    )
    .await;
    expect_error(
        &mut s,
        "thread/revert",
        json!({"threadId": THREAD, "beforeTurnId": "<id:8>"}),
        -32600,
        &format!("turn not found in thread {THREAD}: <id:8>"),
    )
    .await;

    expect_result(
        &mut s,
        "thread/rollback",
        json!({"threadId": THREAD, "numTurns": 1}),
        json!({"thread": thread(THREAD, json!({"preview": "a", "turns": [first_turn]}))}),
    )
    .await;
    expect_error(
        &mut s,
        "thread/rollback",
        json!({"threadId": THREAD, "numTurns": 0}),
        -32600,
        "numTurns must be at least 1",
    )
    .await;

    let answer = format!("history: {}", json!(["a"]));
    scripted_turn(
        &mut s,
        ("<id:11>", "<id:12>", "<id:13>"),
        "/history",
        &answer,
    )
    .await;
    s.close().await;
}

/// `thread/attachment/list`: oldest first, one page at a time, the cursor naming the last
/// attachment of the previous page; a thread that does not exist has none.
pub(crate) async fn attachment_list_pages(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    let mut attachments = Vec::new();
    for (index, key) in ["k1", "k2", "k3"].into_iter().enumerate() {
        let id = format!("<id:{}>", index + 2);
        let attachment = json!({
            "id": id, "attachmentType": "note", "identityKey": key,
            "payload": {"n": index}, "createdAt": "<time>",
        });
        expect_result(
            &mut s,
            "thread/attachment/add",
            json!({
                "threadId": THREAD, "attachmentType": "note", "identityKey": key,
                "payload": {"n": index},
            }),
            json!({"outcome": "created", "attachment": attachment}),
        )
        .await;
        expect_sequence(
            &mut s,
            &[note(
                "thread/attachment/updated",
                json!({
                    "threadId": THREAD, "attachmentType": "note", "identityKey": key,
                    "attachmentId": id, "operation": "created",
                }),
            )],
        )
        .await;
        attachments.push(attachment);
    }
    expect_result(
        &mut s,
        "thread/attachment/list",
        json!({"threadId": THREAD, "limit": 2}),
        json!({"data": attachments[..2], "nextCursor": "<id:3>"}),
    )
    .await;
    expect_result(
        &mut s,
        "thread/attachment/list",
        json!({"threadId": THREAD, "limit": 2, "cursor": "<id:3>"}),
        json!({"data": attachments[2..], "nextCursor": null}),
    )
    .await;
    expect_result(
        &mut s,
        "thread/attachment/list",
        json!({"threadId": THREAD}),
        json!({"data": attachments, "nextCursor": null}),
    )
    .await;
    expect_result(
        &mut s,
        "thread/attachment/list",
        json!({"threadId": "missing"}),
        json!({"data": [], "nextCursor": null}),
    )
    .await;
    expect_error(
        &mut s,
        "thread/attachment/list",
        json!({"threadId": THREAD, "cursor": "bogus"}),
        -32600,
        "invalid cursor: bogus",
    )
    .await;
    s.close().await;
}
