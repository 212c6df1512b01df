//! The writer lease of a thread (issue 20, docs/scaling.md): what this process holds, as the
//! durable stores that share their data between processes (PostgreSQL, and SQLite on a home
//! shared by several servers) keep it.
//!
//! The lease itself lives in the database, in a `thread_leases` row: owner, an epoch that only
//! grows, and an expiry on the database's clock. This module is the process-local half: the
//! [`LeaseBook`] remembers, per thread, the epoch this process was granted and the local
//! deadline past which it must assume the lease is gone (the deadline is taken *before* the
//! acquiring or renewing statement is sent, so it always falls before the database's expiry).
//! A store consults the book before every write transaction and checks the epoch inside it
//! (compare-and-set on the lease row), so a write from a server that lost its lease is
//! refused by the database even when the server does not know it yet.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::StoreError;
use super::liveness::{self, OwnerLock, live_owners};

/// The lease TTL when the configuration sets none.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// How a store takes and keeps writer leases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSettings {
    /// Who this process is, as other servers see it in a refused resume's `data.owner`:
    /// host, process id and a random suffix, unique per process.
    pub owner: String,
    /// How long a lease lives without renewal; the owner renews it every third of this.
    pub ttl: Duration,
    /// The directory where this server keeps the lock file that tells the servers sharing it
    /// whether this one is gone (`TANDEM_HOME/lease-owners`; see `liveness`). `None`: no
    /// file; servers on this machine then judge by the pid. The SQLite store always uses its
    /// home's.
    pub owner_dir: Option<PathBuf>,
    /// Whether a refused acquire tells the holder at once (PostgreSQL `NOTIFY`, issue 32)
    /// rather than at the holder's next renewal: on when the server waits for handoffs.
    pub notify_handoffs: bool,
}

impl LeaseSettings {
    /// Settings for this process with `ttl`: the owner is `host/pid/random`.
    pub fn for_this_process(ttl: Duration) -> Self {
        let host = liveness::this_host();
        let suffix: u32 = rand::random();
        Self {
            owner: format!("{host}/{}/{suffix:08x}", std::process::id()),
            ttl,
            owner_dir: None,
            notify_handoffs: true,
        }
    }

    /// These settings with handoff notices on or off ([`LeaseSettings::notify_handoffs`]).
    pub fn with_handoff_notices(mut self, notify: bool) -> Self {
        self.notify_handoffs = notify;
        self
    }

    /// These settings with the owner's lock file in `tandem_home`'s `lease-owners` directory,
    /// where the servers sharing that home look for it.
    pub fn with_home(mut self, tandem_home: &Path) -> Self {
        self.owner_dir = Some(tandem_home.join(liveness::OWNERS_DIR));
        self
    }

    /// How often the owner renews its leases: a third of the TTL, so that two renewals can
    /// fail before a lease runs out.
    pub fn renew_period(&self) -> Duration {
        self.ttl / 3
    }

    /// The TTL in whole milliseconds, as the SQL takes it.
    pub(crate) fn ttl_millis(&self) -> i64 {
        i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX)
    }
}

/// What a [`super::ThreadStore::renew_leases`] round found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseRenewal {
    /// Threads whose lease this process no longer holds (taken over, expired, or refused a
    /// write): the server stops their turns and unloads them. Each is reported once.
    pub lost: Vec<String>,
    /// Threads another server asked for (it was refused the lease): the server hands each
    /// over, releasing the lease, as soon as no turn runs on it.
    pub handoff_requested: Vec<String>,
}

/// One thread's lease as this process knows it.
#[derive(Debug, Clone, Copy)]
enum Held {
    /// Granted with `epoch`; must be treated as gone from `deadline` on unless renewed.
    Live { epoch: i64, deadline: Instant },
    /// Gone; `reported` once a renewal round handed it to the server.
    Lost { reported: bool },
}

/// The leases this process holds, per thread id.
#[derive(Debug)]
pub(crate) struct LeaseBook {
    pub(crate) settings: LeaseSettings,
    held: Mutex<HashMap<String, Held>>,
    /// This server's lock file, while it lives (see `liveness`).
    alive: Option<OwnerLock>,
    /// When the lock files of dead owners were last looked for.
    last_sweep: Mutex<Option<Instant>>,
}

