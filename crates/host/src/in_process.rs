//! The in-process host: runs a [`MessageProcessor`] on Tokio tasks in the caller's process and
//! hands the caller an [`InProcessClientHandle`]. Lane priorities, backpressure and the bounded
//! shutdown of docs/host.md are decided here, in `Runtime::run`.

use foldhash::HashMap;
use std::future::Future;
use std::io;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tandem_protocol::{
    ClientNotification, ClientRequest, EmptyParams, EventCursor, InitializeParams,
    InitializeResponse, JSONRPCErrorError, RequestId, ServerNotification, ServerRequest,
    SessionSource,
};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

use crate::delivery::{DeliveryAck, DeliveryPolicy};
use crate::dispatch::{Dispatcher, ProcessorMessage};
use crate::outgoing::RouterInput;
use crate::outgoing::{
    Envelope, LaneReply, OutgoingMessage, OutgoingMessageSender, PendingServerRequests,
    RequestResult, SHUTTING_DOWN, WriterMessage,
};
use crate::processor::{ConnectionId, MessageProcessor};
use crate::replay::{ReplayWindowLimits, StreamCursor};
use crate::router::{OutboundRouter, WriterFlow};

/// Capacity of every bounded queue of the host unless the start args say otherwise.
pub const DEFAULT_IN_PROCESS_CHANNEL_CAPACITY: usize = 128;
/// How long [`InProcessClientHandle::shutdown`] waits for the runtime's acknowledgement.
pub const DEFAULT_SHUTDOWN_ACK_TIMEOUT: Duration = Duration::from_secs(35);
/// How long each shutdown stage (processor, router, runtime task) may take before it is
/// aborted.
pub const DEFAULT_SHUTDOWN_STAGE_TIMEOUT: Duration = Duration::from_secs(5);

/// How many queued messages one wake-up of the runtime handles from the same queue before it
/// looks at the higher-priority lanes again. Small enough that a reply-lane message waits at
/// most this many cheap, non-blocking steps.
const BATCH: usize = 32;

/// Builds the processor once the host has created the sender it must emit through.
pub type ProcessorFactory =
    Box<dyn FnOnce(OutgoingMessageSender) -> Arc<dyn MessageProcessor> + Send>;

/// Everything [`start`] needs. Build with [`InProcessStartArgs::new`] and adjust the fields.
pub struct InProcessStartArgs {
    /// Creates the processor from the host's outgoing sender.
    pub processor: ProcessorFactory,
    /// Sent as the `initialize` request by [`start`].
    pub initialize: InitializeParams,
    /// Stamped on the connection (and on threads it starts). Default `appServer`.
    pub session_source: SessionSource,
    /// Capacity of each bounded queue; 0 is treated as 1.
    pub channel_capacity: usize,
    /// Which notifications are guaranteed.
    pub delivery_policy: DeliveryPolicy,
    /// Wait for the runtime's shutdown acknowledgement at most this long.
    pub shutdown_ack_timeout: Duration,
    /// Each shutdown stage may take at most this long.
    pub shutdown_stage_timeout: Duration,
    /// How much of each event stream (thread) is kept for replay after a consumer lost events.
    pub replay_window: ReplayWindowLimits,
}

impl InProcessStartArgs {
    /// Start args with the protocol defaults.
    pub fn new<F>(processor: F, initialize: InitializeParams) -> Self
    where
        F: FnOnce(OutgoingMessageSender) -> Arc<dyn MessageProcessor> + Send + 'static,
    {
        Self {
            processor: Box::new(processor),
            initialize,
            session_source: SessionSource::default(),
            channel_capacity: DEFAULT_IN_PROCESS_CHANNEL_CAPACITY,
            delivery_policy: DeliveryPolicy::default(),
            shutdown_ack_timeout: DEFAULT_SHUTDOWN_ACK_TIMEOUT,
            shutdown_stage_timeout: DEFAULT_SHUTDOWN_STAGE_TIMEOUT,
            replay_window: ReplayWindowLimits::default(),
        }
    }
}

