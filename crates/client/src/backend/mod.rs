//! The transports behind a [`crate::Client`]: the in-process host and the wire connections
//! (a spawned child over stdio, a websocket). Each hands typed [`Incoming`] events to a
//! [`Dispatch`] and carries requests and server-request answers out; everything above them is
//! shared.
//!
//! [`Dispatch`] is the whole of what a backend knows of the client: the backends never import
//! the client's modules, so the client can change how it routes without touching a transport.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::Either;
use serde_json::Value;
use tandem_protocol::{
    ClientRequest, EventCursor, InitializeResponse, JSONRPCErrorError, JSONRPCRequest, RequestId,
    ServerNotification, ServerRequest,
};

use crate::connection::ConnectionState;
use crate::error::ClientError;

pub(crate) mod child;
pub(crate) mod deadline;
pub(crate) mod in_process;
pub(crate) mod link;
mod supervise;
pub(crate) mod websocket;
pub(crate) mod wire;

pub(crate) use supervise::ResumeSession;

/// A reply as a backend hands it over: the server's result or its error.
pub(crate) type Reply = Result<Value, JSONRPCErrorError>;

/// What a transport hands the router.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A notification, with its place in its thread's stream when the server sent one.
    Notification {
        note: ServerNotification,
        cursor: Option<EventCursor>,
    },
    Request(ServerRequest),
    /// The in-process host skipped this many best-effort events.
    Lagged(u64),
    /// The answer to a `thread/resume` sent after a reconnect, routed in its place in the
    /// stream: after the events it replayed, before any live one.
    Resumed {
        thread_id: String,
        reply: Reply,
    },
    /// procre: the answer to a `process/resume` sent after a reconnect, routed after every
    /// notification it replayed and before any live one.
    ProcessResumed {
        handle: String,
        reply: Reply,
    },
}

/// What a backend needs of the client above it, and nothing more.
pub(crate) trait Dispatch: Send + Sync + 'static {
    /// A fresh id for a request the backend sends itself (`initialize`, `thread/resume`).
    fn next_request_id(&self) -> RequestId;

    /// Routes one event of connection `generation`; may wait (lossless subscriptions).
    fn route(
        self: &Arc<Self>,
        generation: u64,
        incoming: Incoming,
    ) -> impl Future<Output = ()> + Send;

    /// Connection `generation` ended. `reconnecting`: the backend is coming back by itself,
    /// so what follows the client's threads should wait rather than end.
    fn connection_lost(&self, generation: u64, reason: &str, reconnecting: bool);

    /// A new connection replaced a lost one and is initialized: resume what the client
    /// follows through `session` before any other request is sent on it.
    fn resume(self: &Arc<Self>, session: ResumeSession) -> impl Future<Output = ()> + Send;

    /// The connection's state changed.
    fn state_changed(&self, state: ConnectionState);
}

/// A request on its way to a backend.
#[derive(Debug)]
pub(crate) enum OutgoingRequest {
    /// Built from typed params ([`crate::Client::call`] and the typed helpers).
    Typed(ClientRequest),
    /// Raw JSON params ([`crate::Client::request`]): written as given over the wire, so the
    /// server judges them; decoded by the in-process backend, whose host takes typed requests.
    Raw(JSONRPCRequest),
}

impl OutgoingRequest {
    pub(crate) fn id(&self) -> &RequestId {
        match self {
            Self::Typed(request) => request.id(),
            Self::Raw(request) => &request.id,
        }
    }
}

/// Why a request got no reply, before the client adds the method name.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Nothing was written.
    NotSent(String),
    /// The client was closed first.
    Closed,
    /// The connection ended; `sent` says whether the request was written first.
    Disconnected { sent: bool, reason: String },
    /// The server could not be started or reached.
    Connect(String),
    /// No reply within `after`; `sent` says whether the request had been written.
    TimedOut { after: Duration, sent: bool },
}

