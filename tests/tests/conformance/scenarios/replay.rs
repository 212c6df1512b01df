//! Cursors and replay (docs/protocol.md, "Cursors and replay"): every notification to a
//! thread's subscribers carries a cursor; `thread/resume` with one replays exactly what
//! followed it, deltas and command output included, or answers a gap with the whole thread.

use serde_json::{Value, json};

use super::*;
use crate::session::{Config, Session, Transport};

const TURN: &str = "<id:2>";

/// Reads the running turn's notifications through `turn/completed`, each with its raw cursor;
/// checks that every one carries a cursor of this server whose `seq` follows the previous.
async fn read_turn(s: &mut Session) -> Vec<(Value, Value)> {
    let mut seen: Vec<(Value, Value)> = Vec::new();
    loop {
        let message = s.next("the turn's notifications").await;
        let Some(cursor) = s.last_cursor() else {
            s.fail(format!("a thread notification without a cursor: {message}"));
        };
        if let Some((_, previous)) = seen.last()
            && (cursor["epoch"] != previous["epoch"]
                || cursor["seq"].as_u64() != previous["seq"].as_u64().map(|seq| seq + 1))
        {
            s.fail(format!("cursor {cursor} does not follow {previous}"));
        }
        let done = message["method"] == "turn/completed";
        seen.push((message, cursor));
        if done {
            return seen;
        }
    }
}

/// A client that saw the turn up to some event and resumes from its cursor gets every later
/// event again, in order and with the same cursors, before the `thread/resume` reply; live
/// events then continue right after the last replayed one.
pub(crate) async fn resume_from_a_cursor_replays_what_followed(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    start_turn(&mut s, TURN, "hello there\n/sh printf out; printf put").await;
    let seen = read_turn(&mut s).await;
    let methods: Vec<&str> = seen
        .iter()
        .filter_map(|(message, _)| message["method"].as_str())
        .collect();
    for method in [
        "item/agentMessage/delta",
        "item/commandExecution/outputDelta",
    ] {
        assert!(
            methods.contains(&method),
            "the turn streams {method}: {methods:?}"
        );
    }

    // The client saw the first three events only: the rest is replayed.
    let cut = 3;
    let reply = s
        .call(
            "thread/resume",
            json!({"threadId": THREAD, "cursor": seen[cut - 1].1, "excludeTurns": true}),
        )
        .await;
    assert_json(
        &s,
        &json!([reply["gap"], reply["replayed"]]),
        &json!([false, seen.len() - cut]),
    );
    for (index, (want, want_cursor)) in seen[cut..].iter().enumerate() {
        let got = s.next("a replayed event").await;
        if &got != want || s.last_cursor().as_ref() != Some(want_cursor) {
            s.fail(format!(
                "replayed event {index} differs\nactual: {got} at {:?}\nexpected: {want} at {want_cursor}",
                s.last_cursor()
            ));
        }
    }
    // Nothing was sent twice, and the next live event follows the last replayed one.
    start_turn(&mut s, "<id:6>", "again").await;
    let next = s.next("the next live event").await;
    let last_seq = seen.last().and_then(|(_, cursor)| cursor["seq"].as_u64());
    let cursor = s.last_cursor();
    if next["method"] != "thread/status/changed"
        || cursor.as_ref().and_then(|cursor| cursor["seq"].as_u64()) != last_seq.map(|seq| seq + 1)
    {
        s.fail(format!(
            "expected the next live event after seq {last_seq:?}, got {next} at {cursor:?}"
        ));
    }
    read_turn(&mut s).await;
    s.close().await;
}

