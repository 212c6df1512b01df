//! The server requests waiting for their answers ([`PendingServerRequests`]): one per request
//! sent to a single connection, and the shared requests of a thread (docs/host.md, "Shared
//! server requests"), resolved by the first answer, re-sent to connections that subscribe
//! later, and declined once nobody came back within the unanswered timeout.

use foldhash::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tandem_protocol::{JSONRPCErrorError, RequestId, ServerRequest};
use tokio::sync::oneshot;

use crate::processor::ConnectionId;

use super::*;

/// How long a thread's server request waits once every connection it was sent to has gone
/// (docs/host.md, "Shared server requests"): 10 minutes, long enough for a laptop to wake
/// or an IDE to reload and resume the thread.
pub const DEFAULT_UNANSWERED_REQUEST_TIMEOUT: std::time::Duration =
    std::time::Duration::from_secs(600);

/// Start of the message of the error that resolves a shared server request nobody answered
/// in time; see [`is_unanswered`].
const UNANSWERED: &str = "no client answered this server request";

/// Whether `error` is the one a shared server request resolves with when every connection it
/// was sent to left and none came back within the timeout: the request's owner treats it as
/// a decline and reports it.
pub fn is_unanswered(error: &JSONRPCErrorError) -> bool {
    error.message.starts_with(UNANSWERED)
}

fn unanswered_error(timeout: std::time::Duration) -> JSONRPCErrorError {
    JSONRPCErrorError::internal(format!(
        "{UNANSWERED}: every connection subscribed to its thread left and none came back \
         within {} s; it was declined",
        timeout.as_secs()
    ))
}

/// One server request waiting for its answer.
#[derive(Debug)]
pub(super) struct Waiting {
    /// The connections it was sent to that may still answer it; the first answer wins.
    pub(super) audience: Vec<ConnectionId>,
    /// The group (a thread) of a shared request, with the request itself so that it can be
    /// sent again to a connection that joins the group. `None`: one connection's request,
    /// failed as soon as that connection closes.
    shared: Option<(Arc<str>, ServerRequest)>,
    answer: oneshot::Sender<RequestResult>,
    /// Bumped whenever the audience changes, so that an expiry timer only resolves the
    /// request if nobody joined since it was started.
    generation: u64,
}

/// Server requests waiting for the client's answer. Shared by the sender (which registers
/// them) and the connection runtimes (which resolve them from client replies or fail them
/// back when the event queue cannot take them).
#[derive(Debug)]
pub(crate) struct PendingServerRequests {
    next_id: AtomicI64,
    closed: AtomicBool,
    waiting: Mutex<HashMap<RequestId, Waiting>>,
    /// How long a shared request with nobody left to answer it waits for a connection to
    /// join its group.
    unanswered_timeout: std::time::Duration,
}

impl Default for PendingServerRequests {
    fn default() -> Self {
        Self::new(DEFAULT_UNANSWERED_REQUEST_TIMEOUT)
    }
}

