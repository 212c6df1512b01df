//! The task that runs one turn: status and `turn/started`, the agent (again for input that
//! arrived as it returned), then the turn's end written to the store, the interrupt replies
//! and `turn/completed`, in the thread's order. `turn/start` stored the turn and its input
//! before it answered; the driver stores each item before reporting it; a store failure ends
//! the turn `failed` with an `error` notification naming the database.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use tandem_protocol::{
    EmptyResponse, ErrorNotification, ItemCompletedNotification, ServerNotification, ThreadStatus,
    Turn, TurnCompletedNotification, TurnError, TurnItemsView, TurnStartedNotification, TurnStatus,
};

use crate::agent::AgentError;
use crate::store;
use crate::threads::{
    ActiveTurn, LoadedThread, SideCommand, StartedTurn, ThreadService, TurnWork, now_millis,
    now_secs,
};

use crate::agent::TurnDriver;

use super::{TurnRun, compaction, elapsed_ms};

/// Starts the task that runs `started` on `thread`.
pub(crate) fn spawn(
    service: Arc<ThreadService>,
    thread: Arc<LoadedThread>,
    active: Arc<ActiveTurn>,
    started: StartedTurn,
) {
    tokio::spawn(run(service, thread, active, started));
}

/// The runtime of a turn of `thread`, with the thread's settings as they are now.
fn turn_run(
    service: &ThreadService,
    thread: &Arc<LoadedThread>,
    active: &Arc<ActiveTurn>,
    turn_id: &str,
    store: Arc<dyn store::ThreadStore>,
) -> TurnRun {
    let state = thread.state();
    TurnRun {
        thread: Arc::clone(thread),
        active: Arc::clone(active),
        outgoing: service.outgoing.clone(),
        turn_id: turn_id.to_owned(),
        cwd: state.record.cwd.clone(),
        model: service.effective_model(&state.record),
        approval_policy: state.record.approval_policy,
        sandbox_policy: crate::config::sandbox::thread_policy(
            &state.record.config,
            &service.config().sandbox,
        ),
        sandboxing: service.sandboxing.clone(),
        tools: state.record.dynamic_tools.clone(),
        processes: active.processes.clone(),
        store,
        started: Default::default(),
        store_failure: Default::default(),
        stored_items: Default::default(),
        hold_completed: false,
        held: Default::default(),
        reasoning: crate::config::reasoning::thread_reasoning(
            &state.record.config,
            &service.config().reasoning,
        ),
        turn_diff: Default::default(),
        checkpoint: Default::default(),
        mcp: service.mcp.clone(),
        mcp_tools: Vec::new(),
    }
}

/// search29: the task of a user's shell command beside the agent of the running turn
/// `active`, as an item of that turn (`thread/shellCommand` during a turn, as the reference
/// does): once told to go, it runs the command and hands its output to the agent's next
/// request; it returns the ids of the items it stored. The turn's end waits for it.
pub(crate) fn spawn_side_command(
    service: &ThreadService,
    thread: &Arc<LoadedThread>,
    active: &Arc<ActiveTurn>,
    side: SideCommand,
) -> tokio::task::JoinHandle<HashSet<String>> {
    let SideCommand {
        store,
        command,
        timeout,
        go,
    } = side;
    let mut run = turn_run(service, thread, active, &active.id, store);
    let active = Arc::clone(active);
    tokio::spawn(async move {
        if go.await != Ok(true) {
            return HashSet::new();
        }
        // An interruption kills the command (its item is completed all the same) and ends the
        // agent: nobody is left to tell.
        if let Ok(said) = run.run_user_shell(&command, timeout).await {
            active
                .injected
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(tandem_protocol::UserInput::text(said));
            active.steer_signal.notify_one();
        }
        run.take_stored_items()
    })
}

