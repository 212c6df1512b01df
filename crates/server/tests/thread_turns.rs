//! Acceptance tests of issue 4, the turns: the scripted agent's answer, steering, interrupts,
//! command approvals (once and for the session) and questions, driven through the in-process
//! host as an embedder would, on paused time unless a real command runs.

mod thread_support;

use thread_support::*;

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

/// `thread/items/list` tells when each item started and completed: the times its
/// `item/started` and `item/completed` told, for the user's input (stored with its turn by
/// `turn/start`), an item stored when it started (a command, replaced in place when it
/// completes) and one stored when it completed (the agent's last message, written with the
/// turn's end). On SQLite, as a server keeps them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_items_carry_the_times_their_notifications_told() {
    let home = home();
    let mut handle = start(options(home.path(), 60, false)).await;
    let id = start_thread(
        &handle,
        json!({"cwd": home.path(), "approvalPolicy": "never"}),
    )
    .await;
    let mut started = std::collections::HashMap::new();
    let mut completed = std::collections::HashMap::new();
    for input in ["/sh echo timed", "hello"] {
        start_turn(&handle, &id, input).await;
        loop {
            match notification(within("events", handle.next_event()).await.expect("event")) {
                ServerNotification::ItemStarted(note) => {
                    started.insert(note.item.id().to_owned(), note.started_at_ms);
                }
                ServerNotification::ItemCompleted(note) => {
                    completed.insert(note.item.id().to_owned(), note.completed_at_ms);
                }
                ServerNotification::TurnCompleted(_) => break,
                _ => {}
            }
        }
    }
    let listed =
        call::<tandem_protocol::client_methods::ThreadItemsList>(&handle, json!({"threadId": id}))
            .await;
    let kinds: Vec<&str> = listed
        .data
        .iter()
        .map(|entry| match entry.item {
            ThreadItem::UserMessage { .. } => "user",
            ThreadItem::CommandExecution { .. } => "command",
            ThreadItem::AgentMessage { .. } => "agent",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["user", "command", "user", "agent"]);
    for entry in &listed.data {
        let item_id = entry.item.id();
        assert_eq!(
            entry.started_at_ms,
            started.get(item_id).copied(),
            "{item_id}"
        );
        assert_eq!(
            entry.completed_at_ms,
            completed.get(item_id).copied(),
            "{item_id}"
        );
        let (Some(began), Some(ended)) = (entry.started_at_ms, entry.completed_at_ms) else {
            panic!("{entry:?}");
        };
        assert!(began <= ended, "{entry:?}");
    }
    shutdown(handle).await;
}
