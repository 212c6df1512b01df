//! Every error code of docs/protocol.md section 2 that a client can provoke, through typed calls
//! and raw requests, each with the message the table documents and the classification of
//! `ClientError` (sent; safe to retry only for -32001); and overload answered, then retried by
//! `retry_overloaded`.
//!
//! -32700 and a duplicate in-flight id need frames a client never writes (it encodes every
//! message and generates every id); the JSON suite covers them.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use tandem_client::{ClientError, Overflow, ProcessHandle, RequestOptions};
use tandem_protocol::{
    ApprovalPolicy, ProcessExitedNotification, ProcessKillParams, ProcessSpawnParams, RequestId,
    ThreadAttachmentAddParams, ThreadLoadedListParams, TurnSteerParams, UserInput,
};
use tokio::task::JoinHandle;

use super::*;
use crate::harness::{Backend, Harness, Setup, client_options};

/// How many requests each overload burst sends while the client is held up: more than the
/// one-slot queues and the processor task can hold, whichever lane holds them up.
const BURST: usize = 16;

/// How long a flooding child gets to fill the connection's pipeline before a burst.
const FLOOD_FILL: Duration = Duration::from_millis(500);

/// The gap between two requests of a burst, so the in-process host's one-slot client queue
/// has been taken before the next arrives (a wire client's writer waits for room anyway).
const BURST_GAP: Duration = Duration::from_millis(1);

/// How long the second burst stays held up, so that its -32001 answers are retried.
const HELD_WITH_RETRIES: Duration = Duration::from_millis(300);

/// Retries of every step around the bursts: with one-slot queues anything may meet a full one.
const SETUP_RETRIES: u32 = 50;

/// -32600 (raw params that do not decode, failed preconditions), -32601, -32602 and -32603 on
/// one client, which keeps serving; an answer to a server request that is not pending is an
/// error the caller sees.
pub(crate) async fn error_codes_and_messages(backend: Backend) {
    let h = Harness::open(backend).await;
    let home = h.home();
    let mut events = h.subscribe_all();

    // -32600: raw params that do not decode, answered as the server's transport answers them.
    h.expect_server_error(
        "thread/read without threadId",
        h.client.request("thread/read", json!({})),
        -32600,
        "Invalid request: missing field `threadId`",
    )
    .await;
    h.expect_server_error(
        "thread/read with a numeric threadId",
        h.client.request("thread/read", json!({"threadId": 123})),
        -32600,
        "Invalid request: invalid type: integer `123`, expected a string",
    )
    .await;
    // -32600: failed preconditions.
    let thread = start_thread(&h, &mut events, ApprovalPolicy::Never).await;
    h.expect_server_error(
        "turn/steer without a turn",
        h.client.steer_turn(TurnSteerParams::new(
            &thread.id,
            "t",
            vec![UserInput::text("x")],
        )),
        -32600,
        "no active turn to steer",
    )
    .await;
    h.expect_server_error(
        "process/spawn of nothing",
        h.client
            .spawn_process(ProcessSpawnParams::new("p", Vec::<String>::new(), &home)),
        -32600,
        "command must not be empty",
    )
    .await;

    // -32601.
    h.expect_server_error(
        "an unknown method",
        h.client.request("foo/bar", json!({})),
        -32601,
        "method not found: foo/bar",
    )
    .await;

    // -32602: the shape is right, a value is not.
    h.expect_server_error(
        "process/spawn with a size but no tty",
        h.client
            .spawn_process(ProcessSpawnParams::new("p", ["true"], &home).size(24, 80)),
        -32602,
        "process/spawn size requires tty: true",
    )
    .await;
    h.expect_server_error(
        "turn/start with audio",
        h.client.request(
            "turn/start",
            json!({"threadId": thread.id, "input": [{"type": "audio", "url": "https://example.invalid/x.mp3"}]}),
        ),
        -32602,
        "unsupported input type: audio",
    )
    .await;
    h.expect_server_error(
        "thread/attachment/add with an empty type",
        h.client.add_attachment(ThreadAttachmentAddParams::new(
            &thread.id,
            "",
            "k",
            Value::Null,
        )),
        -32602,
        "attachmentType must not be empty",
    )
    .await;

    // -32603.
    h.expect_server_error(
        "process/spawn of a missing program",
        h.client.spawn_process(ProcessSpawnParams::new(
            "p",
            ["/nonexistent/tandem-conformance"],
            &home,
        )),
        -32603,
        "failed to spawn process: No such file or directory (os error 2)",
    )
    .await;

    // The protocol only logs an answer to an unknown server request; the client refuses to
    // send one, so the caller learns of it.
    let error = h
        .call_error(
            "answering a server request that never existed",
            h.client
                .respond_to_server_request(RequestId::Integer(4242), Ok(json!({}))),
        )
        .await;
    if !matches!(error, ClientError::ServerRequestNotPending { .. }) || error.was_sent() {
        h.fail(format!("expected ServerRequestNotPending, got {error:?}"));
    }

    let loaded = h
        .call(
            "thread/loaded/list",
            h.client.list_loaded_threads(ThreadLoadedListParams::new()),
        )
        .await;
    h.expect_json(
        "thread/loaded/list",
        &loaded,
        json!({"data": [THREAD], "nextCursor": null}),
    );
    h.close().await;
}

