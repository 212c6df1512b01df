//! What the server acknowledged over the whole run (the [`Ledger`]), what the checks found
//! wrong ([`Violations`]), and the counts printed at the end ([`Counts`]).
//!
//! The ledger outlives every server process of the run: each restart is checked against all
//! that was acknowledged before it, so a turn that survived one crash and was lost in a later
//! one is caught too.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom as _;

/// A turn the server acknowledged (`turn/start` answered).
#[derive(Debug, Clone)]
pub(crate) struct AcknowledgedTurn {
    pub(crate) thread_id: String,
    pub(crate) input: String,
    /// The kill point the turn was acknowledged before.
    pub(crate) kill: u64,
    /// The status `turn/completed` reported, if the client read one before the kill.
    pub(crate) told_status: Option<String>,
}

/// Every thread and turn acknowledged so far, in acknowledgement order.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    threads: Vec<String>,
    /// The last kill point before which each thread was started, resumed or given a turn.
    last_touched: HashMap<String, u64>,
    turns: HashMap<String, AcknowledgedTurn>,
    /// Turn ids by thread, in acknowledgement order.
    turns_by_thread: HashMap<String, Vec<String>>,
    /// The kill point the server now running will end at.
    current_kill: u64,
}

/// Which acknowledged threads a restart reads back in full.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scope {
    /// Every one.
    All,
    /// Those touched before kill point `since_kill` or later, and `sample` of the others
    /// drawn with `seed` (long runs, where reading everything after every restart would make
    /// the run quadratic).
    Recent {
        since_kill: u64,
        sample: usize,
        seed: u64,
    },
}

impl Ledger {
    /// Turns acknowledged from now on are acknowledged before kill point `index`.
    pub(crate) fn begin_cycle(&mut self, index: u64) {
        self.current_kill = index;
    }

    pub(crate) fn thread_acknowledged(&mut self, thread_id: &str) {
        if self
            .last_touched
            .insert(thread_id.to_owned(), self.current_kill)
            .is_none()
        {
            self.threads.push(thread_id.to_owned());
        }
    }

    pub(crate) fn turn_acknowledged(&mut self, thread_id: &str, turn_id: &str, input: &str) {
        // A thread resumed from an earlier run is touched by its turns too.
        self.thread_acknowledged(thread_id);
        if self.turns.contains_key(turn_id) {
            return;
        }
        self.turns_by_thread
            .entry(thread_id.to_owned())
            .or_default()
            .push(turn_id.to_owned());
        self.turns.insert(
            turn_id.to_owned(),
            AcknowledgedTurn {
                thread_id: thread_id.to_owned(),
                input: input.to_owned(),
                kill: self.current_kill,
                told_status: None,
            },
        );
    }

    pub(crate) fn told_turn_status(&mut self, turn_id: &str, status: &str) {
        if let Some(turn) = self.turns.get_mut(turn_id) {
            turn.told_status = Some(status.to_owned());
        }
    }

    pub(crate) fn threads(&self) -> &[String] {
        &self.threads
    }

    /// The threads `scope` selects, in acknowledgement order.
    pub(crate) fn select(&self, scope: Scope) -> Vec<String> {
        match scope {
            Scope::All => self.threads.clone(),
            Scope::Recent {
                since_kill,
                sample,
                seed,
            } => {
                let recent = |thread: &String| self.last_touched[thread] >= since_kill;
                let older: Vec<&String> = self.threads.iter().filter(|t| !recent(t)).collect();
                let mut rng = StdRng::seed_from_u64(seed);
                let sampled: HashSet<&String> =
                    older.choose_multiple(&mut rng, sample).copied().collect();
                self.threads
                    .iter()
                    .filter(|thread| recent(thread) || sampled.contains(thread))
                    .cloned()
                    .collect()
            }
        }
    }

    /// The acknowledged turns of `thread_id`, with their ids.
    pub(crate) fn turns_of(&self, thread_id: &str) -> Vec<(String, AcknowledgedTurn)> {
        self.turns_by_thread
            .get(thread_id)
            .into_iter()
            .flatten()
            .map(|id| (id.clone(), self.turns[id].clone()))
            .collect()
    }

    pub(crate) fn turn_count(&self) -> usize {
        self.turns.len()
    }
}

/// How many examples of one kind of violation the report quotes.
const EXAMPLES: usize = 5;

/// Violations by kind. Each (kind, key) pair counts once, so a turn that is missing after
/// every later restart is one violation, not one per restart.
#[derive(Debug, Default)]
pub(crate) struct Violations {
    seen: HashSet<(String, String)>,
    by_kind: BTreeMap<String, Vec<String>>,
}

