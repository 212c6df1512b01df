//! `thread/shellCommand`: the user's command line as a `userShell` item in a turn of its own.

use serde_json::json;
use tandem_protocol::client_methods::{
    ThreadRead, ThreadShellCommand, ThreadStart, TurnInterrupt, TurnStart,
};
use tandem_protocol::{
    CommandExecutionSource, CommandExecutionStatus, ServerNotification, ThreadItem, TurnStatus,
    error_codes,
};

use super::*;

/// A thread with `cwd` as its directory and the default (read-only) sandbox.
async fn thread_in(handle: &InProcessClientHandle, cwd: &Path) -> String {
    call::<ThreadStart>(handle, json!({"cwd": p(cwd), "approvalPolicy": "never"}))
        .await
        .thread
        .id
}

/// The completed command item of a turn's notifications, with its output deltas joined.
fn command_of(notes: &[ServerNotification]) -> (ThreadItem, String) {
    let deltas: String = notes
        .iter()
        .filter_map(|note| match note {
            ServerNotification::CommandExecutionOutputDelta(delta) => Some(delta.delta.as_str()),
            _ => None,
        })
        .collect();
    let completed = notes
        .iter()
        .find_map(|note| match note {
            ServerNotification::ItemCompleted(done) => Some(done.item.clone()),
            _ => None,
        })
        .expect("item/completed");
    (completed, deltas)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_runs_unsandboxed_in_a_turn_of_its_own_and_is_stored() {
    let home = tempfile::tempdir().expect("home");
    let cwd = tempfile::tempdir().expect("cwd");
    let mut handle = start(home.path(), &[]).await;
    let thread_id = thread_in(&handle, cwd.path()).await;
    // The thread's sandbox is read-only: the user's command writes anyway.
    call::<ThreadShellCommand>(
        &handle,
        json!({"threadId": thread_id,
               "command": "echo out | tr a-z A-Z > made.txt; cat made.txt; echo err >&2; exit 3"}),
    )
    .await;
    let notes = until_turn_completed(&mut handle).await;
    let methods: Vec<&str> = notes
        .iter()
        .map(ServerNotification::method)
        .filter(|method| !method.starts_with("thread/"))
        .collect();
    assert_eq!(methods.first(), Some(&"turn/started"), "{methods:?}");
    assert_eq!(methods.get(1), Some(&"item/started"), "{methods:?}");
    assert_eq!(
        methods[methods.len() - 2..],
        ["item/completed", "turn/completed"]
    );
    let started = notes
        .iter()
        .find_map(|note| match note {
            ServerNotification::ItemStarted(started) => Some(started.item.clone()),
            _ => None,
        })
        .expect("item/started");
    let ThreadItem::CommandExecution { status, source, .. } = &started else {
        panic!("{started:?}");
    };
    assert_eq!(
        (*status, *source),
        (
            CommandExecutionStatus::InProgress,
            CommandExecutionSource::UserShell
        )
    );
    let (item, deltas) = command_of(&notes);
    let ThreadItem::CommandExecution {
        id,
        command,
        cwd: item_cwd,
        status,
        exit_code,
        aggregated_output,
        source,
        command_actions,
        ..
    } = &item
    else {
        panic!("{item:?}");
    };
    assert_eq!(*source, CommandExecutionSource::UserShell);
    assert_eq!(
        *status,
        CommandExecutionStatus::Failed,
        "a non-zero exit fails the item"
    );
    assert_eq!(*exit_code, Some(3));
    assert_eq!(item_cwd, &p(cwd.path()));
    assert!(command.contains(" -c 'echo out"), "{command}");
    assert_eq!(
        serde_json::to_value(command_actions).expect("json")[0]["command"],
        "echo out | tr a-z A-Z > made.txt; cat made.txt; echo err >&2; exit 3"
    );
    let output = aggregated_output.as_deref().unwrap_or_default();
    assert!(
        output.contains("OUT\n") && output.contains("err\n"),
        "{output:?}"
    );
    assert!(
        deltas.contains("OUT\n") && deltas.contains("err\n"),
        "{deltas:?}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("made.txt")).expect("written"),
        "OUT\n"
    );
    let ServerNotification::TurnCompleted(done) = notes.last().expect("turn/completed") else {
        unreachable!()
    };
    assert_eq!(done.turn.status, TurnStatus::Completed);
    assert_eq!(done.turn.items, vec![item.clone()]);
    shutdown(handle).await;

    // Stored like any item: a restarted server reads it back.
    let handle = start(home.path(), &[]).await;
    let read = call::<ThreadRead>(
        &handle,
        json!({"threadId": thread_id, "includeTurns": true}),
    )
    .await;
    let stored: Vec<&ThreadItem> = read.thread.turns.iter().flat_map(|t| &t.items).collect();
    let ThreadItem::CommandExecution {
        id: stored_id,
        source,
        ..
    } = stored[0]
    else {
        panic!("{stored:?}");
    };
    assert_eq!(
        (stored_id, *source),
        (id, CommandExecutionSource::UserShell)
    );
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_kills_the_command_and_an_interrupt_ends_its_turn() {
    let home = tempfile::tempdir().expect("home");
    let cwd = tempfile::tempdir().expect("cwd");
    let mut handle = start(home.path(), &[]).await;
    let thread_id = thread_in(&handle, cwd.path()).await;
    call::<ThreadShellCommand>(
        &handle,
        json!({"threadId": thread_id, "command": "sleep 30", "timeoutMs": 200}),
    )
    .await;
    let notes = until_turn_completed(&mut handle).await;
    let (item, _) = command_of(&notes);
    let ThreadItem::CommandExecution {
        status, exit_code, ..
    } = item
    else {
        panic!("{item:?}");
    };
    assert_eq!(
        (status, exit_code),
        (CommandExecutionStatus::Failed, Some(124))
    );

    call::<ThreadShellCommand>(
        &handle,
        json!({"threadId": thread_id, "command": "sleep 30"}),
    )
    .await;
    let turn_id = within(PROMPT, "turn/started", async {
        loop {
            if let Some(InProcessServerEvent::ServerNotification(
                ServerNotification::ItemStarted(started),
            )) = handle.next_event().await
            {
                return started.turn_id;
            }
        }
    })
    .await;
    call::<TurnInterrupt>(&handle, json!({"threadId": thread_id, "turnId": turn_id})).await;
    let notes = until_turn_completed(&mut handle).await;
    let ServerNotification::TurnCompleted(done) = notes.last().expect("turn/completed") else {
        unreachable!()
    };
    assert_eq!(done.turn.status, TurnStatus::Interrupted);
    let ThreadItem::CommandExecution { status, .. } = &done.turn.items[0] else {
        panic!("{:?}", done.turn.items);
    };
    assert_eq!(*status, CommandExecutionStatus::Failed);
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_a_busy_turn_and_the_switch_are_refused() {
    let home = tempfile::tempdir().expect("home");
    let cwd = tempfile::tempdir().expect("cwd");
    let mut handle = start(home.path(), &[]).await;
    let thread_id = thread_in(&handle, cwd.path()).await;
    let cases = [
        (
            json!({"threadId": thread_id, "command": ""}),
            error_codes::INVALID_REQUEST,
        ),
        (
            json!({"threadId": thread_id, "command": "ls", "timeoutMs": -1}),
            error_codes::INVALID_PARAMS,
        ),
        (
            json!({"threadId": "019d0000-0000-7000-8000-000000000000", "command": "ls"}),
            error_codes::INVALID_REQUEST,
        ),
    ];
    for (params, code) in cases {
        let (got, message) = fail::<ThreadShellCommand>(&handle, params.clone()).await;
        assert_eq!(got, code, "{params}: {message}");
    }

    // While a shell command's own turn runs, another is refused: that turn takes no input.
    call::<ThreadShellCommand>(
        &handle,
        json!({"threadId": thread_id, "command": "sleep 0.3"}),
    )
    .await;
    let (code, message) = fail::<ThreadShellCommand>(
        &handle,
        json!({"threadId": thread_id, "command": "touch nope"}),
    )
    .await;
    assert_eq!(code, error_codes::INVALID_REQUEST);
    assert!(
        message.ends_with(
            "is still running; wait for its turn/completed or interrupt it before running a \
             shell command"
        ),
        "{message}"
    );
    until_turn_completed(&mut handle).await;
    assert!(!cwd.path().join("nope").exists());
    shutdown(handle).await;

    let home = tempfile::tempdir().expect("home");
    let handle = start(
        home.path(),
        &[("shell_command_api", toml::Value::Boolean(false))],
    )
    .await;
    let thread_id = thread_in(&handle, cwd.path()).await;
    let (code, message) = fail::<ThreadShellCommand>(
        &handle,
        json!({"threadId": thread_id, "command": "touch nope"}),
    )
    .await;
    assert_eq!(code, error_codes::METHOD_NOT_FOUND);
    assert_eq!(
        message,
        "thread/shellCommand is disabled on this server (shell_command_api = false in its \
         config.toml)"
    );
    assert!(!cwd.path().join("nope").exists());
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn during_an_agents_turn_the_command_runs_beside_it_and_the_agent_is_told() {
    let home = tempfile::tempdir().expect("home");
    let cwd = tempfile::tempdir().expect("cwd");
    let mut handle = start(home.path(), &[]).await;
    let thread_id = thread_in(&handle, cwd.path()).await;
    // The scripted agent sleeps, then takes what arrived meanwhile and echoes it line by line.
    let turn = call::<TurnStart>(
        &handle,
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "/sleep 3000"}]}),
    )
    .await
    .turn;
    call::<ThreadShellCommand>(
        &handle,
        json!({"threadId": thread_id, "command": "echo beside > side.txt; echo beside"}),
    )
    .await;
    let notes = until_turn_completed(&mut handle).await;
    let turn_started = notes
        .iter()
        .filter(|note| matches!(note, ServerNotification::TurnStarted(_)))
        .count();
    assert_eq!(turn_started, 1, "no turn of its own: {notes:?}");
    let command = notes
        .iter()
        .find_map(|note| match note {
            ServerNotification::ItemCompleted(done)
                if matches!(done.item, ThreadItem::CommandExecution { .. }) =>
            {
                Some(done.clone())
            }
            _ => None,
        })
        .expect("the command's item/completed");
    assert_eq!(command.turn_id, turn.id, "an item of the running turn");
    let ThreadItem::CommandExecution {
        source, exit_code, ..
    } = &command.item
    else {
        unreachable!()
    };
    assert_eq!(
        (*source, *exit_code),
        (CommandExecutionSource::UserShell, Some(0))
    );
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("side.txt")).expect("ran"),
        "beside\n"
    );
    let ServerNotification::TurnCompleted(done) = notes.last().expect("turn/completed") else {
        unreachable!()
    };
    assert_eq!(done.turn.id, turn.id);
    assert_eq!(done.turn.status, TurnStatus::Completed);
    assert!(
        done.turn.items.contains(&command.item),
        "{:?}",
        done.turn.items
    );
    // The agent was handed the output as the user's words, with no user message made of it.
    let said: Vec<String> = done
        .turn
        .items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::AgentMessage { text, .. } => Some(text.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        said.iter()
            .any(|text| text.starts_with("You said: \"I ran this shell command myself:")),
        "{said:?}"
    );
    assert!(
        said.contains(&"You said: \"beside\"".to_owned()),
        "{said:?}"
    );
    let user_messages = done
        .turn
        .items
        .iter()
        .filter(|item| matches!(item, ThreadItem::UserMessage { .. }))
        .count();
    assert_eq!(user_messages, 1);

    // Stored in order with the turn's other items.
    let read = call::<ThreadRead>(
        &handle,
        json!({"threadId": thread_id, "includeTurns": true}),
    )
    .await;
    assert_eq!(read.thread.turns[0].items, done.turn.items);
    shutdown(handle).await;
}