/// A cursor older than the replay window, or from another server instance, is never answered
/// with a partial replay: `gap: true` and the whole thread (every turn and item) instead, even
/// with `excludeTurns`. The newest cursor replays nothing and is no gap.
pub(crate) async fn stale_cursors_answer_a_gap_and_the_whole_thread(transport: Transport) {
    let config = Config {
        replay_window_events: Some(3),
        ..Config::default()
    };
    let mut s = Session::open_with(transport, config).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    start_turn(&mut s, TURN, "hello there").await;
    let seen = read_turn(&mut s).await;
    assert!(
        seen.len() > 3,
        "the turn outgrows the window: {}",
        seen.len()
    );
    let answer = "<id:4>";
    let snapshot = json!([turn(
        TURN,
        "completed",
        vec![
            user_message("<id:3>", "hello there"),
            agent_message(answer, "You said: \"hello there\""),
        ]
    )]);

    let oldest = &seen[0].1;
    let newest = &seen[seen.len() - 1].1;
    let foreign = json!({"epoch": "another-server-instance", "seq": newest["seq"]});
    for stale in [oldest, &foreign] {
        let reply = s
            .call(
                "thread/resume",
                json!({"threadId": THREAD, "cursor": stale, "excludeTurns": true}),
            )
            .await;
        assert_json(&s, &reply["gap"], &json!(true));
        assert_json(&s, &reply["replayed"], &json!(null));
        assert_json(&s, &reply["thread"]["turns"], &snapshot);
        assert!(
            !s.backlog_has("item/agentMessage/delta"),
            "nothing is replayed on a gap"
        );
        assert!(
            !s.backlog_has("turn/completed"),
            "nothing is replayed on a gap"
        );
    }

    let reply = s
        .call(
            "thread/resume",
            json!({"threadId": THREAD, "cursor": newest, "excludeTurns": true}),
        )
        .await;
    assert_json(
        &s,
        &json!([reply["gap"], reply["replayed"], reply["thread"]["turns"]]),
        &json!([false, 0, []]),
    );
    s.close().await;
}

/// A client loses its connection in the middle of a turn (websocket, unix socket: the socket drops;
/// in-process: the event consumer is replaced), comes back and resumes from the last cursor it
/// saw: it gets every event it missed and then the live ones, each exactly once, and the agent
/// text and command output it rebuilds from the deltas are the stored ones. Stdio has one
/// connection per server process: coming back there is a new server, the gap case above.
pub(crate) async fn a_client_that_reconnects_gets_what_it_missed(transport: Transport) {
    if transport == Transport::Stdio {
        return;
    }
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    let input = "hello there\n/sh printf 'one '; sleep 0.3; printf 'two'";
    start_turn(&mut s, TURN, input).await;
    let mut transcript = (String::new(), String::new());
    let add = |message: &Value, transcript: &mut (String, String)| {
        let delta = message["params"]["delta"].as_str().unwrap_or_default();
        match message["method"].as_str() {
            Some("item/agentMessage/delta") => transcript.0.push_str(delta),
            Some("item/commandExecution/outputDelta") => transcript.1.push_str(delta),
            _ => {}
        }
    };
    let last_seen = loop {
        let message = s.next("the first agent delta").await;
        add(&message, &mut transcript);
        if message["method"] == "item/agentMessage/delta" {
            break s
                .last_cursor()
                .expect("a thread notification carries a cursor");
        }
    };

    s.reconnect().await;
    if matches!(transport, Transport::WebSocket | Transport::UnixSocket) {
        s.initialize(false).await;
    }
    let reply = s
        .call(
            "thread/resume",
            json!({"threadId": THREAD, "cursor": last_seen, "excludeTurns": true}),
        )
        .await;
    assert_json(&s, &reply["gap"], &json!(false));
    // Replayed (before the reply) and then live, with no seam: the cursors go on one by one.
    let mut expected_seq = last_seen["seq"].as_u64().expect("a seq") + 1;
    loop {
        let message = s.next("the rest of the turn").await;
        let cursor = s.last_cursor();
        if cursor.as_ref().and_then(|cursor| cursor["seq"].as_u64()) != Some(expected_seq)
            || cursor.as_ref().map(|cursor| &cursor["epoch"]) != Some(&last_seen["epoch"])
        {
            s.fail(format!(
                "expected seq {expected_seq}, got {message} at {cursor:?}"
            ));
        }
        expected_seq += 1;
        add(&message, &mut transcript);
        if message["method"] == "turn/completed" {
            break;
        }
    }
    let read = s
        .call(
            "thread/read",
            json!({"threadId": THREAD, "includeTurns": true}),
        )
        .await;
    let items = read["thread"]["turns"][0]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let stored = items
        .iter()
        .fold((String::new(), String::new()), |mut stored, item| {
            match item["type"].as_str() {
                Some("agentMessage") => {
                    stored.0.push_str(item["text"].as_str().unwrap_or_default())
                }
                Some("commandExecution") => {
                    stored
                        .1
                        .push_str(item["aggregatedOutput"].as_str().unwrap_or_default());
                }
                _ => {}
            }
            stored
        });
    assert_json(
        &s,
        &json!([transcript.0, transcript.1]),
        &json!([stored.0, stored.1]),
    );
    assert_json(&s, &json!(transcript.1), &json!("one two"));
    s.close().await;
}
