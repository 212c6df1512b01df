//! Paging a thread's history (issue 16, docs/protocol.md "Paging a thread's history"):
//! `thread/turns/list` pages with their item views and backwards cursors,
//! `thread/items/list` across the thread and within a turn from an item anchor, the page and
//! cursors of `thread/resume`, and a thread resumed for paging that then runs a turn with its
//! whole history.

use serde_json::{Value, json};

use super::*;
use crate::session::{Config, Session, Transport};

/// `(turn id, user item id, agent item id, input)` of the three turns the scenario runs, by
/// the scenario's id numbering.
const TURNS: [(&str, &str, &str, &str); 3] = [
    ("<id:2>", "<id:3>", "<id:4>", "one"),
    ("<id:5>", "<id:6>", "<id:7>", "two"),
    ("<id:8>", "<id:9>", "<id:10>", "three"),
];

/// Runs a turn saying `text` and waits for it to complete.
async fn run_turn(s: &mut Session, turn_id: &str, text: &str) {
    start_turn(s, turn_id, text).await;
    let (_, completed) = s.read_until("turn/completed").await;
    assert_json(
        s,
        &completed["params"]["turn"]["status"],
        &json!("completed"),
    );
}

fn user(n: usize) -> Value {
    let (_, id, _, text) = TURNS[n];
    user_message(id, text)
}

fn agent(n: usize) -> Value {
    let (_, _, id, text) = TURNS[n];
    agent_message(id, &format!("You said: \"{text}\""))
}

/// Turn `n` as a page shows it with `view`.
fn listed_turn(n: usize, view: &str) -> Value {
    let items = match view {
        "notLoaded" => vec![],
        _ => vec![user(n), agent(n)],
    };
    patched(
        turn(TURNS[n].0, "completed", items),
        json!({"itemsView": view}),
    )
}

/// An entry of `thread/items/list`, with when its item started and completed.
fn entry(n: usize, item: Value) -> Value {
    json!({"turnId": TURNS[n].0, "item": item, "startedAtMs": "<time>",
           "completedAtMs": "<time>"})
}

