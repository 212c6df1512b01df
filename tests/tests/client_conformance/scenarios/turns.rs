//! Turns driven by the scripted agent through `TurnHandle`: a streamed agent message (typed
//! events, `text()` as it streams, `wait_completed()`), a dynamic tool call answered by a
//! `ServerRequestHandler`, an approval declined and a question answered through the handle.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;
use tandem_client::{ServerRequestHandler, ToolCallRequest, TurnEvent};
use tandem_protocol::{
    ApprovalPolicy, DynamicToolSpec, ThreadStartParams, ThreadTurnsListParams, ToolCallParams,
    ToolCallResponse, ToolRequestUserInputResponse, TurnItemsView,
};

use super::*;
use crate::events::{streamed_agent_message, turn_closing, turn_event, turn_opening};
use crate::harness::{Backend, Harness, Setup, client_options};

/// A thread with a turn whose agent answers in a message streamed word by word: the handle's
/// events in order, its text growing with the deltas and equal to the final text once done;
/// a second turn awaited with `wait_completed`; both in `thread/turns/list`.
pub(crate) async fn turn_streams_an_agent_message(backend: Backend) {
    let h = Harness::open(backend).await;
    let mut events = h.subscribe_all();
    let thread = start_thread(&h, &mut events, ApprovalPolicy::Never).await;
    let mut turn = start_turn(&h, &thread.id, TURN, "hello there").await;

    let words = ["You ", "said: ", "\"hello ", "there\""];
    let expected = echo_turn_events(TURN, "hello there", &words);
    let mut streamed = String::new();
    for (index, want) in expected.iter().enumerate() {
        let event = next_event(&h, &mut turn).await;
        if let TurnEvent::AgentText { delta, .. } = &event {
            streamed.push_str(delta);
            // The handle records text as events pass, so it may be ahead of what was read.
            if !turn.text().starts_with(&streamed) {
                h.fail(format!(
                    "text() {:?} does not hold what streamed: {streamed:?}",
                    turn.text()
                ));
            }
        }
        let got = h.json(&turn_event(&event));
        h.assert_json(&format!("turn event {index}"), &got, want);
    }
    let first = match turn.completed() {
        Some(done) => h.json(&done),
        None => h.fail("the handle records its completed turn"),
    };
    if turn.text() != "You said: \"hello there\"" || streamed != turn.text() {
        h.fail(format!("the final text: {:?}", turn.text()));
    }
    if let Some(more) = h.within("after completion", turn.next_event()).await {
        h.fail(format!("nothing follows the completion, got {more:?}"));
    }

    let again = start_turn(&h, &thread.id, "<id:5>", "again").await;
    let second = h.call("wait_completed", again.wait_completed()).await;
    h.expect_json(
        "the second turn",
        &second,
        crate::shapes::turn(
            "<id:5>",
            "completed",
            vec![
                user_message("<id:6>", "again"),
                agent_message("<id:7>", "You said: \"again\""),
            ],
        ),
    );
    let second = h.json(&second);
    let turns = h
        .call(
            "thread/turns/list",
            h.client
                .list_turns(ThreadTurnsListParams::new(&thread.id).items_view(TurnItemsView::Full)),
        )
        .await;
    // Newest first; the backwards cursor starts (inclusive) at the newest.
    let backwards = format!("at:{}", second["id"].as_str().unwrap_or_default());
    h.expect_json(
        "thread/turns/list",
        &turns,
        json!({"data": [second, first], "nextCursor": null, "backwardsCursor": backwards}),
    );
    h.close().await;
}

/// Answers `item/tool/call` with the text "42" and keeps the params it was called with.
#[derive(Default)]
struct Lookup {
    calls: Mutex<Vec<ToolCallParams>>,
}

#[async_trait]
impl ServerRequestHandler for Lookup {
    async fn tool_call(&self, request: ToolCallRequest) {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request.params().clone());
        if let Err(error) = request.reply(ToolCallResponse::text("42")).await {
            panic!("the tool call's answer was not delivered: {error}");
        }
    }
}

