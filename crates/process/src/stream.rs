//! The output pump of one child stream: read-ahead, merging, cap, backpressure and drain budget.
//!
//! One task per stream owns the pipe. It hands deltas to the sink one at a time, in order, and
//! keeps at most [`DELTAS_IN_FLIGHT`] of them ([`BYTES_IN_FLIGHT`] bytes) handed over and not
//! yet delivered: the credit window. It reads while deliveries are pending (so a slow consumer
//! costs at most the window plus [`READ_AHEAD_LIMIT`] of memory) and stops reading when the
//! read-ahead is full, so that the child blocks on its own pipe instead of the server buffering
//! without bound. The post-exit drain budget only runs while the pump is waiting on the pipe,
//! never while it waits for the consumer. What is read leaves as soon as the window has room;
//! while the window is full, what the child writes merges into chunks (a delta per chunk, not
//! per write). Deliveries are looked at whenever the pump wakes and waited for only when
//! something waits on them (`in_flight`): a fast stream's pump sleeps on its pipe alone, and
//! output held by a full window still leaves as soon as the consumer took what was sent.
//!
//! The pump reads straight into the buffers that become deltas and freezes them into
//! [`Bytes`]: a delta is never copied or encoded on the way to the consumer. Base64 exists
//! only in a wire transport's writer. A chunk nobody holds any more is read into again: the
//! pump keeps a handle to the chunks it handed over, as many as the window plus what the sink
//! keeps after delivery ([`ProcessEventSink::deltas_retained`], a replay window) can pin, so
//! the oldest of them is free again by the time it is needed and a fast stream allocates
//! nothing once it runs.
//! A chunk is only read into when its handle is the last one (`Bytes::is_unique`), so whoever
//! still holds a delta (a replay window) never sees its bytes change. A partial chunk's bytes
//! leave as a delta cut off its front, and the rest of the chunk is read into: the deltas cut
//! from one chunk share it, so whoever keeps the latest deltas of a stream (a replay window)
//! pins at most their length, plus one chunk, plus [`CUT_MIN_ROOM`] per chunk. The spare
//! chunks go once the stream has been idle for [`RELEASE_IDLE_CHUNKS_AFTER`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tandem_protocol::{ProcessOutputDeltaNotification, ProcessOutputStream};
use tokio::io::AsyncReadExt as _;
use tokio::sync::watch;
use tokio::time::Instant;

mod in_flight;

use self::in_flight::{Handing, InFlight};
use super::launch::OutputReader;
use super::{
    DELTA_MERGE_BYTES, DRAIN_BUDGET, ProcessEventSink, READ_AHEAD_LIMIT, READ_CHUNK_BYTES,
    RETAINED_DELTAS_MAX,
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
    /// The server-wide bound shared by both streams of the process; `None` when it does not
    /// apply (streamed output that nothing keeps).
    pub(crate) budget: Option<Arc<OutputBudget>>,
    pub(crate) mode: StreamMode,
    /// PTY masters report hang-up as `EIO`, which is their EOF.
    pub(crate) is_pty: bool,
    /// A PTY's emulated screen, fed each delta as it is handed to the sink (bytes past the cap
    /// are never sent, so the screen does not show them either).
    pub(crate) screen: Option<Arc<super::screen::PtyScreen>>,
}

/// What a finished pump reports to the supervisor.
#[derive(Debug, Default)]
pub(crate) struct StreamOutcome {
    /// The captured bytes (empty when streaming).
    pub(crate) captured: Vec<u8>,
    pub(crate) cap_reached: bool,
    pub(crate) drain_timed_out: bool,
    /// Chunks allocated because none handed over was free again (the rest were reused).
    pub(crate) fresh_chunks: u64,
}

/// Bytes one process may still keep, shared by its stdout and stderr pumps (the server-wide
/// `process_output_max_bytes`).
#[derive(Debug)]
pub(crate) struct OutputBudget {
    remaining: AtomicU64,
}

impl OutputBudget {
    pub(crate) fn new(max_bytes: u64) -> Self {
        Self {
            remaining: AtomicU64::new(max_bytes),
        }
    }

    /// Takes up to `wanted` bytes from the budget; returns how many were granted.
    fn take(&self, wanted: usize) -> usize {
        let wanted = wanted as u64;
        let previous = self
            .remaining
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |remaining| {
                Some(remaining.saturating_sub(wanted))
            })
            .unwrap_or_else(|remaining| remaining);
        // At most `wanted`, which came from a `usize`.
        usize::try_from(previous.min(wanted)).unwrap_or(0)
    }
}

