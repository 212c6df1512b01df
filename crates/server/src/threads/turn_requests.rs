//! The `turn/*` request handlers and the end-of-turn bookkeeping the turn task calls.

use std::sync::{Arc, Mutex};

use tandem_host::ConnectionRequestId;
use tandem_protocol::{
    ApprovalPolicy, JSONRPCErrorError, ThreadStatus, Turn, TurnInterruptParams, TurnItemsView,
    TurnStartParams, TurnStartResponse, TurnStatus, TurnSteerParams, TurnSteerResponse, UserInput,
};
use tokio_util::sync::CancellationToken;

use crate::process::ProcessManager;
use crate::store::{self, ThreadUpdate};
use crate::turn;

use super::{ActiveTurn, LoadedThread, SteerQueue, ThreadService, lock, now_secs, store_error};

impl ThreadService {
    // -----------------------------------------------------------------------------------------
    // turn/*
    // -----------------------------------------------------------------------------------------

    /// Queues `turn/start` in the thread's order; a start that meets a turn which is wrapping
    /// up goes to the back of the queue again, so it runs once that turn has ended.
    pub(super) fn queue_turn_start(
        self: &Arc<Self>,
        params: TurnStartParams,
        id: ConnectionRequestId,
    ) {
        let service = Arc::clone(self);
        let thread_id = params.thread_id.clone();
        self.sequenced(&thread_id, async move {
            if let Some((params, id)) = service.turn_start(params, id).await {
                tokio::task::yield_now().await;
                service.queue_turn_start(params, id);
            }
        });
    }

    /// Starts a turn, or joins the input to the running one. Gives the request back when the
    /// running turn no longer takes input.
    pub(super) async fn turn_start(
        self: &Arc<Self>,
        params: TurnStartParams,
        id: ConnectionRequestId,
    ) -> Option<(TurnStartParams, ConnectionRequestId)> {
        if let Err(error) = UserInput::ensure_all_supported(&params.input) {
            self.outgoing.send_error(id, error).await;
            return None;
        }
        let Some(thread) = self.loaded(&params.thread_id) else {
            // "Resume it first" only helps for a thread that exists.
            let error = match self.find(&params.thread_id).await {
                Ok(None) => super::not_found(&params.thread_id),
                Ok(Some(_)) | Err(_) => JSONRPCErrorError::invalid_request(format!(
                    "thread not loaded: {}; resume it first",
                    params.thread_id
                )),
            };
            self.outgoing.send_error(id, error).await;
            return None;
        };
        // A turn is already running: the input joins it, as `turn/steer` without the id check.
        let running = thread.state().active.clone();
        if let Some(active) = running {
            let (input, client_id) = (params.input.clone(), params.client_user_message_id.clone());
            if steer(&active, input, client_id) {
                let turn = active_turn_reply(&active);
                self.outgoing
                    .send_response(id, TurnStartResponse { turn })
                    .await;
                return None;
            }
            // The running turn is wrapping up and takes no more input: the caller queues this
            // request again, behind the end of that turn.
            return Some((params, id));
        }
        let settings = ThreadUpdate {
            approval_policy: params
                .approval_policy
                .map(|policy| policy.unwrap_or(ApprovalPolicy::OnRequest)),
            model: params.model.clone(),
            ..ThreadUpdate::default()
        };
        if settings != ThreadUpdate::default() {
            let result = match self.store_for(thread.ephemeral).await {
                Ok(store) => store
                    .update_thread(&thread.id, &settings)
                    .await
                    .map_err(store_error),
                Err(error) => Err(error),
            };
            match result {
                Ok(record) => thread.state().record = record,
                Err(error) => {
                    self.outgoing.send_error(id, error).await;
                    return None;
                }
            }
        }
        let now = now_secs();
        let turn = Turn {
            id: store::new_id(),
            items: Vec::new(),
            items_view: TurnItemsView::NotLoaded,
            status: TurnStatus::InProgress,
            error: None,
            started_at: Some(now),
            completed_at: None,
            duration_ms: None,
        };
        let active = Arc::new(ActiveTurn {
            id: turn.id.clone(),
            connection: id.connection_id,
            cancel: CancellationToken::new(),
            steered: Mutex::new(SteerQueue::default()),
            steer_signal: tokio::sync::Notify::new(),
            interrupt_replies: Mutex::new(Vec::new()),
            snapshot: Mutex::new(Turn {
                items_view: TurnItemsView::Full,
                ..turn.clone()
            }),
            processes: ProcessManager::new(),
        });
        {
            let mut state = thread.state();
            state.active = Some(Arc::clone(&active));
            self.update_unload(&thread, &mut state);
        }
        self.outgoing
            .send_response(id, TurnStartResponse { turn: turn.clone() })
            .await;
        turn::spawn(
            Arc::clone(self),
            thread,
            active,
            turn,
            params.input,
            params.client_user_message_id,
        );
        None
    }

