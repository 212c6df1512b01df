//! [`OutgoingMessageSender`]: the only way a processor (and the work it spawns) talks to
//! clients. It decides nothing about queues beyond handing each message to the right lane:
//! process-control replies to the reply lane, everything else to the outbound router.

use foldhash::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::Value;
use tandem_protocol::{
    EventCursor, JSONRPCErrorError, RequestId, RequestMethod, ServerNotification, ServerRequest,
};
use tokio::sync::{mpsc, oneshot};

use crate::delivery::DeliveryAck;
pub(crate) use crate::message::{Envelope, LaneReply, Target, WriterMessage};
pub use crate::message::{OutgoingMessage, RequestResult};
use crate::processor::{ConnectionId, ConnectionRequestId};
use crate::replay::{ReplayWindowLimits, ReplayWindowStats, StreamAttachment};
use crate::router::RouterInput;

mod server_requests;

pub(crate) use server_requests::PendingServerRequests;
pub use server_requests::{
    DEFAULT_UNANSWERED_REQUEST_TIMEOUT, PendingServerRequest, is_unanswered,
};

/// Message text of the -32603 that resolves everything still pending at shutdown.
pub(crate) const SHUTTING_DOWN: &str = "in-process runtime is shutting down";

/// A notification queued by [`OutgoingMessageSender::queue_stream_notification`] (attach19) or
/// [`OutgoingMessageSender::queue_notification`]: resolves on its delivery.
#[derive(Debug)]
pub struct StreamDelivery(oneshot::Receiver<bool>);

impl StreamDelivery {
    /// Waits until every connection attached to the stream took it; `false` if none did.
    pub async fn delivered(self) -> bool {
        self.0.await.unwrap_or(false)
    }
}

/// attach19: an attachment queued by [`OutgoingMessageSender::queue_attach_stream`].
#[derive(Debug)]
pub struct PendingAttachment(oneshot::Receiver<StreamAttachment>);

impl PendingAttachment {
    /// The attachment once the router made it; `None` if the host is stopping.
    pub async fn attached(self) -> Option<StreamAttachment> {
        self.0.await.ok()
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
    /// What the router's replay windows keep of each stream.
    replay_window: ReplayWindowLimits,
    /// Messages a connection's consumer may still hold after their delivery: the in-process
    /// event queue's capacity (a message is delivered once it is in that queue); 0 on a
    /// wire, whose writer encodes a message as it takes it.
    consumer_backlog: usize,
}

impl OutgoingMessageSender {
    pub(crate) fn new(
        router: mpsc::Sender<RouterInput>,
        server_requests: Arc<PendingServerRequests>,
        replay_window: ReplayWindowLimits,
        consumer_backlog: usize,
    ) -> Self {
        Self {
            shared: Arc::new(SenderShared {
                router,
                reply_lanes: RwLock::new(HashMap::default()),
                server_requests,
                replay_window,
                consumer_backlog,
            }),
        }
    }

    /// The most of a stream's newest `process/outputDelta`s (of `delta_len` bytes each) this
    /// host may go on holding after their delivery: its replay window keeps as many as its
    /// bounds allow (in bytes, by the size it charges each, or in events), and an in-process
    /// consumer's event queue holds up to its capacity until the consumer reads them; both
    /// hold the newest ones, so the larger of the two. A producer that reuses its buffers
    /// once nobody holds them keeps this many in rotation beyond the ones in flight.
    pub fn deltas_held_after_delivery(&self, delta_len: usize) -> usize {
        let limits = self.shared.replay_window;
        // The size of such a delta with an empty handle: the smallest it can be charged.
        let charged = crate::byte_budget::process_delta_size(0, delta_len);
        let replay = (limits.max_bytes / charged.max(1)).min(limits.max_events.max(1));
        replay.max(self.shared.consumer_backlog)
    }

