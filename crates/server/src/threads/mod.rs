//! Threads (docs/protocol.md sections 4, 6, 7 and 9): which threads are loaded, who is subscribed,
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
//!
//! Files: this one holds the shared state, the stores, the sequencer and the dispatch;
//! `lifecycle` loading, subscribing and idle unload; `thread_requests` the `thread/*` handlers;
//! `attachments` the attachment handlers; `turn_requests` the `turn/*` handlers;
//! `leases` the writer lease (issue 20: take, renew, release, fence);
//! `maintenance` archiving, compaction and revert/rollback (`file_restore` their
//! `restoreFiles`); `history` `thread/items/list`,
//! resume paging and loading a history only when it is needed; `idempotency` the keys that
//! make `turn/start`, `turn/steer`, `thread/start` and `thread/fork` safe to retry.

mod attachments;
// undo29: `restoreFiles` of `thread/revert` and `thread/rollback`.
mod file_restore;
mod history;
mod idempotency;
mod leases;
mod lifecycle;
#[cfg(test)]
mod lock_order_tests;
mod maintenance;
mod session_approvals;
// search29: `thread/shellCommand`.
mod shell_command;
mod thread_requests;
mod turn_requests;
mod turn_work;

pub(crate) use turn_work::{SideCommand, StartedTurn, TurnRunner, TurnWork};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use tandem_host::{ConnectionId, ConnectionRequestId, OutgoingMessageSender, RequestContext};
use tandem_protocol::{
    ClientRequest, JSONRPCErrorError, SessionSettings, Thread, ThreadStatus,
    ThreadStatusChangedNotification, Turn, UserInput,
};
use tokio::sync::{OnceCell, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::catalog::{MODEL_PROVIDER, default_model_of};
use crate::config::ServerConfig;
use crate::process::ProcessManager;
use crate::store::{
    Compaction, InMemoryThreadStore, LeaseSettings, PostgresThreadStore, SqliteThreadStore,
    StoreError, ThreadRecord, ThreadStore,
};

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
    if let Some(answer) = leases::lease_held_error(&error) {
        return answer;
    }
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
    /// The id again, as the name of the thread's event stream in the host (shared, so that
    /// each notification names it without a copy).
    pub(crate) stream: Arc<str>,
    pub(crate) ephemeral: bool,
    pub(crate) state: Mutex<ThreadState>,
    /// Tokens of every model request since the thread was loaded (`total` of
    /// `thread/tokenUsage/updated`).
    pub(crate) token_usage: Mutex<tandem_protocol::TokenUsageBreakdown>,
    /// What the user approved for the session (`acceptForSession`) while it is loaded.
    approved_for_session: Mutex<session_approvals::SessionApprovals>,
}

/// The live state of a loaded thread.
pub(crate) struct ThreadState {
    pub(crate) record: ThreadRecord,
    /// Completed turns, oldest first (what `thread/read` shows; the agent sees
    /// [`ThreadState::agent_history`]); empty until `history_loaded`.
    pub(crate) history: Vec<Turn>,
    /// Whether `history` holds the stored turns. A thread resumed for paging leaves them in
    /// the store until a turn starts or a client asks for all of them
    /// ([`ThreadService::ensure_history`]).
    pub(crate) history_loaded: bool,
    /// The latest compaction still in `history`: the agent sees its summary instead of the
    /// turns up to it.
    pub(crate) compaction: Option<Compaction>,
    pub(crate) status: ThreadStatus,
    pub(crate) subscribers: BTreeSet<ConnectionId>,
    pub(crate) active: Option<Arc<ActiveTurn>>,
    /// The end of a turn that the client was told about but the store refused to take (a full
    /// disk): it is written again in the background, before the thread's next turn is stored,
    /// and at unload ([`ThreadService::settle_owed_end`]), so that the store does not keep the
    /// turn `inProgress` while this server holds the thread.
    pub(crate) owed_end: Option<Turn>,
    /// Bumped whenever a countdown starts or is cancelled; a timer only unloads if the
    /// generation it was started with is still current.
    unload_generation: u64,
    counting_down: bool,
}

