//! The applier's unit tests: each change kind, the reference's tricky cases (anchors, end of
//! file, lenient matching, move and update, CRLF, missing final newlines, empty files), and each
//! error.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io;

use super::*;
use crate::parse;

/// Applies `patch` (the body between the markers) to `files`.
fn run(files: &[(&str, &str)], body: &str) -> Result<Vec<AppliedChange>, ApplyError> {
    run_with(files, body, &Limits::default())
}

fn run_with(
    files: &[(&str, &str)],
    body: &str,
    limits: &Limits,
) -> Result<Vec<AppliedChange>, ApplyError> {
    let files: BTreeMap<&str, &str> = files.iter().copied().collect();
    let patch = parse(&format!("*** Begin Patch\n{body}\n*** End Patch")).unwrap();
    apply_with(&patch, limits, |path| {
        Ok::<_, Infallible>(files.get(path).map(|contents| (*contents).to_owned()))
    })
}

/// The new contents of the single update `body` makes to `old`.
fn update(old: &str, body: &str) -> String {
    let changes = run(&[("f", old)], &format!("*** Update File: f\n{body}")).unwrap();
    changes[0].new_contents().unwrap().to_owned()
}

#[test]
fn add_delete_update() {
    let changes = run(
        &[("gone.txt", "bye\n"), ("keep.txt", "a\nb\n")],
        "*** Add File: new.txt\n+hello\n*** Delete File: gone.txt\n*** Update File: keep.txt\n@@\n-b\n+c",
    )
    .unwrap();
    assert_eq!(
        changes,
        [
            AppliedChange::Add {
                path: "new.txt".into(),
                contents: "hello\n".into()
            },
            AppliedChange::Delete {
                path: "gone.txt".into(),
                old_contents: "bye\n".into()
            },
            AppliedChange::Update {
                path: "keep.txt".into(),
                move_to: None,
                old_contents: "a\nb\n".into(),
                new_contents: "a\nc\n".into()
            },
        ]
    );
    assert_eq!(changes[1].new_path(), None);
    assert_eq!(changes[0].old_contents(), None);
}

#[test]
fn several_hunks_in_one_file() {
    let old = "line1\nline2\nline3\nline4\n";
    let new = update(
        old,
        "@@\n line1\n-line2\n+changed2\n@@\n line3\n-line4\n+changed4",
    );
    assert_eq!(new, "line1\nchanged2\nline3\nchanged4\n");
}

#[test]
fn anchors_pick_the_occurrence() {
    let old = "fn a() {\n    x\n}\nfn b() {\n    x\n}\n";
    assert_eq!(
        update(old, "@@ fn b() {\n-    x\n+    y"),
        "fn a() {\n    x\n}\nfn b() {\n    y\n}\n"
    );
    // Several anchors narrow down in order.
    let old = "class A\n  def f\n    x\nclass B\n  def f\n    x\n";
    assert_eq!(
        update(old, "@@ class B\n@@   def f\n-    x\n+    y"),
        "class A\n  def f\n    x\nclass B\n  def f\n    y\n"
    );
}

#[test]
fn added_lines_after_an_anchor_go_right_after_it() {
    let old = "class A:\n    pass\nclass B:\n    pass\n";
    assert_eq!(
        update(old, "@@ class A:\n+    x = 1"),
        "class A:\n    x = 1\n    pass\nclass B:\n    pass\n"
    );
}

#[test]
fn added_lines_without_an_anchor_are_appended() {
    assert_eq!(update("a\nb\n", "@@\n+c\n+d"), "a\nb\nc\nd\n");
    assert_eq!(update("a\n", "@@ a\n+z\n*** End of File"), "a\nz\n");
}

#[test]
fn end_of_file_hunks_match_at_the_end() {
    let old = "x\ny\nmiddle\nx\ny\n";
    assert_eq!(
        update(old, "@@\n x\n-y\n+z\n*** End of File"),
        "x\ny\nmiddle\nx\nz\n"
    );
    assert_eq!(update(old, "@@\n x\n-y\n+z"), "x\nz\nmiddle\nx\ny\n");
}

