//! The client's event router: the subscription registry and the per-event decision of which
//! subscriptions get a copy, which turn handle takes a server request, and what happens when a
//! queue is full. It never waits, except for a lossless subscription, and then only after the
//! registry lock is released.

use std::collections::HashMap;
use std::sync::Arc;

use tandem_host::DeliveryPolicy;
use tandem_protocol::{ServerNotification, ServerRequest};
use tokio::sync::mpsc::{self, error::TrySendError};

use crate::process::ProcessShared;
use crate::server_request::ServerRequestEvent;
use crate::subscription::{EndSlot, Event, Item, SubscriptionError};
use crate::turn::TurnShared;

/// Which events an entry takes; the public [`crate::SubscriptionFilter`] plus the state of a
/// turn handle whose turn id is not known yet.
#[derive(Debug, Clone)]
pub(crate) enum Filter {
    All,
    Thread(String),
    /// `turn: None` until the `turn/start` reply names the turn; meanwhile every event of the
    /// thread is taken (a new turn's first events may precede its reply).
    Turn {
        thread: String,
        turn: Option<String>,
    },
    Process(String),
}

impl Filter {
    fn matches_notification(&self, note: &ServerNotification) -> bool {
        match self {
            Self::All => true,
            Self::Thread(thread) => note.thread_id() == Some(thread),
            Self::Turn { thread, turn } => {
                note.thread_id() == Some(thread)
                    && match (turn, note.turn_id()) {
                        (Some(turn), Some(other)) => turn == other,
                        _ => true,
                    }
            }
            Self::Process(handle) => note.process_handle() == Some(handle),
        }
    }

    /// Whether this filter takes events of `thread` (all of them, or some).
    fn follows_thread(&self, thread: &str) -> bool {
        match self {
            Self::All => true,
            Self::Thread(followed)
            | Self::Turn {
                thread: followed, ..
            } => followed == thread,
            Self::Process(_) => false,
        }
    }

    fn matches_request(&self, request: &ServerRequest) -> bool {
        match self {
            Self::All => true,
            Self::Thread(thread) => request.thread_id() == Some(thread),
            Self::Turn { thread, turn } => {
                request.thread_id() == Some(thread)
                    && turn
                        .as_deref()
                        .is_none_or(|turn| request.turn_id() == Some(turn))
            }
            Self::Process(_) => false,
        }
    }
}

/// One subscription as the router sees it.
pub(crate) struct Entry {
    pub(crate) filter: Filter,
    /// `None` once the subscription ended; the entry stays until the consumer drops it so
    /// that turn and process state keep being recorded.
    pub(crate) tx: Option<mpsc::Sender<Item>>,
    /// Best-effort events skipped since the last `Lagged` this entry received.
    pub(crate) lagged: u64,
    pub(crate) lossless: bool,
    /// Takes the server requests it matches (turn handles).
    pub(crate) claims_requests: bool,
    pub(crate) end: EndSlot,
    pub(crate) turn: Option<Arc<TurnShared>>,
    pub(crate) process: Option<Arc<ProcessShared>>,
}

impl Entry {
    pub(crate) fn new(filter: Filter, tx: mpsc::Sender<Item>, end: EndSlot) -> Self {
        Self {
            filter,
            tx: Some(tx),
            lagged: 0,
            lossless: false,
            claims_requests: false,
            end,
            turn: None,
            process: None,
        }
    }

    fn end_with(&mut self, error: SubscriptionError) {
        // The reason first: dropping the sender wakes the consumer, which reads it at once.
        self.end
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(error);
        self.tx = None;
    }

    /// Puts the owed `Lagged` marker, then `item`, into the queue. `Err` gives the item back
    /// when it did not fit (a marker that does not fit means the item would not either).
    // The item comes back by value so that a full queue costs no allocation on the hot path.
    #[allow(clippy::result_large_err)]
    fn try_deliver(&mut self, item: Item) -> Result<(), DeliverError> {
        let Some(tx) = &self.tx else {
            return Err(DeliverError::Ended(item));
        };
        if self.lagged > 0 {
            match tx.try_send(Item::Event(Event::Lagged {
                skipped: self.lagged,
            })) {
                Ok(()) => self.lagged = 0,
                Err(TrySendError::Full(_)) => return Err(DeliverError::Full(item)),
                Err(TrySendError::Closed(_)) => return Err(DeliverError::Ended(item)),
            }
        }
        match tx.try_send(item) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(item)) => Err(DeliverError::Full(item)),
            Err(TrySendError::Closed(item)) => Err(DeliverError::Ended(item)),
        }
    }
}

