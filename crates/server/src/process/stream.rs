//! The output pump of one child stream: read-ahead, merging, cap, backpressure and drain budget.
//!
//! One task per stream owns the pipe. It reads while a delivery is in flight (so a slow consumer
//! costs at most [`READ_AHEAD_LIMIT`] of memory), keeps at most one delta in flight, and stops
//! reading when the read-ahead is full so that the child blocks on its own pipe instead of the
//! server buffering without bound. The post-exit drain budget only runs while the pump is
//! waiting on the pipe, never while it waits for the consumer.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use tandem_protocol::{ProcessOutputDeltaNotification, ProcessOutputStream};
use tokio::io::AsyncReadExt as _;
use tokio::sync::watch;
use tokio::time::Instant;

use super::launch::OutputReader;
use super::{
    DELTA_MERGE_BYTES, DRAIN_BUDGET, ProcessEventSink, READ_AHEAD_LIMIT, READ_CHUNK_BYTES,
};

/// Where the pump sends what it reads.
pub(crate) enum StreamMode {
    /// Deliver `process/outputDelta` notifications through the sink.
    Stream(Arc<dyn ProcessEventSink>),
    /// Keep the bytes for the `process/exited` notification.
    Capture,
}

/// Static settings of one pump.
pub(crate) struct StreamConfig {
    pub(crate) handle: String,
    pub(crate) stream: ProcessOutputStream,
    /// `None` means unlimited.
    pub(crate) cap: Option<u64>,
    pub(crate) mode: StreamMode,
    /// PTY masters report hang-up as `EIO`, which is their EOF.
    pub(crate) is_pty: bool,
}

/// What a finished pump reports to the supervisor.
#[derive(Debug, Default)]
pub(crate) struct StreamOutcome {
    /// The captured bytes (empty when streaming).
    pub(crate) captured: Vec<u8>,
    pub(crate) cap_reached: bool,
    pub(crate) drain_timed_out: bool,
}

/// The signals a pump listens to.
pub(crate) struct StreamSignals {
    /// Becomes `true` once the child has exited; starts the drain budget.
    pub(crate) exited: watch::Receiver<bool>,
    /// Becomes `true` once the spawn reply went out; nothing is delivered before.
    pub(crate) started: watch::Receiver<bool>,
}

/// Read chunks waiting for delivery, merged into deltas of at most [`DELTA_MERGE_BYTES`].
#[derive(Default)]
struct ChunkQueue {
    chunks: VecDeque<Vec<u8>>,
    len: usize,
}

impl ChunkQueue {
    fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.len += bytes.len();
        // Append to a small tail chunk instead of keeping many tiny ones (PTY reads are often a
        // few bytes), bounded so a merge never needs to split a huge chunk.
        if let Some(last) = self.chunks.back_mut()
            && last.len() + bytes.len() <= DELTA_MERGE_BYTES
        {
            last.extend_from_slice(bytes);
            return;
        }
        self.chunks.push_back(bytes.to_vec());
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes up to `max` bytes from the front.
    fn take(&mut self, max: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(max.min(self.len));
        while out.len() < max {
            let Some(front) = self.chunks.front_mut() else {
                break;
            };
            let room = max - out.len();
            if front.len() <= room {
                out.extend_from_slice(front);
                self.chunks.pop_front();
            } else {
                out.extend_from_slice(&front[..room]);
                front.drain(..room);
            }
        }
        self.len -= out.len();
        out
    }

    fn into_bytes(mut self) -> Vec<u8> {
        let len = self.len;
        self.take(len)
    }
}

/// A drain budget that only elapses while it is running.
struct DrainBudget {
    remaining: Duration,
    running_since: Option<Instant>,
}

impl DrainBudget {
    fn new(budget: Duration) -> Self {
        Self {
            remaining: budget,
            running_since: None,
        }
    }

    fn set_running(&mut self, running: bool) {
        match (running, self.running_since) {
            (true, None) => self.running_since = Some(Instant::now()),
            (false, Some(since)) => {
                self.remaining = self.remaining.saturating_sub(since.elapsed());
                self.running_since = None;
            }
            _ => {}
        }
    }

    fn deadline(&self) -> Option<Instant> {
        self.running_since.map(|since| since + self.remaining)
    }
}