/// What [`InProcessClientHandle::next_event`] yields.
#[derive(Debug, Clone, PartialEq)]
pub enum InProcessServerEvent {
    /// A request the client must answer with `respond_to_server_request` or
    /// `fail_server_request`.
    ServerRequest(ServerRequest),
    /// A notification.
    ServerNotification(ServerNotification),
    /// `skipped` best-effort notifications were dropped because the event queue was full.
    Lagged {
        /// How many were dropped since the previous `Lagged`.
        skipped: u64,
    },
}

#[derive(Debug)]
enum ClientCommand {
    Request {
        /// Boxed once here so that the hops to the processor move a pointer, not the request.
        request: Box<ClientRequest>,
        reply: oneshot::Sender<RequestResult>,
        cancel: CancellationToken,
    },
    Notify(ClientNotification),
    ServerRequestAnswer {
        id: RequestId,
        result: RequestResult,
    },
    Shutdown {
        ack: oneshot::Sender<()>,
    },
    /// Replace the event queue: see [`InProcessClientHandle::reattach_events`].
    ReplaceEvents {
        events: mpsc::Sender<QueuedEvent>,
        done: oneshot::Sender<()>,
    },
}

/// What the event queue carries: the event and, for a stream notification, its cursor.
type QueuedEvent = (InProcessServerEvent, Option<StreamCursor>);

/// The error of a request whose reply never came because the host stopped.
fn stopped_before_replying() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "in-process host stopped before replying",
    )
}

/// A cloneable sender for using one in-process host from many tasks.
///
/// Every call enqueues without waiting: a full client queue gives
/// [`io::ErrorKind::WouldBlock`] (retry later), a stopped host [`io::ErrorKind::BrokenPipe`].
#[derive(Debug, Clone)]
pub struct InProcessClientSender {
    commands: mpsc::Sender<ClientCommand>,
}

impl InProcessClientSender {
    fn enqueue(&self, command: ClientCommand) -> io::Result<()> {
        self.commands.try_send(command).map_err(|err| match err {
            TrySendError::Full(_) => {
                io::Error::new(io::ErrorKind::WouldBlock, "in-process client queue is full")
            }
            TrySendError::Closed(_) => {
                io::Error::new(io::ErrorKind::BrokenPipe, "in-process host has shut down")
            }
        })
    }

    /// Sends a request now and returns a future for its reply: the result object or the
    /// JSON-RPC error. Dropping the future cancels the request (the processor's token fires).
    /// A request that could not be enqueued fails on the future's first poll; see
    /// [`Self::try_request`] to learn that at once.
    pub fn request(
        &self,
        request: ClientRequest,
    ) -> impl Future<Output = io::Result<RequestResult>> + Send + use<> {
        let (reply, answer) = oneshot::channel();
        let cancel = CancellationToken::new();
        let on_drop = cancel.clone().drop_guard();
        let sent = self.enqueue(ClientCommand::Request {
            request: Box::new(request),
            reply,
            cancel,
        });
        // Not built on `try_request`: that would nest one more future in the hottest path.
        async move {
            sent?;
            let result = answer.await.map_err(|_| stopped_before_replying());
            on_drop.disarm();
            result
        }
    }

    /// [`Self::request`], telling at once whether the request was enqueued: `Err` means it
    /// never reached the host ([`io::ErrorKind::WouldBlock`]: the client queue is full;
    /// [`io::ErrorKind::BrokenPipe`]: the host stopped), `Ok` holds the wait for the reply,
    /// which fails with [`io::ErrorKind::BrokenPipe`] only if the host stops before replying.
    /// Clients that classify failures as "sent" or "not sent" need that difference.
    pub fn try_request(
        &self,
        request: ClientRequest,
    ) -> io::Result<impl Future<Output = io::Result<RequestResult>> + Send + use<>> {
        let (reply, answer) = oneshot::channel();
        let cancel = CancellationToken::new();
        let on_drop = cancel.clone().drop_guard();
        self.enqueue(ClientCommand::Request {
            request: Box::new(request),
            reply,
            cancel,
        })?;
        Ok(async move {
            let result = answer.await.map_err(|_| stopped_before_replying());
            on_drop.disarm();
            result
        })
    }

