//! The seeded fault schedule of one soak phase: which fault, at what time after the phase
//! began, against which server or client. Pure, so that a seed always gives the same schedule
//! and the rules below are tested.
//!
//! - No fault in the first [`quiet_start`] of a phase (the servers warm up and the clients
//!   build some history first) nor in its last [`QUIET_END`] (the final checks need a settled
//!   server).
//! - Faults come in rounds: each round is every available kind once, in a seeded order, so a
//!   short phase (the CI run's) still meets each kind; gaps between faults are drawn from
//!   [`MIN_GAP`] up to a maximum that lets one round fit in the phase, and at most
//!   [`MAX_GAP`].
//! - The same server (or stdio client) is killed at most once every [`kill_spacing`], a
//!   quarter of the phase: its lives must outlast the monitor's warm-up (five minutes) by
//!   long enough for their resident size and descriptors to say whether they grow. A kill that would come sooner is left out of its
//!   round.
//! - A kind that the phase cannot inject is never scheduled: a tmpfs fill without a tmpfs
//!   home, a PostgreSQL restart without PostgreSQL, a stdio kill without stdio clients.

use std::time::Duration;

use rand::Rng as _;
use rand::rngs::StdRng;
use rand::seq::SliceRandom as _;

/// The shortest time between two scheduled faults.
pub(crate) const MIN_GAP: Duration = Duration::from_secs(6);
/// The longest time between two scheduled faults.
pub(crate) const MAX_GAP: Duration = Duration::from_secs(30);
/// No fault in the last part of a phase: the final checks read a settled server.
pub(crate) const QUIET_END: Duration = Duration::from_secs(10);

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum FaultKind {
    /// `kill -9` of a websocket server, then a restart on the same store.
    KillServer,
    /// `kill -9` of a stdio client's server child; its client starts a new one.
    KillStdio,
    /// Every connection through a server's proxy is cut; the clients reconnect and resume.
    Cut,
    /// The home's tmpfs is filled until writes fail, held, then freed.
    DiskFull,
    /// `pg_ctl restart -m fast` of the cluster under the servers.
    PostgresRestart,
}

impl FaultKind {
    /// Every kind, in report order.
    pub(crate) const ALL: [FaultKind; 5] = [
        FaultKind::KillServer,
        FaultKind::KillStdio,
        FaultKind::Cut,
        FaultKind::DiskFull,
        FaultKind::PostgresRestart,
    ];

    /// The name `--faults` takes.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            FaultKind::KillServer => "kill-server",
            FaultKind::KillStdio => "kill-stdio",
            FaultKind::Cut => "cut",
            FaultKind::DiskFull => "disk-full",
            FaultKind::PostgresRestart => "postgres-restart",
        }
    }

    /// The name the report uses.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FaultKind::KillServer => "kill -9 server",
            FaultKind::KillStdio => "kill -9 stdio server",
            FaultKind::Cut => "connection cut",
            FaultKind::DiskFull => "disk full",
            FaultKind::PostgresRestart => "postgres restart",
        }
    }
}

/// One scheduled fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    /// When, from the start of the phase.
    pub(crate) at: Duration,
    /// What.
    pub(crate) kind: FaultKind,
    /// Which server (kill, cut) or stdio client (stdio kill); 0 for the others.
    pub(crate) target: usize,
}

/// What a phase can inject faults into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Setup {
    /// Websocket servers.
    pub(crate) servers: usize,
    /// Stdio clients, each with a server child of its own.
    pub(crate) stdio_clients: usize,
    /// The home is on a tmpfs the soak mounted.
    pub(crate) tmpfs: bool,
    /// The store is the throwaway PostgreSQL cluster.
    pub(crate) postgres: bool,
}

impl Setup {
    /// How many targets `kind` has here (0: the kind is not available).
    fn targets(&self, kind: FaultKind) -> usize {
        match kind {
            FaultKind::KillServer | FaultKind::Cut => self.servers,
            FaultKind::KillStdio => self.stdio_clients,
            FaultKind::DiskFull => usize::from(self.tmpfs),
            FaultKind::PostgresRestart => usize::from(self.postgres),
        }
    }

