//! The state's unit tests: events applied to values, no terminal.

use super::*;

fn item(json: serde_json::Value) -> ThreadItem {
    serde_json::from_value(json).expect("an item")
}

#[test]
fn streamed_text_is_replaced_by_the_completed_turns_text() {
    let mut state = AppState::new("in-process", None, Limits::default());
    state.turn = TurnState::Starting;
    state.turn_running("t1");
    state.apply_turn_event(TurnEvent::AgentText {
        item_id: "a1".into(),
        delta: "You said".into(),
    });
    // A skipped delta: the completion still brings the whole text.
    let turn: Turn = serde_json::from_value(serde_json::json!({
        "id": "t1", "items": [{"type": "agentMessage", "id": "a1", "text": "You said: \"hi\""}],
        "itemsView": "full", "status": "completed", "error": null,
        "startedAt": null, "completedAt": null, "durationMs": null
    }))
    .expect("a turn");
    state.apply_turn_event(TurnEvent::Completed(turn));
    assert_eq!(
        state.transcript.back(),
        Some(&Entry::agent("a1", "You said: \"hi\""))
    );
    assert_eq!(state.turn, TurnState::Idle);
}

#[test]
fn a_command_gets_a_pane_that_ends_with_its_final_output() {
    let mut state = AppState::new("in-process", None, Limits::default());
    let running = item(serde_json::json!({
        "type": "commandExecution", "id": "c1", "command": "echo hi", "cwd": "/",
        "status": "inProgress", "commandActions": [], "processId": null, "exitCode": null,
        "aggregatedOutput": null, "durationMs": null
    }));
    state.apply_turn_event(TurnEvent::ItemStarted(running));
    state.apply_turn_event(TurnEvent::CommandOutput {
        item_id: "c1".into(),
        delta: "h".into(),
    });
    let done = item(serde_json::json!({
        "type": "commandExecution", "id": "c1", "command": "echo hi", "cwd": "/",
        "status": "completed", "commandActions": [], "processId": null, "exitCode": 0,
        "aggregatedOutput": "hi\n", "durationMs": 3
    }));
    state.apply_turn_event(TurnEvent::ItemCompleted(done));
    let pane = state.active_pane().expect("a pane");
    assert_eq!(pane.text(), "hi");
    assert_eq!(pane.finished.as_deref(), Some("exit 0"));
    assert!(matches!(
        state.transcript.back(),
        Some(Entry::Command {
            state: CommandState::Exited(0),
            ..
        })
    ));
}

#[test]
fn the_transcript_is_bounded() {
    let limits = Limits {
        transcript_entries: 3,
        ..Limits::default()
    };
    let mut state = AppState::new("in-process", None, limits);
    for n in 0..5 {
        state.notice(format!("{n}"));
    }
    assert_eq!(state.transcript.len(), 3);
    assert_eq!(state.transcript_dropped, 2);
    assert_eq!(state.transcript.front(), Some(&Entry::Notice("2".into())));
}
