//! Issue 29, point 1 through a model: the loopback model mock (`mock_http`) answers with
//! `apply_patch` calls on both wires (Chat Completions' function call, the Responses API's
//! function call and its free-form custom tool call); the server applies the patch as a
//! `fileChange` item and the model's next request carries what happened, file by file.

mod agent_support;

use agent_support::*;
use serde_json::{Value, json};
use tandem_host::in_process::InProcessServerEvent;
use tandem_protocol::{PatchApplyStatus, ServerNotification, ThreadItem, TurnStatus};
use tandem_server::config::toml;
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};

/// The sandbox of these turns: the thread's cwd is the only writable root.
fn workspace_write() -> Value {
    json!({"type": "workspaceWrite", "writableRoots": [], "networkAccess": false,
           "excludeTmpdirEnvVar": true, "excludeSlashTmp": true})
}

async fn start_patch_turn(handle: &tandem_host::InProcessClientHandle, thread: &str, text: &str) {
    call::<tandem_protocol::client_methods::TurnStart>(
        handle,
        json!({"threadId": thread, "input": [{"type": "text", "text": text}],
               "approvalPolicy": "on-request", "sandboxPolicy": workspace_write()}),
    )
    .await;
}

fn file_changes(record: &TurnRecord) -> Vec<(usize, PatchApplyStatus)> {
    record
        .turn
        .items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::FileChange {
                changes, status, ..
            } => Some((changes.len(), *status)),
            _ => None,
        })
        .collect()
}

fn turn_diffs(record: &TurnRecord) -> Vec<String> {
    record
        .events
        .iter()
        .filter_map(|event| match event {
            InProcessServerEvent::ServerNotification(ServerNotification::TurnDiffUpdated(
                update,
            )) => Some(update.diff.clone()),
            _ => None,
        })
        .collect()
}

/// A Chat Completions answer calling `apply_patch` with `patch`, its arguments in fragments.
fn chat_patch_answer(id: &str, patch: &str) -> MockResponse {
    let arguments = json!({ "input": patch }).to_string();
    let (head, tail) = arguments.split_at(arguments.len() / 3);
    MockResponse::sse()
        .event(&call_chunk(Some(0), Some(id), Some("apply_patch"), head).to_string())
        .event(&call_chunk(Some(0), None, None, tail).to_string())
        .event(&finish_chunk("tool_calls").to_string())
        .event("[DONE]")
}

fn chat_text_answer(text: &str) -> MockResponse {
    MockResponse::sse()
        .event(&text_chunk(text).to_string())
        .event(&finish_chunk("stop").to_string())
        .event("[DONE]")
}

/// The `tool` message answering `call_id` in a Chat Completions request body.
fn chat_tool_result(body: &Value, call_id: &str) -> String {
    messages(body)
        .iter()
        .find(|message| message["role"] == "tool" && message["tool_call_id"] == call_id)
        .and_then(|message| message["content"].as_str())
        .unwrap_or_else(|| panic!("no result for {call_id} in {body}"))
        .to_owned()
}

