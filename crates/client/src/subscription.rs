//! Subscriptions: how events reach an embedder. Each [`Subscription`] has a filter, its own
//! bounded queue and an explicit overflow policy, so one slow consumer costs only itself:
//! the client's worker never waits for it (unless it asked to be [`lossless`]), and replies
//! never wait for any of them.
//!
//! [`lossless`]: SubscriptionOptions::lossless

use std::sync::{Arc, Mutex, Weak};

use tandem_protocol::{ServerNotification, ServerRequest};
use tokio::sync::mpsc;

use crate::server_request::ServerRequestEvent;

/// Which events a subscription receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriptionFilter {
    /// Every notification and server request, and every `Lagged` marker.
    All,
    /// The notifications and server requests of one thread (turn events included).
    Thread(String),
    /// The notifications and server requests of one turn, plus the thread-level
    /// notifications of its thread (status changes).
    Turn {
        /// The turn's thread.
        thread_id: String,
        /// The turn.
        turn_id: String,
    },
    /// `process/outputDelta` and `process/exited` of one process handle.
    Process(String),
}

impl SubscriptionFilter {
    /// [`SubscriptionFilter::Thread`].
    pub fn thread(thread_id: impl Into<String>) -> Self {
        Self::Thread(thread_id.into())
    }

    /// [`SubscriptionFilter::Turn`].
    pub fn turn(thread_id: impl Into<String>, turn_id: impl Into<String>) -> Self {
        Self::Turn {
            thread_id: thread_id.into(),
            turn_id: turn_id.into(),
        }
    }

    /// [`SubscriptionFilter::Process`].
    pub fn process(process_handle: impl Into<String>) -> Self {
        Self::Process(process_handle.into())
    }
}

/// What a subscription does when its queue is full.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Overflow {
    /// The default. A best-effort event that does not fit is skipped and counted, and the
    /// subscription receives [`Event::Lagged`] before its next event. A guaranteed event that
    /// does not fit ends the subscription with [`SubscriptionError::Overflowed`], which says how
    /// many events it lost; nothing is skipped silently. Other subscriptions and replies are
    /// not affected.
    #[default]
    Skip,
    /// Nothing is ever skipped: the client's worker waits for room. While it waits it delivers
    /// nothing else: other subscriptions, server requests and (because the server's events
    /// back up behind it) replies wait too. Use it only for a consumer that always keeps
    /// reading.
    Lossless,
}

/// How to subscribe: a filter, a queue capacity and an overflow policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionOptions {
    pub(crate) filter: SubscriptionFilter,
    pub(crate) capacity: Option<usize>,
    pub(crate) overflow: Overflow,
}

impl SubscriptionOptions {
    /// A subscription to `filter` with the client's channel capacity and [`Overflow::Skip`].
    pub fn new(filter: SubscriptionFilter) -> Self {
        Self {
            filter,
            capacity: None,
            overflow: Overflow::Skip,
        }
    }

    /// The queue holds at most `capacity` events (0 counts as 1). Default: the client's
    /// channel capacity.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = Some(capacity.max(1));
        self
    }

    /// Never skip anything; see [`Overflow::Lossless`] for the price.
    pub fn lossless(mut self) -> Self {
        self.overflow = Overflow::Lossless;
        self
    }

    /// Sets the overflow policy.
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }
}

/// One event of a subscription.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A server notification.
    Notification(ServerNotification),
    /// A server request, for information: it is answered by the turn handle that took it or
    /// by the client's [`crate::ServerRequestHandler`], not through a subscription.
    ServerRequest(ServerRequest),
    /// `skipped` best-effort events were dropped before this point, by this subscription's
    /// queue or by the in-process host's event queue.
    Lagged {
        /// How many were dropped.
        skipped: u64,
    },
    /// The client reconnected and the server could not replay what this thread sent while
    /// it was away (the events were older than its replay window, or the server restarted):
    /// some events before this point are missing. `turns` is the thread as the server stores
    /// it now, every turn with its items, to rebuild from; events after this point are live.
    Gap {
        /// The thread.
        thread_id: String,
        /// The snapshot: every turn of the thread, the running one as it stands.
        turns: Vec<tandem_protocol::Turn>,
    },
    /// The client reconnected and the server could not replay all the output this process
    /// wrote while it was away (older than the server's replay window): some output before
    /// this point is missing; what follows is live.
    ProcessGap {
        /// The process handle.
        process_handle: String,
    },
}

/// Why a subscription ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    /// A guaranteed event did not fit in the queue. Everything before it was delivered;
    /// `lost` events (that one, and the best-effort ones skipped just before it) were not.
    #[error(
        "the subscription fell behind and lost {lost} event(s), the first guaranteed one being \
         `{method}`; read it faster, give it more capacity, or make it lossless"
    )]
    Overflowed {
        /// How many events were lost.
        lost: u64,
        /// The method of the guaranteed event that did not fit.
        method: String,
    },
    /// The connection to the server ended; nothing more will arrive.
    #[error("the connection to the server ended: {reason}")]
    Disconnected {
        /// What ended it.
        reason: String,
    },
}

/// What a subscription's queue carries: events, and the server requests a turn handle took.
#[derive(Debug)]
pub(crate) enum Item {
    Event(Event),
    Request(ServerRequestEvent),
}

/// Where the worker leaves the reason a subscription ended, for the consumer to read after the
/// events queued before it.
pub(crate) type EndSlot = Arc<Mutex<Option<SubscriptionError>>>;

/// What a dropped [`Subscription`] tells: the client's core, which routes events to it. A
/// trait here, so that this module never reaches into the core.
pub(crate) trait Unsubscribe: Send + Sync {
    /// Stops routing events to subscription `id`.
    fn unsubscribe(&self, id: u64);
}

/// A stream of events. Dropping it unsubscribes.
#[derive(Debug)]
pub struct Subscription {
    pub(crate) id: u64,
    pub(crate) rx: mpsc::Receiver<Item>,
    pub(crate) end: EndSlot,
    pub(crate) shared: Weak<dyn Unsubscribe>,
    pub(crate) ended: bool,
}

impl Subscription {
    /// The next event, in the order the server sent them; `Some(Err(..))` once if the
    /// subscription ended with an error (after every event queued before it), then `None`.
    pub async fn next(&mut self) -> Option<Result<Event, SubscriptionError>> {
        loop {
            match self.next_item().await? {
                Ok(Item::Event(event)) => return Some(Ok(event)),
                // Only turn handles take server requests; a plain subscription never sees one,
                // but if it did, dropping it answers with the least-privilege default.
                Ok(Item::Request(_)) => continue,
                Err(error) => return Some(Err(error)),
            }
        }
    }

    pub(crate) async fn next_item(&mut self) -> Option<Result<Item, SubscriptionError>> {
        if self.ended {
            return None;
        }
        match self.rx.recv().await {
            Some(item) => Some(Ok(item)),
            None => {
                self.ended = true;
                let error = self
                    .end
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .take();
                error.map(Err)
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.unsubscribe(self.id);
        }
    }
}
