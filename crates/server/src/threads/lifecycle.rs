//! Loading, subscribing and unloading threads: the subscriber set and the idle-unload
//! countdown of docs/protocol.md section 9.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use tandem_host::ConnectionId;
use tandem_protocol::{
    ThreadClosedNotification, ThreadStatus, ThreadStatusChangedNotification,
    ThreadUnsubscribeResponse, ThreadUnsubscribeStatus, Turn,
};
use tokio_util::sync::CancellationToken;

use crate::process::ProcessManager;
use crate::store::{ThreadRecord, ThreadStore};

use super::{LoadedThread, ThreadService, ThreadState, lock};

impl ThreadService {
    // -----------------------------------------------------------------------------------------
    // Loading, subscribing, unloading
    // -----------------------------------------------------------------------------------------

    /// Makes `record` a loaded thread with `history` and `status`.
    pub(super) fn insert_loaded(
        &self,
        record: ThreadRecord,
        history: Vec<Turn>,
        status: ThreadStatus,
    ) -> Arc<LoadedThread> {
        let thread = self.insert_loaded_without_history(record, status);
        let mut state = thread.state();
        state.history = history;
        state.history_loaded = true;
        drop(state);
        thread
    }

    /// Makes `record` a loaded thread with `status` whose history stays in the store until
    /// [`ThreadService::ensure_history`] loads it.
    pub(super) fn insert_loaded_without_history(
        &self,
        record: ThreadRecord,
        status: ThreadStatus,
    ) -> Arc<LoadedThread> {
        let thread = Arc::new(LoadedThread {
            id: record.id.clone(),
            stream: Arc::from(record.id.as_str()),
            ephemeral: record.ephemeral,
            state: Mutex::new(ThreadState {
                record,
                history: Vec::new(),
                history_loaded: false,
                compaction: None,
                status,
                subscribers: BTreeSet::new(),
                active: None,
                unload_generation: 0,
                counting_down: false,
                owed_end: None,
            }),
            token_usage: Mutex::new(Default::default()),
            approved_for_session: Mutex::new(Default::default()),
        });
        lock(&self.loaded).insert(thread.id.clone(), Arc::clone(&thread));
        thread
    }

    fn subscribe(self: &Arc<Self>, thread: &Arc<LoadedThread>, connection: ConnectionId) {
        let mut state = thread.state();
        state.subscribers.insert(connection);
        self.update_unload(thread, &mut state);
    }

    /// Subscribes `connection` to `thread` and attaches it to the thread's event stream in the
    /// host; with `cursor`, the host first replays every event after it that is still in the
    /// window, or reports a gap (docs/protocol.md, "Cursors and replay"). `None` only while the
    /// host stops.
    ///
    /// Everything a new or returning subscriber must be sent before live events belongs here,
    /// after the attachment (the replay is queued by then): pending server requests of the
    /// thread are re-sent to it from this point.
    pub(super) async fn attach_subscriber(
        self: &Arc<Self>,
        thread: &Arc<LoadedThread>,
        connection: ConnectionId,
        cursor: Option<tandem_protocol::EventCursor>,
    ) -> Option<tandem_host::StreamAttachment> {
        self.subscribe(thread, connection);
        self.outgoing
            .attach_stream(&thread.id, connection, cursor)
            .await
    }

    pub(super) async fn unsubscribe(
        self: &Arc<Self>,
        thread_id: &str,
        connection: ConnectionId,
    ) -> ThreadUnsubscribeResponse {
        let status = match self.loaded(thread_id) {
            None => ThreadUnsubscribeStatus::NotLoaded,
            Some(thread) => {
                let removed = {
                    let mut state = thread.state();
                    let removed = state.subscribers.remove(&connection);
                    if removed {
                        self.update_unload(&thread, &mut state);
                    }
                    removed
                };
                if removed {
                    self.outgoing.detach_stream(thread_id, connection).await;
                    self.outgoing.leave_requests(thread_id, connection);
                    ThreadUnsubscribeStatus::Unsubscribed
                } else {
                    ThreadUnsubscribeStatus::NotSubscribed
                }
            }
        };
        ThreadUnsubscribeResponse { status }
    }

    /// Sends `connection`, which has just resumed `thread_id` (after the resume reply), the
    /// thread's server requests still waiting for an answer, and lets it answer them.
    pub(super) async fn resend_pending_requests(&self, thread_id: &str, connection: ConnectionId) {
        let sent = self.outgoing.join_requests(thread_id, connection).await;
        if sent > 0 {
            tracing::debug!(thread = %thread_id, %connection, sent, "pending server requests sent again");
        }
    }

