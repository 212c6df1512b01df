//! Property tests of the patch crate (issue 29): any text parses or gives an error, never a
//! panic (what the fuzz target checks at depth, which CI cannot run without nightly), and a
//! patch read while it streams in only grows into the whole patch's changes; a patch
//! written from a random edit applies to the old contents and yields the new ones; a parsed
//! patch prints back to the same patch; and `unified_diff` output, applied back as `patch`
//! would, turns the old contents into the new with hunk headers that count their lines.

use std::collections::BTreeMap;
use std::convert::Infallible;

use proptest::prelude::*;
use tandem_patch::{
    AppliedChange, FileChange, Hunk, HunkLine, Limits, Patch, apply, apply_with, parse,
    parse_partial, parse_with, unified_diff,
};

/// Lines that reach every branch of the parser when shuffled together.
const PATCH_LINES: &[&str] = &[
    "*** Begin Patch",
    "*** End Patch",
    "*** Add File: a",
    "*** Add File: b",
    "*** Update File: a",
    "*** Update File: b",
    "*** Delete File: a",
    "*** Delete File: c",
    "*** Move to: c",
    "*** Move to: a",
    "*** End of File",
    "*** Add File:",
    "@@",
    "@@ x",
    "@@ -1,2 +1,3 @@",
    "@@@",
    "+x",
    "+",
    "-x",
    "-y",
    " x",
    " y",
    " ",
    "",
    "<<'EOF'",
    "EOF",
    "x",
    "*",
    "  *** End Patch  ",
];

/// Text that looks like a patch: known lines and random ones, with either line ending.
fn patch_like() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => prop::sample::select(PATCH_LINES).prop_map(str::to_owned),
        1 => "[ -~\t\u{a0}\u{2014}é]{0,12}",
    ];
    (
        prop::collection::vec(line, 0..24),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, crlf, framed)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let body = lines.join(eol);
            if framed {
                format!("*** Begin Patch{eol}{body}{eol}*** End Patch")
            } else {
                body
            }
        })
}

/// Small file contents over an alphabet that makes lines repeat and whitespace vary.
fn contents() -> impl Strategy<Value = String> {
    "[xy \t\r\n]{0,24}"
}

/// The same patch with the patch-text line numbers cleared, for comparing reparsed patches.
fn without_lines(mut patch: Patch) -> Patch {
    for change in &mut patch.changes {
        if let FileChange::Update { hunks, .. } = change {
            for hunk in hunks {
                hunk.line = 0;
            }
        }
    }
    patch
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any string parses or gives an error naming a line inside the text; never a panic.
    #[test]
    fn any_text_parses_or_errs(text in any::<String>()) {
        check_parse(&text);
    }

    /// Patch-shaped text reaches the deep branches: parsing, applying to random files, and
    /// rendering each outcome's diff never panic, and what parses prints back to itself.
    #[test]
    fn patch_like_text_never_panics(
        text in patch_like(),
        files in prop::collection::btree_map(
            prop::sample::select(vec!["a", "b", "c"]), contents(), 0..3),
    ) {
        check_parse(&text);
        check_streamed(&text);
        if let Ok(patch) = parse(&text) {
            let reparsed = parse(&patch.to_string()).expect("a printed patch parses");
            prop_assert_eq!(without_lines(reparsed), without_lines(patch.clone()));
            let limits = Limits { max_file_bytes: 64, ..Limits::default() };
            if let Ok(changes) = apply_with(&patch, &limits, |path| {
                Ok::<_, Infallible>(files.get(path).cloned())
            }) {
                for change in &changes {
                    let _ = change.unified_diff();
                }
            }
        }
    }
}

fn check_parse(text: &str) {
    if let Err(error) = parse(text) {
        let message = error.to_string();
        assert!(!message.is_empty());
        // Every error but the size bound names a line of the text (1 for an empty text).
        if let Some(rest) = message.strip_prefix("line ") {
            let number: usize = rest
                .split(':')
                .next()
                .and_then(|n| n.parse().ok())
                .expect("a line number");
            assert!(
                number >= 1 && number <= text.lines().count().max(1),
                "{message}"
            );
        }
    }
    let small = Limits {
        max_patch_bytes: 16,
        ..Limits::default()
    };
    if text.len() > 16 {
        assert!(parse_with(text, &small).is_err());
    }
}

