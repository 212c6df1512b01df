//! Thread lifecycle: list, read, fork, name and delete; attachments and the order of their
//! replies and updates; idle unload and resume.

use serde_json::{Value, json};

use super::*;
use crate::session::{Config, Session, Transport};

const TURN: &str = "<id:2>";

/// Runs one "hi" turn on [`THREAD`] and returns its completed items.
async fn hi_turn(s: &mut Session) -> Vec<Value> {
    start_turn(s, TURN, "hi").await;
    let items = vec![
        user_message("<id:3>", "hi"),
        agent_message("<id:4>", "You said: \"hi\""),
    ];
    let mut expected = turn_opening(TURN, "<id:3>", "hi");
    expected.extend(streamed_agent_message(
        TURN,
        "<id:4>",
        &["You ", "said: ", "\"hi\""],
    ));
    expected.extend(turn_closing(TURN, items.clone()));
    expect_sequence(s, &expected).await;
    items
}

/// `thread/list`, `thread/read`, `thread/fork`, `thread/name/set` and `thread/delete`, with
/// the notifications each one promises.
pub(crate) async fn thread_list_read_fork_name_delete(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    let items = hi_turn(&mut s).await;
    let done = turn(TURN, "completed", items);

    expect_result(
        &mut s,
        "thread/name/set",
        json!({"threadId": THREAD, "name": "  first thread  "}),
        json!({}),
    )
    .await;
    expect_sequence(
        &mut s,
        &[note(
            "thread/name/updated",
            json!({"threadId": THREAD, "threadName": "first thread"}),
        )],
    )
    .await;
    expect_error(
        &mut s,
        "thread/name/set",
        json!({"threadId": THREAD, "name": "   "}),
        -32600,
        "thread name must not be empty",
    )
    .await;

    let named = json!({"name": "first thread", "preview": "hi"});
    let source = thread(THREAD, named.clone());
    expect_result(
        &mut s,
        "thread/read",
        json!({"threadId": THREAD}),
        json!({"thread": source}),
    )
    .await;
    expect_result(
        &mut s,
        "thread/read",
        json!({"threadId": THREAD, "includeTurns": true}),
        json!({"thread": thread(THREAD, patched(named.clone(), json!({"turns": [done]})))}),
    )
    .await;

    // The fork: a new id, the source named as its origin, name and history copied.
    let fork = "<id:5>";
    let forked = thread(
        fork,
        patched(named.clone(), json!({"forkedFromId": THREAD})),
    );
    expect_result(
        &mut s,
        "thread/fork",
        json!({"threadId": THREAD}),
        session_reply(
            "never",
            patched(forked.clone(), json!({"turns": [done.clone()]})),
        ),
    )
    .await;
    expect_sequence(&mut s, &[note("thread/started", json!({"thread": forked}))]).await;

    expect_result(
        &mut s,
        "thread/list",
        json!({"sortDirection": "asc"}),
        json!({"data": [source, forked], "nextCursor": null, "backwardsCursor": null}),
    )
    .await;
    // Pages of one, newest first; the cursor is opaque, so it is only passed back.
    let mut page = s.call("thread/list", json!({"limit": 1})).await;
    let cursor = page["nextCursor"].take();
    if !cursor.is_string() {
        s.fail(format!(
            "a first page of one of two has a cursor, got {cursor}"
        ));
    }
    assert_json(
        &s,
        &page,
        &json!({"data": [forked], "nextCursor": null, "backwardsCursor": null}),
    );
    expect_result(
        &mut s,
        "thread/list",
        json!({"limit": 1, "cursor": cursor}),
        json!({"data": [source], "nextCursor": null, "backwardsCursor": null}),
    )
    .await;
    expect_result(
        &mut s,
        "thread/loaded/list",
        json!({}),
        json!({"data": [THREAD, fork], "nextCursor": null}),
    )
    .await;

    // Deleting the loaded fork unloads it first; `thread/deleted` follows the reply. (The
    // unload notifications precede the reply on the wire; in-process a reply travels apart
    // from events, so only their order among the notifications is compared.)
    expect_result(
        &mut s,
        "thread/delete",
        json!({"threadId": fork}),
        json!({}),
    )
    .await;
    expect_sequence(
        &mut s,
        &[
            note(
                "thread/status/changed",
                json!({"threadId": fork, "status": {"type": "notLoaded"}}),
            ),
            note("thread/closed", json!({"threadId": fork})),
            note("thread/deleted", json!({"threadId": fork})),
        ],
    )
    .await;
    expect_result(
        &mut s,
        "thread/list",
        json!({}),
        json!({"data": [source], "nextCursor": null, "backwardsCursor": null}),
    )
    .await;
    expect_error(
        &mut s,
        "thread/read",
        json!({"threadId": fork}),
        -32600,
        &format!("thread not found: {fork}"),
    )
    .await;
    s.close().await;
}

