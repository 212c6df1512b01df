//! The contract between the host and the embedder's server logic: the [`MessageProcessor`]
//! trait and the connection-level values the host hands it with every call.

use std::collections::HashSet;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use tandem_protocol::{
    ClientInfo, ClientNotification, ClientRequest, InitializeParams, InitializeResponse,
    JSONRPCErrorError, RequestId, SessionSource,
};
use tokio_util::sync::CancellationToken;

/// Identifies one client connection. The in-process connection is [`ConnectionId::IN_PROCESS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub u64);

impl ConnectionId {
    /// The single connection of an in-process host.
    pub const IN_PROCESS: ConnectionId = ConnectionId(0);
}

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "connection {}", self.0)
    }
}

/// A request id scoped to its connection: what a processor passes back to answer a request.
///
/// The host also records here which lane the reply must take, so a processor cannot route a
/// process-control reply behind events by accident. Equality and hashing ignore the lane.
#[derive(Debug, Clone)]
pub struct ConnectionRequestId {
    /// The connection that sent the request.
    pub connection_id: ConnectionId,
    /// The id the client chose.
    pub request_id: RequestId,
    pub(crate) reply_lane: bool,
}

impl ConnectionRequestId {
    /// An id for an ordinary reply. Prefer the id the host passed in [`RequestContext`]: it
    /// carries the lane decision.
    pub fn new(connection_id: ConnectionId, request_id: RequestId) -> Self {
        Self {
            connection_id,
            request_id,
            reply_lane: false,
        }
    }
}

impl PartialEq for ConnectionRequestId {
    fn eq(&self, other: &Self) -> bool {
        self.connection_id == other.connection_id && self.request_id == other.request_id
    }
}

impl Eq for ConnectionRequestId {}

impl Hash for ConnectionRequestId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.connection_id.hash(state);
        self.request_id.hash(state);
    }
}

/// What the host knows about a connection, frozen at `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectionSessionState {
    /// Whether `initialize` succeeded on this connection.
    pub initialized: bool,
    /// The client opted in to experimental methods, fields and notifications.
    pub experimental_api: bool,
    /// Notification methods never sent to this connection.
    pub opted_out_notification_methods: HashSet<String>,
    /// The `clientInfo` of `initialize`, once initialized.
    pub client_info: Option<ClientInfo>,
    /// Where the connection comes from (stamped on threads as `source`).
    pub session_source: SessionSource,
}

impl ConnectionSessionState {
    /// A fresh, uninitialized session.
    pub fn new(session_source: SessionSource) -> Self {
        Self {
            session_source,
            ..Self::default()
        }
    }
}

/// Everything about one request besides the request itself.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// Pass this to [`crate::OutgoingMessageSender::send_response`] to answer.
    pub id: ConnectionRequestId,
    /// The connection's session state.
    pub session: Arc<ConnectionSessionState>,
    /// Cancelled when the caller stops waiting (in-process: the request future was dropped).
    pub cancel: CancellationToken,
}

/// The embedder's server logic. The host calls it on one task, one request at a time, in
/// arrival order; long work (a turn, a process) must be spawned, not awaited here.
///
/// The processor emits everything (responses, notifications, server requests) through the
/// [`crate::OutgoingMessageSender`] it was constructed with. The handshake rules (not
/// initialized, already initialized, experimental gating, unknown custom methods) are enforced
/// by the host before a request reaches the processor.
#[async_trait]
pub trait MessageProcessor: Send + Sync + 'static {
    /// Supplies the `initialize` result, or rejects the handshake (the client may retry).
    async fn initialize(
        &self,
        connection: ConnectionId,
        params: &InitializeParams,
        session: &ConnectionSessionState,
    ) -> Result<InitializeResponse, JSONRPCErrorError>;

    /// Whether this processor serves the embedder-defined method `method`. The host answers
    /// -32601 for a `Custom` request whose method this returns `false` for.
    fn handles_custom_method(&self, _method: &str) -> bool {
        false
    }

    /// Handles one request of an initialized connection. Must answer it, now or later, through
    /// the outgoing sender using `context.id`.
    async fn process_request(&self, request: ClientRequest, context: RequestContext);

    /// Handles a client notification of an initialized connection.
    async fn process_notification(
        &self,
        _connection: ConnectionId,
        _notification: ClientNotification,
        _session: &ConnectionSessionState,
    ) {
    }

    /// The connection is gone: release what it owned (kill its processes, unsubscribe it).
    async fn connection_closed(&self, _connection: ConnectionId) {}

    /// The host is shutting down; bounded by the host's stage timeout, then aborted.
    async fn shutdown(&self) {}
}
