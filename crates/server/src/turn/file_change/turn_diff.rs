//! The turn's diff (`turn/diff/updated`): every file the turn changed through patches, from
//! its content when the turn first touched it to its content now, as one git-style unified
//! diff. Each file is followed across moves, deletions and re-additions, so that a file moved
//! twice shows as one rename and a file added then deleted shows as nothing.
//!
//! Both contents are kept in memory for the length of the turn (each at most the patch
//! crate's file limit), so producing the diff reads nothing from disk.

use tandem_patch::{AppliedChange, unified_diff};

/// One file the turn touched.
#[derive(Debug)]
struct TrackedFile {
    /// Where it was when the turn first touched it (display form).
    first_path: String,
    /// Its content then; `None` when it did not exist.
    original: Option<String>,
    /// Where it is now; `None` when the turn deleted it.
    current_path: Option<String>,
    /// Its content now; `None` when it no longer exists.
    now: Option<String>,
}

/// The files a turn changed through patches.
#[derive(Debug, Default)]
pub(crate) struct TurnDiff {
    files: Vec<TrackedFile>,
}

impl TurnDiff {
    /// Records applied `changes` (paths in display form, contents as written).
    pub(super) fn record(&mut self, changes: &[AppliedChange]) {
        for change in changes {
            match change {
                AppliedChange::Add { path, contents } => {
                    let file = self.tracked(path, None);
                    file.current_path = Some(path.clone());
                    file.now = Some(contents.clone());
                }
                AppliedChange::Delete { path, old_contents } => {
                    let file = self.tracked(path, Some(old_contents));
                    file.current_path = None;
                    file.now = None;
                }
                AppliedChange::Update {
                    path,
                    move_to,
                    old_contents,
                    new_contents,
                } => {
                    let file = self.tracked(path, Some(old_contents));
                    file.current_path = Some(move_to.clone().unwrap_or_else(|| path.clone()));
                    file.now = Some(new_contents.clone());
                }
            }
        }
    }

    /// The file now at `path` (or deleted from where it was first seen), tracked from
    /// `original` if the turn had not touched it yet.
    fn tracked(&mut self, path: &str, original: Option<&String>) -> &mut TrackedFile {
        let position = self
            .files
            .iter()
            .position(|file| file.current_path.as_deref() == Some(path))
            .or_else(|| {
                // Re-adding a file the turn deleted continues its history.
                self.files
                    .iter()
                    .position(|file| file.current_path.is_none() && file.first_path == path)
            });
        let position = position.unwrap_or_else(|| {
            self.files.push(TrackedFile {
                first_path: path.to_owned(),
                original: original.cloned(),
                current_path: Some(path.to_owned()),
                now: original.cloned(),
            });
            self.files.len() - 1
        });
        &mut self.files[position]
    }

    /// The diff of every file, ordered by the path the turn first saw it at.
    pub(super) fn render(&self) -> String {
        let mut files: Vec<&TrackedFile> = self.files.iter().collect();
        files.sort_by(|a, b| a.first_path.cmp(&b.first_path));
        let mut out = String::new();
        for file in files {
            let new_path = file.current_path.as_deref().unwrap_or(&file.first_path);
            out.push_str(&unified_diff(
                &file.first_path,
                new_path,
                file.original.as_deref(),
                file.now.as_deref(),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(path: &str, to: Option<&str>, old: &str, new: &str) -> AppliedChange {
        AppliedChange::Update {
            path: path.into(),
            move_to: to.map(str::to_owned),
            old_contents: old.into(),
            new_contents: new.into(),
        }
    }

    #[test]
    fn a_file_changed_twice_diffs_from_its_first_content() {
        let mut diff = TurnDiff::default();
        diff.record(&[update("a.txt", None, "1\n", "2\n")]);
        diff.record(&[update("a.txt", None, "2\n", "3\n")]);
        assert_eq!(
            diff.render(),
            unified_diff("a.txt", "a.txt", Some("1\n"), Some("3\n"))
        );
        assert!(diff.render().contains("-1\n+3\n"), "{}", diff.render());
    }

    #[test]
    fn moves_chain_and_deletions_and_additions_show() {
        let mut diff = TurnDiff::default();
        diff.record(&[
            update("a.txt", Some("b.txt"), "x\n", "y\n"),
            AppliedChange::Add {
                path: "new.txt".into(),
                contents: "n\n".into(),
            },
            AppliedChange::Delete {
                path: "old.txt".into(),
                old_contents: "o\n".into(),
            },
        ]);
        diff.record(&[update("b.txt", Some("c.txt"), "y\n", "z\n")]);
        let rendered = diff.render();
        let expected = [
            unified_diff("a.txt", "c.txt", Some("x\n"), Some("z\n")),
            unified_diff("new.txt", "new.txt", None, Some("n\n")),
            unified_diff("old.txt", "old.txt", Some("o\n"), None),
        ]
        .concat();
        assert_eq!(rendered, expected);
        assert!(
            rendered.contains("rename from a.txt\nrename to c.txt"),
            "{rendered}"
        );
    }

    #[test]
    fn a_file_added_then_deleted_leaves_no_diff() {
        let mut diff = TurnDiff::default();
        diff.record(&[AppliedChange::Add {
            path: "tmp.txt".into(),
            contents: "t\n".into(),
        }]);
        diff.record(&[AppliedChange::Delete {
            path: "tmp.txt".into(),
            old_contents: "t\n".into(),
        }]);
        assert_eq!(diff.files.len(), 1);
        assert_eq!(diff.render(), "");
    }
}
