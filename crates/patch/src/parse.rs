//! The parser: patch text to [`Patch`], or a [`ParseError`] that names the line and says what
//! was expected there.
//!
//! The grammar is the reference's, with its leniency: markers may carry surrounding whitespace,
//! blank lines before `*** Begin Patch` and after `*** End Patch` are ignored, a patch wrapped
//! in a shell heredoc (`<<'EOF'` … `EOF`, as models write it for a shell tool) is unwrapped, the
//! first hunk of an update may omit its `@@`, and a line with nothing on it inside a hunk is an
//! empty context line. Beyond the reference: several `@@` anchor lines in a row (its tool
//! instructions describe them, its parser refuses the second), blank lines between file
//! operations, and a unified-diff hunk header (`@@ -12,5 +12,6 @@`) read as a bare `@@` rather
//! than as an anchor that no file contains.
//!
//! [`parse_partial`] runs the same parser in a mode that stops quietly where the text stops
//! making sense, for a patch still streaming in.

use thiserror::Error;

use crate::Limits;
use crate::patch::{FileChange, Hunk, HunkLine, Patch};
use crate::text::quote;

const BEGIN_PATCH: &str = "*** Begin Patch";
const END_PATCH: &str = "*** End Patch";
const ADD_FILE: &str = "*** Add File:";
const DELETE_FILE: &str = "*** Delete File:";
const UPDATE_FILE: &str = "*** Update File:";
const MOVE_TO: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// What the parser expected at a file operation's header, quoted in its errors.
const FILE_OPERATIONS: &str =
    "`*** Add File: PATH`, `*** Delete File: PATH`, `*** Update File: PATH` or `*** End Patch`";

/// Why a patch text does not parse. Every message names the 1-based line of the text (counted in
/// the text as given, heredoc lines included) and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    /// The text is longer than [`Limits::max_patch_bytes`].
    #[error("the patch is {bytes} bytes, more than the {limit} bytes a patch may have")]
    TooLarge {
        /// The text's length in bytes.
        bytes: usize,
        /// The bound it passed.
        limit: usize,
    },
    /// The first line is not `*** Begin Patch`.
    #[error("line {line}: expected `*** Begin Patch` as the first line, found `{found}`")]
    MissingBegin {
        /// The line looked at.
        line: usize,
        /// What it holds (shortened).
        found: String,
    },
    /// The last line is not `*** End Patch`.
    #[error("line {line}: expected `*** End Patch` as the last line, found `{found}`")]
    MissingEnd {
        /// The last line of the text.
        line: usize,
        /// What it holds (shortened).
        found: String,
    },
    /// `*** Begin Patch` is followed directly by `*** End Patch`.
    #[error("line {line}: the patch changes no file: expected {FILE_OPERATIONS}")]
    NoChanges {
        /// The line of `*** End Patch`.
        line: usize,
    },
    /// A line where a file operation should start is none.
    #[error("line {line}: expected {FILE_OPERATIONS}, found `{found}`{hint}")]
    ExpectedFileOperation {
        /// The line.
        line: usize,
        /// What it holds (shortened).
        found: String,
        /// A hint when the line probably belongs to the operation before it (empty otherwise).
        hint: &'static str,
    },
    /// A file operation or `*** Move to:` names no path.
    #[error("line {line}: `{marker}` names no file: expected `{marker} PATH`")]
    MissingPath {
        /// The line.
        line: usize,
        /// The marker without a path.
        marker: &'static str,
    },
    /// An `*** Update File:` has no hunk.
    #[error(
        "line {line}: `*** Update File: {path}` changes nothing: expected a hunk, `@@` followed \
         by lines starting with ' ' (context), '-' (remove) or '+' (add)"
    )]
    EmptyUpdate {
        /// The line of the `*** Update File:`.
        line: usize,
        /// Its path.
        path: String,
    },
    /// A hunk has no line after its `@@`.
    #[error(
        "line {line}: the hunk has no lines: expected lines starting with ' ' (context), '-' \
         (remove) or '+' (add) after `@@`"
    )]
    EmptyHunk {
        /// The line where the hunk starts.
        line: usize,
    },
    /// A hunk other than the first of its file does not start with `@@`.
    #[error("line {line}: expected `@@` to start the next hunk, found `{found}`")]
    ExpectedHunkStart {
        /// The line.
        line: usize,
        /// What it holds (shortened).
        found: String,
    },
    /// A line inside a hunk has none of the hunk prefixes.
    #[error(
        "line {line}: expected a hunk line starting with ' ' (context), '-' (remove) or '+' \
         (add), found `{found}`"
    )]
    BadHunkLine {
        /// The line.
        line: usize,
        /// What it holds (shortened).
        found: String,
    },
}

