//! Word wrapping of transcript text to the screen's width, by display width (wide and
//! combining characters count as the terminal draws them). The transcript wraps itself instead
//! of leaving it to the paragraph widget so that it knows how many rows its text takes, which
//! scrolling needs.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Splits `text` into rows no wider than `width` columns: at spaces where a row has one,
/// inside a word where it does not. Each newline starts a row; control characters other than
/// tabs (shown as a space) are dropped, since they would move the terminal's cursor.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut rows = Vec::new();
    for line in text.split('\n') {
        let mut current = String::new();
        let mut current_width = 0;
        // The byte offset of the last space in `current`, where the row may break.
        let mut last_space: Option<usize> = None;
        for c in line.chars() {
            let c = match c {
                '\t' => ' ',
                c if c.is_control() => continue,
                c => c,
            };
            let char_width = c.width().unwrap_or(0);
            if current_width + char_width > width && !current.is_empty() {
                if c == ' ' {
                    // A break at this very space: it is not carried to the next row.
                    rows.push(std::mem::take(&mut current));
                    current_width = 0;
                    last_space = None;
                    continue;
                }
                match last_space {
                    Some(at) => {
                        let rest = current[at + 1..].to_owned();
                        current.truncate(at);
                        rows.push(std::mem::replace(&mut current, rest));
                        current_width = current.width();
                    }
                    None => {
                        rows.push(std::mem::take(&mut current));
                        current_width = 0;
                    }
                }
                last_space = None;
            }
            if c == ' ' {
                last_space = Some(current.len());
            }
            current.push(c);
            current_width += char_width;
        }
        rows.push(current);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_break_at_spaces_and_inside_long_words() {
        assert_eq!(wrap("the quick brown fox", 10), ["the quick", "brown fox"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("a\n\nb", 10), ["a", "", "b"]);
        assert_eq!(wrap("", 10), [""]);
        // A space exactly at the edge is the break, not the start of the next row.
        assert_eq!(wrap("abcd efgh", 4), ["abcd", "efgh"]);
    }

    #[test]
    fn wide_characters_count_twice_and_controls_are_dropped() {
        assert_eq!(wrap("日本語です", 4), ["日本", "語で", "す"]);
        assert_eq!(wrap("a\u{1b}[31mb", 10), ["a[31mb"]);
        for row in wrap("日本語 and some more text to wrap", 7) {
            assert!(row.width() <= 7, "{row:?}");
        }
    }
}