/// The signals a pump listens to.
pub(crate) struct StreamSignals {
    /// Becomes `true` once the child has exited; starts the drain budget.
    pub(crate) exited: watch::Receiver<bool>,
    /// Becomes `true` once the spawn reply went out; nothing is delivered before.
    pub(crate) started: watch::Receiver<bool>,
}

/// Bytes read but not yet delivered, kept as chunks of [`READ_CHUNK_BYTES`] that the pump reads
/// into directly.
///
/// A chunk is filled completely before the next one starts, so queued bytes are always merged
/// into deltas of at most [`DELTA_MERGE_BYTES`] (the two sizes are equal), and a delta is the
/// rest of a chunk, or the part of it read so far, frozen and handed over without copying: the
/// hot path of a fast writer costs one read per byte, nothing more.
#[derive(Default)]
struct ChunkQueue {
    chunks: VecDeque<BytesMut>,
    /// Bytes queued (excluding the unused capacity of the last chunk).
    len: usize,
    /// Handles to the last whole chunks handed over as deltas, oldest first, at most
    /// `reuse_limit`: one that nobody else holds any more is read into again instead of a
    /// fresh allocation.
    handed_over: VecDeque<Bytes>,
    /// How many handles `handed_over` keeps: the deltas in flight plus those the sink keeps
    /// after delivery, plus [`REUSE_SLACK`]. Fewer, and the oldest handle would still be
    /// pinned (by a replay window) whenever a chunk is needed.
    reuse_limit: usize,
    /// Chunks allocated because no handle was free: after the first window's worth, a sign
    /// that something holds deltas longer than the sink said.
    fresh: u64,
}

/// Handles kept beyond the window and the sink's retained deltas: a delta a consumer is still
/// encoding or counting after its delivery resolved (a writer, a channel).
const REUSE_SLACK: usize = 2;

/// The least room a partial chunk keeps to be cut: with less, it leaves whole, so that no read
/// is ever made into a sliver.
const CUT_MIN_ROOM: usize = READ_CHUNK_BYTES / 16;

/// How long a stream stays idle before it lets go of the chunks it keeps for reuse.
const RELEASE_IDLE_CHUNKS_AFTER: Duration = Duration::from_millis(200);

// Deltas are whole chunks; see `ChunkQueue`.
const _: () = assert!(READ_CHUNK_BYTES == DELTA_MERGE_BYTES);

impl ChunkQueue {
    /// A queue that keeps up to `reuse_limit` handles to chunks handed over, for reuse.
    fn new(reuse_limit: usize) -> Self {
        Self {
            reuse_limit,
            ..Self::default()
        }
    }

    /// The chunk to read into: the last one while it has room, else a free one handed over
    /// before, else a fresh one. Reading into its spare capacity (`read_buf`) appends at most
    /// the room left.
    fn tail_for_read(&mut self) -> &mut BytesMut {
        if self
            .chunks
            .back()
            .is_none_or(|last| last.len() >= last.capacity())
        {
            let chunk = match self.reclaim() {
                Some(chunk) => chunk,
                None => {
                    self.fresh += 1;
                    BytesMut::with_capacity(READ_CHUNK_BYTES)
                }
            };
            self.chunks.push_back(chunk);
        }
        self.chunks.back_mut().expect("a chunk was just ensured")
    }

    /// The oldest chunk handed over that nobody else holds any more, emptied, with its whole
    /// capacity. Only a chunk whose handle here is the last one is taken (the deltas cut from
    /// one chunk share its count), so no delta anyone still holds can change. Deltas are let
    /// go roughly in order, so the search ends at once or after a few.
    fn reclaim(&mut self) -> Option<BytesMut> {
        let free = self.handed_over.iter().position(Bytes::is_unique)?;
        let mut chunk = self.handed_over.remove(free)?.try_into_mut().ok()?;
        // The handle is the chunk's last delta, wherever in the chunk it starts.
        chunk.clear();
        chunk.try_reclaim(READ_CHUNK_BYTES).then_some(chunk)
    }

    /// Lets go of the chunks handed over and kept to read into again. (The chunk being read
    /// into stays: a pump waiting on its pipe always holds one.)
    fn release_spare_chunks(&mut self) {
        self.handed_over.clear();
    }

