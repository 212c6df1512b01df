//! Acceptance tests of issue 4: threads, turns, the scripted agent and idle unload, driven
//! through the in-process host as an embedder would.
//!
//! Tests that only involve the server's own tasks run on paused time with an in-memory store
//! (SQLite runs on `spawn_blocking`, during which a paused clock auto-advances, which would
//! make the delay windows meaningless). Tests of durability, real commands and shutdown
//! budgets run on real time. Every await that could hang sits under a timeout.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor, RequestResult};
use tandem_protocol::client_methods::{
    ConfigRead, ThreadAttachmentAdd, ThreadAttachmentRemove, ThreadLoadedList, ThreadRead,
    ThreadResume, ThreadStart, ThreadUnsubscribe, TurnInterrupt, TurnStart, TurnSteer,
};
use tandem_protocol::{
    ClientRequest, RequestId, RequestMethod, ServerNotification, ServerRequest, SessionSource,
    ThreadActiveFlag, ThreadItem, ThreadStatus, ThreadUnsubscribeStatus, TurnStatus, error_codes,
};
use tandem_server::store::InMemoryThreadStore;
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::{event_method, expect_no_event, initialize_params, read_until_method};
use tokio::time::timeout;

/// Upper bound for anything that should happen promptly.
const PROMPT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// A fresh home; the returned guard removes it.
fn home() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp home")
}

/// Options for `home` with the unload delay `delay_secs`; `memory` replaces SQLite.
fn options(home: &Path, delay_secs: u64, memory: bool) -> ServerOptions {
    let options = ServerOptions::load(
        ServerConfig::builder()
            .tandem_home(home)
            .thread_unload_delay_secs(delay_secs)
            // In-process without a helper program the sandbox cannot be applied, and commands
            // under the default read-only policy would be refused; these tests are not about
            // the sandbox (crates/cli/tests/sandbox.rs is).
            .config_override("sandbox_mode", "danger-full-access".into()),
    )
    .expect("options load");
    if memory {
        options.with_store(Arc::new(InMemoryThreadStore::new()))
    } else {
        options
    }
}

fn start_args(options: ServerOptions) -> InProcessStartArgs {
    InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    )
}

async fn start(options: ServerOptions) -> InProcessClientHandle {
    within("start", in_process::start(start_args(options)))
        .await
        .expect("host starts")
}

async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match timeout(PROMPT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {PROMPT:?}: {what}"),
    }
}

fn next_id() -> RequestId {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed))
}

fn request<M: RequestMethod<Request = ClientRequest>>(params: Value) -> ClientRequest {
    let params: M::Params = serde_json::from_value(params).expect("params decode");
    M::into_request(next_id(), params)
}

/// Sends an `M` request and waits for its reply.
async fn try_call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> RequestResult {
    let reply = handle.request(request::<M>(params));
    within(M::METHOD, reply).await.expect("host answers")
}

/// Sends an `M` request and decodes its successful reply.
async fn call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> M::Response {
    let value = try_call::<M>(handle, params)
        .await
        .unwrap_or_else(|error| panic!("{} failed: {error:?}", M::METHOD));
    serde_json::from_value(value).expect("reply decodes")
}

async fn until(handle: &mut InProcessClientHandle, method: &str) -> InProcessServerEvent {
    read_until_method(handle, method, PROMPT)
        .await
        .unwrap_or_else(|error| panic!("{error:?}"))
}

async fn quiet(handle: &mut InProcessClientHandle, method: &str, window: Duration) {
    if let Err(error) = expect_no_event(handle, method, window).await {
        panic!("{error:?}");
    }
}

fn notification(event: InProcessServerEvent) -> ServerNotification {
    match event {
        InProcessServerEvent::ServerNotification(note) => note,
        other => panic!("expected a notification, got {other:?}"),
    }
}

fn server_request(event: InProcessServerEvent) -> ServerRequest {
    match event {
        InProcessServerEvent::ServerRequest(request) => request,
        other => panic!("expected a server request, got {other:?}"),
    }
}

async fn start_thread(handle: &InProcessClientHandle, params: Value) -> String {
    call::<ThreadStart>(handle, params).await.thread.id
}

async fn start_turn(handle: &InProcessClientHandle, thread_id: &str, text: &str) -> String {
    call::<TurnStart>(
        handle,
        json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
    )
    .await
    .turn
    .id
}