/// Parses a patch with the default [`Limits`].
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    parse_with(text, &Limits::default())
}

/// Parses a patch, refusing text longer than `limits.max_patch_bytes`. Never panics.
pub fn parse_with(text: &str, limits: &Limits) -> Result<Patch, ParseError> {
    let lines = numbered_lines(text, limits)?;
    let body = patch_body(&lines)?;
    Parser {
        lines: body.lines,
        pos: 0,
        partial: false,
    }
    .changes(body.end_line)
}

/// Parses the start of a patch that a model is still writing, for showing its progress: what
/// it has changed so far, never to apply (a hunk may still be missing lines).
///
/// The text must start with `*** Begin Patch`; `*** End Patch` may be missing. A last line
/// without its line ending is left out (a path or a line may be cut short), and so is whatever
/// does not parse yet after the changes that do: an `*** Update File:` whose hunks have not
/// arrived is an update with no hunks. As the text grows, the changes only grow; once it is
/// whole they are [`parse_with`]'s. Errors only for a text over the bound or one that does not
/// start as a patch.
pub fn parse_partial(text: &str, limits: &Limits) -> Result<Patch, ParseError> {
    let mut lines = numbered_lines(text, limits)?;
    let first = lines.iter().position(|line| !line.is_blank());
    let Some(first) = first else {
        return Ok(Patch::default());
    };
    let begin = lines[first].text.trim();
    if begin != BEGIN_PATCH {
        // The marker itself may still be arriving.
        if first + 1 == lines.len() && !text.ends_with('\n') && BEGIN_PATCH.starts_with(begin) {
            return Ok(Patch::default());
        }
        return Err(ParseError::MissingBegin {
            line: lines[first].number,
            found: quote(lines[first].text),
        });
    }
    let last = lines
        .iter()
        .rposition(|line| !line.is_blank())
        .unwrap_or(first);
    if last > first && lines[last].text.trim() == END_PATCH {
        lines.truncate(last);
    } else if !text.ends_with('\n') {
        lines.pop();
    }
    let body = lines.get(first + 1..).unwrap_or_default();
    Parser {
        lines: body,
        pos: 0,
        partial: true,
    }
    // No end line: a partial parse never reports `NoChanges`.
    .changes(0)
}

/// The text's lines, numbered from 1, once the text is known to be within the bound.
fn numbered_lines<'a>(text: &'a str, limits: &Limits) -> Result<Vec<Line<'a>>, ParseError> {
    if text.len() > limits.max_patch_bytes {
        return Err(ParseError::TooLarge {
            bytes: text.len(),
            limit: limits.max_patch_bytes,
        });
    }
    Ok(text
        .lines()
        .enumerate()
        .map(|(index, text)| Line {
            number: index + 1,
            text,
        })
        .collect())
}

/// One line of the patch text with its 1-based number.
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    number: usize,
    text: &'a str,
}

impl Line<'_> {
    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }
}

/// The lines between `*** Begin Patch` and `*** End Patch`, and the number of the latter.
struct Body<'l, 'a> {
    lines: &'l [Line<'a>],
    end_line: usize,
}

/// Finds the patch's markers, unwrapping a heredoc the model put around it.
fn patch_body<'l, 'a>(lines: &'l [Line<'a>]) -> Result<Body<'l, 'a>, ParseError> {
    let first = lines.iter().position(|line| !line.is_blank());
    let last = lines.iter().rposition(|line| !line.is_blank());
    let (Some(first), Some(last)) = (first, last) else {
        return Err(ParseError::MissingBegin {
            line: 1,
            found: String::new(),
        });
    };
    let trimmed = &lines[first..=last];
    let strict = between_markers(trimmed);
    if strict.is_ok() {
        return strict;
    }
    // A heredoc needs its two lines and the patch's two markers.
    let opener = trimmed[0].text.trim();
    if trimmed.len() >= 4
        && matches!(opener, "<<EOF" | "<<'EOF'" | "<<\"EOF\"")
        && trimmed[trimmed.len() - 1].text.trim_end().ends_with("EOF")
    {
        return between_markers(&trimmed[1..trimmed.len() - 1]);
    }
    strict
}

