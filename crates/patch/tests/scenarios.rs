//! Whole patches against a small tree of files, as the server will use the crate: read from the
//! tree, apply, write back every change or none. The cases follow the reference's own scenario
//! list (add, several operations, several hunks, move into a new directory, the refusals,
//! missing final newline, pure addition, padded markers, Unicode, deletion only, end of file),
//! and pin where Tandem deliberately differs from it.

use std::collections::BTreeMap;
use std::convert::Infallible;

use tandem_patch::{AppliedChange, ApplyError, apply, parse};

type Tree = BTreeMap<String, String>;

fn tree(files: &[(&str, &str)]) -> Tree {
    files
        .iter()
        .map(|(path, contents)| ((*path).to_owned(), (*contents).to_owned()))
        .collect()
}

/// Applies `patch` to `files` all or nothing, as the server will: the tree changes only when
/// every change applies. A parse error is a failure too.
fn run(files: &mut Tree, patch: &str) -> Result<(), String> {
    let patch = parse(patch).map_err(|error| error.to_string())?;
    let changes = apply(&patch, |path| Ok::<_, Infallible>(files.get(path).cloned()))
        .map_err(|error| error.to_string())?;
    for change in changes {
        match change {
            AppliedChange::Add { path, contents } => {
                files.insert(path, contents);
            }
            AppliedChange::Delete { path, .. } => {
                files.remove(&path);
            }
            AppliedChange::Update {
                path,
                move_to,
                new_contents,
                ..
            } => {
                if let Some(to) = move_to {
                    files.remove(&path);
                    files.insert(to, new_contents);
                } else {
                    files.insert(path, new_contents);
                }
            }
        }
    }
    Ok(())
}

/// Runs `patch` on `before` and expects `after`.
fn check(before: &[(&str, &str)], patch: &str, after: &[(&str, &str)]) {
    let mut files = tree(before);
    run(&mut files, patch).unwrap_or_else(|error| panic!("{error}\n{patch}"));
    assert_eq!(files, tree(after), "{patch}");
}

/// Runs `patch` on `before`, expects an error containing `message` and the tree unchanged.
fn refuse(before: &[(&str, &str)], patch: &str, message: &str) {
    let mut files = tree(before);
    let error = run(&mut files, patch).expect_err(patch);
    assert!(error.contains(message), "{error}");
    assert_eq!(files, tree(before), "a refused patch changed the tree");
}

#[test]
fn adds_a_file() {
    check(
        &[],
        "*** Begin Patch\n*** Add File: bar.md\n+This is a new file\n*** End Patch\n",
        &[("bar.md", "This is a new file\n")],
    );
}

#[test]
fn several_operations_at_once() {
    check(
        &[
            ("modify.txt", "line1\nline2\n"),
            ("delete.txt", "obsolete\n"),
        ],
        "*** Begin Patch\n*** Add File: nested/new.txt\n+created\n*** Delete File: delete.txt\n\
         *** Update File: modify.txt\n@@\n-line2\n+changed\n*** End Patch\n",
        &[
            ("modify.txt", "line1\nchanged\n"),
            ("nested/new.txt", "created\n"),
        ],
    );
}

#[test]
fn several_hunks_and_deletion_only() {
    check(
        &[("multi.txt", "line1\nline2\nline3\nline4\n")],
        "*** Begin Patch\n*** Update File: multi.txt\n@@\n-line2\n+changed2\n@@\n-line4\n+changed4\n\
         *** End Patch\n",
        &[("multi.txt", "line1\nchanged2\nline3\nchanged4\n")],
    );
    check(
        &[("lines.txt", "line1\nremove me\nline3\n")],
        "*** Begin Patch\n*** Update File: lines.txt\n@@\n line1\n-remove me\n line3\n*** End Patch\n",
        &[("lines.txt", "line1\nline3\n")],
    );
}

#[test]
fn moves_into_a_new_directory() {
    check(
        &[
            ("old/name.txt", "old content\n"),
            ("old/other.txt", "unrelated\n"),
        ],
        "*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n\
         -old content\n+new content\n*** End Patch\n",
        &[
            ("old/other.txt", "unrelated\n"),
            ("renamed/dir/name.txt", "new content\n"),
        ],
    );
}

