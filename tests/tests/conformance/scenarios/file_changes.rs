//! apply29: the agent's patches (the scripted agent's `/patch`) as `fileChange` items: the
//! item brackets its approval (`item/fileChange/requestApproval`), `item/fileChange/patchUpdated`
//! carries its changes, and an applied patch is followed by `turn/diff/updated`; a declined
//! patch and one that does not parse complete `declined` and `failed` without a diff. Each
//! compared message by message.
//!
//! The scenario servers run the default `read-only` sandbox, in which every change asks.

use serde_json::{Value, json};

use super::*;
use crate::session::{Session, Transport};

const TURN: &str = "<id:2>";
const INPUT_ITEM: &str = "<id:3>";
const ITEM: &str = "<id:4>";

const ADD_NOTES: &str = "/patch\n*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch";
const NOTES_DIFF: &str = "diff --git a/notes.txt b/notes.txt\nnew file mode 100644\n\
                          --- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+hello\n";
const REASON: &str = "the patch changes notes.txt outside the writable roots; the sandbox is \
                      read-only, so every change needs approval";

fn notes_changes() -> Value {
    json!([{"path": "<home>/notes.txt", "kind": {"type": "add"}, "diff": NOTES_DIFF}])
}

fn file_change(id: &str, changes: Value, status: &str) -> Value {
    json!({"type": "fileChange", "id": id, "changes": changes, "status": status})
}

/// The item starts with its planned changes and `item/fileChange/patchUpdated` repeats them.
fn opening(turn: &str, changes: Value) -> Vec<Value> {
    vec![
        item_note(
            "item/started",
            turn,
            file_change(ITEM, changes.clone(), "inProgress"),
        ),
        note(
            "item/fileChange/patchUpdated",
            json!({"threadId": THREAD, "turnId": turn, "itemId": ITEM, "changes": changes}),
        ),
    ]
}

/// Checks the approval request and answers it with `decision`; returns its id.
async fn answer_approval(s: &mut Session, decision: &str) -> Value {
    expect_sequence(s, &[status_note(active(&["waitingOnApproval"]))]).await;
    let approval = s.expect("item/fileChange/requestApproval").await;
    assert_json(
        s,
        &approval,
        &json!({
            "id": 0, "method": "item/fileChange/requestApproval",
            "params": {
                "threadId": THREAD, "turnId": TURN, "itemId": ITEM, "startedAtMs": "<time>",
                "reason": REASON, "grantRoot": null,
            },
        }),
    );
    s.respond(&approval["id"], json!({"decision": decision}))
        .await;
    expect_sequence(
        s,
        &[
            note(
                "serverRequest/resolved",
                json!({"threadId": THREAD, "turnId": TURN, "requestId": 0}),
            ),
            status_note(active(&[])),
        ],
    )
    .await;
    approval["id"].clone()
}

/// An approved patch: the item completes, the turn's diff follows, the agent reports what the
/// model would be told, and the stored turn holds the completed item.
pub(crate) async fn file_change_approved_then_turn_diff(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "on-request").await;
    start_turn(&mut s, TURN, ADD_NOTES).await;
    let mut expected = turn_opening(TURN, INPUT_ITEM, ADD_NOTES);
    expected.extend(opening(TURN, notes_changes()));
    expect_sequence(&mut s, &expected).await;
    answer_approval(&mut s, "accept").await;
    expect_sequence(
        &mut s,
        &[
            item_note(
                "item/completed",
                TURN,
                file_change(ITEM, notes_changes(), "completed"),
            ),
            note(
                "turn/diff/updated",
                json!({"threadId": THREAD, "turnId": TURN, "diff": NOTES_DIFF}),
            ),
        ],
    )
    .await;
    let (_, completed) = s.read_until("turn/completed").await;
    let items = &completed["params"]["turn"]["items"];
    assert_json(
        &s,
        &json!([items[1], items[2]["text"]]),
        &json!([
            file_change(ITEM, notes_changes(), "completed"),
            "patch: The patch was applied; every file was written:\nadded notes.txt",
        ]),
    );
    s.close().await;
}

/// A declined patch completes `declined` and sends no diff; a patch that does not parse
/// completes `failed` with no changes, and the agent hears which line is wrong.
pub(crate) async fn file_change_declined_or_unparsable(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "on-request").await;
    start_turn(&mut s, TURN, ADD_NOTES).await;
    let mut expected = turn_opening(TURN, INPUT_ITEM, ADD_NOTES);
    expected.extend(opening(TURN, notes_changes()));
    expect_sequence(&mut s, &expected).await;
    answer_approval(&mut s, "decline").await;
    expect_sequence(
        &mut s,
        &[item_note(
            "item/completed",
            TURN,
            file_change(ITEM, notes_changes(), "declined"),
        )],
    )
    .await;
    let (before, _) = s.read_until("turn/completed").await;
    if before.iter().any(|m| m["method"] == "turn/diff/updated") {
        s.fail("a declined patch sent a turn diff");
    }

    let second_turn = "<id:6>";
    let broken = "/patch\n*** Begin Patch\n*** Rename File: a.txt\n*** End Patch";
    expect_result(
        &mut s,
        "turn/start",
        json!({"threadId": THREAD, "input": [{"type": "text", "text": broken}]}),
        json!({"turn": turn(second_turn, "inProgress", vec![])}),
    )
    .await;
    let failed_item = "<id:8>";
    let mut expected = turn_opening(second_turn, "<id:7>", broken);
    expected.extend([
        item_note(
            "item/started",
            second_turn,
            file_change(failed_item, json!([]), "inProgress"),
        ),
        item_note(
            "item/completed",
            second_turn,
            file_change(failed_item, json!([]), "failed"),
        ),
    ]);
    expect_sequence(&mut s, &expected).await;
    let (before, completed) = s.read_until("turn/completed").await;
    if before.iter().any(|m| m["method"] == "turn/diff/updated") {
        s.fail("a patch that does not parse sent a turn diff");
    }
    let said = completed["params"]["turn"]["items"][2]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if !(said.contains("no file was changed") && said.contains("line 2")) {
        s.fail(format!("the agent was not told what to correct: {said}"));
    }
    s.close().await;
}