#[test]
fn lenient_matching_ignores_whitespace_and_typography() {
    assert_eq!(update("a  \nb\t\n", "@@\n-a\n-b\n+c"), "c\n");
    // Context lines keep the file's whitespace and punctuation.
    assert_eq!(update("    a\n  b\n", "@@\n-a\n b"), "  b\n");
    assert_eq!(
        update("x \u{2014} y\nz\n", "@@\n x - y\n-z"),
        "x \u{2014} y\n"
    );
    assert_eq!(
        update(
            "say(\u{201C}hi\u{201D}) \u{2014} ok\n",
            "@@\n-say(\"hi\") - ok\n+done"
        ),
        "done\n"
    );
}

#[test]
fn a_hunk_ending_in_an_empty_line_matches_the_end_of_the_file() {
    // The model wrote the file's final line ending as an empty context line.
    assert_eq!(update("a\nb\n", "@@\n-b\n+c\n \n"), "a\nc\n");
    // An added empty line is a line of its own.
    assert_eq!(update("a\nb\n", "@@\n a\n-b\n+c\n+"), "a\nc\n\n");
}

#[test]
fn move_and_update() {
    let changes = run(
        &[("old/name.txt", "from\n")],
        "*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n-from\n+new",
    )
    .unwrap();
    assert_eq!(
        changes,
        [AppliedChange::Update {
            path: "old/name.txt".into(),
            move_to: Some("renamed/dir/name.txt".into()),
            old_contents: "from\n".into(),
            new_contents: "new\n".into()
        }]
    );
    assert_eq!(changes[0].new_path(), Some("renamed/dir/name.txt"));
    // A move onto itself is an update in place.
    let changes = run(
        &[("a", "x\n")],
        "*** Update File: a\n*** Move to: a\n@@\n-x\n+y",
    )
    .unwrap();
    assert!(matches!(
        &changes[0],
        AppliedChange::Update { move_to: None, .. }
    ));
}

#[test]
fn crlf_files_stay_crlf() {
    assert_eq!(
        update("one\r\ntwo\r\nthree\r\n", "@@\n one\n-two\n+2\n+2b"),
        "one\r\n2\r\n2b\r\nthree\r\n"
    );
    // A file that mixes endings keeps each line's own.
    assert_eq!(update("a\r\nb\nc\n", "@@\n-b\n+B"), "a\r\nB\nc\n");
}

#[test]
fn a_missing_final_newline_is_added_as_the_reference_does() {
    assert_eq!(
        update(
            "no newline at end",
            "@@\n-no newline at end\n+first line\n+second line"
        ),
        "first line\nsecond line\n"
    );
    assert_eq!(update("a\nb", "@@\n-a\n+A"), "A\nb\n");
}

#[test]
fn empty_files() {
    assert_eq!(update("", "@@\n+first"), "first\n");
    assert_eq!(update("only\n", "@@\n-only"), "");
    let changes = run(&[("e", "")], "*** Delete File: e").unwrap();
    assert_eq!(changes[0].old_contents(), Some(""));
}

#[test]
fn later_changes_see_earlier_ones() {
    let changes = run(
        &[("a", "1\n")],
        "*** Add File: b\n+x\n*** Update File: b\n@@\n-x\n+y\n*** Delete File: a\n*** Add File: a\n+again",
    )
    .unwrap();
    assert_eq!(changes[1].old_contents(), Some("x\n"));
    assert_eq!(changes[1].new_contents(), Some("y\n"));
    assert_eq!(changes[3].new_contents(), Some("again\n"));
    // A moved file is gone from its old path, and its new path exists.
    let error = run(
        &[("a", "1\n")],
        "*** Update File: a\n*** Move to: b\n@@\n-1\n+2\n*** Update File: a\n@@\n-2\n+3",
    )
    .unwrap_err();
    assert!(matches!(error, ApplyError::UpdateMissing { path } if path == "a"));
}

#[test]
fn each_path_is_read_once() {
    let patch = parse(
        "*** Begin Patch\n*** Update File: a\n@@\n-1\n+2\n*** Update File: a\n@@\n-2\n+3\n*** End Patch",
    )
    .unwrap();
    let mut reads = Vec::new();
    let changes = apply(&patch, |path| {
        reads.push(path.to_owned());
        Ok::<_, Infallible>(Some("1\n".to_owned()))
    })
    .unwrap();
    assert_eq!(reads, ["a"]);
    assert_eq!(changes[1].new_contents(), Some("3\n"));
}

