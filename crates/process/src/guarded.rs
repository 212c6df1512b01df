//! A process group started outside [`crate::ProcessManager`] (an MCP server, which the server
//! talks to over its pipes for as long as it runs) guarded like the manager's children: it
//! leads its own group, carries the watchdog's marker, is registered with the watchdog so it
//! dies with this process however it dies, and is killed when its [`GuardedGroup`] drops.

use nix::unistd::Pid;

use crate::group::ProcessScope;
use crate::guard;
use crate::helper::watchdog::MARKER_ENV;

/// A running child's process group, killed (`SIGKILL` to the whole group) when dropped.
#[derive(Debug)]
pub struct GuardedGroup {
    scope: ProcessScope,
}

impl GuardedGroup {
    /// Prepares `command` before it is spawned: the child leads a process group of its own,
    /// and gets the watchdog marker (starting the watchdog if a helper program is enabled).
    /// Call it after any `env_clear`, which would drop the marker.
    pub fn prepare(command: &mut tokio::process::Command) {
        command.process_group(0);
        if let Some(marker) = guard::prepare_child() {
            command.env(MARKER_ENV, marker);
        }
    }

    /// Registers the group that the child `pid` (spawned from a command passed to
    /// [`GuardedGroup::prepare`]) leads with the watchdog.
    pub fn watch(pid: u32) -> Self {
        let scope = ProcessScope {
            leader: Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)),
            session: false,
        };
        guard::watch(scope);
        Self { scope }
    }

    /// The group's id (the leader's pid).
    pub fn id(&self) -> i32 {
        self.scope.leader.as_raw()
    }
}

impl Drop for GuardedGroup {
    fn drop(&mut self) {
        self.scope.kill();
        // SIGKILL cannot be caught, so the group is gone but for zombies its reaper collects;
        // the watchdog must not signal the id again once it may be reused.
        guard::forget(self.scope);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt as _;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn dropping_the_group_kills_the_child_and_its_group() {
        let mut command = tokio::process::Command::new("sh");
        command.args(["-c", "sleep 30 & exec sleep 30"]);
        GuardedGroup::prepare(&mut command);
        let mut child = command.spawn().expect("spawn sh");
        let group = GuardedGroup::watch(child.id().expect("pid"));
        assert_eq!(
            group.id(),
            i32::try_from(child.id().expect("pid")).expect("pid")
        );
        drop(group);
        let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .expect("the child dies at once")
            .expect("wait");
        assert_eq!(status.signal(), Some(9), "{status:?}");
    }
}