async fn turn_completed(handle: &mut InProcessClientHandle) -> tandem_protocol::Turn {
    match notification(until(handle, "turn/completed").await) {
        ServerNotification::TurnCompleted(done) => done.turn,
        other => panic!("{other:?}"),
    }
}

async fn unsubscribe(handle: &InProcessClientHandle, thread_id: &str) -> ThreadUnsubscribeStatus {
    call::<ThreadUnsubscribe>(handle, json!({"threadId": thread_id}))
        .await
        .status
}

async fn loaded(handle: &InProcessClientHandle) -> Vec<String> {
    call::<ThreadLoadedList>(handle, json!({})).await.data
}

fn lookup_tool() -> Value {
    json!([{"type": "function", "name": "lookup", "description": "looks up", "inputSchema": {}}])
}

async fn shutdown(mut handle: InProcessClientHandle) {
    within("shutdown", handle.shutdown())
        .await
        .expect("clean shutdown");
}

// ---------------------------------------------------------------------------------------------
// Acceptance 1, 4: idle unload after unsubscribe
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn unsubscribe_keeps_the_thread_loaded_until_the_idle_delay() {
    let home = home();
    let mut handle = start(options(home.path(), 2, true)).await;
    let id = start_thread(&handle, json!({})).await;

    assert_eq!(
        unsubscribe(&handle, &id).await,
        ThreadUnsubscribeStatus::Unsubscribed
    );
    quiet(&mut handle, "thread/closed", Duration::from_millis(250)).await;
    assert_eq!(loaded(&handle).await, vec![id.clone()]);

    // Resuming cancels the countdown: nothing closes past the original 2 s deadline.
    call::<ThreadResume>(&handle, json!({"threadId": id})).await;
    quiet(&mut handle, "thread/closed", Duration::from_millis(2200)).await;

    // A second unsubscribe starts a fresh countdown.
    unsubscribe(&handle, &id).await;
    quiet(&mut handle, "thread/closed", Duration::from_millis(250)).await;
    match notification(until(&mut handle, "thread/status/changed").await) {
        ServerNotification::ThreadStatusChanged(change) => {
            assert_eq!(change.thread_id, id);
            assert_eq!(change.status, ThreadStatus::NotLoaded);
        }
        other => panic!("{other:?}"),
    }
    match notification(until(&mut handle, "thread/closed").await) {
        ServerNotification::ThreadClosed(closed) => assert_eq!(closed.thread_id, id),
        other => panic!("{other:?}"),
    }
    assert!(loaded(&handle).await.is_empty());

    let cold = call::<ThreadResume>(&handle, json!({"threadId": id})).await;
    assert_eq!(cold.thread.status, ThreadStatus::Idle);
    assert_eq!(loaded(&handle).await, vec![id]);
    shutdown(handle).await;
}

#[tokio::test(start_paused = true)]
async fn unsubscribe_twice_answers_unsubscribed_then_not_subscribed() {
    let home = home();
    let handle = start(options(home.path(), 60, true)).await;
    let id = start_thread(&handle, json!({})).await;
    assert_eq!(
        unsubscribe(&handle, &id).await,
        ThreadUnsubscribeStatus::Unsubscribed
    );
    assert_eq!(
        unsubscribe(&handle, &id).await,
        ThreadUnsubscribeStatus::NotSubscribed
    );
    assert_eq!(
        unsubscribe(&handle, "0190aaaa-0000-7000-8000-000000000000").await,
        ThreadUnsubscribeStatus::NotLoaded
    );
    shutdown(handle).await;
}

#[tokio::test(start_paused = true)]
async fn ephemeral_threads_are_discarded_on_unload() {
    let home = home();
    let mut handle = start(options(home.path(), 0, true)).await;
    let id = start_thread(&handle, json!({"ephemeral": true})).await;
    unsubscribe(&handle, &id).await;
    until(&mut handle, "thread/closed").await;
    let error = try_call::<ThreadResume>(&handle, json!({"threadId": id}))
        .await
        .expect_err("ephemeral state is gone");
    assert_eq!(error.code, error_codes::INVALID_REQUEST);
    assert_eq!(error.message, format!("thread not found: {id}"));
    shutdown(handle).await;
}

// ---------------------------------------------------------------------------------------------
// Acceptance 2: an active turn is never unloaded
// ---------------------------------------------------------------------------------------------

