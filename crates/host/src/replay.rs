//! Replay windows (docs/host.md, "Replay windows"; docs/protocol.md, "Cursors and replay"): the
//! sequence numbers of event streams and the bounded tail of each stream kept for clients that
//! come back after losing events.
//!
//! A stream is what the processor calls one (tandem-server: one per loaded thread); the host
//! only numbers its notifications, keeps the newest of them within [`ReplayWindowLimits`], and
//! answers "everything after this cursor" or "gap". It lives inside the outbound router, the
//! one task every message passes through in order, so a number is assigned in exactly the
//! order the events are written to every connection, and a replay written by the router can
//! never be overtaken by a live event or overlap one.
//!
//! Keeping an event is on the path of every thread event, so it must cost a small fraction of
//! delivering one (docs/performance.md, "Sequencing and the replay window"). The two text
//! deltas, most of a stream's events, are kept as their four strings appended to one byte
//! buffer per stream, which is allocated once and reused as a ring: no allocation or free per
//! event, and an eviction touches nothing but the index. Any other event is kept as an owned
//! copy. Either way the window's accounting is the event's estimated JSON size.

use std::collections::VecDeque;
use std::sync::Arc;

use foldhash::HashMap;
use tandem_protocol::{
    AgentMessageDeltaNotification, CommandExecutionOutputDeltaNotification, EventCursor,
    ServerNotification,
};

mod text_ring;

use self::text_ring::TextRing;
use crate::byte_budget::notification_size;
use crate::processor::ConnectionId;

/// Default of [`ReplayWindowLimits::max_events`].
pub const DEFAULT_REPLAY_WINDOW_EVENTS: usize = 4096;
/// Default of [`ReplayWindowLimits::max_bytes`] (4 MiB).
pub const DEFAULT_REPLAY_WINDOW_BYTES: usize = 4 << 20;

/// How much of each stream a host keeps for replay. Whichever bound is reached first evicts the
/// oldest events; an event larger than `max_bytes` on its own is not kept at all (a cursor
/// from before it is then a gap), so the bytes kept never exceed `max_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayWindowLimits {
    /// Events kept per stream; 0 keeps only the newest.
    pub max_events: usize,
    /// Bytes kept per stream, measured as the events' JSON size.
    pub max_bytes: usize,
}

impl Default for ReplayWindowLimits {
    fn default() -> Self {
        Self {
            max_events: DEFAULT_REPLAY_WINDOW_EVENTS,
            max_bytes: DEFAULT_REPLAY_WINDOW_BYTES,
        }
    }
}

/// What one stream's window holds, by its own accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayWindowStats {
    /// Events kept.
    pub events: usize,
    /// Their JSON size in bytes.
    pub bytes: usize,
    /// The sequence number of the newest event (of the stream's start if it has none).
    pub last_seq: u64,
    /// Events evicted since the stream began.
    pub evicted: u64,
}

/// A cursor as the host carries it: only the sequence number. The epoch is one per host
/// ([`ReplayWindows::epoch`]); each consumer holds it once and adds it where it reads or
/// serializes a cursor, so an event carries no shared pointer whose reference count every
/// event would touch from two threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamCursor {
    pub(crate) seq: u64,
}

impl StreamCursor {
    /// The cursor as a consumer reads it, `epoch` being the host's.
    pub(crate) fn to_event_cursor(self, epoch: &str) -> EventCursor {
        EventCursor {
            epoch: epoch.to_owned(),
            seq: self.seq,
        }
    }
}

/// How attaching a connection to a stream went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamAttachment {
    /// Where the stream stands: every event after it reaches the connection live.
    pub cursor: EventCursor,
    /// `Some` when a cursor was given: `true` when the events after it are no longer all in
    /// the window (or it is from another host instance) and nothing was replayed.
    pub gap: Option<bool>,
    /// Events replayed (written to the connection before any live one).
    pub replayed: u64,
}

/// One event kept for replay. Small (32 bytes), so the index of a full window stays compact.
struct Kept {
    seq: u64,
    /// What the window's byte bound charges for it: its estimated JSON size.
    bytes: usize,
    stored: Stored,
}

