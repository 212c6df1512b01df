//! The `watchdog` helper: kills everything the server started once the server is gone, however
//! it died (`SIGKILL` included), then exits.
//!
//! The server starts one watchdog per process, on its first child, with the read end of a
//! pipe as the watchdog's stdin; only the server holds the write end, close-on-exec, so no
//! child inherits it. The watchdog's stdin therefore reaches end of file exactly when the
//! server's process is gone (or drops the pipe at exit). Meanwhile the server tells it, one
//! line per change, which process groups and sessions it started and which it forgot
//! (`+g PGID`, `+s SID`, `-g PGID`, `-s SID`). At end of file the watchdog `SIGKILL`s, until
//! none is left:
//!
//! - every member of a registered process group or session, and
//! - every process whose environment carries the server's token in [`MARKER_ENV`], which
//!   every child of the server inherits: this catches children that left their group with
//!   `setsid` but kept their environment.
//!
//! The watchdog sits in a process group of its own and blocks `SIGHUP`, `SIGINT`, `SIGTERM`,
//! `SIGQUIT` and `SIGTSTP`, so that a signal sent to the server's group (a closed terminal,
//! Ctrl-C) cannot take it down before the server. It runs no async runtime: a blocking read
//! and a sweep of `/proc` are all it does.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{BufRead as _, BufReader};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, killpg, sigprocmask};
use nix::unistd::Pid;

use super::report;
use crate::group::{ProcStat, all_processes};

/// The subcommand name after [`super::HELPER_ARG`].
pub const SUBCOMMAND: &str = "watchdog";

/// The environment variable that marks the children of a server: a `:`-separated list of
/// tokens, one per server up the chain (a `tandem` run by a `tandem` appends its own), so the
/// watchdog of an outer server also finds what an inner one started.
pub const MARKER_ENV: &str = "TANDEM_SUPERVISOR";

/// How long the final sweep keeps finding and killing processes before it gives up: a
/// process that forks faster than it is killed is the only reason to need more than a few
/// rounds.
const SWEEP_LIMIT: Duration = Duration::from_millis(1500);

/// The pause between two sweeps, for the kernel to deliver the last `SIGKILL`s.
const SWEEP_PAUSE: Duration = Duration::from_millis(5);

/// What a registered scope is: a process group, or a session (whose members may sit in
/// groups of their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ScopeKind {
    Group,
    Session,
}

/// One line from the server to the watchdog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Message {
    /// Kill this scope when the server is gone: `+g PGID` or `+s SID`.
    Watch(ScopeKind, i32),
    /// The scope has no members left; forget it so that a recycled id is never killed:
    /// `-g PGID` or `-s SID`.
    Forget(ScopeKind, i32),
}

impl Message {
    /// The line for this message, newline included.
    pub(crate) fn encode(self) -> String {
        let (sign, kind, id) = match self {
            Self::Watch(kind, id) => ('+', kind, id),
            Self::Forget(kind, id) => ('-', kind, id),
        };
        let kind = match kind {
            ScopeKind::Group => 'g',
            ScopeKind::Session => 's',
        };
        format!("{sign}{kind} {id}\n")
    }

    /// Parses one line (without its newline); `None` for anything else.
    pub(crate) fn parse(line: &str) -> Option<Self> {
        let (head, id) = line.split_once(' ')?;
        let id: i32 = id.trim().parse().ok().filter(|id| *id > 1)?;
        let mut head = head.chars();
        let sign = head.next()?;
        let kind = match head.next()? {
            'g' => ScopeKind::Group,
            's' => ScopeKind::Session,
            _ => return None,
        };
        if head.next().is_some() {
            return None;
        }
        match sign {
            '+' => Some(Self::Watch(kind, id)),
            '-' => Some(Self::Forget(kind, id)),
            _ => None,
        }
    }
}

/// Whether a `NAME=VALUE` environment entry is [`MARKER_ENV`] with `token` among its tokens.
pub(crate) fn entry_carries_token(entry: &[u8], token: &str) -> bool {
    let Some(value) = entry
        .strip_prefix(MARKER_ENV.as_bytes())
        .and_then(|rest| rest.strip_prefix(b"="))
    else {
        return false;
    };
    value
        .split(|byte| *byte == b':')
        .any(|part| part == token.as_bytes())
}

