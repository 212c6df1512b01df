//! Threads (protocol.md sections 4, 6, 7 and 9): which threads are loaded, who is subscribed,
//! the idle-unload countdown, and the `thread/*` and `turn/*` request handlers.
//!
//! The processor task only decides and spawns: every handler runs on a task of its own, so a
//! slow store, a client that does not drain its events or a turn waiting on a server request
//! never holds up the next request (`process/kill` must stay answerable). Requests about one
//! thread still take effect in arrival order: each is queued behind the previous one for the
//! same thread id ([`ThreadService::sequenced`]), and so are the idle unload and the end of a
//! turn, so an unload can never overtake a resume that arrived first.
//!
//! Thread state sits behind short `std` mutexes that are never held across an `await`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tandem_host::{ConnectionId, ConnectionRequestId, OutgoingMessageSender, RequestContext};
use tandem_protocol::{
    ApprovalPolicy, ClientRequest, CwdFilter, EmptyResponse, JSONRPCErrorError, SessionSettings,
    SortDirection, Thread, ThreadAttachment, ThreadAttachmentAddOutcome, ThreadAttachmentAddParams,
    ThreadAttachmentOperation, ThreadAttachmentRemoveParams, ThreadAttachmentUpdatedNotification,
    ThreadClosedNotification, ThreadDeleteParams, ThreadDeletedNotification, ThreadForkParams,
    ThreadForkResponse, ThreadListParams, ThreadListResponse, ThreadLoadedListParams,
    ThreadLoadedListResponse, ThreadNameSetParams, ThreadNameUpdatedNotification, ThreadOverrides,
    ThreadReadParams, ThreadReadResponse, ThreadResumeParams, ThreadResumeResponse,
    ThreadStartParams, ThreadStartResponse, ThreadStartedNotification, ThreadStatus,
    ThreadStatusChangedNotification, ThreadTurnsListParams, ThreadTurnsListResponse,
    ThreadUnsubscribeResponse, ThreadUnsubscribeStatus, Turn, TurnInterruptParams, TurnItemsView,
    TurnStartParams, TurnStartResponse, TurnStatus, TurnSteerParams, TurnSteerResponse, UserInput,
};
use tokio::sync::{OnceCell, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::config::ServerConfig;
use crate::server::SERVER_VERSION;
use crate::store::{
    self, InMemoryThreadStore, SqliteThreadStore, StoreError, ThreadListQuery, ThreadRecord,
    ThreadStore, ThreadUpdate, TurnListQuery,
};
use crate::turn;

/// The model reported for threads that name none: the scripted agent has no model.
pub const DEFAULT_MODEL: &str = "scripted";

/// The model provider reported for every thread.
pub const MODEL_PROVIDER: &str = "tandem";

/// Unix seconds now.
pub(crate) fn now_secs() -> i64 {
    now_millis() / 1000
}

/// Unix milliseconds now.
pub(crate) fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is a handful of assignments that cannot panic halfway through a
    // multi-step update, so a poisoned lock still guards consistent data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn store_error(error: StoreError) -> JSONRPCErrorError {
    match error {
        StoreError::ThreadNotFound(_)
        | StoreError::TurnNotFound { .. }
        | StoreError::InvalidCursor(_) => JSONRPCErrorError::invalid_request(error.to_string()),
        other => {
            tracing::warn!(error = %other, "thread store operation failed");
            JSONRPCErrorError::internal(other.to_string())
        }
    }
}

fn not_found(thread_id: &str) -> JSONRPCErrorError {
    JSONRPCErrorError::invalid_request(format!("thread not found: {thread_id}"))
}

/// A thread that is loaded in this server.
pub(crate) struct LoadedThread {
    pub(crate) id: String,
    pub(crate) ephemeral: bool,
    pub(crate) state: Mutex<ThreadState>,
}

/// The live state of a loaded thread.
pub(crate) struct ThreadState {
    pub(crate) record: ThreadRecord,
    /// Completed turns, oldest first (what the agent sees as history).
    pub(crate) history: Vec<Turn>,
    pub(crate) status: ThreadStatus,
    pub(crate) subscribers: BTreeSet<ConnectionId>,
    pub(crate) active: Option<Arc<ActiveTurn>>,
    /// Bumped whenever a countdown starts or is cancelled; a timer only unloads if the
    /// generation it was started with is still current.
    unload_generation: u64,
    counting_down: bool,
}