async fn run(
    service: Arc<ThreadService>,
    thread: Arc<LoadedThread>,
    active: Arc<ActiveTurn>,
    started_turn: StartedTurn,
) {
    let StartedTurn { turn, work, store } = started_turn;
    let outgoing = service.outgoing.clone();
    let history = thread.state().agent_history();
    let started = Instant::now();
    thread
        .set_status(
            &outgoing,
            ThreadStatus::Active {
                active_flags: Vec::new(),
            },
        )
        .await;
    thread
        .notify(
            &outgoing,
            ServerNotification::TurnStarted(TurnStartedNotification {
                thread_id: thread.id.clone(),
                turn: turn.clone(),
            }),
            None,
        )
        .await;
    let mut run = turn_run(&service, &thread, &active, &turn.id, store.clone());
    let agent = Arc::clone(&service.agent);
    let result = match work {
        TurnWork::Input {
            user_message,
            input,
            input_at_ms,
        } => {
            run.stored_user_message(*user_message, input_at_ms).await;
            // Only the agent's own items wait for the turn's end, not a compaction's or a
            // user's shell command's.
            run.hold_completed = agent.waits_only_through_driver();
            // mcp30: the required MCP servers first; the others never delay the turn.
            let ready = run.prepare_mcp().await;
            let mut driver = TurnDriver::new(run);
            let result = match ready {
                Ok(()) => agent.run_turn(&history, input, &mut driver).await,
                Err(error) => Err(error),
            };
            (driver, result)
        }
        TurnWork::Compaction => {
            let mut driver = TurnDriver::new(run);
            let result = compaction::compact(&mut driver, agent.as_ref(), &history).await;
            (driver, result)
        }
        TurnWork::UserShell { command, timeout } => {
            let result = run.run_user_shell(&command, timeout).await.map(drop);
            (TurnDriver::new(run), result)
        }
    };
    let (mut driver, mut result) = result;
    // Input steered after the agent last looked still belongs to this turn: hand it to the
    // agent again until none is left, then refuse more, atomically with that last look.
    // (A compaction's queue is closed from the start, so this ends at once.)
    while result.is_ok() && !active.cancel.is_cancelled() {
        let leftover = {
            let mut queue = active
                .steered
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if queue.inputs.is_empty() {
                queue.closed = true;
                break;
            }
            std::mem::take(&mut queue.inputs)
        };
        let mut input = Vec::new();
        for (content, client_id) in leftover {
            TurnRun::of(&mut driver)
                .user_message(content.clone(), client_id)
                .await;
            input.extend(content);
        }
        result = agent.run_turn(&history, input, &mut driver).await;
    }
    active
        .steered
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .closed = true;
    let run = TurnRun::of(&mut driver);
    // The agent's last completed item, not written yet: it goes with the turn's end. After
    // a store failure it is dropped, as any item after the failure is.
    let mut held = run.take_held();
    if let Some(failure) = run.take_store_failure() {
        held = None;
        result = Err(AgentError::Failed(failure));
    } else if active.cancel.is_cancelled() {
        result = Err(AgentError::Interrupted);
    }
    let mut stored_items = run.take_stored_items();
    // search29: users' shell commands beside the agent belong to this turn: it ends after them
    // (an interruption has killed them already). No new one starts: the steer queue is closed.
    let side: Vec<_> = std::mem::take(
        &mut *active
            .side_commands
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    for command in side {
        if let Ok(ids) = command.await {
            stored_items.extend(ids);
        }
    }
    let run = TurnRun::of(&mut driver);
    run.processes.kill_all().await;

    let (status, error, thread_status) = match &result {
        Ok(()) => (TurnStatus::Completed, None, ThreadStatus::Idle),
        Err(AgentError::Interrupted) => (TurnStatus::Interrupted, None, ThreadStatus::Idle),
        Err(AgentError::Failed(message)) => (
            TurnStatus::Failed,
            Some(TurnError {
                message: message.clone(),
                additional_details: None,
            }),
            ThreadStatus::SystemError,
        ),
    };
    let mut finished = Turn {
        id: turn.id.clone(),
        // Taken from the snapshot when the end is recorded, below.
        items: Vec::new(),
        items_view: TurnItemsView::Full,
        status,
        error,
        started_at: turn.started_at,
        completed_at: Some(now_secs()),
        duration_ms: Some(elapsed_ms(started)),
    };
    drop(driver);

    // The end of the turn queues behind earlier requests for the thread, so a `turn/start`
    // that arrives after it sees the thread idle, and an unload cannot slip in between.
    let thread_id = thread.id.clone();
    let finisher = Arc::clone(&service);
    service.sequenced(&thread_id, async move {
        let service = finisher;
        let mut thread_status = thread_status;
        // The snapshot held the turn's only copy of its items; `thread/read` queues behind
        // this task, so nobody sees the turn without them.
        finished.items = std::mem::take(
            &mut active
                .snapshot
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .items,
        );
        // `turn/completed` says what the store holds (`itemsView: full`, "every item
        // available from persisted history"): an item the store refused is left out, and one
        // stored when it started whose completion was refused (the turn then failed) is still
        // in its started state: show it closed, as recovery would.
        finished
            .items
            .retain(|item| stored_items.contains(item.id()));
        for item in &mut finished.items {
            store::close_unfinished_item(item);
        }
        // The held item takes the next index: every other writer of the turn (the agent,
        // users' shell commands) is done by now.
        let held = match held {
            Some((item, times)) => {
                let mut next = active.next_item.lock().await;
                let index = *next;
                *next += 1;
                Some((index, item, times))
            }
            None => None,
        };
        let last_item = service
            .record_turn_end(
                &thread,
                store.as_ref(),
                &mut finished,
                held,
                &mut thread_status,
            )
            .await;
        // Reported once stored, with the end, before anything else about the turn's end.
        if let Some((item, times)) = last_item {
            thread
                .notify(
                    &outgoing,
                    ServerNotification::ItemCompleted(ItemCompletedNotification {
                        thread_id: thread.id.clone(),
                        turn_id: finished.id.clone(),
                        item,
                        // The time stored with it.
                        completed_at_ms: times.completed_at_ms.unwrap_or_else(now_millis),
                    }),
                    None,
                )
                .await;
        }
        if finished.status == TurnStatus::Failed
            && let Some(error) = finished.error.clone()
        {
            thread
                .notify(
                    &outgoing,
                    ServerNotification::Error(ErrorNotification {
                        thread_id: thread.id.clone(),
                        turn_id: finished.id.clone(),
                        error,
                        will_retry: false,
                    }),
                    None,
                )
                .await;
        }
        // Pending requests were resolved by the driver; now the interrupt replies, then the
        // status, then `turn/completed` (docs/protocol.md sections 4 and 6).
        let replies: Vec<_> = std::mem::take(
            &mut *active
                .interrupt_replies
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for reply in replies {
            outgoing
                .send_response_and_wait(reply, EmptyResponse {})
                .await;
        }
        thread.set_status(&outgoing, thread_status).await;
        thread
            .notify(
                &outgoing,
                ServerNotification::TurnCompleted(TurnCompletedNotification {
                    thread_id: thread.id.clone(),
                    turn: finished,
                }),
                None,
            )
            .await;
        service.finish_turn(&thread);
        service.release_if_unloaded(&thread).await;
        active.ended.cancel();
    });
}
