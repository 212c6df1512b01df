//! One wire connection, whatever carries its frames: the inbound half that turns decoded frames
//! into processor messages (and answers on its own what never reaches the processor), and the
//! writer that puts every outbound message on the wire in lane order.
//!
//! Three queues feed the writer, and [`Outbound::run`] decides their priority:
//! 1. host-made answers (parse errors, -32001 for a full processor queue, duplicate ids): the
//!    client is waiting on them and nothing else will answer, so nothing goes before them;
//! 2. the reply lane: process-control replies, which must pass queued notifications;
//! 3. the writer queue from the outbound router: ordinary replies, notifications and server
//!    requests, in the order the processor emitted them.
//!
//! When the host shuts down, the writer keeps writing only while something is owed: a message
//! queued, or a request read and not yet answered. An idle connection closes at once; a busy
//! one gets at most [`SHUTDOWN_DRAIN`].
//!
//! A message of [`parts::PARTED_MESSAGE_BYTES`] or more is encoded in parts on a blocking
//! thread and written a part at a time ([`FrameSink::send_part`]), never whole.
//!
//! A websocket writer also watches its peer ([`StallWatch`]): while it waits on a write, a peer
//! that takes no bytes for the grace period gets the connection closed (1008), and the writer's
//! queue, with everything owed in it, is dropped.

use std::io;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use foldhash::HashMap;
use tandem_protocol::wire::{self, ClientMessage, DecodeError, ServerMessage};
use tandem_protocol::{JSONRPCError, JSONRPCErrorError, RequestId};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::byte_budget::ByteBudget;
pub(crate) use crate::close::{CloseReason, CloseSignal};
use crate::delivery::DeliveryAck;
use crate::dispatch::ProcessorMessage;
use crate::outgoing::{Envelope, LaneReply, OutgoingMessage, PendingServerRequests, WriterMessage};
use crate::processor::ConnectionId;

use super::parts;
use super::progress::{self, WriteProgress};

/// Requests of one connection that the processor has not answered yet, with the token that
/// tells the processor its caller is gone.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    requests: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Signalled whenever an answer is handed to the wire, for [`Inbound::finish_in_flight`].
    answered: Notify,
}

fn lock(in_flight: &InFlight) -> std::sync::MutexGuard<'_, HashMap<RequestId, CancellationToken>> {
    in_flight
        .requests
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl InFlight {
    fn answered(&self, id: &RequestId) {
        lock(self).remove(id);
        self.answered.notify_waiters();
    }
}

/// The reading side of a connection: hand it every frame the transport reads.
pub(crate) struct Inbound {
    pub(crate) id: ConnectionId,
    /// Counts this connection as open until its reader lets go of it.
    pub(crate) _open: OpenCount,
    pub(crate) processor: mpsc::Sender<ProcessorMessage>,
    pub(crate) answers: mpsc::Sender<JSONRPCError>,
    pub(crate) in_flight: Arc<InFlight>,
    pub(crate) server_requests: Arc<PendingServerRequests>,
}

/// One open connection in its host's count, from its opening until it is dropped.
pub(crate) struct OpenCount(Arc<AtomicUsize>);

impl OpenCount {
    pub(crate) fn new(open: &Arc<AtomicUsize>) -> Self {
        open.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self(Arc::clone(open))
    }
}

impl Drop for OpenCount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Inbound {
    /// Decodes and dispatches one frame. Waits only for room in the host-made answer queue,
    /// which is how a peer that does not read its answers stops being read.
    pub(crate) async fn frame(&self, frame: &[u8]) {
        super::trace::inbound(self.id, frame);
        match wire::decode_client_message(frame) {
            Ok(ClientMessage::Request(request)) => self.request(request).await,
            Ok(ClientMessage::Notification(notification)) => {
                let method = notification.method().to_owned();
                let message = ProcessorMessage::Notification {
                    connection: self.id,
                    notification,
                };
                // docs/host.md: a notification that does not fit is dropped with a warning.
                if let Err(error) = self.processor.try_send(message) {
                    tracing::warn!(connection = %self.id, %method, "client notification dropped: {error}");
                }
            }
            Ok(ClientMessage::Response { id, result }) => {
                self.answer_server_request(id, Ok(result))
            }
            Ok(ClientMessage::Error { id, error }) => self.answer_server_request(id, Err(error)),
            Err(DecodeError::Reply(error)) => self.answer(error).await,
            Err(DecodeError::Ignore(why)) => {
                tracing::warn!(connection = %self.id, "ignored a malformed message: {why}");
            }
        }
    }

