//! Gap and duplicate detection on a thread's event stream (docs/protocol.md, "Cursors and
//! replay"): every event a subscriber gets carries `{epoch, seq}`, `seq` one more than the
//! previous event's, and a `thread/resume` from a cursor replays exactly the events after it
//! (or says `gap: true`). Pure, so the rules the soak judges the server by are tested.

use std::collections::VecDeque;

/// A thread event's cursor, as the wire carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor {
    /// Random per server instance.
    pub(crate) epoch: String,
    /// One more per event of the thread.
    pub(crate) seq: u64,
}

impl Cursor {
    /// The cursor of a JSON `{epoch, seq}`.
    pub(crate) fn from_json(value: &serde_json::Value) -> Option<Self> {
        Some(Self {
            epoch: value.get("epoch")?.as_str()?.to_owned(),
            seq: value.get("seq")?.as_u64()?,
        })
    }
}

/// What is wrong with a stream or a resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Anomaly {
    /// Events after `after` and before `got` never arrived.
    Gap {
        /// The last seq delivered.
        after: u64,
        /// The seq that arrived next.
        got: u64,
    },
    /// An event at or below one already delivered arrived again.
    Duplicate {
        /// The last seq delivered.
        last: u64,
        /// The seq that arrived.
        got: u64,
    },
    /// An event of another server instance arrived on the same connection.
    Epoch {
        /// The connection's epoch.
        expected: String,
        /// The event's.
        got: String,
    },
    /// The resume answered `gap: true` though every missed event was still in the window and
    /// the server had not restarted.
    UnexpectedGap {
        /// The cursor resumed from.
        from: u64,
        /// Events of the thread after it (seen by a connection that stayed).
        missed: u64,
    },
    /// The resume replayed across a restart instead of reporting the gap.
    MissingGap,
    /// The resume's `replayed` count is not the number of events it sent first.
    ReplayCount {
        /// What the answer said.
        said: u64,
        /// How many arrived before it.
        sent: u64,
    },
    /// The resume's `cursor` is not where its replay ended.
    ResumeCursor {
        /// Where the replay ended (the resumed-from cursor when nothing was replayed).
        expected: u64,
        /// What the answer said.
        got: u64,
    },
    /// A replayed event differs from the same event (same seq) as it was first sent.
    Altered {
        /// The event's seq.
        seq: u64,
    },
}

/// One thread's stream as one connection sees it.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    last: Cursor,
}

impl Stream {
    /// A stream that stands at `cursor` (the subscribing answer's): the next event is
    /// `cursor.seq + 1`.
    pub(crate) fn at(cursor: Cursor) -> Self {
        Self { last: cursor }
    }

    /// The newest cursor delivered (or the starting one).
    pub(crate) fn last(&self) -> &Cursor {
        &self.last
    }

    /// Takes the next live event's cursor; an anomaly if it is not the next one.
    pub(crate) fn observe(&mut self, cursor: &Cursor) -> Result<(), Anomaly> {
        if cursor.epoch != self.last.epoch {
            return Err(Anomaly::Epoch {
                expected: self.last.epoch.clone(),
                got: cursor.epoch.clone(),
            });
        }
        let expected = self.last.seq + 1;
        let outcome = match cursor.seq {
            seq if seq == expected => Ok(()),
            seq if seq < expected => Err(Anomaly::Duplicate {
                last: self.last.seq,
                got: seq,
            }),
            seq => Err(Anomaly::Gap {
                after: self.last.seq,
                got: seq,
            }),
        };
        // After an anomaly the stream goes on from what arrived, so one fault is reported
        // once rather than on every later event.
        if cursor.seq > self.last.seq {
            self.last.seq = cursor.seq;
        }
        outcome
    }
}

/// The `thread/resume` answer's replay members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResumeAnswer {
    /// `gap`.
    pub(crate) gap: bool,
    /// `replayed` (0 when absent).
    pub(crate) replayed: u64,
    /// `cursor`.
    pub(crate) cursor: Cursor,
}

