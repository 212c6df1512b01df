//! [`OutgoingMessageSender`]: the only way a processor (and the work it spawns) talks to
//! clients. It decides nothing about queues beyond handing each message to the right lane:
//! process-control replies to the reply lane, everything else to the outbound router.

use foldhash::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};

use serde::Serialize;
use serde_json::Value;
use tandem_protocol::{
    JSONRPCErrorError, RequestId, RequestMethod, ServerNotification, ServerRequest,
};
use tokio::sync::{mpsc, oneshot};

use crate::byte_budget::ByteBudget;
use crate::delivery::{DeliveryAck, NotificationFilter};
use crate::processor::{ConnectionId, ConnectionRequestId};
use crate::router::WriterFlow;

/// The result a client (or the host, on its behalf) gives to a request.
pub type RequestResult = Result<Value, JSONRPCErrorError>;

/// Message text of the -32603 that resolves everything still pending at shutdown.
pub(crate) const SHUTTING_DOWN: &str = "in-process runtime is shutting down";

/// One message for one connection, as the router hands it to that connection's writer.
#[derive(Debug, Clone, PartialEq)]
pub enum OutgoingMessage {
    /// A successful reply.
    Response {
        /// The request answered.
        id: RequestId,
        /// Its result.
        result: Value,
    },
    /// An error reply.
    Error {
        /// The request answered.
        id: RequestId,
        /// What went wrong.
        error: JSONRPCErrorError,
    },
    /// A server notification.
    Notification(ServerNotification),
    /// A server request the client must answer.
    Request(ServerRequest),
}

/// A message plus the producer's optional wish to hear when it was delivered.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub(crate) message: OutgoingMessage,
    pub(crate) ack: Option<DeliveryAck>,
    /// What the router charged the connection's byte budget for it (0: no budget); the writer
    /// releases it when it takes the message.
    pub(crate) queued_bytes: usize,
}

/// What the router and the writer queues carry. Boxed once at the producer: an envelope is a
/// few hundred bytes and would otherwise be copied at every hop and into every future that
/// holds it on the way.
pub(crate) type WriterMessage = Box<Envelope>;

/// Who a routed message is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Connection(ConnectionId),
    /// Every initialized connection.
    Broadcast,
}

/// What travels on the outgoing queue to the router. Connection bookkeeping shares the queue
/// with messages so that, for example, a filter installed at `initialize` applies exactly to
/// the notifications emitted after the `initialize` reply.
#[derive(Debug)]
pub(crate) enum RouterInput {
    Message {
        target: Target,
        message: WriterMessage,
    },
    /// A transport accepted a connection; everything routed to it goes to `writer`.
    ConnectionOpened {
        connection: ConnectionId,
        writer: mpsc::Sender<WriterMessage>,
        flow: WriterFlow,
        /// The byte bound of `writer`, if it has one (wire connections).
        budget: Option<Arc<ByteBudget>>,
    },
    ConnectionInitialized {
        connection: ConnectionId,
        filter: NotificationFilter,
    },
    ConnectionClosed(ConnectionId),
}

/// A reply on the reply lane: straight to the connection's runtime, past queued events.
#[derive(Debug)]
pub(crate) struct LaneReply {
    pub(crate) id: RequestId,
    pub(crate) result: RequestResult,
    pub(crate) ack: Option<DeliveryAck>,
}

/// Server requests waiting for the client's answer. Shared by the sender (which registers
/// them) and the connection runtimes (which resolve them from client replies or fail them
/// back when the event queue cannot take them).
#[derive(Debug, Default)]
pub(crate) struct PendingServerRequests {
    next_id: AtomicI64,
    closed: AtomicBool,
    waiting: Mutex<HashMap<RequestId, (ConnectionId, oneshot::Sender<RequestResult>)>>,
}

