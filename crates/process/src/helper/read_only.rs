//! Keeping paths beneath a command's writable roots read-only (the top-level `.git` of each
//! root, the server's home: [`SandboxSpec::read_only`]), enforced by the kernel, in one of
//! two ways ([`ReadOnlySubpaths`]):
//!
//! - a mount namespace of the command's own, in which each path is bind-mounted onto itself
//!   read-only, as bubblewrap does: over a user namespace that maps the command's uid and gid
//!   to themselves when the helper may not create a mount namespace directly (an
//!   unprivileged server). Landlock is applied on top, so a write needs both;
//! - where that is blocked, Landlock alone: it cannot take a subdirectory back out of a
//!   granted tree, so such a root is granted entry by entry, all but the protected ones
//!   ([`writable_grants`]).
//!
//! This module also answers the server's probe (`__tandem-helper sandbox-probe DIR`), run in
//! a process of its own because the server's must never change namespaces.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};
use nix::unistd::{getegid, geteuid};

use super::report;
use crate::sandbox::{PROBE_SUBCOMMAND, ReadOnlySubpaths, SandboxSpec};

/// `ST_RELATIME` of `statvfs`, which the libc crate leaves out on some targets (musl).
const ST_RELATIME: FsFlags = FsFlags::from_bits_retain(0x1000);

/// The probe's `main`: `sandbox-probe DIR`.
pub(crate) fn probe_main(args: &[OsString]) -> i32 {
    let [dir] = args else {
        report(format_args!("{PROBE_SUBCOMMAND}: expected one directory"));
        return super::HELPER_USAGE_EXIT_CODE;
    };
    let entered = enter_mount_namespace().map_err(|error| error.to_string());
    match entered.and_then(|()| bind_onto_itself(Path::new(dir), true)) {
        Ok(()) => 0,
        Err(error) => {
            report(format_args!("{error}"));
            1
        }
    }
}

/// Why the mount namespace could not keep the paths read-only.
#[derive(Debug, thiserror::Error)]
pub(super) enum MountError {
    /// Nothing that matters changed: Landlock alone can still do it.
    #[error("{0}")]
    Unavailable(String),
    /// The process is in a user namespace without its uid or gid mapped, where files cannot
    /// be created with an owner: the command must not run.
    #[error(
        "{0}: the user namespace is unusable; ask for `danger-full-access`, or run the server \
         where user namespaces are blocked entirely, so that Landlock alone is used"
    )]
    Unmapped(String),
}

/// Keeps `spec.read_only` read-only as `spec.read_only_by` says; returns the paths Landlock
/// must leave out of the writable roots' grants (see [`writable_grants`]). A mount namespace
/// that cannot be had falls back to Landlock alone, saying so on stderr; one that broke the
/// process is an error.
pub(super) fn keep_read_only(
    spec: &SandboxSpec,
    report_prefix: &str,
) -> Result<Vec<PathBuf>, MountError> {
    match spec.read_only_by {
        None => Ok(Vec::new()),
        Some(ReadOnlySubpaths::LandlockPerEntry) => Ok(spec.read_only.clone()),
        Some(ReadOnlySubpaths::MountNamespace) => match mount_read_only(spec) {
            Ok(left) => Ok(left),
            Err(MountError::Unavailable(error)) => {
                report(format_args!(
                    "{report_prefix} {error}; .git is kept read-only by Landlock alone instead, \
                     so no entry can be created, removed or renamed at the top of a writable \
                     root that holds one (docs/security.md)"
                ));
                Ok(spec.read_only.clone())
            }
            Err(error) => Err(error),
        },
    }
}

/// Enters a mount namespace and bind-mounts each of `spec.read_only` read-only; writable
/// roots beneath one of them get their write access back. Returns the paths a mount cannot
/// hold: symbolic links (a mount lands on the target and leaves the link replaceable).
fn mount_read_only(spec: &SandboxSpec) -> Result<Vec<PathBuf>, MountError> {
    enter_mount_namespace()?;
    let (mut mounted, mut left) = (Vec::new(), Vec::new());
    for path in &spec.read_only {
        match std::fs::symlink_metadata(path) {
            Ok(metadata) if metadata.file_type().is_symlink() => left.push(path.clone()),
            Ok(_) => {
                bind_onto_itself(path, true).map_err(MountError::Unavailable)?;
                mounted.push(path);
            }
            // Gone since the server looked: nothing left to protect.
            Err(error) if error.kind() == ErrorKind::NotFound => {}
            Err(error) => {
                let error = format!("cannot look at {}: {error}", path.display());
                return Err(MountError::Unavailable(error));
            }
        }
    }
    for root in &spec.writable {
        if mounted.iter().any(|path| root.starts_with(path)) {
            bind_onto_itself(root, false).map_err(MountError::Unavailable)?;
        }
    }
    Ok(left)
}

