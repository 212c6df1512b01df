//! Issue 29, point 3: the reference's `update_plan` tool. The OpenAI-compatible agent offers
//! it on both wires; a call becomes `turn/plan/updated` (the tool's `in_progress` the
//! protocol's `inProgress`) and the model gets the reference's `Plan updated`; arguments that
//! do not parse give the model the reference's error and send nothing. The scripted agent's
//! `/plan` drives the same notification without a model.

mod agent_support;

use agent_support::*;
use serde_json::{Value, json};
use tandem_host::in_process::InProcessServerEvent;
use tandem_protocol::{ServerNotification, ThreadItem, TurnStatus};
use tandem_server::{ServerConfig, ServerOptions};
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};
use tandem_test_support::model_streams::{chat, responses};

/// The `turn/plan/updated` params of a turn, without the thread id, in order.
fn plan_updates(record: &TurnRecord) -> Vec<Value> {
    record
        .events
        .iter()
        .filter_map(|event| match event {
            InProcessServerEvent::ServerNotification(ServerNotification::TurnPlanUpdated(
                update,
            )) => {
                assert_eq!(update.turn_id, record.turn.id);
                Some(json!({"explanation": update.explanation, "plan": update.plan}))
            }
            _ => None,
        })
        .collect()
}

fn plan_arguments() -> Value {
    json!({"explanation": "Two steps.", "plan": [
        {"step": "Read the code", "status": "completed"},
        {"step": "Fix the bug", "status": "in_progress"},
        {"step": "Run the tests", "status": "pending"},
    ]})
}

fn expected_update() -> Value {
    json!({"explanation": "Two steps.", "plan": [
        {"step": "Read the code", "status": "completed"},
        {"step": "Fix the bug", "status": "inProgress"},
        {"step": "Run the tests", "status": "pending"},
    ]})
}

/// Runs one turn against `mock`, whose first answer calls `update_plan` with `arguments` and
/// second says "Done.", on `wire`; returns the record and the two request bodies.
async fn plan_turn(wire: &str, arguments: &Value) -> (TurnRecord, Vec<Value>) {
    let mock = MockHttpServer::start().await.expect("mock");
    if wire == "chat" {
        mock.push(
            MockResponse::sse()
                .bytes(chat::tool_call("plan_1", "update_plan", arguments))
                .bytes(chat::done()),
        );
        mock.push(MockResponse::sse().bytes([chat::text("Done."), chat::done()].concat()));
    } else {
        mock.push(
            MockResponse::sse().bytes(
                [
                    responses::function_call("plan_1", "update_plan", 0, arguments),
                    responses::completed(),
                ]
                .concat(),
            ),
        );
        mock.push(
            MockResponse::sse().bytes([responses::text("Done."), responses::completed()].concat()),
        );
    }
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &mock.url("/v1"),
        &[("model_providers.mock.wire_api", wire.into())],
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "fix it").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    shutdown(handle).await;
    let bodies = mock
        .requests()
        .iter()
        .map(|request| request.json())
        .collect();
    (record, bodies)
}

/// The result the second request gives the call `plan_1`, on either wire.
fn plan_result(wire: &str, body: &Value) -> String {
    let (list, id_key, output_key) = if wire == "chat" {
        ("messages", "tool_call_id", "content")
    } else {
        ("input", "call_id", "output")
    };
    body[list]
        .as_array()
        .expect("conversation")
        .iter()
        .find(|entry| entry[id_key] == "plan_1" && entry.get(output_key).is_some())
        .and_then(|entry| entry[output_key].as_str())
        .expect("the call's result")
        .to_owned()
}

/// Whether `body` offers `update_plan`, on either wire.
fn offers_update_plan(body: &Value) -> bool {
    body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .any(|tool| tool["name"] == "update_plan" || tool["function"]["name"] == "update_plan")
}

#[tokio::test]
async fn an_update_plan_call_sends_the_plan_on_both_wires() {
    for wire in ["chat", "responses"] {
        let (record, bodies) = plan_turn(wire, &plan_arguments()).await;
        assert_eq!(record.turn.status, TurnStatus::Completed, "{wire}");
        assert_eq!(plan_updates(&record), vec![expected_update()], "{wire}");
        assert_eq!(bodies.len(), 2, "{wire}");
        assert!(offers_update_plan(&bodies[0]), "{wire}: {}", bodies[0]);
        assert_eq!(plan_result(wire, &bodies[1]), "Plan updated", "{wire}");
        // The plan is a notification, not an item.
        assert!(
            matches!(
                record.turn.items.as_slice(),
                [
                    ThreadItem::UserMessage { .. },
                    ThreadItem::AgentMessage { .. }
                ]
            ),
            "{wire}: {:?}",
            record.turn.items
        );
    }
}

#[tokio::test]
async fn plan_arguments_that_do_not_parse_tell_the_model_and_send_nothing() {
    for wire in ["chat", "responses"] {
        let bad = json!({"plan": [{"step": "x", "status": "inProgress"}]});
        let (record, bodies) = plan_turn(wire, &bad).await;
        assert_eq!(record.turn.status, TurnStatus::Completed, "{wire}");
        assert!(plan_updates(&record).is_empty(), "{wire}");
        let result = plan_result(wire, &bodies[1]);
        assert!(
            result.starts_with("failed to parse function arguments: ")
                && result.contains("inProgress"),
            "{wire}: {result}"
        );
    }
}

#[tokio::test]
async fn the_scripted_agent_sets_the_plan_on_request() {
    let home = home();
    let options = ServerOptions::load(ServerConfig::builder().tandem_home(home.path()))
        .expect("options")
        .with_store(std::sync::Arc::new(
            tandem_server::store::InMemoryThreadStore::new(),
        ));
    let mut handle = start(options).await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, &format!("/plan {}", plan_arguments())).await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(record.turn.status, TurnStatus::Completed);
    assert_eq!(plan_updates(&record), vec![expected_update()]);

    start_turn(&handle, &thread, "/plan {\"plan\": \"not a list\"}").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(record.turn.status, TurnStatus::Failed);
    let message = record.turn.error.clone().expect("error").message;
    assert!(
        message.starts_with("/plan needs the update_plan arguments"),
        "{message}"
    );
    assert!(plan_updates(&record).is_empty());
    shutdown(handle).await;
}
