//! The in-process runtime task (`Runtime::run`): the one place that moves messages between
//! the client, the processor and the event queue, in the lane priorities of docs/host.md, and
//! runs the bounded shutdown.

use foldhash::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use tandem_protocol::{JSONRPCErrorError, RequestId};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

use crate::delivery::{DeliveryAck, DeliveryPolicy};
use crate::dispatch::ProcessorMessage;
use crate::outgoing::{
    Envelope, LaneReply, OutgoingMessage, OutgoingMessageSender, PendingServerRequests,
    RequestResult, SHUTTING_DOWN, WriterMessage,
};
use crate::processor::ConnectionId;
use crate::router::RouterInput;

use super::*;

/// Aborts the task when dropped, so aborting the runtime leaves no processor or router behind.
#[derive(Debug)]
pub(super) struct AbortOnDrop(pub(super) JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How the event queue treats a message that does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Dropped and counted into the next `Lagged`.
    BestEffort,
    /// Parked until it fits; ordinary traffic stops behind it.
    Guaranteed,
    /// Failed back to the processor, which is waiting for an answer.
    ServerRequest,
}

/// The runtime task: the one place that moves messages between the client, the processor and
/// the event queue.
pub(super) struct Runtime {
    pub(super) commands: mpsc::Receiver<ClientCommand>,
    /// `None` once the processor is gone.
    pub(super) processor: Option<mpsc::Sender<ProcessorMessage>>,
    pub(super) replies: mpsc::Receiver<LaneReply>,
    pub(super) outbound: mpsc::Receiver<WriterMessage>,
    pub(super) events: mpsc::Sender<QueuedEvent>,
    /// A consumer replacement in progress: the marker the router writes once it detached the
    /// connection from every stream, and the new queue to use from that marker on.
    pub(super) replacing: Option<(RequestId, mpsc::Sender<QueuedEvent>, oneshot::Sender<()>)>,
    pub(super) replacements: u64,
    /// For the replacement's request to the router.
    pub(super) router_input: OutgoingMessageSender,
    /// Callers waiting for a reply, by request id.
    pub(super) pending: HashMap<RequestId, oneshot::Sender<RequestResult>>,
    /// At most one guaranteed notification waiting for room, so memory stays bounded.
    pub(super) parked: Option<(QueuedEvent, Option<DeliveryAck>)>,
    /// Best-effort notifications dropped since the last `Lagged`.
    pub(super) lagged: u64,
    pub(super) policy: DeliveryPolicy,
    pub(super) server_requests: Arc<PendingServerRequests>,
    pub(super) processor_task: AbortOnDrop,
    pub(super) router_task: AbortOnDrop,
    pub(super) router_shutdown: CancellationToken,
    pub(super) stage_timeout: Duration,
}

impl Runtime {
    pub(super) async fn run(mut self) {
        let ack = loop {
            // Room in the event queue is only awaited when something is owed to it; an owned
            // permit keeps the handlers below free to use `self`.
            let owed = self.parked.is_some() || self.lagged > 0;
            let room = owed.then(|| self.events.clone().reserve_owned());
            tokio::select! {
                // Checked in this order on every turn:
                biased;

                // 1. The reply lane. Process-control replies exist so that `process/kill`
                //    answers while events are stuck; nothing may stand in front of them.
                Some(reply) = self.replies.recv() => {
                    self.resolve(reply.id, reply.result, reply.ack);
                }

                // 2. The client queue: requests, answers to server requests, shutdown. It keeps
                //    flowing while a notification is parked, so the client can always act.
                command = self.commands.recv() => match command {
                    Some(command) => {
                        if let ControlFlow::Break(ack) = self.client_commands(command) {
                            break ack;
                        }
                    }
                    // Every sender is gone: nobody can ask for anything any more.
                    None => break None,
                },

                // 3. Room in the event queue for what is owed: the `Lagged` count first (the
                //    consumer learns of its loss before anything newer), then the parked
                //    notification.
                permit = async move { room?.await.ok() }, if owed => {
                    match permit {
                        Some(permit) if self.lagged > 0 => {
                            permit.send((InProcessServerEvent::Lagged { skipped: self.lagged }, None));
                            self.lagged = 0;
                        }
                        Some(permit) => {
                            if let Some((event, ack)) = self.parked.take() {
                                permit.send(event);
                                confirm(ack);
                            }
                        }
                        // The consumer is gone; what was owed can never be delivered.
                        None => {
                            self.parked = None;
                            self.lagged = 0;
                        }
                    }
                }

                // 4. Ordinary replies and events from the router, but only while nothing is
                //    parked: taking more would let them overtake the parked notification.
                Some(message) = self.outbound.recv(), if self.parked.is_none() => {
                    self.outbound_messages(message);
                }
            }
        };
        self.shut_down(ack).await;
    }