#[test]
fn refusals_leave_the_tree_as_it_was() {
    let foo = [("foo.txt", "stable\n")];
    refuse(&foo, "*** Begin Patch\n*** End Patch\n", "changes no file");
    refuse(
        &foo,
        "*** Begin Patch\n*** Update File: foo.txt\n@@\n-missing\n+x\n*** End Patch\n",
        "hunk 1 of `foo.txt`",
    );
    refuse(
        &foo,
        "*** Begin Patch\n*** Delete File: missing.txt\n*** End Patch\n",
        "cannot delete `missing.txt`",
    );
    refuse(
        &foo,
        "*** Begin Patch\n*** Update File: foo.txt\n*** End Patch\n",
        "changes nothing",
    );
    refuse(
        &foo,
        "*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch\n",
        "cannot update `missing.txt`",
    );
    refuse(
        &foo,
        "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch\n",
        "line 2: expected `*** Add File: PATH`",
    );
    // A failure after changes that would apply leaves none of them (the reference keeps the
    // ones before it).
    refuse(
        &foo,
        "*** Begin Patch\n*** Add File: created.txt\n+hello\n*** Update File: missing.txt\n@@\n\
         -a\n+b\n*** End Patch\n",
        "cannot update `missing.txt`",
    );
}

#[test]
fn a_file_without_a_final_newline_gets_one() {
    check(
        &[("no_newline.txt", "no newline at end")],
        "*** Begin Patch\n*** Update File: no_newline.txt\n@@\n-no newline at end\n+first line\n\
         +second line\n*** End Patch\n",
        &[("no_newline.txt", "first line\nsecond line\n")],
    );
}

#[test]
fn a_pure_addition_without_an_anchor_is_appended() {
    check(
        &[("input.txt", "line1\nline2\n")],
        "*** Begin Patch\n*** Update File: input.txt\n@@\n+added line 1\n+added line 2\n\
         *** End Patch\n",
        &[("input.txt", "line1\nline2\nadded line 1\nadded line 2\n")],
    );
}

#[test]
fn padded_markers_unicode_and_end_of_file() {
    check(
        &[("foo.txt", "old\n")],
        "*** Begin Patch\n  *** Update File: foo.txt\n@@\n-old\n+new\n*** End Patch\n",
        &[("foo.txt", "new\n")],
    );
    check(
        &[("file.txt", "one\n")],
        " *** Begin Patch \n*** Update File: file.txt\n@@\n-one\n+two\n *** End Patch \n",
        &[("file.txt", "two\n")],
    );
    check(
        &[("foo.txt", "line1\nnaïve café\nline3\n")],
        "*** Begin Patch\n*** Update File: foo.txt\n@@\n line1\n-naïve café\n+naïve café ✅\n\
         *** End Patch \n",
        &[("foo.txt", "line1\nnaïve café ✅\nline3\n")],
    );
    check(
        &[("tail.txt", "first\nsecond\n")],
        "*** Begin Patch\n*** Update File: tail.txt\n@@\n first\n-second\n+second updated\n\
         *** End of File\n*** End Patch\n",
        &[("tail.txt", "first\nsecond updated\n")],
    );
}

/// Where Tandem differs from the reference on purpose; each is also in the crate's docs.
#[test]
fn deliberate_differences_from_the_reference() {
    // Adding a file that exists is refused (the reference overwrites it): a model that thinks
    // a file is new has not read it, and would silently lose its contents.
    refuse(
        &[("duplicate.txt", "old content\n")],
        "*** Begin Patch\n*** Add File: duplicate.txt\n+new content\n*** End Patch\n",
        "cannot add `duplicate.txt`: the file already exists",
    );
    // So is moving onto a file that exists (the reference overwrites it), unless the patch
    // deletes it first.
    let before = [("a.txt", "a\n"), ("b.txt", "b\n")];
    refuse(
        &before,
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+A\n*** End Patch\n",
        "`b.txt` already exists",
    );
    check(
        &before,
        "*** Begin Patch\n*** Delete File: b.txt\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n\
         -a\n+A\n*** End Patch\n",
        &[("b.txt", "A\n")],
    );
    // Lines added under an anchor go after it (the reference appends them at the end).
    check(
        &[("m.py", "class A:\n    pass\n\nclass B:\n    pass\n")],
        "*** Begin Patch\n*** Update File: m.py\n@@ class A:\n+    x = 1\n*** End Patch\n",
        &[(
            "m.py",
            "class A:\n    x = 1\n    pass\n\nclass B:\n    pass\n",
        )],
    );
    // Several `@@` anchors in a row narrow down (the reference's instructions show them, its
    // parser refuses the second).
    check(
        &[(
            "m.py",
            "class A:\n    def f():\n        x\nclass B:\n    def f():\n        x\n",
        )],
        "*** Begin Patch\n*** Update File: m.py\n@@ class B:\n@@     def f():\n-        x\n\
         +        y\n*** End Patch\n",
        &[(
            "m.py",
            "class A:\n    def f():\n        x\nclass B:\n    def f():\n        y\n",
        )],
    );
}

#[test]
fn an_apply_error_is_typed_for_the_caller() {
    let patch = parse("*** Begin Patch\n*** Delete File: x\n*** End Patch").unwrap();
    let error = apply(&patch, |_| Ok::<_, Infallible>(None)).unwrap_err();
    assert!(matches!(error, ApplyError::DeleteMissing { path } if path == "x"));
}