    /// The kinds available here, in report order.
    pub(crate) fn kinds(&self) -> Vec<FaultKind> {
        FaultKind::ALL
            .into_iter()
            .filter(|kind| self.targets(*kind) > 0)
            .collect()
    }
}

/// The fault-free start of a phase of `length`: a tenth of it, at least 10 s and at most 60 s.
pub(crate) fn quiet_start(length: Duration) -> Duration {
    (length / 10).clamp(Duration::from_secs(10), Duration::from_secs(60))
}

/// The shortest time between two kills of one target in a phase of `length`.
pub(crate) fn kill_spacing(length: Duration) -> Duration {
    length / 4
}

/// The schedule of a phase of `length` with `setup`, drawn from `rng`, in time order, of the
/// `allowed` kinds.
pub(crate) fn schedule(
    rng: &mut StdRng,
    length: Duration,
    setup: &Setup,
    allowed: &[FaultKind],
) -> Vec<Fault> {
    let mut kinds = setup.kinds();
    kinds.retain(|kind| allowed.contains(kind));
    let first = quiet_start(length);
    let Some(last) = length.checked_sub(QUIET_END) else {
        return Vec::new();
    };
    if kinds.is_empty() || last <= first {
        return Vec::new();
    }
    let round_fits = (last - first) / kinds.len() as u32;
    let max_gap = round_fits.clamp(MIN_GAP, MAX_GAP);
    let mut at = first + draw(rng, Duration::ZERO, MIN_GAP / 2);
    let mut faults: Vec<Fault> = Vec::new();
    'rounds: loop {
        let mut round = kinds.clone();
        round.shuffle(rng);
        for kind in round {
            if at > last {
                break 'rounds;
            }
            let spaced = |target: usize| {
                !matches!(kind, FaultKind::KillServer | FaultKind::KillStdio)
                    || faults
                        .iter()
                        .filter(|f| f.kind == kind && f.target == target)
                        .all(|f| at - f.at >= kill_spacing(length))
            };
            let ready: Vec<usize> = (0..setup.targets(kind)).filter(|t| spaced(*t)).collect();
            if ready.is_empty() {
                continue;
            }
            let target = ready[rng.random_range(0..ready.len())];
            faults.push(Fault { at, kind, target });
            at += draw(rng, MIN_GAP, max_gap);
        }
    }
    faults
}