/// What a resume is judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResumeContext {
    /// The server restarted since the cursor was handed out: a gap is the only right answer.
    pub(crate) restarted: bool,
    /// Events of the thread after the cursor, as a connection that stayed counted them;
    /// `None` when no such connection saw them all.
    pub(crate) missed: Option<u64>,
    /// Whether those events were more than the server's replay window holds.
    pub(crate) beyond_window: bool,
}

/// Judges a resume from `from`: the cursors of the thread's events sent before the answer, in
/// order, and the answer. Those at or below the answer's `cursor` are the replay; those after
/// it are live events the server sent before its answer, which the protocol allows (it orders
/// the replay before the answer and before any live event, not the answer before live
/// events). Returns every anomaly found, and the stream to continue with.
pub(crate) fn check_resume(
    from: &Cursor,
    before: &[Cursor],
    answer: &ResumeAnswer,
    context: ResumeContext,
) -> (Vec<Anomaly>, Stream) {
    let mut anomalies = Vec::new();
    let replay = before
        .iter()
        .filter(|c| c.epoch == answer.cursor.epoch && c.seq <= answer.cursor.seq)
        .count() as u64;
    if answer.gap {
        let excused = context.restarted || context.beyond_window || context.missed.is_none();
        if !excused {
            anomalies.push(Anomaly::UnexpectedGap {
                from: from.seq,
                missed: context.missed.unwrap_or(0),
            });
        }
        if replay > 0 {
            anomalies.push(Anomaly::ReplayCount {
                said: 0,
                sent: replay,
            });
        }
        // Nothing replayed: the stream starts at the answer's cursor; live events may follow.
        let mut stream = Stream::at(answer.cursor.clone());
        for cursor in before.iter().filter(|c| c.seq > answer.cursor.seq) {
            if let Err(anomaly) = stream.observe(cursor) {
                anomalies.push(anomaly);
            }
        }
        return (anomalies, stream);
    }
    if context.restarted || answer.cursor.epoch != from.epoch {
        anomalies.push(Anomaly::MissingGap);
    }
    let mut stream = Stream::at(from.clone());
    let mut replay_end = from.seq;
    for cursor in before {
        if let Err(anomaly) = stream.observe(cursor) {
            anomalies.push(anomaly);
        }
        if cursor.seq <= answer.cursor.seq {
            replay_end = replay_end.max(cursor.seq);
        }
    }
    if answer.replayed != replay {
        anomalies.push(Anomaly::ReplayCount {
            said: answer.replayed,
            sent: replay,
        });
    }
    if answer.cursor.seq != replay_end {
        anomalies.push(Anomaly::ResumeCursor {
            expected: replay_end,
            got: answer.cursor.seq,
        });
    }
    if stream.last().seq < answer.cursor.seq {
        // Reported above; go on from where the server says the stream stands.
        stream = Stream::at(answer.cursor.clone());
    }
    (anomalies, stream)
}

/// The recent events of a thread as a connection that stays subscribed saw them: what a
/// resume must replay is compared with it, and it tells how much a resume missed.
#[derive(Debug)]
pub(crate) struct EventLog {
    epoch: Option<String>,
    /// `(seq, encoded size, the event's method and params)`, oldest first.
    events: VecDeque<(u64, usize, String)>,
    capacity: usize,
}

