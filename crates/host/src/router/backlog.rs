//! How a routed message reaches a connection's writer queue ([`super::WriterFlow`]): waiting
//! for room (backpressure), or kept in the connection's backlog and moved over as the writer
//! takes what is queued, with the [`BacklogCeiling`] past which the connection is closed at
//! once. The rest of the router decides *who* gets a message; this decides *how it waits*.

use std::collections::VecDeque;

use tokio::sync::mpsc;

use super::{Connection, OutboundRouter, WriterFlow};
use crate::close::CloseReason;
use crate::message::WriterMessage;
use crate::message::encoded_size;
use crate::processor::ConnectionId;

/// How much a connection's backlog (what did not fit its writer queue) may hold before the
/// connection is closed at once. A single message never counts as over: one larger than the
/// ceiling still goes, alone, as one larger than the queue does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BacklogCeiling {
    /// Messages.
    pub(crate) messages: usize,
    /// Bytes, measured as the writer queue's byte budget measures them.
    pub(crate) bytes: usize,
}

/// How many writer queues' worth a backlog may hold beyond the queue itself: 7, so that a
/// connection owes at most 8 queues (docs/host.md, "Wire hosts"). A turn of tandem-server
/// re-emits its text input 6 times (the user item's `item/started` and `item/completed`, the
/// scripted agent's echo as a delta and as `item/completed`, and `turn/completed`, which
/// carries both items), each charged at most the input's decoded length, which the largest
/// accepted message bounds: one turn of the largest input fits with room to spare.
const BACKLOG_QUEUES: usize = 7;

impl BacklogCeiling {
    /// The ceiling of a connection whose writer queue holds `capacity` messages and
    /// `queue_bytes` bytes and whose transport accepts messages of up to `max_message_bytes`:
    /// [`BACKLOG_QUEUES`] queues, counting a queue's bytes as at least one largest message.
    pub(crate) fn new(capacity: usize, queue_bytes: usize, max_message_bytes: usize) -> Self {
        Self {
            messages: capacity.max(1).saturating_mul(BACKLOG_QUEUES),
            bytes: queue_bytes
                .max(max_message_bytes)
                .max(1)
                .saturating_mul(BACKLOG_QUEUES),
        }
    }
}

/// Resolves once `connection`'s writer queue has room for one message.
pub(super) type RoomFuture = std::pin::Pin<
    Box<
        dyn Future<
                Output = (
                    ConnectionId,
                    Result<mpsc::OwnedPermit<WriterMessage>, mpsc::error::SendError<()>>,
                ),
            > + Send,
    >,
>;

impl OutboundRouter {
    /// Hands `message` to connection `id`'s writer queue as its flow says.
    pub(super) async fn write(&mut self, id: ConnectionId, mut message: WriterMessage) {
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
        if connection.writer.is_closed() {
            // The writer gave up on its peer; the connection's close is on its way.
            return tracing::debug!(%id, "connection writer closed; message dropped");
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
            self.room.push(room_future(id, connection, bytes));
            return self.queue_behind(id, message);
        }
        match try_send(connection, message) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(message)) => {
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
        connection.report_backlog();
        let WriterFlow::Backlog { ceiling, .. } = &connection.flow else {
            return;
        };
        let (extra_messages, extra_bytes) = connection.replay_allowance;
        // A backlog within the ceiling is a burst, and waits for the writer however long its
        // peer takes to read, as long as it reads (the writer closes a peer that takes
        // nothing). Past the ceiling memory is at stake: the connection goes now.
        if connection.backlog.len() > ceiling.messages.saturating_add(extra_messages) {
            self.close(id, "its backlog outgrew its ceiling in messages");
        } else if connection.backlog.len() > 1
            && connection.backlog_bytes > ceiling.bytes.saturating_add(extra_bytes)
        {
            // (A single message larger than the ceiling waits for an empty queue instead.)
            self.close(id, "its backlog outgrew its ceiling in bytes");
        }
    }

    /// The writer of `id` took something: move as much of its backlog as fits.
    pub(super) fn room_for(
        &mut self,
        id: ConnectionId,
        permit: Result<mpsc::OwnedPermit<WriterMessage>, mpsc::error::SendError<()>>,
    ) {
        let Some(connection) = self.connections.get_mut(&id) else {
            return;
        };
        let Ok(permit) = permit else {
            // The writer is gone (it gave up on a peer that took nothing): what it was owed is
            // freed now; the connection's own close path removes the rest.
            tracing::debug!(
                %id,
                messages = connection.backlog.len(),
                bytes = connection.backlog_bytes,
                "connection writer closed; its backlog is dropped"
            );
            connection.backlog = VecDeque::new();
            connection.backlog_bytes = 0;
            connection.replay_allowance = (0, 0);
            connection.report_backlog();
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
        connection.report_backlog();
        if let Some(front) = connection.backlog.front() {
            let bytes = front.queued_bytes;
            self.room.push(room_future(id, connection, bytes));
        } else {
            connection.replay_allowance = (0, 0);
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
            if let WriterFlow::Backlog { close, .. } = connection.flow {
                close.close(CloseReason::SlowConsumer);
            }
        }
    }
}

impl Connection {
    /// Tells the writer what the backlog holds (for its log line if it gives up on the peer).
    fn report_backlog(&self) {
        if let Some(budget) = &self.budget {
            budget.set_backlog(self.backlog.len(), self.backlog_bytes);
        }
    }
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
/// the bytes under its limit; or with an error once its writer is gone (a writer that gave up
/// releases nothing, and the backlog must not wait for it).
fn room_future(id: ConnectionId, connection: &Connection, bytes: usize) -> RoomFuture {
    let writer = connection.writer.clone();
    let budget = connection.budget.clone();
    Box::pin(async move {
        let room = async {
            if let Some(budget) = budget {
                budget.room_for(bytes).await;
            }
            writer.clone().reserve_owned().await
        };
        let room = tokio::select! {
            room = room => room.map_err(|_| mpsc::error::SendError(())),
            () = writer.closed() => Err(mpsc::error::SendError(())),
        };
        (id, room)
    })
}
