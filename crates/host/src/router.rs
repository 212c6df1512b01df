//! The outbound router: takes every message processors emit from the outgoing queue and writes
//! it to the writer queue of the connection it is for, applying that connection's notification
//! filter. One router serves every transport; the in-process runtime is just one writer.
//!
//! It stops on an explicit shutdown signal, never because its input closed: detached work may
//! keep an [`crate::OutgoingMessageSender`] alive forever, and shutdown must not wait for it.

use std::collections::BTreeMap;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::delivery::NotificationFilter;
use crate::outgoing::{Envelope, OutgoingMessage, RouterInput, Target, WriterMessage};
use crate::processor::ConnectionId;

struct Connection {
    writer: mpsc::Sender<WriterMessage>,
    /// `None` until the connection is initialized: broadcasts skip it, and no filter applies
    /// to messages addressed to it directly.
    filter: Option<NotificationFilter>,
}

/// The router's state; run it with [`OutboundRouter::run`].
pub(crate) struct OutboundRouter {
    connections: BTreeMap<ConnectionId, Connection>,
}

impl OutboundRouter {
    pub(crate) fn new() -> Self {
        Self {
            connections: BTreeMap::new(),
        }
    }

    pub(crate) fn add_connection(&mut self, id: ConnectionId, writer: mpsc::Sender<WriterMessage>) {
        self.connections.insert(
            id,
            Connection {
                writer,
                filter: None,
            },
        );
    }

    pub(crate) async fn run(
        mut self,
        mut input: mpsc::Receiver<RouterInput>,
        shutdown: CancellationToken,
    ) {
        // Shutdown wins every race: a write may wait for room in a writer queue that nobody
        // drains any more, and the stage timeout must not be spent there.
        let _ = shutdown
            .run_until_cancelled(async move {
                while let Some(item) = input.recv().await {
                    self.handle(item).await;
                }
                // Every sender is gone; nothing more can arrive, but the signal still decides
                // when the router is done.
                std::future::pending::<()>().await;
            })
            .await;
    }

    async fn handle(&mut self, item: RouterInput) {
        match item {
            RouterInput::Message { target, message } => self.deliver(target, message).await,
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
            Target::Connection(id) => match self.connections.get(&id) {
                Some(connection) if allows(connection, &message.message, false) => {
                    write(connection, message).await;
                }
                Some(_) => {}
                None => tracing::debug!(%id, "message for a closed connection dropped"),
            },
            Target::Broadcast => {
                let Envelope { message, ack } = *message;
                for connection in self.connections.values() {
                    if allows(connection, &message, true) {
                        let copy = Box::new(Envelope {
                            message: message.clone(),
                            ack: ack.clone(),
                        });
                        write(connection, copy).await;
                    }
                }
            }
        }
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

async fn write(connection: &Connection, message: WriterMessage) {
    if connection.writer.send(message).await.is_err() {
        tracing::debug!("connection writer closed; message dropped");
    }
}
