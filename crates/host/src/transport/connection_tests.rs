//! The connection writer's tests: what it writes and in which order, when it flushes, how it
//! drains on shutdown, and how it gives up on a peer that takes nothing (with the router in
//! front of it, whose backlog goes with the connection).

use super::*;
use crate::message::Target;
use crate::replay::ReplayWindowLimits;
use crate::router::RouterInput;
use crate::router::{BacklogCeiling, OutboundRouter, WriterFlow};
use serde_json::json;
use tokio::time::Instant;

/// What a test writer did: the frames it wrote and how it was closed.
#[derive(Default)]
struct Written {
    /// What reached the peer: sent, then flushed.
    frames: Vec<String>,
    /// Sent, not yet flushed.
    buffered: Vec<String>,
    flushes: usize,
    closed: Option<CloseReason>,
    /// The message being received in parts.
    partial: Option<Vec<u8>>,
    /// How many parts were sent, and the largest buffer among them.
    parts: usize,
    largest_part: usize,
}

/// How the test's peer takes what the writer sends.
#[derive(Debug, Clone, Copy)]
enum Peer {
    /// At once.
    Reads,
    /// Never: a write never finishes.
    Stuck,
    /// Each frame in `steps` parts, `every` apart, as a socket takes a large frame from a
    /// peer that reads slowly: the write takes long, and bytes keep moving.
    Trickles { steps: u32, every: Duration },
}

/// A sink that records what its [`Peer`] took.
struct TestSink {
    written: Arc<Mutex<Written>>,
    peer: Peer,
    /// What a counting socket would advance.
    progress: Arc<WriteProgress>,
}

#[async_trait]
impl FrameSink for TestSink {
    async fn send(&mut self, frame: &mut Vec<u8>) -> io::Result<()> {
        match self.peer {
            Peer::Reads => self.progress.advance(),
            Peer::Stuck => std::future::pending::<()>().await,
            Peer::Trickles { steps, every } => {
                for _ in 0..steps {
                    tokio::time::sleep(every).await;
                    self.progress.advance();
                }
            }
        }
        let text = String::from_utf8(std::mem::take(frame)).expect("JSON is UTF-8");
        self.written.lock().unwrap().buffered.push(text);
        Ok(())
    }

    async fn send_part(&mut self, part: &mut Vec<u8>, first: bool, last: bool) -> io::Result<()> {
        self.progress.advance();
        let mut written = self.written.lock().unwrap();
        written.largest_part = written.largest_part.max(part.capacity());
        written.parts += 1;
        if first {
            assert!(written.partial.is_none(), "a message began inside another");
            written.partial = Some(Vec::new());
        }
        let partial = written
            .partial
            .as_mut()
            .expect("a part without a first part");
        partial.extend_from_slice(&std::mem::take(part));
        if last {
            let whole = written.partial.take().unwrap();
            let text = String::from_utf8(whole).expect("JSON is UTF-8");
            written.buffered.push(text);
        }
        Ok(())
    }

    async fn flush(&mut self) -> io::Result<()> {
        let mut written = self.written.lock().unwrap();
        let buffered = std::mem::take(&mut written.buffered);
        written.frames.extend(buffered);
        written.flushes += 1;
        Ok(())
    }

    async fn close(&mut self, reason: CloseReason) {
        self.written.lock().unwrap().closed = Some(reason);
    }
}

/// The producer ends of one writer's queues, kept open for the whole test.
struct Queues {
    _answers: mpsc::Sender<JSONRPCError>,
    _replies: mpsc::Sender<LaneReply>,
    writer: mpsc::Sender<WriterMessage>,
    budget: Arc<ByteBudget>,
    in_flight: Arc<InFlight>,
    stop: CancellationToken,
    close: Arc<CloseSignal>,
    written: Arc<Mutex<Written>>,
    task: tokio::task::JoinHandle<()>,
}

/// A writer with a queue of 8 messages and 1024 bytes, writing to `peer`; with a `grace`, it
/// watches its peer as a websocket writer does.
fn start(peer: Peer, grace: Option<Duration>) -> Queues {
    let (answers_tx, answers) = mpsc::channel(8);
    let (replies_tx, replies) = mpsc::channel(8);
    let (writer_tx, writer) = mpsc::channel(8);
    let budget = Arc::new(ByteBudget::new(1024));
    let in_flight = Arc::new(InFlight::default());
    let stop = CancellationToken::new();
    let close = Arc::new(CloseSignal::default());
    let written = Arc::new(Mutex::new(Written::default()));
    let progress = Arc::new(WriteProgress::default());
    let outbound = Outbound {
        id: ConnectionId(1),
        answers,
        replies,
        writer,
        budget: budget.clone(),
        in_flight: in_flight.clone(),
        close: close.clone(),
        stop: stop.clone(),
        epoch: "e".into(),
        stall: grace.map(|grace| StallWatch {
            grace,
            progress: progress.clone(),
        }),
    };
    let sink = TestSink {
        written: written.clone(),
        peer,
        progress,
    };
    Queues {
        _answers: answers_tx,
        _replies: replies_tx,
        writer: writer_tx,
        budget,
        in_flight,
        stop,
        close,
        written,
        task: tokio::spawn(outbound.run(sink)),
    }
}

