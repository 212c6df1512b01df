//! The in-process host: runs a [`MessageProcessor`] on Tokio tasks in the caller's process and
//! hands the caller an [`InProcessClientHandle`]. Lane priorities, backpressure and the bounded
//! shutdown of docs/host.md are decided in `Runtime::run` (`runtime`); this file holds the
//! client's side: the start, the handle and its sender.

use foldhash::HashMap;
use std::future::Future;
use std::io;
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
use crate::dispatch::Dispatcher;
use crate::outgoing::{OutgoingMessageSender, PendingServerRequests, RequestResult};
use crate::processor::{ConnectionId, MessageProcessor};
use crate::replay::{ReplayWindowLimits, StreamCursor};
use crate::router::{OutboundRouter, WriterFlow};

mod runtime;

use runtime::{AbortOnDrop, Runtime};

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
    let outgoing = OutgoingMessageSender::new(
        router_tx,
        server_requests.clone(),
        args.replay_window,
        capacity,
    );
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
