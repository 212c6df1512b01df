//! The replay window's unit tests: numbering, eviction by count and bytes, the text ring,
//! attach and replay.

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