impl PendingServerRequests {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<RequestId, (ConnectionId, oneshot::Sender<RequestResult>)>>
    {
        self.waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn register(&self, connection: ConnectionId) -> (RequestId, oneshot::Receiver<RequestResult>) {
        let id = RequestId::Integer(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        if self.closed.load(Ordering::Acquire) {
            let _ = tx.send(Err(JSONRPCErrorError::internal(SHUTTING_DOWN)));
        } else {
            self.lock().insert(id.clone(), (connection, tx));
        }
        (id, rx)
    }

    /// Resolves one request; returns `false` for an unknown id (already resolved, or never
    /// sent), which callers log and drop.
    pub(crate) fn resolve(&self, id: &RequestId, result: RequestResult) -> bool {
        match self.lock().remove(id) {
            Some((_, tx)) => {
                let _ = tx.send(result);
                true
            }
            None => false,
        }
    }

    /// Resolves one request if `connection` is the one it was sent to: a client may answer only
    /// its own server requests (ids come from one counter shared by every connection).
    pub(crate) fn resolve_from(
        &self,
        connection: ConnectionId,
        id: &RequestId,
        result: RequestResult,
    ) -> bool {
        let mut waiting = self.lock();
        match waiting.get(id) {
            Some((owner, _)) if *owner == connection => {
                let (_, tx) = waiting.remove(id).expect("present under the same lock");
                drop(waiting);
                let _ = tx.send(result);
                true
            }
            _ => false,
        }
    }

    fn resolve_matching(&self, error: &JSONRPCErrorError, keep: impl Fn(ConnectionId) -> bool) {
        let drained: Vec<_> = {
            let mut waiting = self.lock();
            let ids: Vec<RequestId> = waiting
                .iter()
                .filter(|(_, (connection, _))| !keep(*connection))
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| waiting.remove(&id))
                .collect()
        };
        for (_, tx) in drained {
            let _ = tx.send(Err(error.clone()));
        }
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
    id: RequestId,
    answer: oneshot::Receiver<RequestResult>,
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

/// Sends responses, notifications and server requests to clients. Cheap to clone; clones may
/// outlive the host (detached work), in which case sends are silently discarded.
///
/// Every `send_*` waits for room in the bounded outgoing queue: that wait is how backpressure
/// reaches producers. The `*_and_wait` variants additionally wait until the message was handed
/// to the consumer, returning whether it was (`false`: filtered, dropped or consumer gone).
#[derive(Debug, Clone)]
pub struct OutgoingMessageSender {
    shared: Arc<SenderShared>,
}

#[derive(Debug)]
struct SenderShared {
    router: mpsc::Sender<RouterInput>,
    reply_lanes: RwLock<HashMap<ConnectionId, mpsc::Sender<LaneReply>>>,
    server_requests: Arc<PendingServerRequests>,
}

impl OutgoingMessageSender {
    pub(crate) fn new(
        router: mpsc::Sender<RouterInput>,
        server_requests: Arc<PendingServerRequests>,
    ) -> Self {
        Self {
            shared: Arc::new(SenderShared {
                router,
                reply_lanes: RwLock::new(HashMap::default()),
                server_requests,
            }),
        }
    }

    pub(crate) fn add_reply_lane(&self, connection: ConnectionId, lane: mpsc::Sender<LaneReply>) {
        self.shared
            .reply_lanes
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(connection, lane);
    }

    async fn route(&self, target: Target, message: OutgoingMessage, ack: Option<DeliveryAck>) {
        let input = RouterInput::Message {
            target,
            message: Box::new(Envelope {
                message,
                ack,
                queued_bytes: 0,
            }),
        };
        if self.shared.router.send(input).await.is_err() {
            tracing::debug!("outbound router has stopped; message discarded");
        }
    }

    pub(crate) fn remove_reply_lane(&self, connection: ConnectionId) {
        self.shared
            .reply_lanes
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&connection);
    }

    pub(crate) async fn route_control(&self, input: RouterInput) {
        let _ = self.shared.router.send(input).await;
    }

    async fn reply(
        &self,
        id: ConnectionRequestId,
        result: RequestResult,
        ack: Option<DeliveryAck>,
    ) {
        if id.reply_lane {
            let lane = self
                .shared
                .reply_lanes
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .get(&id.connection_id)
                .cloned();
            if let Some(lane) = lane {
                let reply = LaneReply {
                    id: id.request_id,
                    result,
                    ack,
                };
                if lane.send(reply).await.is_err() {
                    tracing::debug!("reply lane closed; reply discarded");
                }
                return;
            }
        }
        let message = match result {
            Ok(result) => OutgoingMessage::Response {
                id: id.request_id,
                result,
            },
            Err(error) => OutgoingMessage::Error {
                id: id.request_id,
                error,
            },
        };
        self.route(Target::Connection(id.connection_id), message, ack)
            .await;
    }

    /// Answers a request with `result`.
    pub async fn send_response<T: Serialize>(&self, id: ConnectionRequestId, result: T) {
        self.reply(id, to_result(result), None).await;
    }

    /// Answers a request and waits until the caller has the answer.
    pub async fn send_response_and_wait<T: Serialize>(
        &self,
        id: ConnectionRequestId,
        result: T,
    ) -> bool {
        let (ack, delivered) = DeliveryAck::new();
        self.reply(id, to_result(result), Some(ack)).await;
        delivered.await.unwrap_or(false)
    }

    /// Answers a request, runs `on_delivered` at the moment the answer is handed over (with
    /// whether it was), and waits like [`Self::send_response_and_wait`]. The same contract as
    /// [`Self::send_notification_then`]: `on_delivered` runs before the host takes the
    /// consumer's next request, so keep it short and non-blocking.
    pub async fn send_response_then<T: Serialize>(
        &self,
        id: ConnectionRequestId,
        result: T,
        on_delivered: impl FnOnce(bool) + Send + 'static,
    ) -> bool {
        let (ack, delivered) = DeliveryAck::with_callback(Box::new(on_delivered));
        self.reply(id, to_result(result), Some(ack)).await;
        delivered.await.unwrap_or(false)
    }

    /// Answers a request with an error.
    pub async fn send_error(&self, id: ConnectionRequestId, error: JSONRPCErrorError) {
        self.reply(id, Err(error), None).await;
    }

    /// Sends a notification to one connection.
    pub async fn send_notification(
        &self,
        connection: ConnectionId,
        notification: ServerNotification,
    ) {
        self.route(
            Target::Connection(connection),
            OutgoingMessage::Notification(notification),
            None,
        )
        .await;
    }

    /// Sends a notification to one connection and waits until it was handed to the consumer.
    pub async fn send_notification_and_wait(
        &self,
        connection: ConnectionId,
        notification: ServerNotification,
    ) -> bool {
        let (ack, delivered) = DeliveryAck::new();
        self.route(
            Target::Connection(connection),
            OutgoingMessage::Notification(notification),
            Some(ack),
        )
        .await;
        delivered.await.unwrap_or(false)
    }

    /// Sends a notification to one connection, runs `on_delivered` at the moment it is handed
    /// over (with whether it was), and waits like [`Self::send_notification_and_wait`].
    ///
    /// `on_delivered` runs synchronously in the host's delivery path, before the host takes the
    /// consumer's next request, so state it changes is visible to anything the consumer does
    /// in reaction (a process handle released once its `process/exited` is delivered: a
    /// request that follows the notification never finds it still held). Keep it short and
    /// non-blocking.
    pub async fn send_notification_then(
        &self,
        connection: ConnectionId,
        notification: ServerNotification,
        on_delivered: impl FnOnce(bool) + Send + 'static,
    ) -> bool {
        let (ack, delivered) = DeliveryAck::with_callback(Box::new(on_delivered));
        self.route(
            Target::Connection(connection),
            OutgoingMessage::Notification(notification),
            Some(ack),
        )
        .await;
        delivered.await.unwrap_or(false)
    }

    /// Sends a notification to every initialized connection.
    pub async fn broadcast_notification(&self, notification: ServerNotification) {
        self.route(
            Target::Broadcast,
            OutgoingMessage::Notification(notification),
            None,
        )
        .await;
    }

    /// Broadcasts and waits until every recipient took it (or could not); `true` if any did.
    pub async fn broadcast_notification_and_wait(&self, notification: ServerNotification) -> bool {
        let (ack, delivered) = DeliveryAck::new();
        self.route(
            Target::Broadcast,
            OutgoingMessage::Notification(notification),
            Some(ack),
        )
        .await;
        delivered.await.unwrap_or(false)
    }

    /// Sends the server request `M` to a connection; await the returned value for the answer.
    pub async fn send_request<M>(
        &self,
        connection: ConnectionId,
        params: M::Params,
    ) -> PendingServerRequest
    where
        M: RequestMethod<Request = ServerRequest>,
    {
        self.send_request_with(connection, |id| M::into_request(id, params))
            .await
    }

    /// Sends an embedder-defined server request.
    pub async fn send_custom_request(
        &self,
        connection: ConnectionId,
        method: impl Into<String>,
        params: Value,
    ) -> PendingServerRequest {
        let method = method.into();
        self.send_request_with(connection, |request_id| ServerRequest::Custom {
            request_id,
            method,
            params,
        })
        .await
    }

    async fn send_request_with(
        &self,
        connection: ConnectionId,
        build: impl FnOnce(RequestId) -> ServerRequest,
    ) -> PendingServerRequest {
        let (id, answer) = self.shared.server_requests.register(connection);
        self.route(
            Target::Connection(connection),
            OutgoingMessage::Request(build(id.clone())),
            None,
        )
        .await;
        PendingServerRequest { id, answer }
    }

    /// Resolves one pending server request with `error` (e.g. its turn was interrupted);
    /// `false` if it was no longer pending.
    pub fn cancel_request(&self, id: &RequestId, error: JSONRPCErrorError) -> bool {
        self.shared.server_requests.resolve(id, Err(error))
    }

    /// Resolves every pending server request of `connection` with `error`.
    pub fn cancel_connection_requests(&self, connection: ConnectionId, error: JSONRPCErrorError) {
        self.shared
            .server_requests
            .resolve_matching(&error, |owner| owner != connection);
    }

    /// Resolves every pending server request with `error`.
    pub fn cancel_all_requests(&self, error: JSONRPCErrorError) {
        self.shared
            .server_requests
            .resolve_matching(&error, |_| false);
    }
}

fn to_result<T: Serialize>(result: T) -> RequestResult {
    serde_json::to_value(result)
        .map_err(|err| JSONRPCErrorError::internal(format!("failed to serialize response: {err}")))
}
