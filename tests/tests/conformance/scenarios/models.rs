//! Issue 15, part 3: `model/list`, `account/read`, `config/value/write` and
//! `config/batchWrite`, image input and `thread/tokenUsage/updated`, with the reference
//! app-server's shapes, the same on every transport.

use serde_json::{Value, json};
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};

use super::*;
use crate::session::{Config, Session, Transport};

/// The one model of a server with no model provider: the scripted agent's.
fn scripted_model(is_default: bool) -> Value {
    json!({
        "id": "scripted", "model": "scripted", "upgrade": null, "upgradeInfo": null,
        "availabilityNux": null, "displayName": "scripted",
        "description": "Tandem's scripted agent: runs /sh, /tool, /ask, /sleep, /plan, /think \
                        and /fail lines and quotes any other text; no model behind it.",
        "modelSpecialty": null, "hidden": false,
        "supportedReasoningEfforts": [{
            "reasoningEffort": "none",
            "description": "Tandem sends no reasoning effort; the model uses its own default",
        }],
        "defaultReasoningEffort": "none", "inputModalities": ["text", "image"],
        "supportsPersonality": false, "multiAgentVersion": "disabled",
        "additionalSpeedTiers": [], "serviceTiers": [], "defaultServiceTier": null,
        "availableAccessPrograms": null, "isDefault": is_default,
    })
}

/// `model/list` pages (the reference's offsets, `0` read as `1`) and errors, and
/// `account/read` saying no account is needed.
pub(crate) async fn model_list_and_account_read(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    let all = json!({"data": [scripted_model(true)], "nextCursor": null});
    expect_result(&mut s, "model/list", json!({}), all.clone()).await;
    expect_result(
        &mut s,
        "model/list",
        json!({"limit": 0, "includeHidden": true, "cursor": null}),
        all.clone(),
    )
    .await;
    expect_result(
        &mut s,
        "model/list",
        json!({"modelProvider": "tandem"}),
        all,
    )
    .await;
    expect_result(
        &mut s,
        "model/list",
        json!({"cursor": "1"}),
        json!({"data": [], "nextCursor": null}),
    )
    .await;
    expect_error(
        &mut s,
        "model/list",
        json!({"cursor": "abc"}),
        -32600,
        "invalid cursor: abc",
    )
    .await;
    expect_error(
        &mut s,
        "model/list",
        json!({"cursor": "2"}),
        -32600,
        "cursor 2 exceeds total models 1",
    )
    .await;
    let error = s
        .call_error("model/list", json!({"modelProvider": "nope"}))
        .await;
    assert_json(
        &s,
        &error,
        &json!({
            "code": -32600,
            "message": "This chat uses model provider \u{201c}nope\u{201d}, which is no longer \
                        configured. Restore this provider\u{2019}s configuration to continue.",
            "data": {"type": "modelProviderNotConfigured", "modelProvider": "nope"},
        }),
    );
    let no_account = json!({
        "account": null, "userId": null, "requiresOpenaiAuth": false, "workspaceRouting": null,
    });
    expect_result(&mut s, "account/read", json!({}), no_account.clone()).await;
    expect_result(
        &mut s,
        "account/read",
        json!({"refreshToken": true}),
        no_account,
    )
    .await;
    s.close().await;
}

/// A config write's result shape, its effect on `config/read` and on new threads, a stale
/// `expectedVersion` and an invalid value refused with the reference's error data, and a
/// batch applied as a whole.
pub(crate) async fn config_writes_are_read_back(transport: Transport) {
    let config = Config {
        config_toml: Some("# Tandem settings\nthread_unload_delay_secs = 30\n".to_owned()),
        ..Config::default()
    };
    let mut s = Session::open_with(transport, config).await;
    s.initialize(false).await;
    let written = s
        .call(
            "config/value/write",
            json!({"keyPath": "model", "value": "qwen3", "mergeStrategy": "replace"}),
        )
        .await;
    let version = written["version"].as_str().unwrap_or_default().to_owned();
    if !version.starts_with("sha256:") || version.len() != 71 {
        s.fail(format!("version is not sha256:<hex>: {written}"));
    }
    assert_json(
        &s,
        &written,
        &json!({
            "status": "ok", "version": version, "filePath": "<home>/config.toml",
            "overriddenMetadata": null,
        }),
    );
    let read = s.call("config/read", json!({})).await;
    assert_json(
        &s,
        &json!([
            read["config"]["model"],
            read["config"]["thread_unload_delay_secs"]
        ]),
        &json!(["qwen3", 30]),
    );
    let started = s
        .call(
            "thread/start",
            json!({"cwd": "<home>", "approvalPolicy": "never"}),
        )
        .await;
    assert_json(&s, &started["thread"]["model"], &json!("qwen3"));
    s.expect("thread/started").await;

    let stale = s
        .call_error(
            "config/batchWrite",
            json!({"edits": [{"keyPath": "model", "value": "x", "mergeStrategy": "replace"}],
                   "expectedVersion": "sha256:0"}),
        )
        .await;
    assert_json(
        &s,
        &stale,
        &json!({
            "code": -32600,
            "message": "Configuration was modified since last read. Fetch latest version and retry.",
            "data": {"config_write_error_code": "configVersionConflict"},
        }),
    );
    let invalid = s
        .call_error(
            "config/value/write",
            json!({"keyPath": "thread_unload_delay_secs", "value": "soon",
                   "mergeStrategy": "replace", "expectedVersion": version}),
        )
        .await;
    assert_json(
        &s,
        &invalid,
        &json!({
            "code": -32600,
            "message": "Invalid configuration: invalid thread_unload_delay_secs = \"soon\" in \
                        <home>/config.toml: expected a whole number of seconds (e.g. 60), found \
                        a string",
            "data": {"config_write_error_code": "configValidationError"},
        }),
    );
    // Nothing of the refused writes landed: the version still matches.
    let batch = s
        .call(
            "config/batchWrite",
            json!({"edits": [
                {"keyPath": "model", "value": null, "mergeStrategy": "replace"},
                {"keyPath": "thread_unload_delay_secs", "value": 45, "mergeStrategy": "upsert"},
            ], "expectedVersion": version, "reloadUserConfig": true}),
        )
        .await;
    assert_json(&s, &batch["status"], &json!("ok"));
    let read = s.call("config/read", json!({})).await;
    assert_json(
        &s,
        &json!([
            read["config"]["model"],
            read["config"]["thread_unload_delay_secs"]
        ]),
        &json!([null, 45]),
    );
    expect_error(
        &mut s,
        "config/value/write",
        json!({"keyPath": "model", "mergeStrategy": "replace"}),
        -32600,
        "Invalid request: missing field `value`",
    )
    .await;
    s.close().await;
}