async fn unsubscribe_during_a_tool_call(delay_secs: u64) {
    let home = home();
    let mut handle = start(options(home.path(), delay_secs, true)).await;
    let id = start_thread(&handle, json!({"dynamicTools": lookup_tool()})).await;
    start_turn(&handle, &id, "/tool lookup {\"q\": 1}").await;
    let tool_call = match server_request(until(&mut handle, "item/tool/call").await) {
        ServerRequest::ToolCall { request_id, params } => {
            assert_eq!(params.tool, "lookup");
            assert_eq!(params.arguments, json!({"q": 1}));
            request_id
        }
        other => panic!("{other:?}"),
    };
    unsubscribe(&handle, &id).await;
    quiet(&mut handle, "thread/closed", Duration::from_millis(1200)).await;
    assert_eq!(loaded(&handle).await, vec![id.clone()]);

    handle
        .respond_to_server_request(
            tool_call,
            json!({"contentItems": [{"type": "inputText", "text": "42"}], "success": true}),
        )
        .expect("answer");
    if delay_secs > 0 {
        quiet(&mut handle, "thread/closed", Duration::from_millis(250)).await;
    }
    match notification(until(&mut handle, "thread/closed").await) {
        ServerNotification::ThreadClosed(closed) => assert_eq!(closed.thread_id, id),
        other => panic!("{other:?}"),
    }
    // The turn completed before the unload and was stored.
    let read = call::<ThreadRead>(&handle, json!({"threadId": id, "includeTurns": true})).await;
    assert_eq!(read.thread.status, ThreadStatus::NotLoaded);
    assert_eq!(read.thread.turns.len(), 1);
    assert_eq!(read.thread.turns[0].status, TurnStatus::Completed);
    shutdown(handle).await;
}

#[tokio::test(start_paused = true)]
async fn turn_waiting_on_a_tool_call_is_not_unloaded_at_delay_zero() {
    unsubscribe_during_a_tool_call(0).await;
}

#[tokio::test(start_paused = true)]
async fn turn_waiting_on_a_tool_call_is_not_unloaded_at_delay_one() {
    unsubscribe_during_a_tool_call(1).await;
}

// ---------------------------------------------------------------------------------------------
// Acceptance 3: systemError survives unload and resume
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn failed_turn_leaves_system_error_across_unload_and_resume() {
    let home = home();
    let mut handle = start(options(home.path(), 0, true)).await;
    let id = start_thread(&handle, json!({})).await;
    start_turn(&handle, &id, "/fail boom").await;
    match notification(until(&mut handle, "error").await) {
        ServerNotification::Error(error) => {
            assert_eq!(error.error.message, "boom");
            assert!(!error.will_retry);
        }
        other => panic!("{other:?}"),
    }
    match notification(until(&mut handle, "thread/status/changed").await) {
        ServerNotification::ThreadStatusChanged(change) => {
            assert_eq!(change.status, ThreadStatus::SystemError)
        }
        other => panic!("{other:?}"),
    }
    let turn = turn_completed(&mut handle).await;
    assert_eq!(turn.status, TurnStatus::Failed);
    assert_eq!(turn.error.expect("turn error").message, "boom");
    let read = call::<ThreadRead>(&handle, json!({"threadId": id})).await;
    assert_eq!(read.thread.status, ThreadStatus::SystemError);

    unsubscribe(&handle, &id).await;
    until(&mut handle, "thread/closed").await;
    let resumed = call::<ThreadResume>(&handle, json!({"threadId": id})).await;
    assert_eq!(resumed.thread.status, ThreadStatus::SystemError);

    // The next turn clears it.
    start_turn(&handle, &id, "hello").await;
    turn_completed(&mut handle).await;
    let read = call::<ThreadRead>(&handle, json!({"threadId": id})).await;
    assert_eq!(read.thread.status, ThreadStatus::Idle);
    shutdown(handle).await;
}

