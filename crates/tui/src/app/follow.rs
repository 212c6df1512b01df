//! The intake tasks of the app runtime: each follows one source of events and applies it to
//! the state as it arrives: a turn this client started, the turns other clients run on the
//! thread shown (attach19), a `!` process, a process of another client watched with
//! `/attach` (attach19).

use super::*;
use crate::state::{Entry, TurnState};
use tandem_protocol::TurnStatus;

/// Starts a turn (and first the thread, on a new chat) and follows it.
pub(super) async fn start_turn(tui: Tui, thread: Option<String>, text: String) {
    let thread = match thread {
        Some(thread) => thread,
        None => match tui.client.start_thread(tui.thread_params()).await {
            Ok(started) => {
                tui.reached_server();
                let events = thread_events(&tui, &started.thread.id);
                tui.update(|state| state.thread = Some(ThreadInfo::from(&started.thread)));
                follow_thread(tui.clone(), started.thread.id.clone(), events);
                started.thread.id
            }
            Err(error) => {
                tui.update(|state| state.turn = TurnState::Idle);
                return tui.report("starting the thread", &error);
            }
        },
    };
    let mut params = TurnStartParams::text(&thread, text);
    if let Some(model) = &tui.options.model {
        params = params.model(model);
    }
    lock(&tui.shared.own_turns).starting += 1;
    let started = tui.client.start_turn(params).await;
    {
        let mut own = lock(&tui.shared.own_turns);
        own.starting -= 1;
        if let Ok(turn) = &started {
            own.ids.push_back(turn.id().to_owned());
            if own.ids.len() > OWN_TURNS_KEPT {
                own.ids.pop_front();
            }
        }
    }
    match started {
        Ok(turn) => {
            tui.reached_server();
            tui.update(|state| state.turn_running(turn.id()));
            follow_turn(tui, turn).await;
        }
        Err(error) => {
            tui.update(|state| state.turn = TurnState::Idle);
            tui.report("starting the turn", &error);
        }
    }
}

/// attach19: the shown thread's events, for [`follow_thread`].
pub(super) fn thread_events(tui: &Tui, thread_id: &str) -> Subscription {
    tui.client.subscribe(
        SubscriptionOptions::new(SubscriptionFilter::thread(thread_id)).capacity(FOLLOW_QUEUE),
    )
}

/// attach19: follows, on the thread shown, the turns other clients start (this client's own
/// turns have their handles): their text and items stream into the transcript as they
/// arrive. Replaces the follower of the thread shown before.
pub(super) fn follow_thread(tui: Tui, thread_id: String, mut events: Subscription) {
    let task = {
        let tui = tui.clone();
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let note = match event {
                    Ok(ClientEvent::Notification(note)) => note,
                    Ok(ClientEvent::Gap { turns, .. }) => {
                        // Reconnected past the replay window: the running foreign turn, if it
                        // ended meanwhile, ends here from the server's copy.
                        let ended = turns.into_iter().last().filter(|turn| {
                            turn.status != TurnStatus::InProgress && !tui.is_own_turn(&turn.id)
                        });
                        tui.update(|state| {
                            if let Some(turn) = ended
                                && state.turn.turn_id() == Some(turn.id.as_str())
                            {
                                state.turn_completed(&turn);
                            }
                        });
                        continue;
                    }
                    Ok(_) => continue,
                    Err(error) => {
                        tracing::debug!(%error, "the thread's events ended");
                        return;
                    }
                };
                let Some(turn_id) = note.turn_id().map(str::to_owned) else {
                    continue;
                };
                if tui.is_own_turn(&turn_id) {
                    continue;
                }
                let event = match note {
                    ServerNotification::TurnStarted(_) => {
                        tui.update(|state| state.foreign_turn_started(&turn_id));
                        continue;
                    }
                    ServerNotification::TurnCompleted(done) => TurnEvent::Completed(done.turn),
                    ServerNotification::AgentMessageDelta(delta) => TurnEvent::AgentText {
                        item_id: delta.item_id,
                        delta: delta.delta,
                    },
                    ServerNotification::CommandExecutionOutputDelta(delta) => {
                        TurnEvent::CommandOutput {
                            item_id: delta.item_id,
                            delta: delta.delta,
                        }
                    }
                    ServerNotification::ItemStarted(started) => {
                        TurnEvent::ItemStarted(started.item)
                    }
                    ServerNotification::ItemCompleted(done) => TurnEvent::ItemCompleted(done.item),
                    ServerNotification::Error(error) => TurnEvent::Error(error),
                    ServerNotification::ThreadTokenUsageUpdated(usage) => {
                        TurnEvent::Other(ServerNotification::ThreadTokenUsageUpdated(usage))
                    }
                    note @ (ServerNotification::TurnPlanUpdated(_)
                    | ServerNotification::ReasoningSummaryPartAdded(_)
                    | ServerNotification::ReasoningSummaryTextDelta(_)
                    | ServerNotification::ReasoningTextDelta(_)) => TurnEvent::Other(note),
                    _ => continue,
                };
                tui.update(|state| {
                    // A turn followed from its middle (or one started before this client
                    // looked) is running as far as the screen is concerned.
                    if !matches!(event, TurnEvent::Completed(_)) {
                        state.foreign_turn_started(&turn_id);
                    }
                    state.apply_turn_event(event);
                });
            }
        })
    };
    let previous = lock(&tui.shared.thread_follower).replace(task.abort_handle());
    if let Some(previous) = previous {
        previous.abort();
    }
    tracing::debug!(%thread_id, "following the thread's turns started elsewhere");
}

