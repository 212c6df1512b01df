//! Signalling everything a child started: its process group, and for a PTY child its session.
//!
//! A pipe child leads its own group, so one `killpg` reaches every descendant that did not
//! leave it. A PTY child leads a new session instead, and an interactive shell in it gives
//! each job a group of its own (job control), so killing only the leader's group would leave
//! background jobs running; for those the whole session is swept via `/proc`.

use std::collections::HashSet;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// What one spawn started and must be able to kill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ProcessScope {
    /// The child's pid: its process group id, and for a PTY child also its session id.
    pub(crate) leader: Pid,
    /// Whether the child leads a session (PTY) whose members may sit in other groups.
    pub(crate) session: bool,
}

impl ProcessScope {
    /// Sends `SIGKILL` to the whole scope.
    pub(crate) fn kill(self) {
        kill_scopes(&[self]);
    }

    /// Whether nothing of the scope is left (zombies awaiting their reaper count as gone),
    /// so that a recycled id is never signalled later.
    pub(crate) fn is_empty(self) -> bool {
        if killpg(self.leader, None) != Err(Errno::ESRCH) {
            return false;
        }
        !self.session || live_session_members(&HashSet::from([self.leader])).is_empty()
    }
}

/// Sends `SIGKILL` to every scope, sweeping `/proc` once for all PTY sessions.
pub(crate) fn kill_scopes(scopes: &[ProcessScope]) {
    for scope in scopes {
        signal_group(scope.leader, Signal::SIGKILL);
    }
    let sessions: HashSet<Pid> = scopes
        .iter()
        .filter(|scope| scope.session)
        .map(|scope| scope.leader)
        .collect();
    if sessions.is_empty() {
        return;
    }
    for pid in live_session_members(&sessions) {
        match kill(pid, Signal::SIGKILL) {
            Ok(()) | Err(Errno::ESRCH) => {}
            Err(error) => tracing::warn!(%pid, %error, "killing session member failed"),
        }
    }
}

/// Sends `signal` to a whole process group; a group that is already gone is not an error.
fn signal_group(pgid: Pid, signal: Signal) {
    match killpg(pgid, signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(error) => tracing::warn!(%pgid, ?signal, %error, "signalling process group failed"),
    }
}

/// Non-zombie processes whose session id is in `sessions`, read from `/proc/<pid>/stat`.
fn live_session_members(sessions: &HashSet<Pid>) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid pgrp session ...`; comm may contain spaces and parens.
            let (_, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace();
            let state = fields.next()?;
            let session: i32 = fields.nth(2)?.parse().ok()?;
            (state != "Z" && sessions.contains(&Pid::from_raw(session)))
                .then_some(Pid::from_raw(pid))
        })
        .collect()
}
