//! Chunk reuse under a sink that keeps delivered deltas (a replay window): once the window and
//! the kept deltas are covered, a fast stream allocates no new chunk, and a delta that is kept
//! never changes while the chunks around it are read into again.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tandem_protocol::{ProcessExitedNotification, ProcessOutputDeltaNotification};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::{mpsc, oneshot, watch};

use super::*;
use crate::{DELTAS_IN_FLIGHT, DeltaDelivery};

/// Byte `offset` of the generated output: every 8 bytes hold their own offset, so a delta that
/// changed under its holder, or bytes out of order, show at once.
fn expected(offset: u64, len: usize) -> Vec<u8> {
    (offset..offset + len as u64)
        .map(|at| (at & !7).to_le_bytes()[(at & 7) as usize])
        .collect()
}

/// A child that always has `left` more bytes ready.
struct Generated {
    offset: u64,
    left: u64,
}

impl AsyncRead for Generated {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let len = usize::try_from(self.left)
            .unwrap_or(usize::MAX)
            .min(buf.remaining());
        buf.put_slice(&expected(self.offset, len));
        self.offset += len as u64;
        self.left -= len as u64;
        Poll::Ready(Ok(()))
    }
}

/// Delivers each delta on a consumer task that keeps the newest `kept` of them, as a replay
/// window does, and checks every delta on arrival, on eviction and (every few deltas, as a
/// replay would) all it keeps.
struct KeepingSink {
    deltas: mpsc::UnboundedSender<(ProcessOutputDeltaNotification, oneshot::Sender<()>)>,
    /// What the sink tells the pump it keeps.
    declared: usize,
}

#[async_trait::async_trait]
impl ProcessEventSink for KeepingSink {
    async fn output_delta(&self, _delta: ProcessOutputDeltaNotification) {
        unreachable!("the pump queues deltas through queue_output_delta");
    }

    async fn exited(&self, _exited: ProcessExitedNotification) {}

    async fn queue_output_delta(&self, delta: ProcessOutputDeltaNotification) -> DeltaDelivery {
        let (delivered, on_delivery) = oneshot::channel();
        let _ = self.deltas.send((delta, delivered));
        DeltaDelivery::pending(async move {
            let _ = on_delivery.await;
        })
    }

    fn deltas_retained(&self) -> usize {
        self.declared
    }
}

/// Deliveries the consumer holds back: from the delta that reaches `after` bytes on, until
/// `open` says so.
struct DeliveryHold {
    after: u64,
    open: watch::Receiver<bool>,
}

/// Failures seen by the consumer, and the bytes it received.
#[derive(Default)]
struct Consumed {
    received: u64,
    failures: Vec<String>,
}

/// Keeps the newest `kept` deltas with their offsets, checking them as described on
/// [`KeepingSink`].
async fn consume(
    mut deltas: mpsc::UnboundedReceiver<(ProcessOutputDeltaNotification, oneshot::Sender<()>)>,
    kept: usize,
    consumed: Arc<Mutex<Consumed>>,
    mut hold: Option<DeliveryHold>,
) {
    let mut window: VecDeque<(u64, Bytes)> = VecDeque::new();
    let mut offset = 0u64;
    let mut count = 0u64;
    let check = |at: u64, delta: &Bytes, when: &str| {
        (delta[..] != expected(at, delta.len())[..])
            .then(|| format!("the delta at {at} differs {when}"))
    };
    while let Some((delta, delivered)) = deltas.recv().await {
        let mut failures: Vec<String> = check(offset, &delta.delta, "on arrival")
            .into_iter()
            .collect();
        window.push_back((offset, delta.delta.clone()));
        offset += delta.delta.len() as u64;
        count += 1;
        while window.len() > kept {
            let (at, old) = window.pop_front().expect("over the bound");
            failures.extend(check(at, &old, "when evicted"));
        }
        // A replay: everything kept, read again while the pump reads into other chunks.
        if count.is_multiple_of(7) {
            for (at, old) in &window {
                failures.extend(check(*at, old, "in a replay"));
            }
        }
        drop(delta);
        {
            let mut consumed = consumed.lock().unwrap();
            consumed.received = offset;
            consumed.failures.extend(failures);
        }
        if let Some(DeliveryHold { after, open }) = hold.as_mut()
            && offset >= *after
        {
            let _ = open.wait_for(|open| *open).await;
            hold = None;
        }
        let _ = delivered.send(());
    }
}

