//! The server notifications of docs/protocol.md section 6, each checked against its literal
//! JSON both ways (split from `wire_examples.rs`, which has the requests and the rest).

mod common;

use common::wire_json::*;
use common::*;
use serde_json::{Value, json};
use tandem_protocol::*;

fn server_notification_examples() -> Vec<(Value, ServerNotification)> {
    let thread_id = "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e";
    let turn_id = "0190f3a2-8000-7000-8000-000000000001";
    vec![
        (
            json!({"method": "thread/started", "params": {"thread": forked_thread_json()}}),
            thread_started(),
        ),
        (
            json!({"method": "thread/status/changed",
                   "params": {"threadId": thread_id,
                              "status": {"type": "active",
                                         "activeFlags": ["waitingOnApproval",
                                                         "waitingOnUserInput"]}}}),
            thread_status_changed(),
        ),
        (
            json!({"method": "thread/closed", "params": {"threadId": thread_id}}),
            thread_closed(),
        ),
        (
            json!({"method": "thread/deleted",
                   "params": {"threadId": "0190f3a2-9000-7abc-8def-0123456789ab"}}),
            thread_deleted(),
        ),
        (
            json!({"method": "thread/name/updated",
                   "params": {"threadId": thread_id, "threadName": "New name"}}),
            thread_name_updated(),
        ),
        (
            json!({"method": "thread/attachment/updated",
                   "params": {"threadId": thread_id, "attachmentType": "github.pr",
                              "identityKey": "tandem#12", "attachmentId": "att-1",
                              "operation": "deleted"}}),
            thread_attachment_updated(),
        ),
        (
            json!({"method": "turn/started",
                   "params": {"threadId": thread_id, "turn": new_turn_json()}}),
            turn_started(),
        ),
        (
            json!({"method": "turn/completed",
                   "params": {"threadId": thread_id, "turn": failed_turn_json()}}),
            turn_completed(),
        ),
        (
            json!({"method": "item/started",
                   "params": {"threadId": thread_id, "turnId": turn_id,
                              "item": {"type": "dynamicToolCall", "id": "call-1",
                                       "tool": "lookup", "namespace": "docs",
                                       "arguments": {"query": "tandem"},
                                       "status": "inProgress", "contentItems": null,
                                       "success": null, "durationMs": null},
                              "startedAtMs": 1_750_000_001_000_i64}}),
            item_started(),
        ),
        (
            json!({"method": "item/completed",
                   "params": {"threadId": thread_id, "turnId": turn_id,
                              "item": command_execution_json(),
                              "completedAtMs": 1_750_000_002_000_i64}}),
            item_completed(),
        ),
        (
            json!({"method": "item/agentMessage/delta",
                   "params": {"threadId": thread_id, "turnId": turn_id, "itemId": "item-2",
                              "delta": "Running "}}),
            agent_message_delta(),
        ),
        (
            json!({"method": "item/commandExecution/outputDelta",
                   "params": {"threadId": thread_id, "turnId": turn_id, "itemId": "item-3",
                              "delta": "total 0\n"}}),
            command_output_delta(),
        ),
        (
            json!({"method": "serverRequest/resolved",
                   "params": {"threadId": thread_id, "turnId": turn_id, "requestId": 0}}),
            server_request_resolved(),
        ),
        (
            json!({"method": "error",
                   "params": {"threadId": thread_id,
                              "turnId": "0190f3a2-8000-7000-8000-000000000002",
                              "error": {"message": "model unavailable",
                                        "additionalDetails": null},
                              "willRetry": false}}),
            error_notification(),
        ),
        (
            json!({"method": "process/outputDelta",
                   "params": {"processHandle": "build", "stream": "stderr",
                              "deltaBase64": "d2FybmluZwo=", "capReached": true}}),
            process_output_delta(),
        ),
        (
            json!({"method": "process/exited",
                   "params": {"processHandle": "build", "exitCode": 137, "stdout": "partial",
                              "stdoutCapReached": false, "stderr": "",
                              "stderrCapReached": true, "outputDrainTimedOut": true}}),
            process_exited(),
        ),
        (
            json!({"method": "thread/archived", "params": {"threadId": thread_id}}),
            thread_archived(),
        ),
        (
            json!({"method": "thread/unarchived", "params": {"threadId": thread_id}}),
            thread_unarchived(),
        ),
        (
            json!({"method": "thread/compacted",
                   "params": {"threadId": thread_id, "turnId": turn_id}}),
            thread_compacted(),
        ),
        (
            json!({"method": "thread/reverted", "params": {"threadId": thread_id}}),
            thread_reverted(),
        ),
        (
            json!({"method": "thread/tokenUsage/updated",
                   "params": {"threadId": THREAD_ID, "turnId": TURN_ID, "tokenUsage": {
                       "total": {"totalTokens": 107, "inputTokens": 100, "cachedInputTokens": 40,
                                 "cacheWriteInputTokens": 0, "outputTokens": 7,
                                 "reasoningOutputTokens": 2},
                       "last": {"totalTokens": 107, "inputTokens": 100, "cachedInputTokens": 40,
                                "cacheWriteInputTokens": 0, "outputTokens": 7,
                                "reasoningOutputTokens": 2},
                       "modelContextWindow": null}}}),
            token_usage_updated(),
        ),
        (
            json!({"method": "command/exec/outputDelta",
                   "params": {"processId": "build-1", "stream": "stdout",
                              "deltaBase64": "b2sK", "capReached": false}}),
            command_exec_output_delta(),
        ),
        (
            json!({"method": "fs/changed",
                   "params": {"watchId": "w-1",
                              "changedPaths": ["/home/dev/project/a.txt", "/home/dev/project/src"]}}),
            fs_changed(),
        ),
        // reason29:
        (
            json!({"method": "turn/plan/updated",
                   "params": {"threadId": THREAD_ID, "turnId": TURN_ID,
                              "explanation": "Found the cause.",
                              "plan": [{"step": "Reproduce", "status": "completed"},
                                       {"step": "Fix", "status": "inProgress"},
                                       {"step": "Test", "status": "pending"}]}}),
            turn_plan_updated(),
        ),
        (
            json!({"method": "item/reasoning/summaryPartAdded",
                   "params": {"threadId": THREAD_ID, "turnId": TURN_ID, "itemId": "rs-1",
                              "summaryIndex": 1}}),
            reasoning_summary_part_added(),
        ),
        (
            json!({"method": "item/reasoning/summaryTextDelta",
                   "params": {"threadId": THREAD_ID, "turnId": TURN_ID, "itemId": "rs-1",
                              "delta": "Then ", "summaryIndex": 1}}),
            reasoning_summary_text_delta(),
        ),
        (
            json!({"method": "item/reasoning/textDelta",
                   "params": {"threadId": THREAD_ID, "turnId": TURN_ID, "itemId": "rs-1",
                              "delta": "The test ", "contentIndex": 0}}),
            reasoning_text_delta(),
        ),
        (
            json!({"method": "item/fileChange/patchUpdated",
            "params": {"threadId": thread_id, "turnId": turn_id, "itemId": "item-patch",
                       "changes": [
                           {"path": "/home/dev/project/a.txt",
                            "kind": {"type": "update",
                                     "move_path": "/home/dev/project/b.txt"},
                            "diff": "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n"},
                           {"path": "/home/dev/project/new.txt", "kind": {"type": "add"},
                            "diff": "diff --git a/new.txt b/new.txt\nnew file mode 100644\n"},
                           {"path": "/home/dev/project/old.txt", "kind": {"type": "delete"},
                            "diff": "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n"}
                       ]}}),
            file_change_patch_updated(),
        ),
        (
            json!({"method": "turn/diff/updated",
                   "params": {"threadId": thread_id, "turnId": turn_id,
                              "diff": "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n"}}),
            turn_diff_updated(),
        ),
        // mcp30:
        (
            mcp_startup_status_updated_json(),
            mcp_startup_status_updated(),
        ),
        (mcp_tool_call_progress_json(), mcp_tool_call_progress()),
    ]
}

