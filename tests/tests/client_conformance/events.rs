//! Typed turn events as JSON, so that a turn handle's whole event stream can be compared, in
//! order and member by member, with the same shapes the JSON suite expects on the wire.
//!
//! Each [`TurnEvent`] becomes a one-member object naming the variant, holding what the variant
//! carries as the protocol serializes it: `{"itemStarted": <ThreadItem>}`,
//! `{"agentText": {"itemId", "delta"}}`, `{"approval": {"id", "params"}}`, ...

use serde_json::{Value, json};
use tandem_client::TurnEvent;

/// `event` as JSON (not normalized).
pub(crate) fn turn_event(event: &TurnEvent) -> Value {
    match event {
        TurnEvent::Started(turn) => json!({"started": turn}),
        TurnEvent::AgentText { item_id, delta } => {
            json!({"agentText": {"itemId": item_id, "delta": delta}})
        }
        TurnEvent::CommandOutput { item_id, delta } => {
            json!({"commandOutput": {"itemId": item_id, "delta": delta}})
        }
        TurnEvent::ItemStarted(item) => json!({"itemStarted": item}),
        TurnEvent::ItemCompleted(item) => json!({"itemCompleted": item}),
        TurnEvent::Approval(request) => {
            json!({"approval": {"id": request.id(), "params": request.params()}})
        }
        TurnEvent::FileChangeApproval(request) => {
            json!({"fileChangeApproval": {"id": request.id(), "params": request.params()}})
        }
        TurnEvent::Question(request) => {
            json!({"question": {"id": request.id(), "params": request.params()}})
        }
        TurnEvent::ToolCall(request) => {
            json!({"toolCall": {"id": request.id(), "params": request.params()}})
        }
        TurnEvent::OtherRequest(request) => {
            json!({"otherRequest": {"id": request.id(), "method": request.method(), "params": request.params()}})
        }
        TurnEvent::RequestResolved(id) => json!({"requestResolved": id}),
        TurnEvent::Status(status) => json!({"status": status}),
        TurnEvent::Error(error) => json!({"error": error}),
        TurnEvent::Lagged { skipped } => json!({"lagged": skipped}),
        TurnEvent::Gap { snapshot } => json!({"gap": snapshot}),
        TurnEvent::Completed(turn) => json!({"completed": turn}),
        TurnEvent::Other(notification) => json!({"other": notification.method()}),
    }
}

/// The events of an agent message streamed word by word, as the scripted agent does.
pub(crate) fn streamed_agent_message(item_id: &str, words: &[&str]) -> Vec<Value> {
    let mut events = vec![json!({"itemStarted": crate::shapes::agent_message(item_id, "")})];
    events.extend(
        words
            .iter()
            .map(|word| json!({"agentText": {"itemId": item_id, "delta": word}})),
    );
    events.push(json!({
        "itemCompleted": crate::shapes::agent_message(item_id, &words.concat()),
    }));
    events
}

/// What a turn handle sees after `turn/start` before the agent acts: the thread goes active,
/// the turn starts, the input is recorded as a `userMessage` item (`item_id`).
pub(crate) fn turn_opening(turn_id: &str, item_id: &str, text: &str) -> Vec<Value> {
    use crate::shapes::{active, turn, user_message};
    vec![
        json!({"status": active(&[])}),
        json!({"started": turn(turn_id, "inProgress", vec![])}),
        json!({"itemStarted": user_message(item_id, text)}),
        json!({"itemCompleted": user_message(item_id, text)}),
    ]
}

/// What ends a turn on its handle: the thread goes idle, then the completed turn.
pub(crate) fn turn_closing(turn_id: &str, items: Vec<Value>) -> Vec<Value> {
    vec![
        json!({"status": {"type": "idle"}}),
        json!({"completed": crate::shapes::turn(turn_id, "completed", items)}),
    ]
}
