//! Plans and reasoning (issue 29, points 3 and 4): `turn/plan/updated` and a `reasoning` item
//! with its `item/reasoning/*` deltas, from the scripted agent's `/plan` and `/think` and
//! from a model provider on loopback speaking the Responses API, compared message by message.

use serde_json::{Value, json};
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};
use tandem_test_support::model_streams::responses;

use super::*;
use crate::session::{Config, Session, Transport, assert_json};

const TURN: &str = "<id:2>";
const INPUT_ITEM: &str = "<id:3>";

fn plan_update(turn_id: &str) -> Value {
    note(
        "turn/plan/updated",
        json!({"threadId": THREAD, "turnId": turn_id, "explanation": "Two steps.",
               "plan": [{"step": "Read", "status": "completed"},
                        {"step": "Fix", "status": "inProgress"}]}),
    )
}

fn plan_arguments() -> Value {
    json!({"explanation": "Two steps.", "plan": [
        {"step": "Read", "status": "completed"}, {"step": "Fix", "status": "in_progress"}]})
}

fn reasoning(id: &str, summary: &[&str], content: &[&str]) -> Value {
    json!({"type": "reasoning", "id": id, "summary": summary, "content": content})
}

fn reasoning_note(method: &str, turn_id: &str, item_id: &str, members: Value) -> Value {
    let params = patched(
        json!({"threadId": THREAD, "turnId": turn_id, "itemId": item_id}),
        members,
    );
    note(method, params)
}

/// The scripted agent's `/plan` then `/think`: the plan, then a reasoning item streamed part
/// by part and word by word, stored with the turn.
pub(crate) async fn plan_and_reasoning_from_the_scripted_agent(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    let input = format!("/plan {}\n/think Read it. | Fix it.", plan_arguments());
    start_turn(&mut s, TURN, &input).await;

    let item = "<id:4>";
    let mut expected = turn_opening(TURN, INPUT_ITEM, &input);
    expected.push(plan_update(TURN));
    expected.push(item_note("item/started", TURN, reasoning(item, &[], &[])));
    for (index, words) in [["Read ", "it."], ["Fix ", "it."]].iter().enumerate() {
        expected.push(reasoning_note(
            "item/reasoning/summaryPartAdded",
            TURN,
            item,
            json!({"summaryIndex": index}),
        ));
        for word in words {
            expected.push(reasoning_note(
                "item/reasoning/summaryTextDelta",
                TURN,
                item,
                json!({"summaryIndex": index, "delta": word}),
            ));
        }
    }
    for word in ["Read ", "it. ", "| ", "Fix ", "it."] {
        expected.push(reasoning_note(
            "item/reasoning/textDelta",
            TURN,
            item,
            json!({"contentIndex": 0, "delta": word}),
        ));
    }
    let done = reasoning(item, &["Read it.", "Fix it."], &["Read it. | Fix it."]);
    expected.push(item_note("item/completed", TURN, done.clone()));
    expected.extend(turn_closing(
        TURN,
        vec![user_message(INPUT_ITEM, &input), done.clone()],
    ));
    expect_sequence(&mut s, &expected).await;

    expect_result(
        &mut s,
        "thread/turns/list",
        json!({"threadId": THREAD, "itemsView": "full"}),
        json!({
            "data": [turn(TURN, "completed", vec![user_message(INPUT_ITEM, &input), done])],
            "nextCursor": null, "backwardsCursor": format!("at:{TURN}"),
        }),
    )
    .await;
    s.close().await;
}

/// A Responses provider that reasons, calls `update_plan`, then answers: the reasoning item
/// with its summary, the plan, and the answer, in the order the stream gave them.
pub(crate) async fn plan_and_reasoning_from_a_model_provider(transport: Transport) {
    let mock = MockHttpServer::start().await.expect("mock provider starts");
    mock.push(
        MockResponse::sse().bytes(
            [
                responses::reasoning("rs_1", 0, &["Plan first."], &[], Some("enc")),
                responses::function_call("plan_1", "update_plan", 1, &plan_arguments()),
                responses::completed(),
            ]
            .concat(),
        ),
    );
    mock.push(
        MockResponse::sse().bytes([responses::text("Done."), responses::completed()].concat()),
    );
    let config = Config {
        config_toml: Some(format!(
            "model_provider = \"mock\"\nmodel = \"mock-model\"\n\
             model_reasoning_summary = \"concise\"\n\n[model_providers.mock]\n\
             base_url = \"{}\"\nwire_api = \"responses\"\n",
            mock.url("/v1")
        )),
        ..Config::default()
    };
    let mut s = Session::open_with(transport, config).await;
    s.initialize(false).await;
    let started = s
        .call(
            "thread/start",
            json!({"cwd": "<home>", "approvalPolicy": "never"}),
        )
        .await;
    assert_json(&s, &started["thread"]["id"], &json!(THREAD));
    s.expect("thread/started").await;
    start_turn(&mut s, TURN, "fix it").await;

    let (before, completed) = s.read_until("turn/completed").await;
    let item = "<id:4>";
    let answer = "<id:5>";
    let relevant: Vec<Value> = before
        .into_iter()
        .filter(|message| {
            let method = message["method"].as_str().unwrap_or_default();
            method == "turn/plan/updated"
                || method.starts_with("item/reasoning/")
                || (method.starts_with("item/")
                    && message["params"]["item"]["type"] != "userMessage")
        })
        .collect();
    let done = reasoning(item, &["Plan first."], &[]);
    let expected = vec![
        item_note("item/started", TURN, reasoning(item, &[], &[])),
        reasoning_note(
            "item/reasoning/summaryPartAdded",
            TURN,
            item,
            json!({"summaryIndex": 0}),
        ),
        reasoning_note(
            "item/reasoning/summaryTextDelta",
            TURN,
            item,
            json!({"summaryIndex": 0, "delta": "Plan first."}),
        ),
        item_note("item/completed", TURN, done.clone()),
        plan_update(TURN),
        item_note("item/started", TURN, agent_message(answer, "")),
        note(
            "item/agentMessage/delta",
            json!({"threadId": THREAD, "turnId": TURN, "itemId": answer, "delta": "Done."}),
        ),
        item_note("item/completed", TURN, agent_message(answer, "Done.")),
    ];
    assert_json(&s, &json!(relevant), &json!(expected));
    assert_json(
        &s,
        &completed["params"]["turn"]["items"],
        &json!([
            user_message(INPUT_ITEM, "fix it"),
            done,
            agent_message(answer, "Done.")
        ]),
    );
    let first = mock.requests()[0].json();
    assert_json(&s, &first["reasoning"], &json!({"summary": "concise"}));
    s.close().await;
}
