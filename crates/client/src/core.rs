//! [`Shared`]: the state every clone of a client, its backend's tasks and its handles share,
//! and the client's side of [`Dispatch`]: routing what the backend receives (through
//! [`crate::router`]), remembering server requests until the server resolves them, and
//! following threads (their last cursors, [`crate::follow`]) so that a reconnect resumes them.
//! It sits between the public API (`client.rs`) and the backends, which know it only as a
//! [`Dispatch`].

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::{Future, ready};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::Either;
use serde_json::Value;
use tandem_protocol::{
    JSONRPCErrorError, ProcessResumeParams, ProcessResumeResponse, RequestId, ServerNotification,
    ServerRequest, ThreadResumeParams, ThreadResumeResponse,
};
use tokio::sync::watch;

use crate::backend::{Backend, Dispatch, Failure, Incoming, OutgoingRequest, ResumeSession};
use crate::connection::{ConnectionState, ReconnectStats};
use crate::error::ClientError;
use crate::follow::{Followed, RequestFacts, ResumeAnswer};
use crate::options::ClientOptions;
use crate::process::ProcessFollows;
use crate::router::{Entry, Filter, Registry};
use crate::server_request::{
    AnswerServerRequests, Responder, ServerRequestEvent, dispatch, fallback_answer,
};
use crate::subscription::{Subscription, Unsubscribe};
use crate::turn::TurnShared;

/// How many failed `start_turn` streams with a `clientUserMessageId` wait for their retry.
const MAX_PARKED_TURNS: usize = 16;

/// A server request the client was sent and the server has not resolved yet.
struct PendingServerRequest {
    /// The connection it came on last (a resume re-sends it on the new one).
    generation: u64,
    turn_id: Option<String>,
    /// The answer given, kept until the server resolves the request: a connection lost
    /// before the answer reached the server gets it again when the server re-sends.
    answer: Option<Result<Value, JSONRPCErrorError>>,
}

/// The stream of a `start_turn` whose `turn/start` failed in a way that is safe to retry, kept
/// for the retry with the same `clientUserMessageId` so that the turn's events that arrived
/// meanwhile are not lost.
pub(crate) struct ParkedTurn {
    pub(crate) thread_id: String,
    pub(crate) key: String,
    pub(crate) subscription: Subscription,
    pub(crate) shared: Arc<TurnShared>,
}

/// State shared by every clone of a client, its worker and its handles.
pub(crate) struct Shared {
    options: ClientOptions,
    pub(crate) backend: Backend,
    pub(crate) registry: Mutex<Registry>,
    /// Server requests waiting for the server to resolve them, by id.
    pending_server_requests: Mutex<HashMap<RequestId, PendingServerRequest>>,
    /// Threads the connection is subscribed to, and the last cursor seen of each.
    followed: Mutex<Followed>,
    /// procre: the processes to resume after a reconnect, and the last cursor seen of each.
    pub(crate) processes: Mutex<ProcessFollows>,
    parked: Mutex<VecDeque<ParkedTurn>>,
    state: watch::Sender<ConnectionState>,
    next_id: AtomicI64,
    pub(crate) closed: AtomicBool,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("options", &self.options)
            .field("generation", &self.backend.generation())
            .finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    pub(crate) fn new(
        options: ClientOptions,
        backend: Backend,
        state: ConnectionState,
    ) -> Arc<Self> {
        Arc::new(Self {
            options,
            backend,
            registry: Mutex::new(Registry::default()),
            pending_server_requests: Mutex::new(HashMap::new()),
            followed: Mutex::new(Followed::default()),
            processes: Mutex::new(ProcessFollows::default()),
            parked: Mutex::new(VecDeque::new()),
            state: watch::Sender::new(state),
            // The in-process host uses id 0 for its own `initialize`.
            next_id: AtomicI64::new(1),
            closed: AtomicBool::new(false),
        })
    }

    pub(crate) fn options(&self) -> &ClientOptions {
        &self.options
    }

    pub(crate) fn connection_state(&self) -> watch::Receiver<ConnectionState> {
        self.state.subscribe()
    }

    pub(crate) fn set_state(&self, state: ConnectionState) {
        self.state.send_replace(state);
    }

    pub(crate) fn reconnect_stats(&self) -> ReconnectStats {
        lock(&self.followed).stats
    }

    pub(crate) fn unsubscribe(&self, id: u64) {
        lock(&self.registry).remove(id);
    }

    pub(crate) fn register(&self, entry: Entry) -> u64 {
        lock(&self.registry).insert(entry)
    }

