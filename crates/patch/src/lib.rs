//! The `apply_patch` format of the reference app-server, as pure functions over strings: parse a
//! patch, apply it to file contents the caller hands in, and render the outcome as a git-style
//! unified diff. Nothing here touches the file system or knows the protocol: the server reads
//! the files, decides approvals, writes the results and reports them.
//!
//! # The format
//!
//! ```text
//! *** Begin Patch
//! *** Add File: docs/hello.txt
//! +Hello
//! *** Update File: src/app.py
//! *** Move to: src/main.py
//! @@ def greet():
//! -    print("Hi")
//! +    print("Hello, world!")
//! *** Delete File: obsolete.txt
//! *** End Patch
//! ```
//!
//! An update's hunks start with `@@`, optionally naming anchor lines (`@@ def greet():`, several
//! `@@` lines in a row to narrow down) that are found first; the hunk's context (` `) and
//! removed (`-`) lines must then be found in the file, and are replaced by its context and added
//! (`+`) lines. `*** End of File` after a hunk pins it to the end of the file. Lines are matched
//! exactly first, then ignoring trailing whitespace, then ignoring leading and trailing
//! whitespace, then also treating typographic dashes, quotes and spaces as their ASCII forms.
//! An updated file keeps its line endings (CRLF when every line has one, on added lines too) and
//! always ends with one, as the reference leaves it.
//!
//! # Parse, apply, diff
//!
//! ```
//! use std::convert::Infallible;
//! use tandem_patch::{AppliedChange, apply, parse};
//!
//! let patch = parse(
//!     "*** Begin Patch\n\
//!      *** Update File: greet.py\n\
//!      @@ def greet():\n\
//!      -    print(\"Hi\")\n\
//!      +    print(\"Hello\")\n\
//!      *** End Patch",
//! )
//! .unwrap();
//!
//! // The caller reads the files: `None` is "no such file". Nothing is written here.
//! let changes = apply(&patch, |path| {
//!     Ok::<_, Infallible>(match path {
//!         "greet.py" => Some("def greet():\n    print(\"Hi\")\n".to_owned()),
//!         _ => None,
//!     })
//! })
//! .unwrap();
//!
//! let [AppliedChange::Update { new_contents, .. }] = changes.as_slice() else { panic!() };
//! assert_eq!(new_contents, "def greet():\n    print(\"Hello\")\n");
//! assert_eq!(
//!     changes[0].unified_diff(),
//!     "diff --git a/greet.py b/greet.py\n\
//!      --- a/greet.py\n\
//!      +++ b/greet.py\n\
//!      @@ -1,2 +1,2 @@\n \
//!      def greet():\n\
//!      -    print(\"Hi\")\n\
//!      +    print(\"Hello\")\n"
//! );
//! ```
//!
//! [`unified_diff`] renders any two contents of a file the same way, e.g. a file as a turn first
//! saw it and as it is now. [`parse_partial`] reads a patch the model is still streaming, to
//! show its progress. A patch that does not parse gives a [`ParseError`] naming the line
//! and what was expected there; one that does not apply gives an [`ApplyError`] naming the file
//! and the hunk, and nothing of it applies. Both say enough for a model to correct its patch.
//! [`Limits`] bounds the bytes a patch and each file may have.
//!
//! # Where this differs from the reference
//!
//! Patches the reference applies apply here the same way, except:
//!
//! - Nothing applies unless everything does (the reference writes file by file and stops at
//!   the first failure, leaving the changes before it).
//! - `*** Add File:` of a file that exists, and `*** Move to:` onto one, are refused (the
//!   reference overwrites it); deleting it first in the same patch makes room.
//! - Lines added under an `@@` anchor with no context go right after the anchor (the reference
//!   appends them at the end of the file).
//! - Several `@@` anchor lines in a row narrow down in order (the reference's instructions
//!   describe them; its parser refuses the second).
//! - A context line keeps the file's text when it matched leniently (the reference writes the
//!   patch's text, so a whitespace-insensitive match could rewrite indentation).

mod apply;
mod diff;
mod parse;
mod patch;
mod seek;
mod text;

pub use apply::{AppliedChange, ApplyError, apply, apply_with};
pub use diff::unified_diff;
pub use parse::{ParseError, parse, parse_partial, parse_with};
pub use patch::{FileChange, Hunk, HunkLine, Patch};

/// Bounds on what a patch may carry and touch, checked by [`parse_with`] and [`apply_with`]
/// ([`parse`] and [`apply`] use the defaults).
///
/// A model's tool call is the input: without them a single call could make the server hold a
/// file of any size in memory several times over (old contents, new contents, the diff).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes of patch text [`parse_with`] reads (default 4 MiB,
    /// [`Limits::DEFAULT_MAX_PATCH_BYTES`]).
    pub max_patch_bytes: usize,
    /// The most bytes one file may have, before or after the patch (default 16 MiB,
    /// [`Limits::DEFAULT_MAX_FILE_BYTES`]).
    pub max_file_bytes: usize,
}

impl Limits {
    /// The default of [`Limits::max_patch_bytes`]: 4 MiB, far above what a model writes in one
    /// tool call (its output is bounded by a few tens of thousands of tokens).
    pub const DEFAULT_MAX_PATCH_BYTES: usize = 4 << 20;
    /// The default of [`Limits::max_file_bytes`]: 16 MiB, above any source file a patch edits,
    /// below the files (logs, data, builds) that a patch has no business rewriting.
    pub const DEFAULT_MAX_FILE_BYTES: usize = 16 << 20;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_patch_bytes: Self::DEFAULT_MAX_PATCH_BYTES,
            max_file_bytes: Self::DEFAULT_MAX_FILE_BYTES,
        }
    }
}
