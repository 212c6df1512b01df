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
//!   the grace period, or the backlog reaches the writer queue's own capacity, the connection
//!   is closed (with a log line naming it) instead of dropping anything while it lives.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::delivery::NotificationFilter;
use crate::outgoing::{Envelope, OutgoingMessage, RouterInput, Target, WriterMessage};
use crate::processor::ConnectionId;
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
    /// Messages that did not fit, oldest first; only ever non-empty under
    /// [`WriterFlow::CloseWhenStalled`].
    backlog: VecDeque<WriterMessage>,
    /// When the writer last made progress while the backlog was non-empty.
    stalled_since: Option<Instant>,
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
}

impl OutboundRouter {
    pub(crate) fn new() -> Self {
        Self {
            connections: BTreeMap::new(),
            room: FuturesUnordered::new(),
        }
    }

    pub(crate) fn add_connection(
        &mut self,
        id: ConnectionId,
        writer: mpsc::Sender<WriterMessage>,
        flow: WriterFlow,
    ) {
        self.connections.insert(
            id,
            Connection {
                writer,
                filter: None,
                flow,
                backlog: VecDeque::new(),
                stalled_since: None,
            },
        );
    }

    pub(crate) async fn run(
        mut self,
        mut input: mpsc::Receiver<RouterInput>,
        shutdown: CancellationToken,
    ) {
        let mut input_open = true;
        loop {
            let deadline = self.next_stall_deadline();
            tokio::select! {
                // Shutdown wins every race: a write may wait for room in a writer queue that
                // nobody drains any more, and the stage timeout must not be spent there.
                biased;
                () = shutdown.cancelled() => return,
                // Room for a stalled connection goes before new input, so its backlog shrinks
                // before more is added behind it.
                Some((id, permit)) = self.room.next(), if !self.room.is_empty() => {
                    self.room_for(id, permit);
                }
                () = sleep_until(deadline), if deadline.is_some() => self.close_stalled(),
                item = input.recv(), if input_open => match item {
                    // A backpressured write may wait on a writer nobody drains: shutdown must
                    // still win.
                    Some(item) => if shutdown.run_until_cancelled(self.handle(item)).await.is_none() {
                        return;
                    },
                    // Every sender is gone; nothing more can arrive, but the signal still
                    // decides when the router is done.
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
            } => self.add_connection(connection, writer, flow),
            RouterInput::ConnectionInitialized { connection, filter } => {
                if let Some(entry) = self.connections.get_mut(&connection) {
                    entry.filter = Some(filter);
                }
            }
            RouterInput::ConnectionClosed(connection) => {
                self.connections.remove(&connection);
            }
        }
    }

    async fn deliver(&mut self, target: Target, message: WriterMessage) {
        match target {
            Target::Connection(id) => {
                let Some(connection) = self.connections.get(&id) else {
                    return tracing::debug!(%id, "message for a closed connection dropped");
                };
                if allows(connection, &message.message, false) {
                    self.write(id, message).await;
                }
            }
            Target::Broadcast => {
                let Envelope { message, ack } = *message;
                let recipients: Vec<ConnectionId> = self
                    .connections
                    .iter()
                    .filter(|(_, connection)| allows(connection, &message, true))
                    .map(|(id, _)| *id)
                    .collect();
                for id in recipients {
                    let copy = Box::new(Envelope {
                        message: message.clone(),
                        ack: ack.clone(),
                    });
                    self.write(id, copy).await;
                }
            }
        }
    }

    async fn write(&mut self, id: ConnectionId, message: WriterMessage) {
        let Some(connection) = self.connections.get_mut(&id) else {
            return;
        };
        if let WriterFlow::Backpressure = connection.flow {
            if connection.writer.send(message).await.is_err() {
                tracing::debug!(%id, "connection writer closed; message dropped");
            }
            return;
        }
        // Order is kept: nothing skips ahead of a backlog.
        if !connection.backlog.is_empty() {
            return self.queue_behind(id, message);
        }
        match connection.writer.try_send(message) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(message)) => {
                connection.stalled_since = Some(Instant::now());
                let writer = connection.writer.clone();
                self.room.push(Box::pin(async move {
                    (
                        id,
                        writer
                            .reserve_owned()
                            .await
                            .map_err(|_| mpsc::error::SendError(())),
                    )
                }));
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
        connection.backlog.push_back(message);
        // Owing a second queue's worth means the writer is not keeping up at all; memory must
        // stay bounded, so the connection goes now rather than at the end of the grace period.
        if connection.backlog.len() >= connection.writer.max_capacity() {
            self.close(id, "its writer queue overflowed");
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
            connection.stalled_since = None;
            return;
        };
        let Some(first) = connection.backlog.pop_front() else {
            drop(permit);
            return;
        };
        permit.send(first);
        while let Some(message) = connection.backlog.pop_front() {
            if let Err(error) = connection.writer.try_send(message) {
                match error {
                    mpsc::error::TrySendError::Full(message) => {
                        connection.backlog.push_front(message);
                        break;
                    }
                    mpsc::error::TrySendError::Closed(_) => {
                        connection.backlog.clear();
                        break;
                    }
                }
            }
        }
        if connection.backlog.is_empty() {
            connection.stalled_since = None;
        } else {
            // Progress was made: the grace period starts over.
            connection.stalled_since = Some(Instant::now());
            let writer = connection.writer.clone();
            self.room.push(Box::pin(async move {
                (
                    id,
                    writer
                        .reserve_owned()
                        .await
                        .map_err(|_| mpsc::error::SendError(())),
                )
            }));
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
            tracing::warn!(%id, queued, "closing {id}: {reason}");
            if let WriterFlow::CloseWhenStalled { close, .. } = connection.flow {
                close.close(CloseReason::SlowConsumer);
            }
        }
    }
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
        let mut router = OutboundRouter::new();
        let flow = WriterFlow::CloseWhenStalled {
            grace,
            close: close.clone(),
        };
        router.add_connection(ConnectionId(1), stalled_tx, flow.clone());
        let other = WriterFlow::CloseWhenStalled {
            grace,
            close: Arc::new(CloseSignal::default()),
        };
        router.add_connection(ConnectionId(2), healthy_tx, other);
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
}