impl Failure {
    pub(crate) fn into_error(self, method: &str) -> ClientError {
        let method = method.to_owned();
        match self {
            Self::NotSent(reason) => ClientError::NotSent { method, reason },
            Self::Closed => ClientError::Closed { method },
            Self::Disconnected { sent, reason } => ClientError::Disconnected {
                method,
                sent,
                reason,
            },
            Self::Connect(reason) => ClientError::Connect { reason },
            Self::TimedOut { after, sent } => ClientError::TimedOut {
                method,
                after,
                sent,
            },
        }
    }
}

/// The transport of one client.
// One per client, inside its shared state: the size difference costs nothing, and boxing the
// in-process variant would add an indirection to every in-process request.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Backend {
    InProcess(in_process::InProcessBackend),
    Wire(wire::WireBackend),
}

impl Backend {
    /// Sends `request` and waits for its reply, for at most `timeout`. In-process, the request
    /// is handed over before this returns, so the future holds only the wait.
    pub(crate) fn request<'a, D: Dispatch>(
        &'a self,
        shared: &'a Arc<D>,
        request: OutgoingRequest,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Reply, Failure>> + Send + 'a {
        match self {
            Self::InProcess(backend) => Either::Left(backend.request(request, timeout)),
            // Boxed: connecting and the handshake make the wire future kilobytes large, and
            // every request future would otherwise carry that size, the in-process ones
            // included (moving it cost more than the rest of the client's work). A wire
            // request does I/O, so one allocation is noise there.
            Self::Wire(backend) => Either::Right(Box::pin(async move {
                let written = AtomicBool::new(false);
                let reply = backend.request(shared, request, &written);
                match timeout {
                    Some(after) => tokio::time::timeout(after, reply)
                        .await
                        .unwrap_or_else(|_| {
                            let sent = written.load(Ordering::Relaxed);
                            Err(Failure::TimedOut { after, sent })
                        }),
                    None => reply.await,
                }
            })),
        }
    }

    /// Delivers the answer to server request `id` of connection `generation`.
    pub(crate) async fn answer(
        &self,
        generation: u64,
        id: RequestId,
        result: Result<Value, JSONRPCErrorError>,
    ) -> Result<(), Failure> {
        match self {
            Self::InProcess(backend) => backend.answer(generation, id, result).await,
            Self::Wire(backend) => backend.answer(generation, id, result).await,
        }
    }

    /// Makes sure a connection is up (wire backends start lazily).
    pub(crate) async fn connect<D: Dispatch>(&self, shared: &Arc<D>) -> Result<(), ClientError> {
        match self {
            Self::InProcess(_) => Ok(()),
            Self::Wire(backend) => backend
                .ensure(shared)
                .await
                .map(|_| ())
                .map_err(|failure| failure.into_error("initialize")),
        }
    }

    /// Ends the connection within the close timeout.
    pub(crate) async fn close(&self, close_timeout: Duration) {
        match self {
            Self::InProcess(backend) => backend.close().await,
            Self::Wire(backend) => backend.close(close_timeout).await,
        }
    }

    /// Stops the connection's tasks without waiting: the last client handle is gone.
    pub(crate) fn abandon(&self) {
        match self {
            Self::InProcess(backend) => backend.abandon(),
            Self::Wire(backend) => backend.abandon(),
        }
    }

    /// Increases on every successful `initialize`; 0 before the first.
    pub(crate) fn generation(&self) -> u64 {
        match self {
            Self::InProcess(_) => in_process::GENERATION,
            Self::Wire(backend) => backend.generation(),
        }
    }

    /// The current connection's `initialize` result.
    pub(crate) fn initialize_response(&self) -> Option<InitializeResponse> {
        match self {
            Self::InProcess(backend) => Some(backend.initialize_response().clone()),
            Self::Wire(backend) => backend.initialize_response(),
        }
    }

    /// Whether a lost connection comes back by itself.
    pub(crate) fn reconnects(&self) -> bool {
        match self {
            Self::InProcess(_) => false,
            Self::Wire(backend) => backend.reconnects(),
        }
    }

    /// The pid of the current child server, for the child backend.
    pub(crate) fn child_pid(&self) -> Option<u32> {
        match self {
            Self::InProcess(_) => None,
            Self::Wire(backend) => backend.child_pid(),
        }
    }
}
