//! Writing a patch's outcome as one change: every new content goes to a temporary file beside
//! its target first; then each existing file is renamed aside to a backup and the temporary
//! file renamed into its place; if any step fails, the renames done are undone in reverse, so
//! that the files are as before. Backups are removed once everything is in place.
//!
//! Renames within a directory are atomic, so each file is either old or new, never half
//! written. A crash between the first and the last rename leaves some files new, the rest old,
//! and the backups (`.NAME.tandem-ITEM.orig`) and temporary files (`.NAME.tandem-ITEM.tmp`)
//! beside them (docs/reliability.md, "A patch cut short").

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Why the files could not be written. Nothing of the patch is left on disk then.
#[derive(Debug, thiserror::Error)]
pub(super) enum WriteError {
    /// A step failed; what was done before it was undone.
    #[error("cannot {step} `{path}`: {source}; nothing was written")]
    Step {
        /// What was being done.
        step: &'static str,
        /// The file it was done to.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

/// The final state of one file: `Some(contents)` to write, `None` to remove.
#[derive(Debug)]
pub(super) struct FinalState {
    /// The file (real path: links already followed).
    pub(super) path: PathBuf,
    /// What it holds afterwards; `None` when it is removed.
    pub(super) contents: Option<String>,
    /// Whether it exists now (so that removing, or replacing, has something to move aside).
    pub(super) exists: bool,
}

/// One target in progress, and what has been done to it so far.
#[derive(Debug)]
struct Target<'a> {
    state: &'a FinalState,
    temp: Option<PathBuf>,
    backup: Option<PathBuf>,
    installed: bool,
}

/// Writes every state of `files` as one change (see the module doc); `tag` (the item id)
/// names the temporary and backup files.
pub(super) fn write_all(files: &[FinalState], tag: &str) -> Result<(), WriteError> {
    let mut targets: Vec<Target<'_>> = files
        .iter()
        .map(|state| Target {
            state,
            temp: None,
            backup: None,
            installed: false,
        })
        .collect();
    let mut created_dirs = Vec::new();
    let result =
        prepare(&mut targets, tag, &mut created_dirs).and_then(|()| install(&mut targets, tag));
    match result {
        Ok(()) => {
            for target in &targets {
                if let Some(backup) = &target.backup
                    && let Err(error) = std::fs::remove_file(backup)
                {
                    tracing::warn!(backup = %backup.display(), %error, "patch backup not removed");
                }
            }
            Ok(())
        }
        Err(error) => {
            undo(&mut targets, &created_dirs);
            Err(error)
        }
    }
}

/// Writes the temporary files (creating missing directories, recorded in `created_dirs`).
fn prepare(
    targets: &mut [Target<'_>],
    tag: &str,
    created_dirs: &mut Vec<PathBuf>,
) -> Result<(), WriteError> {
    for target in targets {
        let Some(contents) = &target.state.contents else {
            continue;
        };
        let path = &target.state.path;
        if let Some(parent) = path.parent() {
            create_dirs(parent, created_dirs)?;
        }
        let temp = beside(path, tag, "tmp");
        std::fs::write(&temp, contents).map_err(|source| WriteError::Step {
            step: "write a temporary file for",
            path: path.clone(),
            source,
        })?;
        target.temp = Some(temp.clone());
        if target.state.exists {
            // The new file keeps the old one's permissions (an executable script stays one).
            let permissions = std::fs::metadata(path).map(|metadata| metadata.permissions());
            if let Ok(permissions) = permissions {
                std::fs::set_permissions(&temp, permissions).map_err(|source| {
                    WriteError::Step {
                        step: "copy the permissions of",
                        path: path.clone(),
                        source,
                    }
                })?;
            }
        }
    }
    Ok(())
}

/// Creates `dir` and its missing parents, recording each one created (outermost first).
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> Result<(), WriteError> {
    let mut missing = Vec::new();
    let mut current = Some(dir);
    while let Some(path) = current {
        if path.exists() {
            break;
        }
        missing.push(path.to_path_buf());
        current = path.parent();
    }
    for path in missing.into_iter().rev() {
        std::fs::create_dir(&path).map_err(|source| WriteError::Step {
            step: "create the directory",
            path: path.clone(),
            source,
        })?;
        created.push(path);
    }
    Ok(())
}

/// Moves each existing target aside and renames its temporary file into place.
fn install(targets: &mut [Target<'_>], tag: &str) -> Result<(), WriteError> {
    for target in targets {
        let path = &target.state.path;
        if target.state.exists {
            let backup = beside(path, tag, "orig");
            std::fs::rename(path, &backup).map_err(|source| WriteError::Step {
                step: "move aside",
                path: path.clone(),
                source,
            })?;
            target.backup = Some(backup);
        }
        if let Some(temp) = &target.temp {
            std::fs::rename(temp, path).map_err(|source| WriteError::Step {
                step: "rename the new content into",
                path: path.clone(),
                source,
            })?;
            target.temp = None;
            target.installed = true;
        }
    }
    Ok(())
}

/// Puts every target back as it was, in reverse order, and removes what was created.
fn undo(targets: &mut [Target<'_>], created_dirs: &[PathBuf]) {
    for target in targets.iter_mut().rev() {
        let path = &target.state.path;
        if target.installed
            && let Err(error) = std::fs::remove_file(path)
        {
            tracing::error!(path = %path.display(), %error, "patch undo: new file not removed");
        }
        if let Some(backup) = target.backup.take()
            && let Err(error) = std::fs::rename(&backup, path)
        {
            tracing::error!(path = %path.display(), backup = %backup.display(), %error,
                "patch undo: the original is left at its backup path");
        }
        if let Some(temp) = target.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
    for dir in created_dirs.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// `.NAME.tandem-TAG.SUFFIX` in `path`'s directory.
fn beside(path: &Path, tag: &str, suffix: &str) -> PathBuf {
    let mut name = OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(".tandem-{tag}.{suffix}"));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(path: PathBuf, contents: Option<&str>) -> FinalState {
        let exists = path.exists();
        FinalState {
            path,
            contents: contents.map(str::to_owned),
            exists,
        }
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = walk(dir)
            .into_iter()
            .map(|path| path.strip_prefix(dir).unwrap().display().to_string())
            .collect();
        names.sort();
        names
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut all = Vec::new();
        for entry in std::fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                all.extend(walk(&path));
            }
            all.push(path);
        }
        all
    }

    #[test]
    fn several_files_change_and_nothing_else_is_left() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "old a\n").expect("a");
        std::fs::write(root.join("gone.txt"), "bye\n").expect("gone");
        let files = [
            state(root.join("a.txt"), Some("new a\n")),
            state(root.join("gone.txt"), None),
            state(root.join("sub/dir/b.txt"), Some("b\n")),
        ];
        write_all(&files, "item").expect("written");
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap(),
            "new a\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("sub/dir/b.txt")).unwrap(),
            "b\n"
        );
        assert_eq!(listing(root), ["a.txt", "sub", "sub/dir", "sub/dir/b.txt"]);
    }

    #[test]
    fn a_failing_file_undoes_the_ones_before_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "old a\n").expect("a");
        std::fs::write(root.join("gone.txt"), "bye\n").expect("gone");
        // A directory where a file should go: its rename fails after the others were done.
        std::fs::create_dir_all(root.join("blocked/inner")).expect("blocked");
        let files = [
            state(root.join("a.txt"), Some("new a\n")),
            state(root.join("gone.txt"), None),
            state(root.join("new/c.txt"), Some("c\n")),
            FinalState {
                path: root.join("blocked"),
                contents: Some("x\n".into()),
                exists: false,
            },
        ];
        let error = write_all(&files, "item").expect_err("blocked");
        assert!(error.to_string().contains("blocked"), "{error}");
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap(),
            "old a\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("gone.txt")).unwrap(),
            "bye\n"
        );
        assert_eq!(
            listing(root),
            ["a.txt", "blocked", "blocked/inner", "gone.txt"]
        );
    }

    #[cfg(unix)]
    #[test]
    fn an_updated_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "echo a\n").expect("script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("mode");
        write_all(&[state(script.clone(), Some("echo b\n"))], "item").expect("written");
        let mode = std::fs::metadata(&script).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }
}