/// What `turn/steer` and `turn/interrupt` share with the running turn.
pub(crate) struct ActiveTurn {
    pub(crate) id: String,
    /// Where the turn's server requests go: the connection that started it (even after it
    /// unsubscribed), since that is the client driving the turn.
    pub(crate) connection: ConnectionId,
    pub(crate) cancel: CancellationToken,
    /// Steered input not yet taken by the agent.
    pub(crate) steered: Mutex<SteerQueue>,
    /// Signalled when input is steered, so a waiting agent wakes up.
    pub(crate) steer_signal: tokio::sync::Notify,
    /// `turn/interrupt` requests to answer once the turn has stopped.
    pub(crate) interrupt_replies: Mutex<Vec<ConnectionRequestId>>,
    /// The turn as it stands (items so far), for `thread/read` and `thread/resume`.
    pub(crate) snapshot: Mutex<Turn>,
}

/// Input steered into a running turn, and whether the turn still takes any.
#[derive(Default)]
pub(crate) struct SteerQueue {
    /// Each steered input with its `clientUserMessageId`, oldest first.
    pub(crate) inputs: Vec<(Vec<UserInput>, Option<String>)>,
    /// Set by the turn task, under this lock, once its agent is done and nothing is left
    /// queued: from then on input is refused rather than accepted and silently dropped.
    pub(crate) closed: bool,
}

impl LoadedThread {
    pub(crate) fn state(&self) -> MutexGuard<'_, ThreadState> {
        lock(&self.state)
    }

    pub(crate) fn subscribers(&self) -> Vec<ConnectionId> {
        self.state().subscribers.iter().copied().collect()
    }

    /// Sends `note` to every subscriber, and to `extra` if it is not one.
    pub(crate) async fn notify(
        &self,
        outgoing: &OutgoingMessageSender,
        note: tandem_protocol::ServerNotification,
        extra: Option<ConnectionId>,
    ) {
        let mut targets = self.subscribers();
        if let Some(extra) = extra.filter(|extra| !targets.contains(extra)) {
            targets.push(extra);
        }
        for connection in targets {
            outgoing.send_notification(connection, note.clone()).await;
        }
    }

    /// Sets the live status and tells the subscribers.
    pub(crate) async fn set_status(&self, outgoing: &OutgoingMessageSender, status: ThreadStatus) {
        self.state().status = status.clone();
        let note = tandem_protocol::ServerNotification::ThreadStatusChanged(
            ThreadStatusChangedNotification {
                thread_id: self.id.clone(),
                status,
            },
        );
        self.notify(outgoing, note, None).await;
    }

    /// The protocol thread with the live status; turns included on request (completed turns
    /// plus the running one).
    fn to_thread(&self, include_turns: bool) -> Thread {
        let state = self.state();
        let turns = if include_turns {
            let mut turns = state.history.clone();
            if let Some(active) = &state.active {
                turns.push(lock(&active.snapshot).clone());
            }
            turns
        } else {
            Vec::new()
        };
        let mut thread = state.record.to_thread(turns);
        thread.status = state.status.clone();
        thread
    }

    fn session(&self) -> SessionSettings {
        session_of(&self.state().record)
    }
}

fn session_of(record: &ThreadRecord) -> SessionSettings {
    SessionSettings::new(
        record
            .model
            .clone()
            .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
        record.model_provider.clone(),
        record.cwd.clone(),
        record.approval_policy,
    )
}

/// Per-thread-id FIFO of handler tasks.
#[derive(Default)]
struct Sequencer {
    next_ticket: u64,
    /// Per thread id, the ticket and completion signal of its most recently queued task.
    tails: HashMap<String, (u64, oneshot::Receiver<()>)>,
}

/// Everything about threads: the stores, the loaded set and the handlers.
pub(crate) struct ThreadService {
    pub(crate) outgoing: OutgoingMessageSender,
    config: ServerConfig,
    durable: OnceCell<Arc<dyn ThreadStore>>,
    ephemeral: Arc<InMemoryThreadStore>,
    pub(crate) agent: Arc<dyn Agent>,
    loaded: Mutex<BTreeMap<String, Arc<LoadedThread>>>,
    sequencer: Mutex<Sequencer>,
}

impl ThreadService {
    pub(crate) fn new(
        outgoing: OutgoingMessageSender,
        config: ServerConfig,
        store: Option<Arc<dyn ThreadStore>>,
        agent: Arc<dyn Agent>,
    ) -> Self {
        let durable = OnceCell::new_with(store);
        Self {
            outgoing,
            config,
            durable,
            ephemeral: Arc::new(InMemoryThreadStore::new()),
            agent,
            loaded: Mutex::new(BTreeMap::new()),
            sequencer: Mutex::new(Sequencer::default()),
        }
    }

