//! File checkpoints (issue 29, point 9): what a turn's patches did to files, kept so that
//! `thread/revert` and `thread/rollback` with `restoreFiles: true` can put the files back.
//!
//! One [`FileCheckpoint`] per turn that changed files through patches, stored as the JSON of
//! the type beside its turn (and deleted with it). Each file the turn touched keeps its
//! content from before the turn (or that it did not exist) and a digest of what the turn
//! left, so that a later change on disk can be told apart from the turn's own. The store
//! treats the digest as an opaque string: the server chooses and computes it.
//!
//! Bounds: the server drops a turn's contents past its own per-turn bound (the checkpoint is
//! then [`FileCheckpoint::not_restorable`], its paths still listed); the store keeps the
//! newest checkpoints of a thread whose contents fit the per-thread bound the server passes to
//! [`crate::ThreadStore::put_file_checkpoint`] and drops the contents of the older ones the
//! same way, so that what a thread keeps is bounded and a turn that cannot be restored says so.

use serde::{Deserialize, Serialize};

/// What one turn's patches did to files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileCheckpoint {
    /// Every file the turn changed, once each, in the order it first touched them.
    pub files: Vec<CheckpointFile>,
    /// Why the turn's earlier contents are not kept (past a bound); `None` while they are.
    /// When set, every [`CheckpointFile::before`] is `None` and means nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_restorable: Option<String>,
}

/// One file a turn changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointFile {
    /// The file, absolute, links followed (where the patch wrote).
    pub path: String,
    /// Its content before the turn first touched it; `None` when it did not exist.
    pub before: Option<String>,
    /// A digest of the content the turn left; `None` when the turn left no file there.
    pub after_digest: Option<String>,
}

impl FileCheckpoint {
    /// The bytes of earlier content it keeps: what counts against the bounds.
    pub fn kept_bytes(&self) -> u64 {
        self.files
            .iter()
            .filter_map(|file| file.before.as_ref())
            .map(|before| before.len() as u64)
            .sum()
    }

    /// Drops every earlier content, keeping the paths, and records `reason`: the turn can no
    /// longer be restored, and says why.
    pub fn drop_contents(&mut self, reason: impl Into<String>) {
        for file in &mut self.files {
            file.before = None;
        }
        self.not_restorable = Some(reason.into());
    }
}

/// Why the store dropped a turn's contents: the thread's newer turns took its bound.
pub fn evicted_reason(thread_max_bytes: u64) -> String {
    format!(
        "its earlier file contents were dropped: a thread keeps at most {thread_max_bytes} \
         bytes of them, for its newest turns"
    )
}

/// The turns whose contents no longer fit `thread_max_bytes`: given every checkpoint's
/// `(turn id, kept bytes)` newest first, the ones from the first that overflows the running
/// total on (and none with nothing kept, which cost nothing).
pub(crate) fn over_budget(newest_first: &[(String, u64)], thread_max_bytes: u64) -> Vec<String> {
    let mut total = 0u64;
    let mut overflowed = false;
    let mut dropped = Vec::new();
    for (turn_id, bytes) in newest_first {
        if *bytes == 0 {
            continue;
        }
        total = total.saturating_add(*bytes);
        overflowed |= total > thread_max_bytes;
        if overflowed {
            dropped.push(turn_id.clone());
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_turns_past_the_bound_are_dropped() {
        let turns = |list: &[(&str, u64)]| -> Vec<(String, u64)> {
            list.iter().map(|(id, n)| ((*id).to_owned(), *n)).collect()
        };
        assert_eq!(
            over_budget(&turns(&[("c", 4), ("b", 4), ("a", 4)]), 8),
            ["a"]
        );
        // Once a turn overflows, every older one goes too, even one that would still fit:
        // what is kept is always the newest turns.
        assert_eq!(
            over_budget(&turns(&[("c", 4), ("b", 6), ("a", 1)]), 8),
            ["b", "a"]
        );
        assert!(over_budget(&turns(&[("b", 8), ("a", 0)]), 8).is_empty());
    }

    #[test]
    fn dropping_contents_keeps_the_paths_and_says_why() {
        let mut checkpoint = FileCheckpoint {
            files: vec![CheckpointFile {
                path: "/w/a.txt".into(),
                before: Some("abc".into()),
                after_digest: Some("d".into()),
            }],
            not_restorable: None,
        };
        assert_eq!(checkpoint.kept_bytes(), 3);
        checkpoint.drop_contents("too big");
        assert_eq!(checkpoint.kept_bytes(), 0);
        assert_eq!(checkpoint.files[0].path, "/w/a.txt");
        assert_eq!(checkpoint.not_restorable.as_deref(), Some("too big"));
    }
}
