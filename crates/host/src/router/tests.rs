//! The router's writer flows: order and independence of connections, the backlog that takes a
//! burst however long its writer needs, the ceiling that closes a connection at once, and
//! backpressure. (A writer whose peer takes nothing is closed by the writer:
//! `transport/connection_tests.rs`.)

use std::time::Duration;

use super::*;
use crate::close::CloseReason;
use crate::delivery::DeliveryAck;
use serde_json::{Value, json};
use tandem_protocol::RequestId;

/// A reply `n` with `result` for connection `to`. `claimed`, if not 0, is the size the router
/// takes it to have (as for a broadcast copy, measured once): a test of the router's
/// accounting can route the sizes of a 64 MiB turn without allocating them.
fn message(to: u64, n: i64, result: Value, claimed: usize) -> RouterInput {
    RouterInput::Message {
        target: Target::Connection(ConnectionId(to)),
        message: Box::new(Envelope {
            message: OutgoingMessage::Response {
                id: RequestId::Integer(n),
                result,
            },
            ack: None,
            queued_bytes: claimed,
            cursor: None,
            replayed: false,
        }),
    }
}

fn reply(n: i64) -> RouterInput {
    message(1, n, json!({}), 0)
}

/// A reply of about `bytes` encoded bytes for connection 1.
fn sized(n: i64, bytes: usize) -> RouterInput {
    message(1, n, json!("x".repeat(bytes)), 0)
}