    /// The store of persisted threads, opened on first use.
    async fn durable(&self) -> Result<Arc<dyn ThreadStore>, JSONRPCErrorError> {
        let home = self.config.tandem_home.clone();
        self.durable
            .get_or_try_init(|| async move {
                let store = SqliteThreadStore::open(home).await?;
                Ok::<_, StoreError>(Arc::new(store) as Arc<dyn ThreadStore>)
            })
            .await
            .cloned()
            .map_err(|error| {
                tracing::error!(%error, "cannot open the thread store");
                JSONRPCErrorError::internal(error.to_string())
            })
    }

    pub(crate) async fn store_for(
        &self,
        ephemeral: bool,
    ) -> Result<Arc<dyn ThreadStore>, JSONRPCErrorError> {
        if ephemeral {
            Ok(Arc::clone(&self.ephemeral) as Arc<dyn ThreadStore>)
        } else {
            self.durable().await
        }
    }

    /// The store holding `thread_id` and its record, whether loaded or not.
    async fn find(
        &self,
        thread_id: &str,
    ) -> Result<Option<(Arc<dyn ThreadStore>, ThreadRecord)>, JSONRPCErrorError> {
        if let Some(record) = self
            .ephemeral
            .get_thread(thread_id)
            .await
            .map_err(store_error)?
        {
            return Ok(Some((Arc::clone(&self.ephemeral) as _, record)));
        }
        let durable = self.durable().await?;
        Ok(durable
            .get_thread(thread_id)
            .await
            .map_err(store_error)?
            .map(|record| (durable, record)))
    }

    pub(crate) fn loaded(&self, thread_id: &str) -> Option<Arc<LoadedThread>> {
        lock(&self.loaded).get(thread_id).cloned()
    }

    /// Runs `task` on a task of its own once every earlier task for `thread_id` finished.
    pub(crate) fn sequenced<F>(self: &Arc<Self>, thread_id: &str, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let (done, done_signal) = oneshot::channel::<()>();
        let (ticket, previous) = {
            let mut order = lock(&self.sequencer);
            let ticket = order.next_ticket;
            order.next_ticket += 1;
            let previous = order
                .tails
                .insert(thread_id.to_owned(), (ticket, done_signal));
            (ticket, previous.map(|(_, signal)| signal))
        };
        let service = Arc::clone(self);
        let thread_id = thread_id.to_owned();
        tokio::spawn(async move {
            if let Some(previous) = previous {
                // Resolves when the previous task finished or was dropped.
                let _ = previous.await;
            }
            task.await;
            drop(done);
            let mut order = lock(&service.sequencer);
            if order
                .tails
                .get(&thread_id)
                .is_some_and(|(last, _)| *last == ticket)
            {
                order.tails.remove(&thread_id);
            }
        });
    }

    async fn reply<T: Serialize>(
        &self,
        id: ConnectionRequestId,
        result: Result<T, JSONRPCErrorError>,
    ) {
        match result {
            Ok(value) => self.outgoing.send_response(id, value).await,
            Err(error) => self.outgoing.send_error(id, error).await,
        }
    }

