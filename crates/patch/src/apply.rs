//! The applier: a parsed [`Patch`] and the current contents of the files it names (read through
//! the caller's function) to each file's old and new contents, all or nothing. Nothing is
//! written here; the caller writes the [`AppliedChange`]s once every one of them is known.

use std::collections::HashMap;
use std::error::Error as StdError;

use thiserror::Error;

use crate::Limits;
use crate::diff::unified_diff;
use crate::patch::{FileChange, Hunk, HunkLine, Patch};
use crate::seek::Haystack;
use crate::text::{FileLines, quote};

/// How many of a hunk's expected lines an error quotes: enough for the model to see which hunk,
/// few enough to keep the error short.
const QUOTED_HUNK_LINES: usize = 3;

/// What applying one [`FileChange`] does, with the contents before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppliedChange {
    /// A new file.
    Add {
        /// The path as the patch wrote it.
        path: String,
        /// Its contents.
        contents: String,
    },
    /// A removed file.
    Delete {
        /// The path as the patch wrote it.
        path: String,
        /// What it held.
        old_contents: String,
    },
    /// A changed file, maybe renamed.
    Update {
        /// The path as the patch wrote it.
        path: String,
        /// Where the file goes, when it is renamed (never equal to `path`).
        move_to: Option<String>,
        /// What it held.
        old_contents: String,
        /// What it holds after the change (at `move_to` when renamed).
        new_contents: String,
    },
}

impl AppliedChange {
    /// The path the change reads (an update's path before any move).
    pub fn path(&self) -> &str {
        match self {
            AppliedChange::Add { path, .. }
            | AppliedChange::Delete { path, .. }
            | AppliedChange::Update { path, .. } => path,
        }
    }

    /// The path the change leaves a file at, if any: an update's destination, an add's path.
    pub fn new_path(&self) -> Option<&str> {
        match self {
            AppliedChange::Add { path, .. } => Some(path),
            AppliedChange::Delete { .. } => None,
            AppliedChange::Update { path, move_to, .. } => Some(move_to.as_deref().unwrap_or(path)),
        }
    }

    /// The contents before the change (`None` for an added file).
    pub fn old_contents(&self) -> Option<&str> {
        match self {
            AppliedChange::Add { .. } => None,
            AppliedChange::Delete { old_contents, .. }
            | AppliedChange::Update { old_contents, .. } => Some(old_contents),
        }
    }

    /// The contents after the change (`None` for a deleted file).
    pub fn new_contents(&self) -> Option<&str> {
        match self {
            AppliedChange::Add { contents, .. } => Some(contents),
            AppliedChange::Delete { .. } => None,
            AppliedChange::Update { new_contents, .. } => Some(new_contents),
        }
    }

    /// The change as a git-style unified diff ([`unified_diff`]).
    pub fn unified_diff(&self) -> String {
        let path = self.path();
        unified_diff(
            path,
            self.new_path().unwrap_or(path),
            self.old_contents(),
            self.new_contents(),
        )
    }
}