/// A duration drawn uniformly from `low..=high`, to the millisecond.
fn draw(rng: &mut StdRng, low: Duration, high: Duration) -> Duration {
    let low = low.as_millis() as u64;
    let high = (high.as_millis() as u64).max(low);
    Duration::from_millis(rng.random_range(low..=high))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use rand::SeedableRng as _;

    use super::*;

    const SQLITE: Setup = Setup {
        servers: 1,
        stdio_clients: 2,
        tmpfs: true,
        postgres: false,
    };
    const POSTGRES: Setup = Setup {
        servers: 2,
        stdio_clients: 2,
        tmpfs: false,
        postgres: true,
    };

    fn drawn(seed: u64, minutes: u64, setup: &Setup) -> Vec<Fault> {
        schedule(
            &mut StdRng::seed_from_u64(seed),
            Duration::from_secs(minutes * 60),
            setup,
            &FaultKind::ALL,
        )
    }

    #[test]
    fn a_seed_gives_one_schedule_and_seeds_differ() {
        assert_eq!(drawn(1, 30, &SQLITE), drawn(1, 30, &SQLITE));
        assert_ne!(drawn(1, 30, &SQLITE), drawn(2, 30, &SQLITE));
    }

    #[test]
    fn faults_keep_the_quiet_ends_and_the_minimum_gap() {
        for seed in 0..50 {
            for (minutes, setup) in [(1, SQLITE), (1, POSTGRES), (30, SQLITE), (30, POSTGRES)] {
                let length = Duration::from_secs(minutes * 60);
                let faults = drawn(seed, minutes, &setup);
                assert!(!faults.is_empty(), "seed {seed}, {minutes} min");
                for fault in &faults {
                    assert!(fault.at >= quiet_start(length), "{fault:?}");
                    assert!(fault.at <= length - QUIET_END, "{fault:?}");
                    assert!(fault.target < setup.targets(fault.kind), "{fault:?}");
                }
                for pair in faults.windows(2) {
                    assert!(pair[1].at - pair[0].at >= MIN_GAP, "{pair:?}");
                    assert!(pair[1].at - pair[0].at <= MAX_GAP, "{pair:?}");
                }
            }
        }
    }

    #[test]
    fn a_target_is_killed_at_most_once_per_spacing() {
        for seed in 0..20 {
            for (minutes, setup) in [(1, SQLITE), (30, SQLITE), (30, POSTGRES)] {
                let spacing = kill_spacing(Duration::from_secs(minutes * 60));
                let faults = drawn(seed, minutes, &setup);
                for (i, a) in faults.iter().enumerate() {
                    for b in &faults[i + 1..] {
                        if a.kind == b.kind
                            && a.target == b.target
                            && matches!(a.kind, FaultKind::KillServer | FaultKind::KillStdio)
                        {
                            assert!(b.at - a.at >= spacing, "{a:?} then {b:?}");
                        }
                    }
                }
                // The other faults fill the time between kills.
                let kills = faults
                    .iter()
                    .filter(|f| f.kind == FaultKind::KillServer)
                    .count();
                assert!(kills >= 1 && kills * 2 < faults.len().max(3), "{faults:?}");
            }
        }
    }

    #[test]
    fn a_one_minute_phase_meets_every_available_kind() {
        for seed in 0..50 {
            for setup in [SQLITE, POSTGRES] {
                let kinds: BTreeSet<FaultKind> =
                    drawn(seed, 1, &setup).iter().map(|f| f.kind).collect();
                let available: BTreeSet<FaultKind> = setup.kinds().into_iter().collect();
                assert_eq!(kinds, available, "seed {seed}, {setup:?}");
            }
        }
    }

    #[test]
    fn unavailable_kinds_are_never_scheduled() {
        let kinds: BTreeSet<FaultKind> = drawn(3, 30, &SQLITE).iter().map(|f| f.kind).collect();
        assert!(!kinds.contains(&FaultKind::PostgresRestart));
        let kinds: BTreeSet<FaultKind> = drawn(3, 30, &POSTGRES).iter().map(|f| f.kind).collect();
        assert!(!kinds.contains(&FaultKind::DiskFull));
        let no_stdio = Setup {
            stdio_clients: 0,
            tmpfs: false,
            ..SQLITE
        };
        let kinds: BTreeSet<FaultKind> = drawn(3, 30, &no_stdio).iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            BTreeSet::from([FaultKind::KillServer, FaultKind::Cut])
        );
    }

    #[test]
    fn every_target_is_hit_over_a_long_phase() {
        let targets: BTreeSet<usize> = drawn(5, 30, &POSTGRES)
            .iter()
            .filter(|f| f.kind == FaultKind::KillServer)
            .map(|f| f.target)
            .collect();
        assert_eq!(targets, BTreeSet::from([0, 1]));
    }

    #[test]
    fn a_phase_too_short_for_the_quiet_ends_has_no_fault() {
        let mut rng = StdRng::seed_from_u64(1);
        let length = Duration::from_secs(15);
        assert!(schedule(&mut rng, length, &SQLITE, &FaultKind::ALL).is_empty());
    }

    #[test]
    fn only_allowed_kinds_are_scheduled() {
        let mut rng = StdRng::seed_from_u64(1);
        let length = Duration::from_secs(600);
        let cuts = schedule(&mut rng, length, &SQLITE, &[FaultKind::Cut]);
        assert!(!cuts.is_empty());
        assert!(cuts.iter().all(|f| f.kind == FaultKind::Cut));
        assert!(schedule(&mut rng, length, &SQLITE, &[]).is_empty());
    }
}
