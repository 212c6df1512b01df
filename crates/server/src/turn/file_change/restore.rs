//! Putting back the files reverted turns changed through patches (`thread/revert` and
//! `thread/rollback` with `restoreFiles: true`, docs/protocol.md "Undoing file changes").
//!
//! Each file is decided on its own, from the reverted turns' checkpoints newest first: its
//! content now must be what the newest turn that touched it left (by digest); it then becomes
//! what that turn found, which must in turn be what the next older turn left, and so on. A
//! file whose chain breaks anywhere (changed on disk since, by the user, a command or a turn
//! that is not reverted), that lies outside the sandbox's writable roots (the patch path's
//! rule, `.git` included), whose path now leads elsewhere through a link, or that belongs to
//! a turn whose earlier contents were not kept, is left alone entirely and named with the
//! reason. The others are written together as one change (the `write` module: temporary
//! files renamed into place, undone on failure), so a restore is all or nothing on disk.
//! Files already as they were before count as restored without being written.

use std::path::Path;

use tandem_protocol::{FileRestoreResult, SkippedFile};

use crate::sandbox::WritableRoots;
use crate::store::{CheckpointFile, FileCheckpoint};

use super::checkpoint::digest;
use super::write::{self, FinalState};
use super::{paths, read_text};

/// Why no file could be restored.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RestoreError {
    /// Writing failed; what was written was undone.
    #[error(
        "the files could not be restored ({0}); no file was changed and the history was kept: \
         fix the cause and ask again, or revert without restoreFiles"
    )]
    Write(String),
}

/// One file's history across the reverted turns, newest first.
struct Chain<'a> {
    path: &'a str,
    steps: Vec<(&'a str, &'a CheckpointFile, Option<&'a str>)>,
}

/// Restores the files of `checkpoints` (the reverted turns' `(turn id, checkpoint)`, newest
/// first) under `roots` (`None`: no restriction), naming the temporary files after `tag`.
/// Reads and writes the disk: run it on a blocking thread.
pub(crate) fn restore_files(
    checkpoints: &[(String, FileCheckpoint)],
    roots: Option<&WritableRoots>,
    tag: &str,
) -> Result<FileRestoreResult, RestoreError> {
    let mut chains: Vec<Chain<'_>> = Vec::new();
    let mut unrestorable_turns = Vec::new();
    for (turn_id, checkpoint) in checkpoints {
        let kept = checkpoint.not_restorable.as_deref();
        if kept.is_some() {
            unrestorable_turns.push(turn_id.clone());
        }
        for file in &checkpoint.files {
            let step = (turn_id.as_str(), file, kept);
            match chains.iter_mut().find(|chain| chain.path == file.path) {
                Some(chain) => chain.steps.push(step),
                None => chains.push(Chain {
                    path: &file.path,
                    steps: vec![step],
                }),
            }
        }
    }
    let mut restored = Vec::new();
    let mut skipped = Vec::new();
    let mut finals = Vec::new();
    for chain in &chains {
        match decide(chain, roots) {
            Ok(None) => restored.push(chain.path.to_owned()),
            Ok(Some(state)) => {
                restored.push(chain.path.to_owned());
                finals.push(state);
            }
            Err(reason) => skipped.push(SkippedFile {
                path: chain.path.to_owned(),
                reason,
            }),
        }
    }
    write::write_all(&finals, tag).map_err(|error| RestoreError::Write(error.to_string()))?;
    restored.sort();
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(FileRestoreResult {
        restored_files: Some(restored),
        skipped_files: Some(skipped),
        unrestorable_turns: Some(unrestorable_turns),
    })
}

/// What `chain`'s file must become: `Ok(None)` when it already is, `Ok(Some(state))` to
/// write, `Err(reason)` to leave it alone.
fn decide(chain: &Chain<'_>, roots: Option<&WritableRoots>) -> Result<Option<FinalState>, String> {
    let resolved = paths::resolve(Path::new("/"), chain.path).map_err(|error| error.to_string())?;
    if resolved.real != Path::new(chain.path) {
        return Err(format!(
            "the path now leads to {} through a link; the file the turn wrote is not there",
            resolved.real.display()
        ));
    }
    if let Some(roots) = roots
        && !roots.allows(&resolved.real)
    {
        return Err(
            "it is outside the writable roots of the thread's sandbox (or in a \
                    top-level .git); restore it by hand"
                .to_owned(),
        );
    }
    let current = read_text(&resolved.real)
        .map_err(|error| format!("it cannot be read as the text a patch wrote: {error}"))?;
    let mut state = current.clone();
    for (turn_id, file, not_restorable) in &chain.steps {
        if let Some(why) = not_restorable {
            return Err(format!("turn {turn_id} cannot be restored: {why}"));
        }
        if state.as_deref().map(digest) == file.after_digest {
            state.clone_from(&file.before);
        } else if state != file.before {
            return Err(format!(
                "it changed on disk since turn {turn_id} wrote it (by the user, a command or \
                 another turn)"
            ));
        }
        // Else it already holds what the turn found (a patch cut short by a crash).
    }
    if state == current {
        return Ok(None);
    }
    Ok(Some(FinalState {
        path: resolved.real,
        exists: current.is_some(),
        contents: state,
    }))
}
