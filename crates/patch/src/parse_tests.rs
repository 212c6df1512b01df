//! The parser's unit tests: each grammar element, each leniency, each error and its line.

use super::*;

fn ctx(text: &str) -> HunkLine {
    HunkLine::Context(text.to_owned())
}
fn del(text: &str) -> HunkLine {
    HunkLine::Remove(text.to_owned())
}
fn add(text: &str) -> HunkLine {
    HunkLine::Add(text.to_owned())
}

fn hunks(patch: &Patch) -> &[Hunk] {
    match &patch.changes[0] {
        FileChange::Update { hunks, .. } => hunks,
        other => panic!("not an update: {other:?}"),
    }
}

#[test]
fn add_delete_update_and_move() {
    let patch = parse(
        "*** Begin Patch\n\
         *** Add File: path/add.py\n\
         +abc\n\
         +\n\
         +def\n\
         *** Delete File: path/delete.py\n\
         *** Update File: path/update.py\n\
         *** Move to: path/update2.py\n\
         @@ def f():\n\
         -    pass\n\
         +    return 123\n\
         *** End Patch",
    )
    .unwrap();
    assert_eq!(
        patch.changes,
        vec![
            FileChange::Add {
                path: "path/add.py".into(),
                contents: "abc\n\ndef\n".into(),
            },
            FileChange::Delete {
                path: "path/delete.py".into(),
            },
            FileChange::Update {
                path: "path/update.py".into(),
                move_to: Some("path/update2.py".into()),
                hunks: vec![Hunk {
                    anchors: vec!["def f():".into()],
                    lines: vec![del("    pass"), add("    return 123")],
                    end_of_file: false,
                    line: 9,
                }],
            },
        ]
    );
}

#[test]
fn an_add_with_no_lines_is_an_empty_file() {
    let patch = parse("*** Begin Patch\n*** Add File: empty.txt\n*** End Patch\n").unwrap();
    assert_eq!(
        patch.changes,
        [FileChange::Add {
            path: "empty.txt".into(),
            contents: String::new(),
        }]
    );
}

#[test]
fn hunk_lines_context_empty_lines_and_several_hunks() {
    let patch = parse(
        "*** Begin Patch\n\
         *** Update File: f\n\
         @@ fn a()\n \
         context\n\
         \n\
         -remove\n\
         +add\n\
         @@\n\
         +tail\n\
         *** End Patch",
    )
    .unwrap();
    let hunks = hunks(&patch);
    assert_eq!(hunks.len(), 2);
    assert_eq!(
        hunks[0].lines,
        [ctx("context"), ctx(""), del("remove"), add("add")]
    );
    assert_eq!(hunks[0].old_lines(), ["context", "", "remove"]);
    assert_eq!(hunks[0].new_lines(), ["context", "", "add"]);
    assert_eq!((hunks[1].anchors.len(), hunks[1].line), (0, 8));
}

#[test]
fn several_anchors_in_a_row() {
    let patch = parse(
        "*** Begin Patch\n\
         *** Update File: f.py\n\
         @@ class BaseClass\n\
         @@ \t def method():\n\
         -a\n\
         +b\n\
         *** End Patch",
    )
    .unwrap();
    assert_eq!(
        hunks(&patch)[0].anchors,
        ["class BaseClass", "\t def method():"]
    );
}

#[test]
fn a_unified_range_header_is_a_bare_marker() {
    let patch = parse(
        "*** Begin Patch\n*** Update File: f\n@@ -12,5 +12,6 @@ fn main()\n-a\n+b\n*** End Patch",
    )
    .unwrap();
    assert!(hunks(&patch)[0].anchors.is_empty());
    assert!(is_unified_range("-1 +1 @@"));
    assert!(!is_unified_range("-1 +x @@"));
    assert!(!is_unified_range("fn f() -> u8"));
}

#[test]
fn the_first_hunk_may_omit_its_marker_but_not_the_next() {
    let patch =
        parse("*** Begin Patch\n*** Update File: f\n import foo\n+bar\n*** End Patch").unwrap();
    assert_eq!(hunks(&patch)[0].lines, [ctx("import foo"), add("bar")]);

    let error =
        parse("*** Begin Patch\n*** Update File: f\n@@\n-a\n*** End of File\n b\n*** End Patch")
            .unwrap_err();
    assert_eq!(
        error,
        ParseError::ExpectedHunkStart {
            line: 6,
            found: " b".into()
        }
    );
}

#[test]
fn end_of_file_marker() {
    let patch =
        parse("*** Begin Patch\n*** Update File: f\n@@\n+line\n*** End of File\n*** End Patch")
            .unwrap();
    let hunk = &hunks(&patch)[0];
    assert!(hunk.end_of_file);
    assert_eq!(hunk.lines, [add("line")]);
}

#[test]
fn trailing_empty_lines_separate_hunks_instead_of_matching() {
    let patch =
        parse("*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n\n\n*** End Patch").unwrap();
    assert_eq!(hunks(&patch)[0].lines, [del("a"), add("b")]);
}

