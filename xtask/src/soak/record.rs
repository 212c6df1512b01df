//! What every part of a soak phase writes to while it runs: the windows in which a fault
//! disturbs a part of the system (a failure inside one is expected, outside one it is a
//! violation), the violations themselves, and the counters of the summary.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::schedule::FaultKind;

/// How long after a fault ends its effects still excuse a failure: a reconnecting client
/// backs off for up to half a second per attempt, then resumes every thread it follows, and a
/// request sent meanwhile waits for that.
pub(crate) const SETTLE: Duration = Duration::from_secs(10);

/// Locks a mutex whose holder may have panicked: the data is counters and lists, still usable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which part of the system a fault disturbs, and which part an operation ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Everything (the store's disk, the database).
    All,
    /// Websocket server `i` and its clients.
    Server(usize),
    /// Stdio client `i` and its server child.
    Stdio(usize),
}

impl Scope {
    fn covers(self, other: Scope) -> bool {
        self == Scope::All || self == other
    }
}

#[derive(Debug, Clone)]
struct Window {
    scope: Scope,
    kind: FaultKind,
    start: Instant,
    end: Option<Instant>,
}

/// The windows in which faults disturb the system.
#[derive(Debug, Default)]
pub(crate) struct Disturbances {
    windows: Mutex<Vec<Window>>,
}

/// An open disturbance; [`Disturbances::end`] closes it.
#[derive(Debug)]
#[must_use = "a disturbance must be ended"]
pub(crate) struct Open(usize);

impl Disturbances {
    /// A fault of `kind` disturbs `scope` from now on.
    pub(crate) fn begin(&self, scope: Scope, kind: FaultKind) -> Open {
        let mut windows = lock(&self.windows);
        windows.push(Window {
            scope,
            kind,
            start: Instant::now(),
            end: None,
        });
        Open(windows.len() - 1)
    }

    /// The disturbance is over (its effects settle for [`SETTLE`] more).
    pub(crate) fn end(&self, open: Open) {
        lock(&self.windows)[open.0].end = Some(Instant::now());
    }

    /// Whether a failure of an operation on `scope` that ran from `from` to `to` is explained
    /// by a fault: a window on its scope (or on everything) overlaps it, extended by
    /// [`SETTLE`].
    pub(crate) fn excuses(&self, scope: Scope, from: Instant, to: Instant) -> bool {
        lock(&self.windows).iter().any(|window| {
            let end = window.end.map_or(to, |end| end + SETTLE);
            window.scope.covers(scope) && window.start <= to && end >= from
        })
    }

    /// The windows in which server `server` was down by design (killed and not yet serving
    /// again), as `(start, end)`; an open one ends at `now`.
    pub(crate) fn down(&self, server: usize, now: Instant) -> Vec<(Instant, Instant)> {
        lock(&self.windows)
            .iter()
            .filter(|window| {
                window.kind == FaultKind::KillServer && window.scope == Scope::Server(server)
            })
            .map(|window| (window.start, window.end.unwrap_or(now)))
            .collect()
    }
}

/// The violations found, in the order they were found.
#[derive(Debug, Default)]
pub(crate) struct Violations {
    found: Mutex<Vec<String>>,
}

impl Violations {
    /// Records one (printed at once as well, so a long run shows it when it happens).
    pub(crate) fn add(&self, what: impl Into<String>) {
        let what = what.into();
        eprintln!("soak: VIOLATION: {what}");
        lock(&self.found).push(what);
    }

    /// Every violation so far.
    pub(crate) fn all(&self) -> Vec<String> {
        lock(&self.found).clone()
    }
}

/// The summary's counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Requests sent by every client of the soak (workers, probe, watchers, checks).
    pub(crate) requests: AtomicU64,
    /// Turns whose `turn/start` was answered.
    pub(crate) turns: AtomicU64,
    /// Turns whose `turn/completed` arrived, by status.
    pub(crate) completed: Mutex<BTreeMap<String, u64>>,
    /// Operations of the workers that ended as planned.
    pub(crate) operations: Mutex<BTreeMap<&'static str, u64>>,
    /// Failures a fault explained.
    pub(crate) excused: AtomicU64,
    /// Idempotent retries answered with the first request's result.
    pub(crate) retries: AtomicU64,
    /// Streamed processes whose whole output arrived.
    pub(crate) processes: AtomicU64,
    /// Resumes from a cursor the watchers checked, and the events they replayed.
    pub(crate) resumes: AtomicU64,
    /// Events replayed on those resumes.
    pub(crate) replayed: AtomicU64,
    /// Resumes answered with a gap that a restart explained.
    pub(crate) restart_gaps: AtomicU64,
    /// Thread events the watchers checked for contiguity.
    pub(crate) events_checked: AtomicU64,
    /// Ledger checks run (after restarts and at the end), and the turns they compared.
    pub(crate) ledger_checks: AtomicU64,
    /// Turns compared by the ledger checks.
    pub(crate) turns_checked: AtomicU64,
    /// The most turns one read-back found told `failed` but still `inProgress` in the store
    /// (`ledger::CheckOutcome::pending`).
    pub(crate) pending_failed: AtomicU64,
    /// Faults injected, by kind.
    pub(crate) faults: Mutex<BTreeMap<FaultKind, u64>>,
    /// Faults scheduled but not injected, by kind and reason.
    pub(crate) skipped: Mutex<BTreeMap<String, u64>>,
}

impl Counters {
    /// One more request.
    pub(crate) fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds one to a named counter of a map.
    pub(crate) fn bump<K: Ord>(map: &Mutex<BTreeMap<K, u64>>, key: K) {
        *lock(map).entry(key).or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_excuses_what_overlaps_it_on_its_scope() {
        let disturbances = Disturbances::default();
        let before = Instant::now();
        let open = disturbances.begin(Scope::Server(0), FaultKind::KillServer);
        let during = Instant::now();
        assert!(disturbances.excuses(Scope::Server(0), before, during));
        assert!(!disturbances.excuses(Scope::Server(1), before, during));
        assert!(!disturbances.excuses(Scope::Stdio(0), before, during));
        disturbances.end(open);
        let after = Instant::now();
        // Within the settle time after its end.
        assert!(disturbances.excuses(Scope::Server(0), after, after));
        // Long after it: not excused.
        let later = after + SETTLE + Duration::from_secs(1);
        assert!(!disturbances.excuses(Scope::Server(0), later, later));
        // Before it began: not excused.
        assert!(!disturbances.excuses(
            Scope::Server(0),
            before - Duration::from_secs(5),
            before - Duration::from_secs(1)
        ));
        let all = disturbances.begin(Scope::All, FaultKind::DiskFull);
        let now = Instant::now();
        assert!(disturbances.excuses(Scope::Stdio(3), now, now));
        disturbances.end(all);
        assert_eq!(disturbances.down(0, Instant::now()).len(), 1);
        assert_eq!(disturbances.down(1, Instant::now()).len(), 0);
    }
}