/// `parse_partial` over every prefix of a text that starts as a patch: never an error, the
/// changes never fewer, and the whole text's changes those of `parse` when it parses.
fn check_streamed(text: &str) {
    let starts_as_patch = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .is_some_and(|line| line.trim() == "*** Begin Patch");
    if !starts_as_patch {
        return;
    }
    let limits = Limits::default();
    let mut count = 0;
    for end in (0..=text.len()).filter(|end| text.is_char_boundary(*end)) {
        let prefix = &text[..end];
        let patch =
            parse_partial(prefix, &limits).unwrap_or_else(|error| panic!("{error} for {prefix:?}"));
        assert!(patch.changes.len() >= count, "fewer changes at {prefix:?}");
        count = patch.changes.len();
    }
    if let Ok(whole) = parse(text) {
        assert_eq!(parse_partial(text, &limits).unwrap(), whole);
    }
}

/// One step of a random edit of a file's lines.
#[derive(Debug, Clone)]
enum Edit {
    Keep(String),
    Remove(String),
    Insert(String),
}

fn edit() -> impl Strategy<Value = Edit> {
    // Few distinct lines, so that hunks' context repeats elsewhere in the file, and characters
    // that mean something to the parser at the start of a line.
    let line = "[ab *@+-]{0,3}";
    prop_oneof![
        3 => line.prop_map(Edit::Keep),
        1 => line.prop_map(Edit::Remove),
        1 => line.prop_map(Edit::Insert),
    ]
}

/// The update hunks that turn the edit's old lines into its new lines: each hunk's context runs
/// from the previous hunk's end, so it is found where it was cut from even when its lines
/// repeat elsewhere.
/// With `anchored`, a hunk whose first line is context names that line in `@@` instead.
fn hunks_of(edits: &[Edit], eof_marker: bool, anchored: bool) -> Vec<Hunk> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut pending = Vec::new();
    let mut i = 0;
    while i < edits.len() {
        if let Edit::Keep(line) = &edits[i] {
            pending.push(HunkLine::Context(line.clone()));
            i += 1;
            continue;
        }
        let mut lines: Vec<HunkLine> = std::mem::take(&mut pending);
        while let Some(edit) = edits.get(i) {
            match edit {
                Edit::Keep(_) => break,
                Edit::Remove(line) => lines.push(HunkLine::Remove(line.clone())),
                Edit::Insert(line) => lines.push(HunkLine::Add(line.clone())),
            }
            i += 1;
        }
        let has_old = lines.iter().any(|line| !matches!(line, HunkLine::Add(_)));
        if !has_old {
            match (edits.get(i), hunks.last_mut()) {
                // Lines added alone would be appended at the end: anchor them on the next line.
                (Some(Edit::Keep(next)), _) => {
                    lines.push(HunkLine::Context(next.clone()));
                    i += 1;
                }
                // Added at the very end, right after the previous hunk: part of it.
                (None, Some(previous)) => {
                    previous.lines.extend(lines);
                    continue;
                }
                // Added to an empty file.
                _ => {}
            }
        }
        let mut anchors = Vec::new();
        if anchored
            && lines.len() > 1
            && let HunkLine::Context(first) = &lines[0]
            && !first.trim().is_empty()
        {
            anchors.push(first.clone());
            lines.remove(0);
        }
        hunks.push(Hunk {
            anchors,
            lines,
            end_of_file: false,
            line: 0,
        });
    }
    if pending.is_empty()
        && let Some(last) = hunks.last_mut()
        && last
            .lines
            .iter()
            .any(|line| !matches!(line, HunkLine::Add(_)))
    {
        last.end_of_file = eof_marker;
    }
    hunks
}

