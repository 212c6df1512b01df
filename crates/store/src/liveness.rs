//! Whether the server holding a writer lease is gone (issue 27), exactly, for servers that share
//! a `TANDEM_HOME` on one machine.
//!
//! Every server that keeps leases holds an exclusive `flock` on a file of its own,
//! `TANDEM_HOME/lease-owners/<pid>-<suffix>.lock` (the file holds the owner's full name), for as
//! long as its store lives. The kernel drops the lock when the process dies, however it died
//! (`kill -9`, the OOM killer, an abort), so another server asking "is this owner gone?" gets
//! an exact answer by trying a shared lock without blocking: it succeeds only when the owner
//! no longer holds its own. A pid check cannot tell a reused pid from the owner; the lock can.
//!
//! Where the owner's file is not in this server's directory (another home on this machine, an
//! older Tandem, a directory that could not be written), the answer falls back to what the pid
//! says: no such process (or only its zombie) is gone. Owners on other machines are never known
//! to be gone here: only their lease's expiry tells. A wrong "gone" cannot corrupt a thread:
//! the taker raises the lease's epoch, which fences every later write of the old owner.
//!
//! Files of dead owners are removed by the next server that opens the store or renews its
//! leases in the home ([`dead_owners`]), after their leases were released on their behalf.

use std::collections::HashSet;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use super::StoreError;

/// The directory under `TANDEM_HOME` that holds the owners' lock files.
pub const OWNERS_DIR: &str = "lease-owners";

/// What a lock file is named with, once locked (a file still being set up has another name).
const LOCK_SUFFIX: &str = ".lock";

/// The name of the machine, as owners name it.
pub(crate) fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// This server's proof of life: the locked file, removed when the server retires.
#[derive(Debug)]
pub(crate) struct OwnerLock {
    held: Mutex<Option<(File, PathBuf)>>,
}

impl OwnerLock {
    /// Creates and locks `owner`'s file in `dir`. A directory that cannot be written is
    /// logged and leaves the owner without a file: other servers then judge it by its pid.
    pub(crate) fn take(dir: &Path, owner: &str) -> Self {
        let held = match lock_file(dir, owner) {
            Ok(held) => Some(held),
            Err(error) => {
                tracing::warn!(
                    dir = %dir.display(),
                    %error,
                    "cannot create this server's lease-owner lock file; servers sharing the \
                     home will judge whether it is gone by its pid"
                );
                None
            }
        };
        Self {
            held: Mutex::new(held),
        }
    }

    /// Removes the file, then gives up the lock: from here on this owner counts as gone.
    pub(crate) fn release(&self) {
        let held = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((file, path)) = held {
            if let Err(error) = std::fs::remove_file(&path) {
                tracing::debug!(path = %path.display(), %error, "cannot remove the lock file");
            }
            drop(file);
        }
    }
}

impl Drop for OwnerLock {
    fn drop(&mut self) {
        self.release();
    }
}

/// The file name of `owner` (`host/pid/suffix`), or `None` for a name no Tandem gives.
fn file_name(owner: &str) -> Option<String> {
    let mut parts = owner.split('/');
    let (_host, pid, suffix) = (parts.next()?, parts.next()?, parts.next()?);
    let plain = |part: &str| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric());
    (parts.next().is_none() && plain(pid) && plain(suffix))
        .then(|| format!("{pid}-{suffix}{LOCK_SUFFIX}"))
}

/// Where `owner`'s lock file is in `dir` (`None` for a name no Tandem gives).
pub(crate) fn lock_file_of(dir: &Path, owner: &str) -> Option<PathBuf> {
    file_name(owner).map(|name| dir.join(name))
}

/// Creates the file under a temporary name, locks it, then renames it into place, so that a
/// file under its final name is always locked by its live owner or left by a dead one.
fn lock_file(dir: &Path, owner: &str) -> std::io::Result<(File, PathBuf)> {
    let name = file_name(owner).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{owner} is not a host/pid/suffix owner name"),
        )
    })?;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(&name);
    let setup = dir.join(format!("{name}.new"));
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&setup)?;
    file.try_lock().map_err(std::io::Error::from)?;
    file.write_all(owner.as_bytes())?;
    std::fs::rename(&setup, &path)?;
    Ok((file, path))
}

/// What the lock file of an owner says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// The owner's lock is free: its process is gone (or it retired).
    Gone,
    /// The owner holds its lock.
    Alive,
    /// No readable lock file of this owner here.
    Unknown,
}

/// Opens `path` and tries a shared lock on it without waiting. Shared, so that servers probing
/// the same owner at the same time never take each other for it.
fn probe_path(path: &Path, owner: Option<&str>) -> Probe {
    let Ok(mut file) = OpenOptions::new().read(true).write(true).open(path) else {
        return Probe::Unknown;
    };
    if let Some(owner) = owner {
        let mut named = String::new();
        if file.read_to_string(&mut named).is_err() || named != owner {
            return Probe::Unknown;
        }
    }
    match file.try_lock_shared() {
        Ok(()) => Probe::Gone,
        Err(TryLockError::WouldBlock) => Probe::Alive,
        Err(TryLockError::Error(_)) => Probe::Unknown,
    }
}