#[tokio::test]
async fn a_chat_apply_patch_call_changes_the_file_and_the_model_hears_which() {
    let mock = MockHttpServer::start().await.expect("mock");
    let home = home();
    let project = tempfile::tempdir().expect("project");
    std::fs::write(project.path().join("main.py"), "print('hi')\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: main.py\n@@\n-print('hi')\n+print('hello')\n\
                 *** Add File: NOTES.md\n+greeting changed\n*** End Patch";
    mock.push(chat_patch_answer("call_p", patch));
    mock.push(chat_text_answer("patched"));
    let mut handle = start(memory_options(home.path(), &mock.url("/v1"), &[])).await;
    let thread = start_thread(&handle, json!({"cwd": project.path()})).await;
    start_patch_turn(&handle, &thread, "say hello").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;

    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    assert!(
        record.server_requests().is_empty(),
        "inside the roots: no approval"
    );
    assert_eq!(
        file_changes(&record),
        vec![(2, PatchApplyStatus::Completed)]
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("main.py")).unwrap(),
        "print('hello')\n"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("NOTES.md")).unwrap(),
        "greeting changed\n"
    );
    let [diff] = turn_diffs(&record).try_into().expect("one turn diff");
    assert!(
        diff.contains("diff --git a/NOTES.md b/NOTES.md\n"),
        "{diff}"
    );
    assert!(diff.contains("-print('hi')\n+print('hello')\n"), "{diff}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let offered = requests[0].json()["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|tool| tool["function"]["name"] == "apply_patch")
        .cloned()
        .expect("apply_patch offered");
    assert_eq!(offered["type"], "function");
    assert_eq!(
        offered["function"]["parameters"]["required"],
        json!(["input"])
    );
    let result = chat_tool_result(&requests[1].json(), "call_p");
    assert!(result.contains("updated main.py"), "{result}");
    assert!(result.contains("added NOTES.md"), "{result}");

    // The next turn replays the change as an apply_patch call with its outcome.
    mock.push(chat_text_answer("ok"));
    start_patch_turn(&handle, &thread, "thanks").await;
    drive_turn(&mut handle, &Answers::default()).await;
    let replayed = mock.requests()[2].json();
    let call = messages(&replayed)
        .iter()
        .flat_map(|message| {
            message["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|call| call["function"]["name"] == "apply_patch")
        .expect("the change is replayed as a call");
    let call_id = call["id"].as_str().expect("id").to_owned();
    assert!(chat_tool_result(&replayed, &call_id).contains("main.py"));
    shutdown(handle).await;
}

#[tokio::test]
async fn a_chat_patch_whose_context_is_gone_tells_the_model_the_file_and_hunk() {
    let mock = MockHttpServer::start().await.expect("mock");
    let home = home();
    let project = tempfile::tempdir().expect("project");
    std::fs::write(project.path().join("a.txt"), "one\n").unwrap();
    std::fs::write(project.path().join("b.txt"), "changed since\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n\
                 *** Update File: b.txt\n@@\n-as the model remembers it\n+new\n*** End Patch";
    mock.push(chat_patch_answer("call_x", patch));
    mock.push(chat_text_answer("I will read the file again"));
    let mut handle = start(memory_options(home.path(), &mock.url("/v1"), &[])).await;
    let thread = start_thread(&handle, json!({"cwd": project.path()})).await;
    start_patch_turn(&handle, &thread, "edit").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(record.turn.status, TurnStatus::Completed);
    assert_eq!(file_changes(&record), vec![(0, PatchApplyStatus::Failed)]);
    assert!(turn_diffs(&record).is_empty());
    assert_eq!(
        std::fs::read_to_string(project.path().join("a.txt")).unwrap(),
        "one\n"
    );
    let result = chat_tool_result(&mock.requests()[1].json(), "call_x");
    assert!(result.contains("no file was changed"), "{result}");
    assert!(
        result.contains("b.txt") && result.contains("as the model remembers it"),
        "{result}"
    );
    shutdown(handle).await;
}

// ---------------------------------------------------------------------------------------------
// The Responses wire
// ---------------------------------------------------------------------------------------------

fn responses_wire() -> Vec<(&'static str, toml::Value)> {
    vec![("model_providers.mock.wire_api", "responses".into())]
}

fn event(kind: &str, mut data: Value) -> String {
    data["type"] = json!(kind);
    data.to_string()
}

fn responses_text(text: &str) -> MockResponse {
    MockResponse::sse()
        .named_event(
            "response.output_text.delta",
            &event(
                "response.output_text.delta",
                json!({"item_id": "m", "output_index": 0, "delta": text}),
            ),
        )
        .named_event(
            "response.completed",
            &event("response.completed", json!({"response": {"id": "r"}})),
        )
}

/// A response calling `apply_patch`: as the free-form custom tool (`custom`) or as a
/// function.
fn responses_patch_call(call_id: &str, patch: &str, custom: bool) -> MockResponse {
    let (item, delta_kind, payload) = if custom {
        (
            json!({"type": "custom_tool_call", "id": "ct_1", "call_id": call_id,
                   "name": "apply_patch", "input": ""}),
            "response.custom_tool_call_input.delta",
            patch.to_owned(),
        )
    } else {
        (
            json!({"type": "function_call", "id": "ct_1", "call_id": call_id,
                   "name": "apply_patch", "arguments": ""}),
            "response.function_call_arguments.delta",
            json!({ "input": patch }).to_string(),
        )
    };
    let (head, tail) = payload.split_at(payload.len() / 2);
    let delta = |piece: &str| {
        event(
            delta_kind,
            json!({"item_id": "ct_1", "output_index": 0, "delta": piece}),
        )
    };
    MockResponse::sse()
        .named_event(
            "response.output_item.added",
            &event(
                "response.output_item.added",
                json!({"output_index": 0, "item": item}),
            ),
        )
        .named_event(delta_kind, &delta(head))
        .named_event(delta_kind, &delta(tail))
        .named_event(
            "response.completed",
            &event("response.completed", json!({"response": {"id": "r"}})),
        )
}

async fn responses_round(model: &str, custom: bool) {
    let mock = MockHttpServer::start().await.expect("mock");
    let home = home();
    let project = tempfile::tempdir().expect("project");
    std::fs::write(project.path().join("lib.rs"), "fn a() {}\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: lib.rs\n*** Move to: src/lib.rs\n@@\n\
                 -fn a() {}\n+fn b() {}\n*** End Patch";
    mock.push(responses_patch_call("call_r", patch, custom));
    mock.push(responses_text("moved"));
    let mut handle = start(memory_options(
        home.path(),
        &mock.url("/v1"),
        &responses_wire(),
    ))
    .await;
    let thread = start_thread(&handle, json!({"cwd": project.path(), "model": model})).await;
    start_patch_turn(&handle, &thread, "move it").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    assert_eq!(
        file_changes(&record),
        vec![(1, PatchApplyStatus::Completed)]
    );
    assert!(!project.path().join("lib.rs").exists());
    assert_eq!(
        std::fs::read_to_string(project.path().join("src/lib.rs")).unwrap(),
        "fn b() {}\n"
    );
    let [diff] = turn_diffs(&record).try_into().expect("one turn diff");
    assert!(
        diff.contains("rename from lib.rs\nrename to src/lib.rs\n"),
        "{diff}"
    );

    let requests = mock.requests();
    let (call_kind, output_kind, tool_kind) = if custom {
        ("custom_tool_call", "custom_tool_call_output", "custom")
    } else {
        ("function_call", "function_call_output", "function")
    };
    let tools = requests[0].json()["tools"]
        .as_array()
        .cloned()
        .expect("tools");
    let offered = tools
        .iter()
        .find(|tool| tool["name"] == "apply_patch")
        .expect("apply_patch offered");
    assert_eq!(offered["type"], tool_kind);
    if custom {
        assert_eq!(offered["format"]["type"], "grammar");
        assert_eq!(offered["format"]["syntax"], "lark");
    }
    let input = requests[1].json()["input"]
        .as_array()
        .cloned()
        .expect("input");
    let call = input
        .iter()
        .find(|item| item["type"] == call_kind)
        .expect("the call is sent back");
    assert_eq!(call["call_id"], "call_r");
    if custom {
        assert_eq!(call["input"], patch);
    }
    let output = input
        .iter()
        .find(|item| item["type"] == output_kind)
        .expect("its result");
    assert_eq!(output["call_id"], "call_r");
    assert!(
        output["output"]
            .as_str()
            .is_some_and(|text| text.contains("updated lib.rs and moved it to src/lib.rs")),
        "{output}"
    );
    shutdown(handle).await;
}

#[tokio::test]
async fn a_responses_function_apply_patch_call_applies() {
    responses_round(MODEL, false).await;
}

#[tokio::test]
async fn a_responses_custom_apply_patch_call_applies_for_the_models_trained_on_it() {
    responses_round("gpt-5-codex", true).await;
}