    pub(crate) fn narrow_turn(&self, subscription: u64, turn_id: &str) {
        if let Some(entry) = lock(&self.registry).get_mut(subscription)
            && let Filter::Turn { turn, .. } = &mut entry.filter
        {
            *turn = Some(turn_id.to_owned());
        }
    }

    /// Keeps the stream of a failed `start_turn` for its retry (the oldest goes past
    /// [`MAX_PARKED_TURNS`]).
    pub(crate) fn park_turn(&self, parked: ParkedTurn) {
        let mut all = lock(&self.parked);
        all.retain(|other| !(other.thread_id == parked.thread_id && other.key == parked.key));
        if all.len() == MAX_PARKED_TURNS {
            all.pop_front();
        }
        all.push_back(parked);
    }

    /// The stream kept for a retry of `start_turn` with `key` on `thread_id`.
    pub(crate) fn unpark_turn(&self, thread_id: &str, key: &str) -> Option<ParkedTurn> {
        let mut all = lock(&self.parked);
        let index = all
            .iter()
            .position(|parked| parked.thread_id == thread_id && parked.key == key)?;
        all.remove(index)
    }

    /// Answers server request `id` on the connection it came on last. If that connection is
    /// gone and the client is reconnecting, the answer is kept and sent again when the server
    /// re-sends the request to the new connection.
    pub(crate) async fn answer_server_request(
        &self,
        id: RequestId,
        result: Result<Value, JSONRPCErrorError>,
    ) -> Result<(), ClientError> {
        let generation = {
            let mut pending = lock(&self.pending_server_requests);
            let Some(entry) = pending.get_mut(&id) else {
                return Err(ClientError::ServerRequestNotPending { id });
            };
            if entry.answer.is_some() {
                return Err(ClientError::ServerRequestNotPending { id });
            }
            entry.answer = Some(result.clone());
            entry.generation
        };
        match self.backend.answer(generation, id.clone(), result).await {
            Ok(()) => Ok(()),
            Err(Failure::Disconnected { .. }) if self.reconnecting() => {
                tracing::debug!(%id, "answer kept for the server's re-send after the reconnect");
                Ok(())
            }
            Err(failure) => {
                lock(&self.pending_server_requests).remove(&id);
                Err(failure.into_error("server request answer"))
            }
        }
    }

    /// Whether a lost connection comes back by itself (wire backends with reconnect on).
    fn reconnecting(&self) -> bool {
        self.backend.reconnects() && !self.closed.load(Ordering::Acquire)
    }

    /// A server request arrived on connection `generation`. `None` if it is one the client
    /// already has (re-sent after a resume): its holder's answer goes to the new connection,
    /// and an answer already given is sent again.
    fn take_server_request(
        self: &Arc<Self>,
        generation: u64,
        request: &ServerRequest,
    ) -> Option<ServerRequestEvent> {
        let id = request.id().clone();
        let resend = {
            let mut pending = lock(&self.pending_server_requests);
            match pending.get_mut(&id) {
                Some(known) => {
                    known.generation = generation;
                    Some(known.answer.clone())
                }
                None => {
                    pending.insert(
                        id.clone(),
                        PendingServerRequest {
                            generation,
                            turn_id: request.turn_id().map(str::to_owned),
                            answer: None,
                        },
                    );
                    None
                }
            }
        };
        match resend {
            None => {
                let responder = Responder {
                    id,
                    shared: Arc::downgrade(self) as std::sync::Weak<Shared>,
                    fallback: Some(fallback_answer(request)),
                };
                Some(ServerRequestEvent::new(request.clone(), responder))
            }
            Some(Some(answer)) => {
                tracing::debug!(%id, "server request re-sent after a resume; answering it again");
                let shared = self.clone();
                tokio::spawn(async move {
                    if let Err(failure) = shared.backend.answer(generation, id, answer).await {
                        tracing::debug!(reason = %failure.reason(), "answer to a re-sent server request not delivered");
                    }
                });
                None
            }
            Some(None) => None,
        }
    }

    /// Forgets server requests the server no longer waits for.
    fn settle_server_requests(&self, note: &ServerNotification) {
        match note {
            ServerNotification::ServerRequestResolved(resolved) => {
                lock(&self.pending_server_requests).remove(&resolved.request_id);
            }
            ServerNotification::TurnCompleted(done) => {
                lock(&self.pending_server_requests)
                    .retain(|_, pending| pending.turn_id.as_deref() != Some(done.turn.id.as_str()));
            }
            _ => {}
        }
    }