/// Why a patch does not apply. Nothing of the patch applies then; the message names the file
/// (and the hunk) and says what the model can do about it.
#[derive(Debug, Error)]
pub enum ApplyError {
    /// The caller's read function failed.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The path it was asked for.
        path: String,
        /// Its error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// `*** Add File:` names a file that exists.
    #[error(
        "cannot add `{path}`: the file already exists (change it with `*** Update File: {path}`, \
         or delete it first)"
    )]
    AddExisting {
        /// The path.
        path: String,
    },
    /// `*** Update File:` names a file that does not exist.
    #[error(
        "cannot update `{path}`: the file does not exist (create it with `*** Add File: {path}`)"
    )]
    UpdateMissing {
        /// The path.
        path: String,
    },
    /// `*** Delete File:` names a file that does not exist.
    #[error("cannot delete `{path}`: the file does not exist")]
    DeleteMissing {
        /// The path.
        path: String,
    },
    /// `*** Move to:` names a file that exists.
    #[error(
        "cannot move `{path}` to `{to}`: `{to}` already exists (delete it first with \
         `*** Delete File: {to}`)"
    )]
    MoveOntoExisting {
        /// The file moved.
        path: String,
        /// The destination that exists.
        to: String,
    },
    /// A file is larger than [`Limits::max_file_bytes`], as read or as the patch would leave it.
    #[error("`{path}` would be {bytes} bytes, more than the {limit} bytes a file may have here")]
    FileTooLarge {
        /// The file.
        path: String,
        /// Its size in bytes (before or after the patch).
        bytes: usize,
        /// The bound it passed.
        limit: usize,
    },
    /// A hunk's `@@` anchor line is not in the file (after the previous anchor or hunk).
    #[error(
        "cannot apply hunk {hunk} of `{path}` (patch line {line}): the anchor line `{anchor}` was \
         not found at or after line {from} of the file{}",
        above_hint(*.above)
    )]
    AnchorNotFound {
        /// The file.
        path: String,
        /// The hunk's 1-based index among the file's hunks.
        hunk: usize,
        /// The patch line where the hunk starts.
        line: usize,
        /// The anchor's text (shortened).
        anchor: String,
        /// The 1-based file line the search started at.
        from: usize,
        /// The 1-based file line where the anchor is, when it is only above `from`: the hunks
        /// are out of the file's order.
        above: Option<usize>,
    },
    /// A hunk's context and removed lines are not in the file (after the previous hunk).
    #[error(
        "cannot apply hunk {hunk} of `{path}` (patch line {line}): its context and removed lines \
         were not found at or after line {from} of the file{}; the hunk expects:\n{expected}",
        above_hint(*.above)
    )]
    ContextNotFound {
        /// The file.
        path: String,
        /// The hunk's 1-based index among the file's hunks.
        hunk: usize,
        /// The patch line where the hunk starts.
        line: usize,
        /// The first lines the hunk expects, one per line (shortened).
        expected: String,
        /// The 1-based file line the search started at.
        from: usize,
        /// The 1-based file line where the lines are, when they are only above `from`: the
        /// hunks are out of the file's order.
        above: Option<usize>,
    },
}

/// The part of a not-found message that says the lines were found above where the search began.
fn above_hint(above: Option<usize>) -> String {
    match above {
        Some(at) => format!(
            " (they are at line {at}, above the previous hunk or anchor: hunks must follow the \
             file's order)"
        ),
        None => String::new(),
    }
}

/// Applies `patch` with the default [`Limits`]; see [`apply_with`].
pub fn apply<E>(
    patch: &Patch,
    read: impl FnMut(&str) -> Result<Option<String>, E>,
) -> Result<Vec<AppliedChange>, ApplyError>
where
    E: StdError + Send + Sync + 'static,
{
    apply_with(patch, &Limits::default(), read)
}

