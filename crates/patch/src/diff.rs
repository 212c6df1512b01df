//! Git-style unified diffs of one file's contents before and after: the `diff` of a file change
//! and of a turn's changes. Deterministic: the same inputs give the same bytes, whatever the
//! machine or its load (no time-bounded search).

use std::fmt::Write as _;
use std::ops::Range;

use similar::{Algorithm, DiffOp, DiffTag, capture_diff_slices, group_diff_ops};

/// Lines of context around each change, as `git diff` shows by default.
const CONTEXT_LINES: usize = 3;

/// The most lines (old and new together, after the common start and end are set aside) that the
/// minimal diff is computed for. Myers' algorithm costs O((n + m) · d): for a rewrite of a large
/// file that is hours of CPU, so past this the changed middle is shown as removed and added as a
/// whole. Still a correct diff, just not the shortest, and the same every time.
const MAX_DIFFED_LINES: usize = 20_000;

/// The mode git shows for a regular file; this crate knows no modes.
const FILE_MODE: &str = "100644";

/// A git-style unified diff from `old` at `path_old` to `new` at `path_new` (`None`: the file
/// does not exist on that side), with 3 lines of context.
///
/// An added file gets `new file mode`, a deleted one `deleted file mode`, a renamed one
/// `rename from` / `rename to`; a file whose last line has no line ending gets `\ No newline at
/// end of file`. Nothing changed (same path, same contents, or no file on either side) gives an
/// empty string. Paths holding `"`, `\` or control characters are quoted as git quotes them.
///
/// ```
/// let diff = tandem_patch::unified_diff("a.txt", "a.txt", None, Some("hi\n"));
/// assert_eq!(
///     diff,
///     "diff --git a/a.txt b/a.txt\nnew file mode 100644\n--- /dev/null\n+++ b/a.txt\n\
///      @@ -0,0 +1 @@\n+hi\n"
/// );
/// ```
pub fn unified_diff(
    path_old: &str,
    path_new: &str,
    old: Option<&str>,
    new: Option<&str>,
) -> String {
    let mut out = String::new();
    match (old, new) {
        (None, None) => {}
        (None, Some(new)) => {
            header(&mut out, path_new, path_new);
            let _ = writeln!(out, "new file mode {FILE_MODE}");
            if !new.is_empty() {
                let _ = writeln!(out, "--- /dev/null\n+++ {}", label("b/", path_new));
                hunks(&mut out, "", new);
            }
        }
        (Some(old), None) => {
            header(&mut out, path_old, path_old);
            let _ = writeln!(out, "deleted file mode {FILE_MODE}");
            if !old.is_empty() {
                let _ = writeln!(out, "--- {}\n+++ /dev/null", label("a/", path_old));
                hunks(&mut out, old, "");
            }
        }
        (Some(old), Some(new)) => {
            let renamed = path_old != path_new;
            if !renamed && old == new {
                return out;
            }
            header(&mut out, path_old, path_new);
            if renamed {
                let _ = writeln!(
                    out,
                    "rename from {}\nrename to {}",
                    quoted("", path_old),
                    quoted("", path_new)
                );
            }
            if old != new {
                let _ = writeln!(
                    out,
                    "--- {}\n+++ {}",
                    label("a/", path_old),
                    label("b/", path_new)
                );
                hunks(&mut out, old, new);
            }
        }
    }
    out
}

fn header(out: &mut String, path_old: &str, path_new: &str) {
    let _ = writeln!(
        out,
        "diff --git {} {}",
        quoted("a/", path_old),
        quoted("b/", path_new)
    );
}

/// A `---` / `+++` line's file name: [`quoted`], and a tab after a name with a space, as git
/// writes it so that `patch` reads the whole name.
fn label(prefix: &str, path: &str) -> String {
    let mut label = quoted(prefix, path);
    if path.contains(' ') {
        label.push('\t');
    }
    label
}

