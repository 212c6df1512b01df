//! Issue 29, point 1: `item/fileChange/patchUpdated` as the reference sends it, while the model
//! is still writing the patch. The loopback model mock streams an `apply_patch` call in small
//! fragments and holds the rest of its answer at a gate: the client sees the patch's changes so
//! far before the call is complete (on Chat Completions, and on the Responses API as a
//! function call and as the free-form custom tool), then at most one update per 500 ms while
//! it streams, then the patch as the model finished it, all under the id the `fileChange` item
//! then has.

mod agent_support;

use std::time::Instant;

use agent_support::*;
use serde_json::{Value, json};
use tandem_host::InProcessClientHandle;
use tandem_host::in_process::InProcessServerEvent;
use tandem_protocol::{
    FileChangePatchUpdatedNotification, FileUpdateChange, PatchApplyStatus, PatchChangeKind,
    ServerNotification, ThreadItem, TurnStatus,
};
use tandem_server::config::toml;
use tandem_test_support::mock_http::{Gate, MockHttpServer, MockResponse};
use tandem_test_support::within;

const PATCH: &str = "*** Begin Patch\n*** Update File: main.py\n@@ def main():\n-    print('hi')\n\
                     +    print('hello')\n*** Add File: docs/NOTES.md\n+greeting changed\n\
                     +twice\n*** Delete File: old.txt\n*** End Patch";

/// Where the stream pauses: once the first file's header and hunk are out, before the rest.
fn split_point(payload: &str) -> usize {
    payload.find("*** Add File").expect("the second file") - 1
}