impl EventLog {
    /// Keeps at most `capacity` events.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            epoch: None,
            events: VecDeque::new(),
            capacity,
        }
    }

    /// Records an event: `body` is its method and params as the log compares them.
    pub(crate) fn record(&mut self, cursor: &Cursor, size: usize, body: String) {
        if self.epoch.as_deref() != Some(cursor.epoch.as_str()) {
            self.epoch = Some(cursor.epoch.clone());
            self.events.clear();
        }
        self.events.push_back((cursor.seq, size, body));
        while self.events.len() > self.capacity {
            self.events.pop_front();
        }
    }

    /// How many events, and how many bytes, came after `from`; `None` if the log cannot say
    /// (another epoch, or it no longer reaches back to `from`).
    pub(crate) fn after(&self, from: &Cursor) -> Option<(u64, usize)> {
        if self.epoch.as_deref() != Some(from.epoch.as_str()) {
            return None;
        }
        let first = self.events.front().map_or(u64::MAX, |(seq, ..)| *seq);
        if first > from.seq + 1 && !self.events.is_empty() {
            return None;
        }
        let later = self.events.iter().filter(|(seq, ..)| *seq > from.seq);
        Some(later.fold((0, 0), |(count, bytes), (_, size, _)| {
            (count + 1, bytes + size)
        }))
    }

    /// Whether the event `seq` is known and its body differs from `body`.
    pub(crate) fn differs(&self, cursor: &Cursor, body: &str) -> bool {
        self.epoch.as_deref() == Some(cursor.epoch.as_str())
            && self
                .events
                .iter()
                .any(|(seq, _, known)| *seq == cursor.seq && known != body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seq: u64) -> Cursor {
        Cursor {
            epoch: "e1".into(),
            seq,
        }
    }

    fn answer(gap: bool, replayed: u64, seq: u64) -> ResumeAnswer {
        ResumeAnswer {
            gap,
            replayed,
            cursor: at(seq),
        }
    }

    /// Resumes from `from` with the events `before` sent before an answer of `gap`,
    /// `replayed` and `cursor` (seq numbers, one epoch); the anomalies and where the stream
    /// goes on.
    fn resume(
        from: u64,
        before: &[u64],
        (gap, replayed, cursor): (bool, u64, u64),
        context: ResumeContext,
    ) -> (Vec<Anomaly>, u64) {
        let before: Vec<Cursor> = before.iter().map(|seq| at(*seq)).collect();
        let (anomalies, stream) =
            check_resume(&at(from), &before, &answer(gap, replayed, cursor), context);
        (anomalies, stream.last().seq)
    }

    const RESTARTED: ResumeContext = ResumeContext {
        restarted: true,
        missed: None,
        beyond_window: false,
    };

    const WITHIN: ResumeContext = ResumeContext {
        restarted: false,
        missed: Some(3),
        beyond_window: false,
    };

    #[test]
    fn a_contiguous_stream_has_no_anomaly() {
        let mut stream = Stream::at(at(4));
        for seq in 5..50 {
            assert_eq!(stream.observe(&at(seq)), Ok(()));
        }
        assert_eq!(stream.last().seq, 49);
    }

    #[test]
    fn a_skipped_event_is_a_gap_and_a_repeated_one_a_duplicate() {
        let mut stream = Stream::at(at(4));
        assert_eq!(stream.observe(&at(5)), Ok(()));
        assert_eq!(
            stream.observe(&at(7)),
            Err(Anomaly::Gap { after: 5, got: 7 })
        );
        // Reported once: the stream goes on from 7.
        assert_eq!(stream.observe(&at(8)), Ok(()));
        assert_eq!(
            stream.observe(&at(8)),
            Err(Anomaly::Duplicate { last: 8, got: 8 })
        );
        assert_eq!(
            stream.observe(&at(3)),
            Err(Anomaly::Duplicate { last: 8, got: 3 })
        );
        assert_eq!(stream.observe(&at(9)), Ok(()));
        let other = Cursor {
            epoch: "e2".into(),
            seq: 10,
        };
        assert!(matches!(stream.observe(&other), Err(Anomaly::Epoch { .. })));
    }

    #[test]
    fn an_exact_replay_passes() {
        assert_eq!(
            resume(10, &[11, 12, 13], (false, 3, 13), WITHIN),
            (vec![], 13)
        );
        // Nothing missed: nothing replayed, the answer's cursor is the one resumed from.
        assert_eq!(resume(10, &[], (false, 0, 10), WITHIN), (vec![], 10));
    }

    #[test]
    fn a_replay_with_a_hole_or_a_repeat_is_caught() {
        let (anomalies, _) = resume(10, &[11, 13], (false, 2, 13), WITHIN);
        assert_eq!(anomalies, [Anomaly::Gap { after: 11, got: 13 }]);
        // The cursor resumed from is sent again: a duplicate.
        let (anomalies, _) = resume(10, &[10, 11], (false, 2, 11), WITHIN);
        assert_eq!(anomalies, [Anomaly::Duplicate { last: 10, got: 10 }]);
    }

    #[test]
    fn live_events_before_the_answer_are_not_replay() {
        // 11 and 12 replayed, the answer names 12, 13 went out live before the answer.
        assert_eq!(
            resume(10, &[11, 12, 13], (false, 2, 12), WITHIN),
            (vec![], 13)
        );
        // The same events with the answer claiming three replayed: caught.
        let (anomalies, _) = resume(10, &[11, 12, 13], (false, 3, 12), WITHIN);
        assert_eq!(anomalies, [Anomaly::ReplayCount { said: 3, sent: 2 }]);
        // After a gap, live events continue from the answer's cursor.
        assert_eq!(
            resume(10, &[41, 42], (true, 0, 40), RESTARTED),
            (vec![], 42)
        );
        let (anomalies, _) = resume(10, &[40, 41], (true, 0, 40), RESTARTED);
        assert_eq!(anomalies, [Anomaly::ReplayCount { said: 0, sent: 1 }]);
    }

    #[test]
    fn a_replay_that_misstates_its_count_or_cursor_is_caught() {
        let (anomalies, _) = resume(10, &[11], (false, 2, 11), WITHIN);
        assert_eq!(anomalies, [Anomaly::ReplayCount { said: 2, sent: 1 }]);
        // The answer claims a later position than the replay reached: the event between was
        // neither replayed nor will it be sent live.
        let (anomalies, _) = resume(10, &[11], (false, 1, 12), WITHIN);
        let expected = Anomaly::ResumeCursor {
            expected: 11,
            got: 12,
        };
        assert_eq!(anomalies, [expected]);
    }

    #[test]
    fn a_gap_is_wrong_within_the_window_and_right_after_a_restart() {
        let unexpected = Anomaly::UnexpectedGap {
            from: 10,
            missed: 3,
        };
        assert_eq!(
            resume(10, &[], (true, 0, 40), WITHIN),
            (vec![unexpected], 40)
        );
        let new_epoch = ResumeAnswer {
            gap: true,
            replayed: 0,
            cursor: Cursor {
                epoch: "e2".into(),
                seq: 1,
            },
        };
        let (anomalies, _) = check_resume(&at(10), &[], &new_epoch, RESTARTED);
        assert_eq!(anomalies, []);
        let beyond = ResumeContext {
            beyond_window: true,
            ..WITHIN
        };
        assert_eq!(resume(10, &[], (true, 0, 9000), beyond).0, []);
        // A restart answered with a replay instead of a gap.
        let (anomalies, _) = resume(10, &[], (false, 0, 10), RESTARTED);
        assert_eq!(anomalies, [Anomaly::MissingGap]);
    }

    #[test]
    fn the_log_counts_what_a_resume_missed_and_spots_altered_events() {
        let mut log = EventLog::new(4);
        for seq in 1..=6 {
            log.record(&at(seq), 100, format!("event {seq}"));
        }
        // Events 3 to 6 are kept.
        assert_eq!(log.after(&at(4)), Some((2, 200)));
        assert_eq!(log.after(&at(2)), Some((4, 400)));
        assert_eq!(log.after(&at(1)), None, "the log no longer reaches back");
        assert_eq!(log.after(&at(6)), Some((0, 0)));
        assert!(!log.differs(&at(5), "event 5"));
        assert!(log.differs(&at(5), "event 5, changed"));
        assert!(!log.differs(&at(1), "forgotten"));
        // A new epoch starts afresh.
        let other = Cursor {
            epoch: "e2".into(),
            seq: 1,
        };
        log.record(&other, 10, "new".into());
        assert_eq!(log.after(&at(4)), None);
    }
}
