//! Out-of-process hosting: one [`MessageProcessor`] serving wire connections over [`stdio`]
//! and `websocket` (feature `websocket`, on by default), through the same dispatcher (handshake, experimental gating), outbound
//! router (opt-outs, per-connection writers) and reply lane as the in-process host, so the
//! processor cannot tell the transports apart.
//!
//! A [`TransportHost`] owns the processor task and the router; each transport opens
//! connections on it. Every connection has its own session state, its own writer task and its
//! own queues: a host-made answer queue (parse errors, -32001 for a full processor queue),
//! the reply lane, and the writer queue the router fills. What happens when a writer queue is
//! full is decided per transport in the outbound router: stdio, the single connection, applies
//! backpressure; websocket connections never delay each other and are closed when they stop
//! reading.
//!
//! ```no_run
//! use tandem_host::transport::{stdio, TransportHost, TransportHostOptions};
//! use tandem_test_support::TestProcessor;
//!
//! # async fn run() -> std::io::Result<()> {
//! // Any processor factory: here a test processor; `tandem app-server` uses `TandemServer`.
//! let processor = TestProcessor::builder().factory();
//! let host = TransportHost::start(processor, TransportHostOptions::default());
//! // Serves one client on stdin/stdout until stdin ends.
//! stdio::serve(&host, stdio::StdioOptions::default()).await?;
//! host.shutdown().await;
//! # Ok(())
//! # }
//! ```

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tandem_protocol::SessionSource;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::byte_budget::ByteBudget;
use crate::dispatch::{Dispatcher, ProcessorMessage};
use crate::in_process::{DEFAULT_IN_PROCESS_CHANNEL_CAPACITY, DEFAULT_SHUTDOWN_STAGE_TIMEOUT};
use crate::outgoing::{OutgoingMessageSender, PendingServerRequests};
use crate::processor::{ConnectionId, MessageProcessor};
use crate::replay::ReplayWindowLimits;
use crate::router::RouterInput;
use crate::router::{BacklogCeiling, OutboundRouter, WriterFlow};

#[cfg(feature = "websocket")]
pub mod close_watch;
pub(crate) mod connection;
#[cfg(feature = "websocket")]
mod frame_reads;
pub(crate) mod parts;
pub(crate) mod progress;
#[cfg(feature = "websocket")]
mod raw_frames;
pub mod stdio;
mod trace;
#[cfg(all(unix, feature = "websocket"))]
pub mod unix_socket;
#[cfg(feature = "websocket")]
pub mod websocket;

pub use trace::WIRE_TRACE_TARGET;

use connection::{CloseSignal, Inbound, Outbound, StallWatch};
use progress::WriteProgress;

/// How a [`TransportHost`] is set up. Every field has the protocol default.
#[derive(Debug, Clone)]
pub struct TransportHostOptions {
    /// Capacity of the processor queue, the outgoing queue and each reply lane; 0 is treated
    /// as 1. Default 128.
    pub channel_capacity: usize,
    /// Each shutdown stage (connections, processor, router) may take at most this long.
    /// Default 5 s.
    pub shutdown_stage_timeout: Duration,
    /// Stamped on every connection (and the threads it starts). Default `appServer`.
    pub session_source: SessionSource,
    /// Bytes (encoded) one connection's writer queue may hold, beside its message capacity;
    /// over it the queue counts as full. Default [`DEFAULT_WRITER_QUEUE_BYTES`].
    pub writer_queue_bytes: usize,
    /// How much of each event stream (thread) is kept for clients that reconnect and resume
    /// from a cursor. Default [`ReplayWindowLimits::default`].
    pub replay_window: ReplayWindowLimits,
    /// How long a thread's server request waits for a connection to answer it once every
    /// connection it was sent to has gone; then it is declined. Default
    /// [`crate::DEFAULT_UNANSWERED_REQUEST_TIMEOUT`].
    pub unanswered_request_timeout: Duration,
}

/// Default [`TransportHostOptions::writer_queue_bytes`]: 64 MiB.
pub const DEFAULT_WRITER_QUEUE_BYTES: usize = 64 * 1024 * 1024;

impl Default for TransportHostOptions {
    fn default() -> Self {
        Self {
            channel_capacity: DEFAULT_IN_PROCESS_CHANNEL_CAPACITY,
            shutdown_stage_timeout: DEFAULT_SHUTDOWN_STAGE_TIMEOUT,
            session_source: SessionSource::AppServer,
            writer_queue_bytes: DEFAULT_WRITER_QUEUE_BYTES,
            replay_window: ReplayWindowLimits::default(),
            unanswered_request_timeout: crate::DEFAULT_UNANSWERED_REQUEST_TIMEOUT,
        }
    }
}