fn response(n: i64, queued_bytes: usize) -> WriterMessage {
    Box::new(Envelope {
        message: OutgoingMessage::Response {
            id: RequestId::Integer(n),
            result: json!({"n": n}),
        },
        ack: None,
        queued_bytes,
        cursor: None,
        replayed: false,
    })
}

/// [`response`] with an acknowledgement that says, once the message is dropped, whether the
/// writer took it.
fn acked(n: i64, queued_bytes: usize) -> (WriterMessage, tokio::sync::oneshot::Receiver<bool>) {
    let (ack, taken) = DeliveryAck::new();
    let mut message = response(n, queued_bytes);
    message.ack = Some(ack);
    (message, taken)
}

/// Stops the host and waits for the writer to close; returns how long that took on the
/// (paused) clock.
async fn stop_and_wait(queues: &mut Queues) -> Duration {
    let since = Instant::now();
    queues.stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), &mut queues.task)
        .await
        .expect("the writer closes within the drain bound")
        .unwrap();
    since.elapsed()
}

#[tokio::test(start_paused = true)]
async fn an_idle_connection_closes_at_once_on_shutdown() {
    let mut queues = start(Peer::Reads, None);
    let took = stop_and_wait(&mut queues).await;
    // With the clock paused, any wait on a timer would have advanced it.
    assert_eq!(took, Duration::ZERO, "no fixed drain when nothing is owed");
    assert_eq!(
        queues.written.lock().unwrap().closed,
        Some(CloseReason::ShuttingDown)
    );
}

