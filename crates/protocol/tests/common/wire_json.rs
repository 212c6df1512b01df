//! The literal JSON of the protocol's section 7 types and the checks the `wire_examples*`
//! tests share: a typed value and its JSON must decode into each other exactly.

use std::collections::BTreeSet;
use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tandem_protocol::*;

/// Compares the member names of `actual` and `expected` recursively, then the whole values.
pub(crate) fn assert_wire_eq(actual: &Value, expected: &Value, context: &str) {
    fn keys(actual: &Value, expected: &Value, path: &str, context: &str) {
        match (actual, expected) {
            (Value::Object(a), Value::Object(e)) => {
                let a_keys: BTreeSet<&String> = a.keys().collect();
                let e_keys: BTreeSet<&String> = e.keys().collect();
                assert_eq!(a_keys, e_keys, "{context}: member names at {path}");
                for (key, value) in a {
                    keys(value, &e[key], &format!("{path}.{key}"), context);
                }
            }
            (Value::Array(a), Value::Array(e)) => {
                assert_eq!(a.len(), e.len(), "{context}: array length at {path}");
                for (index, (a, e)) in a.iter().zip(e).enumerate() {
                    keys(a, e, &format!("{path}[{index}]"), context);
                }
            }
            _ => {}
        }
    }
    keys(actual, expected, "$", context);
    assert_eq!(actual, expected, "{context}");
}

pub(crate) fn assert_decodes_and_encodes<T>(wire: &Value, expected: &T, context: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let decoded: T = serde_json::from_value(wire.clone())
        .unwrap_or_else(|err| panic!("{context}: {wire} does not decode: {err}"));
    assert_eq!(&decoded, expected, "{context}: decoded value");
    assert_wire_eq(&serde_json::to_value(expected).unwrap(), wire, context);
}

/// Checks one request method both ways, through its request enum, and its result. Returns the
/// method name for the coverage check.
pub(crate) fn check<M>(
    params: Value,
    expected_params: M::Params,
    result: Value,
    expected_result: M::Response,
) -> String
where
    M: RequestMethod,
    M::Params: PartialEq + Debug + Clone,
    M::Response: PartialEq + Debug,
    M::Request: TryFrom<JSONRPCRequest, Error = JSONRPCErrorError> + PartialEq + Debug,
{
    let method = M::METHOD;
    let wire: JSONRPCRequest =
        serde_json::from_value(json!({"id": 41, "method": method, "params": params.clone()}))
            .unwrap();
    let decoded = M::Request::try_from(wire)
        .unwrap_or_else(|err| panic!("{method}: params do not decode: {err:?}"));
    assert_eq!(
        decoded,
        M::into_request(RequestId::Integer(41), expected_params.clone()),
        "{method}"
    );
    assert_decodes_and_encodes(&params, &expected_params, &format!("{method} params"));
    assert_decodes_and_encodes(&result, &expected_result, &format!("{method} result"));
    method.to_owned()
}

pub(crate) fn assert_covers_exactly(covered: Vec<String>, methods: &[&str]) {
    let unique: BTreeSet<String> = covered.iter().cloned().collect();
    assert_eq!(unique.len(), covered.len(), "a method is covered twice");
    let methods: BTreeSet<String> = methods.iter().map(|m| (*m).to_owned()).collect();
    assert_eq!(unique, methods);
}

// ----- literal JSON of the section 7 types -----

pub(crate) fn user_message_json() -> Value {
    json!({"type": "userMessage", "id": "item-1",
           "content": [{"type": "text", "text": "list the files", "text_elements": []}],
           "clientId": "client-msg-1"})
}

pub(crate) fn command_execution_json() -> Value {
    json!({"type": "commandExecution", "id": "item-3", "command": "ls -la",
           "cwd": "/home/dev/project", "status": "completed",
           "commandActions": [{"type": "unknown", "command": "ls -la"}],
           "processId": "4242", "exitCode": 0, "aggregatedOutput": "total 0\n",
           "durationMs": 12, "source": "agent"})
}