/// What `turn/steer` and `turn/interrupt` share with the running turn.
pub(crate) struct ActiveTurn {
    pub(crate) id: String,
    pub(crate) cancel: CancellationToken,
    /// Steered input not yet taken by the agent.
    pub(crate) steered: Mutex<SteerQueue>,
    /// Signalled when input is steered, so a waiting agent wakes up.
    pub(crate) steer_signal: tokio::sync::Notify,
    /// `turn/interrupt` requests to answer once the turn has stopped.
    pub(crate) interrupt_replies: Mutex<Vec<ConnectionRequestId>>,
    /// The turn as it stands (items so far), for `thread/read` and `thread/resume`.
    pub(crate) snapshot: Mutex<Turn>,
    /// The turn's commands. Shared with its driver so that shutdown kills them itself: the
    /// process may exit before the turn task gets to act on its cancellation.
    pub(crate) processes: ProcessManager,
    /// Cancelled once the turn's end is stored and its `turn/completed` queued: what shutdown
    /// waits for before it checkpoints the store.
    pub(crate) ended: CancellationToken,
    /// search29: the index the turn's next new stored item takes, locked across its write so
    /// that items stored beside the agent (a user's shell command) keep the store's order.
    pub(crate) next_item: tokio::sync::Mutex<usize>,
    /// search29: users' shell commands running beside the agent (`thread/shellCommand` during
    /// the turn), each handing back the ids of the items it stored; the turn ends after them.
    pub(crate) side_commands:
        Mutex<Vec<tokio::task::JoinHandle<std::collections::HashSet<String>>>>,
    /// search29: what those commands printed, for the agent's next request.
    pub(crate) injected: Mutex<Vec<UserInput>>,
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

impl ThreadState {
    /// The history an agent is given: all completed turns, or, after a compaction, one turn
    /// holding the summary as user input (where the compaction turn stood) followed by the
    /// turns after it. A summary is sent as user input because every model wire takes that;
    /// the reference's compaction also hands its summary to the model as a user message.
    pub(crate) fn agent_history(&self) -> Vec<Turn> {
        let Some(compaction) = &self.compaction else {
            return self.history.clone();
        };
        let Some(position) = self
            .history
            .iter()
            .position(|turn| turn.id == compaction.turn_id)
        else {
            return self.history.clone();
        };
        let compacted = &self.history[position];
        let summary = Turn {
            items: vec![tandem_protocol::ThreadItem::UserMessage {
                id: format!("{}-summary", compacted.id),
                content: vec![UserInput::text(compaction.summary.clone())],
                client_id: None,
            }],
            ..compacted.clone()
        };
        std::iter::once(summary)
            .chain(self.history[position + 1..].iter().cloned())
            .collect()
    }
}

impl LoadedThread {
    /// What the user approved for the session on this thread (`acceptForSession`).
    pub(crate) fn session_approvals(&self) -> MutexGuard<'_, session_approvals::SessionApprovals> {
        lock(&self.approved_for_session)
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, ThreadState> {
        lock(&self.state)
    }

    /// The connections subscribed now: the audience of the thread's server requests.
    pub(crate) fn subscribers(&self) -> Vec<ConnectionId> {
        self.state().subscribers.iter().copied().collect()
    }