impl Violations {
    pub(crate) fn add(&mut self, kind: &str, key: &str, detail: String) {
        if self.seen.insert((kind.to_owned(), key.to_owned())) {
            self.by_kind
                .entry(kind.to_owned())
                .or_default()
                .push(detail);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_kind.is_empty()
    }

    pub(crate) fn has(&self, kind: &str, key: &str) -> bool {
        self.seen.contains(&(kind.to_owned(), key.to_owned()))
    }
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (kind, details) in &self.by_kind {
            writeln!(f, "  {kind}: {}", details.len())?;
            for detail in details.iter().take(EXAMPLES) {
                writeln!(f, "    - {detail}")?;
            }
            if details.len() > EXAMPLES {
                writeln!(f, "    - ... {} more", details.len() - EXAMPLES)?;
            }
        }
        Ok(())
    }
}

/// What the run did and checked, printed at the end whether it passed or not.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) kills: u64,
    /// Kills sent because the workload stalled before its kill point.
    pub(crate) stalled_kills: u64,
    /// Kills during a restart (store open, recovery, handshake), before the workload.
    pub(crate) startup_kills: u64,
    pub(crate) restarts: u64,
    pub(crate) threads_started: u64,
    pub(crate) threads_resumed: u64,
    pub(crate) turns_started: u64,
    pub(crate) processes_spawned: u64,
    /// Thread presence checks (one per acknowledged thread per restart).
    pub(crate) thread_checks: u64,
    /// Turn checks (one per acknowledged turn per restart).
    pub(crate) turn_checks: u64,
    /// Tool-call items checked for an output (one per item per restart).
    pub(crate) call_checks: u64,
    /// Pids the workload's commands wrote, checked after their kill, by kind.
    pub(crate) processes_checked: BTreeMap<&'static str, u64>,
    /// Processes alive past the deadline, by kind (`unrecorded`: found only by the marker).
    pub(crate) processes_survived: BTreeMap<&'static str, u64>,
    pub(crate) integrity_checks: u64,
    /// Restarts that read back every acknowledged thread (the others read a sample).
    pub(crate) full_checks: u64,
    /// Statuses of the acknowledged turns at the final restart.
    pub(crate) final_statuses: BTreeMap<String, u64>,
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "  kills: {} during workloads ({} because the workload stalled), {} during a restart; \
             restarts: {}",
            self.kills, self.stalled_kills, self.startup_kills, self.restarts
        )?;
        writeln!(
            f,
            "  acknowledged: {} thread/start, {} thread/resume, {} turn/start; {} process/spawn",
            self.threads_started, self.threads_resumed, self.turns_started, self.processes_spawned
        )?;
        writeln!(
            f,
            "  checked: {} threads, {} turns, {} tool calls (summed over restarts; {} of {} restarts \
             read every thread), {} integrity checks",
            self.thread_checks,
            self.turn_checks,
            self.call_checks,
            self.full_checks,
            self.restarts + 1,
            self.integrity_checks
        )?;
        let by_kind = |counts: &BTreeMap<&'static str, u64>| {
            let total: u64 = counts.values().sum();
            let kinds: Vec<String> = counts
                .iter()
                .map(|(kind, count)| format!("{kind} {count}"))
                .collect();
            format!("{total} ({})", kinds.join(", "))
        };
        writeln!(
            f,
            "  processes checked after their kill: {}",
            by_kind(&self.processes_checked)
        )?;
        writeln!(
            f,
            "  processes still alive 2 s after their kill: {}",
            by_kind(&self.processes_survived)
        )?;
        let statuses: Vec<String> = self
            .final_statuses
            .iter()
            .map(|(status, count)| format!("{status} {count}"))
            .collect();
        writeln!(
            f,
            "  acknowledged turns at the last restart: {}",
            statuses.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampled_restart_reads_every_recent_thread_and_a_sample_of_the_rest() {
        let mut ledger = Ledger::default();
        for kill in 0..10u64 {
            ledger.begin_cycle(kill);
            for lane in 0..5 {
                ledger.thread_acknowledged(&format!("k{kill}-{lane}"));
            }
        }
        // An old thread resumed before kill 9 counts as recent.
        ledger.turn_acknowledged("k0-0", "turn", "input");
        let scope = Scope::Recent {
            since_kill: 8,
            sample: 7,
            seed: 1,
        };
        let selected = ledger.select(scope);
        let recent: Vec<&String> = selected
            .iter()
            .filter(|thread| thread.starts_with("k8-") || thread.starts_with("k9-"))
            .collect();
        assert_eq!(recent.len(), 10);
        assert!(selected.contains(&"k0-0".to_owned()));
        assert_eq!(selected.len(), 10 + 1 + 7);
        assert_eq!(
            selected,
            ledger.select(scope),
            "the sample follows the seed"
        );
        assert_eq!(ledger.select(Scope::All).len(), 50);
        assert_eq!(ledger.turns_of("k0-0").len(), 1);
        assert_eq!(ledger.turns_of("k0-0")[0].1.kill, 9);
    }
}
