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
//! `attachments` the attachment handlers; `turn_requests` the `turn/*` handlers.

mod attachments;
mod lifecycle;
mod thread_requests;
mod turn_requests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tandem_host::{ConnectionId, ConnectionRequestId, OutgoingMessageSender, RequestContext};
use tandem_protocol::{
    ClientRequest, JSONRPCErrorError, SessionSettings, Thread, ThreadStatus,
    ThreadStatusChangedNotification, Turn, UserInput,
};
use tokio::sync::{OnceCell, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::config::ServerConfig;
use crate::process::ProcessManager;
use crate::store::{InMemoryThreadStore, SqliteThreadStore, StoreError, ThreadRecord, ThreadStore};

/// The model reported for threads that name none while no model provider is configured: the
/// scripted agent has no model.
pub const DEFAULT_MODEL: &str = "scripted";

/// The model provider reported for threads created while no model provider is configured.
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
    /// The turn's commands. Shared with its driver so that shutdown kills them itself: the
    /// process may exit before the turn task gets to act on its cancellation.
    pub(crate) processes: ProcessManager,
    /// Cancelled once the turn's end is stored and its `turn/completed` queued: what shutdown
    /// waits for before it checkpoints the store.
    pub(crate) ended: CancellationToken,
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
        // The last target takes the note itself: a notification can carry a whole turn, and
        // with one subscriber (the usual case) nothing is copied.
        let Some(last) = targets.pop() else {
            return;
        };
        for connection in targets {
            outgoing.send_notification(connection, note.clone()).await;
        }
        outgoing.send_notification(last, note).await;
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

    fn session(
        &self,
        default_model: Option<&str>,
        default_sandbox: &tandem_protocol::SandboxPolicy,
    ) -> SessionSettings {
        let state = self.state();
        let record = &state.record;
        SessionSettings::new(
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
            crate::config::sandbox::thread_policy(&record.config, default_sandbox),
        )
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
    config: ServerConfig,
    durable: OnceCell<Arc<dyn ThreadStore>>,
    ephemeral: Arc<InMemoryThreadStore>,
    pub(crate) agent: Arc<dyn Agent>,
    /// Enforces the threads' sandbox policies on their commands.
    pub(crate) sandboxing: crate::sandbox::Sandboxing,
    loaded: Mutex<BTreeMap<String, Arc<LoadedThread>>>,
    sequencer: Mutex<Sequencer>,
    /// Set when the host shuts down: no new turn starts from then on, so every running turn
    /// is one that shutdown interrupts and waits for.
    stopping: std::sync::atomic::AtomicBool,
}

impl ThreadService {
    /// The server's configuration.
    pub(crate) fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub(crate) fn new(
        outgoing: OutgoingMessageSender,
        config: ServerConfig,
        store: Option<Arc<dyn ThreadStore>>,
        agent: Arc<dyn Agent>,
        sandboxing: crate::sandbox::Sandboxing,
    ) -> Self {
        let durable = OnceCell::new_with(store);
        Self {
            outgoing,
            config,
            durable,
            ephemeral: Arc::new(InMemoryThreadStore::new()),
            agent,
            sandboxing,
            loaded: Mutex::new(BTreeMap::new()),
            sequencer: Mutex::new(Sequencer::default()),
            stopping: std::sync::atomic::AtomicBool::new(false),
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

    /// The model of threads that chose none: the config's `model`, else (with no provider
    /// configured) [`DEFAULT_MODEL`].
    pub(crate) fn default_model(&self) -> Option<&str> {
        match (&self.config.model, &self.config.model_provider) {
            (Some(model), _) => Some(model),
            (None, None) => Some(DEFAULT_MODEL),
            (None, Some(_)) => None,
        }
    }

    /// The model a turn of `record` uses.
    pub(crate) fn effective_model(&self, record: &ThreadRecord) -> Option<String> {
        record
            .model
            .clone()
            .or_else(|| self.default_model().map(str::to_owned))
    }

    /// The provider recorded for new threads: the configured one, else [`MODEL_PROVIDER`].
    pub(crate) fn provider_name(&self) -> &str {
        self.config
            .model_provider
            .as_deref()
            .unwrap_or(MODEL_PROVIDER)
    }

    /// A stored thread that is not loaded, as the protocol shows it.
    fn unloaded_thread(&self, record: &ThreadRecord, turns: Vec<Turn>) -> Thread {
        let mut thread = record.to_thread(turns);
        thread.status = ThreadStatus::NotLoaded;
        if thread.model.is_none() {
            thread.model = self.default_model().map(str::to_owned);
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
                unordered!(Ok::<_, JSONRPCErrorError>({
                    let mut response = service.config.config_read_response();
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
}