/// Three turns, then every way of paging them, then a paged cold resume and a fourth turn.
pub(crate) async fn history_pages_by_cursor(transport: Transport) {
    let config = Config {
        thread_unload_delay_secs: Some(1),
        ..Config::default()
    };
    let mut s = Session::open_with(transport, config).await;
    s.initialize(true).await;
    start_thread(&mut s, THREAD, "never").await;
    for (turn_id, _, _, text) in TURNS {
        run_turn(&mut s, turn_id, text).await;
    }
    let (t1, t2, t3) = (TURNS[0].0, TURNS[1].0, TURNS[2].0);

    // Turns, newest first, summarized by default; then the rest from nextCursor.
    expect_result(
        &mut s,
        "thread/turns/list",
        json!({"threadId": THREAD, "limit": 2}),
        json!({"data": [listed_turn(2, "summary"), listed_turn(1, "summary")],
               "nextCursor": t2, "backwardsCursor": format!("at:{t3}")}),
    )
    .await;
    expect_result(
        &mut s,
        "thread/turns/list",
        json!({"threadId": THREAD, "limit": 2, "cursor": t2, "itemsView": "full"}),
        json!({"data": [listed_turn(0, "full")], "nextCursor": null,
               "backwardsCursor": format!("at:{t1}")}),
    )
    .await;
    // That page's backwards cursor, the other way, starts at its first turn again.
    expect_result(
        &mut s,
        "thread/turns/list",
        json!({"threadId": THREAD, "cursor": format!("at:{t1}"), "sortDirection": "asc",
               "itemsView": "notLoaded"}),
        json!({"data": [listed_turn(0, "notLoaded"), listed_turn(1, "notLoaded"),
                        listed_turn(2, "notLoaded")],
               "nextCursor": null, "backwardsCursor": format!("at:{t1}")}),
    )
    .await;

    // Items across the thread, oldest first, in pages of four.
    expect_result(
        &mut s,
        "thread/items/list",
        json!({"threadId": THREAD, "limit": 4}),
        json!({"data": [entry(0, user(0)), entry(0, agent(0)), entry(1, user(1)),
                        entry(1, agent(1))],
               "nextCursor": format!("{t2}/1"), "backwardsCursor": format!("at:{t1}/0")}),
    )
    .await;
    expect_result(
        &mut s,
        "thread/items/list",
        json!({"threadId": THREAD, "limit": 4, "cursor": format!("{t2}/1")}),
        json!({"data": [entry(2, user(2)), entry(2, agent(2))],
               "nextCursor": null, "backwardsCursor": format!("at:{t3}/0")}),
    )
    .await;
    // Within one turn, newest first, before an item anchor.
    expect_result(
        &mut s,
        "thread/items/list",
        json!({"threadId": THREAD, "turnId": t2, "sortDirection": "desc",
               "cursor": {"type": "item", "itemId": TURNS[1].2}}),
        json!({"data": [entry(1, user(1))], "nextCursor": null,
               "backwardsCursor": format!("at:{t2}/0")}),
    )
    .await;
    expect_error(
        &mut s,
        "thread/items/list",
        json!({"threadId": THREAD, "cursor": {"type": "item", "itemId": TURNS[1].2}}),
        -32602,
        "turnId is required when cursor is an item anchor",
    )
    .await;
    expect_error(
        &mut s,
        "thread/items/list",
        json!({"threadId": THREAD, "cursor": "garbage"}),
        -32600,
        "invalid cursor: garbage",
    )
    .await;
    expect_error(
        &mut s,
        "thread/turns/list",
        json!({"threadId": THREAD, "cursor": "at:garbage"}),
        -32600,
        "invalid cursor: at:garbage",
    )
    .await;

    // Unloaded, then resumed for paging: the newest turn in the page, no turns in the thread,
    // and cursors at the newest turn and item.
    s.call("thread/unsubscribe", json!({"threadId": THREAD}))
        .await;
    s.read_until("thread/closed").await;
    let preview = json!({"preview": "one"});
    expect_result(
        &mut s,
        "thread/resume",
        json!({"threadId": THREAD, "initialTurnsPage": {"limit": 1}}),
        patched(
            session_reply("never", thread(THREAD, preview.clone())),
            json!({
                "initialTurnsPage": {"data": [listed_turn(2, "summary")], "nextCursor": t3,
                                     "backwardsCursor": format!("at:{t3}")},
                "turnsBackwardsCursor": format!("at:{t3}"),
                "itemsBackwardsCursor": format!("at:{t3}/1"),
            }),
        ),
    )
    .await;
    // A turn on it still sees, and keeps, the whole history.
    run_turn(&mut s, "<id:11>", "four").await;
    let read = s
        .call(
            "thread/read",
            json!({"threadId": THREAD, "includeTurns": true}),
        )
        .await;
    let ids: Vec<Value> = read["thread"]["turns"]
        .as_array()
        .map(|turns| turns.iter().map(|turn| turn["id"].clone()).collect())
        .unwrap_or_default();
    assert_json(&s, &json!(ids), &json!([t1, t2, t3, "<id:11>"]));
    s.close().await;
}

/// `thread/resume.initialTurnsPage` is experimental, as in the reference.
pub(crate) async fn initial_turns_page_needs_experimental_api(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    expect_error(
        &mut s,
        "thread/resume",
        json!({"threadId": THREAD, "initialTurnsPage": {}}),
        -32600,
        "thread/resume.initialTurnsPage requires experimentalApi capability",
    )
    .await;
    // Without it, the cursors alone; a thread without turns has none.
    expect_result(
        &mut s,
        "thread/resume",
        json!({"threadId": THREAD, "excludeTurns": true}),
        patched(
            session_reply("never", thread(THREAD, json!({}))),
            json!({"turnsBackwardsCursor": null, "itemsBackwardsCursor": null}),
        ),
    )
    .await;
    s.close().await;
}
