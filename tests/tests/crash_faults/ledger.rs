//! What the server acknowledged over the whole run (the [`Ledger`]), what the checks found
//! wrong ([`Violations`]), and the counts printed at the end ([`Counts`]).
//!
//! The ledger outlives every server process of the run: each restart is checked against all
//! that was acknowledged before it, so a turn that survived one crash and was lost in a later
//! one is caught too.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

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
    thread_set: HashSet<String>,
    turns: HashMap<String, AcknowledgedTurn>,
    turn_order: Vec<String>,
    /// The kill point the server now running will end at.
    current_kill: u64,
}

impl Ledger {
    /// Turns acknowledged from now on are acknowledged before kill point `index`.
    pub(crate) fn begin_cycle(&mut self, index: u64) {
        self.current_kill = index;
    }

    pub(crate) fn thread_acknowledged(&mut self, thread_id: &str) {
        if self.thread_set.insert(thread_id.to_owned()) {
            self.threads.push(thread_id.to_owned());
        }
    }

    pub(crate) fn turn_acknowledged(&mut self, thread_id: &str, turn_id: &str, input: &str) {
        // A thread resumed from an earlier run is acknowledged by its first turn too.
        self.thread_acknowledged(thread_id);
        if !self.turns.contains_key(turn_id) {
            self.turn_order.push(turn_id.to_owned());
        }
        self.turns
            .entry(turn_id.to_owned())
            .or_insert_with(|| AcknowledgedTurn {
                thread_id: thread_id.to_owned(),
                input: input.to_owned(),
                kill: self.current_kill,
                told_status: None,
            });
    }

    pub(crate) fn told_turn_status(&mut self, turn_id: &str, status: &str) {
        if let Some(turn) = self.turns.get_mut(turn_id) {
            turn.told_status = Some(status.to_owned());
        }
    }

    pub(crate) fn threads(&self) -> &[String] {
        &self.threads
    }

    /// The acknowledged turns of `thread_id`, with their ids.
    pub(crate) fn turns_of(&self, thread_id: &str) -> Vec<(String, AcknowledgedTurn)> {
        self.turn_order
            .iter()
            .filter_map(|id| self.turns.get(id).map(|turn| (id, turn)))
            .filter(|(_, turn)| turn.thread_id == thread_id)
            .map(|(id, turn)| (id.clone(), turn.clone()))
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
            "  checked: {} threads, {} turns, {} tool calls (summed over restarts), {} integrity checks",
            self.thread_checks, self.turn_checks, self.call_checks, self.integrity_checks
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
