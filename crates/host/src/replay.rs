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

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use foldhash::HashMap;
use tandem_protocol::{EventCursor, ServerNotification};

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

/// A cursor as the host carries it: the epoch shared, so stamping an event costs no
/// allocation; it becomes an [`EventCursor`] only where a consumer reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamCursor {
    pub(crate) epoch: Arc<str>,
    pub(crate) seq: u64,
}

impl StreamCursor {
    pub(crate) fn to_event_cursor(&self) -> EventCursor {
        EventCursor {
            epoch: self.epoch.to_string(),
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

/// One event kept for replay.
struct Kept {
    seq: u64,
    notification: ServerNotification,
    bytes: usize,
}

struct Stream {
    /// Every event of this stream numbered above `floor` is in `kept`.
    floor: u64,
    last_seq: u64,
    kept: VecDeque<Kept>,
    bytes: usize,
    evicted: u64,
    /// Connections that receive the stream live.
    attached: BTreeSet<ConnectionId>,
}

/// Every stream of one host.
pub(crate) struct ReplayWindows {
    epoch: Arc<str>,
    limits: ReplayWindowLimits,
    streams: HashMap<Arc<str>, Stream>,
    /// The highest number ever assigned or reserved: a stream opened again starts above it, so
    /// a cursor from its previous life is never mistaken for one of the new.
    high_water: u64,
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
            streams: HashMap::default(),
            high_water: 0,
        }
    }

    fn cursor(&self, seq: u64) -> StreamCursor {
        StreamCursor {
            epoch: Arc::clone(&self.epoch),
            seq,
        }
    }

    fn stream(&mut self, name: Arc<str>) -> &mut Stream {
        let high_water = &mut self.high_water;
        self.streams.entry(name).or_insert_with(|| {
            // One number is skipped: `floor` is a number no event ever had, so no cursor
            // handed out before can equal it.
            *high_water += 1;
            Stream {
                floor: *high_water,
                last_seq: *high_water,
                kept: VecDeque::new(),
                bytes: 0,
                evicted: 0,
                attached: BTreeSet::new(),
            }
        })
    }

    /// Numbers `notification` as the next event of `stream`, keeps a copy for replay, and
    /// returns its cursor; the connections attached to the stream are appended to
    /// `recipients`.
    pub(crate) fn record(
        &mut self,
        stream: &Arc<str>,
        notification: &ServerNotification,
        recipients: &mut Vec<ConnectionId>,
    ) -> StreamCursor {
        let limits = self.limits;
        let bytes = notification_size(notification);
        let entry = self.stream(Arc::clone(stream));
        entry.last_seq += 1;
        let seq = entry.last_seq;
        if bytes > limits.max_bytes {
            // Larger than the whole window: keeping it would break the bound, and it would
            // push out everything before it anyway. Not copied at all; a cursor from before
            // it is a gap, one from it on is not.
            entry.evicted += entry.kept.len() as u64 + 1;
            entry.kept.clear();
            entry.bytes = 0;
            entry.floor = seq;
            recipients.extend(entry.attached.iter().copied());
            self.high_water = self.high_water.max(seq);
            return self.cursor(seq);
        }
        entry.kept.push_back(Kept {
            seq,
            notification: notification.clone(),
            bytes,
        });
        entry.bytes += bytes;
        while entry.kept.len() > limits.max_events.max(1) || entry.bytes > limits.max_bytes {
            let oldest = entry.kept.pop_front().expect("more than one kept");
            entry.bytes -= oldest.bytes;
            entry.floor = oldest.seq;
            entry.evicted += 1;
        }
        recipients.extend(entry.attached.iter().copied());
        self.high_water = self.high_water.max(seq);
        self.cursor(seq)
    }

    /// Attaches `connection` to `stream` live; with `after`, also decides what to replay.
    pub(crate) fn attach(
        &mut self,
        stream: &str,
        connection: ConnectionId,
        after: Option<&EventCursor>,
    ) -> Attach {
        let epoch = Arc::clone(&self.epoch);
        let entry = self.stream(Arc::from(stream));
        entry.attached.insert(connection);
        let (last_seq, floor) = (entry.last_seq, entry.floor);
        let mut replay = Vec::new();
        let gap = after.map(|after| {
            // Within the window: from this instance, not older than the oldest event kept,
            // and not newer than the stream (a cursor from a future would hide a gap).
            let replayable = *after.epoch == *epoch && after.seq >= floor && after.seq <= last_seq;
            if replayable {
                replay = entry
                    .kept
                    .iter()
                    .filter(|kept| kept.seq > after.seq)
                    .map(|kept| (kept.seq, kept.notification.clone()))
                    .collect();
            }
            !replayable
        });
        let replay: Vec<_> = replay
            .into_iter()
            .map(|(seq, notification)| (self.cursor(seq), notification))
            .collect();
        Attach {
            outcome: StreamAttachment {
                cursor: self.cursor(last_seq).to_event_cursor(),
                gap,
                replayed: replay.len() as u64,
            },
            replay,
        }
    }

    /// `connection` stops receiving `stream` live.
    pub(crate) fn detach(&mut self, stream: &str, connection: ConnectionId) {
        if let Some(entry) = self.streams.get_mut(stream) {
            entry.attached.remove(&connection);
        }
    }

    /// `connection` stops receiving every stream (it closed, or its consumer is replaced).
    pub(crate) fn detach_everywhere(&mut self, connection: ConnectionId) {
        for entry in self.streams.values_mut() {
            entry.attached.remove(&connection);
        }
    }

    /// Forgets `stream` and its window (the processor unloaded what it was about).
    pub(crate) fn close(&mut self, stream: &str) {
        self.streams.remove(stream);
    }

    pub(crate) fn stats(&self, stream: &str) -> Option<ReplayWindowStats> {
        self.streams.get(stream).map(|entry| ReplayWindowStats {
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
    use tandem_protocol::{AgentMessageDeltaNotification, ServerNotification};

    fn delta(text: &str) -> ServerNotification {
        ServerNotification::AgentMessageDelta(AgentMessageDeltaNotification {
            thread_id: "t".into(),
            turn_id: "u".into(),
            item_id: "i".into(),
            delta: text.into(),
        })
    }

    fn record(windows: &mut ReplayWindows, stream: &str, note: &ServerNotification) -> EventCursor {
        windows
            .record(&Arc::from(stream), note, &mut Vec::new())
            .to_event_cursor()
    }

    fn texts(replay: &[(StreamCursor, ServerNotification)]) -> Vec<String> {
        replay
            .iter()
            .map(|(_, note)| match note {
                ServerNotification::AgentMessageDelta(delta) => delta.delta.clone(),
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
        let mut recipients = Vec::new();
        windows.record(&Arc::from("t"), &delta("e"), &mut recipients);
        assert_eq!(recipients, vec![ConnectionId(7)]);
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
}
