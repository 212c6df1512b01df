//! What the user approved "for the session" (`acceptForSession`) on a loaded thread: the
//! exact commands, and the files outside the writable roots, that later turns of the thread
//! run or change without asking again, as the reference's `approved for session` does. It
//! lives as long as the thread stays loaded (a session), never in the store: a thread
//! resumed later asks again.
//!
//! Bounded: past [`MAX_SESSION_APPROVALS`] entries of a kind, further ones are not
//! remembered (they are asked for again), so a client cannot grow a thread's memory without
//! limit.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The most commands, and the most files, one thread remembers as approved for the session.
pub(crate) const MAX_SESSION_APPROVALS: usize = 1024;

/// The approvals of one loaded thread.
#[derive(Debug, Default)]
pub(crate) struct SessionApprovals {
    commands: HashSet<String>,
    paths: HashSet<PathBuf>,
}

impl SessionApprovals {
    /// Whether `command` (exactly as it would run) was approved for the session.
    pub(crate) fn allows_command(&self, command: &str) -> bool {
        self.commands.contains(command)
    }

    /// Remembers `command` as approved for the session.
    pub(crate) fn approve_command(&mut self, command: &str) {
        if self.commands.len() < MAX_SESSION_APPROVALS {
            self.commands.insert(command.to_owned());
        }
    }

    /// Whether every one of `paths` (resolved, as the sandbox checks them) was approved for
    /// the session.
    pub(crate) fn allows_paths<'a>(&self, mut paths: impl Iterator<Item = &'a Path>) -> bool {
        paths.all(|path| self.paths.contains(path))
    }

    /// Remembers `paths` as approved for the session.
    pub(crate) fn approve_paths<'a>(&mut self, paths: impl Iterator<Item = &'a Path>) {
        for path in paths {
            if self.paths.len() >= MAX_SESSION_APPROVALS {
                return;
            }
            self.paths.insert(path.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_was_approved_is_allowed() {
        let mut approvals = SessionApprovals::default();
        assert!(!approvals.allows_command("ls"));
        approvals.approve_command("ls");
        assert!(approvals.allows_command("ls"));
        assert!(!approvals.allows_command("ls -la"), "exactly the command");

        let a = Path::new("/etc/a");
        let b = Path::new("/etc/b");
        approvals.approve_paths([a].into_iter());
        assert!(approvals.allows_paths([a].into_iter()));
        assert!(!approvals.allows_paths([a, b].into_iter()), "every path");
    }

    #[test]
    fn the_memory_is_bounded() {
        let mut approvals = SessionApprovals::default();
        for n in 0..MAX_SESSION_APPROVALS + 10 {
            approvals.approve_command(&format!("echo {n}"));
        }
        assert_eq!(approvals.commands.len(), MAX_SESSION_APPROVALS);
        assert!(!approvals.allows_command(&format!("echo {}", MAX_SESSION_APPROVALS + 5)));
    }
}
