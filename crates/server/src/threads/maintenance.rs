//! The requests that change a thread's stored history or its place in the listing rather than
//! its live session: `thread/archive` and `thread/unarchive`, `thread/compact/start`,
//! `thread/revert` and `thread/rollback` (docs/protocol.md section 4). Each runs in the
//! thread's order, so none of them can interleave with a turn starting or ending. With
//! `restoreFiles: true`, revert and rollback first put the files back (`file_restore`).

use std::sync::{Arc, Mutex};

use tandem_host::ConnectionRequestId;
use tandem_protocol::{
    EmptyResponse, FileRestoreResult, JSONRPCErrorError, ServerNotification, ThreadArchiveParams,
    ThreadArchivedNotification, ThreadCompactStartParams, ThreadRevertParams, ThreadRevertResponse,
    ThreadRevertedNotification, ThreadRollbackParams, ThreadRollbackResponse,
    ThreadUnarchiveParams, ThreadUnarchiveResponse, ThreadUnarchivedNotification, Turn,
    TurnItemsView, TurnStatus,
};
use tokio_util::sync::CancellationToken;

use crate::process::ProcessManager;
use crate::store::{self, ItemTimes, ThreadRecord, ThreadStore, ThreadUpdate};

use super::turn_work::{StartedTurn, TurnWork};
use super::{
    ActiveTurn, LoadedThread, SteerQueue, ThreadService, lock, not_found, now_secs, store_error,
};

impl ThreadService {
    /// The store and record of a thread that is not archived; an archived thread is "not
    /// found" to everything but `thread/read`, `thread/list` and `thread/unarchive`, as in the
    /// reference.
    async fn find_unarchived(
        &self,
        thread_id: &str,
    ) -> Result<(Arc<dyn ThreadStore>, ThreadRecord), JSONRPCErrorError> {
        match self.find(thread_id).await? {
            Some((store, record)) if record.archived_at.is_none() => Ok((store, record)),
            _ => Err(not_found(thread_id)),
        }
    }

    /// Refuses a change to the history of a thread whose turn is still running.
    pub(super) fn ensure_no_running_turn(
        &self,
        thread_id: &str,
        what: &str,
    ) -> Result<(), JSONRPCErrorError> {
        let running = self.loaded(thread_id).and_then(|thread| {
            thread
                .state()
                .active
                .as_ref()
                .map(|active| active.id.clone())
        });
        match running {
            Some(turn_id) => Err(JSONRPCErrorError::invalid_request(format!(
                "turn {turn_id} of thread {thread_id} is still running; wait for its \
                 turn/completed or interrupt it before {what}"
            ))),
            None => Ok(()),
        }
    }

    /// Loads the latest compaction of `thread` from `store` into its live state (on resume).
    pub(super) async fn load_compaction(
        &self,
        thread: &LoadedThread,
        store: &dyn ThreadStore,
    ) -> Result<(), JSONRPCErrorError> {
        let compaction = store
            .latest_compaction(&thread.id)
            .await
            .map_err(store_error)?;
        thread.state().compaction = compaction;
        Ok(())
    }

    pub(super) async fn archive(&self, params: ThreadArchiveParams, id: ConnectionRequestId) {
        let thread_id = params.thread_id;
        let result = async {
            let (store, record) = self.find_unarchived(&thread_id).await?;
            if record.ephemeral {
                return Err(JSONRPCErrorError::invalid_request(format!(
                    "thread {thread_id} is ephemeral and cannot be archived: it is not stored"
                )));
            }
            let update = ThreadUpdate {
                archived_at: Some(Some(now_secs())),
                ..ThreadUpdate::default()
            };
            store
                .update_thread(&thread_id, &update)
                .await
                .map_err(store_error)
        }
        .await;
        if let Err(error) = result {
            return self.outgoing.send_error(id, error).await;
        }
        // An archived thread is unloaded, so that it takes no turn until it is unarchived and
        // resumed; its subscribers hear `notLoaded` before the reply, as in the reference.
        let loaded = lock(&self.loaded).remove(&thread_id);
        if let Some(thread) = &loaded {
            if let Some(active) = &thread.state().active {
                active.cancel.cancel();
            }
            self.after_unload(thread).await;
            self.release_unless_running(thread).await;
        }
        self.outgoing
            .send_response_and_wait(id, EmptyResponse {})
            .await;
        let note = ServerNotification::ThreadArchived(ThreadArchivedNotification { thread_id });
        self.outgoing.broadcast_notification(note).await;
    }