// ---------------------------------------------------------------------------------------------
// Acceptance 5: source stamping
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn thread_start_stamps_the_session_source() {
    for source in [SessionSource::Cli, SessionSource::Exec] {
        let home = home();
        let mut args = start_args(options(home.path(), 60, true));
        args.session_source = source.clone();
        let handle = within("start", in_process::start(args)).await.unwrap();
        let response = call::<ThreadStart>(&handle, json!({})).await;
        assert_eq!(response.thread.source, source);
        shutdown(handle).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Acceptance 6, 7: attachments
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn attachment_replies_arrive_before_their_updates() {
    let home = home();
    let mut handle = start(options(home.path(), 60, true)).await;
    let id = start_thread(&handle, json!({})).await;
    for (index, remove) in [(0, false), (1, false), (0, true)] {
        let params = json!({
            "threadId": id, "attachmentType": "file", "identityKey": format!("k{index}"),
            "payload": {"n": index},
        });
        let reply = if remove {
            handle.request(request::<ThreadAttachmentRemove>(params))
        } else {
            handle.request(request::<ThreadAttachmentAdd>(params))
        };
        let mut reply = Box::pin(reply);
        until(&mut handle, "thread/attachment/updated").await;
        // A zero timeout polls the reply once: it must already be resolved.
        let resolved = timeout(Duration::ZERO, &mut reply).await;
        assert!(resolved.is_ok(), "reply not resolved before its update");
    }
    // An existing attachment is returned unchanged and sends no update.
    let again = call::<ThreadAttachmentAdd>(
        &handle,
        json!({"threadId": id, "attachmentType": "file", "identityKey": "k1", "payload": 9}),
    )
    .await;
    assert_eq!(again.attachment.payload, json!({"n": 1}));
    quiet(
        &mut handle,
        "thread/attachment/updated",
        Duration::from_millis(100),
    )
    .await;
    let error = try_call::<ThreadAttachmentAdd>(
        &handle,
        json!({"threadId": id, "attachmentType": "", "identityKey": "k", "payload": null}),
    )
    .await
    .expect_err("empty type");
    assert_eq!(error.code, error_codes::INVALID_PARAMS);
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_completes_with_full_queues_of_attachment_updates() {
    const CAPACITY: usize = 4;
    let ack = Duration::from_secs(3);
    let stage = Duration::from_secs(2);
    let home = home();
    let mut args = start_args(options(home.path(), 60, true));
    args.channel_capacity = CAPACITY;
    args.shutdown_ack_timeout = ack;
    args.shutdown_stage_timeout = stage;
    let mut handle = within("start", in_process::start(args)).await.unwrap();
    let id = start_thread(&handle, json!({})).await;
    let mut replies = Vec::new();
    let mut sent = 0;
    while sent < CAPACITY + 3 {
        let params = json!({
            "threadId": id, "attachmentType": "file", "identityKey": format!("k{sent}"),
            "payload": null,
        });
        replies.push(tokio::spawn(
            handle
                .sender()
                .request(request::<ThreadAttachmentAdd>(params)),
        ));
        sent += 1;
        tokio::task::yield_now().await;
    }
    // Then as many again, without yielding: whatever does not fit is refused at once.
    for index in 0..CAPACITY {
        let params = json!({
            "threadId": id, "attachmentType": "more", "identityKey": format!("m{index}"),
            "payload": null,
        });
        replies.push(tokio::spawn(
            handle.request(request::<ThreadAttachmentAdd>(params)),
        ));
    }
    let result = timeout(ack + stage, handle.shutdown()).await;
    assert!(
        matches!(result, Ok(Ok(()))),
        "shutdown within the budget: {result:?}"
    );
    for reply in replies {
        // Every caller got an answer (a reply, -32001/-32603, or a refused send).
        let _answer = within("reply after shutdown", reply).await.expect("join");
    }
}

// ---------------------------------------------------------------------------------------------
// Turns: streaming, steer, interrupt, approvals
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn hello_turn_streams_a_quoting_agent_message() {
    let home = home();
    let mut handle = start(options(home.path(), 60, true)).await;
    let id = start_thread(&handle, json!({})).await;
    let turn_id = start_turn(&handle, &id, "hello there").await;
    let mut methods = Vec::new();
    let mut deltas = String::new();
    loop {
        let event = within("events", handle.next_event()).await.expect("event");
        methods.push(event_method(&event).to_owned());
        match notification(event) {
            ServerNotification::AgentMessageDelta(delta) => {
                assert_eq!(delta.turn_id, turn_id);
                deltas.push_str(&delta.delta);
            }
            ServerNotification::TurnCompleted(done) => {
                assert_eq!(done.turn.status, TurnStatus::Completed);
                assert!(matches!(
                    &done.turn.items[..],
                    [ThreadItem::UserMessage { .. }, ThreadItem::AgentMessage { text, .. }]
                        if text == "You said: \"hello there\""
                ));
                break;
            }
            _ => {}
        }
    }
    assert_eq!(deltas, "You said: \"hello there\"");
    let delta_count = methods
        .iter()
        .filter(|method| *method == "item/agentMessage/delta")
        .count();
    assert!(delta_count >= 2, "{methods:?}");
    let position = |name: &str| methods.iter().position(|method| method == name).unwrap();
    assert!(position("thread/status/changed") < position("turn/started"));
    let last_status = methods
        .iter()
        .rposition(|method| method == "thread/status/changed")
        .unwrap();
    assert!(last_status < position("turn/completed"));
    shutdown(handle).await;
}

#[tokio::test(start_paused = true)]
async fn steered_input_reaches_the_running_turn() {
    let home = home();
    let mut handle = start(options(home.path(), 60, true)).await;
    let id = start_thread(&handle, json!({})).await;
    let turn_id = start_turn(&handle, &id, "/sleep 500").await;
    let wrong = try_call::<TurnSteer>(
        &handle,
        json!({"threadId": id, "expectedTurnId": "nope", "input": [{"type": "text", "text": "x"}]}),
    )
    .await
    .expect_err("wrong id");
    assert_eq!(
        wrong.message,
        format!("expected active turn id `nope` but found `{turn_id}`")
    );
    let steered = call::<TurnSteer>(
        &handle,
        json!({"threadId": id, "expectedTurnId": turn_id,
               "input": [{"type": "text", "text": "steered words"}], "clientUserMessageId": "c1"}),
    )
    .await;
    assert_eq!(steered.turn_id, turn_id);
    let turn = turn_completed(&mut handle).await;
    assert_eq!(turn.status, TurnStatus::Completed);
    assert!(turn.items.iter().any(|item| matches!(
        item,
        ThreadItem::UserMessage { client_id: Some(client), .. } if client == "c1"
    )));
    assert!(turn.items.iter().any(|item| matches!(
        item,
        ThreadItem::AgentMessage { text, .. } if text == "You said: \"steered words\""
    )));
    let none = try_call::<TurnSteer>(
        &handle,
        json!({"threadId": id, "expectedTurnId": turn_id, "input": [{"type": "text", "text": "x"}]}),
    )
    .await
    .expect_err("no active turn");
    assert_eq!(none.message, "no active turn to steer");
    shutdown(handle).await;
}

#[tokio::test(start_paused = true)]
async fn interrupting_a_turn_waiting_on_an_approval_resolves_it_first() {
    let home = home();
    let mut handle = start(options(home.path(), 60, true)).await;
    let id = start_thread(&handle, json!({})).await;
    let turn_id = start_turn(&handle, &id, "/sh echo never-runs").await;

    // The flag is set before the request arrives.
    let mut flagged = false;
    let approval = loop {
        match within("approval", handle.next_event())
            .await
            .expect("event")
        {
            InProcessServerEvent::ServerNotification(ServerNotification::ThreadStatusChanged(
                change,
            )) => {
                flagged = change.status
                    == ThreadStatus::Active {
                        active_flags: vec![ThreadActiveFlag::WaitingOnApproval],
                    };
            }
            InProcessServerEvent::ServerRequest(request) => match request {
                ServerRequest::CommandExecutionRequestApproval { request_id, params } => {
                    assert_eq!(params.command, "echo never-runs");
                    break request_id;
                }
                other => panic!("{other:?}"),
            },
            _ => {}
        }
    };
    assert!(flagged, "waitingOnApproval set before the request");

    let mut reply = Box::pin(handle.request(request::<TurnInterrupt>(
        json!({"threadId": id, "turnId": turn_id}),
    )));
    match notification(until(&mut handle, "serverRequest/resolved").await) {
        ServerNotification::ServerRequestResolved(resolved) => {
            assert_eq!(resolved.request_id, approval);
            assert_eq!(resolved.turn_id, turn_id);
        }
        other => panic!("{other:?}"),
    }
    match notification(until(&mut handle, "thread/status/changed").await) {
        ServerNotification::ThreadStatusChanged(change) => assert_eq!(
            change.status,
            ThreadStatus::Active {
                active_flags: vec![]
            }
        ),
        other => panic!("{other:?}"),
    }
    let turn = turn_completed(&mut handle).await;
    assert_eq!(turn.status, TurnStatus::Interrupted);
    assert!(turn.items.iter().any(|item| matches!(
        item,
        ThreadItem::CommandExecution { status, .. }
            if *status == tandem_protocol::CommandExecutionStatus::Declined
    )));
    let resolved = timeout(Duration::ZERO, &mut reply).await;
    assert!(
        matches!(resolved, Ok(Ok(Ok(_)))),
        "interrupt reply before turn/completed: {resolved:?}"
    );
    let error = try_call::<TurnInterrupt>(&handle, json!({"threadId": id, "turnId": turn_id}))
        .await
        .expect_err("nothing to interrupt");
    assert_eq!(error.message, "no active turn to interrupt");
    shutdown(handle).await;
}

#[tokio::test(start_paused = true)]
async fn interrupt_stops_a_sleeping_turn() {
    let home = home();
    let mut handle = start(options(home.path(), 60, true)).await;
    let id = start_thread(&handle, json!({})).await;
    let turn_id = start_turn(&handle, &id, "/sleep 600000").await;
    until(&mut handle, "turn/started").await;
    let reply = handle.request(request::<TurnInterrupt>(
        json!({"threadId": id, "turnId": turn_id}),
    ));
    let turn = turn_completed(&mut handle).await;
    assert_eq!(turn.status, TurnStatus::Interrupted);
    within("interrupt reply", reply)
        .await
        .unwrap()
        .expect("interrupt ok");
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_command_runs_and_streams_its_output() {
    let home = home();
    let mut handle = start(options(home.path(), 60, true)).await;
    let id = start_thread(&handle, json!({"cwd": home.path()})).await;
    start_turn(&handle, &id, "/sh echo approved-output").await;
    let approval =
        match server_request(until(&mut handle, "item/commandExecution/requestApproval").await) {
            ServerRequest::CommandExecutionRequestApproval { request_id, .. } => request_id,
            other => panic!("{other:?}"),
        };
    handle
        .respond_to_server_request(approval, json!({"decision": "accept"}))
        .unwrap();
    match notification(until(&mut handle, "item/commandExecution/outputDelta").await) {
        ServerNotification::CommandExecutionOutputDelta(delta) => {
            assert_eq!(delta.delta, "approved-output\n")
        }
        other => panic!("{other:?}"),
    }
    let turn = turn_completed(&mut handle).await;
    assert!(turn.items.iter().any(|item| matches!(
        item,
        ThreadItem::CommandExecution { exit_code: Some(0), aggregated_output: Some(output), .. }
            if output == "approved-output\n"
    )));
    shutdown(handle).await;
}

/// Answers the turn's command approval with `decision`, then reads to its end.
async fn answer_command_approval(handle: &mut InProcessClientHandle, decision: &str) {
    let approval =
        match server_request(until(handle, "item/commandExecution/requestApproval").await) {
            ServerRequest::CommandExecutionRequestApproval { request_id, .. } => request_id,
            other => panic!("{other:?}"),
        };
    handle
        .respond_to_server_request(approval, json!({"decision": decision}))
        .unwrap();
    turn_completed(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_accepted_for_the_session_is_not_asked_again() {
    let home = home();
    let mut handle = start(options(home.path(), 60, true)).await;
    let id = start_thread(&handle, json!({"cwd": home.path()})).await;
    start_turn(&handle, &id, "/sh echo session").await;
    answer_command_approval(&mut handle, "acceptForSession").await;

    // The same command in a later turn runs without a request.
    start_turn(&handle, &id, "/sh echo session").await;
    let turn = loop {
        let event = timeout(PROMPT, handle.next_event())
            .await
            .expect("the turn ends")
            .expect("the host stays open");
        if let InProcessServerEvent::ServerRequest(request) = &event {
            panic!("asked again: {request:?}");
        }
        if let InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(done)) =
            event
        {
            break done.turn;
        }
    };
    assert!(turn.items.iter().any(|item| matches!(
        item,
        ThreadItem::CommandExecution { exit_code: Some(0), aggregated_output: Some(output), .. }
            if output == "session\n"
    )));

    // Another command is asked for; `accept` covers only its own run.
    start_turn(&handle, &id, "/sh echo other").await;
    answer_command_approval(&mut handle, "accept").await;
    start_turn(&handle, &id, "/sh echo other").await;
    answer_command_approval(&mut handle, "decline").await;
    shutdown(handle).await;
}

#[tokio::test(start_paused = true)]
async fn ask_sets_the_user_input_flag_and_echoes_the_answer() {
    let home = home();
    let mut handle = start(options(home.path(), 60, true)).await;
    let id = start_thread(&handle, json!({})).await;
    start_turn(&handle, &id, "/ask favourite colour?").await;
    match notification(until(&mut handle, "thread/status/changed").await) {
        ServerNotification::ThreadStatusChanged(change) => {
            assert_eq!(
                change.status,
                ThreadStatus::Active {
                    active_flags: vec![]
                }
            )
        }
        other => panic!("{other:?}"),
    }
    match notification(until(&mut handle, "thread/status/changed").await) {
        ServerNotification::ThreadStatusChanged(change) => assert_eq!(
            change.status,
            ThreadStatus::Active {
                active_flags: vec![ThreadActiveFlag::WaitingOnUserInput]
            }
        ),
        other => panic!("{other:?}"),
    }
    let ask = match server_request(until(&mut handle, "item/tool/requestUserInput").await) {
        ServerRequest::ToolRequestUserInput { request_id, params } => {
            assert_eq!(params.questions[0].question, "favourite colour?");
            request_id
        }
        other => panic!("{other:?}"),
    };
    handle
        .respond_to_server_request(ask, json!({"answers": {"q": {"answers": ["blue"]}}}))
        .unwrap();
    let turn = turn_completed(&mut handle).await;
    assert!(turn.items.iter().any(|item| matches!(
        item,
        ThreadItem::AgentMessage { text, .. } if text == "you answered: blue"
    )));
    shutdown(handle).await;
}

#[tokio::test(start_paused = true)]
async fn config_read_reports_the_effective_delay() {
    let home = home();
    let handle = start(options(home.path(), 0, true)).await;
    let config = call::<ConfigRead>(&handle, json!({})).await;
    assert_eq!(config.config["thread_unload_delay_secs"], json!(0));
    assert_eq!(config.origins, json!({}));
    shutdown(handle).await;
}

// ---------------------------------------------------------------------------------------------
// Acceptance 8: durability
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completed_turns_are_read_back_by_a_new_host() {
    let home = home();
    let mut handle = start(options(home.path(), 60, false)).await;
    let id = start_thread(&handle, json!({})).await;
    for text in ["first", "second"] {
        start_turn(&handle, &id, text).await;
        assert_eq!(
            turn_completed(&mut handle).await.status,
            TurnStatus::Completed
        );
    }
    shutdown(handle).await;

    let handle = start(options(home.path(), 60, false)).await;
    let read = call::<ThreadRead>(&handle, json!({"threadId": id, "includeTurns": true})).await;
    assert_eq!(read.thread.turns.len(), 2);
    assert_eq!(read.thread.preview, "first");
    assert!(
        read.thread
            .turns
            .iter()
            .all(|turn| turn.status == TurnStatus::Completed && turn.items.len() == 2)
    );
    shutdown(handle).await;
}

/// The environment variable that turns [`sigkill_child`] into the child of
/// [`store_survives_sigkill_in_the_middle_of_a_turn`], naming the home to use.
const CHILD_HOME_ENV: &str = "TANDEM_TEST_SIGKILL_HOME";

/// Child half of the SIGKILL test: two completed turns, a third in progress, then "READY".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run as a child process by store_survives_sigkill_in_the_middle_of_a_turn"]
async fn sigkill_child() {
    let home = std::env::var(CHILD_HOME_ENV).expect("run by the SIGKILL test");
    let mut handle = start(options(Path::new(&home), 60, false)).await;
    let id = start_thread(&handle, json!({})).await;
    for text in ["one", "two"] {
        start_turn(&handle, &id, text).await;
        turn_completed(&mut handle).await;
    }
    start_turn(&handle, &id, "three\n/sleep 600000").await;
    until(&mut handle, "item/completed").await;
    println!("READY {id}");
    tokio::time::sleep(Duration::from_secs(60)).await;
    panic!("the parent should have killed this process");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_survives_sigkill_in_the_middle_of_a_turn() {
    use tokio::io::AsyncBufReadExt;

    let home = home();
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sigkill_child", "--ignored", "--nocapture"])
        .env(CHILD_HOME_ENV, home.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn child");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let id = within("child ready", async {
        while let Some(line) = lines.next_line().await.expect("read child") {
            if let Some(id) = line.strip_prefix("READY ") {
                return id.to_owned();
            }
        }
        panic!("child exited before READY");
    })
    .await;
    child.kill().await.expect("SIGKILL");

    // The turn in progress was stored with its input when turn/start answered; reopening the
    // store closes it as interrupted, with the reason.
    let mut handle = start(options(home.path(), 60, false)).await;
    let read = call::<ThreadRead>(&handle, json!({"threadId": id, "includeTurns": true})).await;
    let statuses: Vec<_> = read.thread.turns.iter().map(|turn| turn.status).collect();
    assert_eq!(
        statuses,
        vec![
            TurnStatus::Completed,
            TurnStatus::Completed,
            TurnStatus::Interrupted
        ]
    );
    let cut = &read.thread.turns[2];
    assert_eq!(
        cut.error.as_ref().map(|error| error.message.as_str()),
        Some(tandem_server::store::INTERRUPTED_BY_STOP)
    );
    assert!(
        matches!(&cut.items[0], ThreadItem::UserMessage { content, .. }
            if content == &vec![tandem_protocol::UserInput::text("three\n/sleep 600000")]),
        "{cut:?}"
    );
    // The thread resumes and takes a new turn.
    let resumed = call::<ThreadResume>(&handle, json!({"threadId": id})).await;
    assert_eq!(resumed.thread.status, ThreadStatus::Idle);
    start_turn(&handle, &id, "four").await;
    assert_eq!(
        turn_completed(&mut handle).await.status,
        TurnStatus::Completed
    );
    shutdown(handle).await;
}

/// Answers each input it is given, then parks before returning until the test releases it:
/// the window in which input steered into the turn used to be accepted and then lost.
struct ParkingAgent {
    parked: tokio::sync::mpsc::UnboundedSender<()>,
    release: Arc<tokio::sync::Semaphore>,
}

#[async_trait::async_trait]
impl tandem_server::Agent for ParkingAgent {
    async fn run_turn(
        &self,
        _history: &[tandem_protocol::Turn],
        input: Vec<tandem_protocol::UserInput>,
        driver: &mut tandem_server::TurnDriver,
    ) -> Result<(), tandem_server::AgentError> {
        for text in input.iter().filter_map(|input| match input {
            tandem_protocol::UserInput::Text { text, .. } => Some(text.clone()),
            _ => None,
        }) {
            driver.agent_message(format!("got {text}")).await?;
        }
        let _ = self.parked.send(());
        self.release.acquire().await.expect("open").forget();
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn input_steered_while_the_agent_returns_still_reaches_the_turn() {
    let home = home();
    let (parked_tx, mut parked) = tokio::sync::mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let agent = ParkingAgent {
        parked: parked_tx,
        release: Arc::clone(&release),
    };
    let mut handle = start(options(home.path(), 60, true).with_agent(Arc::new(agent))).await;
    let id = start_thread(&handle, json!({})).await;
    let turn_id = start_turn(&handle, &id, "first").await;
    within("agent parks", parked.recv()).await.expect("parked");

    // The agent has looked at its input for the last time; this arrives before it returns.
    call::<TurnSteer>(
        &handle,
        json!({"threadId": id, "expectedTurnId": turn_id,
               "input": [{"type": "text", "text": "late"}]}),
    )
    .await;
    release.add_permits(1);
    within("agent runs again for the late input", parked.recv())
        .await
        .expect("parked again");
    release.add_permits(1);

    let turn = turn_completed(&mut handle).await;
    assert_eq!(turn.id, turn_id);
    let said: Vec<_> = turn
        .items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::AgentMessage { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(said, vec!["got first", "got late"]);
    shutdown(handle).await;
}

#[tokio::test(start_paused = true)]
async fn turn_start_tells_an_unknown_thread_from_one_that_is_not_loaded() {
    let home = home();
    let mut handle = start(options(home.path(), 0, true)).await;
    let text = json!([{"type": "text", "text": "hi"}]);

    // A thread that never existed: resuming it would not help (issue 18).
    let unknown = try_call::<TurnStart>(
        &handle,
        json!({"threadId": "no-such-thread", "input": text}),
    )
    .await
    .expect_err("no such thread");
    assert_eq!(unknown.code, error_codes::INVALID_REQUEST);
    assert_eq!(unknown.message, "thread not found: no-such-thread");

    // A stored thread that was unloaded: resuming it is the way.
    let id = start_thread(&handle, json!({})).await;
    unsubscribe(&handle, &id).await;
    until(&mut handle, "thread/closed").await;
    let unloaded = try_call::<TurnStart>(&handle, json!({"threadId": id, "input": text}))
        .await
        .expect_err("not loaded");
    assert_eq!(unloaded.code, error_codes::INVALID_REQUEST);
    assert_eq!(
        unloaded.message,
        format!("thread not loaded: {id}; resume it first")
    );
    shutdown(handle).await;
}