/// Spawns `yes` under `handle` with a lossless, one-slot output queue that nobody reads: the
/// client stops taking anything from the server behind it (in-process, its worker waits; over
/// the wire, its reader), as a client that pauses reading does, so the server's pipeline fills
/// and its processor task soon waits to hand over an answer.
async fn hold_up_with_a_flood(h: &Harness, handle: &str) -> ProcessHandle {
    let params = ProcessSpawnParams::new(handle, ["yes", "tandem conformance"], h.home())
        .streaming()
        .unlimited_output()
        .no_timeout();
    let flood = h
        .call(
            "spawning the flood",
            h.client
                .spawn_process_with(params, Some(1), Overflow::Lossless),
        )
        .await;
    tokio::time::sleep(FLOOD_FILL).await;
    flood
}

/// Reads the flood from now on, which lets everything held up behind it through; returns the
/// reader, which ends with the flood's exit.
fn release(flood: ProcessHandle) -> JoinHandle<Result<ProcessExitedNotification, ClientError>> {
    tokio::spawn(flood.wait_exited())
}

/// Kills the released flood `handle` and checks its exit.
async fn kill_flood(
    h: &Harness,
    handle: &str,
    reader: JoinHandle<Result<ProcessExitedNotification, ClientError>>,
) {
    h.call(
        "killing the flood",
        h.client.kill_process(ProcessKillParams::new(handle)),
    )
    .await;
    let exited = match h.within("the flood's exit", reader).await {
        Ok(Ok(exited)) => exited,
        other => h.fail(format!("the flood's exit: {other:?}")),
    };
    h.expect_json(
        "the flood's exit",
        &exited,
        json!({
            "processHandle": handle, "exitCode": 137, "stdout": "", "stderr": "",
            "stdoutCapReached": false, "stderrCapReached": false, "outputDrainTimedOut": false,
        }),
    );
}

/// One request of a burst: whether it is a `process/kill` (else an unknown method), and its
/// task.
type BurstRequest = (bool, JoinHandle<Result<Value, ClientError>>);

/// Sends [`BURST`] requests, alternately `process/kill` of an unknown handle (on the reply
/// lane) and an unknown method, each with `retries` overload retries.
async fn send_burst(h: &Harness, retries: u32) -> Vec<BurstRequest> {
    let mut requests = Vec::with_capacity(BURST);
    for index in 0..BURST {
        let client = h.client.clone();
        let options = RequestOptions::new().retry_overloaded(retries);
        let kill = index % 2 == 0;
        let request = tokio::spawn(async move {
            if kill {
                let params = json!({"processHandle": "ghost"});
                client.request_with("process/kill", params, options).await
            } else {
                client.request_with("foo/bar", json!({}), options).await
            }
        });
        requests.push((kill, request));
        tokio::time::sleep(BURST_GAP).await;
    }
    requests
}

/// How each request of a burst ended: `answered` (the server's own answer), `overloaded`
/// (-32001, safe to retry) or `not sent` (a full in-process client queue, safe to retry).
async fn outcomes(h: &Harness, requests: Vec<BurstRequest>) -> BTreeMap<&'static str, usize> {
    let mut outcomes = BTreeMap::new();
    for (kill, request) in requests {
        let outcome = match h.within("a burst request", request).await {
            Ok(outcome) => outcome,
            Err(panicked) => h.fail(format!("a burst request panicked: {panicked}")),
        };
        let served = if kill {
            rpc_error(-32600, "no active process for process handle \"ghost\"")
        } else {
            rpc_error(-32601, "method not found: foo/bar")
        };
        let kind = match &outcome {
            Err(error) if error.server_error().map(|e| json!(e)) == Some(served) => "answered",
            Err(error)
                if error.is_overloaded()
                    && error.is_retry_safe()
                    && error.server_error().map(|e| e.message.as_str())
                        == Some("request queue is full") =>
            {
                "overloaded"
            }
            Err(error @ ClientError::NotSent { .. }) if error.is_retry_safe() => "not sent",
            other => h.fail(format!("neither its answer nor a refusal: {other:?}")),
        };
        *outcomes.entry(kind).or_default() += 1;
    }
    outcomes
}

/// -32001 with one-slot queues while the client is held up: every request has exactly one
/// answer, some of them -32001 `request queue is full` (safe to retry; openai/codex #19608
/// drops these). With `retry_overloaded` the same burst ends with the server's own answers.
pub(crate) async fn overload_is_answered_and_retried(backend: Backend) {
    let setup = Setup {
        channel_capacity: Some(1),
        ..Setup::default()
    };
    let options = client_options().retry_overloaded(SETUP_RETRIES);
    let h = Harness::start(backend, setup, options).await;

    let flood = hold_up_with_a_flood(&h, "flood").await;
    let requests = send_burst(&h, 0).await;
    let reader = release(flood);
    let answers = outcomes(&h, requests).await;
    if !answers.contains_key("overloaded") {
        h.fail(format!("no request met the full queue: {answers:?}"));
    }
    kill_flood(&h, "flood", reader).await;

    let flood = hold_up_with_a_flood(&h, "flood-again").await;
    let requests = send_burst(&h, SETUP_RETRIES).await;
    // Held up a while longer, so that the -32001 answers are met, and retried.
    tokio::time::sleep(HELD_WITH_RETRIES).await;
    let reader = release(flood);
    let answers = outcomes(&h, requests).await;
    if answers.get("answered") != Some(&BURST) {
        h.fail(format!("every retried request is answered: {answers:?}"));
    }
    kill_flood(&h, "flood-again", reader).await;
    h.expect_server_error(
        "an unknown method after the bursts",
        h.client.request("foo/bar", json!({})),
        -32601,
        "method not found: foo/bar",
    )
    .await;
    h.close().await;
}