    async fn request(&self, request: tandem_protocol::ClientRequest) {
        let id = request.id().clone();
        let cancel = CancellationToken::new();
        let duplicate = {
            let mut in_flight = lock(&self.in_flight);
            let duplicate = in_flight.contains_key(&id);
            if !duplicate {
                in_flight.insert(id.clone(), cancel.clone());
            }
            duplicate
        };
        if duplicate {
            let error = JSONRPCErrorError::invalid_request(format!("duplicate request id: {id}"));
            return self.answer(error_for(Some(id), error)).await;
        }
        let message = ProcessorMessage::Request {
            connection: self.id,
            request: Box::new(request),
            cancel,
        };
        let error = match self.processor.try_send(message) {
            Ok(()) => return,
            Err(TrySendError::Full(_)) => JSONRPCErrorError::overloaded("request queue is full"),
            Err(TrySendError::Closed(_)) => JSONRPCErrorError::internal("server is shutting down"),
        };
        lock(&self.in_flight).remove(&id);
        self.answer(error_for(Some(id), error)).await;
    }

    fn answer_server_request(&self, id: RequestId, result: crate::RequestResult) {
        if !self.server_requests.resolve_from(self.id, &id, result) {
            tracing::warn!(connection = %self.id, %id, "answer to an unknown server request dropped");
        }
    }

    /// Queues a host-made answer (never dropped: waits for room).
    pub(crate) async fn answer(&self, error: JSONRPCError) {
        let _ = self.answers.send(error).await;
    }

    /// Waits, at most `limit`, until every request read so far has been answered: at the end
    /// of its input a client still reads the answers to what it sent.
    pub(crate) async fn finish_in_flight(&self, limit: Duration) {
        let drained = async {
            loop {
                let answered = self.in_flight.answered.notified();
                if lock(&self.in_flight).is_empty() {
                    return;
                }
                answered.await;
            }
        };
        let _ = tokio::time::timeout(limit, drained).await;
    }

    /// The transport stopped reading: the processor forgets the connection (killing what it
    /// owned), and requests still running see their caller gone.
    pub(crate) async fn close(self) {
        for (_, cancel) in lock(&self.in_flight).drain() {
            cancel.cancel();
        }
        let closed = ProcessorMessage::ConnectionClosed {
            connection: self.id,
        };
        // Waits for room: a lost close would leave the connection's processes running.
        let _ = self.processor.send(closed).await;
    }
}

pub(crate) fn error_for(id: Option<RequestId>, error: JSONRPCErrorError) -> JSONRPCError {
    JSONRPCError { id, error }
}

/// Where a writer puts encoded frames.
#[async_trait]
pub(crate) trait FrameSink: Send {
    /// Writes one encoded message (no framing in `frame`; the sink adds it). It may stay
    /// buffered until [`FrameSink::flush`], which the writer calls before it waits for the next
    /// message. The sink may take the buffer's contents; the writer clears it afterwards.
    async fn send(&mut self, frame: &mut Vec<u8>) -> io::Result<()>;
    /// Writes one part of a message encoded in parts (`transport::parts`): the parts of one
    /// message come in order, the first with `first`, the last with `last` (it may be empty),
    /// and nothing else comes between them. Together they are one message on the wire (a
    /// websocket message in fragments, one stdio line). Buffered like [`FrameSink::send`]; the
    /// sink may take the part's contents.
    async fn send_part(&mut self, part: &mut Vec<u8>, first: bool, last: bool) -> io::Result<()>;
    /// Pushes out whatever [`FrameSink::send`] left buffered.
    async fn flush(&mut self) -> io::Result<()>;
    /// Ends the connection, telling the peer why where the transport can.
    async fn close(&mut self, reason: CloseReason);
}

/// The writing side of a connection.
pub(crate) struct Outbound {
    pub(crate) id: ConnectionId,
    pub(crate) answers: mpsc::Receiver<JSONRPCError>,
    pub(crate) replies: mpsc::Receiver<LaneReply>,
    pub(crate) writer: mpsc::Receiver<WriterMessage>,
    /// The writer queue's byte bound: what each message was charged is released on taking it.
    pub(crate) budget: Arc<ByteBudget>,
    pub(crate) in_flight: Arc<InFlight>,
    pub(crate) close: Arc<CloseSignal>,
    /// Cancelled when the host shuts down.
    pub(crate) stop: CancellationToken,
    /// The host's epoch: a stream notification's cursor comes as its number only.
    pub(crate) epoch: Arc<str>,
    /// Closes a connection whose peer stops taking bytes (websocket); `None` writes for as
    /// long as the peer takes (stdio: the producers wait instead).
    pub(crate) stall: Option<StallWatch>,
}