    /// Handles a `thread/*`, `turn/*` or `config/read` request; returns it back if it is
    /// none of those.
    pub(crate) fn handle(
        self: &Arc<Self>,
        request: ClientRequest,
        context: RequestContext,
    ) -> Option<(ClientRequest, RequestContext)> {
        let service = Arc::clone(self);
        let id = context.id.clone();
        macro_rules! unordered {
            ($body:expr) => {{
                tokio::spawn(async move {
                    let result = $body;
                    service.reply(id, result).await;
                });
            }};
        }
        macro_rules! ordered {
            ($thread:expr, $body:expr) => {{
                let thread_id = $thread.clone();
                self.sequenced(&thread_id, async move {
                    let result = $body;
                    service.reply(id, result).await;
                });
            }};
        }
        match request {
            ClientRequest::ConfigRead { .. } => {
                unordered!(Ok::<_, JSONRPCErrorError>(
                    service.config.config_read_response()
                ))
            }
            ClientRequest::ThreadStart { params, .. } => {
                unordered!(service.start(params, &context).await)
            }
            ClientRequest::ThreadResume { params, .. } => {
                ordered!(params.thread_id, service.resume(params, &context).await)
            }
            ClientRequest::ThreadRead { params, .. } => {
                ordered!(params.thread_id, service.read(params).await)
            }
            ClientRequest::ThreadList { params, .. } => unordered!(service.list(params).await),
            ClientRequest::ThreadLoadedList { params, .. } => {
                unordered!(service.loaded_list(params))
            }
            ClientRequest::ThreadTurnsList { params, .. } => {
                ordered!(params.thread_id, service.turns_list(params).await)
            }
            ClientRequest::ThreadUnsubscribe { params, .. } => {
                ordered!(
                    params.thread_id,
                    Ok::<_, JSONRPCErrorError>(
                        service.unsubscribe(&params.thread_id, id.connection_id)
                    )
                )
            }
            ClientRequest::ThreadNameSet { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&thread_id, async move {
                    service.name_set(params, id).await;
                });
            }
            ClientRequest::ThreadFork { params, .. } => {
                ordered!(params.thread_id, service.fork(params, &context).await)
            }
            ClientRequest::ThreadDelete { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&thread_id, async move {
                    service.delete(params, id).await;
                });
            }
            ClientRequest::ThreadAttachmentAdd { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&thread_id, async move {
                    service.attachment_add(params, id).await;
                });
            }
            ClientRequest::ThreadAttachmentRemove { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&thread_id, async move {
                    service.attachment_remove(params, id).await;
                });
            }
            ClientRequest::TurnStart { params, .. } => self.queue_turn_start(params, id),
            ClientRequest::TurnSteer { params, .. } => {
                ordered!(params.thread_id, service.turn_steer(params))
            }
            ClientRequest::TurnInterrupt { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&thread_id, async move {
                    if let Err(error) = service.turn_interrupt(params, id.clone()) {
                        service.outgoing.send_error(id, error).await;
                    }
                });
            }
            other => return Some((other, context)),
        }
        None
    }

    // -----------------------------------------------------------------------------------------
    // Loading, subscribing, unloading
    // -----------------------------------------------------------------------------------------

    /// Makes `record` a loaded thread with `history` and `status`.
    fn insert_loaded(
        &self,
        record: ThreadRecord,
        history: Vec<Turn>,
        status: ThreadStatus,
    ) -> Arc<LoadedThread> {
        let thread = Arc::new(LoadedThread {
            id: record.id.clone(),
            ephemeral: record.ephemeral,
            state: Mutex::new(ThreadState {
                record,
                history,
                status,
                subscribers: BTreeSet::new(),
                active: None,
                unload_generation: 0,
                counting_down: false,
            }),
        });
        lock(&self.loaded).insert(thread.id.clone(), Arc::clone(&thread));
        thread
    }

    fn subscribe(self: &Arc<Self>, thread: &Arc<LoadedThread>, connection: ConnectionId) {
        let mut state = thread.state();
        state.subscribers.insert(connection);
        self.update_unload(thread, &mut state);
    }

    fn unsubscribe(
        self: &Arc<Self>,
        thread_id: &str,
        connection: ConnectionId,
    ) -> ThreadUnsubscribeResponse {
        let status = match self.loaded(thread_id) {
            None => ThreadUnsubscribeStatus::NotLoaded,
            Some(thread) => {
                let mut state = thread.state();
                if state.subscribers.remove(&connection) {
                    self.update_unload(&thread, &mut state);
                    ThreadUnsubscribeStatus::Unsubscribed
                } else {
                    ThreadUnsubscribeStatus::NotSubscribed
                }
            }
        };
        ThreadUnsubscribeResponse { status }
    }

    /// Drops `connection` from every thread it subscribed to (the connection is gone).
    pub(crate) fn connection_closed(self: &Arc<Self>, connection: ConnectionId) {
        let threads: Vec<Arc<LoadedThread>> = lock(&self.loaded).values().cloned().collect();
        for thread in threads {
            let mut state = thread.state();
            if state.subscribers.remove(&connection) {
                self.update_unload(&thread, &mut state);
            }
        }
    }

    /// Starts or cancels the idle-unload countdown after a change of subscribers or of the
    /// active turn (protocol.md section 9): it runs exactly while the thread has neither, and
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
        let delay = self.config.thread_unload_delay;
        let service = Arc::clone(self);
        let thread = Arc::clone(thread);
        tokio::spawn(async move {
            // The delay was validated at config load, so the deadline cannot overflow.
            tokio::time::sleep(delay).await;
            let id = thread.id.clone();
            let unload = Arc::clone(&service);
            service.sequenced(&id, async move {
                unload.unload_if_current(&thread, generation).await;
            });
        });
    }

    async fn unload_if_current(&self, thread: &Arc<LoadedThread>, generation: u64) {
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
        self.after_unload(thread).await;
    }

    /// Discards an ephemeral thread's state and announces the unload to every connection.
    async fn after_unload(&self, thread: &LoadedThread) {
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

    /// Stops every running turn (the host is shutting down).
    pub(crate) fn shutdown(&self) {
        for thread in lock(&self.loaded).values() {
            if let Some(active) = &thread.state().active {
                active.cancel.cancel();
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // thread/*
    // -----------------------------------------------------------------------------------------

    async fn start(
        self: &Arc<Self>,
        params: ThreadStartParams,
        context: &RequestContext,
    ) -> Result<ThreadStartResponse, JSONRPCErrorError> {
        let now = now_secs();
        let ephemeral = params.ephemeral.unwrap_or(false);
        let mut record = ThreadRecord {
            id: store::new_id(),
            name: None,
            preview: String::new(),
            ephemeral,
            created_at: now,
            updated_at: now,
            status: ThreadStatus::Idle,
            cwd: default_cwd()?,
            source: context.session.session_source.clone(),
            forked_from_id: None,
            model: None,
            model_provider: MODEL_PROVIDER.to_owned(),
            cli_version: SERVER_VERSION.to_owned(),
            approval_policy: ApprovalPolicy::OnRequest,
            dynamic_tools: params.dynamic_tools.unwrap_or_default(),
            config: Default::default(),
        };
        overrides_update(&params.overrides)?.apply(&mut record);
        let store = self.store_for(ephemeral).await?;
        store
            .create_thread(&record, &[])
            .await
            .map_err(store_error)?;
        let thread = self.insert_loaded(record, Vec::new(), ThreadStatus::Idle);
        self.subscribe(&thread, context.id.connection_id);
        Ok(self.announce_started(&thread).await)
    }

    /// Broadcasts `thread/started` and returns the start/fork response; the notification is
    /// sent from a task of its own after the caller's reply was queued (the reply is sent by
    /// the caller right after this returns, and the router keeps that order).
    async fn announce_started(&self, thread: &Arc<LoadedThread>) -> ThreadStartResponse {
        let response = ThreadStartResponse {
            thread: thread.to_thread(true),
            session: thread.session(),
        };
        let note = tandem_protocol::ServerNotification::ThreadStarted(ThreadStartedNotification {
            thread: thread.to_thread(false),
        });
        let outgoing = self.outgoing.clone();
        // Spawned so that the reply, queued by the caller right after this returns, is not
        // held behind a notification for every connection; best-effort ordering is enough
        // for `thread/started` (it is best effort itself).
        tokio::spawn(async move { outgoing.broadcast_notification(note).await });
        response
    }

    async fn resume(
        self: &Arc<Self>,
        params: ThreadResumeParams,
        context: &RequestContext,
    ) -> Result<ThreadResumeResponse, JSONRPCErrorError> {
        let thread = match self.loaded(&params.thread_id) {
            Some(thread) => thread,
            None => {
                let (store, _) = self
                    .find(&params.thread_id)
                    .await?
                    .ok_or_else(|| not_found(&params.thread_id))?;
                let (record, turns) = store
                    .get_thread_with_turns(&params.thread_id)
                    .await
                    .map_err(store_error)?
                    .ok_or_else(|| not_found(&params.thread_id))?;
                let status = match record.status {
                    ThreadStatus::SystemError => ThreadStatus::SystemError,
                    _ => ThreadStatus::Idle,
                };
                self.insert_loaded(record, turns, status)
            }
        };
        let update = overrides_update(&params.overrides)?;
        if update != ThreadUpdate::default() {
            let store = self.store_for(thread.ephemeral).await?;
            let record = store
                .update_thread(&thread.id, &update)
                .await
                .map_err(store_error)?;
            thread.state().record = record;
        }
        self.subscribe(&thread, context.id.connection_id);
        Ok(ThreadResumeResponse {
            thread: thread.to_thread(!params.exclude_turns.unwrap_or(false)),
            session: thread.session(),
        })
    }

    async fn read(
        &self,
        params: ThreadReadParams,
    ) -> Result<ThreadReadResponse, JSONRPCErrorError> {
        let include_turns = params.include_turns.unwrap_or(false);
        if let Some(thread) = self.loaded(&params.thread_id) {
            return Ok(ThreadReadResponse {
                thread: thread.to_thread(include_turns),
            });
        }
        let (store, record) = self
            .find(&params.thread_id)
            .await?
            .ok_or_else(|| not_found(&params.thread_id))?;
        let turns = if include_turns {
            store
                .get_thread_with_turns(&record.id)
                .await
                .map_err(store_error)?
                .map(|(_, turns)| turns)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut thread = record.to_thread(turns);
        thread.status = ThreadStatus::NotLoaded;
        Ok(ThreadReadResponse { thread })
    }

    async fn list(
        &self,
        params: ThreadListParams,
    ) -> Result<ThreadListResponse, JSONRPCErrorError> {
        // Tandem has no archive and no thread hierarchy: those filters match nothing.
        if params.archived == Some(true)
            || params.parent_thread_id.is_some()
            || params.ancestor_thread_id.is_some()
        {
            return Ok(ThreadListResponse {
                data: Vec::new(),
                next_cursor: None,
                backwards_cursor: None,
            });
        }
        let query = ThreadListQuery {
            cursor: params.cursor,
            limit: params
                .limit
                .map_or(store::DEFAULT_PAGE_LIMIT, |limit| limit as usize),
            direction: params.sort_direction.unwrap_or(SortDirection::Desc),
            source_kinds: params.source_kinds.unwrap_or_default(),
            cwds: match params.cwd {
                None => Vec::new(),
                Some(CwdFilter::One(cwd)) => vec![cwd],
                Some(CwdFilter::Many(cwds)) => cwds,
            },
            search_term: params.search_term,
        };
        let page = self
            .durable()
            .await?
            .list_threads(&query)
            .await
            .map_err(store_error)?;
        let data = page
            .data
            .into_iter()
            .map(|record| match self.loaded(&record.id) {
                Some(thread) => thread.to_thread(false),
                None => {
                    let mut thread = record.to_thread(Vec::new());
                    thread.status = ThreadStatus::NotLoaded;
                    thread
                }
            })
            .collect();
        Ok(ThreadListResponse {
            data,
            next_cursor: page.next_cursor,
            backwards_cursor: None,
        })
    }

    fn loaded_list(
        &self,
        params: ThreadLoadedListParams,
    ) -> Result<ThreadLoadedListResponse, JSONRPCErrorError> {
        if let Some(cursor) = &params.cursor
            && uuid::Uuid::parse_str(cursor).is_err()
        {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "invalid cursor: {cursor}"
            )));
        }
        let limit = params
            .limit
            .map_or(store::DEFAULT_PAGE_LIMIT, |limit| limit as usize)
            .max(1);
        let loaded = lock(&self.loaded);
        let mut ids = loaded
            .keys()
            .filter(|id| params.cursor.as_ref().is_none_or(|cursor| *id > cursor))
            .cloned();
        let data: Vec<String> = ids.by_ref().take(limit).collect();
        let next_cursor = if ids.next().is_some() {
            data.last().cloned()
        } else {
            None
        };
        Ok(ThreadLoadedListResponse { data, next_cursor })
    }

    async fn turns_list(
        &self,
        params: ThreadTurnsListParams,
    ) -> Result<ThreadTurnsListResponse, JSONRPCErrorError> {
        let (store, _) = self
            .find(&params.thread_id)
            .await?
            .ok_or_else(|| not_found(&params.thread_id))?;
        let query = TurnListQuery {
            cursor: params.cursor,
            limit: params
                .limit
                .map_or(store::DEFAULT_PAGE_LIMIT, |limit| limit as usize),
            direction: params.sort_direction.unwrap_or(SortDirection::Desc),
        };
        let page = store
            .list_turns(&params.thread_id, &query)
            .await
            .map_err(store_error)?;
        Ok(ThreadTurnsListResponse {
            data: page.data,
            next_cursor: page.next_cursor,
            backwards_cursor: None,
        })
    }

    async fn name_set(&self, params: ThreadNameSetParams, id: ConnectionRequestId) {
        let name = params.name.trim().to_owned();
        let caller = id.connection_id;
        let result = async {
            if name.is_empty() {
                return Err(JSONRPCErrorError::invalid_request(
                    "thread name must not be empty",
                ));
            }
            let (store, _) = self
                .find(&params.thread_id)
                .await?
                .ok_or_else(|| not_found(&params.thread_id))?;
            let update = ThreadUpdate {
                name: Some(Some(name.clone())),
                updated_at: Some(now_secs()),
                ..ThreadUpdate::default()
            };
            store
                .update_thread(&params.thread_id, &update)
                .await
                .map_err(store_error)
        }
        .await;
        let record = match result {
            Ok(record) => record,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        let thread = self.loaded(&params.thread_id);
        if let Some(thread) = &thread {
            thread.state().record = record;
        }
        self.outgoing.send_response(id, EmptyResponse {}).await;
        let note =
            tandem_protocol::ServerNotification::ThreadNameUpdated(ThreadNameUpdatedNotification {
                thread_id: params.thread_id.clone(),
                thread_name: Some(name),
            });
        match thread {
            Some(thread) => thread.notify(&self.outgoing, note, Some(caller)).await,
            None => self.outgoing.send_notification(caller, note).await,
        }
    }

    async fn fork(
        self: &Arc<Self>,
        params: ThreadForkParams,
        context: &RequestContext,
    ) -> Result<ThreadForkResponse, JSONRPCErrorError> {
        let (source_store, source) = self
            .find(&params.thread_id)
            .await?
            .ok_or_else(|| not_found(&params.thread_id))?;
        if let (Some(last), Some(thread)) = (&params.last_turn_id, self.loaded(&source.id))
            && thread
                .state()
                .active
                .as_ref()
                .is_some_and(|active| &active.id == last)
        {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "turn {last} of thread {} is still running",
                source.id
            )));
        }
        let (_, history) = source_store
            .get_thread_with_turns(&source.id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| not_found(&source.id))?;
        let history = store::history_through(&source.id, history, params.last_turn_id.as_deref())
            .map_err(store_error)?;
        let ephemeral = params.ephemeral.unwrap_or(source.ephemeral);
        let mut record = source.forked(store::new_id(), now_secs());
        record.ephemeral = ephemeral;
        record.source = context.session.session_source.clone();
        overrides_update(&params.overrides)?.apply(&mut record);
        // The fork starts from a clean slate: the source's failure is not the fork's.
        record.status = ThreadStatus::Idle;
        self.store_for(ephemeral)
            .await?
            .create_thread(&record, &history)
            .await
            .map_err(store_error)?;
        let thread = self.insert_loaded(record, history, ThreadStatus::Idle);
        self.subscribe(&thread, context.id.connection_id);
        let mut response = self.announce_started(&thread).await;
        if params.exclude_turns.unwrap_or(false) {
            response.thread.turns.clear();
        }
        Ok(ThreadForkResponse {
            thread: response.thread,
            session: response.session,
        })
    }

    async fn delete(&self, params: ThreadDeleteParams, id: ConnectionRequestId) {
        let thread_id = params.thread_id;
        let found = match self.find(&thread_id).await {
            Ok(found) => found,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        let loaded = lock(&self.loaded).remove(&thread_id);
        let Some((store, _)) = found else {
            return self.outgoing.send_error(id, not_found(&thread_id)).await;
        };
        if let Some(thread) = &loaded {
            if let Some(active) = &thread.state().active {
                active.cancel.cancel();
            }
            self.after_unload(thread).await;
        }
        if let Err(error) = store.delete_thread(&thread_id).await {
            return self.outgoing.send_error(id, store_error(error)).await;
        }
        self.outgoing.send_response(id, EmptyResponse {}).await;
        let note = tandem_protocol::ServerNotification::ThreadDeleted(ThreadDeletedNotification {
            thread_id,
        });
        self.outgoing.broadcast_notification(note).await;
    }

    async fn attachment_add(&self, params: ThreadAttachmentAddParams, id: ConnectionRequestId) {
        let caller = id.connection_id;
        let result = async {
            if params.attachment_type.is_empty() {
                return Err(JSONRPCErrorError::invalid_params(
                    "attachmentType must not be empty",
                ));
            }
            if params.identity_key.is_empty() {
                return Err(JSONRPCErrorError::invalid_params(
                    "identityKey must not be empty",
                ));
            }
            let (store, _) = self.find(&params.thread_id).await?.ok_or_else(|| {
                JSONRPCErrorError::invalid_params(format!("thread not found: {}", params.thread_id))
            })?;
            let attachment = ThreadAttachment {
                id: store::new_id(),
                attachment_type: params.attachment_type.clone(),
                identity_key: params.identity_key.clone(),
                payload: params.payload.clone(),
                created_at: now_secs(),
            };
            store
                .add_attachment(&params.thread_id, &attachment)
                .await
                .map_err(store_error)
        }
        .await;
        let response = match result {
            Ok(response) => response,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        let created = response.outcome == ThreadAttachmentAddOutcome::Created;
        let attachment_id = response.attachment.id.clone();
        // The reply must reach the caller before the notification (protocol.md section 4).
        self.outgoing.send_response_and_wait(id, response).await;
        if created {
            self.attachment_updated(
                &params.thread_id,
                params.attachment_type,
                params.identity_key,
                attachment_id,
                ThreadAttachmentOperation::Created,
                caller,
            )
            .await;
        }
    }

    async fn attachment_remove(
        &self,
        params: ThreadAttachmentRemoveParams,
        id: ConnectionRequestId,
    ) {
        let caller = id.connection_id;
        let result = async {
            let (store, _) = self.find(&params.thread_id).await?.ok_or_else(|| {
                JSONRPCErrorError::invalid_params(format!("thread not found: {}", params.thread_id))
            })?;
            store
                .remove_attachment(
                    &params.thread_id,
                    &params.attachment_type,
                    &params.identity_key,
                )
                .await
                .map_err(store_error)
        }
        .await;
        let removed = match result {
            Ok(removed) => removed,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        self.outgoing
            .send_response_and_wait(id, EmptyResponse {})
            .await;
        if let Some(removed) = removed {
            self.attachment_updated(
                &params.thread_id,
                removed.attachment_type,
                removed.identity_key,
                removed.id,
                ThreadAttachmentOperation::Deleted,
                caller,
            )
            .await;
        }
    }

    async fn attachment_updated(
        &self,
        thread_id: &str,
        attachment_type: String,
        identity_key: String,
        attachment_id: String,
        operation: ThreadAttachmentOperation,
        caller: ConnectionId,
    ) {
        let note = tandem_protocol::ServerNotification::ThreadAttachmentUpdated(
            ThreadAttachmentUpdatedNotification {
                thread_id: thread_id.to_owned(),
                attachment_type,
                identity_key,
                attachment_id,
                operation,
            },
        );
        match self.loaded(thread_id) {
            Some(thread) => thread.notify(&self.outgoing, note, Some(caller)).await,
            None => self.outgoing.send_notification(caller, note).await,
        }
    }

    // -----------------------------------------------------------------------------------------
    // turn/*
    // -----------------------------------------------------------------------------------------

    /// Queues `turn/start` in the thread's order; a start that meets a turn which is wrapping
    /// up goes to the back of the queue again, so it runs once that turn has ended.
    fn queue_turn_start(self: &Arc<Self>, params: TurnStartParams, id: ConnectionRequestId) {
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
    async fn turn_start(
        self: &Arc<Self>,
        params: TurnStartParams,
        id: ConnectionRequestId,
    ) -> Option<(TurnStartParams, ConnectionRequestId)> {
        if let Err(error) = UserInput::ensure_all_supported(&params.input) {
            self.outgoing.send_error(id, error).await;
            return None;
        }
        let Some(thread) = self.loaded(&params.thread_id) else {
            let error = JSONRPCErrorError::invalid_request(format!(
                "thread not loaded: {}; resume it first",
                params.thread_id
            ));
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

    fn turn_steer(&self, params: TurnSteerParams) -> Result<TurnSteerResponse, JSONRPCErrorError> {
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
    fn turn_interrupt(
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

/// The server's working directory, the default `cwd` of a thread.
fn default_cwd() -> Result<String, JSONRPCErrorError> {
    std::env::current_dir()
        .map(|dir| dir.display().to_string())
        .map_err(|error| {
            JSONRPCErrorError::internal(format!(
                "cannot determine the server's working directory: {error}; pass cwd"
            ))
        })
}

/// The record changes that `thread/start`, `resume` and `fork` overrides ask for.
fn overrides_update(overrides: &ThreadOverrides) -> Result<ThreadUpdate, JSONRPCErrorError> {
    let cwd = match &overrides.cwd {
        Some(Some(cwd)) => {
            let path = std::path::Path::new(cwd);
            if !path.is_absolute() {
                return Err(JSONRPCErrorError::invalid_params(format!(
                    "cwd must be an absolute path, got {cwd}"
                )));
            }
            Some(cwd.clone())
        }
        Some(None) => Some(default_cwd()?),
        None => None,
    };
    Ok(ThreadUpdate {
        name: overrides.name.as_ref().map(|name| {
            name.as_ref()
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty())
        }),
        cwd,
        model: overrides.model.clone(),
        approval_policy: overrides
            .approval_policy
            .map(|policy| policy.unwrap_or(ApprovalPolicy::OnRequest)),
        config: overrides
            .config
            .clone()
            .map(|config| config.unwrap_or_default()),
        ..ThreadUpdate::default()
    })
}