    pub(super) fn turn_steer(
        &self,
        params: TurnSteerParams,
    ) -> Result<TurnSteerResponse, JSONRPCErrorError> {
        if params.expected_turn_id.is_empty() {
            return Err(JSONRPCErrorError::invalid_request(
                "expectedTurnId must not be empty",
            ));
        }
        if params.input.is_empty() {
            return Err(JSONRPCErrorError::invalid_request(
                "input must not be empty",
            ));
        }
        UserInput::ensure_all_supported(&params.input)?;
        let active = self
            .loaded(&params.thread_id)
            .and_then(|thread| thread.state().active.clone())
            .ok_or_else(|| JSONRPCErrorError::invalid_request("no active turn to steer"))?;
        if active.id != params.expected_turn_id {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "expected active turn id `{}` but found `{}`",
                params.expected_turn_id, active.id
            )));
        }
        if !steer(&active, params.input, params.client_user_message_id) {
            return Err(JSONRPCErrorError::invalid_request(
                "no active turn to steer",
            ));
        }
        Ok(TurnSteerResponse {
            turn_id: active.id.clone(),
        })
    }

    /// Registers the reply and stops the turn; the turn task answers once it has stopped.
    pub(super) fn turn_interrupt(
        &self,
        params: TurnInterruptParams,
        id: ConnectionRequestId,
    ) -> Result<(), JSONRPCErrorError> {
        let active = self
            .loaded(&params.thread_id)
            .and_then(|thread| thread.state().active.clone())
            .ok_or_else(|| JSONRPCErrorError::invalid_request("no active turn to interrupt"))?;
        if active.id != params.turn_id {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "expected active turn id {} but found {}",
                params.turn_id, active.id
            )));
        }
        lock(&active.interrupt_replies).push(id);
        active.cancel.cancel();
        Ok(())
    }

    /// Records the end of a turn: commits it, updates the live state, then lets the unload
    /// countdown run again. Called by the turn task through [`ThreadService::sequenced`].
    pub(crate) async fn commit_turn(
        self: &Arc<Self>,
        thread: &Arc<LoadedThread>,
        turn: &Turn,
        status: ThreadStatus,
        preview: Option<String>,
    ) {
        let update = ThreadUpdate {
            status: Some(status),
            updated_at: Some(now_secs()),
            preview,
            ..ThreadUpdate::default()
        };
        let result = match self.store_for(thread.ephemeral).await {
            Ok(store) => store
                .commit_turn(&thread.id, turn, &update)
                .await
                .map_err(|error| error.to_string()),
            Err(error) => Err(error.message),
        };
        let mut state = thread.state();
        match result {
            Ok(record) => state.record = record,
            Err(error) => {
                // A deleted thread lands here too; its turn has nowhere to go.
                tracing::warn!(thread = %thread.id, turn = %turn.id, %error, "turn not stored");
                update.apply(&mut state.record);
            }
        }
        state.history.push(turn.clone());
    }

    /// Clears the thread's active turn and restarts the unload countdown if it is idle.
    pub(crate) fn finish_turn(self: &Arc<Self>, thread: &Arc<LoadedThread>) {
        let mut state = thread.state();
        state.active = None;
        self.update_unload(thread, &mut state);
    }
}

/// Queues `input` for the running turn; `false` when the turn has stopped taking input.
fn steer(active: &ActiveTurn, input: Vec<UserInput>, client_id: Option<String>) -> bool {
    let mut queue = lock(&active.steered);
    if queue.closed {
        return false;
    }
    queue.inputs.push((input, client_id));
    drop(queue);
    active.steer_signal.notify_one();
    true
}

fn active_turn_reply(active: &ActiveTurn) -> Turn {
    let snapshot = lock(&active.snapshot);
    Turn {
        items: Vec::new(),
        items_view: TurnItemsView::NotLoaded,
        ..snapshot.clone()
    }
}