/// A processor served to wire connections. Start it, hand it to one or more transports, shut
/// it down when they are done.
pub struct TransportHost {
    /// `None` once shutdown began: no new connection may start.
    processor: Mutex<Option<mpsc::Sender<ProcessorMessage>>>,
    outgoing: OutgoingMessageSender,
    server_requests: Arc<PendingServerRequests>,
    next_connection: AtomicU64,
    options: TransportHostOptions,
    /// Every connection's reader and writer, so shutdown can wait for them.
    connections: TaskTracker,
    stop: CancellationToken,
    tasks: Mutex<Option<(JoinHandle<()>, JoinHandle<()>)>>,
    /// Ends the processor's loop even if a stuck connection still holds a sender.
    processor_stop: CancellationToken,
    router_shutdown: CancellationToken,
    /// The router's epoch, for each connection's writer to complete the cursors it is sent.
    epoch: Arc<str>,
    /// Connections open now (each one's [`connection::OpenCount`] holds one).
    open: Arc<AtomicUsize>,
    /// When the host started, for [`TransportHost::uptime`].
    started: std::time::Instant,
}

impl std::fmt::Debug for TransportHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransportHost")
            .field("options", &self.options)
            .field("connections", &self.connections.len())
            .finish_non_exhaustive()
    }
}

/// A connection a transport opened: feed frames to `inbound`, run `outbound` on a writer.
pub(crate) struct OpenedConnection {
    pub(crate) inbound: Inbound,
    pub(crate) outbound: Outbound,
    /// Only websocket connections are closed by the server before their peer is done.
    #[cfg_attr(not(feature = "websocket"), allow(dead_code))]
    pub(crate) close: Arc<CloseSignal>,
}

/// How a transport wants its connection's full writer queue handled.
pub(crate) enum WriterPolicy {
    /// Wait for room (a single connection: backpressure reaches the producers).
    Backpressure,
    /// Never wait: keep a backlog up to its ceiling (set by the largest message the transport
    /// accepts, `max_message_bytes`), and close the connection once its peer takes no bytes
    /// for `grace` (as `progress` counts them) while something is owed (websocket).
    #[cfg_attr(not(feature = "websocket"), allow(dead_code))]
    CloseWhenStalled {
        grace: Duration,
        max_message_bytes: usize,
        progress: Arc<WriteProgress>,
    },
}

impl TransportHost {
    /// Starts the processor and the router. Must be called within a Tokio runtime.
    pub fn start<F>(processor: F, options: TransportHostOptions) -> Arc<Self>
    where
        F: FnOnce(OutgoingMessageSender) -> Arc<dyn MessageProcessor>,
    {
        let capacity = options.channel_capacity.max(1);
        let (processor_tx, processor_rx) = mpsc::channel(capacity);
        let (router_tx, router_rx) = mpsc::channel(capacity);
        let server_requests = Arc::new(PendingServerRequests::new(
            options.unanswered_request_timeout,
        ));
        let outgoing = OutgoingMessageSender::new(
            router_tx,
            server_requests.clone(),
            options.replay_window,
            0,
        );
        let processor = processor(outgoing.clone());

        let router_shutdown = CancellationToken::new();
        let router = OutboundRouter::new(options.replay_window);
        let epoch = router.epoch();
        let router_task = tokio::spawn(router.run(router_rx, router_shutdown.clone()));
        let dispatcher = Dispatcher::new(processor, outgoing.clone());
        let processor_stop = CancellationToken::new();
        let processor_task =
            tokio::spawn(dispatcher.run_until(processor_rx, processor_stop.clone()));
        Arc::new(Self {
            processor: Mutex::new(Some(processor_tx)),
            outgoing,
            server_requests,
            // 0 is the in-process connection.
            next_connection: AtomicU64::new(1),
            options,
            connections: TaskTracker::new(),
            stop: CancellationToken::new(),
            tasks: Mutex::new(Some((processor_task, router_task))),
            processor_stop,
            router_shutdown,
            epoch,
            open: Arc::new(AtomicUsize::new(0)),
            started: std::time::Instant::now(),
        })
    }