#[tokio::test(start_paused = true)]
async fn what_is_queued_is_written_before_the_close() {
    let mut queues = start(Peer::Reads, None);
    for n in 0..3 {
        queues.writer.send(response(n, 100)).await.unwrap();
        queues.budget.charge(100);
    }
    let took = stop_and_wait(&mut queues).await;
    assert_eq!(took, Duration::ZERO);
    let written = queues.written.lock().unwrap();
    assert_eq!(written.frames.len(), 3, "{:?}", written.frames);
    assert!(
        written.frames[2].contains(r#""id":2"#),
        "{}",
        written.frames[2]
    );
    assert_eq!(written.closed, Some(CloseReason::ShuttingDown));
    assert_eq!(queues.budget.queued(), 0, "every byte charged was released");
}

/// Waits until the sink has had `frames` frames flushed.
async fn flushed(queues: &Queues, frames: usize) {
    tokio::time::timeout(Duration::from_secs(5), async {
        while queues.written.lock().unwrap().frames.len() < frames {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the writer flushes what it sent before it waits");
}

#[tokio::test(start_paused = true)]
async fn a_burst_is_flushed_once_and_nothing_is_held_while_the_writer_waits() {
    let queues = start(Peer::Reads, None);
    // Queued before the writer first runs: one burst.
    for n in 0..5 {
        queues.writer.try_send(response(n, 0)).unwrap();
    }
    flushed(&queues, 5).await;
    assert_eq!(queues.written.lock().unwrap().flushes, 1);
    // A lone message after the writer went idle leaves at once.
    queues.writer.send(response(5, 0)).await.unwrap();
    flushed(&queues, 6).await;
    let written = queues.written.lock().unwrap();
    assert_eq!(written.flushes, 2);
    assert!(written.buffered.is_empty());
    assert!(
        written.frames[5].contains(r#""id":5"#),
        "{}",
        written.frames[5]
    );
}

#[tokio::test(start_paused = true)]
async fn an_answer_still_owed_is_waited_for_within_the_bound() {
    let mut queues = start(Peer::Reads, None);
    lock(&queues.in_flight).insert(RequestId::Integer(7), CancellationToken::new());
    let writer = queues.writer.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        writer.send(response(7, 0)).await.unwrap();
    });
    let took = stop_and_wait(&mut queues).await;
    assert_eq!(
        took,
        Duration::from_millis(100),
        "closed once the answer was written"
    );
    let written = queues.written.lock().unwrap();
    assert_eq!(written.frames.len(), 1);
    assert!(written.frames[0].contains(r#""id":7"#));
}

#[tokio::test(start_paused = true)]
async fn an_answer_that_never_comes_is_given_up_after_the_drain() {
    let mut queues = start(Peer::Reads, None);
    lock(&queues.in_flight).insert(RequestId::Integer(7), CancellationToken::new());
    let took = stop_and_wait(&mut queues).await;
    assert_eq!(took, SHUTDOWN_DRAIN);
    assert_eq!(
        queues.written.lock().unwrap().closed,
        Some(CloseReason::ShuttingDown)
    );
}

#[tokio::test(start_paused = true)]
async fn a_peer_that_does_not_read_is_abandoned_after_the_drain() {
    let mut queues = start(Peer::Stuck, None);
    queues.writer.send(response(1, 0)).await.unwrap();
    // Let the writer take the message and block on the stuck sink.
    tokio::task::yield_now().await;
    let took = stop_and_wait(&mut queues).await;
    assert_eq!(took, SHUTDOWN_DRAIN);
    assert_eq!(
        queues.written.lock().unwrap().closed,
        Some(CloseReason::ShuttingDown)
    );
}

/// What a writer's close does to what was owed: every message still queued is dropped, never
/// taken (`false`), within a moment of the close.
async fn assert_freed(owed: Vec<tokio::sync::oneshot::Receiver<bool>>) {
    for taken in owed {
        let taken = tokio::time::timeout(Duration::from_millis(10), taken)
            .await
            .expect("what was owed is freed with the close")
            .expect("an acknowledgement always answers");
        assert!(!taken, "a message was taken though the peer took nothing");
    }
}

/// Issue 27, point 2: the writer sits inside one write, its queue under every limit and no
/// backlog anywhere; the peer takes nothing, so the connection is closed once the grace has
/// passed, not before, and what it was owed is dropped.
#[tokio::test(start_paused = true)]
async fn a_peer_that_takes_nothing_is_closed_after_the_grace_even_under_every_limit() {
    let grace = Duration::from_secs(10);
    let mut queues = start(Peer::Stuck, Some(grace));
    let started = Instant::now();
    queues.writer.send(response(0, 0)).await.unwrap();
    let (queued, taken) = acked(1, 100);
    queues.budget.charge(100);
    queues.writer.send(queued).await.unwrap();
    tokio::time::sleep(grace - Duration::from_millis(1)).await;
    assert_eq!(queues.close.reason(), None, "closed before the grace");
    tokio::time::timeout(Duration::from_millis(2), &mut queues.task)
        .await
        .expect("the writer gives up at the grace")
        .unwrap();
    assert_eq!(started.elapsed(), grace);
    assert_eq!(queues.close.reason(), Some(CloseReason::Stalled));
    assert_eq!(
        queues.written.lock().unwrap().closed,
        Some(CloseReason::Stalled)
    );
    assert_freed(vec![taken]).await;
}

/// A peer reading slowly through writes that each take three graces is not stalled: bytes
/// keep moving.
#[tokio::test(start_paused = true)]
async fn a_peer_that_reads_slowly_through_long_writes_is_not_closed() {
    let grace = Duration::from_secs(10);
    let peer = Peer::Trickles {
        steps: 6,
        every: Duration::from_secs(5),
    };
    let queues = start(peer, Some(grace));
    for n in 0..2 {
        queues.writer.send(response(n, 0)).await.unwrap();
    }
    // Each write takes 30 s; both are done by 61 s, the peer having taken bytes every 5 s.
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(queues.close.reason(), None, "a reading peer was closed");
    assert_eq!(queues.written.lock().unwrap().frames.len(), 2);
}

/// Without a stall watch (stdio), a writer waits on its peer for as long as it takes: the
/// producers wait behind it instead.
#[tokio::test(start_paused = true)]
async fn without_a_stall_watch_a_stuck_writer_waits() {
    let queues = start(Peer::Stuck, None);
    queues.writer.send(response(0, 0)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(queues.close.reason(), None);
    assert!(!queues.task.is_finished());
}

/// Issue 27, points 1 and 2 together, with the router in front of the writer: a burst more
/// than twice the writer queue's bytes waits in the router's backlog (under its ceiling) as
/// long as the peer takes bytes; a peer that takes nothing gets the connection closed after
/// the grace, and the backlog is dropped with the queue.
#[tokio::test(start_paused = true)]
async fn a_stalled_peer_under_the_ceiling_is_closed_after_the_grace_and_its_backlog_freed() {
    let grace = Duration::from_secs(10);
    let queues = start(Peer::Stuck, Some(grace));
    let (input, input_rx) = mpsc::channel(64);
    let mut router = OutboundRouter::new(ReplayWindowLimits::default());
    let flow = WriterFlow::Backlog {
        ceiling: BacklogCeiling::new(8, 1024, 1024),
        close: queues.close.clone(),
    };
    router.add_connection(
        ConnectionId(1),
        queues.writer.clone(),
        flow,
        Some(queues.budget.clone()),
    );
    let shutdown = CancellationToken::new();
    tokio::spawn(router.run(input_rx, shutdown.clone()));
    // 400 bytes each: one is taken and stuck in its write, two fill the queue's 1024 bytes,
    // and the other 12 or 13 (about 5 KB: five times the queue's bytes, within the ceiling's
    // 7 KB) wait in the backlog.
    let mut owed = Vec::new();
    for n in 0..15 {
        let (message, taken) = acked(n, 400);
        owed.push(taken);
        let routed = RouterInput::Message {
            target: Target::Connection(ConnectionId(1)),
            message,
        };
        input.send(routed).await.unwrap();
    }
    let started = Instant::now();
    tokio::time::sleep(grace - Duration::from_millis(1)).await;
    assert_eq!(queues.close.reason(), None, "closed before the grace");
    let reason = tokio::time::timeout(Duration::from_millis(2), queues.close.closed())
        .await
        .expect("closed at the grace");
    assert_eq!(reason, CloseReason::Stalled);
    assert!(started.elapsed() <= grace);
    // The first was taken for writing; the rest, queued or backlogged, are dropped.
    let first = owed.remove(0);
    assert!(first.await.unwrap(), "the message being written was taken");
    assert_freed(owed).await;
    shutdown.cancel();
}

/// A response of about `text_bytes` of JSON, charged what the router would charge it.
fn large_response(n: i64, text_bytes: usize) -> (WriterMessage, String) {
    // Quotes and newlines: escaped on the wire, so the encoding is longer than the text.
    let result = json!({"n": n, "text": "ab\"c\n".repeat(text_bytes / 5)});
    let message = OutgoingMessage::Response {
        id: RequestId::Integer(n),
        result: result.clone(),
    };
    let queued_bytes = crate::message::encoded_size(&message);
    let mut expected = Vec::new();
    wire::encode_server_message(
        &ServerMessage::Response {
            id: RequestId::Integer(n),
            result,
        },
        &mut expected,
    )
    .unwrap();
    let envelope = Box::new(Envelope {
        message,
        ack: None,
        queued_bytes,
        cursor: None,
        replayed: false,
    });
    (envelope, String::from_utf8(expected).unwrap())
}

// Not on paused time: the parts are encoded on a blocking thread.
#[tokio::test]
async fn a_large_message_leaves_in_parts_byte_identical_and_in_order() {
    let queues = start(Peer::Reads, None);
    let (large, expected) = large_response(2, 5 * parts::PARTED_MESSAGE_BYTES);
    assert!(expected.len() > 4 * parts::PART_BYTES);
    queues.writer.send(response(1, 0)).await.unwrap();
    queues.writer.send(large).await.unwrap();
    queues.writer.send(response(3, 0)).await.unwrap();
    tandem_test_support::within(
        Duration::from_secs(30),
        "three messages written",
        flushed(&queues, 3),
    )
    .await;
    let written = queues.written.lock().unwrap();
    assert!(written.frames[0].contains(r#""id":1"#));
    assert!(
        written.frames[1] == expected,
        "the large message arrives byte for byte ({} bytes, {} expected)",
        written.frames[1].len(),
        expected.len()
    );
    assert!(written.frames[2].contains(r#""id":3"#));
    // Never whole: every part is at most a part's size, far below the message's.
    assert!(written.parts >= expected.len() / parts::PART_BYTES);
    assert!(
        written.largest_part <= parts::PART_BYTES + 1,
        "a part of {} bytes for a message of {}",
        written.largest_part,
        expected.len()
    );
    assert!(written.partial.is_none());
}

#[tokio::test]
async fn a_message_under_the_threshold_goes_whole() {
    let queues = start(Peer::Reads, None);
    let (message, expected) = large_response(4, parts::PARTED_MESSAGE_BYTES / 2);
    queues.writer.send(message).await.unwrap();
    tandem_test_support::within(Duration::from_secs(30), "written", flushed(&queues, 1)).await;
    let written = queues.written.lock().unwrap();
    assert_eq!(written.parts, 0);
    assert!(written.frames[0] == expected);
}
