//! The outbound router: takes every message processors emit from the outgoing queue and writes
//! it to the writer queue of the connection it is for, applying that connection's notification
//! filter. One router serves every transport: the in-process runtime, the stdio writer and each
//! websocket writer are all just writer queues here.
//!
//! It stops on an explicit shutdown signal, never because its input closed: detached work may
//! keep an [`crate::OutgoingMessageSender`] alive forever, and shutdown must not wait for it.
//!
//! How a full writer queue is handled is the connection's [`WriterFlow`]:
//! - [`WriterFlow::Backpressure`] (the single connection of an in-process or stdio host): the
//!   router waits for room. That wait is the backpressure chain of docs/host.md (full writer queue,
//!   router waits, outgoing queue fills, producers wait), and with one connection there is
//!   nobody else to delay.
//! - [`WriterFlow::Backlog`] (websocket connections, many per host): the router never waits on
//!   one connection's writer. Messages that do not fit are kept in order in that connection's
//!   backlog and moved over as room appears, however long that takes: a burst (one turn
//!   re-emits its input several times) must not cost a client that reads. Only a backlog past
//!   its [`BacklogCeiling`] closes the connection at once (with a log line naming it), so memory
//!   stays bounded; a writer whose peer takes nothing is closed by the writer itself after its
//!   grace period (`transport::progress`), which drops the queue, and the backlog with it
//!   ([`OutboundRouter::room_for`]).
//!
//! A wire connection's writer queue is bounded in bytes as well as in messages
//! ([`ByteBudget`]): a message that would take the queue over its byte limit does not fit,
//! exactly as when the queue is full of messages.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use tandem_protocol::{EventCursor, RequestId};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::byte_budget::ByteBudget;
use crate::close::CloseSignal;
use crate::delivery::NotificationFilter;
use crate::message::{Envelope, OutgoingMessage, Target, WriterMessage, encoded_size};
use crate::processor::ConnectionId;
use crate::replay::{
    Attach, ReplayWindowLimits, ReplayWindowStats, ReplayWindows, StreamAttachment, StreamCursor,
};

mod backlog;
#[cfg(test)]
mod tests;

pub(crate) use backlog::BacklogCeiling;
use backlog::RoomFuture;

/// What the router does when a connection's writer queue is full.
#[derive(Debug, Clone)]
pub(crate) enum WriterFlow {
    /// Wait for room: backpressure reaches the producers.
    Backpressure,
    /// Never wait: keep what does not fit in a backlog, and close the connection (cancel
    /// `close`) at once if the backlog outgrows `ceiling`.
    Backlog {
        ceiling: BacklogCeiling,
        close: Arc<CloseSignal>,
    },
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
    /// Attach a connection to a stream, replaying what followed `after` first.
    AttachStream {
        stream: Arc<str>,
        connection: ConnectionId,
        after: Option<EventCursor>,
        reply: oneshot::Sender<StreamAttachment>,
    },
    DetachStream {
        stream: Arc<str>,
        connection: ConnectionId,
    },
    /// Detach a connection from every stream, then write a reply to `marker` to it: whatever
    /// its writer takes after that reply was routed after the detach (the in-process host's
    /// consumer replacement, [`crate::InProcessClientHandle::reattach_events`]).
    DetachAllStreams {
        connection: ConnectionId,
        marker: RequestId,
    },
    CloseStream(Arc<str>),
    StreamStats {
        stream: Arc<str>,
        reply: oneshot::Sender<Option<ReplayWindowStats>>,
    },
}

struct Connection {
    writer: mpsc::Sender<WriterMessage>,
    /// `None` until the connection is initialized: broadcasts skip it, and no filter applies
    /// to messages addressed to it directly.
    filter: Option<NotificationFilter>,
    flow: WriterFlow,
    /// The byte bound of `writer`; `None` bounds it in messages only (in-process).
    budget: Option<Arc<ByteBudget>>,
    /// Messages that did not fit, oldest first; only ever non-empty under
    /// [`WriterFlow::Backlog`].
    backlog: VecDeque<WriterMessage>,
    /// The encoded size of what `backlog` holds.
    backlog_bytes: usize,
    /// Messages (and bytes) a replay may add to the backlog beyond the writer queue's own
    /// capacity: a replay is bounded by the replay window, and a client that asked for it must
    /// not be closed as slow for receiving it. Cleared once the backlog is empty again.
    replay_allowance: (usize, usize),
}

pub(crate) struct OutboundRouter {
    connections: BTreeMap<ConnectionId, Connection>,
    /// One waiter per connection with a non-empty backlog.
    room: FuturesUnordered<RoomFuture>,
    /// Stream numbering and replay windows.
    windows: ReplayWindows,
    /// Reused for each stream message's recipients, so routing one allocates nothing.
    recipients: Vec<ConnectionId>,
}

