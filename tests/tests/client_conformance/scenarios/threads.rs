//! Thread lifecycle through the client's typed helpers: list, read, fork, name and delete;
//! attachments, each reply resolved before its update reaches a subscription; idle unload and
//! resume.

use std::pin::pin;

use serde_json::{Value, json};
use tandem_client::Subscription;
use tandem_protocol::{
    ApprovalPolicy, ConfigReadParams, SortDirection, ThreadAttachmentAddParams,
    ThreadAttachmentRemoveParams, ThreadDeleteParams, ThreadForkParams, ThreadListParams,
    ThreadLoadedListParams, ThreadNameSetParams, ThreadReadParams, ThreadResumeParams,
    ThreadUnsubscribeParams, TurnStatus,
};

use super::*;
use crate::harness::{Backend, Harness, Setup, client_options};

/// `thread/loaded/list` must show exactly `loaded`.
async fn expect_loaded(h: &Harness, loaded: Value) {
    let reply = h
        .call(
            "thread/loaded/list",
            h.client.list_loaded_threads(ThreadLoadedListParams::new()),
        )
        .await;
    h.expect_json(
        "thread/loaded/list",
        &reply,
        json!({"data": loaded, "nextCursor": null}),
    );
}

/// `thread/list`, `thread/read`, `thread/fork`, `thread/name/set` and `thread/delete`, with
/// the notifications each one promises.
pub(crate) async fn thread_list_read_fork_name_delete(backend: Backend) {
    let h = Harness::open(backend).await;
    let mut events = h.subscribe_all();
    let source = start_thread(&h, &mut events, ApprovalPolicy::Never).await;
    let done = hi_turn(&h, &mut events, &source.id).await;

    let named = h
        .call(
            "thread/name/set",
            h.client
                .set_thread_name(ThreadNameSetParams::new(&source.id, "  first thread  ")),
        )
        .await;
    h.expect_json("thread/name/set", &named, json!({}));
    h.expect_messages(
        &mut events,
        &[note(
            "thread/name/updated",
            json!({"threadId": THREAD, "threadName": "first thread"}),
        )],
    )
    .await;
    h.expect_server_error(
        "an empty name",
        h.client
            .set_thread_name(ThreadNameSetParams::new(&source.id, "   ")),
        -32600,
        "thread name must not be empty",
    )
    .await;

    let named = json!({"name": "first thread", "preview": "hi"});
    let source_json = thread(THREAD, named.clone());
    let read = h
        .call(
            "thread/read",
            h.client.read_thread(ThreadReadParams::new(&source.id)),
        )
        .await;
    h.expect_json("thread/read", &read, json!({"thread": source_json.clone()}));
    let read = h
        .call(
            "thread/read with turns",
            h.client
                .read_thread(ThreadReadParams::new(&source.id).include_turns(true)),
        )
        .await;
    h.expect_json(
        "thread/read with turns",
        &read,
        json!({"thread": thread(THREAD, patched(named.clone(), json!({"turns": [done.clone()]})))}),
    );

    // The fork: a new id, the source named as its origin, name and history copied.
    let fork = "<id:5>";
    let forked = thread(
        fork,
        patched(named.clone(), json!({"forkedFromId": THREAD})),
    );
    let reply = h
        .call(
            "thread/fork",
            h.client.fork_thread(ThreadForkParams::new(&source.id)),
        )
        .await;
    h.expect_json(
        "thread/fork",
        &reply,
        session_reply("never", patched(forked.clone(), json!({"turns": [done]}))),
    );
    let fork_id = reply.thread.id;
    h.expect_messages(
        &mut events,
        &[note("thread/started", json!({"thread": forked.clone()}))],
    )
    .await;

    let list = h
        .call(
            "thread/list ascending",
            h.client
                .list_threads(ThreadListParams::new().sort_direction(SortDirection::Asc)),
        )
        .await;
    h.expect_json(
        "thread/list ascending",
        &list,
        json!({"data": [source_json.clone(), forked.clone()], "nextCursor": null, "backwardsCursor": null}),
    );
    // Pages of one, newest first; the cursor is opaque, so it is only passed back.
    let mut page = h
        .call(
            "thread/list, a page of one",
            h.client.list_threads(ThreadListParams::new().limit(1)),
        )
        .await;
    let Some(cursor) = page.next_cursor.take() else {
        h.fail("a first page of one of two has a cursor");
    };
    h.expect_json(
        "thread/list, the first page",
        &page,
        json!({"data": [forked], "nextCursor": null, "backwardsCursor": null}),
    );
    let page = h
        .call(
            "thread/list, the second page",
            h.client
                .list_threads(ThreadListParams::new().limit(1).cursor(cursor)),
        )
        .await;
    h.expect_json(
        "thread/list, the second page",
        &page,
        json!({"data": [source_json.clone()], "nextCursor": null, "backwardsCursor": null}),
    );
    expect_loaded(&h, json!([THREAD, fork])).await;

    // Deleting the loaded fork unloads it first; `thread/deleted` follows.
    let deleted = h
        .call(
            "thread/delete",
            h.client.delete_thread(ThreadDeleteParams::new(&fork_id)),
        )
        .await;
    h.expect_json("thread/delete", &deleted, json!({}));
    h.expect_messages(
        &mut events,
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
    let list = h
        .call(
            "thread/list after the delete",
            h.client.list_threads(ThreadListParams::new()),
        )
        .await;
    h.expect_json(
        "thread/list after the delete",
        &list,
        json!({"data": [source_json], "nextCursor": null, "backwardsCursor": null}),
    );
    h.expect_server_error(
        "thread/read of the deleted fork",
        h.client.read_thread(ThreadReadParams::new(&fork_id)),
        -32600,
        &format!("thread not found: {fork}"),
    )
    .await;
    h.close().await;
}

/// Runs `call` while reading `events`, and fails unless the reply has resolved by the time the
/// update `method` reaches the subscription: the server delivers the reply first, and the
/// client must not reorder them. Returns the reply and the update, normalized.
async fn reply_before_update<T: serde::Serialize>(
    h: &Harness,
    events: &mut Subscription,
    what: &str,
    call: impl Future<Output = Result<T, tandem_client::ClientError>>,
) -> (Value, Value) {
    let mut call = pin!(call);
    let outcome = h
        .within(what, async {
            tokio::select! {
                // Polled first: once both are ready, the reply wins.
                biased;
                reply = &mut call => Ok(reply),
                event = events.next() => Err(event),
            }
        })
        .await;
    let reply = match outcome {
        Ok(Ok(reply)) => reply,
        Ok(Err(error)) => h.fail(format!("{what} failed: {error}")),
        Err(event) => h.fail(format!(
            "{what}: an event reached the subscription before the reply resolved: {event:?}"
        )),
    };
    let reply = h.json(&reply);
    let update = h.next_message(events).await;
    (reply, update)
}

/// `thread/attachment/add` and `remove`: each reply resolves before its update arrives, a
/// repeated add is `existing` without an update, and removing nothing sends none.
pub(crate) async fn attachment_replies_arrive_before_their_updates(backend: Backend) {
    let h = Harness::open(backend).await;
    let mut events = h.subscribe_all();
    let thread_id = start_thread(&h, &mut events, ApprovalPolicy::Never)
        .await
        .id;

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
    let add = ThreadAttachmentAddParams::new(
        &thread_id,
        "pullRequest",
        "tandem#8",
        json!({"title": "conformance", "draft": true}),
    );

    let (reply, created) = reply_before_update(
        &h,
        &mut events,
        "thread/attachment/add",
        h.client.add_attachment(add.clone()),
    )
    .await;
    h.assert_json(
        "thread/attachment/add",
        &reply,
        &json!({"outcome": "created", "attachment": attachment}),
    );
    h.assert_json("the created update", &created, &update("created"));

    // Same type and key: the stored attachment, unchanged, and no update.
    let again = ThreadAttachmentAddParams {
        payload: json!({"title": "changed"}),
        ..add.clone()
    };
    let reply = h
        .call(
            "thread/attachment/add again",
            h.client.add_attachment(again),
        )
        .await;
    h.expect_json(
        "thread/attachment/add again",
        &reply,
        json!({"outcome": "existing", "attachment": attachment}),
    );

    let remove = ThreadAttachmentRemoveParams::new(&thread_id, "pullRequest", "tandem#8");
    let (reply, deleted) = reply_before_update(
        &h,
        &mut events,
        "thread/attachment/remove",
        h.client.remove_attachment(remove.clone()),
    )
    .await;
    h.assert_json("thread/attachment/remove", &reply, &json!({}));
    h.assert_json("the deleted update", &deleted, &update("deleted"));

    // Nothing left to remove: `{}` and no update. The `thread/name/set` that follows proves
    // nothing else was delivered in between: its update is the very next event.
    let reply = h
        .call(
            "thread/attachment/remove again",
            h.client.remove_attachment(remove),
        )
        .await;
    h.expect_json("thread/attachment/remove again", &reply, json!({}));
    h.call(
        "thread/name/set",
        h.client
            .set_thread_name(ThreadNameSetParams::new(&thread_id, "marker")),
    )
    .await;
    h.expect_messages(
        &mut events,
        &[note(
            "thread/name/updated",
            json!({"threadId": THREAD, "threadName": "marker"}),
        )],
    )
    .await;

    h.expect_server_error(
        "thread/attachment/add with an empty type",
        h.client.add_attachment(ThreadAttachmentAddParams {
            attachment_type: String::new(),
            ..add
        }),
        -32602,
        "attachmentType must not be empty",
    )
    .await;
    h.close().await;
}

/// With `thread_unload_delay_secs = 1`, a thread nobody subscribes to is unloaded after the
/// delay, and `thread/resume` loads it again with its history.
pub(crate) async fn idle_unload_then_resume(backend: Backend) {
    let setup = Setup {
        thread_unload_delay_secs: Some(1),
        ..Setup::default()
    };
    let h = Harness::start(backend, setup, client_options()).await;
    let mut events = h.subscribe_all();
    let thread_id = start_thread(&h, &mut events, ApprovalPolicy::Never)
        .await
        .id;
    let done = hi_turn(&h, &mut events, &thread_id).await;
    // The effective configuration names the delay (the other keys are the server's business).
    let config = h
        .call(
            "config/read",
            h.client.config_read(ConfigReadParams::default()),
        )
        .await;
    let config = h.json(&config);
    h.assert_json(
        "config/read",
        &json!([
            config["config"]["thread_unload_delay_secs"],
            config["config"]["tandem_home"],
            config["origins"],
            config["layers"],
        ]),
        &json!([1, "<home>", {}, null]),
    );

    let unsubscribed = h
        .call(
            "thread/unsubscribe",
            h.client
                .unsubscribe_thread(ThreadUnsubscribeParams::new(&thread_id)),
        )
        .await;
    h.expect_json(
        "thread/unsubscribe",
        &unsubscribed,
        json!({"status": "unsubscribed"}),
    );
    // Still loaded right after: unsubscribing never unloads at once.
    expect_loaded(&h, json!([THREAD])).await;
    // The unload, a second later.
    h.expect_messages(
        &mut events,
        &[
            status_note(json!({"type": "notLoaded"})),
            note("thread/closed", json!({"threadId": THREAD})),
        ],
    )
    .await;
    expect_loaded(&h, json!([])).await;
    let read = h
        .call(
            "thread/read",
            h.client.read_thread(ThreadReadParams::new(&thread_id)),
        )
        .await;
    h.expect_json(
        "thread/read",
        &read,
        json!({"thread": thread(THREAD, json!({"preview": "hi", "status": {"type": "notLoaded"}}))}),
    );
    let unsubscribed = h
        .call(
            "thread/unsubscribe again",
            h.client
                .unsubscribe_thread(ThreadUnsubscribeParams::new(&thread_id)),
        )
        .await;
    h.expect_json(
        "thread/unsubscribe again",
        &unsubscribed,
        json!({"status": "notLoaded"}),
    );

    let resumed = h
        .call(
            "thread/resume",
            h.client.resume_thread(ThreadResumeParams::new(&thread_id)),
        )
        .await;
    // The cursors start at the newest turn and at its newest item.
    let newest = done["id"].as_str().unwrap_or_default().to_owned();
    let mut expected = session_reply(
        "never",
        thread(THREAD, json!({"preview": "hi", "turns": [done]})),
    );
    expected["turnsBackwardsCursor"] = json!(format!("at:{newest}"));
    expected["itemsBackwardsCursor"] = json!(format!("at:{newest}/1"));
    h.expect_json("thread/resume", &resumed, expected);
    expect_loaded(&h, json!([THREAD])).await;
    // Subscribed again: the next turn runs to completion on this client as before.
    let turn = start_turn(&h, &thread_id, "<id:5>", "again").await;
    let completed = h.call("wait_completed", turn.wait_completed()).await;
    if completed.status != TurnStatus::Completed {
        h.fail(format!("the resumed thread's turn: {completed:?}"));
    }
    h.close().await;
}