    pub(super) async fn unarchive(&self, params: ThreadUnarchiveParams, id: ConnectionRequestId) {
        let thread_id = params.thread_id;
        let result = async {
            let (store, record) = self
                .find(&thread_id)
                .await?
                .ok_or_else(|| not_found(&thread_id))?;
            if record.archived_at.is_none() {
                return Err(JSONRPCErrorError::invalid_request(format!(
                    "thread {thread_id} is not archived"
                )));
            }
            let update = ThreadUpdate {
                archived_at: Some(None),
                updated_at: Some(now_secs()),
                ..ThreadUpdate::default()
            };
            store
                .update_thread(&thread_id, &update)
                .await
                .map_err(store_error)
        }
        .await;
        let record = match result {
            Ok(record) => record,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        let response = ThreadUnarchiveResponse {
            thread: self.unloaded_thread(&record, Vec::new()),
        };
        self.outgoing.send_response_and_wait(id, response).await;
        let note = ServerNotification::ThreadUnarchived(ThreadUnarchivedNotification { thread_id });
        self.outgoing.broadcast_notification(note).await;
    }

    /// Starts a compaction turn: the reply first, then `turn/started`, the `contextCompaction`
    /// item, `thread/compacted` and `turn/completed` from the turn task.
    pub(super) async fn compact_start(
        self: &Arc<Self>,
        params: ThreadCompactStartParams,
        id: ConnectionRequestId,
    ) {
        // The summary covers the whole history: a thread resumed for paging loads it.
        let work = InputlessTurn {
            work: TurnWork::Compaction,
            doing: "compacting",
            needs_history: true,
        };
        self.start_inputless_turn(&params.thread_id, work, id).await;
    }

    /// Starts a turn that takes no input (a compaction, a user's shell command) on a loaded
    /// thread with no running turn: stores it, makes it the thread's active turn, answers
    /// `id` with `{}` and hands it to the turn task; or answers the error.
    pub(super) async fn start_inputless_turn(
        self: &Arc<Self>,
        thread_id: &str,
        work: InputlessTurn,
        id: ConnectionRequestId,
    ) {
        let result = async {
            let Some(thread) = self.loaded(thread_id) else {
                self.find_unarchived(thread_id).await?;
                return Err(JSONRPCErrorError::invalid_request(format!(
                    "thread not loaded: {thread_id}; resume it first"
                )));
            };
            self.ensure_no_running_turn(thread_id, work.doing)?;
            let store = self.store_for(thread.ephemeral).await?;
            if work.needs_history {
                self.ensure_history(&thread, &*store).await?;
            }
            if self.is_stopping() {
                return Err(JSONRPCErrorError::internal(
                    "the server is shutting down; no new turn starts",
                ));
            }
            let now = now_secs();
            let turn = Turn {
                id: store::new_id(),
                items: Vec::new(),
                items_view: TurnItemsView::Full,
                status: TurnStatus::InProgress,
                error: None,
                started_at: Some(now),
                completed_at: None,
                duration_ms: None,
            };
            let update = ThreadUpdate {
                updated_at: Some(now),
                ..ThreadUpdate::default()
            };
            // As for `turn/start`: an owed end of the previous turn is written first.
            self.settle_owed_end(&thread, &*store)
                .await
                .map_err(store_error)?;
            let record = store
                .begin_turn(&thread.id, &turn, ItemTimes::default(), &update)
                .await
                .map_err(store_error)?;
            thread.state().record = record;
            Ok((thread, turn, store))
        }
        .await;
        let (thread, mut turn, store) = match result {
            Ok(started) => started,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        let active = Arc::new(ActiveTurn {
            id: turn.id.clone(),
            cancel: CancellationToken::new(),
            // The turn takes no input: `turn/start` waits for it to end, `turn/steer` finds
            // no turn to steer.
            steered: Mutex::new(SteerQueue {
                inputs: Vec::new(),
                closed: true,
            }),
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
        self.outgoing
            .send_response_and_wait(id, EmptyResponse {})
            .await;
        turn.items_view = TurnItemsView::NotLoaded;
        let started = StartedTurn {
            turn,
            work: work.work,
            store,
        };
        (self.run_turn.start)(Arc::clone(self), thread, active, started);
    }
}

/// A turn without input, for [`ThreadService::start_inputless_turn`].
pub(super) struct InputlessTurn {
    /// What the turn does.
    pub(super) work: TurnWork,
    /// What the refusal while another turn runs says the caller was doing ("compacting").
    pub(super) doing: &'static str,
    /// Whether the thread's whole history must be loaded first.
    pub(super) needs_history: bool,
}

impl ThreadService {
    /// Cuts the stored history of `thread_id` before `turn_id` and brings a loaded thread's
    /// live history (and compaction) in line; returns the updated record.
    async fn cut_history(
        &self,
        thread_id: &str,
        store: &dyn ThreadStore,
        turn_id: &str,
    ) -> Result<ThreadRecord, JSONRPCErrorError> {
        let update = ThreadUpdate {
            updated_at: Some(now_secs()),
            ..ThreadUpdate::default()
        };
        let record = store
            .truncate_turns(thread_id, turn_id, &update)
            .await
            .map_err(store_error)?;
        if let Some(thread) = self.loaded(thread_id) {
            let kept = {
                let mut state = thread.state();
                state.record = record.clone();
                let history = std::mem::take(&mut state.history);
                state.history =
                    store::history_before(thread_id, history, turn_id).unwrap_or_default();
                state.history.len()
            };
            tracing::debug!(thread = %thread_id, kept, "history cut");
            self.load_compaction(&thread, store).await?;
        }
        Ok(record)
    }

    pub(super) async fn revert(&self, params: ThreadRevertParams, id: ConnectionRequestId) {
        let caller = id.connection_id;
        let thread_id = params.thread_id.clone();
        let result = async {
            let (store, record) = self.find_unarchived(&thread_id).await?;
            self.ensure_no_running_turn(&thread_id, "reverting")?;
            let file_restore = match params.restore_files {
                Some(true) => {
                    self.restore_files(&record, &store, &params.before_turn_id)
                        .await?
                }
                _ => FileRestoreResult::default(),
            };
            let record = self
                .cut_history(&thread_id, store.as_ref(), &params.before_turn_id)
                .await?;
            let thread = match self.loaded(&thread_id) {
                Some(thread) => thread.to_thread(false, self.default_model().as_deref()),
                None => self.unloaded_thread(&record, Vec::new()),
            };
            Ok((thread, file_restore))
        }
        .await;
        let (thread, file_restore) = match result {
            Ok(answer) => answer,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        let response = ThreadRevertResponse {
            thread,
            turns_backwards_cursor: None,
            items_backwards_cursor: None,
            file_restore,
        };
        self.outgoing.send_response_and_wait(id, response).await;
        let note = ServerNotification::ThreadReverted(ThreadRevertedNotification {
            thread_id: thread_id.clone(),
        });
        match self.loaded(&thread_id) {
            Some(thread) => thread.notify(&self.outgoing, note, Some(caller)).await,
            None => self.outgoing.send_notification(caller, note).await,
        }
    }

    pub(super) async fn rollback(
        &self,
        params: ThreadRollbackParams,
    ) -> Result<ThreadRollbackResponse, JSONRPCErrorError> {
        let thread_id = params.thread_id;
        if params.num_turns == 0 {
            return Err(JSONRPCErrorError::invalid_request(
                "numTurns must be at least 1",
            ));
        }
        let (store, stored) = self.find_unarchived(&thread_id).await?;
        self.ensure_no_running_turn(&thread_id, "rolling back")?;
        let (record, history) = store
            .get_thread_with_turns(&thread_id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| not_found(&thread_id))?;
        let drop = usize::try_from(params.num_turns).unwrap_or(usize::MAX);
        // Asking for more turns than there are drops them all, like the upstream rollback.
        let first_dropped = history.len().saturating_sub(drop);
        let mut file_restore = FileRestoreResult::default();
        if params.restore_files == Some(true) {
            file_restore = match history.get(first_dropped) {
                Some(turn) => self.restore_files(&stored, &store, &turn.id).await?,
                // No turn to drop: nothing to restore.
                None => FileRestoreResult {
                    restored_files: Some(Vec::new()),
                    skipped_files: Some(Vec::new()),
                    unrestorable_turns: Some(Vec::new()),
                },
            };
        }
        let (record, kept) = match history.get(first_dropped) {
            None => (record, history),
            Some(turn) => {
                let turn_id = turn.id.clone();
                let record = self
                    .cut_history(&thread_id, store.as_ref(), &turn_id)
                    .await?;
                let mut history = history;
                history.truncate(first_dropped);
                (record, history)
            }
        };
        let thread = match self.loaded(&thread_id) {
            Some(thread) => thread.to_thread(true, self.default_model().as_deref()),
            None => self.unloaded_thread(&record, kept),
        };
        Ok(ThreadRollbackResponse {
            thread,
            file_restore,
        })
    }
}
