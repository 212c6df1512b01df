//! The scenarios, each an `async fn(Backend)` listed once in `main.rs`, and the steps they
//! share. Expected results are the JSON suite's shapes (`crate::shapes`), compared with
//! typed replies and events as normalized JSON.

pub(crate) mod errors;
pub(crate) mod handshake;
pub(crate) mod processes;
pub(crate) mod threads;
pub(crate) mod turns;

use serde_json::{Value, json};
use tandem_client::{Subscription, TurnEvent, TurnHandle};
use tandem_protocol::{ApprovalPolicy, Thread, ThreadStartParams, TurnStartParams};

use crate::events::{streamed_agent_message, turn_closing, turn_event, turn_opening};
use crate::harness::Harness;
pub(crate) use crate::shapes::*;

/// The placeholder of the first turn a scenario starts (the thread is [`THREAD`]).
pub(crate) const TURN: &str = "<id:2>";
/// The placeholder of that turn's `userMessage` item.
pub(crate) const INPUT_ITEM: &str = "<id:3>";

/// The wire name of `policy`, as the shapes take it.
fn policy_name(policy: ApprovalPolicy) -> &'static str {
    match policy {
        ApprovalPolicy::Never => "never",
        ApprovalPolicy::OnRequest => "on-request",
    }
}

/// Starts a thread in the home with `policy` (and whatever `params` adds), checks the reply
/// and the `thread/started` that `events` (subscribed before) receives, and returns the thread.
pub(crate) async fn start_thread_with(
    h: &Harness,
    events: &mut Subscription,
    policy: ApprovalPolicy,
    params: ThreadStartParams,
) -> Thread {
    let params = params.cwd(h.home()).approval_policy(policy);
    let reply = h.call("thread/start", h.client.start_thread(params)).await;
    let expected = thread(THREAD, json!({}));
    h.expect_json(
        "thread/start",
        &reply,
        session_reply(policy_name(policy), expected.clone()),
    );
    h.expect_messages(
        events,
        &[note("thread/started", json!({"thread": expected}))],
    )
    .await;
    reply.thread
}

/// [`start_thread_with`] without extra params.
pub(crate) async fn start_thread(
    h: &Harness,
    events: &mut Subscription,
    policy: ApprovalPolicy,
) -> Thread {
    start_thread_with(h, events, policy, ThreadStartParams::new()).await
}

/// Starts a turn with one text input on `thread_id` and checks its reply, which names the
/// turn `turn_id` by the scenario's numbering.
pub(crate) async fn start_turn(
    h: &Harness,
    thread_id: &str,
    turn_id: &str,
    text: &str,
) -> TurnHandle {
    let turn = h
        .call(
            "turn/start",
            h.client.start_turn(TurnStartParams::text(thread_id, text)),
        )
        .await;
    h.expect_json(
        "turn/start",
        turn.started(),
        crate::shapes::turn(turn_id, "inProgress", vec![]),
    );
    turn
}

/// The next event of `turn`, which must exist.
pub(crate) async fn next_event(h: &Harness, turn: &mut TurnHandle) -> TurnEvent {
    match h.within("the next turn event", turn.next_event()).await {
        Some(Ok(event)) => event,
        other => h.fail(format!("expected a turn event, got {other:?}")),
    }
}

/// Takes the next events of `turn` and compares each with `expected`, in order.
pub(crate) async fn expect_events(h: &Harness, turn: &mut TurnHandle, expected: &[Value]) {
    for (index, want) in expected.iter().enumerate() {
        let event = next_event(h, turn).await;
        let got = h.json(&turn_event(&event));
        h.assert_json(&format!("turn event {index}"), &got, want);
    }
}

/// Runs one "hi" turn on [`THREAD`] to completion through `wait_completed`, checks the final
/// turn, and returns it (normalized). `events` is read past the turn's notifications.
pub(crate) async fn hi_turn(h: &Harness, events: &mut Subscription, thread_id: &str) -> Value {
    let turn = start_turn(h, thread_id, TURN, "hi").await;
    let done = h.call("the hi turn", turn.wait_completed()).await;
    let done = h.json(&done);
    let expected = crate::shapes::turn(
        TURN,
        "completed",
        vec![
            user_message(INPUT_ITEM, "hi"),
            agent_message("<id:4>", "You said: \"hi\""),
        ],
    );
    h.assert_json("the completed hi turn", &done, &expected);
    h.messages_until(events, "turn/completed").await;
    done
}

/// The events of a turn whose input `text` the scripted agent echoes word by word.
pub(crate) fn echo_turn_events(turn_id: &str, text: &str, words: &[&str]) -> Vec<Value> {
    let answer = "<id:4>";
    let mut expected = turn_opening(turn_id, INPUT_ITEM, text);
    expected.extend(streamed_agent_message(answer, words));
    expected.extend(turn_closing(
        turn_id,
        vec![
            user_message(INPUT_ITEM, text),
            agent_message(answer, &words.concat()),
        ],
    ));
    expected
}