    /// Sends a client notification.
    pub fn notify(&self, notification: ClientNotification) -> io::Result<()> {
        self.enqueue(ClientCommand::Notify(notification))
    }

    /// Answers the server request `id` with `result`.
    pub fn respond_to_server_request(&self, id: RequestId, result: Value) -> io::Result<()> {
        self.enqueue(ClientCommand::ServerRequestAnswer {
            id,
            result: Ok(result),
        })
    }

    /// Answers the server request `id` with an error.
    pub fn fail_server_request(&self, id: RequestId, error: JSONRPCErrorError) -> io::Result<()> {
        self.enqueue(ClientCommand::ServerRequestAnswer {
            id,
            result: Err(error),
        })
    }
}

/// The embedder's end of an in-process host. See the crate docs for an example.
#[derive(Debug)]
pub struct InProcessClientHandle {
    sender: InProcessClientSender,
    events: Option<mpsc::Receiver<QueuedEvent>>,
    /// The host's epoch, which every cursor the event queue carries (as its number only)
    /// belongs to.
    epoch: Arc<str>,
    /// The event queue's capacity, for the queue [`Self::reattach_events`] creates.
    capacity: usize,
    runtime: Option<JoinHandle<()>>,
    ack_timeout: Duration,
    stage_timeout: Duration,
    /// What the server answered to `initialize`; `None` only while `start` runs.
    initialize_response: Option<InitializeResponse>,
}

/// Starts a host for `args.processor`, performs `initialize` and sends `initialized`.
///
/// If the processor rejects `initialize`, the host is shut down again and the error is
/// [`io::ErrorKind::InvalidData`] carrying the server's message. Must be called within a Tokio
/// runtime.
pub async fn start(args: InProcessStartArgs) -> io::Result<InProcessClientHandle> {
    let capacity = args.channel_capacity.max(1);
    let (commands_tx, commands) = mpsc::channel(capacity);
    let (processor_tx, processor_rx) = mpsc::channel(capacity);
    let (router_tx, router_rx) = mpsc::channel(capacity);
    let (writer_tx, outbound) = mpsc::channel(capacity);
    let (reply_tx, replies) = mpsc::channel(capacity);
    let (events_tx, events_rx) = mpsc::channel(capacity);

    let server_requests = Arc::new(PendingServerRequests::default());
    let outgoing = OutgoingMessageSender::new(router_tx, server_requests.clone());
    outgoing.add_reply_lane(ConnectionId::IN_PROCESS, reply_tx);
    let processor = (args.processor)(outgoing.clone());

    let mut router = OutboundRouter::new(args.replay_window);
    let epoch = router.epoch();
    // One connection: waiting for its writer delays nobody, and it is the backpressure chain.
    router.add_connection(
        ConnectionId::IN_PROCESS,
        writer_tx,
        WriterFlow::Backpressure,
        // In-process messages are never encoded; the message count bounds the queue.
        None,
    );
    let router_shutdown = CancellationToken::new();
    let router_task = tokio::spawn(router.run(router_rx, router_shutdown.clone()));

    let router_input = outgoing.clone();
    let mut dispatcher = Dispatcher::new(processor, outgoing);
    dispatcher.open_connection(ConnectionId::IN_PROCESS, args.session_source);
    let processor_task = tokio::spawn(dispatcher.run(processor_rx));

    let runtime = Runtime {
        commands,
        processor: Some(processor_tx),
        replies,
        outbound,
        events: events_tx,
        replacing: None,
        replacements: 0,
        router_input,
        pending: HashMap::default(),
        parked: None,
        lagged: 0,
        policy: args.delivery_policy,
        server_requests,
        processor_task: AbortOnDrop(processor_task),
        router_task: AbortOnDrop(router_task),
        router_shutdown,
        stage_timeout: args.shutdown_stage_timeout,
    };
    let mut handle = InProcessClientHandle {
        sender: InProcessClientSender {
            commands: commands_tx,
        },
        events: Some(events_rx),
        epoch,
        capacity,
        runtime: Some(tokio::spawn(runtime.run())),
        ack_timeout: args.shutdown_ack_timeout,
        stage_timeout: args.shutdown_stage_timeout,
        initialize_response: None,
    };

    let initialize = ClientRequest::Initialize {
        request_id: RequestId::Integer(0),
        params: args.initialize,
    };
    let handshake = match timeout(args.shutdown_ack_timeout, handle.request(initialize)).await {
        Ok(Ok(Ok(result))) => serde_json::from_value(result).map_err(|err| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the processor's initialize result does not decode: {err}"),
            )
        }),
        Ok(Ok(Err(error))) => Err(io::Error::new(io::ErrorKind::InvalidData, error.message)),
        Ok(Err(err)) => Err(err),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the processor did not answer initialize in time",
        )),
    };
    match handshake {
        Ok(response) => handle.initialize_response = Some(response),
        Err(err) => {
            let _ = handle.shutdown().await;
            return Err(err);
        }
    }
    // The queue may momentarily be full if capacity is 1; `initialized` must not be lost.
    let initialized = ClientCommand::Notify(ClientNotification::Initialized(EmptyParams {}));
    if handle.sender.commands.send(initialized).await.is_err() {
        return Err(io::Error::new(
            io::ErrorKind::BrokenPipe,
            "in-process host stopped during the handshake",
        ));
    }
    Ok(handle)
}

