//! The turn's file checkpoint (issue 29, point 9): for each file the turn's patches touch, its
//! content from before the turn first touched it and a digest of what the turn left, stored
//! (`ThreadStore::put_file_checkpoint`) before each patch is written, so that `thread/revert`
//! and `thread/rollback` with `restoreFiles: true` can put the files back after a restart,
//! and can tell a file the turn left from one changed on disk since (the `restore` module).
//!
//! Bounds (docs/protocol.md, "Undoing file changes"): a turn keeps at most
//! [`TURN_MAX_BYTES`] of earlier content; past it, or when a patch replaces a file that is
//! not text, the turn keeps only its paths and is not restorable, and says why. A thread keeps
//! at most [`THREAD_MAX_BYTES`], for its newest turns: the store drops the older turns'
//! contents the same way.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::store::{CheckpointFile, FileCheckpoint};

/// The most earlier file content one turn keeps for undo: two files at the patch bound of
/// 16 MiB each (`tandem_patch::Limits::DEFAULT_MAX_FILE_BYTES`).
pub(crate) const TURN_MAX_BYTES: u64 = 32 * 1024 * 1024;

/// The most earlier file content one thread keeps for undo, over its newest turns.
pub(crate) const THREAD_MAX_BYTES: u64 = 128 * 1024 * 1024;

/// What a file held before a patch touched it.
#[derive(Debug, Clone)]
pub(super) enum Before {
    /// Its text, or `None` when there was no file.
    Text(Option<String>),
    /// It could not be kept (not text, or too large); why, in words.
    Unreadable(String),
}

/// One file a patch is about to write: where, what it held, the [`digest`] of what it will
/// hold (`None`: removed).
pub(super) struct Touch<'a> {
    pub(super) path: &'a PathBuf,
    pub(super) before: &'a Before,
    pub(super) after_digest: Option<&'a String>,
}

/// The turn's checkpoint as stored so far.
#[derive(Debug, Default)]
pub(crate) struct TurnCheckpoint {
    stored: FileCheckpoint,
}

impl TurnCheckpoint {
    /// The checkpoint once `touches` are written: a file seen for the first time keeps its
    /// earlier content, every file its new digest; past [`TURN_MAX_BYTES`] or on an
    /// unreadable file, the turn is marked not restorable.
    pub(super) fn with(&self, touches: &[Touch<'_>]) -> FileCheckpoint {
        let mut next = self.stored.clone();
        for touch in touches {
            let path = touch.path.to_string_lossy().into_owned();
            let after_digest = touch.after_digest.cloned();
            if let Some(file) = next.files.iter_mut().find(|file| file.path == path) {
                file.after_digest = after_digest;
                continue;
            }
            let before = match touch.before {
                Before::Text(text) if next.not_restorable.is_none() => text.clone(),
                Before::Text(_) => None,
                Before::Unreadable(why) => {
                    if next.not_restorable.is_none() {
                        next.drop_contents(format!(
                            "a patch replaced {path}, whose earlier content cannot be kept: {why}"
                        ));
                    }
                    None
                }
            };
            next.files.push(CheckpointFile {
                path,
                before,
                after_digest,
            });
        }
        if next.not_restorable.is_none() && next.kept_bytes() > TURN_MAX_BYTES {
            next.drop_contents(format!(
                "the turn changed files holding more than the {TURN_MAX_BYTES} bytes of \
                 earlier content a turn keeps for undo"
            ));
        }
        next
    }

    /// Makes `checkpoint` the stored one; returns the one before.
    pub(super) fn replace(&mut self, checkpoint: FileCheckpoint) -> FileCheckpoint {
        std::mem::replace(&mut self.stored, checkpoint)
    }
}

/// The digest of a file's text that a checkpoint keeps: SHA-256, lowercase hex. Computed
/// where the file is read or planned, on a blocking thread (a file may have 16 MiB).
pub(super) fn digest(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_content_is_kept_and_the_last_digest() {
        let mut turn = TurnCheckpoint::default();
        let path = PathBuf::from("/w/a.txt");
        let first = turn.with(&[Touch {
            path: &path,
            before: &Before::Text(Some("one\n".into())),
            after_digest: Some(&digest("two\n")),
        }]);
        turn.replace(first);
        let second = turn.with(&[Touch {
            path: &path,
            before: &Before::Text(Some("two\n".into())),
            after_digest: None,
        }]);
        assert_eq!(second.files.len(), 1);
        assert_eq!(second.files[0].before.as_deref(), Some("one\n"));
        assert_eq!(second.files[0].after_digest, None);
        assert_eq!(second.not_restorable, None);
    }

    #[test]
    fn past_the_turn_bound_or_on_a_binary_file_the_turn_is_not_restorable() {
        let turn = TurnCheckpoint::default();
        let big = "x".repeat(usize::try_from(TURN_MAX_BYTES).unwrap() / 2 + 1);
        let (a, b) = (PathBuf::from("/w/a"), PathBuf::from("/w/b"));
        let empty = digest("");
        let over = turn.with(&[
            Touch {
                path: &a,
                before: &Before::Text(Some(big.clone())),
                after_digest: Some(&empty),
            },
            Touch {
                path: &b,
                before: &Before::Text(Some(big)),
                after_digest: Some(&empty),
            },
        ]);
        assert_eq!(over.kept_bytes(), 0);
        assert_eq!(over.files.len(), 2, "the paths stay");
        let why = over.not_restorable.expect("marked");
        assert!(why.contains(&TURN_MAX_BYTES.to_string()), "{why}");

        let binary = turn.with(&[Touch {
            path: &a,
            before: &Before::Unreadable("it is a binary file".into()),
            after_digest: Some(&empty),
        }]);
        let why = binary.not_restorable.expect("marked");
        assert!(why.contains("/w/a") && why.contains("binary"), "{why}");
    }
}