    /// Drops `connection` from every thread it subscribed to (the connection is gone). On a
    /// store shared with other servers, a thread left without subscribers and turn unloads
    /// (and gives its writer lease back) at once, so that another server can take it.
    pub(crate) fn connection_closed(self: &Arc<Self>, connection: ConnectionId) {
        let threads: Vec<Arc<LoadedThread>> = lock(&self.loaded).values().cloned().collect();
        let shared = self.shared_store();
        for thread in threads {
            let mut state = thread.state();
            if state.subscribers.remove(&connection) {
                self.update_unload(&thread, &mut state);
                if shared && state.counting_down && !thread.ephemeral {
                    let generation = state.unload_generation;
                    drop(state);
                    let unload = Arc::clone(self);
                    let thread = Arc::clone(&thread);
                    self.sequenced(&thread.id.clone(), async move {
                        unload.unload_if_current(&thread, generation).await;
                    });
                }
            }
        }
    }

    /// Starts or cancels the idle-unload countdown after a change of subscribers or of the
    /// active turn (docs/protocol.md section 9): it runs exactly while the thread has neither, and
    /// each start is a fresh countdown.
    pub(crate) fn update_unload(
        self: &Arc<Self>,
        thread: &Arc<LoadedThread>,
        state: &mut ThreadState,
    ) {
        let idle = state.subscribers.is_empty() && state.active.is_none();
        if idle == state.counting_down {
            return;
        }
        state.counting_down = idle;
        state.unload_generation += 1;
        if !idle {
            return;
        }
        let generation = state.unload_generation;
        let delay = self.config().thread_unload_delay;
        let service = Arc::clone(self);
        let thread = Arc::clone(thread);
        let stopping = self.stopping.clone();
        tokio::spawn(async move {
            // The delay was validated at config load, so the deadline cannot overflow.
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = stopping.cancelled() => return,
            }
            let id = thread.id.clone();
            let unload = Arc::clone(&service);
            service.sequenced(&id, async move {
                unload.unload_if_current(&thread, generation).await;
            });
        });
    }

    pub(super) async fn unload_if_current(&self, thread: &Arc<LoadedThread>, generation: u64) {
        {
            let state = thread.state();
            if !state.counting_down || state.unload_generation != generation {
                return;
            }
            let mut loaded = lock(&self.loaded);
            if !loaded
                .get(&thread.id)
                .is_some_and(|current| Arc::ptr_eq(current, thread))
            {
                return;
            }
            loaded.remove(&thread.id);
        }
        tracing::debug!(thread = %thread.id, "unloading idle thread");
        self.release_lease(thread).await;
        self.after_unload(thread).await;
    }

    /// Discards an ephemeral thread's state and announces the unload to every connection.
    pub(super) async fn after_unload(&self, thread: &LoadedThread) {
        // Its replay window goes with it: a client that resumes later gets a gap and the
        // stored thread.
        self.outgoing.close_stream(&thread.id).await;
        if thread.ephemeral
            && let Err(error) = self.ephemeral.delete_thread(&thread.id).await
        {
            tracing::warn!(thread = %thread.id, %error, "cannot discard ephemeral thread");
        }
        thread.state().status = ThreadStatus::NotLoaded;
        let status = tandem_protocol::ServerNotification::ThreadStatusChanged(
            ThreadStatusChangedNotification {
                thread_id: thread.id.clone(),
                status: ThreadStatus::NotLoaded,
            },
        );
        self.outgoing.broadcast_notification(status).await;
        let closed = tandem_protocol::ServerNotification::ThreadClosed(ThreadClosedNotification {
            thread_id: thread.id.clone(),
        });
        self.outgoing.broadcast_notification(closed).await;
    }

    /// Stops every running turn (the host is shutting down) and returns, per turn, its
    /// commands (for the caller to kill and reap: the turn may not get to it before the
    /// process exits) and the token that is cancelled once its interrupted state is stored
    /// and its `turn/completed` queued.
    pub(crate) fn shutdown(&self) -> Vec<(ProcessManager, CancellationToken)> {
        self.stopping.cancel();
        let mut turns = Vec::new();
        // Copied out first: `loaded` is never held while a thread's state is taken (the lock
        // order on `ThreadService::loaded`).
        let threads: Vec<Arc<LoadedThread>> = lock(&self.loaded).values().cloned().collect();
        for thread in threads {
            if let Some(active) = &thread.state().active {
                active.cancel.cancel();
                turns.push((active.processes.clone(), active.ended.clone()));
            }
        }
        turns
    }

    /// Whether the host is shutting down (see [`ThreadService::shutdown`]).
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.is_cancelled()
    }

    /// Moves everything the durable store wrote into its main file (see
    /// [`ThreadStore::checkpoint`]); nothing to do if it was never opened.
    pub(crate) async fn checkpoint(&self) {
        if let Some(store) = self.durable.get()
            && let Err(error) = store.checkpoint().await
        {
            tracing::warn!(%error, "cannot checkpoint the thread store at shutdown");
        }
    }
}
