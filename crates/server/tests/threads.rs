//! Acceptance tests of issue 4: threads, turns, the scripted agent and idle unload, driven
//! through the in-process host as an embedder would.
//!
//! Tests that only involve the server's own tasks run on paused time with an in-memory store
//! (SQLite runs on `spawn_blocking`, during which a paused clock auto-advances, which would
//! make the delay windows meaningless). Tests of durability, real commands and shutdown
//! budgets run on real time. Every await that could hang sits under a timeout.

mod thread_support;

use thread_support::*;

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
