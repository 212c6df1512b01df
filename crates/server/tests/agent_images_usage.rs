//! Issue 15, points 4 and 5 against a model provider on loopback: image input reaches the
//! model in each wire's own form (Chat Completions `image_url` parts, Responses `input_image`
//! items; a local file as a `data:` URL), again in later turns' history, and the usage each
//! stream reports becomes `thread/tokenUsage/updated` with the thread's running total.

mod agent_support;

use agent_support::*;
use base64::Engine as _;
use serde_json::{Value, json};
use tandem_host::in_process::InProcessServerEvent;
use tandem_protocol::client_methods::TurnStart;
use tandem_protocol::{
    ServerNotification, ThreadItem, ThreadTokenUsageUpdatedNotification, TokenUsageBreakdown,
    TurnStatus, UserInput,
};
use tandem_server::config::toml;
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};

/// The first bytes of a PNG: enough for the signature check.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
const INLINE: &str = "data:image/gif;base64,R0lGODlhAQABAAAAACw=";

fn png_data_url() -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(PNG)
    )
}

/// Starts a turn whose input is text, an inline image (detail `low`) and the local `png`.
async fn start_image_turn(
    handle: &tandem_host::InProcessClientHandle,
    thread: &str,
    png: &std::path::Path,
) {
    call::<TurnStart>(
        handle,
        json!({"threadId": thread, "input": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "url": INLINE, "detail": "low"},
            {"type": "localImage", "path": png.display().to_string()},
        ]}),
    )
    .await;
}

fn usage_notes(record: &TurnRecord) -> Vec<ThreadTokenUsageUpdatedNotification> {
    record
        .events
        .iter()
        .filter_map(|event| match event {
            InProcessServerEvent::ServerNotification(
                ServerNotification::ThreadTokenUsageUpdated(note),
            ) => Some(note.clone()),
            _ => None,
        })
        .collect()
}

fn breakdown(input: i64, cached: i64, output: i64, reasoning: i64) -> TokenUsageBreakdown {
    TokenUsageBreakdown {
        total_tokens: input + output,
        input_tokens: input,
        cached_input_tokens: cached,
        cache_write_input_tokens: 0,
        output_tokens: output,
        reasoning_output_tokens: reasoning,
    }
}

#[tokio::test]
async fn chat_completions_gets_image_url_parts_and_reports_usage() {
    let mock = MockHttpServer::start().await.expect("mock starts");
    let usage_chunk = json!({"choices": [], "usage": {
        "prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107,
        "prompt_tokens_details": {"cached_tokens": 40},
        "completion_tokens_details": {"reasoning_tokens": 2}}});
    for answer in ["a picture", "same picture"] {
        mock.push(
            MockResponse::sse()
                .event(&text_chunk(answer).to_string())
                .event(&finish_chunk("stop").to_string())
                .event(&usage_chunk.to_string())
                .event("[DONE]"),
        );
    }
    let home = home();
    let png = home.path().join("photo.png");
    std::fs::write(&png, PNG).expect("write png");
    let mut handle = start(memory_options(home.path(), &mock.url("/v1"), &[])).await;
    let thread = start_thread(&handle, json!({})).await;

    start_image_turn(&handle, &thread, &png).await;
    let first = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(first.turn.status, TurnStatus::Completed, "{:?}", first.turn);
    // Stored with the turn as sent.
    let ThreadItem::UserMessage { content, .. } = &first.turn.items[0] else {
        panic!("{:?}", first.turn.items);
    };
    assert_eq!(
        content[2],
        UserInput::LocalImage {
            path: png.display().to_string(),
            detail: None
        }
    );

    start_turn(&handle, &thread, "and now?").await;
    let second = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(second.turn.status, TurnStatus::Completed);

    let requests = mock.wait_for_requests(2).await;
    let expected_images = json!([
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": INLINE, "detail": "low"}},
        {"type": "image_url", "image_url": {"url": png_data_url()}},
    ]);
    for request in &requests {
        let body = request.json();
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        // The first user message is the image turn, in the first request and in the history
        // of the second.
        assert_eq!(messages(&body)[1]["content"], expected_images);
    }
    assert_eq!(
        messages(&requests[1].json())[3],
        json!({"role": "user", "content": "and now?"})
    );

    let last = breakdown(100, 40, 7, 2);
    let first_notes = usage_notes(&first);
    assert_eq!(first_notes.len(), 1, "{first_notes:?}");
    assert_eq!(first_notes[0].thread_id, thread);
    assert_eq!(first_notes[0].turn_id, first.turn.id);
    assert_eq!(first_notes[0].token_usage.last, last);
    assert_eq!(first_notes[0].token_usage.total, last);
    let second_notes = usage_notes(&second);
    assert_eq!(second_notes.len(), 1);
    assert_eq!(second_notes[0].token_usage.last, last);
    let mut total = last;
    total.add(&last);
    assert_eq!(second_notes[0].token_usage.total, total);
    // The wire form, as the reference's schema has it.
    let wire = serde_json::to_value(&second_notes[0]).expect("serializes");
    assert_eq!(
        wire["tokenUsage"]["last"],
        json!({"totalTokens": 107, "inputTokens": 100, "cachedInputTokens": 40,
               "cacheWriteInputTokens": 0, "outputTokens": 7, "reasoningOutputTokens": 2})
    );
    assert_eq!(wire["tokenUsage"]["modelContextWindow"], Value::Null);
    shutdown(handle).await;
}