/// Pumps `chunks` whole chunks through a sink that keeps `kept` deltas and tells the pump it
/// keeps `declared`; returns the pump's outcome and what the consumer saw.
async fn run(chunks: u64, kept: usize, declared: usize) -> (StreamOutcome, Consumed) {
    let total = chunks * READ_CHUNK_BYTES as u64;
    let reader: OutputReader = Box::new(Generated {
        offset: 0,
        left: total,
    });
    let consumed = Arc::new(Mutex::new(Consumed::default()));
    let outcome = run_reader(reader, kept, declared, Arc::clone(&consumed), None).await;
    let consumed = std::mem::take(&mut *consumed.lock().unwrap());
    assert_eq!(consumed.received, total, "every byte arrived");
    (outcome, consumed)
}

/// Pumps `reader` to its end through a sink that keeps `kept` deltas and tells the pump it
/// keeps `declared`; the consumer reports into `consumed` as it goes.
async fn run_reader(
    reader: OutputReader,
    kept: usize,
    declared: usize,
    consumed: Arc<Mutex<Consumed>>,
    hold: Option<DeliveryHold>,
) -> StreamOutcome {
    let (sender, deltas) = mpsc::unbounded_channel();
    let consumer = tokio::spawn(consume(deltas, kept, consumed, hold));
    let sink: Arc<dyn ProcessEventSink> = Arc::new(KeepingSink {
        deltas: sender,
        declared,
    });
    let (_exited_tx, exited) = watch::channel(false);
    let (_started_tx, started) = watch::channel(true);
    let config = StreamConfig {
        handle: "recycled".to_owned(),
        stream: ProcessOutputStream::Stdout,
        cap: None,
        budget: None,
        mode: StreamMode::Stream(sink),
        is_pty: false,
        screen: None,
    };
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        pump(reader, config, StreamSignals { exited, started }),
    )
    .await
    .expect("the pump finishes");
    // The pump's sink (and with it the sender) is gone: the consumer ends.
    tokio::time::timeout(Duration::from_secs(30), consumer)
        .await
        .expect("the consumer finishes")
        .expect("the consumer does not panic");
    outcome
}

/// A child that writes one burst, is silent until `gate` resolves, then writes another.
struct TwoBursts {
    first: Generated,
    gate: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    second: Generated,
}

impl AsyncRead for TwoBursts {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.first.left > 0 {
            return Pin::new(&mut self.first).poll_read(cx, buf);
        }
        if let Some(gate) = self.gate.as_mut() {
            std::task::ready!(gate.as_mut().poll(cx));
            self.gate = None;
        }
        Pin::new(&mut self.second).poll_read(cx, buf)
    }
}

