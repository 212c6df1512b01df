//! Issue 29, point 4: the model's reasoning as `reasoning` items. The Responses API's
//! reasoning output items (summary parts, summary deltas, reasoning text) and the Chat
//! Completions `reasoning_content` / `reasoning` deltas reach the client as
//! `item/reasoning/*` around a stored `reasoning` item; `model_reasoning_effort` and
//! `model_reasoning_summary` reach the provider; the Responses reasoning goes back with its
//! encrypted content in the next request of the turn. The scripted agent's `/think` drives
//! the same path without a model.

mod agent_support;

use agent_support::*;
use serde_json::{Value, json};
use tandem_host::in_process::InProcessServerEvent;
use tandem_protocol::client_methods::{ConfigValueWrite, ThreadRead};
use tandem_protocol::{ThreadItem, TurnStatus};
use tandem_server::config::toml;
use tandem_server::{ServerConfig, ServerOptions};
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};
use tandem_test_support::model_streams::{chat, responses};

/// The reasoning notifications and items of a turn, as `(method, params)` with the ids
/// replaced by `<item>` (one reasoning item at a time in these tests), in order.
fn reasoning_notes(record: &TurnRecord) -> Vec<(String, Value)> {
    record
        .events
        .iter()
        .filter_map(|event| match event {
            InProcessServerEvent::ServerNotification(note) => Some(note.clone()),
            _ => None,
        })
        .filter_map(|note| {
            let wire = note.into_jsonrpc().expect("encodes");
            let mut params = wire.params.unwrap_or_default();
            let is_reasoning = wire.method.starts_with("item/reasoning/")
                || (wire.method.starts_with("item/") && params["item"]["type"] == "reasoning");
            if !is_reasoning {
                return None;
            }
            let members = params.as_object_mut().expect("params object");
            for key in ["threadId", "turnId", "startedAtMs", "completedAtMs"] {
                members.remove(key);
            }
            if members.contains_key("itemId") {
                members.insert("itemId".into(), json!("<item>"));
            }
            if let Some(item) = members.get_mut("item") {
                item["id"] = json!("<item>");
            }
            Some((wire.method, params))
        })
        .collect()
}

fn reasoning_item(summary: &[&str], content: &[&str]) -> Value {
    json!({"item": {"type": "reasoning", "id": "<item>", "summary": summary, "content": content}})
}