/// Applies `patch` to the contents `read` returns for each path it names (`None`: no such
/// file), and returns one [`AppliedChange`] per [`FileChange`], in patch order.
///
/// The changes apply in sequence to a view of the files kept here: a path the patch names twice
/// is read once, and the second change sees what the first made of it (an added file can be
/// updated, a deleted one added again). Paths are compared as written; resolving them (`./a`
/// and `a`, symlinks) is the caller's. Any error leaves nothing applied: the caller writes only
/// what an `Ok` returns. Files larger than `limits.max_file_bytes`, read or produced, are
/// refused.
pub fn apply_with<E>(
    patch: &Patch,
    limits: &Limits,
    mut read: impl FnMut(&str) -> Result<Option<String>, E>,
) -> Result<Vec<AppliedChange>, ApplyError>
where
    E: StdError + Send + Sync + 'static,
{
    let mut files = Files {
        current: HashMap::new(),
        limits,
    };
    let mut applied = Vec::with_capacity(patch.changes.len());
    for change in &patch.changes {
        let done = match change {
            FileChange::Add { path, contents } => {
                if files.get(path, &mut read)?.is_some() {
                    return Err(ApplyError::AddExisting { path: path.clone() });
                }
                files.check_size(path, contents)?;
                files.current.insert(path.clone(), Some(contents.clone()));
                AppliedChange::Add {
                    path: path.clone(),
                    contents: contents.clone(),
                }
            }
            FileChange::Delete { path } => {
                let Some(old_contents) = files.get(path, &mut read)? else {
                    return Err(ApplyError::DeleteMissing { path: path.clone() });
                };
                files.current.insert(path.clone(), None);
                AppliedChange::Delete {
                    path: path.clone(),
                    old_contents,
                }
            }
            FileChange::Update {
                path,
                move_to,
                hunks,
            } => {
                let Some(old_contents) = files.get(path, &mut read)? else {
                    return Err(ApplyError::UpdateMissing { path: path.clone() });
                };
                let new_contents = apply_hunks(path, &old_contents, hunks)?;
                files.check_size(path, &new_contents)?;
                // A move onto itself is an update in place.
                let move_to = move_to.clone().filter(|to| to != path);
                match &move_to {
                    Some(to) => {
                        if files.get(to, &mut read)?.is_some() {
                            return Err(ApplyError::MoveOntoExisting {
                                path: path.clone(),
                                to: to.clone(),
                            });
                        }
                        files.current.insert(path.clone(), None);
                        files.current.insert(to.clone(), Some(new_contents.clone()));
                    }
                    None => {
                        files
                            .current
                            .insert(path.clone(), Some(new_contents.clone()));
                    }
                }
                AppliedChange::Update {
                    path: path.clone(),
                    move_to,
                    old_contents,
                    new_contents,
                }
            }
        };
        applied.push(done);
    }
    Ok(applied)
}

/// The files as the patch has left them so far, read on first use.
struct Files<'l> {
    current: HashMap<String, Option<String>>,
    limits: &'l Limits,
}

impl Files<'_> {
    fn get<E>(
        &mut self,
        path: &str,
        read: &mut impl FnMut(&str) -> Result<Option<String>, E>,
    ) -> Result<Option<String>, ApplyError>
    where
        E: StdError + Send + Sync + 'static,
    {
        if let Some(contents) = self.current.get(path) {
            return Ok(contents.clone());
        }
        let contents = read(path).map_err(|error| ApplyError::Read {
            path: path.to_owned(),
            source: Box::new(error),
        })?;
        if let Some(contents) = &contents {
            self.check_size(path, contents)?;
        }
        self.current.insert(path.to_owned(), contents.clone());
        Ok(contents)
    }

    fn check_size(&self, path: &str, contents: &str) -> Result<(), ApplyError> {
        if contents.len() > self.limits.max_file_bytes {
            return Err(ApplyError::FileTooLarge {
                path: path.to_owned(),
                bytes: contents.len(),
                limit: self.limits.max_file_bytes,
            });
        }
        Ok(())
    }
}

/// One hunk's effect: replace `old_len` lines at `start` by `new_lines`.
struct Replacement<'h> {
    start: usize,
    old_len: usize,
    new_lines: Vec<&'h str>,
}