enum DeliverError {
    Full(Item),
    Ended(Item),
}

/// A delivery to a lossless subscription that must wait for room, done after the registry
/// lock is released.
pub(crate) type Wait = (mpsc::Sender<Item>, Item);

/// Hands `gap` to a follower: a lossless one that is full gets it when it has room (a wait
/// for the caller to run), a lossy one that is full ends overflowed, since a gap it never
/// saw would be a silent loss.
fn deliver_gap(entry: &mut Entry, gap: Item, waits: &mut Vec<Wait>) {
    match entry.try_deliver(gap) {
        Ok(()) => {}
        Err(DeliverError::Full(item)) if entry.lossless => {
            waits.push((
                entry
                    .tx
                    .clone()
                    .expect("a follower that took a gap has a queue"),
                item,
            ));
        }
        Err(DeliverError::Full(_)) => {
            let lost = entry.lagged + 1;
            entry.end_with(SubscriptionError::Overflowed {
                lost,
                method: "gap".into(),
            });
        }
        Err(DeliverError::Ended(_)) => entry.tx = None,
    }
}

/// Every live subscription, by id.
#[derive(Default)]
pub(crate) struct Registry {
    next_id: u64,
    entries: HashMap<u64, Entry>,
}

impl Registry {
    pub(crate) fn insert(&mut self, entry: Entry) -> u64 {
        self.next_id += 1;
        self.entries.insert(self.next_id, entry);
        self.next_id
    }

    pub(crate) fn remove(&mut self, id: u64) {
        self.entries.remove(&id);
    }

    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut Entry> {
        self.entries.get_mut(&id)
    }

    /// Offers `note` to every matching subscription under `policy`; returns the deliveries
    /// that must wait (lossless subscriptions with a full queue).
    pub(crate) fn route_notification(
        &mut self,
        note: ServerNotification,
        policy: &DeliveryPolicy,
    ) -> Vec<Wait> {
        let guaranteed = policy.is_guaranteed(note.method());
        let mut waits = Vec::new();
        let matching: Vec<u64> = self
            .entries
            .iter_mut()
            .filter_map(|(id, entry)| {
                if !entry.filter.matches_notification(&note) {
                    return None;
                }
                // State is recorded whether or not the queue can take the event, so a turn's
                // text and completion and a process's exit survive a full or ended queue.
                if let Some(turn) = &entry.turn {
                    turn.record(&note);
                }
                if let Some(process) = &entry.process {
                    process.record(&note);
                }
                entry.tx.is_some().then_some(*id)
            })
            .collect();
        let mut note = Some(note);
        let count = matching.len();
        for (index, id) in matching.into_iter().enumerate() {
            let event = if index + 1 == count {
                note.take().expect("moved only into the last delivery")
            } else {
                note.clone().expect("present until the last delivery")
            };
            let entry = self.entries.get_mut(&id).expect("collected above");
            let method = event.method().to_owned();
            match entry.try_deliver(Item::Event(Event::Notification(event))) {
                Ok(()) => {}
                Err(DeliverError::Full(item)) if entry.lossless => {
                    let tx = entry.tx.clone().expect("checked above");
                    waits.push((tx, item));
                }
                Err(DeliverError::Full(_)) if guaranteed => {
                    let lost = entry.lagged + 1;
                    tracing::warn!(%method, lost, "subscription overflowed on a guaranteed event; ending it");
                    entry.end_with(SubscriptionError::Overflowed { lost, method });
                }
                Err(DeliverError::Full(_)) => entry.lagged += 1,
                // The consumer dropped its receiver; the entry goes when it is dropped.
                Err(DeliverError::Ended(_)) => entry.tx = None,
            }
        }
        waits
    }