/// Where a kept event's content is.
enum Stored {
    /// A text delta: its thread id and text (of these byte lengths) follow the previous kept
    /// text delta's in [`Stream::text`], its turn and item ids are those of its [`IdRun`].
    /// With `thread_is_stream`, the thread id is the stream's name (as in tandem-server) and
    /// is not stored (`lens[0]` is 0).
    TextDelta {
        kind: TextDelta,
        thread_is_stream: bool,
        lens: [u32; 2],
    },
    /// Any other event, copied.
    Owned(Box<ServerNotification>),
}

/// The turn and item ids shared by consecutive text deltas (one item's deltas), kept once.
/// A text delta's run is the newest one that started at or before it.
struct IdRun {
    first_seq: u64,
    turn_id: String,
    item_id: String,
}

impl Stored {
    /// The event again; `text` is its part of [`Stream::text`], `ids` its run (text deltas
    /// only), `stream` the stream's name.
    fn notification(&self, text: &[u8], ids: Option<&IdRun>, stream: &str) -> ServerNotification {
        match self {
            Stored::TextDelta {
                kind,
                thread_is_stream,
                lens,
            } => {
                // Whole strings copied from `&str`s: always UTF-8.
                let (thread_id, delta) = text.split_at(lens[0] as usize);
                let thread_id = match thread_is_stream {
                    true => stream.to_owned(),
                    false => String::from_utf8_lossy(thread_id).into_owned(),
                };
                let ids = ids.expect("a kept text delta has an id run");
                kind.build([
                    thread_id,
                    ids.turn_id.clone(),
                    ids.item_id.clone(),
                    String::from_utf8_lossy(delta).into_owned(),
                ])
            }
            Stored::Owned(notification) => (**notification).clone(),
        }
    }

    /// How many bytes of [`Stream::text`] it takes.
    fn text_len(&self) -> usize {
        match self {
            Stored::TextDelta { lens, .. } => lens[0] as usize + lens[1] as usize,
            Stored::Owned(_) => 0,
        }
    }
}

/// The notifications kept as text in the window: four strings each, the same four members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextDelta {
    AgentMessage,
    CommandOutput,
}

impl TextDelta {
    const ALL: [TextDelta; 2] = [TextDelta::AgentMessage, TextDelta::CommandOutput];

    /// The kind and strings of `notification`, if it is a text delta.
    fn parts(notification: &ServerNotification) -> Option<(TextDelta, [&str; 4])> {
        match notification {
            ServerNotification::AgentMessageDelta(delta) => Some((
                TextDelta::AgentMessage,
                [
                    &delta.thread_id,
                    &delta.turn_id,
                    &delta.item_id,
                    &delta.delta,
                ],
            )),
            ServerNotification::CommandExecutionOutputDelta(delta) => Some((
                TextDelta::CommandOutput,
                [
                    &delta.thread_id,
                    &delta.turn_id,
                    &delta.item_id,
                    &delta.delta,
                ],
            )),
            _ => None,
        }
    }

    fn build(self, [thread_id, turn_id, item_id, delta]: [String; 4]) -> ServerNotification {
        match self {
            TextDelta::AgentMessage => {
                ServerNotification::AgentMessageDelta(AgentMessageDeltaNotification {
                    thread_id,
                    turn_id,
                    item_id,
                    delta: delta.into(),
                })
            }
            TextDelta::CommandOutput => ServerNotification::CommandExecutionOutputDelta(
                CommandExecutionOutputDeltaNotification {
                    thread_id,
                    turn_id,
                    item_id,
                    delta: delta.into(),
                },
            ),
        }
    }

    /// What [`notification_size`] gives for this kind with four empty strings: the estimate
    /// counts a string as its length plus its quotes, so a delta measures this plus the
    /// lengths of its strings, without walking it.
    fn empty_size(self) -> usize {
        notification_size(&self.build(Default::default()))
    }
}

struct Stream {
    /// Every event of this stream numbered above `floor` is in `kept`.
    floor: u64,
    last_seq: u64,
    kept: VecDeque<Kept>,
    /// The thread ids and texts of the kept text deltas, oldest first. Never more than
    /// `max_bytes` (each delta's strings are less than its accounted size), and its capacity
    /// is capped there.
    text: TextRing,
    /// The id runs of the kept text deltas, oldest first: at most one more than there are
    /// kept text deltas, each no larger than the accounted size of the deltas it serves.
    ids: VecDeque<IdRun>,
    bytes: usize,
    evicted: u64,
    /// Connections that receive the stream live, sorted: a thread has a few subscribers, and
    /// a slice is the cheapest set to walk for every event.
    attached: Vec<ConnectionId>,
}

