//! Small text helpers the parser, the applier and the diff share: a file's lines and line ending,
//! and the shortening of quoted input in error messages.

/// The most characters of one input line quoted in an error message: enough to recognise it,
/// bounded so that a huge line does not become a huge error sent back to the model.
const QUOTE_CHARS: usize = 120;

/// `text` for an error message: at most [`QUOTE_CHARS`] characters, cut on a character
/// boundary, with `…` when cut.
pub(crate) fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// A file's contents as lines without their endings, and the ending to write them back with.
#[derive(Debug)]
pub(crate) struct FileLines<'a> {
    /// The lines, without the terminator; a final line ending adds no empty line.
    pub(crate) lines: Vec<&'a str>,
    /// `"\r\n"` when every line of the file ends so, `"\n"` otherwise.
    pub(crate) eol: &'static str,
}

impl<'a> FileLines<'a> {
    /// Splits `contents`. A file is CRLF only when every `\n` follows a `\r`: a file that mixes
    /// both keeps its `\r`s inside the lines (the lenient matching ignores them as trailing
    /// whitespace) and is written back as it was, line for line.
    pub(crate) fn split(contents: &'a str) -> Self {
        let newlines = contents.matches('\n').count();
        let crlf = newlines > 0 && contents.matches("\r\n").count() == newlines;
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut lines: Vec<&str> = contents.split(eol).collect();
        // `split` yields one empty piece after a final line ending: that is the end of the last
        // line, not a line of its own (as `diff` and the reference count lines).
        if lines.last().is_some_and(|last| last.is_empty()) {
            lines.pop();
        }
        FileLines { lines, eol }
    }

    /// Joins `lines` back with this file's line ending, ending the last line too (an updated
    /// file always ends with a line ending, as the reference writes it); no lines give an empty
    /// file.
    pub(crate) fn join(&self, lines: &[&str]) -> String {
        let size: usize = lines.iter().map(|line| line.len() + self.eol.len()).sum();
        let mut out = String::with_capacity(size);
        for line in lines {
            out.push_str(line);
            out.push_str(self.eol);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_cuts_long_lines_on_a_character_boundary() {
        let long = "é".repeat(QUOTE_CHARS + 5);
        let quoted = quote(&long);
        assert_eq!(quoted.chars().count(), QUOTE_CHARS + 1);
        assert!(quoted.ends_with('…'));
        assert_eq!(quote("short"), "short");
    }

    #[test]
    fn split_counts_lines_as_diff_does() {
        assert!(FileLines::split("").lines.is_empty());
        assert_eq!(FileLines::split("a").lines, ["a"]);
        assert_eq!(FileLines::split("a\n").lines, ["a"]);
        assert_eq!(FileLines::split("a\n\n").lines, ["a", ""]);
        assert_eq!(FileLines::split("\n").lines, [""]);
    }

    #[test]
    fn split_detects_crlf_only_when_every_line_has_it() {
        let crlf = FileLines::split("a\r\nb\r\n");
        assert_eq!((crlf.lines.as_slice(), crlf.eol), (&["a", "b"][..], "\r\n"));
        let mixed = FileLines::split("a\r\nb\n");
        assert_eq!(
            (mixed.lines.as_slice(), mixed.eol),
            (&["a\r", "b"][..], "\n")
        );
        assert_eq!(crlf.join(&["x", "y"]), "x\r\ny\r\n");
        assert_eq!(mixed.join(&[]), "");
    }
}