fn between_markers<'l, 'a>(lines: &'l [Line<'a>]) -> Result<Body<'l, 'a>, ParseError> {
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return Err(ParseError::MissingBegin {
            line: 1,
            found: String::new(),
        });
    };
    if first.text.trim() != BEGIN_PATCH {
        return Err(ParseError::MissingBegin {
            line: first.number,
            found: quote(first.text),
        });
    }
    if lines.len() < 2 || last.text.trim() != END_PATCH {
        return Err(ParseError::MissingEnd {
            line: last.number,
            found: quote(last.text),
        });
    }
    Ok(Body {
        lines: &lines[1..lines.len() - 1],
        end_line: last.number,
    })
}

/// A cursor over the lines between the markers.
struct Parser<'l, 'a> {
    lines: &'l [Line<'a>],
    pos: usize,
    /// [`parse_partial`]: stop quietly at what does not parse yet.
    partial: bool,
}

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.pos).copied()
    }

    fn skip_blank(&mut self) {
        while self.peek().is_some_and(|line| line.is_blank()) {
            self.pos += 1;
        }
    }

    fn changes(mut self, end_line: usize) -> Result<Patch, ParseError> {
        let mut changes = Vec::new();
        loop {
            match self.change(&changes) {
                Ok(Some(change)) => changes.push(change),
                Ok(None) => break,
                // What does not parse yet is the part still being written.
                Err(_) if self.partial => break,
                Err(error) => return Err(error),
            }
        }
        if changes.is_empty() && !self.partial {
            return Err(ParseError::NoChanges { line: end_line });
        }
        Ok(Patch { changes })
    }

    /// The next file operation, if any (`earlier`: those before it, for hints).
    fn change(&mut self, earlier: &[FileChange]) -> Result<Option<FileChange>, ParseError> {
        self.skip_blank();
        let Some(line) = self.peek() else {
            return Ok(None);
        };
        self.pos += 1;
        let header = line.text.trim();
        let change = if let Some(path) = header.strip_prefix(ADD_FILE) {
            let path = path_of(path, ADD_FILE, line)?;
            self.add(path)
        } else if let Some(path) = header.strip_prefix(DELETE_FILE) {
            FileChange::Delete {
                path: path_of(path, DELETE_FILE, line)?,
            }
        } else if let Some(path) = header.strip_prefix(UPDATE_FILE) {
            let path = path_of(path, UPDATE_FILE, line)?;
            self.update(path, line)?
        } else {
            // A line without `+` right after an added file's lines is most likely one of
            // them: say so, since "expected a file operation" alone would puzzle.
            let hint = match earlier.last() {
                Some(FileChange::Add { .. }) => {
                    "; every line of an added file starts with '+' (an empty line is `+`)"
                }
                _ => "",
            };
            return Err(ParseError::ExpectedFileOperation {
                line: line.number,
                found: quote(line.text),
                hint,
            });
        };
        Ok(Some(change))
    }

    fn add(&mut self, path: String) -> FileChange {
        let mut contents = String::new();
        while let Some(text) = self.peek().and_then(|line| line.text.strip_prefix('+')) {
            contents.push_str(text);
            contents.push('\n');
            self.pos += 1;
        }
        FileChange::Add { path, contents }
    }

    fn update(&mut self, path: String, header: Line<'a>) -> Result<FileChange, ParseError> {
        let mut move_to = None;
        if let Some(line) = self.peek()
            && let Some(to) = line.text.trim().strip_prefix(MOVE_TO)
        {
            move_to = Some(path_of(to, MOVE_TO, line)?);
            self.pos += 1;
        }
        let mut hunks = Vec::new();
        loop {
            self.skip_blank();
            let Some(line) = self.peek() else { break };
            // The next file operation (or a stray marker the caller reports).
            if line.text.starts_with('*') && !is_end_of_file(line.text) {
                break;
            }
            match self.hunk(hunks.is_empty()) {
                Ok(hunk) => hunks.push(hunk),
                // The hunk still being written (a bare `@@` so far): the update so far, and
                // nothing after it.
                Err(_) if self.partial => {
                    self.pos = self.lines.len();
                    break;
                }
                Err(error) => return Err(error),
            }
        }
        if hunks.is_empty() && !self.partial {
            return Err(ParseError::EmptyUpdate {
                line: header.number,
                path,
            });
        }
        Ok(FileChange::Update {
            path,
            move_to,
            hunks,
        })
    }

    /// One hunk, starting at the current line (not blank, not a file operation).
    fn hunk(&mut self, first_of_file: bool) -> Result<Hunk, ParseError> {
        let start = self.peek().map_or(0, |line| line.number);
        let mut anchors = Vec::new();
        let mut marked = false;
        while let Some(line) = self.peek()
            && let Some(rest) = line.text.strip_prefix("@@")
        {
            marked = true;
            self.pos += 1;
            let anchor = rest.strip_prefix(' ').unwrap_or(rest);
            if !anchor.trim().is_empty() && !is_unified_range(anchor) {
                anchors.push(anchor.to_owned());
            }
        }
        if !marked && !first_of_file {
            let line = self.peek().map_or(start, |line| line.number);
            let found = self.peek().map_or(String::new(), |line| quote(line.text));
            return Err(ParseError::ExpectedHunkStart { line, found });
        }

        let mut lines = Vec::new();
        // Lines with nothing on them at the end of a hunk separate it from what follows rather
        // than demand empty lines in the file; within the hunk they are empty context.
        let mut trailing_empty = 0;
        let mut end_of_file = false;
        while let Some(line) = self.peek() {
            let text = line.text;
            if is_end_of_file(text) {
                self.pos += 1;
                end_of_file = true;
                break;
            }
            let parsed = match text.chars().next() {
                None => HunkLine::Context(String::new()),
                Some(' ') => HunkLine::Context(text[1..].to_owned()),
                Some('-') => HunkLine::Remove(text[1..].to_owned()),
                Some('+') => HunkLine::Add(text[1..].to_owned()),
                // The next hunk, or the next file operation.
                Some('@') if text.starts_with("@@") => break,
                Some('*') => break,
                Some(_) => {
                    return Err(ParseError::BadHunkLine {
                        line: line.number,
                        found: quote(text),
                    });
                }
            };
            trailing_empty = if text.is_empty() {
                trailing_empty + 1
            } else {
                0
            };
            lines.push(parsed);
            self.pos += 1;
        }
        if trailing_empty < lines.len() {
            lines.truncate(lines.len() - trailing_empty);
        }
        if lines.is_empty() {
            return Err(ParseError::EmptyHunk { line: start });
        }
        Ok(Hunk {
            anchors,
            lines,
            end_of_file,
            line: start,
        })
    }
}

fn is_end_of_file(text: &str) -> bool {
    text.trim_end() == END_OF_FILE
}

/// The path after a marker, trimmed; an error when there is none.
fn path_of(rest: &str, marker: &'static str, line: Line<'_>) -> Result<String, ParseError> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(ParseError::MissingPath {
            line: line.number,
            marker,
        });
    }
    Ok(path.to_owned())
}

/// Whether an `@@` line's text is a unified diff's range (`-12,5 +12,6 @@ …`), which models used
/// to `git diff` write out of habit: no file line reads like that, so it is no anchor.
fn is_unified_range(text: &str) -> bool {
    fn range(text: &str, sign: char) -> Option<&str> {
        let rest = text.strip_prefix(sign)?;
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        let rest = &rest[digits..];
        match rest.strip_prefix(',') {
            Some(count) => {
                let digits =
                    count.len() - count.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                (digits > 0).then(|| &count[digits..])
            }
            None => Some(rest),
        }
    }
    let Some(rest) = range(text.trim_start(), '-') else {
        return false;
    };
    let Some(rest) = range(rest.trim_start(), '+') else {
        return false;
    };
    rest.trim_start().starts_with("@@")
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