#[test]
fn markers_may_be_padded_and_surrounded_by_blank_lines() {
    let patch = parse(
        "\n\n  *** Begin Patch \n *** Update File:  f  \n@@\n-a\n+b\n\n*** Add File: g\n+x\n*** End Patch  \n\n",
    )
    .unwrap();
    assert_eq!(patch.changes.len(), 2);
    assert_eq!(patch.changes[0].path(), "f");
}

#[test]
fn crlf_patch_text() {
    let patch =
        parse("*** Begin Patch\r\n*** Update File: f\r\n@@\r\n-a\r\n+b\r\n*** End Patch\r\n")
            .unwrap();
    assert_eq!(hunks(&patch)[0].lines, [del("a"), add("b")]);
}

#[test]
fn heredoc_wrapped_patches_are_unwrapped() {
    let inner = "*** Begin Patch\n*** Add File: a\n+hi\n*** End Patch";
    for opener in ["<<EOF", "<<'EOF'", "<<\"EOF\""] {
        let patch = parse(&format!("{opener}\n{inner}\nEOF\n")).unwrap();
        assert_eq!(patch.changes[0].path(), "a", "{opener}");
    }
    // Mismatched quotes are no heredoc: the first line is wrong.
    assert_eq!(
        parse(&format!("<<\"EOF'\n{inner}\nEOF\n")).unwrap_err(),
        ParseError::MissingBegin {
            line: 1,
            found: "<<\"EOF'".into()
        }
    );
    // Inside a heredoc, the inner patch's own errors are reported with the text's lines.
    assert_eq!(
        parse("<<EOF\n*** Begin Patch\n*** Update File: f\nEOF\n").unwrap_err(),
        ParseError::MissingEnd {
            line: 3,
            found: "*** Update File: f".into()
        }
    );
}