fn responses_event(kind: &str, mut data: Value) -> String {
    data["type"] = json!(kind);
    data.to_string()
}

#[tokio::test]
async fn responses_gets_input_image_items_and_reports_usage() {
    let mock = MockHttpServer::start().await.expect("mock starts");
    mock.push(
        MockResponse::sse()
            .named_event(
                "response.output_text.delta",
                &responses_event(
                    "response.output_text.delta",
                    json!({"item_id": "m", "output_index": 0, "delta": "a picture"}),
                ),
            )
            .named_event(
                "response.completed",
                &responses_event(
                    "response.completed",
                    json!({"response": {"id": "r", "status": "completed", "usage": {
                        "input_tokens": 50, "output_tokens": 5, "total_tokens": 55,
                        "input_tokens_details": {"cached_tokens": 10},
                        "output_tokens_details": {"reasoning_tokens": 1}}}}),
                ),
            ),
    );
    let home = home();
    let png = home.path().join("photo.png");
    std::fs::write(&png, PNG).expect("write png");
    let missing = home.path().join("gone.png");
    let options = memory_options(
        home.path(),
        &mock.url("/v1"),
        &[(
            "model_providers.mock.wire_api",
            toml::Value::from("responses"),
        )],
    );
    let mut handle = start(options).await;
    let thread = start_thread(&handle, json!({})).await;
    call::<TurnStart>(
        &handle,
        json!({"threadId": thread, "input": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "url": INLINE, "detail": "high"},
            {"type": "localImage", "path": png.display().to_string()},
            {"type": "localImage", "path": missing.display().to_string()},
        ]}),
    )
    .await;
    let record = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(
        record.turn.status,
        TurnStatus::Completed,
        "{:?}",
        record.turn
    );
    let body = mock.wait_for_requests(1).await[0].json();
    let content = &body["input"][0]["content"];
    assert_eq!(
        content[0],
        json!({"type": "input_text", "text": "what is this?"})
    );
    assert_eq!(
        content[1],
        json!({"type": "input_image", "image_url": INLINE, "detail": "high"})
    );
    assert_eq!(
        content[2],
        json!({"type": "input_image", "image_url": png_data_url(), "detail": "auto"})
    );
    // A file that cannot be read is named to the model instead of failing the turn.
    let note = content[3]["text"].as_str().expect("a text note");
    assert!(
        note.contains("gone.png") && note.contains("could not be attached"),
        "{note}"
    );
    let notes = usage_notes(&record);
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].token_usage.last, breakdown(50, 10, 5, 1));
    assert_eq!(notes[0].token_usage.total, breakdown(50, 10, 5, 1));
    shutdown(handle).await;
}

#[tokio::test]
async fn a_remote_image_url_is_refused_like_the_reference() {
    let mock = MockHttpServer::start().await.expect("mock starts");
    let home = home();
    let handle = start(memory_options(home.path(), &mock.url("/v1"), &[])).await;
    let thread = start_thread(&handle, json!({})).await;
    let error = try_call::<TurnStart>(
        &handle,
        json!({"threadId": thread, "input": [{"type": "image", "url": "https://example.com/a.png"}]}),
    )
    .await
    .expect_err("refused");
    assert_eq!(error.code, -32600);
    assert_eq!(
        error.message,
        "remote image URLs are not supported; use an inline data URL instead"
    );
    assert!(mock.requests().is_empty());
    shutdown(handle).await;
}
