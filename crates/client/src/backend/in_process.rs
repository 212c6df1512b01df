//! The in-process backend: a [`tandem_host`] host behind a worker task that always drains its
//! event queue into the router. Requests go straight from the caller's task to the host's
//! cloneable sender and their replies straight back, so they add no hop; the worker exists so
//! that a reply queued behind a parked guaranteed notification is never stuck waiting for an
//! embedder that does not read events.

use std::future::{Future, ready};
use std::io;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::Either;
use serde_json::Value;
use tandem_host::in_process::{self, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, InProcessClientSender, InProcessServerEvent};
use tandem_protocol::{ClientRequest, InitializeResponse, JSONRPCErrorError, RequestId};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::deadline::{DeadlineWatch, Watched};
use super::{Dispatch, Failure, Incoming, OutgoingRequest, Reply};

/// The in-process connection never restarts: its generation is always the first.
pub(crate) const GENERATION: u64 = 1;

pub(crate) struct InProcessBackend {
    sender: InProcessClientSender,
    /// Boxed: the handshake result is read rarely and would make this variant of the
    /// client's backend enum far larger than the wire one.
    initialize: Box<InitializeResponse>,
    /// The timeouts of pending requests, enforced by one sweeper task.
    deadlines: Arc<DeadlineWatch>,
    stop: CancellationToken,
    worker: Mutex<Option<JoinHandle<()>>>,
    handle: Mutex<Option<InProcessClientHandle>>,
}

impl InProcessBackend {
    /// Starts the host (its `initialize` included); [`Self::spawn_worker`] must follow once the
    /// client's shared state exists.
    pub(crate) async fn start(args: InProcessStartArgs) -> io::Result<Self> {
        let handle = in_process::start(args).await?;
        Ok(Self {
            sender: handle.sender(),
            initialize: Box::new(handle.initialize_response().clone()),
            deadlines: Arc::new(DeadlineWatch::default()),
            stop: CancellationToken::new(),
            worker: Mutex::new(None),
            handle: Mutex::new(Some(handle)),
        })
    }

    pub(crate) fn spawn_worker<D: Dispatch>(&self, shared: Arc<D>) {
        let handle = self
            .handle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("the worker is spawned once");
        let worker = tokio::spawn(run_worker(handle, shared, self.stop.clone()));
        *self.worker.lock().unwrap_or_else(|p| p.into_inner()) = Some(worker);
        // Stopped with the worker; it holds no request, so nothing waits for it.
        tokio::spawn(self.deadlines.clone().run_sweeper(self.stop.clone()));
    }

    pub(crate) fn initialize_response(&self) -> &InitializeResponse {
        &self.initialize
    }

    /// Hands `request` to the host at once and returns the wait for its reply, for at most
    /// `timeout`. The request itself is not kept in the returned future, which stays small:
    /// callers move it (into a `FuturesUnordered`, a task) once per request. The timeout is
    /// watched by the client's [`DeadlineWatch`], not by a timer of its own.
    pub(crate) fn request(
        &self,
        request: OutgoingRequest,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Reply, Failure>> + Send + '_ {
        let request = match request {
            OutgoingRequest::Typed(request) => request,
            // The host takes typed requests, so raw params are typed here by the protocol's
            // own conversion: the step a wire server's transport runs on every frame. Params
            // that do not decode get the answer that transport sends (-32600 with the
            // decoder's message), and the processor never sees them, as over the wire.
            OutgoingRequest::Raw(raw) => match ClientRequest::try_from(raw) {
                Ok(request) => request,
                Err(error) => return Either::Left(ready(Ok(Err(error)))),
            },
        };
        let reply = match self.sender.try_request(request) {
            Ok(reply) => reply,
            Err(error) => return Either::Left(ready(Err(not_sent(error)))),
        };
        let Some(after) = timeout else {
            return Either::Right(Either::Left(reply.map(|reply| reply.map_err(host_stopped))));
        };
        // Measured from the hand-over, as a timer started here would be.
        let deadline = Instant::now() + after;
        let deadlines = &*self.deadlines;
        Either::Right(Either::Right(async move {
            let mut reply = pin!(reply);
            // Watched only once the reply is not there at the first look.
            let mut watched: Option<Watched<'_>> = None;
            std::future::poll_fn(|cx| {
                if let Poll::Ready(reply) = reply.as_mut().poll(cx) {
                    return Poll::Ready(reply.map_err(host_stopped));
                }
                let expired = match &watched {
                    Some(watched) => watched.expired(cx.waker()),
                    None => {
                        // A deadline already past (a zero timeout) is expired by the sweeper
                        // at once, and this task woken.
                        watched = Some(deadlines.watch(deadline, cx.waker()));
                        false
                    }
                };
                if expired {
                    Poll::Ready(Err(Failure::TimedOut { after, sent: true }))
                } else {
                    Poll::Pending
                }
            })
            .await
        }))
    }

    pub(crate) async fn answer(
        &self,
        _generation: u64,
        id: RequestId,
        result: Result<Value, JSONRPCErrorError>,
    ) -> Result<(), Failure> {
        loop {
            let sent = match result.clone() {
                Ok(value) => self.sender.respond_to_server_request(id.clone(), value),
                Err(error) => self.sender.fail_server_request(id.clone(), error),
            };
            match sent {
                Ok(()) => return Ok(()),
                // The runtime drains the client queue before anything else it waits on, so
                // room comes back at once; answers must not be dropped.
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                Err(error) => {
                    return Err(Failure::Disconnected {
                        sent: false,
                        reason: error.to_string(),
                    });
                }
            }
        }
    }

    pub(crate) async fn close(&self) {
        self.stop.cancel();
        let worker = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(worker) = worker
            && let Err(error) = worker.await
        {
            tracing::warn!(%error, "in-process client worker ended abnormally");
        }
    }

    pub(crate) fn abandon(&self) {
        self.stop.cancel();
    }
}

/// The host stopped after the request was written and before it replied.
fn host_stopped(error: io::Error) -> Failure {
    Failure::Disconnected {
        sent: true,
        reason: error.to_string(),
    }
}

/// The host refused the request before it was written.
fn not_sent(error: io::Error) -> Failure {
    if error.kind() == io::ErrorKind::WouldBlock {
        Failure::NotSent("the in-process host's client queue is full".into())
    } else {
        Failure::NotSent(format!("the in-process host is not running: {error}"))
    }
}

/// Drains the host's event queue into the router until told to stop or the host stops, then
/// shuts the host down.
async fn run_worker<D: Dispatch>(
    mut handle: InProcessClientHandle,
    shared: Arc<D>,
    stop: CancellationToken,
) {
    let reason = loop {
        let event = tokio::select! {
            biased;
            _ = stop.cancelled() => break "the client was closed",
            event = handle.next_event() => event,
        };
        let incoming = match event {
            Some(InProcessServerEvent::ServerNotification(note)) => {
                // In-process there is no reconnect, so the cursor is not needed.
                Incoming::Notification { note, cursor: None }
            }
            Some(InProcessServerEvent::ServerRequest(request)) => Incoming::Request(request),
            Some(InProcessServerEvent::Lagged { skipped }) => Incoming::Lagged(skipped),
            None => break "the in-process host stopped",
        };
        tokio::select! {
            biased;
            _ = stop.cancelled() => break "the client was closed",
            () = shared.route(GENERATION, incoming) => {}
        }
    };
    shared.connection_lost(GENERATION, reason, false);
    if let Err(error) = handle.shutdown().await {
        tracing::warn!(%error, "in-process host did not shut down cleanly");
    }
}