impl InProcessClientHandle {
    /// The server's `initialize` result (user agent, platform, home, server info).
    pub fn initialize_response(&self) -> &InitializeResponse {
        self.initialize_response
            .as_ref()
            .expect("start returns the handle only after a successful initialize")
    }

    /// A cloneable sender for concurrent use from other tasks.
    pub fn sender(&self) -> InProcessClientSender {
        self.sender.clone()
    }

    /// See [`InProcessClientSender::request`].
    pub fn request(
        &self,
        request: ClientRequest,
    ) -> impl Future<Output = io::Result<RequestResult>> + Send + use<> {
        self.sender.request(request)
    }

    /// See [`InProcessClientSender::notify`].
    pub fn notify(&self, notification: ClientNotification) -> io::Result<()> {
        self.sender.notify(notification)
    }

    /// See [`InProcessClientSender::respond_to_server_request`].
    pub fn respond_to_server_request(&self, id: RequestId, result: Value) -> io::Result<()> {
        self.sender.respond_to_server_request(id, result)
    }

    /// See [`InProcessClientSender::fail_server_request`].
    pub fn fail_server_request(&self, id: RequestId, error: JSONRPCErrorError) -> io::Result<()> {
        self.sender.fail_server_request(id, error)
    }

    /// The next server request, notification or `Lagged` marker; `None` once the host has
    /// stopped (or after [`Self::shutdown`]).
    pub async fn next_event(&mut self) -> Option<InProcessServerEvent> {
        // Not through `next_event_with_cursor`: a cursor nobody reads is not converted.
        Some(self.events.as_mut()?.recv().await?.0)
    }

    /// [`Self::next_event`] with the cursor of a thread's notification (`None` for other
    /// events): the embedder keeps the last one per thread to resume from it
    /// (`thread/resume`'s `cursor`) after it lost events (a `Lagged` marker, or a consumer
    /// replaced with [`Self::reattach_events`]).
    pub async fn next_event_with_cursor(
        &mut self,
    ) -> Option<(InProcessServerEvent, Option<EventCursor>)> {
        let (event, cursor) = self.events.as_mut()?.recv().await?;
        Some((
            event,
            cursor.map(|cursor| cursor.to_event_cursor(&self.epoch)),
        ))
    }