/// The `mcpToolCall` item on the wire, both ways.
#[test]
fn mcp_tool_call_items_match_the_reference_shape() {
    assert_eq!(
        serde_json::to_value(mcp_tool_call_item()).unwrap(),
        mcp_tool_call_item_json()
    );
    assert_eq!(
        serde_json::from_value::<ThreadItem>(mcp_tool_call_item_json()).unwrap(),
        mcp_tool_call_item()
    );
}

/// The `reasoning` item on the wire: both arrays always present on output, either one
/// optional on input (the reference's schema defaults them to `[]`).
#[test]
fn reasoning_items_match_the_reference_shape() {
    let wire = json!({"type": "reasoning", "id": "rs-1",
                      "summary": ["Reading the failing test.", "Then the fix."],
                      "content": ["The test expects 3."]});
    assert_eq!(serde_json::to_value(reasoning_item()).unwrap(), wire);
    assert_eq!(
        serde_json::from_value::<ThreadItem>(wire).unwrap(),
        reasoning_item()
    );
    let bare: ThreadItem = serde_json::from_value(json!({"type": "reasoning", "id": "r"})).unwrap();
    assert_eq!(
        bare,
        ThreadItem::Reasoning {
            id: "r".into(),
            summary: Vec::new(),
            content: Vec::new()
        }
    );
}

#[test]
fn server_notifications_match_protocol_examples() {
    let mut covered = Vec::new();
    for (wire, expected) in server_notification_examples() {
        let method = wire["method"].as_str().unwrap().to_owned();
        let mut stamped = wire.clone();
        stamped["emittedAtMs"] = json!(1_750_000_000_000_i64);
        let notification: JSONRPCNotification = serde_json::from_value(stamped).unwrap();
        let decoded = ServerNotification::try_from(notification)
            .unwrap_or_else(|err| panic!("{method}: {err:?}"));
        assert_eq!(decoded, expected, "{method}");
        let encoded = serde_json::to_value(expected.into_jsonrpc().unwrap()).unwrap();
        assert_wire_eq(&encoded, &wire, &method);
        covered.push(method);
    }
    assert_covers_exactly(covered, ServerNotification::METHODS);
}

/// `error` with `willRetry: true`: a failure the server retries, the turn going on.
#[test]
fn a_retried_error_keeps_the_error_wire_shape() {
    let wire = json!({"method": "error",
                      "params": {"threadId": THREAD_ID, "turnId": TURN_ID_2,
                                 "error": {"message": "Reconnecting... 2/5",
                                           "additionalDetails": "HTTP 503 from openai: overloaded"},
                                 "willRetry": true}});
    let mut stamped = wire.clone();
    stamped["emittedAtMs"] = json!(1_750_000_000_000_i64);
    let notification: JSONRPCNotification = serde_json::from_value(stamped).unwrap();
    let expected = retry_notification();
    assert_eq!(
        ServerNotification::try_from(notification).unwrap(),
        expected
    );
    let encoded = serde_json::to_value(expected.into_jsonrpc().unwrap()).unwrap();
    assert_wire_eq(&encoded, &wire, "error (willRetry)");
}
