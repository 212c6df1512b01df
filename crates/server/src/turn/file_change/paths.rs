//! Where a path a patch names really is: made absolute against the thread's cwd, `..` applied,
//! and resolved through symbolic links (its existing part), so that the approval decision and
//! the writes concern the file that would change, not the name the model wrote.

use std::path::{Component, Path, PathBuf};

/// Why a path of a patch cannot be used.
#[derive(Debug, thiserror::Error)]
pub(super) enum PathError {
    /// An existing part of the path is a link that leads nowhere (or cannot be followed).
    #[error(
        "`{written}` cannot be resolved: {source}; name a file whose directories exist or can \
         be created"
    )]
    Unresolvable {
        /// The path as the patch wrote it.
        written: String,
        /// What resolving it said.
        #[source]
        source: std::io::Error,
    },
}

/// One path of a patch, in its three forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ResolvedPath {
    /// What the diffs show: relative to the cwd when the file lies beneath it, else absolute.
    pub(super) display: String,
    /// Absolute, `..` applied, links not followed: what the item reports.
    pub(super) absolute: PathBuf,
    /// Absolute with every existing link followed: what is checked and written.
    pub(super) real: PathBuf,
}

/// `written` made absolute against `cwd`, `..` applied, links not followed: where a path is
/// shown before the disk is read.
pub(super) fn absolute(cwd: &Path, written: &str) -> PathBuf {
    normalize(&cwd.join(written))
}

/// Resolves `written` (relative to `cwd`, or absolute).
pub(super) fn resolve(cwd: &Path, written: &str) -> Result<ResolvedPath, PathError> {
    let absolute = absolute(cwd, written);
    let real = real_path(&absolute).map_err(|source| PathError::Unresolvable {
        written: written.to_owned(),
        source,
    })?;
    let display = match absolute.strip_prefix(normalize(cwd)) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
        _ => absolute.display().to_string(),
    };
    Ok(ResolvedPath {
        display,
        absolute,
        real,
    })
}

/// `path` with `.` dropped and `..` applied lexically (`..` at the root stays at the root).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The canonical form of `absolute`'s longest existing prefix, with the rest appended: a file
/// that does not exist yet is placed where its existing directories really are.
fn real_path(absolute: &Path) -> std::io::Result<PathBuf> {
    let mut existing = absolute;
    let mut rest = Vec::new();
    loop {
        if std::fs::symlink_metadata(existing).is_ok() {
            let mut real = std::fs::canonicalize(existing)?;
            real.extend(rest.iter().rev());
            return Ok(real);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return Ok(absolute.to_path_buf()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_absolute_and_followed_through_links() {
        let base = tempfile::tempdir().expect("temp dir");
        let base = std::fs::canonicalize(base.path()).expect("canonical");
        let cwd = base.join("work");
        std::fs::create_dir_all(cwd.join("src")).expect("dirs");
        std::os::unix::fs::symlink(&base, cwd.join("up")).expect("link");

        let plain = resolve(&cwd, "./src/../src/a.rs").expect("resolves");
        assert_eq!(plain.display, "src/a.rs");
        assert_eq!(plain.absolute, cwd.join("src/a.rs"));
        assert_eq!(plain.real, cwd.join("src/a.rs"));

        let escaping = resolve(&cwd, "../outside.txt").expect("resolves");
        assert_eq!(escaping.real, base.join("outside.txt"));
        assert_eq!(
            escaping.display,
            base.join("outside.txt").display().to_string()
        );

        let linked = resolve(&cwd, "up/new/file.txt").expect("resolves");
        assert_eq!(linked.absolute, cwd.join("up/new/file.txt"));
        assert_eq!(linked.real, base.join("new/file.txt"));
    }

    #[test]
    fn a_dangling_link_is_an_error_naming_the_path() {
        let base = tempfile::tempdir().expect("temp dir");
        std::os::unix::fs::symlink(base.path().join("gone"), base.path().join("dangling"))
            .expect("link");
        let error = resolve(base.path(), "dangling/x.txt").expect_err("dangling");
        assert!(error.to_string().contains("`dangling/x.txt`"), "{error}");
    }
}