/// Whether `token` can be a marker token: non-empty, and without the separators of the
/// variable's value.
pub(crate) fn valid_token(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|byte| byte.is_ascii_alphanumeric())
}

/// The registered scopes, as the server last described them.
#[derive(Debug, Default)]
struct Watched {
    groups: HashSet<i32>,
    sessions: HashSet<i32>,
}

impl Watched {
    fn apply(&mut self, message: Message) {
        match message {
            Message::Watch(ScopeKind::Group, id) => {
                self.groups.insert(id);
            }
            Message::Watch(ScopeKind::Session, id) => {
                self.sessions.insert(id);
            }
            Message::Forget(ScopeKind::Group, id) => {
                self.groups.remove(&id);
            }
            Message::Forget(ScopeKind::Session, id) => {
                self.sessions.remove(&id);
            }
        }
    }

    /// Whether `process` must die: in a registered group or session, or marked with `token`.
    fn covers(&self, process: &ProcStat, token: &str) -> bool {
        if self.groups.contains(&process.group.as_raw())
            || self.sessions.contains(&process.session.as_raw())
        {
            return true;
        }
        std::fs::read(format!("/proc/{}/environ", process.pid)).is_ok_and(|environ| {
            environ
                .split(|byte| *byte == 0)
                .any(|entry| entry_carries_token(entry, token))
        })
    }
}

/// The watchdog's `main`: `watchdog TOKEN`. Returns the exit code.
pub(crate) fn main(args: &[OsString]) -> i32 {
    let token = match args {
        [token] => token.to_str().filter(|token| valid_token(token)),
        _ => None,
    };
    let Some(token) = token else {
        report(format_args!(
            "tandem helper watchdog: expected one argument, the server's marker token"
        ));
        return super::HELPER_USAGE_EXIT_CODE;
    };
    // Blocked rather than ignored: nothing to undo, and no `unsafe` to install a handler.
    let mut blocked = SigSet::empty();
    for signal in [
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGQUIT,
        Signal::SIGTSTP,
    ] {
        blocked.add(signal);
    }
    if let Err(error) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&blocked), None) {
        report(format_args!(
            "tandem helper watchdog: cannot block termination signals: {error}"
        ));
    }

    let mut watched = Watched::default();
    let mut lines = BufReader::new(std::io::stdin().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bytes, not `read_line`: a line that is not UTF-8 is ignored like any other garbage
        // instead of ending the watch early.
        match lines.read_until(b'\n', &mut line) {
            // End of file: the server is gone (or let go of the pipe at exit).
            Ok(0) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                match Message::parse(text.trim_end()) {
                    Some(message) => watched.apply(message),
                    None => report(format_args!(
                        "tandem helper watchdog: ignoring line {text:?}"
                    )),
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                report(format_args!(
                    "tandem helper watchdog: reading from the server failed: {error}"
                ));
                break;
            }
        }
    }
    let outcome = sweep(&watched, token);
    if outcome.killed > 0 {
        // Said on the server's stderr: after a crash, whoever reads it learns where its
        // children went; after an orderly exit, that something had escaped its group.
        report(format_args!(
            "tandem helper watchdog: the server is gone; killed {} process(es) it had started",
            outcome.killed
        ));
    }
    if outcome.survivors > 0 {
        report(format_args!(
            "tandem helper watchdog: {} processes of the server were still running after {:?} \
             of killing",
            outcome.survivors, SWEEP_LIMIT
        ));
        return 1;
    }
    0
}

/// What a sweep did.
#[derive(Debug, Default)]
struct SweepOutcome {
    /// Processes that were sent `SIGKILL` at least once.
    killed: usize,
    /// Covered processes still alive when the sweep gave up.
    survivors: usize,
}