/// How a writer tells a peer that reads slowly from one that reads nothing.
#[derive(Debug, Clone)]
pub(crate) struct StallWatch {
    /// How long the peer may take no bytes while the writer waits on it.
    pub(crate) grace: Duration,
    /// Advanced by the transport as its socket accepts bytes. Not by the writer's completed
    /// writes: a write can complete into the websocket layer's buffer while the socket takes
    /// nothing, and a trickle of small messages would then put the close off again and again.
    pub(crate) progress: Arc<WriteProgress>,
}

/// The longest a writer keeps writing what is owed once the host shuts down (nothing owed: no
/// wait at all).
pub(crate) const SHUTDOWN_DRAIN: Duration = Duration::from_millis(250);

/// One message picked for the wire, with the acknowledgement its producer waits for.
struct Pick {
    message: ServerMessage,
    /// Its estimated JSON size as the writer queue's byte budget charged it (0 for the
    /// host-made answers and lane replies, which are small): from
    /// [`parts::PARTED_MESSAGE_BYTES`] on it is encoded in parts.
    size: usize,
    ack: Option<DeliveryAck>,
    /// The request this answers, to forget once it is written.
    answers: Option<RequestId>,
}

impl Outbound {
    /// Whether the peer is owed nothing more: no message queued for it, and every request it
    /// sent answered.
    fn owes_nothing(&self) -> bool {
        !self.has_queued() && lock(&self.in_flight).is_empty()
    }

    /// Whether a message is waiting in one of the queues, so the next pick will not wait.
    fn has_queued(&self) -> bool {
        !(self.answers.is_empty() && self.replies.is_empty() && self.writer.is_empty())
    }

    /// Runs a write on the sink unless the connection is asked to close, its peer takes no
    /// bytes for the grace period, or the host's shutdown drain runs out first: a peer that
    /// stopped reading must not keep the connection's memory, a close, or shutdown, waiting
    /// forever. `writing` is the size of what is being written, for the log. `None`: the sink
    /// was closed and the writer must stop.
    async fn write_or_close<S: FrameSink>(
        &self,
        sink: &mut S,
        drain_until: &mut Option<tokio::time::Instant>,
        writing: usize,
        write: impl AsyncFnOnce(&mut S) -> io::Result<()>,
    ) -> Option<io::Result<()>> {
        let closing = tokio::select! {
            biased;
            reason = self.close.closed() => reason,
            () = async {
                self.stop.cancelled().await;
                let until = *drain_until
                    .get_or_insert_with(|| tokio::time::Instant::now() + SHUTDOWN_DRAIN);
                tokio::time::sleep_until(until).await;
            } => CloseReason::ShuttingDown,
            written = write(&mut *sink) => return Some(written),
            () = async {
                match &self.stall {
                    Some(stall) => progress::stalled(&stall.progress, stall.grace).await,
                    None => std::future::pending().await,
                }
            } => {
                self.stalled(writing);
                CloseReason::Stalled
            }
        };
        sink.close(closing).await;
        None
    }

    /// Gives up on a peer that took no bytes for the grace period: the reader stops too, and
    /// what is owed (the queue, and the router's backlog once it sees the queue gone) is
    /// dropped. The log line counts it all, beside the message being written.
    fn stalled(&self, writing: usize) {
        let grace = self.stall.as_ref().map(|stall| stall.grace);
        let (backlog, backlog_bytes) = self.budget.backlog();
        tracing::warn!(
            id = %self.id,
            queued = self.writer.len() + backlog,
            queued_bytes = self.budget.queued() + backlog_bytes,
            writing,
            "closing {}: its peer took no bytes for the grace period ({grace:?})",
            self.id
        );
        self.close.close(CloseReason::Stalled);
    }

