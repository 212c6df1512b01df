//! The messages the host carries to a connection: an [`OutgoingMessage`] in its [`Envelope`]
//! (delivery ack, charged bytes, stream cursor), who it is for ([`Target`]), a reply on the
//! reply lane ([`LaneReply`]), and the size a message is charged at ([`encoded_size`]). The
//! types every queue shares, below the sender that makes them, the router that routes them and
//! the writers that take them.

use std::sync::Arc;

use serde_json::Value;
use tandem_protocol::{JSONRPCErrorError, RequestId, ServerNotification, ServerRequest};

use crate::byte_budget::{ENVELOPE_BYTES, RequestParams, notification_payload_size};
use crate::delivery::DeliveryAck;
use crate::json_size;
use crate::processor::ConnectionId;
use crate::replay::StreamCursor;

/// The result a client (or the host, on its behalf) gives to a request.
pub type RequestResult = Result<Value, JSONRPCErrorError>;

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
    /// The notification's place in its stream, stamped by the router (stream messages only).
    pub(crate) cursor: Option<StreamCursor>,
    /// Written by a replay: the in-process runtime parks it rather than dropping it, since the
    /// consumer asked for exactly these events.
    pub(crate) replayed: bool,
}

/// What the router and the writer queues carry. Boxed once at the producer: an envelope is a
/// few hundred bytes and would otherwise be copied at every hop and into every future that
/// holds it on the way.
pub(crate) type WriterMessage = Box<Envelope>;

/// Who a routed message is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Connection(ConnectionId),
    /// Every initialized connection.
    Broadcast,
    /// A notification of a stream: numbered, kept for replay, and sent to the connections
    /// attached to the stream plus `also` (see [`crate::replay`]).
    Stream {
        stream: Arc<str>,
        also: Option<ConnectionId>,
    },
}

/// A reply on the reply lane: straight to the connection's runtime, past queued events.
#[derive(Debug)]
pub(crate) struct LaneReply {
    pub(crate) id: RequestId,
    pub(crate) result: RequestResult,
    pub(crate) ack: Option<DeliveryAck>,
}

/// The size of `message` as the writer will encode it, give or take the envelope (id, method,
/// timestamp) and escapes: its payload measured by [`crate::json_size`], in time that does not
/// grow with the length of its strings.
pub(crate) fn encoded_size(message: &OutgoingMessage) -> usize {
    let payload = match message {
        OutgoingMessage::Response { result, .. } => json_size::estimate(result),
        OutgoingMessage::Error { error, .. } => json_size::estimate(error),
        OutgoingMessage::Notification(notification) => notification_payload_size(notification),
        OutgoingMessage::Request(request) => json_size::estimate(&RequestParams(request)),
    };
    // One that cannot be serialized is answered with a small error by the writer instead.
    payload.unwrap_or(0) + ENVELOPE_BYTES
}