/// Kills every process `watched` covers, again and again until a scan finds none alive or
/// [`SWEEP_LIMIT`] has passed.
fn sweep(watched: &Watched, token: &str) -> SweepOutcome {
    let me = Pid::this();
    let started = Instant::now();
    let mut killed: HashSet<Pid> = HashSet::new();
    loop {
        let alive: Vec<Pid> = all_processes()
            .into_iter()
            .filter(|process| !process.zombie && process.pid != me)
            .filter(|process| watched.covers(process, token))
            .map(|process| process.pid)
            .collect();
        if alive.is_empty() {
            return SweepOutcome {
                killed: killed.len(),
                survivors: 0,
            };
        }
        if started.elapsed() >= SWEEP_LIMIT {
            return SweepOutcome {
                killed: killed.len(),
                survivors: alive.len(),
            };
        }
        // The groups first, in one call each: their members stop forking at once.
        for group in &watched.groups {
            match killpg(Pid::from_raw(*group), Signal::SIGKILL) {
                Ok(()) | Err(Errno::ESRCH) => {}
                Err(error) => report(format_args!(
                    "tandem helper watchdog: killing group {group}: {error}"
                )),
            }
        }
        for pid in alive {
            match kill(pid, Signal::SIGKILL) {
                Ok(()) | Err(Errno::ESRCH) => {}
                Err(error) => report(format_args!(
                    "tandem helper watchdog: killing {pid}: {error}"
                )),
            }
            killed.insert(pid);
        }
        std::thread::sleep(SWEEP_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_garbage_is_refused() {
        for message in [
            Message::Watch(ScopeKind::Group, 42),
            Message::Watch(ScopeKind::Session, 7),
            Message::Forget(ScopeKind::Group, 42),
            Message::Forget(ScopeKind::Session, 99_999),
        ] {
            let line = message.encode();
            assert!(line.ends_with('\n'));
            assert_eq!(Message::parse(line.trim_end()), Some(message), "{line:?}");
        }
        // Ids 0, 1 and negatives would make killpg hit the caller's own group or init.
        for garbage in [
            "", "+g", "+g 0", "+g 1", "+g -5", "*g 3", "+x 3", "+gg 3", "+g 3x",
        ] {
            assert_eq!(Message::parse(garbage), None, "{garbage:?}");
        }
    }

    #[test]
    fn the_marker_matches_any_token_of_the_chain_and_nothing_else() {
        assert!(entry_carries_token(b"TANDEM_SUPERVISOR=abc", "abc"));
        assert!(entry_carries_token(b"TANDEM_SUPERVISOR=outer:abc", "abc"));
        assert!(entry_carries_token(b"TANDEM_SUPERVISOR=abc:inner", "abc"));
        assert!(!entry_carries_token(b"TANDEM_SUPERVISOR=abcd", "abc"));
        assert!(!entry_carries_token(b"TANDEM_SUPERVISOR_X=abc", "abc"));
        assert!(!entry_carries_token(b"OTHER=abc", "abc"));
        assert!(valid_token("0123abcdef"));
        assert!(!valid_token(""));
        assert!(!valid_token("a:b"));
        assert!(!valid_token("a=b"));
    }

    #[test]
    fn a_sweep_kills_a_marked_process_that_left_its_group() {
        // A child with the token in its environment, in a session of its own (as `setsid`
        // leaves it): neither a registered group nor a registered session covers it.
        let token = format!("sweeptest{}", std::process::id());
        let mut child = std::process::Command::new("setsid")
            .args(["sleep", "600"])
            .env(MARKER_ENV, format!("unrelated:{token}"))
            .spawn()
            .expect("spawn setsid sleep");
        // A sweep reads /proc/PID/environ; read while the child is still being exec'd, it
        // lacks the marker and the sweep rightly spares the process. Sweep once the marker
        // shows, as it does for any process that has been running for more than an instant.
        let marker = format!("{MARKER_ENV}=unrelated:{token}");
        let environ = format!("/proc/{}/environ", child.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read(&environ).is_ok_and(|environ| {
            environ
                .split(|byte| *byte == 0)
                .any(|entry| entry == marker.as_bytes())
        }) {
            if std::time::Instant::now() >= deadline {
                let _ = child.kill();
                panic!("the child's environment never showed the marker");
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let outcome = sweep(&Watched::default(), &token);
        assert_eq!(outcome.survivors, 0);
        assert!(outcome.killed >= 1, "{outcome:?}");
        let status = child.wait().expect("reap");
        use std::os::unix::process::ExitStatusExt as _;
        // `setsid` execs `sleep` when it is not a group leader, so the child itself died.
        assert_eq!(status.signal(), Some(Signal::SIGKILL as i32), "{status:?}");
    }
}