/// The chunks allocated for two bursts of `chunks` whole chunks each, `silence` apart; with
/// `delivered_late`, the first burst's last delta is delivered only after the silence.
async fn fresh_chunks_for_two_bursts(chunks: u64, silence: Duration, delivered_late: bool) -> u64 {
    let burst = chunks * READ_CHUNK_BYTES as u64;
    let (open, gate) = oneshot::channel::<()>();
    let reader: OutputReader = Box::new(TwoBursts {
        first: Generated {
            offset: 0,
            left: burst,
        },
        gate: Some(Box::pin(async move {
            let _ = gate.await;
        })),
        second: Generated {
            offset: burst,
            left: burst,
        },
    });
    let consumed = Arc::new(Mutex::new(Consumed::default()));
    let (deliver, hold_open) = watch::channel(!delivered_late);
    let hold = DeliveryHold {
        after: burst,
        open: hold_open,
    };
    let pumping = tokio::spawn(run_reader(
        reader,
        KEPT,
        KEPT,
        Arc::clone(&consumed),
        Some(hold),
    ));
    // The first burst is consumed before the silence starts.
    while consumed.lock().unwrap().received < burst {
        tokio::task::yield_now().await;
    }
    if !silence.is_zero() {
        tokio::time::sleep(silence).await;
    }
    deliver.send_replace(true);
    if delivered_late {
        // Time for the delivery to reach the pump (paused: every task runs first).
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    open.send(()).expect("the reader waits for the gate");
    let outcome = pumping.await.expect("the pump does not panic");
    let consumed = consumed.lock().unwrap();
    assert!(consumed.failures.is_empty(), "{:?}", consumed.failures);
    assert_eq!(consumed.received, 2 * burst, "every byte arrived");
    outcome.fresh_chunks
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_goes_quiet_lets_go_of_its_spare_chunks() {
    // A burst that fills every handle kept for reuse (the window, the kept deltas, the slack).
    let chunks = 2 * (DELTAS_IN_FLIGHT + KEPT + REUSE_SLACK) as u64;
    let straight_on = fresh_chunks_for_two_bursts(chunks, Duration::ZERO, false).await;
    let silence = RELEASE_IDLE_CHUNKS_AFTER + Duration::from_millis(1);
    let after_silence = fresh_chunks_for_two_bursts(chunks, silence, false).await;
    // Straight on, the second burst reads into the first one's chunks as the consumer lets
    // them go; after the silence the pump no longer holds them, so it allocates its own again
    // (measured: 220 and 254; both bursts also allocate for the read-ahead's swings).
    assert!(
        after_silence >= straight_on + DELTAS_IN_FLIGHT as u64,
        "fresh chunks: {straight_on} without a silence, {after_silence} after one"
    );
    // The same when the idle period runs out with the last delta still in flight: the pump,
    // which only looks at deliveries while it reads, waits for that one and then lets go.
    let delivered_late = fresh_chunks_for_two_bursts(chunks, silence, true).await;
    assert!(
        delivered_late >= straight_on + DELTAS_IN_FLIGHT as u64,
        "fresh chunks: {straight_on} without a silence, {delivered_late} after one that \
         ended with the last delta in flight"
    );
}

/// 47 is what the host's default replay window keeps of 64 KiB deltas.
const KEPT: usize = 47;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_whose_deltas_are_kept_reuses_its_chunks_and_never_changes_a_kept_one() {
    let chunks = 1024;
    let (outcome, consumed) = run(chunks, KEPT, KEPT).await;
    assert!(consumed.failures.is_empty(), "{:?}", consumed.failures);
    // The warm-up allocates what can be live at once: the handles kept for reuse (the window,
    // the kept deltas, the slack), the read-ahead, and the chunk being read into. Past it,
    // chunks are reused but for the read-ahead's swings: when it drains (the consumer caught
    // up) more chunks come back than the handles keep, and when it fills again the pump
    // allocates (measured here: 26-47 of the 894 chunks past the warm-up). Without reuse every
    // one of them would be fresh (the test below).
    let warm_up =
        (DELTAS_IN_FLIGHT + KEPT + REUSE_SLACK + READ_AHEAD_LIMIT / READ_CHUNK_BYTES + 1) as u64;
    let bound = warm_up + (chunks - warm_up) / 8;
    assert!(
        outcome.fresh_chunks <= bound,
        "{} of {chunks} chunks were fresh; at most {bound} should be",
        outcome.fresh_chunks
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_that_keeps_more_than_it_says_costs_fresh_chunks_but_no_wrong_byte() {
    // The counter sees misses: a sink keeping deltas it did not declare pins every chunk the
    // pump could reuse, so (nearly) every delta is a fresh chunk, and still no byte changes.
    let chunks = 512;
    let (outcome, consumed) = run(chunks, KEPT, 0).await;
    assert!(consumed.failures.is_empty(), "{:?}", consumed.failures);
    let reused = chunks - outcome.fresh_chunks.min(chunks);
    assert!(
        reused < chunks / 4,
        "{reused} of {chunks} chunks were reused while the sink pinned them"
    );
}
