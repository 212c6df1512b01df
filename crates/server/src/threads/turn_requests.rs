//! The `turn/*` request handlers and the end-of-turn bookkeeping the turn task calls.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tandem_host::ConnectionRequestId;
use tandem_protocol::{
    ApprovalPolicy, JSONRPCErrorError, ThreadItem, ThreadStatus, Turn, TurnError,
    TurnInterruptParams, TurnItemsView, TurnStartParams, TurnStartResponse, TurnStatus,
    TurnSteerParams, TurnSteerResponse, UserInput,
};
use tokio_util::sync::CancellationToken;

use crate::process::ProcessManager;
use crate::store::{self, ItemTimes, ThreadStore, ThreadUpdate, TurnEndUpdate};

use super::idempotency::{self, Keyed};
use super::turn_work::{self, StartedTurn, TurnWork};
use super::{
    ActiveTurn, LoadedThread, SteerQueue, ThreadService, lock, now_millis, now_secs, store_error,
};

/// The first pause before writing a turn's end again (see
/// [`ThreadService::store_turn_end`]); it doubles up to [`END_RETRY_MAX_PAUSE`].
const END_RETRY_FIRST_PAUSE: Duration = Duration::from_millis(50);

/// The longest pause between two attempts to write a turn's end.
const END_RETRY_MAX_PAUSE: Duration = Duration::from_secs(1);

/// The first pause before an owed turn end is written again (see
/// [`ThreadService::settle_owed_end`]); it doubles up to [`OWED_RETRY_MAX_PAUSE`]. A full disk
/// is freed by a person: no point in hammering it.
const OWED_RETRY_FIRST_PAUSE: Duration = Duration::from_millis(250);

/// The longest pause between two attempts to write an owed turn end: how long after the disk
/// is freed the store may still say `inProgress`.
const OWED_RETRY_MAX_PAUSE: Duration = Duration::from_secs(2);

impl ThreadService {
    // -----------------------------------------------------------------------------------------
    // turn/*
    // -----------------------------------------------------------------------------------------