impl Drop for LeaseBook {
    fn drop(&mut self) {
        live_owners().remove(&self.settings.owner);
    }
}

/// What a write on a thread must check in its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fence {
    /// This process holds the lease with this epoch: compare-and-set on it.
    Epoch(i64),
    /// This process does not hold the lease: the write goes through only while no other
    /// server holds a live one.
    NotHeld,
}

impl LeaseBook {
    pub(crate) fn new(settings: LeaseSettings) -> Self {
        live_owners().insert(settings.owner.clone());
        let alive = settings
            .owner_dir
            .as_deref()
            .map(|dir| OwnerLock::take(dir, &settings.owner));
        Self {
            settings,
            held: Mutex::new(HashMap::new()),
            alive,
            last_sweep: Mutex::new(None),
        }
    }

    /// Whether the server holding a lease as `owner` is gone, so that its lease is free now
    /// (see [`liveness::owner_is_gone`]): the one rule of every lease decision.
    pub(crate) fn owner_is_gone(&self, owner: &str) -> bool {
        owner != self.settings.owner
            && liveness::owner_is_gone(self.settings.owner_dir.as_deref(), owner)
    }

    /// The dead owners whose lock files are in this server's directory, at most once a TTL
    /// (always on the first call): the store releases their leases and then removes the
    /// files.
    pub(crate) fn dead_owners_due(&self) -> Vec<liveness::DeadOwner> {
        let Some(dir) = self.settings.owner_dir.as_deref() else {
            return Vec::new();
        };
        {
            let mut last = self
                .last_sweep
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|last| last.elapsed() < self.settings.ttl) {
                return Vec::new();
            }
            *last = Some(Instant::now());
        }
        liveness::dead_owners(dir)
    }

    fn held(&self) -> MutexGuard<'_, HashMap<String, Held>> {
        // Every critical section is one map operation.
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The deadline of a lease granted or renewed by a statement sent at `sent`.
    pub(crate) fn deadline_from(&self, sent: Instant) -> Instant {
        sent + self.settings.ttl
    }

    /// What a write on `thread_id` must check; fails at once, without a round trip, for a
    /// lease this process lost or whose local deadline passed.
    pub(crate) fn fence(&self, thread_id: &str) -> Result<Fence, StoreError> {
        let mut held = self.held();
        match held.get(thread_id).copied() {
            None => Ok(Fence::NotHeld),
            Some(Held::Live { epoch, deadline }) if Instant::now() < deadline => {
                Ok(Fence::Epoch(epoch))
            }
            Some(Held::Live { .. }) => {
                held.insert(thread_id.to_owned(), Held::Lost { reported: false });
                Err(StoreError::Fenced(thread_id.to_owned()))
            }
            Some(Held::Lost { .. }) => Err(StoreError::Fenced(thread_id.to_owned())),
        }
    }

    /// This server stops (shutdown): every lease it still holds is lost to it, and other
    /// servers may take them at once (see [`LeaseBook::owner_is_gone`]).
    pub(crate) fn retire(&self) {
        live_owners().remove(&self.settings.owner);
        if let Some(alive) = &self.alive {
            alive.release();
        }
        for value in self.held().values_mut() {
            *value = Held::Lost { reported: true };
        }
    }

    /// Records a granted lease.
    pub(crate) fn granted(&self, thread_id: &str, epoch: i64, deadline: Instant) {
        self.held()
            .insert(thread_id.to_owned(), Held::Live { epoch, deadline });
    }

    /// Records that the lease of `thread_id` is gone (a write was refused).
    pub(crate) fn lost(&self, thread_id: &str) {
        let mut held = self.held();
        if let Some(Held::Live { .. }) = held.get(thread_id) {
            held.insert(thread_id.to_owned(), Held::Lost { reported: false });
        }
    }

    /// Forgets `thread_id` (released); returns the epoch it was held with, if it was live.
    pub(crate) fn forget(&self, thread_id: &str) -> Option<i64> {
        match self.held().remove(thread_id) {
            Some(Held::Live { epoch, .. }) => Some(epoch),
            _ => None,
        }
    }

    /// The live leases to renew, as (thread id, epoch).
    pub(crate) fn live(&self) -> Vec<(String, i64)> {
        self.held()
            .iter()
            .filter_map(|(id, held)| match held {
                Held::Live { epoch, .. } => Some((id.clone(), *epoch)),
                Held::Lost { .. } => None,
            })
            .collect()
    }

    /// Applies a renewal round sent at `sent`: the leases in `renewed` (with the epochs they
    /// were renewed at) get a new deadline; every other lease that was sent for renewal is
    /// lost. Returns the leases lost and not yet reported, marking them reported.
    pub(crate) fn after_renewal(
        &self,
        sent: Instant,
        asked: &[(String, i64)],
        renewed: &[String],
    ) -> Vec<String> {
        let deadline = self.deadline_from(sent);
        let mut held = self.held();
        for (thread_id, epoch) in asked {
            // A lease released or re-granted while the round was in flight is left alone.
            let Some(Held::Live { epoch: current, .. }) = held.get(thread_id).copied() else {
                continue;
            };
            if current != *epoch {
                continue;
            }
            let next = if renewed.contains(thread_id) {
                Held::Live {
                    epoch: current,
                    deadline,
                }
            } else {
                Held::Lost { reported: false }
            };
            held.insert(thread_id.clone(), next);
        }
        Self::take_unreported(&mut held)
    }

    /// After a failed renewal round: the leases whose local deadline passed are lost. Returns
    /// the leases lost and not yet reported, marking them reported.
    pub(crate) fn after_failed_renewal(&self) -> Vec<String> {
        let now = Instant::now();
        let mut held = self.held();
        for value in held.values_mut() {
            if let Held::Live { deadline, .. } = *value
                && now >= deadline
            {
                *value = Held::Lost { reported: false };
            }
        }
        Self::take_unreported(&mut held)
    }

    fn take_unreported(held: &mut HashMap<String, Held>) -> Vec<String> {
        let mut lost = Vec::new();
        for (thread_id, value) in held.iter_mut() {
            if let Held::Lost { reported: false } = value {
                *value = Held::Lost { reported: true };
                lost.push(thread_id.clone());
            }
        }
        lost.sort();
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> LeaseBook {
        LeaseBook::new(LeaseSettings {
            notify_handoffs: true,
            owner: "me".to_owned(),
            ttl: Duration::from_secs(3),
            owner_dir: None,
        })
    }

    #[test]
    fn a_lease_past_its_local_deadline_fences_without_a_round_trip() {
        let book = book();
        assert_eq!(book.fence("t").expect("not held"), Fence::NotHeld);
        book.granted("t", 4, Instant::now() + Duration::from_secs(60));
        assert_eq!(book.fence("t").expect("live"), Fence::Epoch(4));
        book.granted("t", 5, Instant::now() - Duration::from_millis(1));
        assert!(matches!(book.fence("t"), Err(StoreError::Fenced(id)) if id == "t"));
        // Still lost on the next write, until the thread is released or granted again.
        assert!(matches!(book.fence("t"), Err(StoreError::Fenced(_))));
        assert_eq!(book.after_failed_renewal(), vec!["t".to_owned()]);
        assert!(book.after_failed_renewal().is_empty(), "reported once");
        assert_eq!(book.forget("t"), None);
        assert_eq!(book.fence("t").expect("forgotten"), Fence::NotHeld);
    }

    #[test]
    fn a_renewal_round_keeps_the_renewed_and_loses_the_rest() {
        let book = book();
        let later = Instant::now() + Duration::from_secs(60);
        book.granted("a", 1, later);
        book.granted("b", 7, later);
        let asked = book.live();
        // "c" was granted while the round was in flight: not part of it.
        book.granted("c", 2, later);
        let lost = book.after_renewal(Instant::now(), &asked, &["a".to_owned()]);
        assert_eq!(lost, vec!["b".to_owned()]);
        assert_eq!(book.fence("a").expect("renewed"), Fence::Epoch(1));
        assert_eq!(book.fence("c").expect("untouched"), Fence::Epoch(2));
        assert!(matches!(book.fence("b"), Err(StoreError::Fenced(_))));
    }
}
