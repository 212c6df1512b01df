//! The deadlines of in-process requests: one sweeper task with one timer enforces the
//! timeouts of all of a client's pending requests. A tokio timer per request had to be
//! registered with the runtime's timer wheel and removed again on every request (and, on a
//! multi-thread runtime with no other timer pending, woke a parked worker to do so); that was
//! the largest part of the client's cost per in-process request. Here a request takes a slot
//! under a mutex, and the sweeper's timer is re-armed only when a deadline earlier than the
//! one it waits for appears, which a stream of requests with the same timeout never causes.
//!
//! Precision is that of a timer per request: the sweeper always waits for the earliest
//! deadline still pending (or an earlier one, when the request that had it finished first).

use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The pending deadlines of one client.
#[derive(Debug, Default)]
pub(crate) struct DeadlineWatch {
    state: Mutex<State>,
    /// Wakes the sweeper when it must look earlier than it planned, or was idle.
    sweeper: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// One slot per watched request; `None` slots are free and listed in `free`, so the
    /// vector never grows beyond the most requests pending at once.
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// When the sweeper looks next: never later than any pending deadline. `None` while
    /// nothing is pending and the sweeper waits to be notified.
    next_sweep: Option<Instant>,
}

#[derive(Debug)]
struct Slot {
    deadline: Instant,
    /// The task to wake when the deadline passes.
    waker: Option<Waker>,
    expired: bool,
}

impl DeadlineWatch {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Watches `deadline` for a request whose task `waker` wakes; the deadline is released
    /// when the returned slot is dropped.
    pub(crate) fn watch(&self, deadline: Instant, waker: &Waker) -> Watched<'_> {
        let slot = Slot {
            deadline,
            waker: Some(waker.clone()),
            expired: false,
        };
        let mut state = self.lock();
        let key = match state.free.pop() {
            Some(key) => {
                state.slots[key] = Some(slot);
                key
            }
            None => {
                state.slots.push(Some(slot));
                state.slots.len() - 1
            }
        };
        let sooner = state.next_sweep.is_none_or(|next| deadline < next);
        if sooner {
            state.next_sweep = Some(deadline);
        }
        drop(state);
        if sooner {
            self.sweeper.notify_one();
        }
        Watched { watch: self, key }
    }

    /// Marks every slot whose deadline has passed and wakes its task; plans the next sweep
    /// for the earliest deadline left.
    fn expire_due(&self) {
        let now = Instant::now();
        let mut due = Vec::new();
        let mut state = self.lock();
        let mut next: Option<Instant> = None;
        for slot in state.slots.iter_mut().flatten() {
            if slot.expired {
                continue;
            }
            if slot.deadline <= now {
                slot.expired = true;
                due.extend(slot.waker.take());
            } else {
                next = Some(next.map_or(slot.deadline, |next| next.min(slot.deadline)));
            }
        }
        state.next_sweep = next;
        drop(state);
        // Woken outside the lock: a woken task may poll (and lock) at once.
        for waker in due {
            waker.wake();
        }
    }

    /// Expires deadlines as they pass until `stop` is cancelled.
    pub(crate) async fn run_sweeper(self: Arc<Self>, stop: CancellationToken) {
        loop {
            let next = self.lock().next_sweep;
            // A notification sent between reading `next` and waiting below is kept as a
            // permit by `Notify`, so an earlier deadline is never missed.
            let rearm = self.sweeper.notified();
            tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                _ = rearm => {}
                _ = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {
                    self.expire_due();
                }
            }
        }
    }
}

/// A request's deadline, watched until this is dropped.
#[derive(Debug)]
pub(crate) struct Watched<'a> {
    watch: &'a DeadlineWatch,
    key: usize,
}

impl Watched<'_> {
    /// Whether the deadline has passed; if not, `waker` is the one woken when it does.
    pub(crate) fn expired(&self, waker: &Waker) -> bool {
        let mut state = self.watch.lock();
        let Some(slot) = state.slots[self.key].as_mut() else {
            unreachable!("a watched slot stays occupied until it is dropped");
        };
        if slot.expired {
            return true;
        }
        match &slot.waker {
            Some(current) if current.will_wake(waker) => {}
            _ => slot.waker = Some(waker.clone()),
        }
        false
    }
}

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        let mut state = self.watch.lock();
        state.slots[self.key] = None;
        state.free.push(self.key);
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Poll, Wake};
    use std::time::Duration;

    use super::*;

    /// Counts its wakes.
    #[derive(Default)]
    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn start() -> (Arc<DeadlineWatch>, CancellationToken) {
        let watch = Arc::new(DeadlineWatch::default());
        let stop = CancellationToken::new();
        tokio::spawn(watch.clone().run_sweeper(stop.clone()));
        (watch, stop)
    }

    /// Waits until `watched` reports expiry, returning how long that took.
    async fn until_expired(watched: &Watched<'_>) -> Duration {
        let started = Instant::now();
        poll_fn(|cx| {
            if watched.expired(cx.waker()) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        started.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_expires_on_time_and_wakes_its_task() {
        let (watch, stop) = start();
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(counter.clone());
        let watched = watch.watch(Instant::now() + Duration::from_millis(200), &waker);
        assert!(!watched.expired(&waker));
        tokio::time::sleep(Duration::from_millis(199)).await;
        assert!(!watched.expired(&waker), "not before its deadline");
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);
        // Past the deadline: the sweeper's timer (200 ms) fired before this one (201 ms).
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert!(watched.expired(&waker));
        assert_eq!(
            counter.0.load(Ordering::SeqCst),
            1,
            "its task was woken once"
        );
        stop.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_deadline_rearms_the_sweeper() {
        let (watch, stop) = start();
        let waker = Waker::noop();
        let late = watch.watch(Instant::now() + Duration::from_secs(60), waker);
        tokio::task::yield_now().await;
        let soon = watch.watch(Instant::now() + Duration::from_millis(50), waker);
        assert_eq!(until_expired(&soon).await, Duration::from_millis(50));
        assert!(!late.expired(waker), "the later one is still pending");
        assert_eq!(
            until_expired(&late).await,
            Duration::from_secs(60) - Duration::from_millis(50)
        );
        stop.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn a_released_deadline_never_fires_and_its_slot_is_reused() {
        let (watch, stop) = start();
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(counter.clone());
        for _ in 0..1000 {
            // Each one finishes before its deadline, as most requests do.
            let watched = watch.watch(Instant::now() + Duration::from_millis(10), &waker);
            tokio::time::sleep(Duration::from_millis(1)).await;
            drop(watched);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(counter.0.load(Ordering::SeqCst), 0, "nothing expired");
        assert_eq!(watch.lock().slots.len(), 1, "one slot served them all");
        assert_eq!(watch.lock().next_sweep, None, "the sweeper is idle");
        // And it wakes up for the next one.
        let watched = watch.watch(Instant::now() + Duration::from_millis(30), &waker);
        assert_eq!(until_expired(&watched).await, Duration::from_millis(30));
        stop.cancel();
    }
}