/// `payload` in fragments of at most 7 bytes, cut on character boundaries.
fn fragments(payload: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        let mut end = rest.len().min(7);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// The wire a test streams its call on.
#[derive(Debug, Clone, Copy)]
enum Wire {
    Chat,
    ResponsesFunction,
    ResponsesCustom,
}

/// The answer calling `apply_patch` with [`PATCH`], in fragments, stopping at `gate` after
/// the first file's hunk.
fn patch_answer(wire: Wire, gate: &Gate) -> MockResponse {
    let payload = match wire {
        Wire::ResponsesCustom => PATCH.to_owned(),
        Wire::Chat | Wire::ResponsesFunction => json!({ "input": PATCH }).to_string(),
    };
    // Cut where the JSON form has the same text as the raw one.
    let split = split_point(&payload);
    let (head, tail) = payload.split_at(split);
    let mut response = MockResponse::sse();
    let mut first = true;
    let mut add = |response: MockResponse, piece: &str| -> MockResponse {
        let is_first = std::mem::replace(&mut first, false);
        match wire {
            Wire::Chat => {
                let (id, name) = if is_first {
                    (Some("call_p"), Some("apply_patch"))
                } else {
                    (None, None)
                };
                response.event(&call_chunk(Some(0), id, name, piece).to_string())
            }
            Wire::ResponsesFunction | Wire::ResponsesCustom => {
                let kind = match wire {
                    Wire::ResponsesCustom => "response.custom_tool_call_input.delta",
                    _ => "response.function_call_arguments.delta",
                };
                let response = if is_first {
                    let item = match wire {
                        Wire::ResponsesCustom => json!({"type": "custom_tool_call", "id": "ct_1",
                            "call_id": "call_p", "name": "apply_patch", "input": ""}),
                        _ => json!({"type": "function_call", "id": "ct_1", "call_id": "call_p",
                            "name": "apply_patch", "arguments": ""}),
                    };
                    response.named_event(
                        "response.output_item.added",
                        &responses_event(
                            "response.output_item.added",
                            json!({"output_index": 0, "item": item}),
                        ),
                    )
                } else {
                    response
                };
                response.named_event(
                    kind,
                    &responses_event(
                        kind,
                        json!({"item_id": "ct_1", "output_index": 0, "delta": piece}),
                    ),
                )
            }
        }
    };
    for piece in fragments(head) {
        response = add(response, piece);
    }
    response = response.wait(gate);
    for piece in fragments(tail) {
        response = add(response, piece);
    }
    match wire {
        Wire::Chat => response
            .event(&finish_chunk("tool_calls").to_string())
            .event("[DONE]"),
        Wire::ResponsesFunction | Wire::ResponsesCustom => response.named_event(
            "response.completed",
            &responses_event("response.completed", json!({"response": {"id": "r"}})),
        ),
    }
}

fn responses_event(kind: &str, mut data: Value) -> String {
    data["type"] = json!(kind);
    data.to_string()
}

fn text_answer_on(wire: Wire, text: &str) -> MockResponse {
    match wire {
        Wire::Chat => MockResponse::sse()
            .event(&text_chunk(text).to_string())
            .event(&finish_chunk("stop").to_string())
            .event("[DONE]"),
        Wire::ResponsesFunction | Wire::ResponsesCustom => MockResponse::sse()
            .named_event(
                "response.output_text.delta",
                &responses_event(
                    "response.output_text.delta",
                    json!({"item_id": "m", "output_index": 0, "delta": text}),
                ),
            )
            .named_event(
                "response.completed",
                &responses_event("response.completed", json!({"response": {"id": "r"}})),
            ),
    }
}

fn patch_updated(event: &InProcessServerEvent) -> Option<&FileChangePatchUpdatedNotification> {
    match event {
        InProcessServerEvent::ServerNotification(ServerNotification::FileChangePatchUpdated(
            update,
        )) => Some(update),
        _ => None,
    }
}

fn file_change_started(event: &InProcessServerEvent) -> Option<String> {
    match event {
        InProcessServerEvent::ServerNotification(ServerNotification::ItemStarted(started)) => {
            match &started.item {
                ThreadItem::FileChange { id, .. } => Some(id.clone()),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Reads events until the turn completes, opening `gate` at the first `patchUpdated`; returns
/// the events and when the gate opened.
async fn drive(
    handle: &mut InProcessClientHandle,
    gate: &Gate,
) -> (Vec<InProcessServerEvent>, Instant) {
    within(PROMPT, "the patch turn", async {
        let mut events = Vec::new();
        let mut opened = None;
        loop {
            let event = handle.next_event().await.expect("event stream open");
            if opened.is_none() && patch_updated(&event).is_some() {
                opened = Some(Instant::now());
                gate.open();
            }
            let done = matches!(
                &event,
                InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(_))
            );
            events.push(event);
            if done {
                let opened = opened.expect("a patchUpdated before the patch was complete");
                return (events, opened);
            }
        }
    })
    .await
}

async fn progress_is_shown_while_the_patch_streams(wire: Wire) {
    let mock = MockHttpServer::start().await.expect("mock");
    let home = home();
    let project = tempfile::tempdir().expect("project");
    let cwd = project.path();
    std::fs::write(cwd.join("main.py"), "def main():\n    print('hi')\n").unwrap();
    std::fs::write(cwd.join("old.txt"), "old\n").unwrap();
    let gate = Gate::new();
    mock.push(patch_answer(wire, &gate));
    mock.push(text_answer_on(wire, "patched"));
    let extra: Vec<(&str, toml::Value)> = match wire {
        Wire::Chat => Vec::new(),
        Wire::ResponsesFunction | Wire::ResponsesCustom => {
            vec![("model_providers.mock.wire_api", "responses".into())]
        }
    };
    // The free-form tool is offered to the families trained on it.
    let model = match wire {
        Wire::ResponsesCustom => "gpt-5-codex",
        Wire::Chat | Wire::ResponsesFunction => MODEL,
    };
    let mut handle = start(memory_options(home.path(), &mock.url("/v1"), &extra)).await;
    let thread = start_thread(&handle, json!({"cwd": cwd, "model": model})).await;
    start_turn(&handle, &thread, "patch it").await;
    let (events, gate_opened) = drive(&mut handle, &gate).await;
    let finished = Instant::now();

    let turn = events
        .iter()
        .find_map(|event| match event {
            InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(done)) => {
                Some(done.turn.clone())
            }
            _ => None,
        })
        .expect("turn/completed");
    assert_eq!(turn.status, TurnStatus::Completed, "{turn:?}");
    let started_at = events
        .iter()
        .position(|event| file_change_started(event).is_some())
        .expect("the fileChange item started");
    let item_id = file_change_started(&events[started_at]).unwrap();
    let updates: Vec<&FileChangePatchUpdatedNotification> = events[..started_at]
        .iter()
        .filter_map(patch_updated)
        .collect();
    assert!(
        updates.iter().all(|update| update.item_id == item_id),
        "every update names the item to come: {updates:?}"
    );

    let main_py = cwd.join("main.py").display().to_string();
    let hunk = "@@ def main():\n-    print('hi')\n+    print('hello')\n";
    // The first update came while the gate held the rest back: only the first file, its hunk
    // as far as it had come.
    let first = &updates[0].changes;
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].path, main_py);
    assert_eq!(first[0].kind, PatchChangeKind::Update { move_path: None });
    assert!(hunk.starts_with(&first[0].diff), "{:?}", first[0].diff);

    // The last one before the item is the patch as the model finished it.
    let last = &updates.last().expect("updates").changes;
    assert_eq!(
        last,
        &vec![
            FileUpdateChange {
                path: main_py.clone(),
                kind: PatchChangeKind::Update { move_path: None },
                diff: hunk.to_owned(),
            },
            FileUpdateChange {
                path: cwd.join("docs/NOTES.md").display().to_string(),
                kind: PatchChangeKind::Add,
                diff: "greeting changed\ntwice\n".to_owned(),
            },
            FileUpdateChange {
                path: cwd.join("old.txt").display().to_string(),
                kind: PatchChangeKind::Delete,
                diff: String::new(),
            },
        ]
    );

    // Throttled: after the first, at most one per 500 ms while it streamed, plus the last.
    // The rest of the patch came in about forty fragments.
    let streamed_ms = finished.duration_since(gate_opened).as_millis();
    let bound = 2 + usize::try_from(streamed_ms / 500).unwrap_or(usize::MAX);
    assert!(
        updates.len() <= bound,
        "{} updates in {streamed_ms} ms: {updates:?}",
        updates.len()
    );

    // And the patch applied, as one item under that id.
    let completed = events.iter().find_map(|event| match event {
        InProcessServerEvent::ServerNotification(ServerNotification::ItemCompleted(done)) => {
            match &done.item {
                ThreadItem::FileChange { id, status, .. } if *id == item_id => Some(*status),
                _ => None,
            }
        }
        _ => None,
    });
    assert_eq!(completed, Some(PatchApplyStatus::Completed));
    assert_eq!(
        std::fs::read_to_string(cwd.join("main.py")).unwrap(),
        "def main():\n    print('hello')\n"
    );
    assert!(!cwd.join("old.txt").exists());
    shutdown(handle).await;
}

#[tokio::test]
async fn a_chat_patch_shows_its_progress_while_it_streams() {
    progress_is_shown_while_the_patch_streams(Wire::Chat).await;
}

#[tokio::test]
async fn a_responses_function_patch_shows_its_progress_while_it_streams() {
    progress_is_shown_while_the_patch_streams(Wire::ResponsesFunction).await;
}

#[tokio::test]
async fn a_responses_custom_patch_shows_its_progress_while_it_streams() {
    progress_is_shown_while_the_patch_streams(Wire::ResponsesCustom).await;
}

/// A call that is not a patch at all shows nothing, and fails as a whole when it runs.
#[tokio::test]
async fn arguments_that_are_no_patch_show_no_progress() {
    let mock = MockHttpServer::start().await.expect("mock");
    let home = home();
    let project = tempfile::tempdir().expect("project");
    let arguments = json!({ "input": "please change main.py" }).to_string();
    let mut answer = MockResponse::sse();
    for (index, piece) in fragments(&arguments).into_iter().enumerate() {
        let (id, name) = if index == 0 {
            (Some("call_x"), Some("apply_patch"))
        } else {
            (None, None)
        };
        answer = answer.event(&call_chunk(Some(0), id, name, piece).to_string());
    }
    mock.push(
        answer
            .event(&finish_chunk("tool_calls").to_string())
            .event("[DONE]"),
    );
    mock.push(text_answer_on(Wire::Chat, "sorry"));
    let mut handle = start(memory_options(home.path(), &mock.url("/v1"), &[])).await;
    let thread = start_thread(&handle, json!({"cwd": project.path()})).await;
    start_turn(&handle, &thread, "patch it").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    let started = record
        .events
        .iter()
        .position(|event| file_change_started(event).is_some());
    let started = started.expect("the failed fileChange item");
    assert!(
        record.events[..started]
            .iter()
            .all(|event| patch_updated(event).is_none()),
        "no progress for text that is not a patch"
    );
    assert_eq!(record.turn.status, TurnStatus::Completed);
    shutdown(handle).await;
}