/// Applies a turn's events to the state until it completes.
async fn follow_turn(tui: Tui, mut turn: TurnHandle) {
    loop {
        match turn.next_event().await {
            Some(Ok(TurnEvent::Approval(request))) => {
                let key = request.id().to_string();
                let view = ApprovalView::new(&key, request.params());
                lock(&tui.shared.approvals).insert(key, LiveApproval::Command(request));
                tui.update(|state| state.approval_requested(view));
            }
            Some(Ok(TurnEvent::FileChangeApproval(request))) => {
                let key = request.id().to_string();
                let params = request.params().clone();
                // In the map before the prompt shows, so that a quick key finds it.
                lock(&tui.shared.approvals).insert(key.clone(), LiveApproval::FileChange(request));
                tui.update(|state| {
                    // The item started just before, so the transcript has its files.
                    let paths = match state.position(&params.item_id) {
                        Some(index) => match &state.transcript[index] {
                            Entry::FileChange { changes, .. } => {
                                changes.iter().map(|change| change.path.clone()).collect()
                            }
                            _ => Vec::new(),
                        },
                        None => Vec::new(),
                    };
                    let view = ApprovalView::file_change(&key, &params, paths);
                    state.approval_requested(view);
                });
            }
            Some(Ok(TurnEvent::Question(request))) => {
                let key = request.id().to_string();
                let view = QuestionView {
                    key: key.clone(),
                    questions: request
                        .questions()
                        .iter()
                        .map(|question| question.question.clone())
                        .collect(),
                };
                lock(&tui.shared.questions).insert(key, request);
                tui.update(|state| state.question_asked(view));
            }
            Some(Ok(TurnEvent::ToolCall(request))) => {
                let tool = request.params().tool.clone();
                tokio::spawn(async move {
                    let _ = request
                        .fail(format!("tandem tui provides no tool named `{tool}`"))
                        .await;
                });
            }
            // Dropped unanswered, it gets the least-privilege answer.
            Some(Ok(TurnEvent::OtherRequest(_))) => {}
            Some(Ok(event)) => {
                if let TurnEvent::RequestResolved(id) = &event {
                    let key = id.to_string();
                    lock(&tui.shared.approvals).remove(&key);
                    lock(&tui.shared.questions).remove(&key);
                }
                let completed = matches!(event, TurnEvent::Completed(_));
                tui.update(|state| state.apply_turn_event(event));
                if completed {
                    lock(&tui.shared.approvals).clear();
                    lock(&tui.shared.questions).clear();
                    return;
                }
            }
            Some(Err(error)) => {
                // A lost guaranteed event or a lost connection: the completion (with every
                // item's final state) is still awaited.
                tui.update(|state| state.notice(format!("({error}; waiting for the turn's end)")));
                match turn.wait_completed().await {
                    Ok(done) => tui.update(|state| state.turn_completed(&done)),
                    Err(error) => {
                        tui.report("following the turn", &error);
                        tui.update(|state| state.turn_lost("the turn's end never arrived"));
                    }
                }
                return;
            }
            None => {
                tui.update(|state| state.turn_lost("the turn's events ended"));
                return;
            }
        }
    }
}