    /// Sends `note` to every subscriber, and to `extra` if it is not one, as the next event of
    /// the thread's stream: the host numbers it (its cursor) and keeps it for replay
    /// (docs/protocol.md, "Cursors and replay"). The host's stream is named by the thread id,
    /// and its attached connections are this thread's subscribers
    /// ([`ThreadService::attach_subscriber`]).
    pub(crate) async fn notify(
        &self,
        outgoing: &OutgoingMessageSender,
        note: tandem_protocol::ServerNotification,
        extra: Option<ConnectionId>,
    ) {
        outgoing
            .send_stream_notification(Arc::clone(&self.stream), note, extra)
            .await;
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
    /// plus the running one; the caller loads the history first, see
    /// [`ThreadService::ensure_history`]).
    fn to_thread(&self, include_turns: bool, default_model: Option<&str>) -> Thread {
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
        if thread.model.is_none() {
            thread.model = default_model.map(str::to_owned);
        }
        thread
    }

    /// The thread's `...session` settings: its own where it has them, else `config`'s.
    fn session(&self, default_model: Option<&str>, config: &ServerConfig) -> SessionSettings {
        let state = self.state();
        let record = &state.record;
        let mut session = SessionSettings::new(
            // Only a configured provider without any model leaves this empty; its turns then
            // fail with a message saying how to choose one.
            record
                .model
                .as_deref()
                .or(default_model)
                .unwrap_or_default(),
            record.model_provider.clone(),
            record.cwd.clone(),
            record.approval_policy,
            crate::config::sandbox::thread_policy(&record.config, &config.sandbox),
        );
        // What the thread's next turn asks of the model (read again at each turn).
        session.reasoning_effort =
            crate::config::reasoning::thread_reasoning(&record.config, &config.reasoning).effort;
        session
    }
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
    /// The effective configuration, replaced by a config write; read it with
    /// [`ThreadService::config`] and keep the `Arc` for the span of one decision.
    config: std::sync::RwLock<Arc<ServerConfig>>,
    /// Held across one config write (read, check, write, swap), so that writes do not
    /// interleave and `expectedVersion` means what it says.
    config_writes: tokio::sync::Mutex<()>,
    durable: OnceCell<Arc<dyn ThreadStore>>,
    ephemeral: Arc<InMemoryThreadStore>,
    pub(crate) agent: Arc<dyn Agent>,
    /// Enforces the threads' sandbox policies on their commands.
    pub(crate) sandboxing: crate::sandbox::Sandboxing,
    /// Runs a started turn (the turn module's `spawn`, handed down by the server).
    run_turn: TurnRunner,
    /// mcp30: the server's MCP servers, whose tools turns offer.
    pub(crate) mcp: tandem_mcp::McpManager,
    /// The loaded threads. Lock order: a thread's `state` may be held while this is taken
    /// (the idle unload checks its countdown and removes the thread in one step), never the
    /// other way round: whoever needs the states of loaded threads copies the map's values
    /// out first. Both ways at once deadlocked both runtime workers (a client leaving while
    /// the server shut down), so SIGTERM never finished.
    loaded: Mutex<BTreeMap<String, Arc<LoadedThread>>>,
    sequencer: Mutex<Sequencer>,
    /// Cancelled when the host shuts down: no new turn starts from then on, so every running
    /// turn is one that shutdown interrupts and waits for; and the service's timers (idle
    /// unloads, retries of an owed end) end at once instead of keeping the service, its agent
    /// and what that holds (a cassette's recording lock) alive past the shutdown.
    stopping: CancellationToken,
    /// Set once the writer-lease renewal loop runs (see `leases`).
    renewing: std::sync::atomic::AtomicBool,
}

impl ThreadService {
    pub(crate) fn new(
        outgoing: OutgoingMessageSender,
        config: ServerConfig,
        store: Option<Arc<dyn ThreadStore>>,
        agent: Arc<dyn Agent>,
        sandboxing: crate::sandbox::Sandboxing,
        run_turn: TurnRunner,
        mcp: tandem_mcp::McpManager,
    ) -> Self {
        let durable = OnceCell::new_with(store);
        Self {
            outgoing,
            config: std::sync::RwLock::new(Arc::new(config)),
            config_writes: tokio::sync::Mutex::new(()),
            durable,
            ephemeral: Arc::new(InMemoryThreadStore::new()),
            agent,
            sandboxing,
            run_turn,
            mcp,
            loaded: Mutex::new(BTreeMap::new()),
            sequencer: Mutex::new(Sequencer::default()),
            stopping: CancellationToken::new(),
            renewing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The effective configuration now.
    pub(crate) fn config(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.config.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Makes `config` the effective configuration (after a config write).
    pub(crate) fn set_config(&self, config: ServerConfig) {
        *self.config.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(config);
    }

    /// The store of persisted threads, opened on first use: PostgreSQL when `store.url`
    /// names one, else SQLite in the home; either keeps writer leases (docs/scaling.md).
    async fn durable(&self) -> Result<Arc<dyn ThreadStore>, JSONRPCErrorError> {
        let config = self.config();
        self.durable
            .get_or_try_init(|| async move {
                let leases = LeaseSettings::for_this_process(config.lease_ttl)
                    .with_home(&config.tandem_home)
                    // A server that does not wait for handoffs asks at the holder's renewal,
                    // as before issue 32.
                    .with_handoff_notices(!config.lease_handoff_wait.is_zero());
                let store: Arc<dyn ThreadStore> = match &config.store_url {
                    Some(url) => Arc::new(PostgresThreadStore::connect(url, leases).await?),
                    None => Arc::new(
                        SqliteThreadStore::open_with_leases(config.tandem_home.clone(), leases)
                            .await?,
                    ),
                };
                Ok::<_, StoreError>(store)
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

    /// Fails with the answer to a request naming an unknown thread (`thread not found: ID`)
    /// unless `thread_id` is loaded or stored.
    pub(crate) async fn ensure_known(&self, thread_id: &str) -> Result<(), JSONRPCErrorError> {
        if self.loaded(thread_id).is_some() || self.find(thread_id).await?.is_some() {
            Ok(())
        } else {
            Err(not_found(thread_id))
        }
    }

    /// The model of threads that chose none: the config's `model`, else (with no provider
    /// configured) [`DEFAULT_MODEL`](crate::catalog::DEFAULT_MODEL).
    pub(crate) fn default_model(&self) -> Option<String> {
        default_model_of(&self.config())
    }

    /// The model a turn of `record` uses.
    pub(crate) fn effective_model(&self, record: &ThreadRecord) -> Option<String> {
        record.model.clone().or_else(|| self.default_model())
    }

    /// The provider recorded for new threads: the configured one, else [`MODEL_PROVIDER`].
    pub(crate) fn provider_name(&self) -> String {
        self.config()
            .model_provider
            .clone()
            .unwrap_or_else(|| MODEL_PROVIDER.to_owned())
    }

    /// A stored thread that is not loaded, as the protocol shows it.
    fn unloaded_thread(&self, record: &ThreadRecord, turns: Vec<Turn>) -> Thread {
        let mut thread = record.to_thread(turns);
        thread.status = ThreadStatus::NotLoaded;
        if thread.model.is_none() {
            thread.model = self.default_model();
        }
        thread
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

    /// Writes the config file (see [`crate::config::write`]) and makes the result the
    /// effective configuration, except for the provider settings: the agent was built for
    /// the provider the server started with, so `model_provider` and `model_providers` keep
    /// their running values until a restart (docs/protocol.md, `config/value/write`).
    async fn config_write(
        &self,
        edits: Vec<tandem_protocol::ConfigEdit>,
        file_path: Option<String>,
        expected_version: Option<String>,
    ) -> Result<tandem_protocol::ConfigWriteResponse, JSONRPCErrorError> {
        let _one_at_a_time = self.config_writes.lock().await;
        let current = self.config();
        let written = tokio::task::spawn_blocking(move || {
            crate::config::write::write_config(
                &current,
                &edits,
                file_path.as_deref(),
                expected_version.as_deref(),
            )
            .map(|written| (written, current))
        })
        .await
        .map_err(|error| JSONRPCErrorError::internal(format!("config write failed: {error}")))?;
        let (written, current) = written.map_err(|error| error.to_rpc())?;
        for warning in &written.warnings {
            tracing::warn!("{warning}");
        }
        let mut config = written.config;
        if config.model_provider != current.model_provider
            || config.model_providers != current.model_providers
        {
            tracing::info!("model provider settings written; they apply when the server restarts");
        }
        config.model_provider.clone_from(&current.model_provider);
        config.model_providers.clone_from(&current.model_providers);
        self.set_config(config);
        Ok(written.response)
    }

    /// Handles a `thread/*`, `turn/*`, `config/*`, `model/list` or `account/read` request;
    /// returns it back if it is none of those.
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
                    service.outgoing.send_result(id, result).await;
                });
            }};
        }
        macro_rules! ordered {
            ($thread:expr, $body:expr) => {{
                let thread_id = $thread.clone();
                self.sequenced(&thread_id, async move {
                    let result = $body;
                    service.outgoing.send_result(id, result).await;
                });
            }};
        }
        match request {
            ClientRequest::ConfigRead { .. } => {
                unordered!(Ok::<_, JSONRPCErrorError>({
                    let mut response = service.config().config_read_response();
                    // What this machine enforces, beside the configured policy: a client
                    // can see before its first command whether a sandbox will run at all.
                    if let serde_json::Value::Object(config) = &mut response.config {
                        config.insert(
                            "sandbox_support".to_owned(),
                            serde_json::to_value(service.sandboxing.support()).unwrap_or_default(),
                        );
                    }
                    response
                }))
            }
            ClientRequest::ModelList { params, .. } => {
                unordered!(crate::catalog::model_list(&service.config(), params))
            }
            ClientRequest::AccountRead { .. } => {
                unordered!(Ok::<_, JSONRPCErrorError>(crate::catalog::account()))
            }
            ClientRequest::ConfigValueWrite { params, .. } => {
                let edit = tandem_protocol::ConfigEdit {
                    key_path: params.key_path,
                    value: params.value,
                    merge_strategy: params.merge_strategy,
                };
                unordered!(
                    service
                        .config_write(vec![edit], params.file_path, params.expected_version)
                        .await
                )
            }
            ClientRequest::ConfigBatchWrite { params, .. } => {
                unordered!(
                    service
                        .config_write(params.edits, params.file_path, params.expected_version)
                        .await
                )
            }
            ClientRequest::ThreadStart { params, .. } => {
                unordered!(service.start(params, &context).await)
            }
            ClientRequest::ThreadResume { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&params.thread_id.clone(), async move {
                    let result = service.resume(params, &context).await;
                    let resumed = result.is_ok();
                    service.outgoing.send_result(id.clone(), result).await;
                    if resumed {
                        service
                            .resend_pending_requests(&thread_id, id.connection_id)
                            .await;
                    }
                });
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
            ClientRequest::ThreadItemsList { params, .. } => {
                ordered!(params.thread_id, service.items_list(params).await)
            }
            ClientRequest::ThreadUnsubscribe { params, .. } => {
                ordered!(
                    params.thread_id,
                    Ok::<_, JSONRPCErrorError>(
                        service
                            .unsubscribe(&params.thread_id, id.connection_id)
                            .await
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
            // t-threadops: archive, compaction, revert/rollback, attachment listing.
            ClientRequest::ThreadArchive { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&thread_id, async move {
                    service.archive(params, id).await;
                });
            }
            ClientRequest::ThreadUnarchive { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&thread_id, async move {
                    service.unarchive(params, id).await;
                });
            }
            ClientRequest::ThreadCompactStart { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&thread_id, async move {
                    service.compact_start(params, id).await;
                });
            }
            // search29: the user's own command, as a turn of its own.
            ClientRequest::ThreadShellCommand { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&thread_id, async move {
                    service.shell_command(params, id).await;
                });
            }
            ClientRequest::ThreadRevert { params, .. } => {
                let thread_id = params.thread_id.clone();
                self.sequenced(&thread_id, async move {
                    service.revert(params, id).await;
                });
            }
            ClientRequest::ThreadRollback { params, .. } => {
                ordered!(params.thread_id, service.rollback(params).await)
            }
            ClientRequest::ThreadAttachmentList { params, .. } => {
                ordered!(params.thread_id, service.attachment_list(params).await)
            }
            ClientRequest::TurnStart { params, .. } => self.queue_turn_start(params, id),
            ClientRequest::TurnSteer { params, .. } => {
                ordered!(params.thread_id, service.turn_steer(params).await)
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
}