type Delivery = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Pumps `reader` until EOF, the cap after exit, or the drain budget runs out.
pub(crate) async fn pump(
    reader: OutputReader,
    config: StreamConfig,
    signals: StreamSignals,
) -> StreamOutcome {
    let StreamSignals {
        mut exited,
        mut started,
    } = signals;
    let streaming = matches!(config.mode, StreamMode::Stream(_));
    let mut reader = Some(reader);
    let mut pending = ChunkQueue::default();
    let mut in_flight: Option<Delivery> = None;
    let mut accepted: u64 = 0;
    let mut cap_reached = false;
    let mut drain_timed_out = false;
    let mut child_exited = *exited.borrow_and_update();
    let mut is_started = *started.borrow_and_update();
    let mut budget = DrainBudget::new(DRAIN_BUDGET);
    let mut buf = vec![0u8; READ_CHUNK_BYTES];

    loop {
        // Keep exactly one delta in flight while there is something to send.
        if let StreamMode::Stream(sink) = &config.mode
            && is_started
            && in_flight.is_none()
            && !pending.is_empty()
        {
            let bytes = pending.take(DELTA_MERGE_BYTES);
            // Once the cap is hit nothing more is queued, so the delta that empties the queue
            // is the one holding the cap-th byte.
            let delta = ProcessOutputDeltaNotification {
                process_handle: config.handle.clone(),
                stream: config.stream,
                delta_base64: BASE64.encode(&bytes),
                cap_reached: cap_reached && pending.is_empty(),
            };
            let sink = Arc::clone(sink);
            in_flight = Some(Box::pin(async move { sink.output_delta(delta).await }));
        }

        if reader.is_none() && in_flight.is_none() && (pending.is_empty() || !streaming) {
            break;
        }

        // Capture mode is bounded by the cap instead of the read-ahead limit.
        let can_read = reader.is_some() && (!streaming || pending.len < READ_AHEAD_LIMIT);
        // Waiting for the consumer (or for the spawn reply) must not eat the drain budget.
        let waiting_on_consumer = streaming && (in_flight.is_some() || !is_started);
        budget.set_running(child_exited && can_read && !waiting_on_consumer);
        let deadline = budget.deadline();

        tokio::select! {
            () = async {
                match in_flight.as_mut() {
                    Some(delivery) => delivery.await,
                    None => std::future::pending().await,
                }
            }, if in_flight.is_some() => {
                in_flight = None;
            }
            read = async {
                match reader.as_mut() {
                    Some(reader) => reader.read(&mut buf).await,
                    None => std::future::pending().await,
                }
            }, if can_read => match read {
                Ok(0) => reader = None,
                Ok(n) => {
                    let chunk = &buf[..n];
                    let take = match config.cap {
                        None => n,
                        Some(cap) => usize::try_from(cap - accepted).map_or(n, |room| room.min(n)),
                    };
                    pending.push(&chunk[..take]);
                    accepted += take as u64;
                    // Bytes past the cap are read and dropped so the child never blocks on a
                    // full pipe; `take < n` also flags a zero cap, where no delta can carry it.
                    if config.cap.is_some_and(|cap| accepted >= cap && (cap > 0 || take < n)) {
                        cap_reached = true;
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => {
                    // EIO is how a PTY master reports that the last slave fd closed.
                    if !(config.is_pty && error.raw_os_error() == Some(nix::libc::EIO)) {
                        tracing::warn!(
                            handle = %config.handle,
                            stream = ?config.stream,
                            %error,
                            "reading process output failed"
                        );
                    }
                    reader = None;
                }
            },
            () = async {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            }, if deadline.is_some() => {
                // Descendants still hold the pipe; stop reading and deliver what we have.
                tracing::debug!(handle = %config.handle, stream = ?config.stream, "drain budget ran out");
                drain_timed_out = true;
                reader = None;
            }
            changed = exited.changed(), if !child_exited => {
                // A dropped sender means the supervisor is gone: treat it as exited.
                child_exited = changed.is_err() || *exited.borrow_and_update();
            }
            changed = started.changed(), if streaming && !is_started => {
                is_started = changed.is_err() || *started.borrow_and_update();
            }
        }

        // A capped stream has delivered all it ever will; once the child is gone there is no
        // one left to protect from a full pipe, so it is complete rather than draining.
        if cap_reached && child_exited {
            reader = None;
        }
    }

    StreamOutcome {
        captured: if streaming {
            Vec::new()
        } else {
            pending.into_bytes()
        },
        cap_reached,
        drain_timed_out,
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn chunk_queue_merges_and_splits() {
        let mut queue = ChunkQueue::default();
        queue.push(b"abc");
        queue.push(b"de");
        queue.push(&vec![7u8; DELTA_MERGE_BYTES]);
        assert_eq!(queue.len, 5 + DELTA_MERGE_BYTES);
        assert_eq!(queue.take(4), b"abcd");
        let next = queue.take(DELTA_MERGE_BYTES);
        assert_eq!(next.len(), DELTA_MERGE_BYTES);
        assert_eq!(next[0], b'e');
        assert_eq!(queue.take(DELTA_MERGE_BYTES), vec![7u8]);
        assert!(queue.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn drain_budget_only_elapses_while_running() {
        let mut budget = DrainBudget::new(Duration::from_secs(2));
        assert!(budget.deadline().is_none());
        budget.set_running(true);
        tokio::time::advance(Duration::from_millis(500)).await;
        budget.set_running(false);
        tokio::time::advance(Duration::from_secs(10)).await;
        budget.set_running(true);
        let left = budget.deadline().unwrap() - Instant::now();
        assert_eq!(left, Duration::from_millis(1500));
    }
}