    /// A `thread/resume` after a reconnect was answered (after everything it replayed).
    fn resumed(
        &self,
        thread_id: &str,
        reply: Result<Value, JSONRPCErrorError>,
    ) -> Vec<crate::router::Wait> {
        let response = reply.and_then(|value| {
            serde_json::from_value::<ThreadResumeResponse>(value)
                .map_err(|error| JSONRPCErrorError::internal(error.to_string()))
        });
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                tracing::warn!(thread = %thread_id, error = %error.message, "a followed thread could not be resumed");
                lock(&self.followed).forget(thread_id);
                let reason = format!(
                    "the thread could not be resumed after the reconnect: {}",
                    error.message
                );
                return lock(&self.registry).thread_lost(thread_id, &reason);
            }
        };
        let outcome = lock(&self.followed).resumed(thread_id, &ResumeAnswer::from(&response));
        if outcome.server_changed {
            // The requests belonged to a server that is gone.
            lock(&self.pending_server_requests).clear();
        }
        if !outcome.gap {
            return Vec::new();
        }
        tracing::info!(thread = %thread_id, "the server could not replay what was missed; resyncing from its snapshot");
        // Requests of turns that ended while the client was away will not be resolved live.
        let running: Vec<&str> = response
            .thread
            .turns
            .iter()
            .filter(|turn| turn.status == tandem_protocol::TurnStatus::InProgress)
            .map(|turn| turn.id.as_str())
            .collect();
        let ended: std::collections::HashSet<&str> = response
            .thread
            .turns
            .iter()
            .map(|turn| turn.id.as_str())
            .filter(|turn| !running.contains(turn))
            .collect();
        lock(&self.pending_server_requests).retain(|_, pending| {
            pending
                .turn_id
                .as_deref()
                .is_none_or(|turn| !ended.contains(turn))
        });
        lock(&self.registry).gap(
            thread_id,
            response.thread.turns,
            &self.options.delivery_policy,
        )
    }

    /// procre: a `process/resume` after a reconnect was answered (after everything it
    /// replayed); on the new connection the process belongs to `session`.
    fn process_resumed(
        &self,
        handle: &str,
        reply: Result<Value, JSONRPCErrorError>,
    ) -> Vec<crate::router::Wait> {
        let response = reply.and_then(|value| {
            serde_json::from_value::<ProcessResumeResponse>(value)
                .map_err(|error| JSONRPCErrorError::internal(error.to_string()))
        });
        match response {
            Ok(response) => {
                let session = self
                    .backend
                    .initialize_response()
                    .and_then(|init| init.process_session);
                lock(&self.processes).resumed(handle, session, response.cursor);
                if response.gap {
                    tracing::info!(%handle, "the server could not replay all the output a process wrote while away");
                    return lock(&self.registry).process_gap(handle);
                }
                Vec::new()
            }
            Err(error) => {
                tracing::warn!(%handle, error = %error.message, "a process could not be resumed");
                lock(&self.processes).forget(handle);
                let reason = format!(
                    "the process could not be resumed after the reconnect: {}",
                    error.message
                );
                lock(&self.registry).process_lost(handle, &reason);
                Vec::new()
            }
        }
    }

    /// Follows what a successful reply changes about the connection's thread subscriptions.
    fn track_reply(&self, facts: &RequestFacts, value: &Value) {
        lock(&self.followed).track_reply(facts, value);
    }

    /// One attempt: send now, then wait within `timeout` and classify. The request is handed
    /// to the backend before this returns (in-process, to the host itself), and the wait is
    /// a combinator, not an `async` block, so the future holds neither the request nor a
    /// second copy of the backend's wait.
    pub(crate) fn execute_once<'a>(
        self: &'a Arc<Self>,
        method: &'a str,
        request: OutgoingRequest,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Value, ClientError>> + Send + 'a {
        let facts = RequestFacts::of(&request);
        let reply = if self.closed.load(Ordering::Acquire) {
            Either::Left(ready(Err(Failure::Closed)))
        } else {
            Either::Right(self.backend.request(self, request, timeout))
        };
        reply.map(move |outcome| match outcome {
            Ok(Ok(value)) => {
                if let Some(facts) = &facts {
                    self.track_reply(facts, &value);
                }
                Ok(value)
            }
            Ok(Err(error)) => Err(ClientError::Server {
                method: method.to_owned(),
                error,
            }),
            Err(Failure::Disconnected { sent: true, reason })
                if facts.as_ref().is_some_and(|facts| facts.keyed) =>
            {
                Err(ClientError::MaybeSent {
                    method: method.to_owned(),
                    reason,
                })
            }
            Err(failure) => Err(failure.into_error(method)),
        })
    }
}