fn responses_wire(extra: &[(&'static str, toml::Value)]) -> Vec<(&'static str, toml::Value)> {
    let mut all = vec![("model_providers.mock.wire_api", "responses".into())];
    all.extend(extra.iter().cloned());
    all
}

#[tokio::test]
async fn responses_reasoning_streams_as_an_item_and_goes_back_encrypted() {
    let mock = MockHttpServer::start().await.expect("mock");
    mock.push(
        MockResponse::sse().bytes(
            [
                responses::reasoning(
                    "rs_1",
                    0,
                    &["Look.", "Then run."],
                    &["raw thought"],
                    Some("enc-1"),
                ),
                responses::function_call("call_1", "shell", 1, &json!({"command": "echo hi"})),
                responses::completed(),
            ]
            .concat(),
        ),
    );
    mock.push(
        MockResponse::sse()
            .bytes([responses::text("It said hi."), responses::completed()].concat()),
    );
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &mock.url("/v1"),
        &responses_wire(&[
            ("model_reasoning_effort", "high".into()),
            ("model_reasoning_summary", "detailed".into()),
        ]),
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "say hi").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(record.turn.status, TurnStatus::Completed);

    let part = |index: i64| json!({"itemId": "<item>", "summaryIndex": index});
    let summary_delta = |index: i64, delta: &str| json!({"itemId": "<item>", "summaryIndex": index, "delta": delta});
    assert_eq!(
        reasoning_notes(&record),
        vec![
            ("item/started".into(), reasoning_item(&[], &[])),
            ("item/reasoning/summaryPartAdded".into(), part(0)),
            (
                "item/reasoning/summaryTextDelta".into(),
                summary_delta(0, "Look.")
            ),
            ("item/reasoning/summaryPartAdded".into(), part(1)),
            (
                "item/reasoning/summaryTextDelta".into(),
                summary_delta(1, "Then run.")
            ),
            (
                "item/reasoning/textDelta".into(),
                json!({"itemId": "<item>", "contentIndex": 0, "delta": "raw thought"})
            ),
            (
                "item/completed".into(),
                reasoning_item(&["Look.", "Then run."], &["raw thought"])
            ),
        ]
    );
    // The item is stored with the turn, before the command it led to.
    let read = call::<ThreadRead>(&handle, json!({"threadId": thread, "includeTurns": true})).await;
    let kinds: Vec<&str> = read.thread.turns[0]
        .items
        .iter()
        .map(|item| match item {
            ThreadItem::UserMessage { .. } => "user",
            ThreadItem::Reasoning { .. } => "reasoning",
            ThreadItem::CommandExecution { .. } => "command",
            ThreadItem::AgentMessage { .. } => "agent",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, vec!["user", "reasoning", "command", "agent"]);

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].json();
    assert_eq!(
        first["reasoning"],
        json!({"effort": "high", "summary": "detailed"})
    );
    assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(first["store"], false);
    // The next request carries the reasoning back, without the id nothing stores, right
    // before the call it led to.
    let input = requests[1].json()["input"].clone();
    let input = input.as_array().expect("input");
    let at = input
        .iter()
        .position(|item| item["type"] == "reasoning")
        .expect("reasoning sent back");
    assert_eq!(
        input[at],
        json!({"type": "reasoning", "encrypted_content": "enc-1",
               "summary": [{"type": "summary_text", "text": "Look."},
                           {"type": "summary_text", "text": "Then run."}],
               "content": [{"type": "reasoning_text", "text": "raw thought"}]})
    );
    assert_eq!(input[at + 1]["type"], "function_call");
    assert_eq!(input[at + 1]["call_id"], "call_1");
    shutdown(handle).await;
}

#[tokio::test]
async fn chat_reasoning_content_and_reasoning_stream_as_reasoning_text() {
    let mock = MockHttpServer::start().await.expect("mock");
    // DeepSeek and llama.cpp: `reasoning_content`; then a tool call ends the reasoning.
    mock.push(
        MockResponse::sse()
            .bytes(chat::reasoning("reasoning_content", "First, "))
            .bytes(chat::reasoning("reasoning_content", "list."))
            .bytes(chat::tool_call(
                "c1",
                "shell",
                &json!({"command": "echo x"}),
            ))
            .bytes(chat::done()),
    );
    // vLLM and Ollama: `reasoning`; then the answer's text ends it.
    mock.push(
        MockResponse::sse()
            .bytes(chat::reasoning("reasoning", "Done."))
            .bytes(chat::text("Listed."))
            .bytes(chat::done()),
    );
    let home = home();
    let mut handle = start(memory_options(
        home.path(),
        &mock.url("/v1"),
        &[
            ("model_reasoning_effort", "low".into()),
            ("model_reasoning_summary", "auto".into()),
        ],
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "list").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(record.turn.status, TurnStatus::Completed);
    let text = |delta: &str| json!({"itemId": "<item>", "contentIndex": 0, "delta": delta});
    assert_eq!(
        reasoning_notes(&record),
        vec![
            ("item/started".into(), reasoning_item(&[], &[])),
            ("item/reasoning/textDelta".into(), text("First, ")),
            ("item/reasoning/textDelta".into(), text("list.")),
            (
                "item/completed".into(),
                reasoning_item(&[], &["First, list."])
            ),
            ("item/started".into(), reasoning_item(&[], &[])),
            ("item/reasoning/textDelta".into(), text("Done.")),
            ("item/completed".into(), reasoning_item(&[], &["Done."])),
        ]
    );
    let reasoning_items = record
        .turn
        .items
        .iter()
        .filter(|item| matches!(item, ThreadItem::Reasoning { .. }))
        .count();
    assert_eq!(reasoning_items, 2, "both stored: {:?}", record.turn.items);

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let body = request.json();
        assert_eq!(body["reasoning_effort"], "low");
        // Chat Completions has no summary setting, and no reasoning goes back.
        assert!(body.get("reasoning").is_none(), "{body}");
        assert!(!body.to_string().contains("First, list."), "{body}");
    }
    shutdown(handle).await;
}

#[tokio::test]
async fn without_the_keys_no_reasoning_member_is_sent() {
    let mock = MockHttpServer::start().await.expect("mock");
    mock.push(MockResponse::sse().bytes([chat::text("hi"), chat::done()].concat()));
    mock.push(MockResponse::sse().bytes([responses::text("hi"), responses::completed()].concat()));
    let home = home();
    for wire in ["chat", "responses"] {
        let mut handle = start(memory_options(
            home.path(),
            &mock.url("/v1"),
            &[("model_providers.mock.wire_api", wire.into())],
        ))
        .await;
        let thread = start_thread(&handle, json!({})).await;
        start_turn(&handle, &thread, "hello").await;
        let record = drive_turn(&mut handle, &Answers::default()).await;
        assert_eq!(record.turn.status, TurnStatus::Completed);
        shutdown(handle).await;
    }
    for request in mock.requests() {
        let body = request.json();
        for member in ["reasoning", "reasoning_effort", "include"] {
            assert!(body.get(member).is_none(), "{member} in {body}");
        }
    }
}

#[tokio::test]
async fn reasoning_keys_are_validated_and_a_write_applies_to_the_next_turn() {
    let home = home();
    let bad = ServerConfig::builder()
        .tandem_home(home.path())
        .config_override("model_reasoning_effort", "extreme".into());
    let error = ServerOptions::load(bad).expect_err("refused").to_string();
    assert!(
        error.contains("model_reasoning_effort") && error.contains("\"xhigh\""),
        "{error}"
    );
    let bad = ServerConfig::builder()
        .tandem_home(home.path())
        .config_override("model_reasoning_summary", toml::Value::Integer(1));
    let error = ServerOptions::load(bad).expect_err("refused").to_string();
    assert!(error.contains("\"concise\""), "{error}");

    let mock = MockHttpServer::start().await.expect("mock");
    for _ in 0..2 {
        mock.push(
            MockResponse::sse().bytes([responses::text("ok"), responses::completed()].concat()),
        );
    }
    let mut handle = start(memory_options(
        home.path(),
        &mock.url("/v1"),
        &responses_wire(&[]),
    ))
    .await;
    let refused = try_call::<ConfigValueWrite>(
        &handle,
        json!({"keyPath": "model_reasoning_summary", "value": "verbose",
               "mergeStrategy": "replace"}),
    )
    .await
    .expect_err("invalid value refused");
    assert_eq!(
        refused.data,
        Some(json!({"config_write_error_code": "configValidationError"}))
    );
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "one").await;
    drive_turn(&mut handle, &Answers::default()).await;
    call::<ConfigValueWrite>(
        &handle,
        json!({"keyPath": "model_reasoning_summary", "value": "concise",
               "mergeStrategy": "replace"}),
    )
    .await;
    start_turn(&handle, &thread, "two").await;
    drive_turn(&mut handle, &Answers::default()).await;
    let requests = mock.requests();
    assert!(requests[0].json().get("reasoning").is_none());
    assert_eq!(
        requests[1].json()["reasoning"],
        json!({"summary": "concise"})
    );
    shutdown(handle).await;
}