impl Stream {
    fn evict_oldest(&mut self) {
        let oldest = self.kept.pop_front().expect("an event to evict");
        self.text.pop_front(oldest.stored.text_len());
        self.bytes -= oldest.bytes;
        self.floor = oldest.seq;
        self.evicted += 1;
        // A run that no kept event can belong to goes (with nothing kept, only the newest
        // stays, for the next delta of the same item).
        // (One run, the usual case, has nothing to check.)
        if self.ids.len() >= 2 {
            let front = self.kept.front().map_or(u64::MAX, |kept| kept.seq);
            while self.ids.len() >= 2 && self.ids[1].first_seq <= front {
                self.ids.pop_front();
            }
        }
    }

    /// Keeps text delta number `seq` as text, if its strings' lengths fit the index.
    fn keep_text(
        &mut self,
        kind: TextDelta,
        [thread_id, turn_id, item_id, delta]: [&str; 4],
        stream: &str,
        seq: u64,
        cap: usize,
    ) -> Option<Stored> {
        let thread_is_stream = thread_id == stream;
        let thread_id = if thread_is_stream { "" } else { thread_id };
        let lens = [
            u32::try_from(thread_id.len()).ok()?,
            u32::try_from(delta.len()).ok()?,
        ];
        let same_ids = self
            .ids
            .back()
            .is_some_and(|run| run.turn_id == turn_id && run.item_id == item_id);
        if !same_ids {
            self.ids.push_back(IdRun {
                first_seq: seq,
                turn_id: turn_id.to_owned(),
                item_id: item_id.to_owned(),
            });
        }
        self.text.push(thread_id.as_bytes(), delta.as_bytes(), cap);
        Some(Stored::TextDelta {
            kind,
            thread_is_stream,
            lens,
        })
    }
}

/// Every stream of one host.
pub(crate) struct ReplayWindows {
    epoch: Arc<str>,
    limits: ReplayWindowLimits,
    /// Every open stream, by slot; a closed stream's slot is reused.
    slots: Vec<Option<Stream>>,
    free_slots: Vec<usize>,
    by_name: HashMap<Arc<str>, usize>,
    /// The stream recorded to last and its slot, found by the very `Arc` the producer sends
    /// its name in (tandem-server keeps one per thread), so that consecutive events of one
    /// thread find their window without hashing its name.
    last_recorded: Option<(Arc<str>, usize)>,
    /// The highest number ever assigned or reserved, counting the open streams' own
    /// `last_seq`: a stream opened again starts above it, so a cursor from its previous life
    /// is never mistaken for one of the new.
    high_water: u64,
    /// [`TextDelta::empty_size`] of each kind, measured once.
    text_delta_sizes: [usize; 2],
}

/// What [`ReplayWindows::attach`] decided.
pub(crate) struct Attach {
    pub(crate) outcome: StreamAttachment,
    /// The events to write before any live one, oldest first, with their cursors.
    pub(crate) replay: Vec<(StreamCursor, ServerNotification)>,
}

impl ReplayWindows {
    pub(crate) fn new(limits: ReplayWindowLimits) -> Self {
        Self::with_epoch(limits, format!("{:016x}", rand::random::<u64>()))
    }

    pub(crate) fn with_epoch(limits: ReplayWindowLimits, epoch: String) -> Self {
        Self {
            epoch: epoch.into(),
            limits,
            slots: Vec::new(),
            free_slots: Vec::new(),
            by_name: HashMap::default(),
            last_recorded: None,
            high_water: 0,
            text_delta_sizes: TextDelta::ALL.map(TextDelta::empty_size),
        }
    }

    fn cursor(&self, seq: u64) -> StreamCursor {
        StreamCursor { seq }
    }

    /// This host's epoch: what every cursor it hands out carries besides its number.
    pub(crate) fn epoch(&self) -> &Arc<str> {
        &self.epoch
    }

    /// The slot of `stream` found by name (a producer's event whose `Arc` is not the last one
    /// recorded), remembered with that `Arc` for the events that follow it.
    #[cold]
    fn remember_slot(&mut self, stream: &Arc<str>) -> usize {
        let slot = self.slot(stream);
        self.last_recorded = Some((Arc::clone(stream), slot));
        slot
    }

