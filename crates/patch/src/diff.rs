//! Git-style unified diffs of one file's contents before and after: the `diff` of a file change
//! and of a turn's changes. Deterministic: the same inputs give the same bytes, whatever the
//! machine or its load (no time-bounded search).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;

use similar::{Algorithm, DiffOp, DiffTag, capture_diff_slices, group_diff_ops};

/// Lines of context around each change, as `git diff` shows by default.
const CONTEXT_LINES: usize = 3;

/// The most lines (old and new together, after the common start and end are set aside) that the
/// minimal diff is computed for. Myers' algorithm costs O((n + m) · d): for a rewrite of a large
/// file that is hours of CPU, so past this the changed middle is cut at lines that occur once on
/// each side ([`unique_anchors`]) and what cannot be cut is shown as removed and added as a
/// whole. Still a correct diff, maybe not the shortest, and the same every time.
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

/// The edit script from `old` to `new`: Myers' minimal diff where the changed middle is small
/// enough (see [`MAX_DIFFED_LINES`]); past that, the middle is cut at the lines found exactly
/// once on each side, in the same order on both (patience diff's anchors), and each piece
/// between them diffed the same way, so that a few changes scattered over a large file still
/// show as a few small hunks. A piece that is still too large and has no such line is shown as
/// removed and added as a whole.
fn line_ops(old: &[&str], new: &[&str]) -> Vec<DiffOp> {
    let mut ops = Vec::new();
    diff_into(old, new, 0, &mut ops);
    renumbered(merged(ops))
}

/// How many times a large piece is cut at anchors within anchors before it is shown whole:
/// each cut costs a pass over the piece, so this bounds the work to a few passes over the file.
const MAX_ANCHOR_DEPTH: usize = 8;

/// Appends the ops from `old` to `new` (indices relative; [`renumbered`] fixes them).
fn diff_into(old: &[&str], new: &[&str], depth: usize, ops: &mut Vec<DiffOp>) {
    if old.is_empty() || new.is_empty() {
        // Nothing to match (between neighbouring anchors, most often): no search needed.
        ops.extend(whole(old.len(), new.len()));
        return;
    }
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let old_middle = &old[prefix..old.len() - suffix];
    let new_middle = &new[prefix..new.len() - suffix];
    push_equal(ops, prefix);
    if old_middle.len() + new_middle.len() <= MAX_DIFFED_LINES {
        ops.extend(capture_diff_slices(
            Algorithm::Myers,
            old_middle,
            new_middle,
        ));
    } else {
        let anchors = if depth < MAX_ANCHOR_DEPTH {
            unique_anchors(old_middle, new_middle)
        } else {
            Vec::new()
        };
        if anchors.is_empty() {
            ops.extend(whole(old_middle.len(), new_middle.len()));
        } else {
            let (mut old_at, mut new_at) = (0, 0);
            for (old_anchor, new_anchor) in anchors {
                diff_into(
                    &old_middle[old_at..old_anchor],
                    &new_middle[new_at..new_anchor],
                    depth + 1,
                    ops,
                );
                push_equal(ops, 1);
                (old_at, new_at) = (old_anchor + 1, new_anchor + 1);
            }
            diff_into(&old_middle[old_at..], &new_middle[new_at..], depth + 1, ops);
        }
    }
    push_equal(ops, suffix);
}

fn push_equal(ops: &mut Vec<DiffOp>, len: usize) {
    if len > 0 {
        ops.push(DiffOp::Equal {
            old_index: 0,
            new_index: 0,
            len,
        });
    }
}

/// `old_len` lines removed and `new_len` added, as one op (none when both are empty).
fn whole(old_len: usize, new_len: usize) -> Option<DiffOp> {
    match (old_len, new_len) {
        (0, 0) => None,
        (0, new_len) => Some(DiffOp::Insert {
            old_index: 0,
            new_index: 0,
            new_len,
        }),
        (old_len, 0) => Some(DiffOp::Delete {
            old_index: 0,
            old_len,
            new_index: 0,
        }),
        (old_len, new_len) => Some(DiffOp::Replace {
            old_index: 0,
            old_len,
            new_index: 0,
            new_len,
        }),
    }
}

/// The lines found exactly once in `old` and once in `new`, as `(old index, new index)`: the
/// longest run of them in the same order on both sides (a longest increasing subsequence of
/// the new indices, by patience sorting). Deterministic: ties go to the earliest line.
fn unique_anchors(old: &[&str], new: &[&str]) -> Vec<(usize, usize)> {
    // Per line: occurrences in old, in new, and the index of the (only) one on each side.
    let mut seen: HashMap<&str, (u32, u32, usize, usize)> = HashMap::with_capacity(old.len());
    for (index, line) in old.iter().enumerate() {
        let entry = seen.entry(line).or_insert((0, 0, index, 0));
        entry.0 += 1;
    }
    for (index, line) in new.iter().enumerate() {
        if let Some(entry) = seen.get_mut(line) {
            entry.1 += 1;
            entry.3 = index;
        }
    }
    let mut pairs: Vec<(usize, usize)> = seen
        .into_values()
        .filter(|&(in_old, in_new, _, _)| in_old == 1 && in_new == 1)
        .map(|(_, _, old_index, new_index)| (old_index, new_index))
        .collect();
    pairs.sort_unstable();
    // Patience sorting: `tails[k]` is the pair ending the best run of length k + 1 so far.
    let mut tails: Vec<usize> = Vec::new();
    let mut previous: Vec<Option<usize>> = vec![None; pairs.len()];
    for (position, &(_, new_index)) in pairs.iter().enumerate() {
        let length = tails.partition_point(|&tail| pairs[tail].1 < new_index);
        previous[position] = length.checked_sub(1).map(|before| tails[before]);
        if length == tails.len() {
            tails.push(position);
        } else {
            tails[length] = position;
        }
    }
    let mut run = Vec::with_capacity(tails.len());
    let mut at = tails.last().copied();
    while let Some(position) = at {
        run.push(pairs[position]);
        at = previous[position];
    }
    run.reverse();
    run
}

/// `ops` with neighbouring equal runs joined, so that the hunks' context is cut as for one run.
fn merged(ops: Vec<DiffOp>) -> Vec<DiffOp> {
    let mut out: Vec<DiffOp> = Vec::with_capacity(ops.len());
    for op in ops {
        if let (
            DiffOp::Equal { len, .. },
            Some(DiffOp::Equal {
                len: previous_len, ..
            }),
        ) = (&op, out.last_mut())
        {
            *previous_len += len;
            continue;
        }
        out.push(op);
    }
    out
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