    /// Writes until every queue is closed, the connection is asked to close, or the host stops
    /// (after writing what is still owed, for at most [`SHUTDOWN_DRAIN`]).
    pub(crate) async fn run(mut self, mut sink: impl FrameSink) {
        let mut frame = Vec::with_capacity(4096);
        let mut drain_until: Option<tokio::time::Instant> = None;
        // A queue is closed once its senders are gone (the reader let go of the connection,
        // the processor and the router forgot it). The close and stop branches never finish on
        // their own, so `select!` cannot notice this by itself: it is tracked here.
        let (mut answers_open, mut replies_open, mut writer_open) = (true, true, true);
        // Messages sent but possibly still in the sink's buffer. They are flushed only when
        // no other message is queued: a burst (pipelined answers, a run of notifications)
        // leaves in as few writes as the sink's buffer allows, and nothing is held while the
        // writer waits.
        let mut unflushed = false;
        loop {
            if unflushed && !self.has_queued() {
                unflushed = false;
                match self
                    .write_or_close(&mut sink, &mut drain_until, 0, async |sink| {
                        sink.flush().await
                    })
                    .await
                {
                    None => return,
                    Some(Ok(())) => {}
                    Some(Err(error)) => {
                        tracing::debug!(connection = %self.id, %error, "writing to the connection failed");
                        return;
                    }
                }
            }
            if !(answers_open || replies_open || writer_open) {
                // Every queue is closed: the connection is finished.
                let reason = if drain_until.is_some() {
                    CloseReason::ShuttingDown
                } else {
                    CloseReason::Finished
                };
                sink.close(reason).await;
                return;
            }
            // Shutting down and nothing owed: no reason to wait for anything.
            if drain_until.is_some() && self.owes_nothing() {
                sink.close(CloseReason::ShuttingDown).await;
                return;
            }
            let pick = tokio::select! {
                // Checked in this order on every message:
                biased;
                reason = self.close.closed() => {
                    sink.close(reason).await;
                    return;
                }
                // Shutdown: keep writing what is owed for a moment, then say goodbye.
                () = self.stop.cancelled(), if drain_until.is_none() => {
                    drain_until = Some(tokio::time::Instant::now() + SHUTDOWN_DRAIN);
                    continue;
                }
                () = sleep_until(drain_until), if drain_until.is_some() => {
                    sink.close(CloseReason::ShuttingDown).await;
                    return;
                }
                // 1. Host-made answers: nothing else will ever answer these requests.
                error = self.answers.recv(), if answers_open => match error {
                    Some(error) => Pick {
                        answers: None,
                        size: 0,
                        message: ServerMessage::Error { id: error.id, error: error.error },
                        ack: None,
                    },
                    None => {
                        answers_open = false;
                        continue;
                    }
                },
                // 2. The reply lane: process-control replies pass queued notifications.
                reply = self.replies.recv(), if replies_open => match reply {
                    Some(LaneReply { id, result, ack }) => {
                        let message = match result {
                            Ok(result) => ServerMessage::Response { id: id.clone(), result },
                            Err(error) => ServerMessage::Error { id: Some(id.clone()), error },
                        };
                        Pick { message, size: 0, ack, answers: Some(id) }
                    }
                    None => {
                        replies_open = false;
                        continue;
                    }
                },
                // 3. Everything else, in the order the processor emitted it.
                envelope = self.writer.recv(), if writer_open => match envelope {
                    Some(envelope) => {
                        self.budget.release(envelope.queued_bytes);
                        pick_envelope(*envelope, &self.epoch)
                    }
                    None => {
                        writer_open = false;
                        continue;
                    }
                },
            };
            if drain_until.is_some_and(|until| tokio::time::Instant::now() >= until) {
                sink.close(CloseReason::ShuttingDown).await;
                return;
            }

            let mut pick = pick;
            // A large message leaves in parts, never encoded whole. With the wire trace on it
            // goes whole: the trace logs each message as one line, and copies it anyway.
            if pick.size >= parts::PARTED_MESSAGE_BYTES && !super::trace::enabled() {
                if let Some(ack) = pick.ack.take() {
                    ack.delivered();
                }
                if let Some(id) = &pick.answers {
                    self.in_flight.answered(id);
                }
                let size = pick.size;
                // The message moves to the encoding thread; the placeholder left in the pick is
                // replaced below if it is ever needed (an error reply in its stead).
                let message = std::mem::replace(
                    &mut pick.message,
                    ServerMessage::Error {
                        id: None,
                        error: JSONRPCErrorError::internal(String::new()),
                    },
                );
                match self
                    .write_in_parts(&mut sink, &mut drain_until, message, size)
                    .await
                {
                    Ok(None) => {
                        unflushed = true;
                        continue;
                    }
                    Err(Stop) => return,
                    // Nothing left yet: as on the whole path, only a caller is still owed
                    // something, an error in place of its answer.
                    Ok(Some(error)) => {
                        let Some(id) = pick.answers.clone() else {
                            continue;
                        };
                        pick.message = ServerMessage::Error {
                            id: Some(id),
                            error: JSONRPCErrorError::internal(error.to_string()),
                        };
                    }
                }
            }
            if let Err(error) = encode(&pick.message, &mut frame) {
                tracing::error!(connection = %self.id, "{error}");
                let Some(id) = pick.answers.clone() else {
                    continue;
                };
                // The caller is still owed an answer.
                let failed = ServerMessage::Error {
                    id: Some(id),
                    error: JSONRPCErrorError::internal(error.to_string()),
                };
                frame.clear();
                if encode(&failed, &mut frame).is_err() {
                    continue;
                }
            }
            // "Delivered" on the wire means taken for writing, acknowledged before the bytes
            // leave: whatever the producer does on delivery (a process handle released) is
            // then done before the peer can react. Only one message is written at a time, so
            // a producer waiting on this still moves at the connection's pace. For the same
            // reason the id is free before the answer leaves: a client may reuse it as soon as
            // it has read the answer.
            if let Some(ack) = pick.ack.take() {
                ack.delivered();
            }
            if let Some(id) = &pick.answers {
                self.in_flight.answered(id);
            }
            super::trace::outbound(self.id, &frame);
            let writing = frame.len();
            let Some(written) = self
                .write_or_close(&mut sink, &mut drain_until, writing, async |sink| {
                    sink.send(&mut frame).await
                })
                .await
            else {
                return;
            };
            frame.clear();
            if let Err(error) = written {
                tracing::debug!(connection = %self.id, %error, "writing to the connection failed");
                return;
            }
            unflushed = true;
        }
    }
}