/// `turn/start`'s `effort` and `summary` hold from that turn on, `null` returns to the
/// configuration's, and a value no model takes is refused before anything is stored.
#[tokio::test]
async fn turn_start_overrides_the_reasoning_from_that_turn_on() {
    let home = home();
    let mock = MockHttpServer::start().await.expect("mock");
    for _ in 0..3 {
        mock.push(
            MockResponse::sse().bytes([responses::text("ok"), responses::completed()].concat()),
        );
    }
    let mut handle = start(memory_options(
        home.path(),
        &mock.url("/v1"),
        &responses_wire(&[("model_reasoning_effort", "low".into())]),
    ))
    .await;
    let thread = start_thread(&handle, json!({})).await;
    let turn = |text: &str, overrides: Value| {
        let mut params = json!({"threadId": thread, "input": [{"type": "text", "text": text}]});
        params
            .as_object_mut()
            .unwrap()
            .extend(overrides.as_object().unwrap().clone());
        params
    };
    let refused = try_call::<tandem_protocol::client_methods::TurnStart>(
        &handle,
        turn("bad", json!({"effort": "extreme"})),
    )
    .await
    .expect_err("an unknown effort is refused");
    assert_eq!(refused.code, -32600);
    assert!(refused.message.contains("\"xhigh\""), "{}", refused.message);

    for (text, overrides) in [
        ("one", json!({"effort": "high", "summary": "detailed"})),
        ("two", json!({})),
        ("three", json!({"effort": null, "summary": null})),
    ] {
        call::<tandem_protocol::client_methods::TurnStart>(&handle, turn(text, overrides)).await;
        drive_turn(&mut handle, &Answers::default()).await;
        if text == "two" {
            let resumed = call::<tandem_protocol::client_methods::ThreadResume>(
                &handle,
                json!({"threadId": thread}),
            )
            .await;
            assert_eq!(resumed.session.reasoning_effort.as_deref(), Some("high"));
        }
    }
    let sent: Vec<Value> = mock
        .requests()
        .iter()
        .map(|request| request.json()["reasoning"].clone())
        .collect();
    assert_eq!(
        sent,
        vec![
            json!({"effort": "high", "summary": "detailed"}),
            json!({"effort": "high", "summary": "detailed"}),
            json!({"effort": "low"}),
        ]
    );
    shutdown(handle).await;
}