    /// Offers `request` to the turn handle that takes it; copies go, for information, to the
    /// other matching subscriptions. Returns the deliveries that must wait and, if no turn
    /// handle could take it, the event for the client's handler.
    pub(crate) fn route_request(
        &mut self,
        request: &ServerRequest,
        event: ServerRequestEvent,
    ) -> (Vec<Wait>, Option<ServerRequestEvent>) {
        let mut waits = Vec::new();
        let mut unclaimed = Some(event);
        for entry in self.entries.values_mut() {
            if entry.tx.is_none() || !entry.filter.matches_request(request) {
                continue;
            }
            if entry.claims_requests {
                let Some(event) = unclaimed.take() else {
                    continue;
                };
                match entry.try_deliver(Item::Request(event)) {
                    Ok(()) => {}
                    Err(DeliverError::Full(Item::Request(event)))
                    | Err(DeliverError::Ended(Item::Request(event))) => unclaimed = Some(event),
                    Err(_) => unreachable!("the item given back is the one offered"),
                }
                continue;
            }
            let info = Item::Event(Event::ServerRequest(request.clone()));
            match entry.try_deliver(info) {
                Ok(()) => {}
                Err(DeliverError::Full(item)) if entry.lossless => {
                    waits.push((entry.tx.clone().expect("checked above"), item));
                }
                Err(DeliverError::Full(_)) => entry.lagged += 1,
                Err(DeliverError::Ended(_)) => entry.tx = None,
            }
        }
        (waits, unclaimed)
    }

    /// The host skipped `skipped` best-effort events: every subscription may have missed some.
    pub(crate) fn route_lagged(&mut self, skipped: u64) -> Vec<Wait> {
        let mut waits = Vec::new();
        for entry in self.entries.values_mut() {
            let Some(tx) = &entry.tx else { continue };
            let total = entry.lagged + skipped;
            match tx.try_send(Item::Event(Event::Lagged { skipped: total })) {
                Ok(()) => entry.lagged = 0,
                Err(TrySendError::Full(item)) if entry.lossless => {
                    entry.lagged = 0;
                    waits.push((tx.clone(), item));
                }
                Err(TrySendError::Full(_)) => entry.lagged = total,
                Err(TrySendError::Closed(_)) => entry.tx = None,
            }
        }
        waits
    }

    /// The client reconnected and the server could not replay what `thread` sent meanwhile:
    /// every follower of the thread gets [`Event::Gap`] with the snapshot `turns`, and turn
    /// handles record their turn's final state from it. Delivered as a guaranteed event.
    pub(crate) fn gap(
        &mut self,
        thread: &str,
        turns: Vec<tandem_protocol::Turn>,
        _policy: &DeliveryPolicy,
    ) -> Vec<Wait> {
        let mut waits = Vec::new();
        for entry in self.entries.values_mut() {
            if !entry.filter.follows_thread(thread) {
                continue;
            }
            if let Some(turn) = &entry.turn {
                turn.resync(&turns);
            }
            if entry.tx.is_none() {
                continue;
            }
            let gap = Item::Event(Event::Gap {
                thread_id: thread.to_owned(),
                turns: turns.clone(),
            });
            deliver_gap(entry, gap, &mut waits);
        }
        waits
    }

    /// `thread` could not be resumed after a reconnect: its followers end with `reason`.
    pub(crate) fn thread_lost(&mut self, thread: &str, reason: &str) -> Vec<Wait> {
        for entry in self.entries.values_mut() {
            if !entry.filter.follows_thread(thread) || matches!(entry.filter, Filter::All) {
                continue;
            }
            entry.end_with(SubscriptionError::Disconnected {
                reason: reason.to_owned(),
            });
            if let Some(turn) = &entry.turn {
                turn.disconnect(reason);
            }
        }
        Vec::new()
    }

    /// The connection was lost and the client is reconnecting: handles of processes the
    /// server cannot resume (`resumable` lacks them: a server whose processes die with their
    /// connection) end; everything else waits for the resume.
    pub(crate) fn processes_lost(
        &mut self,
        reason: &str,
        resumable: &std::collections::HashSet<String>,
    ) {
        let reason = format!(
            "{reason}; the server ends a connection's processes when the connection closes, \
             so this process was killed"
        );
        for entry in self.entries.values_mut() {
            if let Filter::Process(handle) = &entry.filter
                && resumable.contains(handle)
            {
                continue;
            }
            if let Some(process) = entry.process.clone() {
                entry.end_with(SubscriptionError::Disconnected {
                    reason: reason.clone(),
                });
                process.disconnect(&reason);
            }
        }
    }