fn file_text(lines: &[&str], final_newline: bool) -> String {
    let mut text = lines.join("\n");
    // Without a final line ending a last empty line would vanish: keep it then.
    if !lines.is_empty() && (final_newline || lines.last().is_some_and(|l| l.is_empty())) {
        text.push('\n');
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// A patch generated from a random edit applies to the old contents and yields the new.
    #[test]
    fn a_patch_from_an_edit_applies(
        edits in prop::collection::vec(edit(), 0..40).prop_filter(
            "the edit changes a line",
            |edits| edits.iter().any(|edit| !matches!(edit, Edit::Keep(_))),
        ),
        final_newline in any::<bool>(),
        eof_marker in any::<bool>(),
        anchored in any::<bool>(),
    ) {
        let hunks = hunks_of(&edits, eof_marker, anchored);
        prop_assert!(!hunks.is_empty());
        let old: Vec<&str> = edits.iter().filter_map(|e| match e {
            Edit::Keep(l) | Edit::Remove(l) => Some(l.as_str()),
            Edit::Insert(_) => None,
        }).collect();
        let new: Vec<&str> = edits.iter().filter_map(|e| match e {
            Edit::Keep(l) | Edit::Insert(l) => Some(l.as_str()),
            Edit::Remove(_) => None,
        }).collect();
        let old_text = file_text(&old, final_newline);
        // An updated file always ends with a line ending.
        let new_text = file_text(&new, true);

        let patch = Patch {
            changes: vec![FileChange::Update { path: "f".into(), move_to: None, hunks }],
        };
        let text = patch.to_string();
        let parsed = parse(&text).expect("a generated patch parses");
        prop_assert_eq!(without_lines(parsed.clone()), patch);
        let changes = apply(&parsed, |_| Ok::<_, Infallible>(Some(old_text.clone())))
            .unwrap_or_else(|error| panic!("{error}\n{text}\n{old_text:?}"));
        let [AppliedChange::Update { new_contents, .. }] = changes.as_slice() else {
            panic!("{changes:?}")
        };
        prop_assert_eq!(new_contents, &new_text, "{}", text);
        check_diff(&old_text, &new_text);
    }

    /// `unified_diff` of any two contents, applied back, turns the old into the new.
    #[test]
    fn a_unified_diff_applies_back(old in contents(), new in contents()) {
        check_diff(&old, &new);
    }
}

/// Applies `unified_diff(old, new)` to `old` as `patch` does, checking each hunk header's
/// counts and each context and removed line, and that the result is `new`.
fn check_diff(old: &str, new: &str) {
    let diff = unified_diff("f", "f", Some(old), Some(new));
    if old == new {
        assert_eq!(diff, "");
        return;
    }
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out: Vec<String> = Vec::new();
    let mut next_old = 0;
    let mut lines = diff.split_inclusive('\n').peekable();
    assert_eq!(lines.next(), Some("diff --git a/f b/f\n"));
    assert_eq!(lines.next(), Some("--- a/f\n"));
    assert_eq!(lines.next(), Some("+++ b/f\n"));
    while let Some(header) = lines.next() {
        let (old_start, old_len, new_len) = hunk_header(header);
        // An empty range names the line before it.
        let at = if old_len == 0 {
            old_start
        } else {
            old_start - 1
        };
        assert!(at >= next_old, "hunks out of order: {diff}");
        out.extend(old_lines[next_old..at].iter().map(|l| (*l).to_owned()));
        next_old = at;
        let (mut seen_old, mut seen_new) = (0, 0);
        while let Some(line) = lines.next_if(|line| !line.starts_with("@@")) {
            let (tag, text) = line.split_at(1);
            let mut text = text.to_owned();
            if lines
                .next_if(|l| *l == "\\ No newline at end of file\n")
                .is_some()
            {
                text.pop();
            }
            match tag {
                " " | "-" => {
                    assert_eq!(old_lines[next_old], text, "{diff}");
                    next_old += 1;
                    seen_old += 1;
                    if tag == " " {
                        out.push(text);
                        seen_new += 1;
                    }
                }
                "+" => {
                    out.push(text);
                    seen_new += 1;
                }
                other => panic!("unexpected line tag {other:?} in {diff}"),
            }
        }
        assert_eq!((seen_old, seen_new), (old_len, new_len), "{header}");
    }
    out.extend(old_lines[next_old..].iter().map(|l| (*l).to_owned()));
    assert_eq!(out.concat(), new, "{diff}");
}

/// `@@ -a[,b] +c[,d] @@` as (a, b, d).
fn hunk_header(line: &str) -> (usize, usize, usize) {
    let ranges = line
        .strip_prefix("@@ -")
        .and_then(|rest| rest.strip_suffix(" @@\n"))
        .unwrap_or_else(|| panic!("not a hunk header: {line:?}"));
    let (old, new) = ranges.split_once(" +").expect("two ranges");
    let range = |range: &str| -> (usize, usize) {
        match range.split_once(',') {
            Some((start, len)) => (start.parse().unwrap(), len.parse().unwrap()),
            None => (range.parse().unwrap(), 1),
        }
    };
    let ((old_start, old_len), (_, new_len)) = (range(old), range(new));
    (old_start, old_len, new_len)
}

#[test]
fn the_same_path_twice_is_one_file() {
    // A property of the applier worth one example beside the random ones.
    let patch = parse(
        "*** Begin Patch\n*** Add File: a\n+1\n*** Update File: a\n@@\n-1\n+2\n*** End Patch",
    )
    .unwrap();
    let files: BTreeMap<&str, String> = BTreeMap::new();
    let changes = apply(&patch, |path| Ok::<_, Infallible>(files.get(path).cloned())).unwrap();
    assert_eq!(changes[1].new_contents(), Some("2\n"));
}