/// Whether the server that holds a lease as `owner` is known to be gone: it ran on this
/// machine and its lock file in `dir` is no longer locked; without its file here, no process
/// with its pid runs (or only the zombie). The one rule every lease decision applies (taking a
/// lease, a write on a thread this server does not lease, recovery on open).
pub(crate) fn owner_is_gone(dir: Option<&Path>, owner: &str) -> bool {
    let mut parts = owner.split('/');
    let (Some(host), Some(pid)) = (parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    if host != this_host() {
        return false;
    }
    if let Some(path) = dir.and_then(|dir| lock_file_of(dir, owner)) {
        match probe_path(&path, Some(owner)) {
            Probe::Gone => return true,
            Probe::Alive => return false,
            Probe::Unknown => {}
        }
    }
    if pid == std::process::id() {
        // A server of this process without a file (an embedder may run several, one after
        // the other): gone once its store is.
        return !live_owners().contains(owner);
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesized command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// A dead owner's lock file, found by [`dead_owners`].
#[derive(Debug)]
pub(crate) struct DeadOwner {
    /// The owner's name, as lease rows hold it.
    pub(crate) owner: String,
    path: PathBuf,
}

impl DeadOwner {
    /// Removes the file, once nothing in the store names the owner as live any more.
    pub(crate) fn remove(self) {
        if let Err(error) = std::fs::remove_file(&self.path)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::debug!(path = %self.path.display(), %error, "cannot remove a dead owner's lock file");
        }
    }
}

/// The lock files in `dir` whose owner is gone (their lock is free), and files left half set
/// up by a server that died while creating them (removed here at once).
pub(crate) fn dead_owners(dir: &Path) -> Vec<DeadOwner> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dead = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
            continue;
        };
        if name.ends_with(".new") {
            if probe_path(&path, None) == Probe::Gone {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        if !name.ends_with(LOCK_SUFFIX) {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(&path) else {
            continue;
        };
        if file_name(&owner).as_deref() == Some(name)
            && probe_path(&path, Some(&owner)) == Probe::Gone
        {
            dead.push(DeadOwner { owner, path });
        }
    }
    dead
}

/// Removes the files of `dead` once the store released their leases (`released`: how many),
/// or keeps them when it could not: the rule still applies to each lease when it is needed,
/// and the next sweep tries again.
pub(crate) fn after_release(dead: Vec<DeadOwner>, released: Result<usize, StoreError>) {
    match released {
        Ok(released) => {
            tracing::info!(
                owners = dead.len(),
                leases = released,
                "released the writer leases of servers that are gone"
            );
            dead.into_iter().for_each(DeadOwner::remove);
        }
        Err(error) => {
            tracing::warn!(%error, "cannot release the leases of servers that are gone");
        }
    }
}

/// The owners of this process's stores that keep leases.
pub(crate) fn live_owners() -> MutexGuard<'static, HashSet<String>> {
    static OWNERS: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    OWNERS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(suffix: &str) -> String {
        format!("{}/{}/{suffix}", this_host(), std::process::id())
    }

    #[test]
    fn an_owner_is_gone_exactly_when_its_lock_is_free() {
        let dir = tempfile::tempdir().expect("temp dir");
        let alive = owner("0a1b2c3d");
        live_owners().insert(alive.clone());
        let lock = OwnerLock::take(dir.path(), &alive);
        // Same pid, listed live: only the lock file can say, and it says alive.
        assert!(!owner_is_gone(Some(dir.path()), &alive));
        assert!(dead_owners(dir.path()).is_empty());
        // A file nobody locks, as a server killed with -9 leaves it: gone, although the pid
        // (this process's) runs and the owner is still listed live.
        drop(lock);
        let crashed = owner("deadbeef");
        live_owners().insert(crashed.clone());
        let path = dir.path().join(file_name(&crashed).expect("name"));
        std::fs::write(&path, &crashed).expect("write");
        assert!(owner_is_gone(Some(dir.path()), &crashed));
        let dead = dead_owners(dir.path());
        assert_eq!(
            dead.iter().map(|d| d.owner.as_str()).collect::<Vec<_>>(),
            [crashed.as_str()]
        );
        dead.into_iter().for_each(DeadOwner::remove);
        assert!(!path.exists());
        // Without a file, the pid decides: this process runs, and the owner is listed live.
        assert!(!owner_is_gone(Some(dir.path()), &crashed));
        live_owners().remove(&crashed);
        live_owners().remove(&alive);
        assert!(owner_is_gone(Some(dir.path()), &crashed));
        // Another machine's owner is never known to be gone here.
        assert!(!owner_is_gone(
            Some(dir.path()),
            "some-other-host.example/1/00000000"
        ));
    }

    #[test]
    fn a_retired_owner_leaves_no_file_and_counts_as_gone() {
        let dir = tempfile::tempdir().expect("temp dir");
        let me = owner("c0ffee00");
        let lock = OwnerLock::take(dir.path(), &me);
        let path = dir.path().join(file_name(&me).expect("name"));
        assert!(path.exists());
        assert!(!owner_is_gone(Some(dir.path()), &me));
        lock.release();
        assert!(!path.exists());
        assert!(owner_is_gone(Some(dir.path()), &me), "not listed live");
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
