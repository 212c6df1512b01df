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
//! - [`WriterFlow::CloseWhenStalled`] (websocket connections, many per host): the router never
//!   waits on one connection's writer. Messages that do not fit are kept in order in that
//!   connection's backlog and moved over as room appears; if the writer makes no progress for
//!   the grace period, or the backlog reaches the writer queue's own capacity (in messages or
//!   in bytes), the connection is closed (with a log line naming it) instead of dropping
//!   anything while it lives.
//!
//! A wire connection's writer queue is bounded in bytes as well as in messages
//! ([`ByteBudget`]): a message that would take the queue over its byte limit does not fit,
//! exactly as when the queue is full of messages.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::byte_budget::{ByteBudget, encoded_size};
use crate::delivery::NotificationFilter;
use crate::outgoing::{Envelope, OutgoingMessage, RouterInput, Target, WriterMessage};
use crate::processor::ConnectionId;
use crate::replay::{Attach, ReplayWindowLimits, ReplayWindows, StreamAttachment, StreamCursor};
use crate::transport::connection::{CloseReason, CloseSignal};

/// What the router does when a connection's writer queue is full.
#[derive(Debug, Clone)]
pub(crate) enum WriterFlow {
    /// Wait for room: backpressure reaches the producers.
    Backpressure,
    /// Never wait; close the connection (cancel `close`) once its writer has been stuck for
    /// `grace`, or once it owes more than its writer queue holds again.
    CloseWhenStalled {
        grace: Duration,
        close: Arc<CloseSignal>,
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
    /// [`WriterFlow::CloseWhenStalled`].
    backlog: VecDeque<WriterMessage>,
    /// The encoded size of what `backlog` holds.
    backlog_bytes: usize,
    /// When the writer last made progress while the backlog was non-empty.
    stalled_since: Option<Instant>,
    /// Messages (and bytes) a replay may add to the backlog beyond the writer queue's own
    /// capacity: a replay is bounded by the replay window, and a client that asked for it must
    /// not be closed as slow for receiving it. Cleared once the backlog is empty again.
    replay_allowance: (usize, usize),
}

/// Resolves once `connection`'s writer queue has room for one message.
type RoomFuture = std::pin::Pin<
    Box<
        dyn Future<
                Output = (
                    ConnectionId,
                    Result<mpsc::OwnedPermit<WriterMessage>, mpsc::error::SendError<()>>,
                ),
            > + Send,
    >,
>;

/// The router's state; run it with [`OutboundRouter::run`].
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
                stalled_since: None,
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
                // Nothing stalled (no connection waits for room, so none has a stall deadline):
                // the next input is all there is to wait for. This is the only state of an
                // in-process or stdio host, whose connection is backpressured.
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
            let deadline = self.next_stall_deadline();
            tokio::select! {
                biased;
                // Room for a stalled connection goes before new input, so its backlog shrinks
                // before more is added behind it.
                Some((id, permit)) = self.room.next() => self.room_for(id, permit),
                () = sleep_until(deadline), if deadline.is_some() => self.close_stalled(),
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

    async fn write(&mut self, id: ConnectionId, mut message: WriterMessage) {
        let Some(connection) = self.connections.get_mut(&id) else {
            return;
        };
        // A broadcast copy comes measured; from here on the size travels with the message to
        // the writer, which releases it.
        if connection.budget.is_some() && message.queued_bytes == 0 {
            message.queued_bytes = encoded_size(&message.message);
        }
        if let WriterFlow::Backpressure = connection.flow {
            let bytes = message.queued_bytes;
            if let Some(budget) = &connection.budget {
                // Waiting for bytes to drain is the same backpressure as waiting for room.
                budget.room_for(bytes).await;
                budget.charge(bytes);
            }
            if connection.writer.send(message).await.is_err() {
                if let Some(budget) = &connection.budget {
                    budget.release(bytes);
                }
                tracing::debug!(%id, "connection writer closed; message dropped");
            }
            return;
        }
        // Order is kept: nothing skips ahead of a backlog.
        if !connection.backlog.is_empty() {
            return self.queue_behind(id, message);
        }
        let bytes = message.queued_bytes;
        if connection
            .budget
            .as_ref()
            .is_some_and(|budget| !budget.fits(bytes))
        {
            // Over the byte bound: the same as a full queue.
            connection.stalled_since = Some(Instant::now());
            self.room.push(room_future(id, connection, bytes));
            return self.queue_behind(id, message);
        }
        match try_send(connection, message) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(message)) => {
                connection.stalled_since = Some(Instant::now());
                self.room.push(room_future(id, connection, bytes));
                self.queue_behind(id, message);
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::debug!(%id, "connection writer closed; message dropped");
            }
        }
    }

    fn queue_behind(&mut self, id: ConnectionId, message: WriterMessage) {
        let Some(connection) = self.connections.get_mut(&id) else {
            return;
        };
        connection.backlog_bytes += message.queued_bytes;
        connection.backlog.push_back(message);
        let (extra_messages, extra_bytes) = connection.replay_allowance;
        // Owing a second queue's worth means the writer is not keeping up at all; memory must
        // stay bounded, so the connection goes now rather than at the end of the grace period.
        if connection.backlog.len() >= connection.writer.max_capacity() + extra_messages {
            self.close(id, "its writer queue overflowed");
        } else if connection.backlog.len() > 1
            && connection.budget.as_ref().is_some_and(|budget| {
                connection.backlog_bytes >= budget.limit().saturating_add(extra_bytes)
            })
        {
            // (A single message larger than the limit waits for an empty queue instead.)
            self.close(id, "its writer queue overflowed its byte limit");
        }
    }

    /// The writer of `id` took something: move as much of its backlog as fits.
    fn room_for(
        &mut self,
        id: ConnectionId,
        permit: Result<mpsc::OwnedPermit<WriterMessage>, mpsc::error::SendError<()>>,
    ) {
        let Some(connection) = self.connections.get_mut(&id) else {
            return;
        };
        let Ok(permit) = permit else {
            // The writer is gone; the connection's own close path removes it.
            connection.backlog.clear();
            connection.backlog_bytes = 0;
            connection.stalled_since = None;
            return;
        };
        let Some(first) = connection.backlog.pop_front() else {
            drop(permit);
            return;
        };
        // The room future waited for this message's bytes to fit, and only the router charges.
        connection.backlog_bytes -= first.queued_bytes;
        if let Some(budget) = &connection.budget {
            budget.charge(first.queued_bytes);
        }
        permit.send(first);
        while let Some(message) = connection.backlog.pop_front() {
            let bytes = message.queued_bytes;
            if connection
                .budget
                .as_ref()
                .is_some_and(|budget| !budget.fits(bytes))
            {
                connection.backlog.push_front(message);
                break;
            }
            match try_send(connection, message) {
                Ok(()) => connection.backlog_bytes -= bytes,
                Err(mpsc::error::TrySendError::Full(message)) => {
                    connection.backlog.push_front(message);
                    break;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    connection.backlog.clear();
                    connection.backlog_bytes = 0;
                    break;
                }
            }
        }
        if let Some(front) = connection.backlog.front() {
            // Progress was made: the grace period starts over.
            let bytes = front.queued_bytes;
            connection.stalled_since = Some(Instant::now());
            self.room.push(room_future(id, connection, bytes));
        } else {
            connection.stalled_since = None;
            connection.replay_allowance = (0, 0);
        }
    }

    fn next_stall_deadline(&self) -> Option<Instant> {
        self.connections
            .values()
            .filter_map(
                |connection| match (&connection.flow, connection.stalled_since) {
                    (WriterFlow::CloseWhenStalled { grace, .. }, Some(since)) => {
                        Some(since + *grace)
                    }
                    _ => None,
                },
            )
            .min()
    }

    fn close_stalled(&mut self) {
        let now = Instant::now();
        let expired: Vec<ConnectionId> = self
            .connections
            .iter()
            .filter(
                |(_, connection)| match (&connection.flow, connection.stalled_since) {
                    (WriterFlow::CloseWhenStalled { grace, .. }, Some(since)) => {
                        since + *grace <= now
                    }
                    _ => false,
                },
            )
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            self.close(id, "its writer queue stayed full for the grace period");
        }
    }

    /// Gives up on a connection that cannot keep up: its transport is told to close it, and
    /// nothing more is routed to it.
    fn close(&mut self, id: ConnectionId, reason: &str) {
        if let Some(connection) = self.connections.remove(&id) {
            let queued = connection.backlog.len() + connection.writer.max_capacity()
                - connection.writer.capacity();
            let queued_bytes = connection.backlog_bytes
                + connection
                    .budget
                    .as_ref()
                    .map_or(0, |budget| budget.queued());
            tracing::warn!(%id, queued, queued_bytes, "closing {id}: {reason}");
            if let WriterFlow::CloseWhenStalled { close, .. } = connection.flow {
                close.close(CloseReason::SlowConsumer);
            }
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

/// Hands `message` to the connection's writer without waiting, charging its bytes if it goes.
fn try_send(
    connection: &Connection,
    message: WriterMessage,
) -> Result<(), mpsc::error::TrySendError<WriterMessage>> {
    let bytes = message.queued_bytes;
    // Charged first: the writer may take the message and release it at once.
    if let Some(budget) = &connection.budget {
        budget.charge(bytes);
    }
    let sent = connection.writer.try_send(message);
    if sent.is_err()
        && let Some(budget) = &connection.budget
    {
        budget.release(bytes);
    }
    sent
}

/// Resolves once `connection`'s writer queue has room for one message of `bytes`: a slot, and
/// the bytes under its limit.
fn room_future(id: ConnectionId, connection: &Connection, bytes: usize) -> RoomFuture {
    let writer = connection.writer.clone();
    let budget = connection.budget.clone();
    Box::pin(async move {
        if let Some(budget) = budget {
            budget.room_for(bytes).await;
        }
        (
            id,
            writer
                .reserve_owned()
                .await
                .map_err(|_| mpsc::error::SendError(())),
        )
    })
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tandem_protocol::RequestId;

    fn reply(n: i64) -> RouterInput {
        RouterInput::Message {
            target: Target::Connection(ConnectionId(1)),
            message: Box::new(Envelope {
                message: OutgoingMessage::Response {
                    id: RequestId::Integer(n),
                    result: json!({}),
                },
                ack: None,
                queued_bytes: 0,
                cursor: None,
                replayed: false,
            }),
        }
    }

    fn id_of(message: &WriterMessage) -> i64 {
        match &message.message {
            OutgoingMessage::Response {
                id: RequestId::Integer(n),
                ..
            } => *n,
            other => panic!("unexpected {other:?}"),
        }
    }

    struct Setup {
        input: mpsc::Sender<RouterInput>,
        stalled: mpsc::Receiver<WriterMessage>,
        healthy: mpsc::Receiver<WriterMessage>,
        close: Arc<CloseSignal>,
        shutdown: CancellationToken,
    }

    /// Connection 1 stalls with a writer queue of 2; connection 2 is drained.
    fn setup(grace: Duration) -> Setup {
        let (input, input_rx) = mpsc::channel(16);
        let (stalled_tx, stalled) = mpsc::channel(2);
        let (healthy_tx, healthy) = mpsc::channel(2);
        let close = Arc::new(CloseSignal::default());
        let shutdown = CancellationToken::new();
        let mut router = OutboundRouter::new(ReplayWindowLimits::default());
        let flow = WriterFlow::CloseWhenStalled {
            grace,
            close: close.clone(),
        };
        router.add_connection(ConnectionId(1), stalled_tx, flow.clone(), None);
        let other = WriterFlow::CloseWhenStalled {
            grace,
            close: Arc::new(CloseSignal::default()),
        };
        router.add_connection(ConnectionId(2), healthy_tx, other, None);
        tokio::spawn(router.run(input_rx, shutdown.clone()));
        Setup {
            input,
            stalled,
            healthy,
            close,
            shutdown,
        }
    }

    fn to_healthy(n: i64) -> RouterInput {
        RouterInput::Message {
            target: Target::Connection(ConnectionId(2)),
            message: Box::new(Envelope {
                message: OutgoingMessage::Response {
                    id: RequestId::Integer(n),
                    result: json!({}),
                },
                ack: None,
                queued_bytes: 0,
                cursor: None,
                replayed: false,
            }),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_connection_keeps_order_and_delays_nobody() {
        let mut s = setup(Duration::from_secs(10));
        for n in 0..3 {
            s.input.send(reply(n)).await.unwrap();
        }
        // The third did not fit the stalled writer; another connection is not held up by it.
        s.input.send(to_healthy(100)).await.unwrap();
        let got = tokio::time::timeout(Duration::from_secs(1), s.healthy.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(id_of(&got), 100);
        // Reading the stalled writer releases the backlog, in order.
        let mut seen = Vec::new();
        for _ in 0..3 {
            let message = tokio::time::timeout(Duration::from_secs(1), s.stalled.recv())
                .await
                .unwrap()
                .unwrap();
            seen.push(id_of(&message));
        }
        assert_eq!(seen, [0, 1, 2]);
        assert_eq!(s.close.reason(), None);
        s.shutdown.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn a_writer_stuck_for_the_grace_period_is_closed() {
        let s = setup(Duration::from_secs(10));
        for n in 0..3 {
            s.input.send(reply(n)).await.unwrap();
        }
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert_eq!(s.close.reason(), None, "closed before the grace period");
        let reason = tokio::time::timeout(Duration::from_secs(2), s.close.closed())
            .await
            .expect("closed after the grace period");
        assert_eq!(reason, CloseReason::SlowConsumer);
        s.shutdown.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn owing_a_second_queue_closes_at_once() {
        let s = setup(Duration::from_secs(3600));
        // Two fit the queue, two more fill the backlog up to the queue's capacity.
        for n in 0..4 {
            s.input.send(reply(n)).await.unwrap();
        }
        tokio::time::timeout(Duration::from_secs(1), s.close.closed())
            .await
            .expect("closed on overflow");
        s.shutdown.cancel();
    }

    /// A message of about `bytes` encoded bytes for connection 1.
    fn sized(n: i64, bytes: usize) -> RouterInput {
        RouterInput::Message {
            target: Target::Connection(ConnectionId(1)),
            message: Box::new(Envelope {
                message: OutgoingMessage::Response {
                    id: RequestId::Integer(n),
                    result: json!("x".repeat(bytes)),
                },
                ack: None,
                queued_bytes: 0,
                cursor: None,
                replayed: false,
            }),
        }
    }

    /// Connection 1 with room for 1000 messages but only `limit` bytes; nobody reads it.
    fn budgeted(
        flow: impl FnOnce(Arc<CloseSignal>) -> WriterFlow,
        limit: usize,
    ) -> (
        mpsc::Sender<RouterInput>,
        mpsc::Receiver<WriterMessage>,
        Arc<ByteBudget>,
        Arc<CloseSignal>,
        CancellationToken,
    ) {
        let (input, input_rx) = mpsc::channel(16);
        let (writer_tx, writer) = mpsc::channel(1000);
        let close = Arc::new(CloseSignal::default());
        let budget = Arc::new(ByteBudget::new(limit));
        let shutdown = CancellationToken::new();
        let mut router = OutboundRouter::new(ReplayWindowLimits::default());
        router.add_connection(
            ConnectionId(1),
            writer_tx,
            flow(close.clone()),
            Some(budget.clone()),
        );
        tokio::spawn(router.run(input_rx, shutdown.clone()));
        (input, writer, budget, close, shutdown)
    }

    #[tokio::test(start_paused = true)]
    async fn a_websocket_queue_over_its_bytes_stalls_and_closes_after_the_grace_period() {
        let grace = Duration::from_secs(10);
        let (input, mut writer, budget, close, shutdown) = budgeted(
            |close| WriterFlow::CloseWhenStalled { grace, close },
            10_000,
        );
        // Two 4 KB messages fit 10 KB; the third does not, though 997 slots are free.
        for n in 0..3 {
            input.send(sized(n, 4_000)).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(writer.len(), 2, "the byte bound holds the third back");
        assert!(
            budget.queued() <= 10_000,
            "{} bytes queued",
            budget.queued()
        );
        // Taking one (and releasing its bytes, as the connection writer does) moves it over.
        let first = writer.recv().await.unwrap();
        budget.release(first.queued_bytes);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(
            writer.len(),
            2,
            "the backlog moved once bytes were released"
        );
        // A fourth waits again; with nothing read for the grace period the connection goes.
        input.send(sized(3, 4_000)).await.unwrap();
        tokio::time::sleep(grace - Duration::from_secs(1)).await;
        assert_eq!(close.reason(), None, "closed before the grace period");
        let reason = tokio::time::timeout(Duration::from_secs(2), close.closed())
            .await
            .expect("closed after the grace period");
        assert_eq!(reason, CloseReason::SlowConsumer);
        shutdown.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn owing_a_second_queue_of_bytes_closes_at_once() {
        let (input, _writer, _budget, close, shutdown) = budgeted(
            |close| WriterFlow::CloseWhenStalled {
                grace: Duration::from_secs(3600),
                close,
            },
            10_000,
        );
        // 8 KB queued, then 8 KB + 4 KB owed behind it: over 10 KB in the backlog.
        for (n, bytes) in [(0, 8_000), (1, 8_000), (2, 4_000)] {
            input.send(sized(n, bytes)).await.unwrap();
        }
        let reason = tokio::time::timeout(Duration::from_secs(1), close.closed())
            .await
            .expect("closed on overflowing its bytes");
        assert_eq!(reason, CloseReason::SlowConsumer);
        shutdown.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn a_single_oversized_message_waits_for_an_empty_queue_instead_of_closing() {
        let (input, mut writer, budget, close, shutdown) = budgeted(
            |close| WriterFlow::CloseWhenStalled {
                grace: Duration::from_secs(10),
                close,
            },
            10_000,
        );
        input.send(sized(0, 4_000)).await.unwrap();
        input.send(sized(1, 50_000)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(close.reason(), None);
        for expected in 0..2 {
            let message = tokio::time::timeout(Duration::from_secs(1), writer.recv())
                .await
                .expect("delivered")
                .unwrap();
            assert_eq!(id_of(&message), expected);
            budget.release(message.queued_bytes);
        }
        assert_eq!(close.reason(), None);
        shutdown.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn a_backpressured_queue_over_its_bytes_holds_the_router_back() {
        let (input, mut writer, budget, close, shutdown) =
            budgeted(|_| WriterFlow::Backpressure, 10_000);
        for n in 0..3 {
            input.send(sized(n, 4_000)).await.unwrap();
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(
            writer.len(),
            2,
            "the router waits for bytes, not just slots"
        );
        for expected in 0..3 {
            let message = tokio::time::timeout(Duration::from_secs(1), writer.recv())
                .await
                .expect("delivered once bytes are released")
                .unwrap();
            assert_eq!(id_of(&message), expected);
            budget.release(message.queued_bytes);
        }
        assert_eq!(
            close.reason(),
            None,
            "a backpressured connection is never closed"
        );
        shutdown.cancel();
    }
}