#[test]
fn errors_name_the_line_and_what_was_expected() {
    let cases: &[(&str, ParseError)] = &[
        (
            "",
            ParseError::MissingBegin {
                line: 1,
                found: String::new(),
            },
        ),
        (
            "bad",
            ParseError::MissingBegin {
                line: 1,
                found: "bad".into(),
            },
        ),
        (
            "*** Begin Patch\nbad",
            ParseError::MissingEnd {
                line: 2,
                found: "bad".into(),
            },
        ),
        (
            "*** Begin Patch",
            ParseError::MissingEnd {
                line: 1,
                found: "*** Begin Patch".into(),
            },
        ),
        (
            "*** Begin Patch\n*** End Patch",
            ParseError::NoChanges { line: 2 },
        ),
        (
            "*** Begin Patch\n*** Frobnicate File: x\n*** End Patch",
            ParseError::ExpectedFileOperation {
                line: 2,
                found: "*** Frobnicate File: x".into(),
                hint: "",
            },
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch",
            ParseError::ExpectedFileOperation {
                line: 4,
                found: "y".into(),
                hint: "; every line of an added file starts with '+' (an empty line is `+`)",
            },
        ),
        (
            "*** Begin Patch\n*** Add File:   \n*** End Patch",
            ParseError::MissingPath {
                line: 2,
                marker: ADD_FILE,
            },
        ),
        (
            "*** Begin Patch\n*** Update File: a\n*** Move to:\n@@\n-x\n*** End Patch",
            ParseError::MissingPath {
                line: 3,
                marker: MOVE_TO,
            },
        ),
        (
            "*** Begin Patch\n*** Update File: test.py\n*** End Patch",
            ParseError::EmptyUpdate {
                line: 2,
                path: "test.py".into(),
            },
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n*** End Patch",
            ParseError::EmptyHunk { line: 3 },
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch",
            ParseError::EmptyHunk { line: 3 },
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-x\nbad\n*** End Patch",
            ParseError::BadHunkLine {
                line: 5,
                found: "bad".into(),
            },
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@ x\n*** End Patch",
            ParseError::BadHunkLine {
                line: 3,
                found: "@ x".into(),
            },
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** End Patch\n*** Add File: b\n+y\n*** End Patch",
            ParseError::ExpectedFileOperation {
                line: 5,
                found: "*** End Patch".into(),
                hint: "",
            },
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(&parse(text).unwrap_err(), expected, "{text:?}");
    }
}

#[test]
fn error_messages_read_well() {
    let error =
        parse("*** Begin Patch\n*** Update File: a\n@@\n-x\nbad\n*** End Patch").unwrap_err();
    assert_eq!(
        error.to_string(),
        "line 5: expected a hunk line starting with ' ' (context), '-' (remove) or '+' (add), \
         found `bad`"
    );
    let error = parse("*** Begin Patch\n*** End Patch").unwrap_err();
    assert_eq!(
        error.to_string(),
        "line 2: the patch changes no file: expected `*** Add File: PATH`, `*** Delete File: \
         PATH`, `*** Update File: PATH` or `*** End Patch`"
    );
}

#[test]
fn the_size_bound_is_checked_first_and_named() {
    let limits = Limits {
        max_patch_bytes: 10,
        ..Limits::default()
    };
    let error = parse_with("*** Begin Patch\n*** End Patch", &limits).unwrap_err();
    assert_eq!(
        error,
        ParseError::TooLarge {
            bytes: 29,
            limit: 10
        }
    );
    assert_eq!(
        error.to_string(),
        "the patch is 29 bytes, more than the 10 bytes a patch may have"
    );
}

#[test]
fn long_lines_are_quoted_short() {
    let long = "x".repeat(10_000);
    let error = parse(&format!("*** Begin Patch\n{long}\n*** End Patch")).unwrap_err();
    assert!(error.to_string().len() < 400, "{error}");
}

#[test]
fn display_round_trips() {
    let text = "*** Begin Patch\n\
                *** Add File: a\n\
                +one\n\
                +\n\
                *** Delete File: b\n\
                *** Update File: c\n\
                *** Move to: d\n\
                @@ class A\n\
                @@ def f():\n \
                keep\n\
                -old\n\
                +new\n\
                @@\n\
                +end\n\
                *** End of File\n\
                *** End Patch\n";
    let patch = parse(text).unwrap();
    assert_eq!(patch.to_string(), text);
    assert_eq!(parse(&patch.to_string()).unwrap(), patch);
}

const STREAMED: &str = "*** Begin Patch
*** Add File: docs/notes.md
+# Notes
+
*** Update File: src/config.rs
*** Move to: src/settings.rs
@@ impl Config
-    pub progress: bool,
+    pub stream_progress: bool,
     pub diagnostics: bool,
@@ fn interval()
-    500
+    250
*** Delete File: src/legacy.rs
*** Update File: README.md
 Build before a pull request.
+Test partial input.
*** End Patch
";

#[test]
fn a_streamed_patch_only_grows_and_ends_as_the_whole_parse() {
    let limits = Limits::default();
    let mut counts = Vec::new();
    let mut hunk_lines = 0;
    for (end, _) in STREAMED
        .char_indices()
        .skip(1)
        .chain([(STREAMED.len(), ' ')])
    {
        let prefix = &STREAMED[..end];
        let patch =
            parse_partial(prefix, &limits).unwrap_or_else(|error| panic!("{error} for {prefix:?}"));
        if counts.last() != Some(&patch.changes.len()) {
            assert!(counts.last() < Some(&patch.changes.len()), "{prefix:?}");
            counts.push(patch.changes.len());
        }
        let lines: usize = patch
            .changes
            .iter()
            .map(|change| match change {
                FileChange::Update { hunks, .. } => hunks.iter().map(|h| h.lines.len()).sum(),
                _ => 0,
            })
            .sum();
        assert!(lines + 1 >= hunk_lines, "{prefix:?}");
        hunk_lines = lines;
    }
    assert_eq!(counts, [0, 1, 2, 3, 4]);
    assert_eq!(
        parse_partial(STREAMED, &limits).unwrap(),
        parse(STREAMED).unwrap()
    );
}

#[test]
fn a_streamed_patch_leaves_out_a_line_still_arriving() {
    let limits = Limits::default();
    let patch = parse_partial("*** Begin Patch\n*** Update File: src/ma", &limits).unwrap();
    assert!(patch.changes.is_empty());
    let patch = parse_partial("*** Begin Patch\n*** Update File: a\n@@\n-x\n+y", &limits).unwrap();
    assert_eq!(hunks(&patch)[0].lines, [del("x")]);
    // An update whose hunks have not arrived yet, then a bare `@@`.
    for text in [
        "*** Begin Patch\n*** Update File: a\n",
        "*** Begin Patch\n*** Update File: a\n@@\n",
    ] {
        let patch = parse_partial(text, &limits).unwrap();
        assert!(hunks(&patch).is_empty(), "{text:?}");
    }
    assert_eq!(parse_partial("*** Beg", &limits).unwrap(), Patch::default());
    assert_eq!(parse_partial("", &limits).unwrap(), Patch::default());
}

#[test]
fn a_streamed_patch_must_start_as_a_patch_and_fit_the_bound() {
    let limits = Limits {
        max_patch_bytes: 8,
        ..Limits::default()
    };
    assert!(matches!(
        parse_partial("*** Begin Patch\n", &limits),
        Err(ParseError::TooLarge { .. })
    ));
    assert_eq!(
        parse_partial("hello\n*** Begin Patch\n", &Limits::default()).unwrap_err(),
        ParseError::MissingBegin {
            line: 1,
            found: "hello".into()
        }
    );
}

#[test]
fn paths_lists_every_path_once_in_order() {
    let patch = parse(
        "*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@\n-x\n*** Add File: c\n+y\n\
         *** Delete File: a\n*** Delete File: b\n*** End Patch",
    )
    .unwrap();
    assert_eq!(patch.paths(), ["a", "b", "c"]);
}