    /// Drops the event consumer (every event not read yet is discarded) and attaches a new,
    /// empty one that [`Self::next_event`] reads from now on.
    ///
    /// Stream notifications (those of the threads the connection is subscribed to) are not
    /// delivered to the new consumer until it resumes each thread with `thread/resume` and the
    /// cursor of the last event it saw: the server then replays every later event still in the
    /// window before any live one, or answers `gap: true` with the whole thread. Events emitted
    /// meanwhile are kept in the windows. Server requests sent while no consumer was attached
    /// are failed back (-32603), as for a consumer that stopped reading.
    pub async fn reattach_events(&mut self) -> io::Result<()> {
        self.events = None;
        let (events, receiver) = mpsc::channel(self.capacity);
        let (done, replaced) = oneshot::channel();
        let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "in-process host has shut down");
        self.sender
            .commands
            .send(ClientCommand::ReplaceEvents { events, done })
            .await
            .map_err(|_| gone())?;
        replaced.await.map_err(|_| gone())?;
        self.events = Some(receiver);
        Ok(())
    }

    /// Shuts the host down within `ack timeout + stage timeout`, whatever state the queues and
    /// the processor are in. Every pending request resolves with -32603. Calling it again does
    /// nothing.
    ///
    /// Returns [`io::ErrorKind::TimedOut`] if the runtime did not acknowledge in time (it was
    /// then aborted).
    pub async fn shutdown(&mut self) -> io::Result<()> {
        // 1. Nobody drains events from here on, so a parked guaranteed notification must fail
        //    fast rather than hold shutdown hostage.
        self.events = None;
        let Some(mut runtime) = self.runtime.take() else {
            return Ok(());
        };
        // 2. Ask the runtime to stop (waiting for room: shutdown is the one command that may)
        //    and wait for its acknowledgement.
        let (ack, acked) = oneshot::channel();
        let commands = self.sender.commands.clone();
        let acknowledged = timeout(self.ack_timeout, async move {
            commands.send(ClientCommand::Shutdown { ack }).await.is_ok() && acked.await.is_ok()
        })
        .await;
        // 3. Give the runtime task one stage to finish, then abort it.
        if timeout(self.stage_timeout, &mut runtime).await.is_err() {
            tracing::warn!("in-process runtime did not stop within the stage timeout; aborting");
            runtime.abort();
        }
        match acknowledged {
            Ok(_) => Ok(()),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "in-process runtime did not acknowledge shutdown in time",
            )),
        }
    }
}

/// Tells the producer, if it asked, that its message reached the consumer.
fn confirm(ack: Option<DeliveryAck>) {
    if let Some(ack) = ack {
        ack.delivered();
    }
}

/// Aborts the task when dropped, so aborting the runtime leaves no processor or router behind.
#[derive(Debug)]
struct AbortOnDrop(JoinHandle<()>);

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
struct Runtime {
    commands: mpsc::Receiver<ClientCommand>,
    /// `None` once the processor is gone.
    processor: Option<mpsc::Sender<ProcessorMessage>>,
    replies: mpsc::Receiver<LaneReply>,
    outbound: mpsc::Receiver<WriterMessage>,
    events: mpsc::Sender<QueuedEvent>,
    /// A consumer replacement in progress: the marker the router writes once it detached the
    /// connection from every stream, and the new queue to use from that marker on.
    replacing: Option<(RequestId, mpsc::Sender<QueuedEvent>, oneshot::Sender<()>)>,
    replacements: u64,
    /// For the replacement's request to the router.
    router_input: OutgoingMessageSender,
    /// Callers waiting for a reply, by request id.
    pending: HashMap<RequestId, oneshot::Sender<RequestResult>>,
    /// At most one guaranteed notification waiting for room, so memory stays bounded.
    parked: Option<(QueuedEvent, Option<DeliveryAck>)>,
    /// Best-effort notifications dropped since the last `Lagged`.
    lagged: u64,
    policy: DeliveryPolicy,
    server_requests: Arc<PendingServerRequests>,
    processor_task: AbortOnDrop,
    router_task: AbortOnDrop,
    router_shutdown: CancellationToken,
    stage_timeout: Duration,
}

impl Runtime {
    async fn run(mut self) {
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