/// `item/tool/call` answered by the client's `ServerRequestHandler` while `wait_completed`
/// runs the turn: the item records the answer and the agent reports the tool's text.
pub(crate) async fn dynamic_tool_call_answered_by_a_handler(backend: Backend) {
    let lookup = Arc::new(Lookup::default());
    let options = client_options().server_request_handler(lookup.clone());
    let h = Harness::start(backend, Setup::default(), options).await;
    let mut events = h.subscribe_all();
    let tool: DynamicToolSpec = serde_json::from_value(json!({
        "type": "function", "name": "lookup", "description": "Looks a key up.",
        "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}},
    }))
    .expect("a tool spec");
    let params = ThreadStartParams::new().dynamic_tools(vec![tool]);
    let thread = start_thread_with(&h, &mut events, ApprovalPolicy::Never, params).await;
    let input = "/tool lookup {\"key\": \"answer\"}";
    let turn = start_turn(&h, &thread.id, TURN, input).await;
    let done = h.call("wait_completed", turn.wait_completed()).await;

    let (call, answer) = ("<id:4>", "<id:5>");
    let arguments = json!({"key": "answer"});
    h.expect_json(
        "the completed turn",
        &done,
        crate::shapes::turn(
            TURN,
            "completed",
            vec![
                user_message(INPUT_ITEM, input),
                json!({
                    "type": "dynamicToolCall", "id": call, "tool": "lookup", "namespace": null,
                    "arguments": arguments, "status": "completed",
                    "contentItems": [{"type": "inputText", "text": "42"}],
                    "success": true, "durationMs": "<time>",
                }),
                agent_message(answer, "tool lookup returned: 42"),
            ],
        ),
    );
    let calls = lookup
        .calls
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    h.expect_json(
        "what the handler was called with",
        &calls,
        json!([{
            "threadId": THREAD, "turnId": TURN, "callId": call, "namespace": null,
            "tool": "lookup", "arguments": arguments,
        }]),
    );
    // The request was resolved in order with the thread's other notifications.
    let (_, resolved) = h
        .messages_until(&mut events, "serverRequest/resolved")
        .await;
    h.assert_json(
        "serverRequest/resolved",
        &resolved,
        &note(
            "serverRequest/resolved",
            json!({"threadId": THREAD, "turnId": TURN, "requestId": 0}),
        ),
    );
    h.close().await;
}

/// A command approval declined through the turn handle (the item completes `declined` and
/// nothing runs), then a question answered; each request raises and clears its status flag.
pub(crate) async fn approval_declined_and_question_answered(backend: Backend) {
    let h = Harness::open(backend).await;
    let mut events = h.subscribe_all();
    let thread = start_thread(&h, &mut events, ApprovalPolicy::OnRequest).await;
    let input = "/sh echo should-not-run\n/ask Which colour?";
    let mut turn = start_turn(&h, &thread.id, TURN, input).await;

    let command = "<id:4>";
    let command_item = |status: &str| {
        json!({
            "type": "commandExecution", "id": command, "command": "echo should-not-run",
            "cwd": "<home>", "status": status,
            "commandActions": [{"type": "unknown", "command": "echo should-not-run"}],
            "processId": null, "exitCode": null, "aggregatedOutput": null, "durationMs": null,
            "source": "agent",
        })
    };
    let mut expected = turn_opening(TURN, INPUT_ITEM, input);
    expected.extend([
        json!({"itemStarted": command_item("inProgress")}),
        json!({"status": active(&["waitingOnApproval"])}),
    ]);
    expect_events(&h, &mut turn, &expected).await;

    let event = next_event(&h, &mut turn).await;
    let shown = h.json(&turn_event(&event));
    h.assert_json(
        "the approval",
        &shown,
        &json!({"approval": {"id": 0, "params": {
            "threadId": THREAD, "turnId": TURN, "itemId": command, "startedAtMs": "<time>",
            "command": "echo should-not-run", "cwd": "<home>", "reason": null,
            "commandActions": [{"type": "unknown", "command": "echo should-not-run"}],
            // No `availableDecisions`, even though tandem-client opts in to the experimental
            // API: every approval offers all four (docs/protocol.md, section 12).
        }}}),
    );
    let TurnEvent::Approval(approval) = event else {
        h.fail("the approval is an approval");
    };
    h.call("declining", approval.decline()).await;
    expect_events(
        &h,
        &mut turn,
        &[
            json!({"requestResolved": 0}),
            json!({"status": active(&[])}),
            json!({"itemCompleted": command_item("declined")}),
            json!({"status": active(&["waitingOnUserInput"])}),
        ],
    )
    .await;

    let event = next_event(&h, &mut turn).await;
    let shown = h.json(&turn_event(&event));
    h.assert_json(
        "the question",
        &shown,
        &json!({"question": {"id": 1, "params": {
            "threadId": THREAD, "turnId": TURN, "itemId": "<id:5>", "isBlocking": true,
            "questions": [{
                "id": "q", "header": "Question", "question": "Which colour?",
                "isOther": false, "isSecret": false, "options": null,
            }],
        }}}),
    );
    let TurnEvent::Question(question) = event else {
        h.fail("the question is a question");
    };
    let answer = ToolRequestUserInputResponse::no_answers().with_answer("q", ["teal"]);
    h.call("answering", question.answer(answer)).await;

    let answer = "<id:6>";
    let mut expected = vec![
        json!({"requestResolved": 1}),
        json!({"status": active(&[])}),
    ];
    expected.extend(streamed_agent_message(
        answer,
        &["you ", "answered: ", "teal"],
    ));
    expected.extend(turn_closing(
        TURN,
        vec![
            user_message(INPUT_ITEM, input),
            command_item("declined"),
            agent_message(answer, "you answered: teal"),
        ],
    ));
    expect_events(&h, &mut turn, &expected).await;
    if turn.text() != "you answered: teal" {
        h.fail(format!("the final text: {:?}", turn.text()));
    }
    h.close().await;
}