/// Moves this process into a mount namespace of its own whose mounts propagate nowhere. As
/// the same uid and gid: a user namespace is added only when a mount namespace alone is not
/// allowed, and it maps both to themselves.
fn enter_mount_namespace() -> Result<(), MountError> {
    let (uid, gid) = (geteuid(), getegid());
    match unshare(CloneFlags::CLONE_NEWNS) {
        Ok(()) => {}
        Err(Errno::EPERM) => {
            unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(|error| {
                MountError::Unavailable(format!(
                    "no mount namespace: creating a user namespace failed ({error}); user \
                     namespaces are blocked here (a seccomp profile, an AppArmor restriction \
                     or a sysctl)"
                ))
            })?;
            // An unprivileged process may write its gid map only once it gave up setgroups;
            // it keeps its supplementary groups. Kernels before 3.19 have no such file.
            match std::fs::write("/proc/self/setgroups", "deny") {
                Err(error) if error.kind() != ErrorKind::NotFound => {
                    let error = format!("cannot deny setgroups in the user namespace: {error}");
                    return Err(MountError::Unmapped(error));
                }
                _ => {}
            }
            for (file, id) in [("uid_map", uid.as_raw()), ("gid_map", gid.as_raw())] {
                std::fs::write(format!("/proc/self/{file}"), format!("{id} {id} 1\n")).map_err(
                    |error| {
                        let error = format!("cannot write the user namespace's {file}: {error}");
                        MountError::Unmapped(error)
                    },
                )?;
            }
        }
        Err(error) => {
            let error = format!("no mount namespace: unshare failed ({error})");
            return Err(MountError::Unavailable(error));
        }
    }
    // Until this holds, a mount would propagate to the server's namespace: none is made.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|error| {
        MountError::Unavailable(format!("cannot make the mount namespace private: {error}"))
    })
}

/// Bind-mounts `path` onto itself, read-only or writable, keeping the flags of the mount it
/// lies on (`nosuid`, `nodev`, `noexec`, atime): a user namespace may not change them.
fn bind_onto_itself(path: &Path, read_only: bool) -> Result<(), String> {
    let failed = |what: &str, error: Errno| format!("cannot {what} {}: {error}", path.display());
    mount(
        Some(path),
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|error| failed("bind-mount", error))?;
    let current = statvfs(path)
        .map_err(|error| failed("read the mount flags of", error))?
        .flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT;
    if read_only {
        flags |= MsFlags::MS_RDONLY;
    }
    for (kept, flag) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if current.contains(kept) {
            flags |= flag;
        }
    }
    // Without an atime flag the kernel would pick relatime, which a user namespace may not
    // put on a strictatime mount.
    if !current.intersects(FsFlags::ST_NOATIME | ST_RELATIME) {
        flags |= MsFlags::MS_STRICTATIME;
    }
    mount(None::<&str>, path, None::<&str>, flags, None::<&str>).map_err(|error| {
        failed(
            if read_only {
                "remount read-only"
            } else {
                "remount writable"
            },
            error,
        )
    })
}

/// What Landlock grants write access beneath: each writable root, except that a root with an
/// `excluded` path strictly beneath it is granted entry by entry, leaving that path out (and
/// the same again in each directory on the way to it). Symbolic links among those entries
/// are left out too, since a grant would follow them: a write through one is decided by
/// where it leads. A root at or beneath an excluded path keeps its own grant.
pub(super) fn writable_grants(
    writable: &[PathBuf],
    excluded: &[PathBuf],
) -> Result<Vec<PathBuf>, String> {
    let mut grants = Vec::new();
    for root in writable {
        split(root, excluded, &mut grants)?;
    }
    Ok(grants)
}

fn split(dir: &Path, excluded: &[PathBuf], grants: &mut Vec<PathBuf>) -> Result<(), String> {
    let beneath: Vec<PathBuf> = excluded
        .iter()
        .filter(|path| path.starts_with(dir) && path.as_path() != dir)
        .cloned()
        .collect();
    if beneath.is_empty() {
        grants.push(dir.to_path_buf());
        return Ok(());
    }
    let unreadable = |error: std::io::Error| {
        format!(
            "cannot list {} to keep {} read-only: {error}",
            dir.display(),
            beneath[0].display()
        )
    };
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let path = entry.path();
        if beneath.contains(&path) || entry.file_type().map_err(unreadable)?.is_symlink() {
            continue;
        }
        split(&path, &beneath, grants)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_with_a_protected_path_is_granted_entry_by_entry_without_it_or_links() {
        let base = tempfile::tempdir().expect("temp dir");
        let root = std::fs::canonicalize(base.path()).expect("canonical");
        for dir in [".git/hooks", "src", "home/state", "home/other"] {
            std::fs::create_dir_all(root.join(dir)).expect("mkdir");
        }
        std::fs::write(root.join("Cargo.toml"), "").expect("file");
        std::os::unix::fs::symlink("/etc", root.join("escape")).expect("symlink");
        let other = root.join("src");
        let excluded = vec![root.join(".git"), root.join("home/state")];
        let mut grants =
            writable_grants(&[root.clone(), other.clone()], &excluded).expect("grants");
        grants.sort();
        let mut expected = vec![
            root.join("Cargo.toml"),
            root.join("home/other"),
            root.join("src"),
            other,
        ];
        expected.sort();
        assert_eq!(grants, expected);

        // A root beneath an excluded path keeps its grant; one with nothing beneath is whole.
        let hooks = root.join(".git/hooks");
        assert_eq!(
            writable_grants(std::slice::from_ref(&hooks), &excluded).expect("grants"),
            vec![hooks]
        );
        assert_eq!(
            writable_grants(std::slice::from_ref(&root), &[]).expect("grants"),
            vec![root]
        );
    }
}