pub(crate) fn turn_json() -> Value {
    json!({
        "id": "0190f3a2-8000-7000-8000-000000000001",
        "items": [
            user_message_json(),
            {"type": "agentMessage", "id": "item-2", "text": "Running ls."},
            command_execution_json(),
            {"type": "dynamicToolCall", "id": "call-1", "tool": "lookup", "namespace": null,
             "arguments": {"query": "tandem", "limit": 3}, "status": "completed",
             "contentItems": [{"type": "inputText", "text": "found 3"}], "success": true,
             "durationMs": 40}
        ],
        "itemsView": "full",
        "status": "completed",
        "error": null,
        "startedAt": 1_750_000_000,
        "completedAt": 1_750_000_005,
        "durationMs": 5000
    })
}

pub(crate) fn failed_turn_json() -> Value {
    json!({
        "id": "0190f3a2-8000-7000-8000-000000000002",
        "items": [
            {"type": "commandExecution", "id": "item-5", "command": "rm -rf 'build dir'",
             "cwd": "/home/dev/project", "status": "declined",
             "commandActions": [{"type": "unknown", "command": "rm -rf 'build dir'"}],
             "processId": null, "exitCode": null, "aggregatedOutput": null, "durationMs": null,
             "source": "agent"}
        ],
        "itemsView": "full",
        "status": "failed",
        "error": {"message": "model unavailable", "additionalDetails": "HTTP 503"},
        "startedAt": 1_750_000_010,
        "completedAt": 1_750_000_011,
        "durationMs": 900
    })
}

pub(crate) fn new_turn_json() -> Value {
    json!({"id": "0190f3a2-8000-7000-8000-000000000002", "items": [],
           "itemsView": "notLoaded", "status": "inProgress", "error": null,
           "startedAt": 1_750_000_010, "completedAt": null, "durationMs": null})
}

pub(crate) fn thread_json() -> Value {
    json!({
        "id": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
        "sessionId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
        "name": "Refactor",
        "preview": "list the files",
        "ephemeral": false,
        "createdAt": 1_750_000_000,
        "updatedAt": 1_750_000_005,
        "status": {"type": "active", "activeFlags": ["waitingOnApproval"]},
        "cwd": "/home/dev/project",
        "source": {"custom": "sdk"},
        "forkedFromId": null,
        "model": "gpt-test",
        "modelProvider": "openai",
        "cliVersion": "0.1.0",
        "projectId": null,
        "turns": [turn_json()]
    })
}

pub(crate) fn forked_thread_json() -> Value {
    json!({
        "id": "0190f3a2-9000-7abc-8def-0123456789ab",
        "sessionId": "0190f3a2-9000-7abc-8def-0123456789ab",
        "name": null,
        "preview": "",
        "ephemeral": true,
        "createdAt": 1_750_000_100,
        "updatedAt": 1_750_000_100,
        "status": {"type": "idle"},
        "cwd": "/tmp/fork",
        "source": "appServer",
        "forkedFromId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
        "model": null,
        "modelProvider": "openai",
        "cliVersion": "0.1.0",
        "projectId": null,
        "turns": []
    })
}

/// `{thread, ...session}` as spelled in docs/protocol.md section 4.
pub(crate) fn with_session(thread: Value, model: &str, cwd: &str, approval_policy: &str) -> Value {
    json!({
        "thread": thread,
        "model": model,
        "modelProvider": "openai",
        "cwd": cwd,
        "approvalPolicy": approval_policy,
        "approvalsReviewer": "user",
        "sandbox": {"type": "dangerFullAccess"},
        "reasoningEffort": null,
        "serviceTier": null
    })
}

pub(crate) fn abs(path: &str) -> AbsolutePathBuf {
    AbsolutePathBuf::new(path).expect("absolute")
}