#[tokio::test]
async fn the_scripted_agent_thinks_on_request() {
    let home = home();
    let options = ServerOptions::load(ServerConfig::builder().tandem_home(home.path()))
        .expect("options")
        .with_store(std::sync::Arc::new(
            tandem_server::store::InMemoryThreadStore::new(),
        ));
    let mut handle = start(options).await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "/think weigh it | pick one").await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(record.turn.status, TurnStatus::Completed);
    let notes = reasoning_notes(&record);
    let summary: String = notes
        .iter()
        .filter(|(method, _)| method == "item/reasoning/summaryTextDelta")
        .map(|(_, params)| params["delta"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(summary, "weigh itpick one");
    let parts = notes
        .iter()
        .filter(|(method, _)| method == "item/reasoning/summaryPartAdded")
        .count();
    assert_eq!(parts, 2);
    assert_eq!(
        notes.last().cloned(),
        Some((
            "item/completed".into(),
            reasoning_item(&["weigh it", "pick one"], &["weigh it | pick one"])
        ))
    );
    assert!(matches!(
        record.turn.items.as_slice(),
        [ThreadItem::UserMessage { .. }, ThreadItem::Reasoning { .. }]
    ));
    shutdown(handle).await;
}

#[tokio::test]
async fn model_list_reports_the_configured_effort() {
    let home = home();
    let handle = start(memory_options(
        home.path(),
        "http://127.0.0.1:9/v1",
        &[("model_reasoning_effort", "medium".into())],
    ))
    .await;
    let list = call::<tandem_protocol::client_methods::ModelList>(&handle, json!({})).await;
    let model = &list.data[0];
    assert_eq!(model.default_reasoning_effort, "medium");
    let efforts: Vec<&str> = model
        .supported_reasoning_efforts
        .iter()
        .map(|option| option.reasoning_effort.as_str())
        .collect();
    assert_eq!(efforts, vec!["medium"]);
    shutdown(handle).await;
}

#[tokio::test]
async fn thread_answers_carry_the_configured_effort() {
    for (configured, expected) in [(Some("high"), json!("high")), (None, Value::Null)] {
        let home = home();
        let extra: Vec<(&str, toml::Value)> = configured
            .map(|effort| ("model_reasoning_effort", effort.into()))
            .into_iter()
            .collect();
        let handle = start(memory_options(home.path(), "http://127.0.0.1:9/v1", &extra)).await;
        let started =
            call::<tandem_protocol::client_methods::ThreadStart>(&handle, json!({})).await;
        assert_eq!(json!(started.session.reasoning_effort), expected);
        let resumed = call::<tandem_protocol::client_methods::ThreadResume>(
            &handle,
            json!({"threadId": started.thread.id}),
        )
        .await;
        assert_eq!(json!(resumed.session.reasoning_effort), expected);
        shutdown(handle).await;
    }
}

#[path = "failing_store/mod.rs"]
mod failing_store;

/// `item/completed` means stored, for reasoning as for every item: with each write of a
/// `/think` turn failing in turn, every reasoning item reported completed is in the store, and
/// the write that refuses the item leaves it unreported (the turn then fails).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reasoning_item_is_reported_completed_only_once_stored() {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    use failing_store::FailingStore;
    use tandem_protocol::ServerNotification;
    use tandem_server::store::ThreadStore;

    /// Runs thread/start and one `/think` turn over `store`; the reasoning items reported
    /// completed and the turn's end, when the thread could be started.
    async fn run(store: Arc<FailingStore>) -> Option<(String, Vec<ThreadItem>, TurnStatus)> {
        let home = home();
        let options = ServerOptions::load(ServerConfig::builder().tandem_home(home.path()))
            .expect("options")
            .with_store(store as Arc<dyn ThreadStore>);
        let mut handle = start(options).await;
        let thread = try_call::<tandem_protocol::client_methods::ThreadStart>(
            &handle,
            json!({"approvalPolicy": "never"}),
        )
        .await
        .ok()?["thread"]["id"]
            .as_str()?
            .to_owned();
        let started = try_call::<tandem_protocol::client_methods::TurnStart>(
            &handle,
            json!({"threadId": thread, "input": [{"type": "text", "text": "/think a | b"}]}),
        )
        .await;
        if started.is_err() {
            shutdown(handle).await;
            return Some((thread, Vec::new(), TurnStatus::Failed));
        }
        let record = drive_turn(&mut handle, &Answers::default()).await;
        shutdown(handle).await;
        let completed = record
            .events
            .iter()
            .filter_map(|event| match event {
                InProcessServerEvent::ServerNotification(ServerNotification::ItemCompleted(
                    done,
                )) if matches!(done.item, ThreadItem::Reasoning { .. }) => Some(done.item.clone()),
                _ => None,
            })
            .collect();
        Some((thread, completed, record.turn.status))
    }

    let clean = Arc::new(FailingStore::new(usize::MAX));
    let (_, completed, status) = run(Arc::clone(&clean)).await.expect("thread");
    assert_eq!((completed.len(), status), (1, TurnStatus::Completed));
    let total = clean.writes.load(Ordering::SeqCst);
    let mut unreported = 0;
    for fail_at in 1..=total {
        let store = Arc::new(FailingStore::new(fail_at));
        let Some((thread, completed, status)) = run(Arc::clone(&store)).await else {
            continue;
        };
        let (_, turns) = store
            .inner
            .get_thread_with_turns(&thread)
            .await
            .expect("reads")
            .expect("the thread is stored");
        let stored: Vec<&ThreadItem> = turns.iter().flat_map(|turn| &turn.items).collect();
        for item in &completed {
            assert!(
                stored.contains(&item),
                "write {fail_at}: {item:?} reported, not stored"
            );
        }
        if completed.is_empty() && status == TurnStatus::Failed && !turns.is_empty() {
            unreported += 1;
        }
    }
    assert!(unreported > 0, "some write refused the reasoning item");
}