#[test]
fn file_existence_errors() {
    let error = run(&[("dup", "x\n")], "*** Add File: dup\n+y").unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot add `dup`: the file already exists (change it with `*** Update File: dup`, or \
         delete it first)"
    );
    let error = run(&[], "*** Update File: nope\n@@\n-a").unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot update `nope`: the file does not exist (create it with `*** Add File: nope`)"
    );
    let error = run(&[], "*** Delete File: nope").unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot delete `nope`: the file does not exist"
    );
    let error = run(
        &[("a", "x\n"), ("b", "y\n")],
        "*** Update File: a\n*** Move to: b\n@@\n-x\n+z",
    )
    .unwrap_err();
    assert!(
        matches!(error, ApplyError::MoveOntoExisting { .. }),
        "{error}"
    );
    // Deleting the destination first in the same patch makes room.
    run(
        &[("a", "x\n"), ("b", "y\n")],
        "*** Delete File: b\n*** Update File: a\n*** Move to: b\n@@\n-x\n+z",
    )
    .unwrap();
}

#[test]
fn a_hunk_that_does_not_match_names_the_file_the_hunk_and_its_lines() {
    let error = run(
        &[("src/lib.rs", "fn a() {}\nfn b() {}\n")],
        "*** Update File: src/lib.rs\n@@\n-fn a() {}\n+fn a2() {}\n@@\n fn x() {}\n-fn y() {}\n+fn z() {}\n fn w() {}\n fn v() {}",
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot apply hunk 2 of `src/lib.rs` (patch line 6): its context and removed lines were \
         not found at or after line 2 of the file; the hunk expects:\n\
         fn x() {}\nfn y() {}\nfn w() {}\n… (1 more line)"
    );
    let error = run(&[("f", "a\n")], "*** Update File: f\n@@ fn missing()\n-a").unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot apply hunk 1 of `f` (patch line 3): the anchor line `fn missing()` was not found \
         at or after line 1 of the file"
    );
}

#[test]
fn a_failed_hunk_leaves_nothing_applied() {
    // The first change is fine, the second fails: the caller gets only the error.
    let result = run(
        &[("a", "1\n"), ("b", "2\n")],
        "*** Update File: a\n@@\n-1\n+one\n*** Update File: b\n@@\n-3\n+three",
    );
    assert!(matches!(
        result,
        Err(ApplyError::ContextNotFound { hunk: 1, .. })
    ));
}

#[test]
fn read_errors_name_the_path() {
    let patch = parse("*** Begin Patch\n*** Delete File: locked\n*** End Patch").unwrap();
    let error = apply(&patch, |_| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "permission denied",
        ))
    })
    .unwrap_err();
    assert_eq!(error.to_string(), "cannot read `locked`: permission denied");
    assert!(std::error::Error::source(&error).is_some());
}

#[test]
fn file_size_bounds_are_checked_and_named() {
    let limits = Limits {
        max_file_bytes: 8,
        ..Limits::default()
    };
    let error = run_with(&[("big", "123456789\n")], "*** Delete File: big", &limits).unwrap_err();
    assert_eq!(
        error.to_string(),
        "`big` would be 10 bytes, more than the 8 bytes a file may have here"
    );
    let error = run_with(&[], "*** Add File: new\n+123456789", &limits).unwrap_err();
    assert!(matches!(
        error,
        ApplyError::FileTooLarge {
            bytes: 10,
            limit: 8,
            ..
        }
    ));
    let error = run_with(
        &[("grow", "a\n")],
        "*** Update File: grow\n@@\n-a\n+123456789",
        &limits,
    )
    .unwrap_err();
    assert!(matches!(error, ApplyError::FileTooLarge { bytes: 10, .. }));
}

#[test]
fn hunks_out_of_order_are_told_so() {
    let error = run(
        &[("f", "a\nb\nc\nd\n")],
        "*** Update File: f\n@@\n-c\n+C\n@@\n-a\n+A",
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot apply hunk 2 of `f` (patch line 6): its context and removed lines were not found \
         at or after line 4 of the file (they are at line 1, above the previous hunk or anchor: \
         hunks must follow the file's order); the hunk expects:\na"
    );
    let error = run(
        &[("f", "fn a\nx\nfn b\nx\n")],
        "*** Update File: f\n@@ fn b\n-x\n+y\n@@ fn a\n-x\n+z",
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            ApplyError::AnchorNotFound {
                hunk: 2,
                from: 5,
                above: Some(1),
                ..
            }
        ),
        "{error}"
    );
}
