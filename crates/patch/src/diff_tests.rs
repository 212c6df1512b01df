//! The unified diff's unit tests: the headers git writes for each kind of change, hunk ranges,
//! context, and missing final newlines.

use super::*;

#[test]
fn update_with_context_and_two_hunks() {
    let old: String = (1..=12).map(|n| format!("{n}\n")).collect();
    let new = old.replacen("2\n", "two\n", 1).replace("11\n", "eleven\n");
    assert_eq!(
        unified_diff("f", "f", Some(&old), Some(&new)),
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n\
         @@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n\
         @@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+eleven\n 12\n"
    );
}

#[test]
fn added_and_deleted_files() {
    assert_eq!(
        unified_diff("n", "n", None, Some("a\nb\n")),
        "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    );
    assert_eq!(
        unified_diff("d", "d", Some("a\n"), None),
        "diff --git a/d b/d\ndeleted file mode 100644\n--- a/d\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"
    );
    // Empty files have no hunks, as git shows them.
    assert_eq!(
        unified_diff("e", "e", None, Some("")),
        "diff --git a/e b/e\nnew file mode 100644\n"
    );
    assert_eq!(
        unified_diff("e", "e", Some(""), None),
        "diff --git a/e b/e\ndeleted file mode 100644\n"
    );
}

#[test]
fn renames_with_and_without_changes() {
    assert_eq!(
        unified_diff("a.txt", "b/a.txt", Some("x\n"), Some("x\n")),
        "diff --git a/a.txt b/b/a.txt\nrename from a.txt\nrename to b/a.txt\n"
    );
    assert_eq!(
        unified_diff("a", "b", Some("x\n"), Some("y\n")),
        "diff --git a/a b/b\nrename from a\nrename to b\n--- a/a\n+++ b/b\n@@ -1 +1 @@\n-x\n+y\n"
    );
}

#[test]
fn nothing_changed_is_empty() {
    assert_eq!(unified_diff("a", "a", Some("x\n"), Some("x\n")), "");
    assert_eq!(unified_diff("a", "a", None, None), "");
}

#[test]
fn missing_final_newlines_are_marked() {
    assert_eq!(
        unified_diff("f", "f", Some("a\nb"), Some("a\nb\n")),
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    );
}

#[test]
fn crlf_lines_keep_their_carriage_returns() {
    assert_eq!(
        unified_diff("f", "f", Some("a\r\n"), Some("b\r\n")),
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\r\n+b\r\n"
    );
}

#[test]
fn special_paths_are_quoted_as_git_quotes_them() {
    assert_eq!(quoted("a/", "plain name.txt"), "a/plain name.txt");
    assert_eq!(quoted("a/", "tab\there"), "\"a/tab\\there\"");
    assert_eq!(quoted("b/", "q\"b\\s"), "\"b/q\\\"b\\\\s\"");
    assert_eq!(quoted("", "bell\u{7}"), "\"bell\\007\"");
}

#[test]
fn hunk_ranges_follow_diff_u() {
    assert_eq!(hunk_range(&(0..0)), "0,0");
    assert_eq!(hunk_range(&(4..4)), "4,0");
    assert_eq!(hunk_range(&(4..5)), "5");
    assert_eq!(hunk_range(&(4..7)), "5,3");
}

#[test]
fn a_huge_rewrite_is_one_replaced_block_and_deterministic() {
    let old: String = (0..MAX_DIFFED_LINES)
        .map(|n| format!("old {n}\n"))
        .collect();
    let new: String = (0..MAX_DIFFED_LINES)
        .map(|n| format!("new {n}\n"))
        .collect();
    let old = format!("head\n{old}tail\n");
    let new = format!("head\n{new}tail\n");
    let diff = unified_diff("f", "f", Some(&old), Some(&new));
    let header = format!("@@ -1,{0} +1,{0} @@\n head\n-old 0\n", MAX_DIFFED_LINES + 2);
    assert!(diff.contains(&header), "{}", &diff[..200]);
    assert_eq!(diff, unified_diff("f", "f", Some(&old), Some(&new)));
}

#[test]
fn scattered_changes_in_a_large_file_stay_small_hunks() {
    let lines = 3 * MAX_DIFFED_LINES;
    let old: Vec<String> = (0..lines).map(|n| format!("line {n}\n")).collect();
    let mut new = old.clone();
    // 30 changed lines, a removed one and an added one, far apart; and a line that repeats
    // (no anchor) between them.
    for n in (1_000..lines).step_by(2_000) {
        new[n] = format!("changed {n}\n");
    }
    new.remove(5_500);
    new.insert(7_700, "added\n".to_owned());
    let (old, new) = (old.concat(), new.concat());
    let diff = unified_diff("f", "f", Some(&old), Some(&new));
    assert_eq!(diff.matches("\n@@ ").count(), 32, "{}", &diff[..400]);
    assert!(diff.len() < 32 * 200, "{} bytes", diff.len());
    assert!(
        diff.contains(
            "@@ -998,7 +998,7 @@\n line 997\n line 998\n line 999\n-line 1000\n+changed 1000\n"
        ),
        "{}",
        &diff[..400]
    );
    assert!(diff.contains("-line 5500\n"), "{}", diff);
    assert!(diff.contains("+added\n"), "{}", diff);
    assert_eq!(diff, unified_diff("f", "f", Some(&old), Some(&new)));
}

#[test]
fn hunk_headers_count_from_where_the_ops_really_are() {
    // `similar` numbered the leading delete's new side 1 here, which made the header `+2,5`.
    let diff = unified_diff(
        "f",
        "f",
        Some("*\n \n\n*\n \n*\n\n+"),
        Some("\n\n \n\n+\n+\n"),
    );
    assert!(diff.contains("@@ -1,8 +1,6 @@\n"), "{diff}");
}

#[test]
fn names_with_spaces_get_a_tab_after_them_in_file_lines() {
    assert_eq!(
        unified_diff("my file", "my file", Some("a\n"), Some("b\n")),
        "diff --git a/my file b/my file\n--- a/my file\t\n+++ b/my file\t\n@@ -1 +1 @@\n-a\n+b\n"
    );
}