    /// Accounts for a read of `read` bytes into [`Self::tail_for_read`], of which only the
    /// first `keep` are kept (the rest is past the cap).
    fn commit_read(&mut self, read: usize, keep: usize) {
        if let Some(tail) = self.chunks.back_mut() {
            tail.truncate(tail.len() - (read - keep));
        }
        self.len += keep;
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether chunks handed over are kept to read into again (memory a quiet stream should
    /// let go).
    fn keeps_spare_chunks(&self) -> bool {
        !self.handed_over.is_empty()
    }

    /// Removes the next delta's bytes: the first chunk, which is full unless it is the last.
    ///
    /// A delta pins the whole allocation of its chunk for as long as anyone holds it (a replay
    /// window charges only its length). So a partial chunk is cut: its bytes leave as a delta
    /// and the rest of it stays to be read into, and the next deltas of the stream are cut from
    /// the same chunk until it is full. A chunk is thus charged, delta by delta, for all it
    /// holds, and only the chunk a holder keeps the last deltas of in part pins more than it
    /// is charged for. A chunk with less than [`CUT_MIN_ROOM`] left leaves whole.
    fn pop_delta(&mut self) -> Option<Bytes> {
        if self.len == 0 {
            return None;
        }
        let mut chunk = self.chunks.pop_front()?;
        self.len -= chunk.len();
        if chunk.capacity() - chunk.len() >= CUT_MIN_ROOM {
            let delta = chunk.split().freeze();
            // Only the last chunk can be partial, so the queue is empty now.
            self.chunks.push_back(chunk);
            return Some(delta);
        }
        let delta = chunk.freeze();
        // The chunk's last delta stands for all of it: once nobody else holds that, nobody
        // holds any delta cut from the chunk, and `reclaim` takes back its whole capacity.
        if self.reuse_limit > 0 {
            if self.handed_over.len() >= self.reuse_limit {
                self.handed_over.pop_front();
            }
            self.handed_over.push_back(delta.clone());
        }
        Some(delta)
    }

    fn into_bytes(self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len);
        for chunk in self.chunks {
            bytes.extend_from_slice(&chunk);
        }
        bytes
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

/// Takes the next delta (at most [`DELTA_MERGE_BYTES`]) off `pending`.
fn next_delta(
    config: &StreamConfig,
    pending: &mut ChunkQueue,
    cap_reached: bool,
) -> Option<ProcessOutputDeltaNotification> {
    let delta = pending.pop_delta()?;
    // Once the cap is hit nothing more is queued, so the delta that empties the queue is the
    // one holding the cap-th byte.
    Some(ProcessOutputDeltaNotification {
        process_handle: config.handle.clone(),
        stream: config.stream,
        delta,
        cap_reached: cap_reached && pending.is_empty(),
    })
}

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
    let mut in_flight = InFlight::new(match &config.mode {
        StreamMode::Stream(sink) => sink.deltas_in_flight(),
        StreamMode::Capture => 1,
    });
    // A captured stream hands nothing over, so it has nothing to reuse.
    let mut pending = ChunkQueue::new(match &config.mode {
        StreamMode::Stream(sink) => {
            in_flight.limit + sink.deltas_retained().min(RETAINED_DELTAS_MAX) + REUSE_SLACK
        }
        StreamMode::Capture => 0,
    });
    let mut accepted: u64 = 0;
    let mut cap_reached = false;
    let mut drain_timed_out = false;
    let mut child_exited = *exited.borrow_and_update();
    let mut is_started = *started.borrow_and_update();
    let mut budget = DrainBudget::new(DRAIN_BUDGET);
    // Lets go of the chunks kept for reuse once the stream has been idle (nothing queued,
    // nothing in flight, no read) for `RELEASE_IDLE_CHUNKS_AFTER`: a long-lived process that
    // went quiet keeps no spare memory, and a streaming one keeps reusing its chunks. Armed at
    // most once per period, so a busy stream does not pay a timer per read.
    let mut last_read = Instant::now();
    let release = tokio::time::sleep_until(last_read);
    tokio::pin!(release);
    let mut release_armed = false;
    // The idle period ran out with deltas still in flight (deliveries are looked at, not
    // waited for, while the pump reads): wait for them, so the chunks go once they are in.
    let mut release_waits_on_delivery = false;

    loop {
        in_flight.settle();
        if release_waits_on_delivery && in_flight.is_empty() {
            release_waits_on_delivery = false;
        }
        if let StreamMode::Stream(sink) = &config.mode
            && is_started
        {
            // Hand over the next delta whenever the window has room, a partial chunk too.
            // Holding a partial chunk while deltas are in flight (to merge small writes) made
            // the pump wait for their deliveries, and a pump woken by deliveries as well as
            // by its pipe ran at 0.75-0.8x of a plain pipe read in process, against 1.1-1.4x
            // without (docs/performance.md, issue 31). Small writes still merge while the
            // window is full.
            if in_flight.has_room()
                && let Some(delta) = next_delta(&config, &mut pending, cap_reached)
            {
                let sink = Arc::clone(sink);
                let len = delta.delta.len();
                let handing: Handing = match config.screen.clone() {
                    Some(screen) => {
                        Box::pin(async move { sink.queue_screen_delta(delta, screen).await })
                    }
                    None => Box::pin(async move { sink.queue_output_delta(delta).await }),
                };
                in_flight.hand_over(handing, len);
            }
        }

        if reader.is_none() && in_flight.is_empty() && (pending.is_empty() || !streaming) {
            break;
        }

        // Capture mode is bounded by the cap instead of the read-ahead limit.
        let can_read = reader.is_some() && (!streaming || pending.len < READ_AHEAD_LIMIT);
        // Waiting for the consumer (or for the spawn reply) must not eat the drain budget.
        let waiting_on_consumer = streaming && (!in_flight.is_empty() || !is_started);
        budget.set_running(child_exited && can_read && !waiting_on_consumer);
        let deadline = budget.deadline();
        // A delivery wakes the pump only when it waits for one: something read is held back
        // (the window is full), the pipe is done or not read (the read-ahead is full), the
        // drain budget's clock depends on it (the child exited), or the idle release does. A
        // fast stream's pump is then woken by its pipe alone.
        let wait_for_delivery =
            !pending.is_empty() || !can_read || child_exited || release_waits_on_delivery;
        if pending.is_empty()
            && !release_armed
            && !release_waits_on_delivery
            && pending.keeps_spare_chunks()
        {
            release
                .as_mut()
                .reset(last_read + RELEASE_IDLE_CHUNKS_AFTER);
            release_armed = true;
        }

        tokio::select! {
            () = in_flight.progress(wait_for_delivery), if in_flight.can_progress(wait_for_delivery) => {}
            // `read_buf` is cancel safe: when another branch wins, nothing was read.
            read = async {
                match reader.as_mut() {
                    Some(reader) => reader.read_buf(pending.tail_for_read()).await,
                    None => std::future::pending().await,
                }
            }, if can_read => match read {
                Ok(0) => reader = None,
                Ok(n) => {
                    let mut take = match config.cap {
                        None => n,
                        Some(cap) => usize::try_from(cap - accepted).map_or(n, |room| room.min(n)),
                    };
                    if let Some(budget) = &config.budget {
                        take = budget.take(take);
                    }
                    last_read = Instant::now();
                    release_waits_on_delivery = false;
                    pending.commit_read(n, take);
                    accepted += take as u64;
                    // Bytes past the cap are read and dropped so the child never blocks on a
                    // full pipe; `take < n` also flags a zero cap, where no delta can carry it,
                    // and output dropped by the server-wide budget.
                    if take < n || config.cap.is_some_and(|cap| accepted >= cap && cap > 0) {
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
            () = &mut release, if release_armed => {
                release_armed = false;
                // A read since it was armed restarts the idle period (re-armed above).
                if pending.is_empty() && last_read.elapsed() >= RELEASE_IDLE_CHUNKS_AFTER {
                    in_flight.settle();
                    if in_flight.is_empty() {
                        pending.release_spare_chunks();
                    } else {
                        release_waits_on_delivery = true;
                    }
                }
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

    let fresh_chunks = pending.fresh;
    StreamOutcome {
        captured: if streaming {
            Vec::new()
        } else {
            pending.into_bytes()
        },
        cap_reached,
        drain_timed_out,
        fresh_chunks,
    }
}

#[cfg(test)]
mod recycling_tests;

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::DELTAS_IN_FLIGHT;

    /// Appends `bytes` as a read into the queue would, keeping the first `keep`.
    fn read_into(queue: &mut ChunkQueue, bytes: &[u8], keep: usize) {
        let tail = queue.tail_for_read();
        let room = tail.capacity() - tail.len();
        assert!(bytes.len() <= room, "a read never exceeds the chunk's room");
        tail.extend_from_slice(bytes);
        queue.commit_read(bytes.len(), keep);
    }

    #[test]
    fn chunk_queue_fills_whole_chunks_and_pops_them_as_deltas() {
        let mut queue = ChunkQueue::new(DELTAS_IN_FLIGHT);
        assert_eq!(queue.pop_delta(), None);
        read_into(&mut queue, b"abc", 3);
        read_into(&mut queue, b"de", 2);
        assert_eq!(queue.len, 5);
        // Small reads merge into one chunk, whose bytes so far are the next delta.
        let cut = queue.pop_delta().unwrap();
        assert_eq!(cut, &b"abcde"[..]);
        assert!(queue.is_empty());

        // The next reads go into the rest of that chunk, right behind the delta cut from it;
        // a read only ever gets the room left, and what follows starts the next chunk.
        read_into(&mut queue, &[1u8; 1000], 1000);
        let (room, address) = {
            let tail = queue.tail_for_read();
            (tail.capacity() - tail.len(), tail.as_ptr())
        };
        assert_eq!(address, cut.as_ptr().wrapping_add(5));
        assert_eq!(room, READ_CHUNK_BYTES - 5 - 1000);
        read_into(&mut queue, &vec![2u8; room], room);
        read_into(&mut queue, &[3u8; 7], 7);
        let rest = queue.pop_delta().unwrap();
        assert_eq!(rest.len(), DELTA_MERGE_BYTES - 5);
        assert_eq!((rest[0], rest[1000]), (1, 2));
        // The delta is the very buffer the reads went into: frozen, not copied.
        assert_eq!(rest.as_ptr(), address);
        let last = queue.pop_delta().unwrap();
        assert_eq!(last, vec![3u8; 7]);
        assert_eq!(queue.pop_delta(), None);
        assert_eq!(queue.fresh, 2);
    }

    #[test]
    fn dropped_chunks_are_read_into_again_and_partial_ones_are_cut() {
        let mut queue = ChunkQueue::new(DELTAS_IN_FLIGHT);
        read_into(&mut queue, &vec![1u8; READ_CHUNK_BYTES], READ_CHUNK_BYTES);
        let whole = queue.pop_delta().unwrap();
        let whole_address = whole.as_ptr();
        // Still held by the consumer: the next read goes into a fresh chunk.
        read_into(&mut queue, b"short", 5);
        let cut_address = queue.chunks.back().unwrap().as_ptr();
        assert_ne!(cut_address, whole_address);
        // A partial chunk is cut, not copied: the delta is its first bytes, and the reads that
        // follow go into the rest of it.
        let short = queue.pop_delta().unwrap();
        assert_eq!(short, &b"short"[..]);
        assert_eq!(short.as_ptr(), cut_address);
        assert_eq!(queue.tail_for_read().as_ptr(), cut_address.wrapping_add(5));
        let rest_len = READ_CHUNK_BYTES - 5;
        read_into(&mut queue, &vec![4u8; rest_len], rest_len);
        let rest = queue.pop_delta().unwrap();
        assert_eq!(rest.as_ptr(), cut_address.wrapping_add(5));
        assert_eq!(rest.len(), rest_len);
        assert_eq!(queue.fresh, 2);

        // A chunk with less than `CUT_MIN_ROOM` left leaves whole, so the next read starts a
        // new chunk rather than a sliver.
        let nearly = READ_CHUNK_BYTES - CUT_MIN_ROOM + 1;
        read_into(&mut queue, &vec![6u8; nearly], nearly);
        let nearly_whole = queue.pop_delta().unwrap();
        assert_eq!(nearly_whole.len(), nearly);
        assert!(queue.chunks.is_empty());
        assert_eq!(queue.fresh, 3);

        // Dropped, the whole chunk is read into again first.
        drop(whole);
        read_into(&mut queue, &vec![2u8; READ_CHUNK_BYTES], READ_CHUNK_BYTES);
        let again = queue.pop_delta().unwrap();
        assert_eq!(
            again.as_ptr(),
            whole_address,
            "the dropped chunk was reused"
        );
        assert_eq!(again, vec![2u8; READ_CHUNK_BYTES]);
        // The cut chunk only once every delta cut from it is dropped, and then whole.
        drop(short);
        read_into(&mut queue, &vec![5u8; READ_CHUNK_BYTES], READ_CHUNK_BYTES);
        let fresh = queue.pop_delta().unwrap();
        assert_eq!(queue.fresh, 4, "a delta cut from the chunk still held it");
        assert_eq!(rest, vec![4u8; rest_len], "a held delta never changes");
        drop(rest);
        read_into(&mut queue, &vec![7u8; READ_CHUNK_BYTES], READ_CHUNK_BYTES);
        let again_too = queue.pop_delta().unwrap();
        assert_eq!(again_too.as_ptr(), cut_address, "the cut chunk was reused");
        assert_eq!(again_too, vec![7u8; READ_CHUNK_BYTES]);
        assert_eq!(queue.fresh, 4, "no chunk was allocated");
        drop((again, again_too, fresh, nearly_whole));
        // Releasing lets go of every chunk kept for reuse.
        assert!(queue.keeps_spare_chunks());
        queue.release_spare_chunks();
        assert!(queue.handed_over.is_empty() && !queue.keeps_spare_chunks());
        // No more than a window's worth is kept.
        let held: Vec<Bytes> = (0..DELTAS_IN_FLIGHT + 3)
            .map(|_| {
                read_into(&mut queue, &vec![3u8; READ_CHUNK_BYTES], READ_CHUNK_BYTES);
                queue.pop_delta().unwrap()
            })
            .collect();
        assert_eq!(queue.handed_over.len(), DELTAS_IN_FLIGHT);
        drop(held);
    }

    #[test]
    fn small_deltas_kept_by_a_holder_share_their_chunks() {
        // A chatty child read a line at a time, every delta kept (a replay window): the deltas
        // are cut from as few chunks as their bytes fill, so what they pin is their length
        // plus less than `CUT_MIN_ROOM` per chunk, not a chunk each.
        let mut queue = ChunkQueue::new(DELTAS_IN_FLIGHT);
        let line = [b'x'; 1000];
        let kept: Vec<Bytes> = (0..1000)
            .map(|_| {
                read_into(&mut queue, &line, line.len());
                queue.pop_delta().unwrap()
            })
            .collect();
        let bytes = kept.len() * line.len();
        let most = bytes.div_ceil(READ_CHUNK_BYTES - CUT_MIN_ROOM) as u64;
        assert!(
            queue.fresh <= most,
            "{} chunks for {bytes} bytes",
            queue.fresh
        );
        // Each delta starts where the one before it ended, except where a chunk began.
        let chunk_starts = kept
            .windows(2)
            .filter(|pair| pair[1].as_ptr() != pair[0].as_ptr().wrapping_add(pair[0].len()))
            .count() as u64;
        assert_eq!(chunk_starts + 1, queue.fresh);
    }

    #[test]
    fn a_free_chunk_is_found_behind_one_still_held_and_misses_are_counted() {
        let mut queue = ChunkQueue::new(4);
        let mut deltas: Vec<Bytes> = (0..3)
            .map(|n| {
                read_into(&mut queue, &vec![n; READ_CHUNK_BYTES], READ_CHUNK_BYTES);
                queue.pop_delta().unwrap()
            })
            .collect();
        assert_eq!(queue.fresh, 3);
        // The oldest is still held (a replay window keeps it), the second is not.
        let second = deltas.remove(1);
        let address = second.as_ptr();
        drop(second);
        read_into(&mut queue, &vec![9u8; READ_CHUNK_BYTES], READ_CHUNK_BYTES);
        let again = queue.pop_delta().unwrap();
        assert_eq!(again.as_ptr(), address, "the free chunk was reused");
        assert_eq!(queue.fresh, 3, "no chunk was allocated");
        // The held ones kept their bytes.
        assert_eq!(deltas[0], vec![0u8; READ_CHUNK_BYTES]);
        assert_eq!(deltas[1], vec![2u8; READ_CHUNK_BYTES]);
        // Everything held: the next chunk is fresh, and counted.
        read_into(&mut queue, b"x", 1);
        assert_eq!(queue.fresh, 4);
        drop(again);
    }

    #[test]
    fn chunk_queue_drops_bytes_past_the_cap() {
        let mut queue = ChunkQueue::new(DELTAS_IN_FLIGHT);
        read_into(&mut queue, b"keep-drop", 4);
        read_into(&mut queue, b"dropped", 0);
        assert_eq!(queue.len, 4);
        assert_eq!(queue.into_bytes(), b"keep");
    }

    #[test]
    fn the_output_budget_grants_what_is_left_and_then_nothing() {
        let budget = OutputBudget::new(10);
        assert_eq!(budget.take(4), 4);
        assert_eq!(budget.take(0), 0);
        assert_eq!(budget.take(8), 6);
        assert_eq!(budget.take(1), 0);
        assert_eq!(OutputBudget::new(u64::MAX).take(usize::MAX), usize::MAX);
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