/// The writer must stop: the connection was closed, or writing to it failed.
struct Stop;

impl Outbound {
    /// Encodes `message` in parts on a blocking thread and writes each part as it comes, so
    /// that neither this writer nor the sink ever holds the whole encoded message
    /// (`transport::parts`). Each part is one write, watched like any other (close, shutdown
    /// drain, stall). A message that fails to encode closes the connection once a part of it
    /// has left (the peer cannot be given half a message and then another); a failure before
    /// any part left is handed back (`Ok(Some(error))`) for the caller to answer, as on the
    /// whole path.
    async fn write_in_parts<S: FrameSink>(
        &self,
        sink: &mut S,
        drain_until: &mut Option<tokio::time::Instant>,
        message: ServerMessage,
        size: usize,
    ) -> Result<Option<wire::EncodeError>, Stop> {
        let mut parts = parts::encode(message, parts::PART_BYTES);
        let mut first = true;
        loop {
            let (mut part, last) = match parts.recv().await {
                Some(parts::Part::More(part)) => (part, false),
                Some(parts::Part::Last(part)) => (part, true),
                Some(parts::Part::Failed(error)) => {
                    tracing::error!(connection = %self.id, "{error}");
                    if first {
                        return Ok(Some(error));
                    }
                    sink.close(CloseReason::Finished).await;
                    return Err(Stop);
                }
                // The encoding thread ended without its last part (it could not run, or
                // panicked): the peer may hold half a message, so the connection ends.
                None => {
                    tracing::error!(connection = %self.id, "the encoding of a message stopped");
                    sink.close(CloseReason::Finished).await;
                    return Err(Stop);
                }
            };
            let written = self
                .write_or_close(sink, drain_until, size, async |sink| {
                    sink.send_part(&mut part, first, last).await
                })
                .await;
            match written {
                None => return Err(Stop),
                Some(Err(error)) => {
                    tracing::debug!(connection = %self.id, %error, "writing to the connection failed");
                    return Err(Stop);
                }
                Some(Ok(())) => {}
            }
            if last {
                return Ok(None);
            }
            first = false;
        }
    }
}

fn pick_envelope(envelope: Envelope, epoch: &str) -> Pick {
    let Envelope {
        message,
        ack,
        cursor,
        queued_bytes,
        ..
    } = envelope;
    // A wire connection's queue is always budgeted, so the size was measured on the way in.
    let size = if queued_bytes > 0 {
        queued_bytes
    } else {
        crate::message::encoded_size(&message)
    };
    let (message, answers) = match message {
        OutgoingMessage::Response { id, result } => (
            ServerMessage::Response {
                id: id.clone(),
                result,
            },
            Some(id),
        ),
        OutgoingMessage::Error { id, error } => (
            ServerMessage::Error {
                id: Some(id.clone()),
                error,
            },
            Some(id),
        ),
        OutgoingMessage::Notification(notification) => (
            ServerMessage::Notification {
                notification,
                emitted_at_ms: Some(unix_millis()),
                cursor: cursor.map(|cursor| cursor.to_event_cursor(epoch)),
            },
            None,
        ),
        OutgoingMessage::Request(request) => (ServerMessage::Request(request), None),
    };
    Pick {
        message,
        size,
        ack,
        answers,
    }
}

fn encode(message: &ServerMessage, frame: &mut Vec<u8>) -> Result<(), wire::EncodeError> {
    wire::encode_server_message(message, frame)
}

fn unix_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