/// Who receives a stream's notification ([`OutboundRouter::record`]).
enum StreamRoute {
    /// This connection only: the envelope carries the cursor.
    One(ConnectionId),
    /// The connections in `recipients`, each with this cursor.
    Many(StreamCursor),
    /// Nobody: it was not a notification.
    Dropped,
}

impl OutboundRouter {
    pub(crate) fn new(limits: ReplayWindowLimits) -> Self {
        Self {
            connections: BTreeMap::new(),
            room: FuturesUnordered::new(),
            windows: ReplayWindows::new(limits),
            recipients: Vec::new(),
        }
    }

    /// The host's epoch, which consumers hold once to complete the cursors they are sent.
    pub(crate) fn epoch(&self) -> Arc<str> {
        Arc::clone(self.windows.epoch())
    }

    pub(crate) fn add_connection(
        &mut self,
        id: ConnectionId,
        writer: mpsc::Sender<WriterMessage>,
        flow: WriterFlow,
        budget: Option<Arc<ByteBudget>>,
    ) {
        self.connections.insert(
            id,
            Connection {
                writer,
                filter: None,
                flow,
                budget,
                backlog: VecDeque::new(),
                backlog_bytes: 0,
                replay_allowance: (0, 0),
            },
        );
    }

    pub(crate) async fn run(
        mut self,
        mut input: mpsc::Receiver<RouterInput>,
        shutdown: CancellationToken,
    ) {
        // Shutdown wins every race: a write may wait for room in a writer queue that nobody
        // drains any more, and the stage timeout must not be spent there. The signal is waited
        // for once around the whole loop and polled first on every wake-up, not raced against
        // each message: a fresh `cancelled()` per message registered and removed a waiter
        // under the token's locks, which was most of what routing one message cost in-process.
        let cancelled = shutdown.cancelled();
        tokio::pin!(cancelled);
        tokio::select! {
            biased;
            () = &mut cancelled => {}
            () = self.route(&mut input) => {}
        }
    }

    /// Routes input until the end of time; only the shutdown signal ends [`Self::run`].
    async fn route(&mut self, input: &mut mpsc::Receiver<RouterInput>) {
        let mut input_open = true;
        loop {
            if self.room.is_empty() {
                // No connection waits for room: the next input is all there is to wait for.
                // This is the only state of an in-process or stdio host, whose connection is
                // backpressured.
                match input_open {
                    true => match input.recv().await {
                        Some(item) => self.handle(item).await,
                        None => input_open = false,
                    },
                    // Every sender is gone; nothing more can arrive, but the signal still
                    // decides when the router is done.
                    false => std::future::pending::<()>().await,
                }
                continue;
            }
            tokio::select! {
                biased;
                // Room for a backlogged connection goes before new input, so its backlog
                // shrinks before more is added behind it.
                Some((id, permit)) = self.room.next() => self.room_for(id, permit),
                item = input.recv(), if input_open => match item {
                    Some(item) => self.handle(item).await,
                    None => input_open = false,
                },
            }
        }
    }

    async fn handle(&mut self, item: RouterInput) {
        match item {
            RouterInput::Message { target, message } => self.deliver(target, message).await,
            RouterInput::ConnectionOpened {
                connection,
                writer,
                flow,
                budget,
            } => self.add_connection(connection, writer, flow, budget),
            RouterInput::ConnectionInitialized { connection, filter } => {
                if let Some(entry) = self.connections.get_mut(&connection) {
                    entry.filter = Some(filter);
                }
            }
            RouterInput::ConnectionClosed(connection) => {
                self.connections.remove(&connection);
                self.windows.detach_everywhere(connection);
            }
            RouterInput::AttachStream {
                stream,
                connection,
                after,
                reply,
            } => self.attach(&stream, connection, after, reply).await,
            RouterInput::DetachStream { stream, connection } => {
                self.windows.detach(&stream, connection);
            }
            RouterInput::DetachAllStreams { connection, marker } => {
                self.windows.detach_everywhere(connection);
                let marker = OutgoingMessage::Response {
                    id: marker,
                    result: serde_json::Value::Null,
                };
                self.write(connection, envelope(marker, None, None, false))
                    .await;
            }
            RouterInput::CloseStream(stream) => self.windows.close(&stream),
            RouterInput::StreamStats { stream, reply } => {
                let _ = reply.send(self.windows.stats(&stream));
            }
        }
    }

    /// Attaches `connection` to `stream` and writes the replay to it before anything routed
    /// later: the router handles one input at a time, so no live event can come between.
    async fn attach(
        &mut self,
        stream: &str,
        connection: ConnectionId,
        after: Option<tandem_protocol::EventCursor>,
        reply: tokio::sync::oneshot::Sender<StreamAttachment>,
    ) {
        let Attach { outcome, replay } = self.windows.attach(stream, connection, after.as_ref());
        if let Some(entry) = self.connections.get_mut(&connection) {
            let bytes: usize = replay
                .iter()
                .map(|(_, note)| crate::byte_budget::notification_size(note))
                .sum();
            entry.replay_allowance.0 += replay.len();
            entry.replay_allowance.1 += bytes;
        }
        for (cursor, notification) in replay {
            let message = OutgoingMessage::Notification(notification);
            let allowed = self
                .connections
                .get(&connection)
                .is_some_and(|entry| allows(entry, &message, false));
            if allowed {
                self.write(connection, envelope(message, None, Some(cursor), true))
                    .await;
            }
        }
        let _ = reply.send(outcome);
    }