    /// procre: `handle` could not be resumed after a reconnect: its handle ends with `reason`.
    pub(crate) fn process_lost(&mut self, handle: &str, reason: &str) {
        for entry in self.entries.values_mut() {
            if !matches!(&entry.filter, Filter::Process(h) if h == handle) {
                continue;
            }
            entry.end_with(SubscriptionError::Disconnected {
                reason: reason.to_owned(),
            });
            if let Some(process) = &entry.process {
                process.disconnect(reason);
            }
        }
    }

    /// procre: the server could not replay what `handle` wrote while the client was away: its
    /// handle gets [`Event::ProcessGap`], delivered as a guaranteed event.
    pub(crate) fn process_gap(&mut self, handle: &str) -> Vec<Wait> {
        let mut waits = Vec::new();
        for entry in self.entries.values_mut() {
            let follows = match &entry.filter {
                Filter::Process(h) => h == handle,
                Filter::All => true,
                _ => false,
            };
            if !follows || entry.tx.is_none() {
                continue;
            }
            let gap = Item::Event(Event::ProcessGap {
                process_handle: handle.to_owned(),
            });
            deliver_gap(entry, gap, &mut waits);
        }
        waits
    }

    /// The connection ended: every subscription ends, turn and process waiters wake up.
    pub(crate) fn disconnect(&mut self, reason: &str) {
        for entry in self.entries.values_mut() {
            entry.end_with(SubscriptionError::Disconnected {
                reason: reason.to_owned(),
            });
            if let Some(turn) = &entry.turn {
                turn.disconnect(reason);
            }
            if let Some(process) = &entry.process {
                process.disconnect(reason);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tandem_protocol::{ThreadItem, Turn, TurnItemsView, TurnStatus};

    use super::*;

    fn turn(id: &str, status: TurnStatus) -> Turn {
        Turn {
            id: id.into(),
            items: vec![ThreadItem::AgentMessage {
                id: "m".into(),
                text: "from the snapshot".into(),
            }],
            items_view: TurnItemsView::Full,
            status,
            error: None,
            started_at: None,
            completed_at: None,
            duration_ms: None,
        }
    }

    fn entry(filter: Filter) -> (Entry, mpsc::Receiver<Item>, EndSlot) {
        let (tx, rx) = mpsc::channel(4);
        let end = Arc::new(Mutex::new(None));
        (Entry::new(filter, tx, end.clone()), rx, end)
    }

    #[test]
    fn a_gap_reaches_the_threads_followers_and_records_an_ended_turn() {
        let mut registry = Registry::default();
        let shared = Arc::new(TurnShared::new());
        shared.set_turn_id("u");
        let (mut handle, mut handle_rx, _) = entry(Filter::Turn {
            thread: "t".into(),
            turn: Some("u".into()),
        });
        handle.turn = Some(shared.clone());
        registry.insert(handle);
        let (other, mut other_rx, _) = entry(Filter::Thread("elsewhere".into()));
        registry.insert(other);

        let waits = registry.gap(
            "t",
            vec![turn("u", TurnStatus::Interrupted)],
            &DeliveryPolicy::default(),
        );
        assert!(waits.is_empty());
        match handle_rx.try_recv() {
            Ok(Item::Event(Event::Gap { thread_id, turns })) => {
                assert_eq!((thread_id.as_str(), turns.len()), ("t", 1));
            }
            other => panic!("a gap, not {other:?}"),
        }
        assert!(
            other_rx.try_recv().is_err(),
            "another thread's follower sees nothing"
        );
        let completed = shared
            .completed_for_tests()
            .expect("recorded from the snapshot");
        assert_eq!(completed.status, TurnStatus::Interrupted);
    }

    #[test]
    fn a_lost_connection_ends_process_handles_only() {
        let mut registry = Registry::default();
        let (mut process, mut process_rx, process_end) = entry(Filter::Process("p".into()));
        process.process = Some(Arc::new(ProcessShared::default()));
        registry.insert(process);
        let (thread, mut thread_rx, thread_end) = entry(Filter::Thread("t".into()));
        registry.insert(thread);

        registry.processes_lost("the websocket failed", &Default::default());
        assert!(process_rx.try_recv().is_err());
        assert!(matches!(
            process_end.lock().unwrap().as_ref(),
            Some(SubscriptionError::Disconnected { reason }) if reason.contains("killed")
        ));
        assert!(
            thread_end.lock().unwrap().is_none(),
            "the thread's follower waits for the resume"
        );
        assert!(matches!(
            thread_rx.try_recv(),
            Err(mpsc::error::TryRecvError::Empty)
        ));
    }
}