/// Like [`sized`], with an acknowledgement that says, once the message is dropped, whether it
/// was handed to a writer.
fn acked(n: i64, bytes: usize) -> (RouterInput, tokio::sync::oneshot::Receiver<bool>) {
    let (ack, delivered) = DeliveryAck::new();
    let mut input = sized(n, bytes);
    if let RouterInput::Message { message, .. } = &mut input {
        message.ack = Some(ack);
    }
    (input, delivered)
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

/// A flow that never waits, with a backlog of up to `messages` and `bytes`.
fn backlog(messages: usize, bytes: usize, close: Arc<CloseSignal>) -> WriterFlow {
    WriterFlow::Backlog {
        ceiling: BacklogCeiling { messages, bytes },
        close,
    }
}

/// Takes the next message off `writer` and releases its bytes, as the connection writer does.
async fn take(writer: &mut mpsc::Receiver<WriterMessage>, budget: Option<&ByteBudget>) -> i64 {
    let message = tokio::time::timeout(Duration::from_secs(1), writer.recv())
        .await
        .expect("a message for the writer")
        .expect("the router keeps the queue open");
    if let Some(budget) = budget {
        budget.release(message.queued_bytes);
    }
    id_of(&message)
}

struct Setup {
    input: mpsc::Sender<RouterInput>,
    stalled: mpsc::Receiver<WriterMessage>,
    healthy: mpsc::Receiver<WriterMessage>,
    close: Arc<CloseSignal>,
    shutdown: CancellationToken,
}

/// Connection 1 stalls with a writer queue of 2 and a backlog of up to `ceiling` messages;
/// connection 2 is drained.
fn setup(ceiling: usize) -> Setup {
    let (input, input_rx) = mpsc::channel(16);
    let (stalled_tx, stalled) = mpsc::channel(2);
    let (healthy_tx, healthy) = mpsc::channel(2);
    let close = Arc::new(CloseSignal::default());
    let shutdown = CancellationToken::new();
    let mut router = OutboundRouter::new(ReplayWindowLimits::default());
    let flow = backlog(ceiling, usize::MAX, close.clone());
    router.add_connection(ConnectionId(1), stalled_tx, flow, None);
    let other = backlog(ceiling, usize::MAX, Arc::new(CloseSignal::default()));
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

#[tokio::test(start_paused = true)]
async fn a_stalled_connection_keeps_order_and_delays_nobody() {
    let mut s = setup(100);
    for n in 0..3 {
        s.input.send(reply(n)).await.unwrap();
    }
    // The third did not fit the stalled writer; another connection is not held up by it.
    s.input.send(message(2, 100, json!({}), 0)).await.unwrap();
    assert_eq!(take(&mut s.healthy, None).await, 100);
    // Reading the stalled writer releases the backlog, in order.
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(take(&mut s.stalled, None).await);
    }
    assert_eq!(seen, [0, 1, 2]);
    assert_eq!(s.close.reason(), None);
    s.shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_backlog_within_its_ceiling_waits_for_the_writer_however_long_it_takes() {
    let mut s = setup(4);
    // Two fill the queue; four more, twice what the queue holds, wait in the backlog.
    for n in 0..6 {
        s.input.send(reply(n)).await.unwrap();
    }
    // Slow is not stalled: the router never closes on time (the writer watches its peer).
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(s.close.reason(), None, "closed within its ceiling");
    let mut seen = Vec::new();
    for _ in 0..6 {
        seen.push(take(&mut s.stalled, None).await);
    }
    assert_eq!(seen, [0, 1, 2, 3, 4, 5], "nothing lost, nothing reordered");
    s.shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_backlog_past_its_ceiling_in_messages_closes_at_once() {
    let s = setup(4);
    // Two fit the queue, four fill the backlog to its ceiling, the seventh is past it.
    for n in 0..7 {
        s.input.send(reply(n)).await.unwrap();
    }
    let reason = tokio::time::timeout(Duration::from_secs(1), s.close.closed())
        .await
        .expect("closed past the ceiling");
    assert_eq!(reason, CloseReason::SlowConsumer);
    s.shutdown.cancel();
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
async fn a_queue_over_its_bytes_holds_messages_back_until_bytes_are_released() {
    let (input, mut writer, budget, close, shutdown) =
        budgeted(|close| backlog(1000, 70_000, close), 10_000);
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
    assert_eq!(take(&mut writer, Some(&budget)).await, 0);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        writer.len(),
        2,
        "the backlog moved once bytes were released"
    );
    // More than the queue's bytes again owed behind it: a burst, kept as long as it takes.
    for n in 3..8 {
        input.send(sized(n, 4_000)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(close.reason(), None, "closed within its ceiling");
    for expected in 1..8 {
        assert_eq!(take(&mut writer, Some(&budget)).await, expected);
    }
    assert_eq!(close.reason(), None);
    shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_backlog_past_its_ceiling_in_bytes_closes_at_once() {
    let (input, _writer, _budget, close, shutdown) =
        budgeted(|close| backlog(1000, 20_000, close), 10_000);
    // 8 KB queued, then 3 × 8 KB owed behind it: over the backlog's 20 KB.
    for n in 0..4 {
        input.send(sized(n, 8_000)).await.unwrap();
    }
    let reason = tokio::time::timeout(Duration::from_secs(1), close.closed())
        .await
        .expect("closed on outgrowing its ceiling in bytes");
    assert_eq!(reason, CloseReason::SlowConsumer);
    shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_single_message_larger_than_the_ceiling_still_goes() {
    let (input, mut writer, budget, close, shutdown) =
        budgeted(|close| backlog(1000, 20_000, close), 10_000);
    input.send(sized(0, 4_000)).await.unwrap();
    // Larger than the queue and than the ceiling: it waits, alone, for an empty queue.
    input.send(sized(1, 50_000)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(close.reason(), None);
    for expected in 0..2 {
        assert_eq!(take(&mut writer, Some(&budget)).await, expected);
    }
    assert_eq!(close.reason(), None);
    shutdown.cancel();
}

/// Issue 27, point 1: one turn of the largest input a websocket accepts (`--max-message-bytes`,
/// 64 MiB) on a client that reads, with every default limit. The sizes are those of a
/// tandem-server turn measured on the wire (crates/cli/tests/app_server_big_turn.rs checks the
/// same at a smaller scale with the real binary): the reply, the status, `turn/started`, the
/// user item's `item/started` and `item/completed` (the input each), the agent message's
/// `item/started` and its three deltas (`You `, `said: `, then the input), its
/// `item/completed` (the input), the status, and `turn/completed` (both items). Nothing is
/// read until the whole burst is routed; then everything arrives, in order.
#[cfg(feature = "websocket")]
#[tokio::test(start_paused = true)]
async fn a_turn_of_the_largest_input_stays_within_the_default_ceiling() {
    use crate::transport::DEFAULT_WRITER_QUEUE_BYTES;
    use crate::transport::websocket::{DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_WRITER_QUEUE_CAPACITY};
    let input = DEFAULT_MAX_MESSAGE_BYTES;
    let ceiling = BacklogCeiling::new(
        DEFAULT_WRITER_QUEUE_CAPACITY,
        DEFAULT_WRITER_QUEUE_BYTES,
        DEFAULT_MAX_MESSAGE_BYTES,
    );
    let (input_tx, mut writer, budget, close, shutdown) = budgeted(
        |close| WriterFlow::Backlog { ceiling, close },
        DEFAULT_WRITER_QUEUE_BYTES,
    );
    let small = 400;
    let turn = [
        small,
        small,
        small,
        input + small,
        input + small,
        small,
        small,
        small,
        input + small,
        input + small,
        small,
        2 * input + small,
    ];
    for (n, bytes) in turn.iter().enumerate() {
        input_tx
            .send(message(1, n as i64, json!({}), *bytes))
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(close.reason(), None, "a reading client closed by one turn");
    for expected in 0..turn.len() {
        assert_eq!(take(&mut writer, Some(&budget)).await, expected as i64);
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
        assert_eq!(take(&mut writer, Some(&budget)).await, expected);
    }
    assert_eq!(
        close.reason(),
        None,
        "a backpressured connection is never closed"
    );
    shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_backlog_is_dropped_once_its_writer_is_gone() {
    let (input, writer, _budget, close, shutdown) =
        budgeted(|close| backlog(1000, 1 << 30, close), 10_000);
    input.send(sized(0, 8_000)).await.unwrap();
    // Behind the first, over the queue's bytes: it waits in the backlog.
    let (held, delivered) = acked(1, 8_000);
    input.send(held).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1)).await;
    // The writer gives up on its peer (it dropped its queue); the backlog goes with it.
    drop(writer);
    let delivered = tokio::time::timeout(Duration::from_secs(1), delivered)
        .await
        .expect("the backlogged message was freed")
        .unwrap();
    assert!(!delivered, "never handed to a writer");
    assert_eq!(close.reason(), None, "the writer's close, not the router's");
    shutdown.cancel();
}
