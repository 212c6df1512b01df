//! The shapes of docs/protocol.md section 7 that conformance expectations are written with, as
//! normalized JSON (see `normalize.rs`): shared by the JSON-level suite (`conformance`) and the
//! tandem-client suite (`client_conformance`), so both compare against one set of expected
//! results.

use serde_json::{Map, Value, json};

/// The placeholder of the first id a scenario reads: the first thread it starts.
pub(crate) const THREAD: &str = "<id:1>";

/// A notification as it arrives (normalized: no `emittedAtMs`).
pub(crate) fn note(method: &str, params: Value) -> Value {
    json!({"method": method, "params": params})
}

/// `object` with the members of `patch` replacing its own.
pub(crate) fn patched(mut object: Value, patch: Value) -> Value {
    let (Value::Object(target), Value::Object(patch)) = (&mut object, patch) else {
        panic!("patched takes two objects");
    };
    target.extend(patch);
    object
}

/// A `Thread` as a freshly started persisted thread with cwd `<home>` reports it; `patch`
/// sets what the scenario changed.
pub(crate) fn thread(id: &str, patch: Value) -> Value {
    patched(
        json!({
            "id": id, "sessionId": id, "name": null, "preview": "", "ephemeral": false,
            "createdAt": "<time>", "updatedAt": "<time>", "status": {"type": "idle"},
            "cwd": "<home>", "source": "appServer", "forkedFromId": null, "model": "scripted",
            "modelProvider": "tandem", "cliVersion": tandem_server::server::SERVER_VERSION,
            "projectId": null, "turns": [],
        }),
        patch,
    )
}

/// The reply of `thread/start`, `thread/resume` and `thread/fork`: the thread beside the
/// session settings (`approvalPolicy` as given).
pub(crate) fn session_reply(approval_policy: &str, thread: Value) -> Value {
    json!({
        "thread": thread, "model": "scripted", "modelProvider": "tandem", "cwd": "<home>",
        "approvalPolicy": approval_policy, "approvalsReviewer": "user",
        "sandbox": {"type": "readOnly", "networkAccess": false}, "reasoningEffort": null,
        "serviceTier": null,
    })
}

/// A `Turn`.
pub(crate) fn turn(id: &str, status: &str, items: Vec<Value>) -> Value {
    let running = status == "inProgress";
    json!({
        "id": id, "items": items,
        "itemsView": if running { "notLoaded" } else { "full" },
        "status": status, "error": null, "startedAt": "<time>",
        "completedAt": if running { Value::Null } else { json!("<time>") },
        "durationMs": if running { Value::Null } else { json!("<time>") },
    })
}

/// A text `UserInput` as the server echoes it.
pub(crate) fn text_input(text: &str) -> Value {
    json!({"type": "text", "text": text, "text_elements": []})
}

/// A `userMessage` item.
pub(crate) fn user_message(id: &str, text: &str) -> Value {
    json!({"type": "userMessage", "id": id, "content": [text_input(text)], "clientId": null})
}

/// An `agentMessage` item.
pub(crate) fn agent_message(id: &str, text: &str) -> Value {
    json!({"type": "agentMessage", "id": id, "text": text})
}

/// `item/started` or `item/completed` of `item` in turn `turn_id` of [`THREAD`].
pub(crate) fn item_note(method: &str, turn_id: &str, item: Value) -> Value {
    let clock = if method == "item/started" {
        "startedAtMs"
    } else {
        "completedAtMs"
    };
    let mut params = Map::new();
    params.insert("threadId".into(), json!(THREAD));
    params.insert("turnId".into(), json!(turn_id));
    params.insert("item".into(), item);
    params.insert(clock.into(), json!("<time>"));
    note(method, Value::Object(params))
}

/// The notifications of an agent message streamed word by word, as the scripted agent does.
pub(crate) fn streamed_agent_message(turn_id: &str, item_id: &str, words: &[&str]) -> Vec<Value> {
    let mut notes = vec![item_note(
        "item/started",
        turn_id,
        agent_message(item_id, ""),
    )];
    notes.extend(words.iter().map(|word| {
        note(
            "item/agentMessage/delta",
            json!({"threadId": THREAD, "turnId": turn_id, "itemId": item_id, "delta": word}),
        )
    }));
    notes.push(item_note(
        "item/completed",
        turn_id,
        agent_message(item_id, &words.concat()),
    ));
    notes
}

/// `thread/status/changed` of [`THREAD`].
pub(crate) fn status_note(status: Value) -> Value {
    note(
        "thread/status/changed",
        json!({"threadId": THREAD, "status": status}),
    )
}

/// The `active` status with `flags`.
pub(crate) fn active(flags: &[&str]) -> Value {
    json!({"type": "active", "activeFlags": flags})
}

/// A JSON-RPC error object (no `data`).
pub(crate) fn rpc_error(code: i64, message: &str) -> Value {
    json!({"code": code, "message": message})
}

/// What follows `turn/start` before the agent acts: the thread goes active, the turn starts,
/// the input is recorded as a `userMessage` item (`item_id`).
pub(crate) fn turn_opening(turn_id: &str, item_id: &str, text: &str) -> Vec<Value> {
    vec![
        status_note(active(&[])),
        note(
            "turn/started",
            json!({"threadId": THREAD, "turn": turn(turn_id, "inProgress", vec![])}),
        ),
        item_note("item/started", turn_id, user_message(item_id, text)),
        item_note("item/completed", turn_id, user_message(item_id, text)),
    ]
}

/// What ends a turn: the thread goes idle, then `turn/completed` with `items`.
pub(crate) fn turn_closing(turn_id: &str, items: Vec<Value>) -> Vec<Value> {
    vec![
        status_note(json!({"type": "idle"})),
        note(
            "turn/completed",
            json!({"threadId": THREAD, "turn": turn(turn_id, "completed", items)}),
        ),
    ]
}