    /// Handles `first` and whatever else is already queued, up to [`BATCH`], without going
    /// back to the select: a burst costs one wake-up instead of one per command.
    fn client_commands(
        &mut self,
        first: ClientCommand,
    ) -> ControlFlow<Option<oneshot::Sender<()>>> {
        let mut next = Some(first);
        for _ in 0..BATCH {
            match next.take() {
                Some(ClientCommand::Shutdown { ack }) => return ControlFlow::Break(Some(ack)),
                Some(command) => self.client_command(command).map_break(|()| None)?,
                None => break,
            }
            next = self.commands.try_recv().ok();
        }
        // Budget spent with one command already taken: handle it before yielding.
        match next {
            Some(ClientCommand::Shutdown { ack }) => ControlFlow::Break(Some(ack)),
            Some(command) => self.client_command(command).map_break(|()| None),
            None => ControlFlow::Continue(()),
        }
    }

    fn client_command(&mut self, command: ClientCommand) -> ControlFlow<()> {
        match command {
            ClientCommand::Request {
                request,
                reply,
                cancel,
            } => {
                let id = request.id().clone();
                // A caller that dropped its future no longer holds the id.
                if self
                    .pending
                    .get(&id)
                    .is_some_and(|waiting| !waiting.is_closed())
                {
                    let error =
                        JSONRPCErrorError::invalid_request(format!("duplicate request id: {id}"));
                    let _ = reply.send(Err(error));
                    return ControlFlow::Continue(());
                }
                let message = ProcessorMessage::Request {
                    connection: ConnectionId::IN_PROCESS,
                    request,
                    cancel,
                };
                let Some(queue) = &self.processor else {
                    return ControlFlow::Break(());
                };
                match queue.try_send(message) {
                    Ok(()) => {
                        self.pending.insert(id, reply);
                    }
                    Err(TrySendError::Full(_)) => {
                        let _ =
                            reply.send(Err(JSONRPCErrorError::overloaded("request queue is full")));
                    }
                    Err(TrySendError::Closed(_)) => {
                        let _ = reply.send(Err(JSONRPCErrorError::internal(
                            "message processor has stopped",
                        )));
                        tracing::error!("message processor stopped; ending the in-process runtime");
                        return ControlFlow::Break(());
                    }
                }
            }
            ClientCommand::Notify(notification) => {
                let method = notification.method().to_owned();
                let message = ProcessorMessage::Notification {
                    connection: ConnectionId::IN_PROCESS,
                    notification,
                };
                if let Some(queue) = &self.processor
                    && let Err(err) = queue.try_send(message)
                {
                    tracing::warn!(%method, "client notification dropped: {err}");
                }
            }
            ClientCommand::ServerRequestAnswer { id, result } => {
                if !self.server_requests.resolve(&id, result) {
                    tracing::warn!(%id, "answer to an unknown server request dropped");
                }
            }
            ClientCommand::ReplaceEvents { events, done } => self.replace_events(events, done),
            ClientCommand::Shutdown { .. } => unreachable!("handled by the loop"),
        }
        ControlFlow::Continue(())
    }

    /// Handles `first` and whatever else the router already queued, up to [`BATCH`], stopping
    /// as soon as a notification is parked (nothing may overtake it).
    fn outbound_messages(&mut self, first: WriterMessage) {
        self.outbound_message(first);
        for _ in 1..BATCH {
            if self.parked.is_some() {
                return;
            }
            match self.outbound.try_recv() {
                Ok(message) => self.outbound_message(message),
                Err(_) => return,
            }
        }
    }

    fn outbound_message(&mut self, envelope: WriterMessage) {
        let Envelope {
            message,
            ack,
            cursor,
            replayed,
            ..
        } = *envelope;
        match message {
            OutgoingMessage::Response { id, result } => self.resolve(id, Ok(result), ack),
            OutgoingMessage::Error { id, error } => self.resolve(id, Err(error), ack),
            OutgoingMessage::Notification(notification) => {
                // A replay is what the consumer asked for to fill a gap: dropping part of it
                // would open the gap again.
                let class = if replayed || self.policy.is_guaranteed(notification.method()) {
                    Class::Guaranteed
                } else {
                    Class::BestEffort
                };
                self.offer(
                    (
                        InProcessServerEvent::ServerNotification(notification),
                        cursor,
                    ),
                    ack,
                    class,
                );
            }
            OutgoingMessage::Request(request) => {
                self.offer(
                    (InProcessServerEvent::ServerRequest(request), None),
                    ack,
                    Class::ServerRequest,
                );
            }
        }
    }