    async fn deliver(&mut self, target: Target, mut message: WriterMessage) {
        let id = match target {
            Target::Connection(id) => id,
            // One recipient (a thread with one subscriber, the usual case) takes the envelope
            // itself, stamped, the way a plain notification to a connection goes: nothing is
            // copied, boxed or collected.
            Target::Stream { stream, also } => match self.record(&stream, also, &mut message) {
                StreamRoute::One(id) => id,
                StreamRoute::Many(cursor) => {
                    return self.deliver_to_recipients(message, cursor).await;
                }
                StreamRoute::Dropped => return,
            },
            Target::Broadcast => return self.broadcast(message).await,
        };
        let Some(connection) = self.connections.get(&id) else {
            return tracing::debug!(%id, "message for a closed connection dropped");
        };
        if allows(connection, &message.message, false) {
            self.write(id, message).await;
        }
    }

    /// Numbers and keeps a stream's notification and says who receives it: one connection
    /// (`message` then carries its cursor) or several (collected in `self.recipients`).
    #[inline]
    fn record(
        &mut self,
        stream: &Arc<str>,
        also: Option<ConnectionId>,
        message: &mut WriterMessage,
    ) -> StreamRoute {
        let OutgoingMessage::Notification(notification) = &message.message else {
            tracing::warn!("only notifications belong to a stream; dropped");
            return StreamRoute::Dropped;
        };
        let (cursor, attached) = self.windows.record(stream, notification);
        let single = match (attached, also) {
            ([only], None) => Some(*only),
            ([only], Some(also)) if *only == also => Some(also),
            ([], also) => also,
            _ => None,
        };
        if let Some(id) = single {
            message.cursor = Some(cursor);
            return StreamRoute::One(id);
        }
        self.recipients.extend_from_slice(attached);
        if let Some(also) = also.filter(|also| !self.recipients.contains(also)) {
            self.recipients.push(also);
        }
        StreamRoute::Many(cursor)
    }

    /// Writes a stream's notification to the recipients [`Self::record`] collected.
    async fn deliver_to_recipients(&mut self, mut message: WriterMessage, cursor: StreamCursor) {
        let mut recipients = std::mem::take(&mut self.recipients);
        recipients.retain(|id| {
            self.connections
                .get(id)
                .is_some_and(|connection| allows(connection, &message.message, false))
        });
        // The last recipient takes the envelope itself: a notification can carry a whole
        // turn.
        if let Some(last) = recipients.pop() {
            for id in recipients.drain(..) {
                let copy = envelope(
                    message.message.clone(),
                    message.ack.clone(),
                    Some(cursor),
                    false,
                );
                self.write(id, copy).await;
            }
            message.cursor = Some(cursor);
            self.write(last, message).await;
        }
        self.recipients = recipients;
    }

    /// Writes `message` to every initialized connection that takes it.
    async fn broadcast(&mut self, message: WriterMessage) {
        let Envelope { message, ack, .. } = *message;
        let recipients: Vec<ConnectionId> = self
            .connections
            .iter()
            .filter(|(_, connection)| allows(connection, &message, true))
            .map(|(id, _)| *id)
            .collect();
        // Measured once for every recipient with a byte budget.
        let mut bytes = None;
        for id in recipients {
            let budgeted = self
                .connections
                .get(&id)
                .is_some_and(|connection| connection.budget.is_some());
            let queued_bytes = if budgeted {
                *bytes.get_or_insert_with(|| encoded_size(&message))
            } else {
                0
            };
            let copy = Box::new(Envelope {
                message: message.clone(),
                ack: ack.clone(),
                queued_bytes,
                cursor: None,
                replayed: false,
            });
            self.write(id, copy).await;
        }
    }
}

fn envelope(
    message: OutgoingMessage,
    ack: Option<crate::delivery::DeliveryAck>,
    cursor: Option<StreamCursor>,
    replayed: bool,
) -> WriterMessage {
    Box::new(Envelope {
        message,
        ack,
        queued_bytes: 0,
        cursor,
        replayed,
    })
}

fn allows(connection: &Connection, message: &OutgoingMessage, broadcast: bool) -> bool {
    match (&connection.filter, message) {
        (None, _) => !broadcast,
        // Replies and server requests are never filtered.
        (Some(filter), OutgoingMessage::Notification(notification)) => {
            filter.allows(notification.method())
        }
        (Some(_), _) => true,
    }
}
