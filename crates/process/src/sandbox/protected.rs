//! Which paths beneath the writable roots of a policy stay read-only (docs/security.md, "What
//! stays read-only"): the top-level `.git` of every writable root, as the reference's
//! `WritableRoot.read_only_subpaths` keeps it, and the server's own home.
//!
//! A command that could write there would plant a hook (or `core.fsmonitor`, `core.pager`)
//! that git runs later outside any sandbox, or rewrite the server's configuration and thread
//! store. This module only names the paths, and probes (in a process of the helper program)
//! whether a mount namespace can keep them; the `sandbox` helper has the kernel enforce them
//! ([`crate::helper::read_only`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::program::HelperProgram;

/// The subcommand that tries a mount namespace with a read-only bind mount and exits 0 when
/// it works (1 with the reason on stderr when it does not).
pub(crate) const PROBE_SUBCOMMAND: &str = "sandbox-probe";

/// Whether a mount namespace with a read-only bind mount works here, tried in a process of
/// `helper`; `Err` says why not.
pub(crate) fn probe_mount_namespace(helper: &HelperProgram) -> Result<(), String> {
    let temp = std::env::temp_dir();
    let target = if temp.is_dir() {
        temp
    } else {
        PathBuf::from("/")
    };
    let output = helper
        .command(PROBE_SUBCOMMAND, [target])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|error| format!("cannot run the helper {}: {error}", helper.path().display()))?;
    if output.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    Err(if said.is_empty() {
        format!("the probe ended with {}", output.status)
    } else {
        said
    })
}

/// The paths to keep read-only beneath `writable` (canonical roots): each root's `.git`
/// (directory, file or symlink) with the git directory it points to, and `home`. Only paths
/// strictly beneath a root are kept, as the rest is read-only already; a writable root at or
/// beneath one of them was opened on purpose and stays writable (the helper re-opens it).
pub(crate) fn read_only_subpaths(writable: &[PathBuf], home: Option<&Path>) -> Vec<PathBuf> {
    let mut protected = Vec::new();
    for root in writable {
        let git = root.join(".git");
        let Ok(metadata) = std::fs::symlink_metadata(&git) else {
            continue;
        };
        if metadata.file_type().is_symlink() {
            // The link itself (it could be pointed elsewhere) and the directory it names.
            protected.extend(std::fs::canonicalize(&git).ok());
        } else if metadata.is_file() {
            // A worktree's or submodule's `gitdir:` pointer: the git directory it names holds
            // the config, and its common directory (a worktree's main repository) the hooks.
            if let Some(git_dir) = pointed_git_dir(root, &git) {
                protected.extend(common_dir(&git_dir));
                protected.push(git_dir);
            }
        }
        protected.push(git);
    }
    protected.extend(home.and_then(|home| std::fs::canonicalize(home).ok()));
    protected.retain(|path| {
        writable
            .iter()
            .any(|root| path.starts_with(root) && path != root)
    });
    protected.sort();
    // Sorted, a path comes right after the ones it lies beneath: keeping those covers it.
    let mut kept: Vec<PathBuf> = Vec::with_capacity(protected.len());
    for path in protected {
        if !kept.iter().any(|outer| path.starts_with(outer)) {
            kept.push(path);
        }
    }
    kept
}

/// The directory a `.git` file's `gitdir: PATH` line names (relative to `root`), if it exists.
fn pointed_git_dir(root: &Path, git_file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_file).ok()?;
    let target = text.lines().find_map(|line| line.strip_prefix("gitdir:"))?;
    std::fs::canonicalize(root.join(target.trim())).ok()
}

/// The common directory of a worktree's git directory (its `commondir` file), if it has one.
fn common_dir(git_dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_dir.join("commondir")).ok()?;
    std::fs::canonicalize(git_dir.join(text.trim())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_git_in_every_form_and_the_home_beneath_a_root_are_kept() {
        let base = tempfile::tempdir().expect("temp dir");
        let base = std::fs::canonicalize(base.path()).expect("canonical");
        let [repo, worktree, inner, linked, plain] =
            ["repo", "worktree", "inner", "linked", "plain"].map(|name| base.join(name));
        for dir in [
            repo.join(".git/worktrees/wt"),
            repo.join("nested/.git"),
            worktree.clone(),
            inner.join(".gitdata"),
            linked.join("real-git"),
            plain.clone(),
        ] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        // A worktree: its `.git` names its git directory, whose `commondir` is the main one.
        let worktree_git_dir = repo.join(".git/worktrees/wt");
        let pointer = format!("gitdir: {}\n", worktree_git_dir.display());
        std::fs::write(worktree.join(".git"), pointer).expect("gitdir pointer");
        std::fs::write(worktree_git_dir.join("commondir"), "../..\n").expect("commondir");
        // A pointer relative to its root, to a git directory inside that root.
        std::fs::write(inner.join(".git"), "gitdir: .gitdata\n").expect("gitdir pointer");
        std::os::unix::fs::symlink("real-git", linked.join(".git")).expect("symlink");
        let home = repo.join("tandem-home");
        std::fs::create_dir_all(&home).expect("home");

        let roots = [&repo, &worktree, &inner, &linked, &plain].map(|root| root.to_path_buf());
        assert_eq!(
            read_only_subpaths(&roots, Some(&home)),
            vec![
                inner.join(".git"),
                inner.join(".gitdata"),
                linked.join(".git"),
                linked.join("real-git"),
                // The worktree's git directory lies beneath it: covered.
                repo.join(".git"),
                home.clone(),
                worktree.join(".git"),
            ]
        );

        // The worktree's main repository is no root's top-level `.git` here, but the worktree
        // names it and it lies beneath a root.
        assert_eq!(
            read_only_subpaths(&[base.clone(), worktree.clone()], None),
            vec![repo.join(".git"), worktree.join(".git")]
        );

        // A root at or beneath a protected path was opened on purpose, and outside every root
        // nothing needs keeping. A `.git` below the top level is not kept (`repo/nested/.git`
        // above) unless its repository is a root of its own.
        assert_eq!(
            read_only_subpaths(&[home.clone(), plain.clone()], Some(&home)),
            Vec::<PathBuf>::new()
        );
        assert_eq!(
            read_only_subpaths(&[repo.join("nested")], Some(&home)),
            vec![repo.join("nested/.git")]
        );
    }
}