    /// Starts replacing the event queue: until the router's marker arrives, events go nowhere
    /// (the old consumer is gone); the router detaches the connection from every stream before
    /// it writes the marker, so no stream event routed before the replacement reaches the new
    /// queue, and the new consumer's `thread/resume` replays from its own cursor.
    fn replace_events(&mut self, events: mpsc::Sender<QueuedEvent>, done: oneshot::Sender<()>) {
        let (nowhere, _) = mpsc::channel(1);
        self.events = nowhere;
        self.parked = None;
        self.lagged = 0;
        self.replacements += 1;
        let marker = RequestId::String(format!("tandem-host/replace-events/{}", self.replacements));
        self.replacing = Some((marker.clone(), events, done));
        let router = self.router_input.clone();
        tokio::spawn(async move {
            router
                .route_control(RouterInput::DetachAllStreams {
                    connection: ConnectionId::IN_PROCESS,
                    marker,
                })
                .await;
        });
    }

    fn resolve(&mut self, id: RequestId, result: RequestResult, ack: Option<DeliveryAck>) {
        if self
            .replacing
            .as_ref()
            .is_some_and(|(marker, _, _)| *marker == id)
        {
            let (_, events, done) = self.replacing.take().expect("checked above");
            self.events = events;
            let _ = done.send(());
            return;
        }
        match self.pending.remove(&id) {
            Some(caller) => {
                if caller.send(result).is_ok() {
                    confirm(ack);
                }
            }
            None => tracing::warn!(%id, "reply to an unknown request dropped"),
        }
    }

    /// Puts one event into the event queue, or applies its class's rule when it does not fit.
    fn offer(&mut self, event: QueuedEvent, ack: Option<DeliveryAck>, class: Class) {
        let outcome = if self.lagged > 0 {
            match self.events.try_send((
                InProcessServerEvent::Lagged {
                    skipped: self.lagged,
                },
                None,
            )) {
                Ok(()) => {
                    self.lagged = 0;
                    self.events.try_send(event)
                }
                // The marker did not fit, so neither does the event behind it.
                Err(TrySendError::Full(_)) => Err(TrySendError::Full(event)),
                Err(TrySendError::Closed(_)) => Err(TrySendError::Closed(event)),
            }
        } else {
            self.events.try_send(event)
        };
        let (event, error) = match outcome {
            Ok(()) => {
                confirm(ack);
                return;
            }
            Err(TrySendError::Full(event)) => match class {
                Class::Guaranteed => {
                    self.parked = Some((event, ack));
                    return;
                }
                Class::BestEffort => {
                    self.lagged += 1;
                    return;
                }
                Class::ServerRequest => (
                    event,
                    JSONRPCErrorError::overloaded("server request queue is full"),
                ),
            },
            Err(TrySendError::Closed(event)) => (
                event,
                JSONRPCErrorError::internal("in-process client is no longer reading events"),
            ),
        };
        // Never lose a server request silently: the processor is waiting on it.
        if let (InProcessServerEvent::ServerRequest(request), _) = event {
            self.server_requests.resolve(request.id(), Err(error));
        }
    }

    /// docs/host.md's shutdown sequence, each stage bounded by the stage timeout.
    async fn shut_down(mut self, ack: Option<oneshot::Sender<()>>) {
        let error = JSONRPCErrorError::internal(SHUTTING_DOWN);
        // Stop taking client commands; whatever is still queued gets its answer now.
        self.commands.close();
        while let Ok(command) = self.commands.try_recv() {
            if let ClientCommand::Request { reply, .. } = command {
                let _ = reply.send(Err(error.clone()));
            }
        }
        self.server_requests.close(&error);
        for (_, caller) in self.pending.drain() {
            let _ = caller.send(Err(error.clone()));
        }
        self.parked = None;

        // Closing the processor queue lets the processor task finish its backlog and run the
        // processor's own shutdown. Keep draining its output meanwhile (there is nobody to
        // deliver it to) so that it never blocks on a full queue.
        self.processor = None;
        let stage = tokio::time::sleep(self.stage_timeout);
        tokio::pin!(stage);
        loop {
            tokio::select! {
                biased;
                _ = &mut self.processor_task.0 => break,
                _ = &mut stage => {
                    tracing::warn!("message processor did not shut down within the stage timeout; aborting");
                    self.processor_task.0.abort();
                    break;
                }
                Some(_) = self.replies.recv() => {}
                Some(_) = self.outbound.recv() => {}
            }
        }

        // The router stops on this signal even while senders live on in detached work.
        self.router_shutdown.cancel();
        if timeout(self.stage_timeout, &mut self.router_task.0)
            .await
            .is_err()
        {
            tracing::warn!("outbound router did not stop within the stage timeout; aborting");
            self.router_task.0.abort();
        }
        if let Some(ack) = ack {
            let _ = ack.send(());
        }
    }
}