impl Dispatch for Shared {
    fn next_request_id(&self) -> RequestId {
        RequestId::Integer(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Routes one event to subscriptions, turn handles and the handler. Waits only for
    /// lossless subscriptions.
    async fn route(self: &Arc<Self>, generation: u64, incoming: Incoming) {
        let waits = match incoming {
            Incoming::Notification { note, cursor } => {
                if let (Some(cursor), Some(thread)) = (&cursor, note.thread_id())
                    && !lock(&self.followed).accept(thread, cursor)
                {
                    // Already seen: a replay overlapping what arrived before the drop.
                    return;
                }
                if let Some(cursor) = &cursor
                    && note.process_handle().is_some()
                    && !lock(&self.processes).accept(&note, cursor)
                {
                    return;
                }
                self.settle_server_requests(&note);
                if let ServerNotification::ThreadClosed(closed) = &note {
                    lock(&self.followed).forget(&closed.thread_id);
                }
                if let ServerNotification::ThreadDeleted(deleted) = &note {
                    lock(&self.followed).forget(&deleted.thread_id);
                }
                lock(&self.registry).route_notification(note, &self.options.delivery_policy)
            }
            Incoming::Request(request) => {
                let Some(event) = self.take_server_request(generation, &request) else {
                    return;
                };
                let (waits, unclaimed) = lock(&self.registry).route_request(&request, event);
                if let Some(event) = unclaimed {
                    let handler = self.options.handler.clone();
                    tokio::spawn(async move { dispatch(handler.as_ref(), event).await });
                }
                waits
            }
            Incoming::Lagged(skipped) => lock(&self.registry).route_lagged(skipped),
            Incoming::Resumed { thread_id, reply } => self.resumed(&thread_id, reply),
            Incoming::ProcessResumed { handle, reply } => self.process_resumed(&handle, reply),
        };
        for (tx, item) in waits {
            // A consumer that went away meanwhile needs nothing more.
            let _ = tx.send(item).await;
        }
    }

    fn connection_lost(&self, generation: u64, reason: &str, reconnecting: bool) {
        if reconnecting {
            // Turn handles, thread subscriptions and resumable processes wait for the
            // resume; a process of a server without process sessions died with its
            // connection, so its handle ends now.
            let resumable = lock(&self.processes).resumable();
            lock(&self.registry).processes_lost(reason, &resumable);
            return;
        }
        lock(&self.processes).clear();
        lock(&self.pending_server_requests).retain(|_, pending| pending.generation != generation);
        lock(&self.followed).clear();
        lock(&self.parked).clear();
        lock(&self.registry).disconnect(reason);
    }

    async fn resume(self: &Arc<Self>, session: ResumeSession) {
        let plan = lock(&self.followed).plan();
        let resumes = plan.into_iter().map(|(thread_id, cursor)| {
            let params = ThreadResumeParams {
                thread_id: thread_id.clone(),
                exclude_turns: Some(true),
                cursor,
                ..ThreadResumeParams::default()
            };
            let id = self.next_request_id();
            let session = &session;
            async move {
                if let Err(reason) = session.resume(id, params).await {
                    tracing::debug!(thread = %thread_id, %reason, generation = session.generation(), "resume after reconnect not answered");
                }
            }
        });
        futures::future::join_all(resumes).await;
        // procre: then every process it follows, from its last cursor.
        let processes = lock(&self.processes).plan();
        let resumes = processes.into_iter().map(|(handle, session_token, cursor)| {
            let params = ProcessResumeParams {
                process_session: session_token,
                process_handle: handle.clone(),
                cursor,
            };
            let id = self.next_request_id();
            let session = &session;
            async move {
                if let Err(reason) = session.resume_process(id, params).await {
                    tracing::debug!(%handle, %reason, "process resume after reconnect not answered");
                }
            }
        });
        futures::future::join_all(resumes).await;
    }

    fn state_changed(&self, state: ConnectionState) {
        if matches!(state, ConnectionState::Reconnected { .. }) {
            lock(&self.followed).stats.reconnects += 1;
        }
        self.set_state(state);
    }
}

impl AnswerServerRequests for Shared {
    fn answer(
        &self,
        id: RequestId,
        result: Result<Value, JSONRPCErrorError>,
    ) -> futures::future::BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(self.answer_server_request(id, result))
    }
}

impl Unsubscribe for Shared {
    fn unsubscribe(&self, id: u64) {
        Shared::unsubscribe(self, id);
    }
}