/// `prefix` and `path`, in double quotes with C escapes when the path holds a character git
/// quotes (a quote, a backslash, a control character); as is otherwise.
fn quoted(prefix: &str, path: &str) -> String {
    if !path
        .chars()
        .any(|c| c == '"' || c == '\\' || c.is_control())
    {
        return format!("{prefix}{path}");
    }
    let mut out = format!("\"{prefix}");
    for c in path.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let mut bytes = [0; 4];
                for byte in c.encode_utf8(&mut bytes).bytes() {
                    let _ = write!(out, "\\{byte:03o}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `@@` hunks from `old` to `new`, lines compared with their endings (so a last line that
/// gains or loses its line ending shows as changed).
fn hunks(out: &mut String, old: &str, new: &str) {
    let old: Vec<&str> = old.split_inclusive('\n').collect();
    let new: Vec<&str> = new.split_inclusive('\n').collect();
    for group in group_diff_ops(line_ops(&old, &new), CONTEXT_LINES) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            hunk_range(&old_range),
            hunk_range(&new_range)
        );
        for op in &group {
            let (tag, old_lines, new_lines) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => lines(out, ' ', &old[old_lines]),
                DiffTag::Delete => lines(out, '-', &old[old_lines]),
                DiffTag::Insert => lines(out, '+', &new[new_lines]),
                DiffTag::Replace => {
                    lines(out, '-', &old[old_lines]);
                    lines(out, '+', &new[new_lines]);
                }
            }
        }
    }
}

/// The edit script from `old` to `new`: Myers' minimal diff, unless the changed middle is too
/// large to compute it in bounded time (see [`MAX_DIFFED_LINES`]).
fn line_ops(old: &[&str], new: &[&str]) -> Vec<DiffOp> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let old_middle = old.len() - prefix - suffix;
    let new_middle = new.len() - prefix - suffix;
    if old_middle + new_middle <= MAX_DIFFED_LINES {
        return renumbered(capture_diff_slices(Algorithm::Myers, old, new));
    }
    let mut ops = Vec::with_capacity(4);
    if prefix > 0 {
        ops.push(DiffOp::Equal {
            old_index: 0,
            new_index: 0,
            len: prefix,
        });
    }
    ops.push(match (old_middle, new_middle) {
        (0, new_len) => DiffOp::Insert {
            old_index: prefix,
            new_index: prefix,
            new_len,
        },
        (old_len, 0) => DiffOp::Delete {
            old_index: prefix,
            old_len,
            new_index: prefix,
        },
        (old_len, new_len) => DiffOp::Replace {
            old_index: prefix,
            old_len,
            new_index: prefix,
            new_len,
        },
    });
    if suffix > 0 {
        ops.push(DiffOp::Equal {
            old_index: prefix + old_middle,
            new_index: prefix + new_middle,
            len: suffix,
        });
    }
    ops
}

/// `ops` with each op's indices recomputed from the lengths of the ops before it.
///
/// `similar` 2.7's Myers can give a `Delete` a `new_index` past where the new side stands (a
/// delete at the start followed by an equal run that starts at new index 0 came back as
/// `Delete { new_index: 1 }`), and the hunk headers are computed from those indices. The ops'
/// order and lengths are right, so walking them gives every index back.
fn renumbered(ops: Vec<DiffOp>) -> Vec<DiffOp> {
    let (mut old_index, mut new_index) = (0, 0);
    ops.into_iter()
        .map(|op| {
            let (tag, old, new) = op.as_tag_tuple();
            let (old_len, new_len) = (old.len(), new.len());
            let op = match tag {
                DiffTag::Equal => DiffOp::Equal {
                    old_index,
                    new_index,
                    len: old_len,
                },
                DiffTag::Delete => DiffOp::Delete {
                    old_index,
                    old_len,
                    new_index,
                },
                DiffTag::Insert => DiffOp::Insert {
                    old_index,
                    new_index,
                    new_len,
                },
                DiffTag::Replace => DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                },
            };
            old_index += old_len;
            new_index += new_len;
            op
        })
        .collect()
}

/// A hunk header's range as `diff -u` writes it: `start,len` counted from 1, `start` alone when
/// the range is one line, and the line before the range (0 at the start) when it is empty.
fn hunk_range(range: &Range<usize>) -> String {
    match range.len() {
        0 => format!("{},0", range.start),
        1 => format!("{}", range.start + 1),
        len => format!("{},{len}", range.start + 1),
    }
}

fn lines(out: &mut String, prefix: char, lines: &[&str]) {
    for line in lines {
        out.push(prefix);
        match line.strip_suffix('\n') {
            Some(text) => {
                out.push_str(text);
                out.push('\n');
            }
            None => {
                out.push_str(line);
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