/// `thread/attachment/add` and `remove`: each reply arrives before its update, a repeated add
/// is `existing` without an update, and removing nothing sends none.
pub(crate) async fn attachment_replies_arrive_before_their_updates(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;

    let attachment_id = "<id:2>";
    let attachment = json!({
        "id": attachment_id, "attachmentType": "pullRequest", "identityKey": "tandem#8",
        "payload": {"title": "conformance", "draft": true}, "createdAt": "<time>",
    });
    let update = |operation: &str| {
        note(
            "thread/attachment/updated",
            json!({
                "threadId": THREAD, "attachmentType": "pullRequest", "identityKey": "tandem#8",
                "attachmentId": attachment_id, "operation": operation,
            }),
        )
    };
    let add = json!({
        "threadId": THREAD, "attachmentType": "pullRequest", "identityKey": "tandem#8",
        "payload": {"title": "conformance", "draft": true},
    });

    expect_result(
        &mut s,
        "thread/attachment/add",
        add.clone(),
        json!({"outcome": "created", "attachment": attachment}),
    )
    .await;
    assert_reply_came_first(&s, "thread/attachment/add");
    expect_sequence(&mut s, &[update("created")]).await;

    // Same type and key: the stored attachment, unchanged, and no update.
    let again = patched(add.clone(), json!({"payload": {"title": "changed"}}));
    expect_result(
        &mut s,
        "thread/attachment/add",
        again,
        json!({"outcome": "existing", "attachment": attachment}),
    )
    .await;

    let remove = json!({
        "threadId": THREAD, "attachmentType": "pullRequest", "identityKey": "tandem#8",
    });
    expect_result(
        &mut s,
        "thread/attachment/remove",
        remove.clone(),
        json!({}),
    )
    .await;
    assert_reply_came_first(&s, "thread/attachment/remove");
    expect_sequence(&mut s, &[update("deleted")]).await;

    // Nothing left to remove: `{}` and no update. The `thread/name/set` that follows proves
    // nothing else was queued in between: its update is the very next message.
    expect_result(&mut s, "thread/attachment/remove", remove, json!({})).await;
    expect_result(
        &mut s,
        "thread/name/set",
        json!({"threadId": THREAD, "name": "marker"}),
        json!({}),
    )
    .await;
    expect_sequence(
        &mut s,
        &[note(
            "thread/name/updated",
            json!({"threadId": THREAD, "threadName": "marker"}),
        )],
    )
    .await;

    expect_error(
        &mut s,
        "thread/attachment/add",
        patched(add.clone(), json!({"attachmentType": ""})),
        -32602,
        "attachmentType must not be empty",
    )
    .await;
    s.close().await;
}

/// Fails unless the update that follows `method`'s reply was still unread when the reply
/// arrived.
fn assert_reply_came_first(s: &Session, method: &str) {
    if s.backlog_has("thread/attachment/updated") {
        s.fail(format!(
            "thread/attachment/updated arrived before the {method} reply"
        ));
    }
}

/// With `thread_unload_delay_secs = 1`, a thread nobody subscribes to is unloaded after the
/// delay, and `thread/resume` loads it again with its history.
pub(crate) async fn idle_unload_then_resume(transport: Transport) {
    let config = Config {
        thread_unload_delay_secs: Some(1),
        ..Config::default()
    };
    let mut s = Session::open_with(transport, config).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    let items = hi_turn(&mut s).await;
    // The effective configuration names the delay (the other keys are the server's business).
    let config = s.call("config/read", json!({})).await;
    assert_json(
        &s,
        &json!([
            config["config"]["thread_unload_delay_secs"],
            config["config"]["tandem_home"],
            config["origins"],
            config["layers"],
        ]),
        &json!([1, "<home>", {}, null]),
    );

    expect_result(
        &mut s,
        "thread/unsubscribe",
        json!({"threadId": THREAD}),
        json!({"status": "unsubscribed"}),
    )
    .await;
    // Still loaded right after: unsubscribing never unloads at once.
    expect_result(
        &mut s,
        "thread/loaded/list",
        json!({}),
        json!({"data": [THREAD], "nextCursor": null}),
    )
    .await;
    // The unload, a second later.
    expect_sequence(
        &mut s,
        &[
            status_note(json!({"type": "notLoaded"})),
            note("thread/closed", json!({"threadId": THREAD})),
        ],
    )
    .await;
    expect_result(
        &mut s,
        "thread/loaded/list",
        json!({}),
        json!({"data": [], "nextCursor": null}),
    )
    .await;
    expect_result(
        &mut s,
        "thread/read",
        json!({"threadId": THREAD}),
        json!({"thread": thread(THREAD, json!({"preview": "hi", "status": {"type": "notLoaded"}}))}),
    )
    .await;
    expect_result(
        &mut s,
        "thread/unsubscribe",
        json!({"threadId": THREAD}),
        json!({"status": "notLoaded"}),
    )
    .await;

    let resumed = thread(
        THREAD,
        json!({"preview": "hi", "turns": [turn(TURN, "completed", items)]}),
    );
    expect_result(
        &mut s,
        "thread/resume",
        json!({"threadId": THREAD}),
        // The cursors start at the newest turn and at its newest item (docs/protocol.md,
        // "Paging a thread's history").
        patched(
            session_reply("never", resumed),
            json!({"turnsBackwardsCursor": format!("at:{TURN}"),
                   "itemsBackwardsCursor": format!("at:{TURN}/1")}),
        ),
    )
    .await;
    expect_result(
        &mut s,
        "thread/loaded/list",
        json!({}),
        json!({"data": [THREAD], "nextCursor": null}),
    )
    .await;
    // Subscribed again: the next turn streams to this connection as before.
    start_turn(&mut s, "<id:5>", "again").await;
    let (_, completed) = s.read_until("turn/completed").await;
    assert_json(
        &s,
        &completed["params"]["turn"]["status"],
        &json!("completed"),
    );
    s.close().await;
}