    /// How many wire connections are open now (a daemon's status, its idle exit).
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// How long the host has been running.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Cancelled once [`TransportHost::shutdown`] begins; transports stop accepting on it.
    pub fn stopping(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Registers a new connection with the router, the reply lanes and the dispatcher, in
    /// that order, so that everything its first request causes finds it everywhere.
    pub(crate) async fn open_connection(
        &self,
        policy: WriterPolicy,
        writer_queue_capacity: usize,
    ) -> io::Result<OpenedConnection> {
        let processor = self
            .processor
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "server is shutting down"))?;
        let id = ConnectionId(self.next_connection.fetch_add(1, Ordering::Relaxed));
        let capacity = self.options.channel_capacity.max(1);
        let (writer_tx, writer) = mpsc::channel(writer_queue_capacity.max(1));
        let (reply_tx, replies) = mpsc::channel(capacity);
        let (answers_tx, answers) = mpsc::channel(capacity);
        let close = Arc::new(CloseSignal::default());
        let budget = Arc::new(ByteBudget::new(self.options.writer_queue_bytes));
        let (flow, stall) = match policy {
            WriterPolicy::Backpressure => (WriterFlow::Backpressure, None),
            WriterPolicy::CloseWhenStalled {
                grace,
                max_message_bytes,
                progress,
            } => {
                let ceiling = BacklogCeiling::new(
                    writer_queue_capacity,
                    self.options.writer_queue_bytes,
                    max_message_bytes,
                );
                let flow = WriterFlow::Backlog {
                    ceiling,
                    close: close.clone(),
                };
                (flow, Some(StallWatch { grace, progress }))
            }
        };

        self.outgoing.add_reply_lane(id, reply_tx);
        self.outgoing
            .route_control(RouterInput::ConnectionOpened {
                connection: id,
                writer: writer_tx,
                flow,
                budget: Some(budget.clone()),
            })
            .await;
        let (opened_tx, opened) = tokio::sync::oneshot::channel();
        let message = ProcessorMessage::ConnectionOpened {
            connection: id,
            source: self.options.session_source.clone(),
            opened: opened_tx,
        };
        // Waiting for the dispatcher (not just for room) keeps the connection's first request
        // from meeting a queue this message still fills (-32001 at capacity 1).
        if processor.send(message).await.is_err() || opened.await.is_err() {
            self.outgoing.remove_reply_lane(id);
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "server is shutting down",
            ));
        }
        tracing::debug!(connection = %id, "connection opened");
        let in_flight = Arc::new(connection::InFlight::default());
        Ok(OpenedConnection {
            inbound: Inbound {
                id,
                _open: connection::OpenCount::new(&self.open),
                processor,
                answers: answers_tx,
                in_flight: in_flight.clone(),
                server_requests: self.server_requests.clone(),
            },
            outbound: Outbound {
                id,
                answers,
                replies,
                writer,
                budget,
                in_flight,
                close: close.clone(),
                stop: self.stop.clone(),
                epoch: self.epoch.clone(),
                stall,
            },
            close,
        })
    }

    /// Spawns a connection's task where shutdown can wait for it.
    pub(crate) fn spawn_connection_task<F>(&self, task: F) -> JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.connections.spawn(task)
    }

    /// Shuts down within three stage timeouts, whatever the connections and the processor
    /// are doing:
    /// 1. transports stop reading, writers write what is queued for a moment and close, and
    ///    each connection is released by the processor (its processes are killed);
    /// 2. the processor queue closes and the processor runs its own shutdown, then is aborted;
    /// 3. the router is signalled (it does not wait for senders that detached work may keep),
    ///    then is aborted.
    ///
    /// Calling it again does nothing.
    pub async fn shutdown(&self) {
        let Some((mut processor_task, mut router_task)) = self
            .tasks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
        else {
            return;
        };
        let stage = self.options.shutdown_stage_timeout;
        self.stop.cancel();
        // Dropping the host's own sender lets the processor queue close once the connections
        // have dropped theirs.
        self.processor
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();

        self.connections.close();
        if tokio::time::timeout(stage, self.connections.wait())
            .await
            .is_err()
        {
            tracing::warn!("connections did not close within the stage timeout");
        }
        // The processor releases every connection still open, then runs its own shutdown.
        self.processor_stop.cancel();
        if tokio::time::timeout(stage, &mut processor_task)
            .await
            .is_err()
        {
            tracing::warn!(
                "message processor did not shut down within the stage timeout; aborting"
            );
            processor_task.abort();
        }
        self.router_shutdown.cancel();
        if tokio::time::timeout(stage, &mut router_task).await.is_err() {
            tracing::warn!("outbound router did not stop within the stage timeout; aborting");
            router_task.abort();
        }
    }
}