/// `image` (a data URL) and `localImage` input: echoed in the `userMessage` item as the
/// reference echoes them, stored with the turn, acknowledged by the scripted agent; a remote
/// image URL is refused as by the reference.
pub(crate) async fn image_input_is_stored_and_acknowledged(transport: Transport) {
    const TURN: &str = "<id:2>";
    let mut s = Session::open(transport).await;
    s.initialize(false).await;
    start_thread(&mut s, THREAD, "never").await;
    expect_error(
        &mut s,
        "turn/start",
        json!({"threadId": THREAD, "input": [{"type": "image", "url": "https://example.com/a.png"}]}),
        -32600,
        "remote image URLs are not supported; use an inline data URL instead",
    )
    .await;
    let inline = "data:image/png;base64,iVBORw0KGgo=";
    expect_result(
        &mut s,
        "turn/start",
        json!({"threadId": THREAD, "input": [
            {"type": "text", "text": "look"},
            {"type": "image", "url": inline, "detail": "low"},
            {"type": "localImage", "path": "<home>/photo.png"},
        ]}),
        json!({"turn": turn(TURN, "inProgress", vec![])}),
    )
    .await;
    let (_, completed) = s.read_until("turn/completed").await;
    let content = json!([
        text_input("look"),
        {"type": "image", "url": inline, "detail": "low"},
        {"type": "localImage", "detail": null, "path": "<home>/photo.png"},
    ]);
    let items = vec![
        json!({"type": "userMessage", "id": "<id:3>", "content": content, "clientId": null}),
        agent_message("<id:4>", "You said: \"look\""),
        agent_message(
            "<id:5>",
            "Received an image: inline image/png, 34 bytes of data URL",
        ),
        agent_message("<id:6>", "Received an image: file <home>/photo.png"),
    ];
    assert_json(
        &s,
        &completed,
        &note(
            "turn/completed",
            json!({"threadId": THREAD, "turn": turn(TURN, "completed", items.clone())}),
        ),
    );
    expect_result(
        &mut s,
        "thread/turns/list",
        json!({"threadId": THREAD, "itemsView": "full"}),
        json!({
            "data": [turn(TURN, "completed", items)],
            "nextCursor": null, "backwardsCursor": format!("at:{TURN}"),
        }),
    )
    .await;
    s.close().await;
}

/// A model provider on loopback reports usage in its stream: `thread/tokenUsage/updated`
/// follows each request, before the turn completes, with the running total.
pub(crate) async fn token_usage_follows_each_model_request(transport: Transport) {
    let mock = MockHttpServer::start().await.expect("mock provider starts");
    let usage = json!({"choices": [], "usage": {
        "prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23,
        "prompt_tokens_details": {"cached_tokens": 8}}});
    for _ in 0..2 {
        mock.push(
            MockResponse::sse()
                .event(&json!({"choices": [{"index": 0, "delta": {"content": "hi"}}]}).to_string())
                .event(&usage.to_string())
                .event("[DONE]"),
        );
    }
    let config = Config {
        config_toml: Some(format!(
            "model_provider = \"mock\"\nmodel = \"mock-model\"\n\n[model_providers.mock]\n\
             base_url = \"{}\"\n",
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
    let last = json!({
        "totalTokens": 23, "inputTokens": 20, "cachedInputTokens": 8,
        "cacheWriteInputTokens": 0, "outputTokens": 3, "reasoningOutputTokens": 0,
    });
    for (turn_id, total) in [
        ("<id:2>", last.clone()),
        (
            "<id:5>",
            json!({
                "totalTokens": 46, "inputTokens": 40, "cachedInputTokens": 16,
                "cacheWriteInputTokens": 0, "outputTokens": 6, "reasoningOutputTokens": 0,
            }),
        ),
    ] {
        let reply = s
            .call(
                "turn/start",
                json!({"threadId": THREAD, "input": [{"type": "text", "text": "hello"}]}),
            )
            .await;
        assert_json(&s, &reply["turn"]["id"], &json!(turn_id));
        let (before, _) = s.read_until("turn/completed").await;
        let usage_notes: Vec<&Value> = before
            .iter()
            .filter(|message| message["method"] == "thread/tokenUsage/updated")
            .collect();
        assert_json(
            &s,
            &json!(usage_notes),
            &json!([note(
                "thread/tokenUsage/updated",
                json!({"threadId": THREAD, "turnId": turn_id, "tokenUsage": {
                    "total": total, "last": last, "modelContextWindow": null,
                }}),
            )]),
        );
    }
    s.close().await;
}
