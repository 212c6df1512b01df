//! The parsed patch: what [`parse`](crate::parse) returns and [`apply`](crate::apply) takes,
//! and its canonical rendering back to patch text (`Display`), so that a patch built in code
//! (a test's, a scripted agent's) is written in the one format the parser reads.

use std::collections::HashSet;
use std::fmt;

/// A parsed patch: the file changes in the order the patch gives them.
///
/// Displaying a patch writes it back in the `*** Begin Patch` format; parsing that text gives
/// the same changes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Patch {
    /// The changes, in patch order. Applying them is sequential: a later change of a path sees
    /// what an earlier one of the same patch made of it.
    pub changes: Vec<FileChange>,
}

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// `*** Add File: PATH`: create a file that does not exist yet.
    Add {
        /// The path as the patch wrote it (relative or absolute; the caller resolves it).
        path: String,
        /// The whole contents: each `+` line followed by `\n`.
        contents: String,
    },
    /// `*** Delete File: PATH`: remove an existing file.
    Delete {
        /// The path as the patch wrote it.
        path: String,
    },
    /// `*** Update File: PATH`: change an existing file by hunks, and maybe rename it.
    Update {
        /// The path of the file to change, as the patch wrote it.
        path: String,
        /// `*** Move to: PATH`: where the changed file goes, if it is renamed.
        move_to: Option<String>,
        /// The hunks, in file order: each is sought after where the previous one matched.
        hunks: Vec<Hunk>,
    },
}

impl Patch {
    /// Every path the patch reads, writes or removes (move destinations included), in patch
    /// order, each once: what a caller checks against its writable roots, or shows in an
    /// approval, before applying.
    pub fn paths(&self) -> Vec<&str> {
        let mut seen = HashSet::new();
        let mut paths = Vec::new();
        for change in &self.changes {
            let destination = match change {
                FileChange::Update { move_to, .. } => move_to.as_deref(),
                FileChange::Add { .. } | FileChange::Delete { .. } => None,
            };
            for path in std::iter::once(change.path()).chain(destination) {
                if seen.insert(path) {
                    paths.push(path);
                }
            }
        }
        paths
    }
}

impl FileChange {
    /// What the change says before it is applied, as a patch's progress shows it (the
    /// reference's `item/fileChange/patchUpdated`): an added file's contents, nothing for a
    /// deletion, an update's hunks as the patch writes them (`@@` lines, then ` `, `-` and `+`
    /// lines); the unified diff against the file comes once it is applied.
    pub fn progress_text(&self) -> String {
        match self {
            FileChange::Add { contents, .. } => contents.clone(),
            FileChange::Delete { .. } => String::new(),
            FileChange::Update { hunks, .. } => Hunks(hunks).to_string(),
        }
    }

    /// The path the change reads or creates (for an update, the path before any move).
    pub fn path(&self) -> &str {
        match self {
            FileChange::Add { path, .. }
            | FileChange::Delete { path }
            | FileChange::Update { path, .. } => path,
        }
    }
}

/// One `@@` hunk of an update: where it goes (anchors, context) and what it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The texts of the `@@ TEXT` lines that introduce the hunk, in order (none for a bare
    /// `@@`). Each names a line (a function signature, a class header) that must be found, in
    /// this order, before the hunk's lines; the hunk's lines are sought after the last one.
    pub anchors: Vec<String>,
    /// The hunk's lines, in order, without their one-character prefix.
    pub lines: Vec<HunkLine>,
    /// `*** End of File` closed the hunk: its lines are at the end of the file.
    pub end_of_file: bool,
    /// The 1-based line of the patch text where the hunk starts (its first `@@`, or its first
    /// line when the first hunk of a file has no `@@`), for error messages.
    pub line: usize,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// ` TEXT`: a line that is in the file and stays.
    Context(String),
    /// `-TEXT`: a line that is in the file and goes.
    Remove(String),
    /// `+TEXT`: a line that the hunk adds.
    Add(String),
}

impl Hunk {
    /// The lines the hunk expects in the file: context and removed lines, in order.
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|line| match line {
                HunkLine::Context(text) | HunkLine::Remove(text) => Some(text.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }

    /// The lines the hunk leaves in their place: context and added lines, in order.
    pub fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|line| match line {
                HunkLine::Context(text) | HunkLine::Add(text) => Some(text.as_str()),
                HunkLine::Remove(_) => None,
            })
            .collect()
    }
}

impl fmt::Display for Patch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "*** Begin Patch")?;
        for change in &self.changes {
            match change {
                FileChange::Add { path, contents } => {
                    writeln!(f, "*** Add File: {path}")?;
                    // The format cannot say "no newline at the end": an added file's last line
                    // always gets one, so contents without it render as if they had it.
                    for line in contents.lines() {
                        writeln!(f, "+{line}")?;
                    }
                }
                FileChange::Delete { path } => writeln!(f, "*** Delete File: {path}")?,
                FileChange::Update {
                    path,
                    move_to,
                    hunks,
                } => {
                    writeln!(f, "*** Update File: {path}")?;
                    if let Some(to) = move_to {
                        writeln!(f, "*** Move to: {to}")?;
                    }
                    write!(f, "{}", Hunks(hunks))?;
                }
            }
        }
        writeln!(f, "*** End Patch")
    }
}

/// An update's hunks as the patch writes them.
struct Hunks<'h>(&'h [Hunk]);

impl fmt::Display for Hunks<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for hunk in self.0 {
            if hunk.anchors.is_empty() {
                writeln!(f, "@@")?;
            }
            for anchor in &hunk.anchors {
                writeln!(f, "@@ {anchor}")?;
            }
            for line in &hunk.lines {
                match line {
                    HunkLine::Context(text) => writeln!(f, " {text}")?,
                    HunkLine::Remove(text) => writeln!(f, "-{text}")?,
                    HunkLine::Add(text) => writeln!(f, "+{text}")?,
                }
            }
            if hunk.end_of_file {
                writeln!(f, "*** End of File")?;
            }
        }
        Ok(())
    }
}