    /// The capacity of the queue every message to the router shares (the host's
    /// `channel_capacity`): a producer that keeps several messages in flight keeps them to a
    /// fraction of it, so that the others (the dispatcher's own answers) still find room.
    pub fn queue_capacity(&self) -> usize {
        self.shared.router.max_capacity()
    }

    pub(crate) fn add_reply_lane(&self, connection: ConnectionId, lane: mpsc::Sender<LaneReply>) {
        self.shared
            .reply_lanes
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(connection, lane);
    }

    /// Boxes the message at once, before the returned future first runs: the futures on the
    /// way to the router queue then hold a pointer, not the message (a notification is 336
    /// bytes, copied into each of them otherwise).
    #[inline]
    fn route(
        &self,
        target: Target,
        message: OutgoingMessage,
        ack: Option<DeliveryAck>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let input = RouterInput::Message {
            target,
            message: Box::new(Envelope {
                message,
                ack,
                queued_bytes: 0,
                cursor: None,
                replayed: false,
            }),
        };
        async move {
            if self.shared.router.send(input).await.is_err() {
                tracing::debug!("outbound router has stopped; message discarded");
            }
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

    /// Answers a request with `result`'s value, or with its error.
    pub async fn send_result<T: Serialize>(
        &self,
        id: ConnectionRequestId,
        result: Result<T, JSONRPCErrorError>,
    ) {
        match result {
            Ok(value) => self.send_response(id, value).await,
            Err(error) => self.send_error(id, error).await,
        }
    }

    /// Sends a notification to one connection.
    #[inline]
    pub fn send_notification(
        &self,
        connection: ConnectionId,
        notification: ServerNotification,
    ) -> impl Future<Output = ()> + Send + '_ {
        // Not an `async fn`: the notification goes into its box now, not into this future.
        self.route(
            Target::Connection(connection),
            OutgoingMessage::Notification(notification),
            None,
        )
    }

    /// Sends a notification to one connection and waits until it was handed to the consumer.
    pub async fn send_notification_and_wait(
        &self,
        connection: ConnectionId,
        notification: ServerNotification,
    ) -> bool {
        self.queue_notification(connection, notification)
            .await
            .delivered()
            .await
    }

    /// [`Self::send_notification_and_wait`] in two steps: resolves once the notification is in
    /// the router's queue (behind everything sent before it, ahead of everything sent after),
    /// handing back what resolves once the connection took it. A producer keeps several
    /// messages in flight this way, in order, and still learns of each delivery (tandem's
    /// process output: a bounded window of deltas per stream).
    pub async fn queue_notification(
        &self,
        connection: ConnectionId,
        notification: ServerNotification,
    ) -> StreamDelivery {
        let (ack, delivered) = DeliveryAck::new();
        self.route(
            Target::Connection(connection),
            OutgoingMessage::Notification(notification),
            Some(ack),
        )
        .await;
        StreamDelivery(delivered)
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

    /// Sends a notification of `stream` (tandem-server: one per loaded thread): the host numbers
    /// it, keeps it in the stream's replay window, and sends it with its cursor to every
    /// connection attached to the stream, and to `also` if that is not one of them.
    ///
    /// `stream` is taken as a shared string so that sending allocates no copy of the name.
    #[inline]
    pub fn send_stream_notification(
        &self,
        stream: Arc<str>,
        notification: ServerNotification,
        also: Option<ConnectionId>,
    ) -> impl Future<Output = ()> + Send + '_ {
        // Not an `async fn`: the notification goes into its box now, not into this future.
        self.route(
            Target::Stream { stream, also },
            OutgoingMessage::Notification(notification),
            None,
        )
    }

    /// [`Self::send_stream_notification`], then waits until every connection attached to the
    /// stream took it (or could not); `false` if none did (none attached, or all gone). The
    /// window keeps it either way. Waiting here is how a stream's producer is held back to
    /// the pace of its consumers (tandem-server: a process's output).
    pub async fn send_stream_notification_and_wait(
        &self,
        stream: Arc<str>,
        notification: ServerNotification,
    ) -> bool {
        self.queue_stream_notification(stream, notification)
            .await
            .delivered()
            .await
    }

    /// [`Self::send_stream_notification_and_wait`], running `on_delivered` at the moment the
    /// last recipient took it (see [`Self::send_notification_then`]); with no recipient it
    /// runs once the router numbered and kept the notification.
    pub async fn send_stream_notification_then(
        &self,
        stream: Arc<str>,
        notification: ServerNotification,
        on_delivered: impl FnOnce(bool) + Send + 'static,
    ) -> bool {
        let (ack, delivered) = DeliveryAck::with_callback(Box::new(on_delivered));
        self.queue_stream_with(stream, notification, ack, delivered)
            .await
            .delivered()
            .await
    }

    /// Attaches `connection` to `stream`: it receives the stream's notifications from now on.
    /// With `after` (the cursor of the last notification the client saw), every later event
    /// still in the window is written to the connection first, before any live one; if that
    /// is not possible the attachment says `gap` and nothing is replayed. Resolves once the
    /// replay was queued for the connection; `None` if the host is stopping.
    pub async fn attach_stream(
        &self,
        stream: &str,
        connection: ConnectionId,
        after: Option<EventCursor>,
    ) -> Option<StreamAttachment> {
        self.queue_attach(stream, connection, after)
            .await
            .attached()
            .await
    }

    /// attach19: [`Self::send_stream_notification_and_wait`] in two steps: resolves once the
    /// notification is in the router's queue, handing back what resolves once every attached
    /// connection took it. A producer that must order a notification against a
    /// [`Self::queue_attach_stream`] (what a late attacher's snapshot reflects) queues both
    /// under one lock and waits for delivery after releasing it.
    pub async fn queue_stream_notification(
        &self,
        stream: Arc<str>,
        notification: ServerNotification,
    ) -> StreamDelivery {
        let (ack, delivered) = DeliveryAck::new();
        self.queue_stream_with(stream, notification, ack, delivered)
            .await
    }

    /// Queues a stream notification whose delivery `ack` reports to `delivered`.
    async fn queue_stream_with(
        &self,
        stream: Arc<str>,
        notification: ServerNotification,
        ack: DeliveryAck,
        delivered: oneshot::Receiver<bool>,
    ) -> StreamDelivery {
        self.route(
            Target::Stream { stream, also: None },
            OutgoingMessage::Notification(notification),
            Some(ack),
        )
        .await;
        StreamDelivery(delivered)
    }

    /// attach19: [`Self::attach_stream`] in two steps: resolves once the attachment is in the
    /// router's queue, behind every notification queued before it (they are not sent to
    /// `connection`) and ahead of every one queued after (they are); the returned value
    /// resolves to the attachment.
    pub async fn queue_attach_stream(
        &self,
        stream: &str,
        connection: ConnectionId,
    ) -> PendingAttachment {
        self.queue_attach(stream, connection, None).await
    }

    /// Queues the attachment of `connection` to `stream`, replaying what followed `after`.
    async fn queue_attach(
        &self,
        stream: &str,
        connection: ConnectionId,
        after: Option<EventCursor>,
    ) -> PendingAttachment {
        let (reply, outcome) = oneshot::channel();
        self.route_control(RouterInput::AttachStream {
            stream: Arc::from(stream),
            connection,
            after,
            reply,
        })
        .await;
        PendingAttachment(outcome)
    }

    /// `connection` stops receiving `stream`.
    pub async fn detach_stream(&self, stream: &str, connection: ConnectionId) {
        self.route_control(RouterInput::DetachStream {
            stream: Arc::from(stream),
            connection,
        })
        .await;
    }

    /// Forgets `stream` and its replay window: the thing it was about is gone (a thread
    /// unloaded). A later stream of the same name starts a new life whose cursors never match
    /// the old one's.
    pub async fn close_stream(&self, stream: &str) {
        self.route_control(RouterInput::CloseStream(Arc::from(stream)))
            .await;
    }

    /// What the replay window of `stream` holds now, by its own accounting; `None` for a stream
    /// the host does not know (or when it is stopping).
    pub async fn replay_window_stats(&self, stream: &str) -> Option<ReplayWindowStats> {
        let (reply, stats) = oneshot::channel();
        self.route_control(RouterInput::StreamStats {
            stream: Arc::from(stream),
            reply,
        })
        .await;
        stats.await.ok().flatten()
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

    /// Resolves every pending server request sent to `connection` with `error`, shared ones
    /// included.
    pub fn cancel_connection_requests(&self, connection: ConnectionId, error: JSONRPCErrorError) {
        self.shared
            .server_requests
            .resolve_matching(&error, |entry| !entry.audience.contains(&connection));
    }

    /// `connection` is gone: its own server requests fail with `error`; shared ones lose it
    /// from their audience and, left with nobody, wait for a connection to join their group.
    pub(crate) fn connection_left_requests(
        &self,
        connection: ConnectionId,
        error: JSONRPCErrorError,
    ) {
        self.shared
            .server_requests
            .leave(connection, |_| true, &error);
    }

    /// Sends a shared server request of `group` (a thread id) to every connection of
    /// `audience`: the first answer from any of them wins, the others' answers are dropped as
    /// answers to an unknown request. A connection that later [joins](Self::join_requests)
    /// the group is sent it too. When every connection has [left](Self::leave_requests) (or
    /// closed), the request waits for one to join, at most the host's unanswered timeout,
    /// and then resolves with an error that [`is_unanswered`] recognizes. `build` makes the
    /// request with the id the host chose.
    pub async fn send_shared_request(
        &self,
        group: &str,
        audience: Vec<ConnectionId>,
        build: impl FnOnce(RequestId) -> ServerRequest,
    ) -> PendingServerRequest {
        let (request, answer) =
            self.shared
                .server_requests
                .register_shared(group, audience.clone(), build);
        let id = request.id().clone();
        let last = audience.len().saturating_sub(1);
        let mut request = Some(request);
        for (index, connection) in audience.into_iter().enumerate() {
            let message = if index == last {
                request.take().expect("the last target takes the request")
            } else {
                request.clone().expect("taken only by the last target")
            };
            self.route(
                Target::Connection(connection),
                OutgoingMessage::Request(message),
                None,
            )
            .await;
        }
        PendingServerRequest { id, answer }
    }

    /// Makes `connection` one of the connections that may answer every pending shared
    /// request of `group`, and sends it those it was not sent yet, oldest first (a client
    /// that resumes or subscribes to a thread gets the thread's waiting approvals again).
    /// Returns how many were sent.
    pub async fn join_requests(&self, group: &str, connection: ConnectionId) -> usize {
        let requests = self.shared.server_requests.join(group, connection);
        let count = requests.len();
        for request in requests {
            self.route(
                Target::Connection(connection),
                OutgoingMessage::Request(request),
                None,
            )
            .await;
        }
        count
    }

    /// Takes `connection` out of the audience of the pending shared requests of `group` (it
    /// unsubscribed from the thread); see [`Self::send_shared_request`] for what happens to a
    /// request left with nobody.
    pub fn leave_requests(&self, group: &str, connection: ConnectionId) {
        self.shared.server_requests.leave(
            connection,
            |entry_group| entry_group == Some(group),
            &JSONRPCErrorError::internal(format!("{connection} left")),
        );
    }

    /// Resolves every pending server request with `error`.
    pub fn cancel_all_requests(&self, error: JSONRPCErrorError) {
        self.shared
            .server_requests
            .resolve_matching(&error, |_| false);
    }
}

#[cfg(test)]
#[path = "shared_requests_tests.rs"]
mod shared_requests_tests;

fn to_result<T: Serialize>(result: T) -> RequestResult {
    serde_json::to_value(result)
        .map_err(|err| JSONRPCErrorError::internal(format!("failed to serialize response: {err}")))
}
