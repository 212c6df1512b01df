//! Turns driven by the scripted agent: a streamed agent message, a dynamic tool call answered
//! by the client, an approval declined and a question answered, each compared message by
//! message with the order docs/protocol.md section 6 prescribes.

use serde_json::json;

use super::*;
use crate::session::{Session, Transport};

const TURN: &str = "<id:2>";
const INPUT_ITEM: &str = "<id:3>";

/// A thread with a turn whose agent answers in a message streamed word by word.
pub(crate) async fn turn_streams_an_agent_message(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    start_turn(&mut s, TURN, "hello there").await;

    let answer = "<id:4>";
    let mut expected = turn_opening(TURN, INPUT_ITEM, "hello there");
    expected.extend(streamed_agent_message(
        TURN,
        answer,
        &["You ", "said: ", "\"hello ", "there\""],
    ));
    expected.extend(turn_closing(
        TURN,
        vec![
            user_message(INPUT_ITEM, "hello there"),
            agent_message(answer, "You said: \"hello there\""),
        ],
    ));
    expect_sequence(&mut s, &expected).await;

    // The completed turn is part of the thread now.
    expect_result(
        &mut s,
        "thread/turns/list",
        json!({"threadId": THREAD, "itemsView": "full"}),
        json!({
            "data": [turn(TURN, "completed", vec![
                user_message(INPUT_ITEM, "hello there"),
                agent_message(answer, "You said: \"hello there\""),
            ])],
            "nextCursor": null, "backwardsCursor": format!("at:{TURN}"),
        }),
    )
    .await;
    s.close().await;
}

/// `item/tool/call` answered by the client: the item brackets the request, the answer is
/// resolved, and the agent reports the tool's text.
pub(crate) async fn dynamic_tool_call_answered_by_the_client(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(true).await;
    let tool = json!({
        "type": "function", "name": "lookup", "description": "Looks a key up.",
        "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}},
    });
    start_thread_with(&mut s, THREAD, "never", json!({"dynamicTools": [tool]})).await;
    let input = "/tool lookup {\"key\": \"answer\"}";
    start_turn(&mut s, TURN, input).await;

    let call = "<id:4>";
    let arguments = json!({"key": "answer"});
    let call_item = |status: &str, content: serde_json::Value, success, duration| {
        json!({
            "type": "dynamicToolCall", "id": call, "tool": "lookup", "namespace": null,
            "arguments": arguments, "status": status, "contentItems": content,
            "success": success, "durationMs": duration,
        })
    };
    let mut expected = turn_opening(TURN, INPUT_ITEM, input);
    expected.push(item_note(
        "item/started",
        TURN,
        call_item("inProgress", json!(null), json!(null), json!(null)),
    ));
    expect_sequence(&mut s, &expected).await;

    let request = s.expect("item/tool/call").await;
    assert_json(
        &s,
        &request,
        &json!({
            "id": 0, "method": "item/tool/call",
            "params": {
                "threadId": THREAD, "turnId": TURN, "callId": call, "namespace": null,
                "tool": "lookup", "arguments": arguments,
            },
        }),
    );
    let output = json!([{"type": "inputText", "text": "42"}]);
    s.respond(
        &request["id"],
        json!({"contentItems": output, "success": true}),
    )
    .await;

    let answer = "<id:5>";
    let completed_call = call_item("completed", output.clone(), json!(true), json!("<time>"));
    let mut expected = vec![
        note(
            "serverRequest/resolved",
            json!({"threadId": THREAD, "turnId": TURN, "requestId": 0}),
        ),
        item_note("item/completed", TURN, completed_call.clone()),
    ];
    expected.extend(streamed_agent_message(
        TURN,
        answer,
        &["tool ", "lookup ", "returned: ", "42"],
    ));
    expected.extend(turn_closing(
        TURN,
        vec![
            user_message(INPUT_ITEM, input),
            completed_call,
            agent_message(answer, "tool lookup returned: 42"),
        ],
    ));
    expect_sequence(&mut s, &expected).await;
    s.close().await;
}

/// A command approval answered `decline` (the item completes `declined` and nothing runs),
/// then a question answered by the user; each request raises and clears its status flag.
pub(crate) async fn approval_declined_and_question_answered(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "on-request").await;
    let input = "/sh echo should-not-run\n/ask Which colour?";
    start_turn(&mut s, TURN, input).await;

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
        item_note("item/started", TURN, command_item("inProgress")),
        status_note(active(&["waitingOnApproval"])),
    ]);
    expect_sequence(&mut s, &expected).await;

    let approval = s.expect("item/commandExecution/requestApproval").await;
    assert_json(
        &s,
        &approval,
        &json!({
            "id": 0, "method": "item/commandExecution/requestApproval",
            "params": {
                "threadId": THREAD, "turnId": TURN, "itemId": command, "startedAtMs": "<time>",
                "command": "echo should-not-run", "cwd": "<home>", "reason": null,
                "commandActions": [{"type": "unknown", "command": "echo should-not-run"}],
                // No `availableDecisions`: every approval offers all four (docs/protocol.md, section 12).
            },
        }),
    );
    s.respond(&approval["id"], json!({"decision": "decline"}))
        .await;
    expect_sequence(
        &mut s,
        &[
            note(
                "serverRequest/resolved",
                json!({"threadId": THREAD, "turnId": TURN, "requestId": 0}),
            ),
            status_note(active(&[])),
            item_note("item/completed", TURN, command_item("declined")),
            status_note(active(&["waitingOnUserInput"])),
        ],
    )
    .await;

    let question = s.expect("item/tool/requestUserInput").await;
    assert_json(
        &s,
        &question,
        &json!({
            "id": 1, "method": "item/tool/requestUserInput",
            "params": {
                "threadId": THREAD, "turnId": TURN, "itemId": "<id:5>", "isBlocking": true,
                "questions": [{
                    "id": "q", "header": "Question", "question": "Which colour?",
                    "isOther": false, "isSecret": false, "options": null,
                }],
            },
        }),
    );
    s.respond(
        &question["id"],
        json!({"answers": {"q": {"answers": ["teal"]}}}),
    )
    .await;

    let answer = "<id:6>";
    let mut expected = vec![
        note(
            "serverRequest/resolved",
            json!({"threadId": THREAD, "turnId": TURN, "requestId": 1}),
        ),
        status_note(active(&[])),
    ];
    expected.extend(streamed_agent_message(
        TURN,
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
    expect_sequence(&mut s, &expected).await;
    s.close().await;
}