/// The lines a hunk matched at `matched` (the file's lines) leave: each context line as the file
/// has it, each added line as the patch has it.
fn kept_context<'h>(hunk: &'h Hunk, matched: &[&'h str]) -> Vec<&'h str> {
    let mut old = matched.iter();
    let mut new = Vec::with_capacity(hunk.lines.len());
    for line in &hunk.lines {
        match line {
            HunkLine::Context(text) => new.push(old.next().copied().unwrap_or(text)),
            HunkLine::Remove(_) => {
                old.next();
            }
            HunkLine::Add(text) => new.push(text),
        }
    }
    new
}

/// The file's new contents after its hunks, or the error naming the hunk that does not apply.
fn apply_hunks(path: &str, contents: &str, hunks: &[Hunk]) -> Result<String, ApplyError> {
    let file = FileLines::split(contents);
    let mut haystack = Haystack::new(&file.lines);
    let mut replacements = Vec::with_capacity(hunks.len());
    // Each hunk is sought after the previous one: hunks are in file order.
    let mut from = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        for anchor in &hunk.anchors {
            let Some(at) = haystack.find(&[anchor.as_str()], from, false) else {
                return Err(ApplyError::AnchorNotFound {
                    path: path.to_owned(),
                    hunk: index + 1,
                    line: hunk.line,
                    anchor: quote(anchor),
                    from: from + 1,
                    above: haystack.find(&[anchor.as_str()], 0, false).map(|at| at + 1),
                });
            };
            from = at + 1;
        }
        let mut old = hunk.old_lines();
        let mut new = hunk.new_lines();
        if old.is_empty() {
            // Only added lines: after the last anchor when there is one. Without one the
            // reference appends them at the end of the file (before a last empty line), and so
            // does this; with one it also appends, which is never what an anchor means, so here
            // they go right after the anchor line.
            let start = if !hunk.anchors.is_empty() && !hunk.end_of_file {
                from
            } else if file.lines.last().is_some_and(|last| last.is_empty()) {
                file.lines.len() - 1
            } else {
                file.lines.len()
            };
            replacements.push(Replacement {
                start,
                old_len: 0,
                new_lines: new,
            });
            continue;
        }
        let mut found = haystack.find(&old, from, hunk.end_of_file);
        if let Some(start) = found {
            // Context lines stay as the file has them: a lenient match must not rewrite their
            // whitespace or punctuation to the patch's.
            new = kept_context(hunk, &file.lines[start..start + old.len()]);
        } else if old.last().is_some_and(|line| line.is_empty()) {
            // A hunk ending in an empty line may mean the file's final line ending, which is no
            // line of its own here: try again without it (and without the one it becomes), as
            // the reference does.
            old.pop();
            if new.last().is_some_and(|line| line.is_empty()) {
                new.pop();
            }
            found = haystack.find(&old, from, hunk.end_of_file);
        }
        let Some(start) = found else {
            let old = hunk.old_lines();
            let mut expected: Vec<String> = old
                .iter()
                .take(QUOTED_HUNK_LINES)
                .map(|line| quote(line))
                .collect();
            match old.len() - expected.len() {
                0 => {}
                1 => expected.push("… (1 more line)".to_owned()),
                more => expected.push(format!("… ({more} more lines)")),
            }
            // Not after `from`, so anything found is above it.
            let above = haystack.find(&old, 0, false).map(|at| at + 1);
            return Err(ApplyError::ContextNotFound {
                path: path.to_owned(),
                hunk: index + 1,
                line: hunk.line,
                expected: expected.join("\n"),
                from: from + 1,
                above,
            });
        };
        from = start + old.len();
        replacements.push(Replacement {
            start,
            old_len: old.len(),
            new_lines: new,
        });
    }
    // In file order; a stable sort keeps additions at one place in patch order.
    replacements.sort_by_key(|replacement| replacement.start);
    let mut lines: Vec<&str> = Vec::with_capacity(file.lines.len());
    let mut cursor = 0;
    for replacement in &replacements {
        // Replacements never overlap (each is sought after the previous one's end, additions
        // at the end come after every match); `max` keeps a slip from panicking.
        let start = replacement.start.max(cursor);
        lines.extend_from_slice(&file.lines[cursor..start]);
        lines.extend_from_slice(&replacement.new_lines);
        cursor = (start + replacement.old_len).min(file.lines.len());
    }
    lines.extend_from_slice(&file.lines[cursor..]);
    Ok(file.join(&lines))
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
