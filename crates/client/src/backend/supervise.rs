//! Coming back after a wire connection ended unexpectedly: attempts with exponential backoff
//! ([`crate::ReconnectPolicy`]) under the backend's `connecting` lock, so that requests made
//! meanwhile wait for the new connection instead of racing it, and [`ResumeSession`], through
//! which the client resumes its threads on the new connection before anything else is sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tandem_protocol::{ClientRequest, ProcessResumeParams, RequestId, ThreadResumeParams};

use super::wire::{Connection, Routed, WireInner, send_request};
use super::{Dispatch, Failure, OutgoingRequest};
use crate::connection::ConnectionState;

/// The new connection, for the resumes that must precede every other request on it.
pub(crate) struct ResumeSession {
    connection: Arc<Connection>,
    limit: Duration,
}

impl ResumeSession {
    pub(crate) fn new(connection: Arc<Connection>, limit: Duration) -> Self {
        Self { connection, limit }
    }

    /// The new connection's generation.
    pub(crate) fn generation(&self) -> u64 {
        self.connection.generation
    }

    /// Sends `thread/resume` with `params` as request `id` and waits until its answer was
    /// routed (as [`super::Incoming::Resumed`], after every event it replayed); `Err` with
    /// the reason if no answer came.
    pub(crate) async fn resume(
        &self,
        id: RequestId,
        params: ThreadResumeParams,
    ) -> Result<(), String> {
        let routed = Routed::Thread(params.thread_id.clone());
        let request = ClientRequest::ThreadResume {
            request_id: id,
            params,
        };
        self.send_routed(request, routed).await
    }

    /// procre: sends `process/resume` with `params` as request `id` and waits until its
    /// answer was routed (as [`super::Incoming::ProcessResumed`], after every notification it
    /// replayed).
    pub(crate) async fn resume_process(
        &self,
        id: RequestId,
        params: ProcessResumeParams,
    ) -> Result<(), String> {
        let routed = Routed::Process(params.process_handle.clone());
        let request = ClientRequest::ProcessResume {
            request_id: id,
            params,
        };
        self.send_routed(request, routed).await
    }

    /// Sends a resume whose answer is routed to `routed`'s followers and waits for it.
    async fn send_routed(&self, request: ClientRequest, routed: Routed) -> Result<(), String> {
        let written = AtomicBool::new(false);
        let reply = send_request(
            &self.connection,
            OutgoingRequest::Typed(request),
            &written,
            Some(routed),
        );
        self.wait(reply).await
    }

    async fn wait(
        &self,
        reply: impl Future<Output = Result<super::Reply, Failure>>,
    ) -> Result<(), String> {
        match tokio::time::timeout(self.limit, reply).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(failure)) => Err(failure.reason()),
            Err(_) => Err(format!("no answer within {:?}", self.limit)),
        }
    }
}

/// Comes back after the connection ended with `reason`: waits, opens a new connection (which
/// resumes the client's threads), and reports each step; gives up after the policy's
/// attempts, ending everything that waited.
///
/// Boxed with its type named: a connection's reader starts this, and this opens connections
/// whose readers start it again, a cycle the compiler can only check through a named type.
pub(crate) fn reconnect<D: Dispatch>(
    inner: Arc<WireInner>,
    dispatch: Arc<D>,
    reason: String,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(reconnect_now(inner, dispatch, reason))
}

async fn reconnect_now<D: Dispatch>(inner: Arc<WireInner>, dispatch: Arc<D>, reason: String) {
    let _connecting = inner.connecting.lock().await;
    if inner.live().is_some() {
        // A request came first and opened (and resumed on) a new connection.
        return;
    }
    let policy = inner.config.reconnect;
    let mut reason = reason;
    for attempt in 1..=policy.max_attempts {
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        dispatch.state_changed(ConnectionState::Reconnecting {
            attempt,
            reason: reason.clone(),
        });
        tokio::select! {
            _ = inner.stop.cancelled() => return,
            () = tokio::time::sleep(policy.backoff(attempt)) => {}
        }
        match inner.open_locked(&dispatch).await {
            Ok(connection) => {
                if !connection.alive() {
                    // Lost again while resuming: that connection's reader comes back again.
                    return;
                }
                let reconnects = inner.reconnects.fetch_add(1, Ordering::AcqRel) + 1;
                tracing::info!(
                    generation = connection.generation,
                    reconnects,
                    "reconnected to the server"
                );
                dispatch.state_changed(ConnectionState::Reconnected {
                    generation: connection.generation,
                    reconnects,
                });
                return;
            }
            Err(Failure::Closed) => return,
            Err(failure) => {
                reason = failure.reason();
                tracing::debug!(attempt, %reason, "reconnect attempt failed");
            }
        }
    }
    tracing::warn!(%reason, attempts = policy.max_attempts, "giving up reconnecting to the server");
    // What followed the threads ends now; a later connection starts afresh.
    inner.needs_resume.store(false, Ordering::Release);
    dispatch.connection_lost(inner.generation(), &reason, false);
    dispatch.state_changed(ConnectionState::Disconnected { reason });
}