    /// The slot of `name`, opening the stream if it is not open.
    fn slot(&mut self, name: &Arc<str>) -> usize {
        if let Some(slot) = self.by_name.get(&**name) {
            return *slot;
        }
        // One number is skipped: `floor` is a number no event ever had, so no cursor handed
        // out before can equal it. (The open streams' numbers are folded in only here and
        // when one closes, not on every event.)
        let open_high = self.slots.iter().flatten().map(|entry| entry.last_seq);
        self.high_water = open_high.fold(self.high_water, u64::max) + 1;
        let stream = Stream {
            floor: self.high_water,
            last_seq: self.high_water,
            kept: VecDeque::new(),
            text: TextRing::default(),
            ids: VecDeque::new(),
            bytes: 0,
            evicted: 0,
            attached: Vec::new(),
        };
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.slots[slot] = Some(stream);
                slot
            }
            None => {
                self.slots.push(Some(stream));
                self.slots.len() - 1
            }
        };
        self.by_name.insert(Arc::clone(name), slot);
        slot
    }

    fn open(&mut self, slot: usize) -> &mut Stream {
        self.slots[slot].as_mut().expect("an open stream's slot")
    }

    fn get(&self, name: &str) -> Option<&Stream> {
        let slot = *self.by_name.get(name)?;
        self.slots[slot].as_ref()
    }

    /// Numbers `notification` as the next event of `stream`, keeps a copy for replay, and
    /// returns its cursor and the connections attached to the stream.
    pub(crate) fn record(
        &mut self,
        stream: &Arc<str>,
        notification: &ServerNotification,
    ) -> (StreamCursor, &[ConnectionId]) {
        let limits = self.limits;
        let text = TextDelta::parts(notification);
        let bytes = match &text {
            Some((kind, strings)) => {
                self.text_delta_sizes[*kind as usize]
                    + strings.iter().map(|string| string.len()).sum::<usize>()
            }
            None => notification_size(notification),
        };
        let slot = match &self.last_recorded {
            Some((last, slot)) if Arc::ptr_eq(last, stream) => *slot,
            _ => self.remember_slot(stream),
        };
        let entry = self.open(slot);
        entry.last_seq += 1;
        let seq = entry.last_seq;
        if bytes > limits.max_bytes {
            // Larger than the whole window: keeping it would break the bound, and it would
            // push out everything before it anyway. Not copied at all; a cursor from before
            // it is a gap, one from it on is not.
            entry.evicted += entry.kept.len() as u64 + 1;
            entry.kept.clear();
            entry.text.clear();
            entry.ids.clear();
            entry.bytes = 0;
            entry.floor = seq;
            return self.recorded(slot, seq);
        }
        // Room first, then the event: what is kept never exceeds the bounds, not even while
        // an event is added.
        while !entry.kept.is_empty()
            && (entry.kept.len() >= limits.max_events.max(1)
                || entry.bytes + bytes > limits.max_bytes)
        {
            entry.evict_oldest();
        }
        let stored = text
            .and_then(|(kind, strings)| {
                entry.keep_text(kind, strings, stream, seq, limits.max_bytes)
            })
            .unwrap_or_else(|| Stored::Owned(Box::new(notification.clone())));
        entry.kept.push_back(Kept { seq, bytes, stored });
        entry.bytes += bytes;
        self.recorded(slot, seq)
    }

    fn recorded(&self, slot: usize, seq: u64) -> (StreamCursor, &[ConnectionId]) {
        let attached = self.slots[slot]
            .as_ref()
            .map_or(&[][..], |entry| &entry.attached);
        (self.cursor(seq), attached)
    }

    /// Attaches `connection` to `stream` live; with `after`, also decides what to replay.
    pub(crate) fn attach(
        &mut self,
        stream: &str,
        connection: ConnectionId,
        after: Option<&EventCursor>,
    ) -> Attach {
        let epoch = Arc::clone(&self.epoch);
        let slot = self.slot(&Arc::from(stream));
        let entry = self.open(slot);
        if let Err(place) = entry.attached.binary_search(&connection) {
            entry.attached.insert(place, connection);
        }
        let (last_seq, floor) = (entry.last_seq, entry.floor);
        let mut replay = Vec::new();
        let gap = after.map(|after| {
            // Within the window: from this instance, not older than the oldest event kept,
            // and not newer than the stream (a cursor from a future would hide a gap).
            let replayable = *after.epoch == *epoch && after.seq >= floor && after.seq <= last_seq;
            if replayable {
                let text = entry.text.contiguous();
                let (mut offset, mut run) = (0, 0);
                for kept in &entry.kept {
                    let start = offset;
                    offset += kept.stored.text_len();
                    while entry
                        .ids
                        .get(run + 1)
                        .is_some_and(|next| next.first_seq <= kept.seq)
                    {
                        run += 1;
                    }
                    if kept.seq > after.seq {
                        let text = &text[start..offset];
                        let notification =
                            kept.stored.notification(text, entry.ids.get(run), stream);
                        replay.push((kept.seq, notification));
                    }
                }
            }
            !replayable
        });
        let replay: Vec<_> = replay
            .into_iter()
            .map(|(seq, notification)| (self.cursor(seq), notification))
            .collect();
        Attach {
            outcome: StreamAttachment {
                cursor: self.cursor(last_seq).to_event_cursor(&self.epoch),
                gap,
                replayed: replay.len() as u64,
            },
            replay,
        }
    }

    /// `connection` stops receiving `stream` live.
    pub(crate) fn detach(&mut self, stream: &str, connection: ConnectionId) {
        if let Some(slot) = self.by_name.get(stream).copied() {
            self.open(slot).attached.retain(|id| *id != connection);
        }
    }

    /// `connection` stops receiving every stream (it closed, or its consumer is replaced).
    pub(crate) fn detach_everywhere(&mut self, connection: ConnectionId) {
        for entry in self.slots.iter_mut().flatten() {
            entry.attached.retain(|id| *id != connection);
        }
    }

    /// Forgets `stream` and its window (the processor unloaded what it was about).
    pub(crate) fn close(&mut self, stream: &str) {
        let Some(slot) = self.by_name.remove(stream) else {
            return;
        };
        if let Some(closed) = self.slots[slot].take() {
            self.high_water = self.high_water.max(closed.last_seq);
        }
        self.free_slots.push(slot);
        if self
            .last_recorded
            .as_ref()
            .is_some_and(|(_, last)| *last == slot)
        {
            self.last_recorded = None;
        }
    }

    pub(crate) fn stats(&self, stream: &str) -> Option<ReplayWindowStats> {
        self.get(stream).map(|entry| ReplayWindowStats {
            events: entry.kept.len(),
            bytes: entry.bytes,
            last_seq: entry.last_seq,
            evicted: entry.evicted,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str) -> ServerNotification {
        ServerNotification::AgentMessageDelta(AgentMessageDeltaNotification {
            thread_id: "t".into(),
            turn_id: "u".into(),
            item_id: "i".into(),
            delta: text.into(),
        })
    }

    fn record(windows: &mut ReplayWindows, stream: &str, note: &ServerNotification) -> EventCursor {
        let cursor = windows.record(&Arc::from(stream), note).0;
        cursor.to_event_cursor(windows.epoch())
    }

    fn texts(replay: &[(StreamCursor, ServerNotification)]) -> Vec<String> {
        replay
            .iter()
            .map(|(_, note)| match note {
                ServerNotification::AgentMessageDelta(delta) => delta.delta.to_string(),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    #[test]
    fn replays_exactly_what_followed_a_cursor() {
        let mut windows = ReplayWindows::with_epoch(ReplayWindowLimits::default(), "e".into());
        let cursors: Vec<_> = ["a", "b", "c", "d"]
            .iter()
            .map(|text| record(&mut windows, "t", &delta(text)))
            .collect();
        assert!(
            cursors
                .windows(2)
                .all(|pair| pair[1].seq == pair[0].seq + 1)
        );
        let attach = windows.attach("t", ConnectionId(7), Some(&cursors[1]));
        assert_eq!(texts(&attach.replay), ["c", "d"]);
        assert_eq!(attach.outcome.gap, Some(false));
        assert_eq!(attach.outcome.replayed, 2);
        assert_eq!(attach.outcome.cursor, cursors[3]);
        // Attached: the next event goes to the connection.
        let (_, recipients) = windows.record(&Arc::from("t"), &delta("e"));
        assert_eq!(recipients, [ConnectionId(7)]);
        // At the newest cursor there is nothing to replay, and that is no gap.
        let attach = windows.attach("t", ConnectionId(8), Some(&cursors[3]));
        assert_eq!(texts(&attach.replay), ["e"]);
    }

    #[test]
    fn evicted_foreign_and_future_cursors_are_gaps() {
        let limits = ReplayWindowLimits {
            max_events: 2,
            max_bytes: usize::MAX,
        };
        let mut windows = ReplayWindows::with_epoch(limits, "e".into());
        let cursors: Vec<_> = ["a", "b", "c", "d"]
            .iter()
            .map(|text| record(&mut windows, "t", &delta(text)))
            .collect();
        // "c" and "d" are kept: after "b" is still whole, after "a" is not.
        assert_eq!(
            texts(
                &windows
                    .attach("t", ConnectionId(1), Some(&cursors[1]))
                    .replay
            ),
            ["c", "d"]
        );
        let old = windows.attach("t", ConnectionId(1), Some(&cursors[0]));
        assert_eq!((old.outcome.gap, old.replay.len()), (Some(true), 0));
        let foreign = EventCursor {
            epoch: "other".into(),
            seq: cursors[2].seq,
        };
        assert_eq!(
            windows
                .attach("t", ConnectionId(1), Some(&foreign))
                .outcome
                .gap,
            Some(true)
        );
        let future = EventCursor {
            epoch: "e".into(),
            seq: cursors[3].seq + 1,
        };
        assert_eq!(
            windows
                .attach("t", ConnectionId(1), Some(&future))
                .outcome
                .gap,
            Some(true)
        );
    }

    #[test]
    fn a_reopened_stream_never_accepts_an_old_cursor() {
        let mut windows = ReplayWindows::with_epoch(ReplayWindowLimits::default(), "e".into());
        let old = record(&mut windows, "t", &delta("a"));
        windows.close("t");
        let new = record(&mut windows, "t", &delta("b"));
        assert!(new.seq > old.seq + 1);
        let attach = windows.attach("t", ConnectionId(1), Some(&old));
        assert_eq!(attach.outcome.gap, Some(true));
    }

    #[test]
    fn a_stream_opens_above_every_number_handed_out_by_open_and_closed_streams() {
        let mut windows = ReplayWindows::with_epoch(ReplayWindowLimits::default(), "e".into());
        record(&mut windows, "a", &delta("a0"));
        let b_first = record(&mut windows, "b", &delta("b0"));
        let mut a_last = b_first.clone();
        for n in 0..10 {
            a_last = record(&mut windows, "a", &delta(&format!("a{n}")));
        }
        // "a" is open and ahead of "b": a new stream starts above it.
        let c_first = record(&mut windows, "c", &delta("c0"));
        assert!(c_first.seq > a_last.seq + 1, "{c_first:?} {a_last:?}");
        let mut c_last = c_first;
        for n in 0..20 {
            c_last = record(&mut windows, "c", &delta(&format!("c{n}")));
        }
        // "c" closed ahead of every open stream: a reopened "a" still starts above it, and
        // neither its old cursor nor a closed stream's is accepted.
        windows.close("c");
        windows.close("a");
        let a_again = record(&mut windows, "a", &delta("again"));
        assert!(a_again.seq > c_last.seq + 1, "{a_again:?} {c_last:?}");
        let attach = windows.attach("a", ConnectionId(1), Some(&a_last));
        assert_eq!(attach.outcome.gap, Some(true));
    }

    #[test]
    fn bytes_stay_under_the_bound_by_the_windows_own_accounting() {
        let limits = ReplayWindowLimits {
            max_events: usize::MAX,
            max_bytes: 10_000,
        };
        let mut windows = ReplayWindows::with_epoch(limits, "e".into());
        let chunk = "x".repeat(300);
        for _ in 0..1_000 {
            record(&mut windows, "t", &delta(&chunk));
            let stats = windows.stats("t").unwrap();
            assert!(stats.bytes <= limits.max_bytes, "{stats:?}");
        }
        let stats = windows.stats("t").unwrap();
        assert!(stats.events > 10 && stats.evicted > 900, "{stats:?}");
    }

    #[test]
    fn an_event_larger_than_the_window_is_not_kept_and_cursors_before_it_are_gaps() {
        let limits = ReplayWindowLimits {
            max_events: usize::MAX,
            max_bytes: 10_000,
        };
        let mut windows = ReplayWindows::with_epoch(limits, "e".into());
        let before = record(&mut windows, "t", &delta("a"));
        let huge = record(&mut windows, "t", &delta(&"x".repeat(20_000)));
        let stats = windows.stats("t").unwrap();
        assert_eq!((stats.events, stats.bytes, stats.evicted), (0, 0, 2));
        assert_eq!(stats.last_seq, huge.seq);
        let after = record(&mut windows, "t", &delta("b"));
        assert_eq!(
            windows
                .attach("t", ConnectionId(1), Some(&before))
                .outcome
                .gap,
            Some(true)
        );
        let attach = windows.attach("t", ConnectionId(2), Some(&huge));
        assert_eq!(attach.outcome.gap, Some(false));
        assert_eq!(texts(&attach.replay), ["b"]);
        assert_eq!(attach.outcome.cursor, after);
    }
    fn command_output(text: &str) -> ServerNotification {
        ServerNotification::CommandExecutionOutputDelta(CommandExecutionOutputDeltaNotification {
            thread_id: "thread".into(),
            turn_id: "turn-\"quoted\"".into(),
            item_id: "item".into(),
            delta: text.into(),
        })
    }

    fn other(n: u64) -> ServerNotification {
        ServerNotification::Custom {
            method: "other".into(),
            params: serde_json::json!({ "n": n }),
        }
    }

    #[test]
    fn a_text_delta_is_charged_its_estimated_json_size() {
        let mut windows = ReplayWindows::with_epoch(ReplayWindowLimits::default(), "e".into());
        for note in [
            delta(""),
            delta("héllo, wörld"),
            command_output(&"y".repeat(5_000)),
            command_output("line\n\ttab"),
        ] {
            let before = windows.stats("t").map_or(0, |stats| stats.bytes);
            record(&mut windows, "t", &note);
            let charged = windows.stats("t").unwrap().bytes - before;
            assert_eq!(charged, notification_size(&note), "{note:?}");
        }
    }

    #[test]
    fn text_and_other_events_replay_exactly_across_evictions_and_wrap_around() {
        let limits = ReplayWindowLimits {
            max_events: 7,
            max_bytes: 2_000,
        };
        let mut windows = ReplayWindows::with_epoch(limits, "e".into());
        let mut sent = Vec::new();
        for n in 0..200u64 {
            let note = match n % 5 {
                0 => other(n),
                1 => command_output(&format!("out {n} {}", "z".repeat((n % 13) as usize * 20))),
                _ => ServerNotification::AgentMessageDelta(AgentMessageDeltaNotification {
                    thread_id: "t".into(),
                    turn_id: format!("turn-{}", n / 40),
                    item_id: format!("item-{}", n / 9),
                    delta: format!("d{n}{}", "w".repeat((n % 7) as usize * 30)).into(),
                }),
            };
            let cursor = record(&mut windows, "t", &note);
            sent.push((cursor, note));
            let stats = windows.stats("t").unwrap();
            assert!(
                stats.bytes <= limits.max_bytes && stats.events <= 7,
                "{stats:?}"
            );
            let stream = windows.get("t").unwrap();
            assert!(stream.text.capacity() <= limits.max_bytes);
            assert!(stream.ids.len() <= stream.kept.len() + 1);
            assert_eq!(
                stream.text.len(),
                stream
                    .kept
                    .iter()
                    .map(|kept| kept.stored.text_len())
                    .sum::<usize>()
            );
            // From every cursor still in the window: exactly what followed it, in order.
            let kept = stats.events;
            for from in sent.len().saturating_sub(kept + 1)..sent.len() {
                let attach = windows.attach("t", ConnectionId(1), Some(&sent[from].0));
                assert_eq!(
                    attach.outcome.gap,
                    Some(false),
                    "after {from} of {}",
                    sent.len()
                );
                let replayed: Vec<_> = attach
                    .replay
                    .into_iter()
                    .map(|(cursor, note)| (cursor.to_event_cursor("e"), note))
                    .collect();
                assert_eq!(replayed, sent[from + 1..], "after {from}");
            }
            if sent.len() > kept + 1 {
                let old = &sent[sent.len() - kept - 2].0;
                let attach = windows.attach("t", ConnectionId(1), Some(old));
                assert_eq!(attach.outcome.gap, Some(true));
            }
        }
    }
}
