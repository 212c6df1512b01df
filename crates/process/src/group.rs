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

/// Non-zombie processes whose session id is in `sessions`.
fn live_session_members(sessions: &HashSet<Pid>) -> Vec<Pid> {
    all_processes()
        .into_iter()
        .filter(|process| !process.zombie && sessions.contains(&process.session))
        .map(|process| process.pid)
        .collect()
}

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub(crate) pid: Pid,
    /// Exited and waiting for its parent to reap it: nothing left to kill.
    pub(crate) zombie: bool,
    /// The process group id.
    pub(crate) group: Pid,
    /// The session id.
    pub(crate) session: Pid,
}

/// Every process whose `/proc/<pid>/stat` could be read (one that exits meanwhile is skipped).
pub(crate) fn all_processes() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// Parses `pid (comm) state ppid pgrp session ...`; comm may contain spaces and parens.
fn parse_stat(pid: i32, stat: &str) -> Option<ProcStat> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let group: i32 = fields.nth(1)?.parse().ok()?;
    let session: i32 = fields.next()?.parse().ok()?;
    Some(ProcStat {
        pid: Pid::from_raw(pid),
        zombie: state == "Z",
        group: Pid::from_raw(group),
        session: Pid::from_raw(session),
    })
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn stat_lines_parse_past_odd_command_names() {
        let parsed = parse_stat(12, "12 (a) b (c)) S 1 34 56 0 -1 4194560").expect("parses");
        assert_eq!(
            parsed,
            ProcStat {
                pid: Pid::from_raw(12),
                zombie: false,
                group: Pid::from_raw(34),
                session: Pid::from_raw(56),
            }
        );
        assert!(parse_stat(3, "3 (z) Z 1 3 3 0").expect("parses").zombie);
        assert_eq!(parse_stat(3, "3 (z) S 1"), None);
    }

    #[test]
    fn this_process_is_listed_with_its_group_and_session() {
        let me = Pid::this();
        let found = all_processes()
            .into_iter()
            .find(|process| process.pid == me)
            .expect("this process is in /proc");
        assert_eq!(found.group, nix::unistd::getpgrp());
        assert_eq!(found.session, nix::unistd::getsid(None).expect("getsid"));
    }
}