    /// Queues `turn/start` in the thread's order; a start that meets a turn which takes no
    /// more input (one wrapping up, or a compaction) goes to the back of the queue again once
    /// that turn has ended. It waits outside the thread's queue, so that the turn's end (queued
    /// there too) can run, and without spinning through a compaction that lasts seconds.
    pub(super) fn queue_turn_start(
        self: &Arc<Self>,
        params: TurnStartParams,
        id: ConnectionRequestId,
    ) {
        let service = Arc::clone(self);
        let thread_id = params.thread_id.clone();
        self.sequenced(&thread_id, async move {
            if let Some((params, id)) = service.turn_start(params, id).await {
                let ended = service.loaded(&params.thread_id).and_then(|thread| {
                    thread
                        .state()
                        .active
                        .as_ref()
                        .map(|active| active.ended.clone())
                });
                tokio::spawn(async move {
                    if let Some(ended) = ended {
                        ended.cancelled().await;
                    }
                    service.queue_turn_start(params, id);
                });
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
        if let Some(root) = params
            .sandbox_policy
            .as_ref()
            .and_then(|policy| policy.as_ref()?.relative_writable_root())
        {
            // The reference's words: its writable roots are absolute paths by type.
            let error = JSONRPCErrorError::invalid_request(format!(
                "Invalid request: AbsolutePathBuf deserialized without a base path: \
                 sandboxPolicy.writableRoots holds {root}; name it from /"
            ));
            self.outgoing.send_error(id, error).await;
            return None;
        }
        let Some(thread) = self.loaded(&params.thread_id) else {
            // "Resume it first" only helps for a thread that exists.
            let error = match self.find(&params.thread_id).await {
                // An archived thread is not found until it is unarchived, as in the reference.
                Ok(None) => super::not_found(&params.thread_id),
                Ok(Some((_, record))) if record.archived_at.is_some() => {
                    super::not_found(&params.thread_id)
                }
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
            let reply = TurnStartResponse {
                turn: active_turn_reply(&active),
            };
            let claim = match self
                .claim_turn_key(&thread, "turn/start", &params, &reply)
                .await
            {
                Ok(TurnKey::Run(claim)) => claim,
                Ok(TurnKey::Replay(result)) => {
                    self.outgoing.send_response(id, result).await;
                    return None;
                }
                Err(error) => {
                    self.outgoing.send_error(id, error).await;
                    return None;
                }
            };
            let (input, client_id) = (params.input.clone(), params.client_user_message_id.clone());
            if steer(&active, input, client_id) {
                self.outgoing.send_response(id, reply).await;
                return None;
            }
            if let Some(claim) = claim {
                claim.release().await;
            }
            // The running turn is wrapping up and takes no more input: the caller queues this
            // request again, behind the end of that turn.
            return Some((params, id));
        }
        if self.is_stopping() {
            // A turn begun now would run past the shutdown that waits for running turns.
            let error =
                JSONRPCErrorError::internal("the server is shutting down; no new turn starts");
            self.outgoing.send_error(id, error).await;
            return None;
        }
        let overrides_config =
            params.sandbox_policy.is_some() || params.effort.is_some() || params.summary.is_some();
        let config = if overrides_config {
            let mut config = thread.state().record.config.clone();
            if let Some(policy) = &params.sandbox_policy {
                crate::config::sandbox::set_thread_policy(&mut config, policy.as_ref());
            }
            let effort = params.effort.as_ref().map(Option::as_deref);
            let summary = params.summary.as_ref().map(Option::as_deref);
            if let Err(error) =
                crate::config::reasoning::set_thread_reasoning(&mut config, effort, summary)
            {
                let error = JSONRPCErrorError::invalid_request(format!("Invalid request: {error}"));
                self.outgoing.send_error(id, error).await;
                return None;
            }
            Some(config)
        } else {
            None
        };
        let now = now_secs();
        let first_turn = thread.state().record.preview.is_empty();
        // Settings, preview and the turn with its input in one write: when `turn/start`
        // answers, the input is durable.
        let update = ThreadUpdate {
            approval_policy: params
                .approval_policy
                .map(|policy| policy.unwrap_or(ApprovalPolicy::OnRequest)),
            model: params.model.clone(),
            config,
            preview: first_turn.then(|| turn_work::preview_of(&params.input)),
            updated_at: Some(now),
            ..ThreadUpdate::default()
        };
        let user_message = ThreadItem::UserMessage {
            id: store::new_id(),
            content: params.input.clone(),
            client_id: params.client_user_message_id.clone(),
        };
        let mut turn = Turn {
            id: store::new_id(),
            items: vec![user_message],
            items_view: TurnItemsView::Full,
            status: TurnStatus::InProgress,
            error: None,
            started_at: Some(now),
            completed_at: None,
            duration_ms: None,
        };
        let store = match self.store_for(thread.ephemeral).await {
            Ok(store) => store,
            Err(error) => {
                self.outgoing.send_error(id, error).await;
                return None;
            }
        };
        // The agent sees the whole history: a thread resumed for paging loads it now, before
        // this turn is stored, so the history holds only turns that ended.
        if let Err(error) = self.ensure_history(&thread, &*store).await {
            self.outgoing.send_error(id, error).await;
            return None;
        }
        // The answer this request will give, claimed under its key before the turn is stored.
        let planned = TurnStartResponse {
            turn: Turn {
                items: Vec::new(),
                items_view: TurnItemsView::NotLoaded,
                ..turn.clone()
            },
        };
        let claim = match self
            .claim_turn_key(&thread, "turn/start", &params, &planned)
            .await
        {
            Ok(TurnKey::Run(claim)) => claim,
            Ok(TurnKey::Replay(result)) => {
                self.outgoing.send_response(id, result).await;
                return None;
            }
            Err(error) => {
                self.outgoing.send_error(id, error).await;
                return None;
            }
        };
        // The previous turn's end, if the store refused it, goes first: a new turn stored
        // after one the store still holds `inProgress` would leave the thread with two.
        if let Err(error) = self.settle_owed_end(&thread, &*store).await {
            if let Some(claim) = claim {
                claim.release().await;
            }
            self.outgoing.send_error(id, store_error(error)).await;
            return None;
        }
        // The input's item/started and item/completed tell this time, and the store keeps it
        // with the input.
        let input_at_ms = now_millis();
        let input_times = ItemTimes {
            started_at_ms: Some(input_at_ms),
            completed_at_ms: Some(input_at_ms),
        };
        match store
            .begin_turn(&thread.id, &turn, input_times, &update)
            .await
        {
            Ok(record) => thread.state().record = record,
            Err(error) => {
                if let Some(claim) = claim {
                    claim.release().await;
                }
                self.outgoing.send_error(id, store_error(error)).await;
                return None;
            }
        }
        let user_message = turn.items.pop().expect("the turn holds its user message");
        let active = Arc::new(ActiveTurn {
            id: turn.id.clone(),
            cancel: CancellationToken::new(),
            steered: Mutex::new(SteerQueue::default()),
            steer_signal: tokio::sync::Notify::new(),
            interrupt_replies: Mutex::new(Vec::new()),
            snapshot: Mutex::new(turn.clone()),
            processes: ProcessManager::new()
                .with_kept_output_max(self.config().process_output_max_bytes)
                .keeping_streamed_output(),
            ended: CancellationToken::new(),
            next_item: Default::default(),
            side_commands: Default::default(),
            injected: Default::default(),
        });
        {
            let mut state = thread.state();
            state.active = Some(Arc::clone(&active));
            self.update_unload(&thread, &mut state);
        }
        turn.items_view = TurnItemsView::NotLoaded;
        self.outgoing
            .send_response(id, TurnStartResponse { turn: turn.clone() })
            .await;
        let started = StartedTurn {
            turn,
            work: TurnWork::Input {
                user_message: Box::new(user_message),
                input: params.input,
                input_at_ms,
            },
            store,
        };
        (self.run_turn.start)(Arc::clone(self), thread, active, started);
        None
    }

    pub(super) async fn turn_steer(
        self: &Arc<Self>,
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
        let thread = self.loaded(&params.thread_id);
        let active = thread
            .as_ref()
            .and_then(|thread| thread.state().active.clone());
        let reply = TurnSteerResponse {
            turn_id: params.expected_turn_id.clone(),
        };
        // A retry finds its key even once the turn it steered has ended.
        let claim = match (&thread, &active) {
            (Some(thread), Some(active)) if active.id == params.expected_turn_id => {
                match self
                    .claim_turn_key(thread, "turn/steer", &params, &reply)
                    .await?
                {
                    TurnKey::Run(claim) => claim,
                    TurnKey::Replay(result) => {
                        return serde_json::from_value(result).map_err(|error| {
                            JSONRPCErrorError::internal(format!(
                                "the remembered turn/steer result does not decode: {error}"
                            ))
                        });
                    }
                }
            }
            (Some(thread), _) => {
                if let Some(result) = self
                    .replayed_turn_key(thread, "turn/steer", &params)
                    .await?
                {
                    return serde_json::from_value(result).map_err(|error| {
                        JSONRPCErrorError::internal(format!(
                            "the remembered turn/steer result does not decode: {error}"
                        ))
                    });
                }
                None
            }
            (None, _) => None,
        };
        let active =
            active.ok_or_else(|| JSONRPCErrorError::invalid_request("no active turn to steer"))?;
        if active.id != params.expected_turn_id {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "expected active turn id `{}` but found `{}`",
                params.expected_turn_id, active.id
            )));
        }
        if !steer(&active, params.input, params.client_user_message_id) {
            if let Some(claim) = claim {
                claim.release().await;
            }
            return Err(JSONRPCErrorError::invalid_request(
                "no active turn to steer",
            ));
        }
        Ok(reply)
    }

    /// Claims the `clientUserMessageId` of a `turn/start` or `turn/steer` (`method`) in its
    /// thread, planning to answer `planned`. A replayed `turn/start` whose turn does not exist
    /// (a crash came between the claim and the turn's first write) is claimed afresh.
    async fn claim_turn_key(
        &self,
        thread: &LoadedThread,
        method: &str,
        params: &(impl serde::Serialize + HasClientKey),
        planned: &impl serde::Serialize,
    ) -> Result<TurnKey, JSONRPCErrorError> {
        let Some(key) = params.client_key() else {
            return Ok(TurnKey::Run(None));
        };
        let store = self.store_for(thread.ephemeral).await?;
        let fingerprint = idempotency::fingerprint(method, params)?;
        for _ in 0..2 {
            match idempotency::claim(
                &store,
                &thread.id,
                key,
                method,
                fingerprint.clone(),
                planned,
            )
            .await?
            {
                Keyed::Claimed(claim) => return Ok(TurnKey::Run(Some(claim))),
                Keyed::Replay(result) => {
                    let turn_id = result
                        .pointer("/turn/id")
                        .and_then(serde_json::Value::as_str);
                    match turn_id {
                        Some(turn_id) if !turn_exists(thread, &*store, turn_id).await => store
                            .release_idempotency_key(&thread.id, key)
                            .await
                            .map_err(store_error)?,
                        _ => return Ok(TurnKey::Replay(result)),
                    }
                }
            }
        }
        Err(JSONRPCErrorError::internal(format!(
            "clientUserMessageId {key:?} could not be claimed; retry"
        )))
    }

    /// The remembered result of a `method` request with `params`' key in `thread`, if this is
    /// a retry of one, without claiming anything (the request cannot run, but its retry
    /// still gets the original answer). A key of another request is a conflict.
    async fn replayed_turn_key(
        &self,
        thread: &LoadedThread,
        method: &str,
        params: &(impl serde::Serialize + HasClientKey),
    ) -> Result<Option<serde_json::Value>, JSONRPCErrorError> {
        let Some(key) = params.client_key() else {
            return Ok(None);
        };
        let store = self.store_for(thread.ephemeral).await?;
        let fingerprint = idempotency::fingerprint(method, params)?;
        idempotency::remembered(&store, &thread.id, key, method, &fingerprint).await
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

    /// Records the end of a turn in `store` (status, error, times; the items are already
    /// stored, but for `last_item`, the agent's last item held back to go in the same
    /// commit: returned, and added to the turn, when it was stored) and in the live state. If the store cannot write it, the turn becomes `failed`
    /// with the store's error (and the thread `systemError`), and that failure is written if
    /// the store takes it, so the client is never told `completed` about a turn a restart
    /// would not read back as completed. If the store takes neither (a full disk), the end is
    /// owed ([`ThreadState::owed_end`](super::ThreadState::owed_end)): written again in the
    /// background until the store takes it, before the thread's next turn, and before its
    /// lease is given back. Called by the turn task through [`ThreadService::sequenced`].
    pub(crate) async fn record_turn_end(
        self: &Arc<Self>,
        thread: &Arc<LoadedThread>,
        store: &dyn ThreadStore,
        turn: &mut Turn,
        last_item: Option<(usize, ThreadItem, ItemTimes)>,
        status: &mut ThreadStatus,
    ) -> Option<(ThreadItem, ItemTimes)> {
        let end = |status: &ThreadStatus| TurnEndUpdate {
            status: status.clone(),
            updated_at: now_secs(),
        };
        let held = last_item
            .as_ref()
            .map(|(index, item, times)| (*index, item, *times));
        let mut result = self
            .store_turn_end(store, &thread.id, turn, held, &end(status))
            .await;
        // Stored with the end or not at all: a refused item is never reported, and the end
        // is then tried alone below (or owed).
        let last_item = last_item
            .filter(|_| result.is_ok())
            .map(|(_, item, times)| (item, times));
        if let Some((item, _)) = &last_item {
            turn.items.push(item.clone());
        }
        if let Err(error) = &result
            && error.is_storage_failure()
        {
            tracing::error!(thread = %thread.id, turn = %turn.id, %error, "turn end not stored");
            turn.status = TurnStatus::Failed;
            turn.error = Some(TurnError {
                message: error.to_string(),
                additional_details: None,
            });
            *status = ThreadStatus::SystemError;
            // A transient failure (a lock held by another process) may let the failure
            // itself be recorded at once; if not, it is owed, below.
            result = self
                .store_turn_end(store, &thread.id, turn, None, &end(status))
                .await;
        }
        let mut state = thread.state();
        end(status).apply(&mut state.record);
        if let Err(error) = result {
            tracing::warn!(thread = %thread.id, turn = %turn.id, %error, "turn end not stored");
            // A deleted thread lands here too; its turn has nowhere to go.
            if owes_the_end(&error) {
                state.owed_end = Some(Turn {
                    items: Vec::new(),
                    ..turn.clone()
                });
                self.retry_owed_end(thread);
            }
        }
        state.history.push(turn.clone());
        // From here on readers see the turn in the history; the running turn's copy of its
        // items (which can be as large as the input) goes now rather than with the task.
        // Nothing reads between the two: thread requests queue behind this task.
        if let Some(active) = &state.active {
            lock(&active.snapshot).items = Vec::new();
        }
        last_item
    }

    /// Writes the end of a turn that `store` refused earlier
    /// ([`ThreadState::owed_end`](super::ThreadState::owed_end)), if there is one, with the
    /// thread's current status and update time. `Err` while the store still refuses it; the
    /// caller must then not store anything newer about the thread's turns (a new turn after
    /// one the store still holds `inProgress` would leave two). An end that has nowhere to go
    /// any more (the thread deleted, the turn rolled back, the lease lost to another server,
    /// whose recovery closes the turn) is dropped.
    pub(crate) async fn settle_owed_end(
        &self,
        thread: &LoadedThread,
        store: &dyn ThreadStore,
    ) -> Result<(), store::StoreError> {
        let (turn, end) = {
            let state = thread.state();
            let Some(turn) = state.owed_end.clone() else {
                return Ok(());
            };
            let end = TurnEndUpdate {
                status: state.record.status.clone(),
                updated_at: state.record.updated_at,
            };
            (turn, end)
        };
        let result = store.finish_turn(&thread.id, &turn, None, &end).await;
        match &result {
            Ok(()) => {
                tracing::info!(thread = %thread.id, turn = %turn.id, "the owed turn end is stored");
            }
            Err(error) if owes_the_end(error) => return result,
            Err(error) => {
                tracing::warn!(thread = %thread.id, turn = %turn.id, %error,
                    "the owed turn end has nowhere to go; dropped");
            }
        }
        let mut state = thread.state();
        if state
            .owed_end
            .as_ref()
            .is_some_and(|owed| owed.id == turn.id)
        {
            state.owed_end = None;
        }
        Ok(())
    }

    /// Writes `thread`'s owed end again, in its order, with growing pauses, until the store
    /// takes it, the thread is unloaded (which tries once more before the lease goes) or the
    /// server stops.
    fn retry_owed_end(self: &Arc<Self>, thread: &Arc<LoadedThread>) {
        let service = Arc::clone(self);
        let thread = Arc::clone(thread);
        let stopping = self.stopping.clone();
        tokio::spawn(async move {
            let mut pause = OWED_RETRY_FIRST_PAUSE;
            loop {
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = stopping.cancelled() => return,
                }
                pause = (pause * 2).min(OWED_RETRY_MAX_PAUSE);
                let current = service
                    .loaded(&thread.id)
                    .is_some_and(|loaded| Arc::ptr_eq(&loaded, &thread));
                if service.is_stopping() || !current || thread.state().owed_end.is_none() {
                    return;
                }
                let (done, settled) = tokio::sync::oneshot::channel();
                let settler = Arc::clone(&service);
                let owing = Arc::clone(&thread);
                service.sequenced(&thread.id, async move {
                    let settled = match settler.store_for(owing.ephemeral).await {
                        Ok(store) => settler.settle_owed_end(&owing, &*store).await.is_ok(),
                        Err(_) => false,
                    };
                    let _ = done.send(settled);
                });
                if settled.await.unwrap_or(false) {
                    return;
                }
            }
        });
    }

    /// Writes the end of `turn` (see [`ThreadStore::finish_turn`]), again while the database
    /// cannot be reached (a PostgreSQL restart, lost connections), for at most the lease TTL:
    /// the thread is still leased here and nobody else will close the turn, which would
    /// otherwise read back `inProgress` for as long as this server keeps the thread. Past
    /// the TTL, or once the server stops, the lease is gone anyway and whoever takes it next
    /// closes the turn as interrupted.
    async fn store_turn_end(
        &self,
        store: &dyn ThreadStore,
        thread_id: &str,
        turn: &Turn,
        last_item: Option<(usize, &ThreadItem, ItemTimes)>,
        end: &TurnEndUpdate,
    ) -> Result<(), store::StoreError> {
        let window = store
            .lease_settings()
            .map_or(store::DEFAULT_LEASE_TTL, |settings| settings.ttl);
        let deadline = tokio::time::Instant::now() + window;
        let mut pause = END_RETRY_FIRST_PAUSE;
        loop {
            match store.finish_turn(thread_id, turn, last_item, end).await {
                Err(error)
                    if error.is_lost_connection()
                        && !self.is_stopping()
                        && tokio::time::Instant::now() + pause < deadline =>
                {
                    tracing::warn!(thread = thread_id, turn = %turn.id, %error, "cannot store the turn's end yet; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(END_RETRY_MAX_PAUSE);
                }
                other => return other,
            }
        }
    }

    /// Clears the thread's active turn and restarts the unload countdown if it is idle.
    pub(crate) fn finish_turn(self: &Arc<Self>, thread: &Arc<LoadedThread>) {
        let mut state = thread.state();
        state.active = None;
        self.update_unload(thread, &mut state);
    }
}

/// Whether a refused turn end is still owed after `error`: the storage failed (a full disk, a
/// lock, an unreachable database), not the request (the thread deleted, the turn rolled
/// back), and this server has not been fenced off the thread (the next owner's recovery
/// closes the turn then).
fn owes_the_end(error: &store::StoreError) -> bool {
    error.is_storage_failure() && !matches!(error, store::StoreError::Fenced(_))
}

/// What claiming a turn request's key decided.
enum TurnKey {
    /// Run the request; release the claim (if it had a key) should it fail.
    Run(Option<idempotency::Claim>),
    /// A retry: answer with this.
    Replay(serde_json::Value),
}

/// The requests keyed by `clientUserMessageId`.
trait HasClientKey {
    fn client_key(&self) -> Option<&str>;
}

impl HasClientKey for TurnStartParams {
    fn client_key(&self) -> Option<&str> {
        self.client_user_message_id.as_deref()
    }
}

impl HasClientKey for TurnSteerParams {
    fn client_key(&self) -> Option<&str> {
        self.client_user_message_id.as_deref()
    }
}

/// Whether turn `turn_id` of `thread` exists: running, or stored.
async fn turn_exists(thread: &LoadedThread, store: &dyn ThreadStore, turn_id: &str) -> bool {
    if thread
        .state()
        .active
        .as_ref()
        .is_some_and(|active| active.id == turn_id)
    {
        return true;
    }
    let query = store::ItemListQuery {
        turn_id: Some(turn_id.to_owned()),
        limit: 1,
        ..store::ItemListQuery::default()
    };
    store.list_items(&thread.id, &query).await.is_ok()
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