/// What marks `handle`'s pane as finished, `how`.
fn pane_finished(handle: &str, how: String) -> impl FnOnce(&mut AppState) + use<> {
    let handle = handle.to_owned();
    move |state: &mut AppState| {
        if let Some(pane) = state.process_pane(&handle) {
            pane.finished = Some(how);
        }
    }
}

/// Spawns a `!` process and feeds its output to its pane until it exits.
pub(super) async fn follow_process(tui: Tui, handle: String, params: ProcessSpawnParams) {
    let process = match tui
        .client
        .spawn_process_with(params, Some(PROCESS_QUEUE_DELTAS), Overflow::Lossless)
        .await
    {
        Ok(process) => process,
        Err(error) => {
            tui.update(pane_finished(&handle, "did not start".into()));
            return tui.report("starting the process", &error);
        }
    };
    tui.reached_server();
    follow_output(tui, handle, process).await;
}

/// attach19: attaches to another client's process: a pane of the owner's PTY size draws the
/// server's screen of it, then the output that follows that screen, until the exit.
pub(super) async fn attach_process(tui: Tui, handle: String, token: String) {
    let params = ProcessAttachParams::new(&handle, token);
    let attached = match tui
        .client
        .attach_process(params, Some(PROCESS_QUEUE_DELTAS), Overflow::Lossless)
        .await
    {
        Ok(attached) => attached,
        Err(error) => return tui.report("attaching to the process", &error),
    };
    tui.reached_server();
    let screen = attached.screen;
    tui.update(|state| {
        let mut pane = TermPane::new(
            format!("watching {handle}"),
            PaneSource::Attached {
                handle: handle.clone(),
            },
            screen.size.rows,
            screen.size.cols,
            state.limits.scrollback_rows,
        );
        // The present screen first, then the output after it: no log is replayed.
        pane.feed(screen.formatted.as_bytes());
        state.add_pane(pane);
    });
    follow_output(tui, handle, attached.process).await;
}

/// Feeds a process's output to its pane until it exits.
async fn follow_output(tui: Tui, handle: String, mut process: ProcessHandle) {
    let finished = |how: String| pane_finished(&handle, how);
    loop {
        match process.next_event().await {
            Some(Ok(ProcessEvent::Output { bytes, .. })) => {
                // In slices, with the state's lock released and the worker yielded between
                // them: the emulator takes milliseconds per 64 KiB delta, and with a full queue
                // this task would otherwise run delta after delta (up to tokio's budget of 128
                // of them, most of a second) while a key or a frame waits for the lock or for
                // a worker.
                for slice in bytes.chunks(FEED_SLICE_BYTES) {
                    tui.update(|state| {
                        if let Some(pane) = state.process_pane(&handle) {
                            pane.feed(slice);
                        }
                    });
                    tokio::task::yield_now().await;
                }
            }
            Some(Ok(ProcessEvent::Exited(exited))) => {
                return tui.update(finished(format!("exit {}", exited.exit_code)));
            }
            Some(Ok(ProcessEvent::Gap)) => {
                // Output older than the server's replay window was lost across a reconnect:
                // the server's own emulator has the present screen, which replaces the
                // pane's (the live output that follows draws on top of it, as it did there).
                let screen = tui
                    .client
                    .request(
                        "process/screen",
                        serde_json::json!({"processHandle": handle}),
                    )
                    .await;
                match screen {
                    Ok(screen) => {
                        let formatted = screen["formatted"].as_str().unwrap_or_default().to_owned();
                        tui.update(|state| {
                            if let Some(pane) = state.process_pane(&handle) {
                                pane.replace_output(formatted.as_bytes());
                            }
                        });
                    }
                    Err(error) => tui.update(|state| {
                        state.notice(format!(
                            "(output of {handle} was lost across a reconnect and its screen could not be read: {error})"
                        ));
                    }),
                }
            }
            Some(Err(error)) => return tui.update(finished(format!("output lost: {error}"))),
            None => return tui.update(finished("ended".into())),
        }
    }
}