impl PendingServerRequests {
    pub(crate) fn new(unanswered_timeout: std::time::Duration) -> Self {
        Self {
            next_id: AtomicI64::new(0),
            closed: AtomicBool::new(false),
            waiting: Mutex::new(HashMap::default()),
            unanswered_timeout,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Waiting>> {
        self.waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn register(
        &self,
        connection: ConnectionId,
    ) -> (RequestId, oneshot::Receiver<RequestResult>) {
        let id = RequestId::Integer(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        if self.closed.load(Ordering::Acquire) {
            let _ = tx.send(Err(JSONRPCErrorError::internal(SHUTTING_DOWN)));
        } else {
            let waiting = Waiting {
                audience: vec![connection],
                shared: None,
                answer: tx,
                generation: 0,
            };
            self.lock().insert(id.clone(), waiting);
        }
        (id, rx)
    }

    /// Registers a request of `group` sent to every connection of `audience`; with an empty
    /// audience it starts waiting for a connection to join at once.
    pub(super) fn register_shared(
        self: &Arc<Self>,
        group: &str,
        audience: Vec<ConnectionId>,
        build: impl FnOnce(RequestId) -> ServerRequest,
    ) -> (ServerRequest, oneshot::Receiver<RequestResult>) {
        let id = RequestId::Integer(self.next_id.fetch_add(1, Ordering::Relaxed));
        let request = build(id.clone());
        let (tx, rx) = oneshot::channel();
        if self.closed.load(Ordering::Acquire) {
            let _ = tx.send(Err(JSONRPCErrorError::internal(SHUTTING_DOWN)));
            return (request, rx);
        }
        let orphaned = audience.is_empty();
        let waiting = Waiting {
            audience,
            shared: Some((Arc::from(group), request.clone())),
            answer: tx,
            generation: 0,
        };
        self.lock().insert(id.clone(), waiting);
        if orphaned {
            self.expire_later(id, 0);
        }
        (request, rx)
    }

    /// Resolves one request; returns `false` for an unknown id (already resolved, or never
    /// sent), which callers log and drop.
    pub(crate) fn resolve(&self, id: &RequestId, result: RequestResult) -> bool {
        match self.lock().remove(id) {
            Some(waiting) => {
                let _ = waiting.answer.send(result);
                true
            }
            None => false,
        }
    }

    /// Resolves one request if it was sent to `connection`: a client may answer only the
    /// server requests it was sent (ids come from one counter shared by every connection).
    /// The first answer wins; a later one finds the id gone.
    pub(crate) fn resolve_from(
        &self,
        connection: ConnectionId,
        id: &RequestId,
        result: RequestResult,
    ) -> bool {
        let mut waiting = self.lock();
        match waiting.get(id) {
            Some(entry) if entry.audience.contains(&connection) => {
                let entry = waiting.remove(id).expect("present under the same lock");
                drop(waiting);
                let _ = entry.answer.send(result);
                true
            }
            _ => false,
        }
    }

    pub(super) fn resolve_matching(
        &self,
        error: &JSONRPCErrorError,
        keep: impl Fn(&Waiting) -> bool,
    ) {
        let drained: Vec<_> = {
            let mut waiting = self.lock();
            let ids: Vec<RequestId> = waiting
                .iter()
                .filter(|(_, entry)| !keep(entry))
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| waiting.remove(&id))
                .collect()
        };
        for entry in drained {
            let _ = entry.answer.send(Err(error.clone()));
        }
    }

    /// Takes `connection` out of the audience of the requests `in_group` selects. A request
    /// left with nobody fails with `error` if it was that connection's alone, and waits for
    /// a connection to join its group (at most the unanswered timeout) if it is shared.
    pub(super) fn leave(
        self: &Arc<Self>,
        connection: ConnectionId,
        in_group: impl Fn(Option<&str>) -> bool,
        error: &JSONRPCErrorError,
    ) {
        let mut failed = Vec::new();
        let mut orphaned = Vec::new();
        {
            let mut waiting = self.lock();
            for (id, entry) in waiting.iter_mut() {
                let group = entry.shared.as_ref().map(|(group, _)| &**group);
                if !in_group(group) || !entry.audience.contains(&connection) {
                    continue;
                }
                entry.audience.retain(|member| *member != connection);
                entry.generation += 1;
                if entry.audience.is_empty() {
                    if entry.shared.is_some() {
                        orphaned.push((id.clone(), entry.generation));
                    } else {
                        failed.push(id.clone());
                    }
                }
            }
            for id in &failed {
                if let Some(entry) = waiting.remove(id) {
                    let _ = entry.answer.send(Err(error.clone()));
                }
            }
        }
        for (id, generation) in orphaned {
            tracing::info!(%id, timeout_s = self.unanswered_timeout.as_secs(),
                "server request has no connection left to answer it; waiting for one");
            self.expire_later(id, generation);
        }
    }

    /// Adds `connection` to the audience of every pending request of `group` it is not in
    /// yet, and returns those requests for sending to it.
    pub(super) fn join(&self, group: &str, connection: ConnectionId) -> Vec<ServerRequest> {
        let mut waiting = self.lock();
        let mut joined: Vec<ServerRequest> = Vec::new();
        for entry in waiting.values_mut() {
            let Some((entry_group, request)) = &entry.shared else {
                continue;
            };
            if &**entry_group != group || entry.audience.contains(&connection) {
                continue;
            }
            entry.audience.push(connection);
            entry.generation += 1;
            joined.push(request.clone());
        }
        // Oldest first: the order the requests were first sent in.
        joined.sort_by_key(|request| match request.id() {
            RequestId::Integer(id) => *id,
            RequestId::String(_) => i64::MAX,
        });
        joined
    }

    /// After the unanswered timeout, declines request `id` if its audience is still the
    /// empty one of `generation`.
    fn expire_later(self: &Arc<Self>, id: RequestId, generation: u64) {
        // Weak: a host shut down meanwhile is not kept alive by the timer.
        let pending = Arc::downgrade(self);
        let timeout = self.unanswered_timeout;
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            let Some(pending) = pending.upgrade() else {
                return;
            };
            let expired = {
                let mut waiting = pending.lock();
                match waiting.get(&id) {
                    Some(entry) if entry.generation == generation && entry.audience.is_empty() => {
                        waiting.remove(&id)
                    }
                    _ => None,
                }
            };
            if let Some(entry) = expired {
                tracing::warn!(%id, timeout_s = timeout.as_secs(),
                    "server request unanswered: no connection came back for it; declined");
                let _ = entry.answer.send(Err(unanswered_error(timeout)));
            }
        });
    }

    /// Fails everything pending and every later request: the host is going away.
    pub(crate) fn close(&self, error: &JSONRPCErrorError) {
        self.closed.store(true, Ordering::Release);
        self.resolve_matching(error, |_| false);
    }
}

/// The answer to a server request, once the client gives it. Resolves with the client's
/// result or error, or with an error from the host: -32001 when the client's event queue was
/// full, -32603 when the client is gone or the host shuts down.
#[derive(Debug)]
pub struct PendingServerRequest {
    pub(super) id: RequestId,
    pub(super) answer: oneshot::Receiver<RequestResult>,
}

impl PendingServerRequest {
    /// The id the request was sent with.
    pub fn id(&self) -> &RequestId {
        &self.id
    }
}

impl Future for PendingServerRequest {
    type Output = RequestResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RequestResult> {
        Pin::new(&mut self.answer).poll(cx).map(|answer| {
            answer.unwrap_or_else(|_| Err(JSONRPCErrorError::internal(SHUTTING_DOWN)))
        })
    }
}
