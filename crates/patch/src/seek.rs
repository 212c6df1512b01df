//! Finding a hunk's lines in a file, as leniently as the reference: exactly first, then ignoring
//! trailing whitespace, then ignoring whitespace at both ends, then also reading typographic
//! dashes, quotes and spaces as their ASCII forms. Each level is tried over the whole rest of the
//! file before the next, so an exact match later in the file wins over a lenient one earlier.
//!
//! Each pass is a rolling hash over per-line hashes (Rabin–Karp), verified on a hit: a model's
//! hunk of k lines sought in a file of n lines costs O(n + k) per level rather than O(n·k), which
//! a large file full of repeated lines (and a patch written against it) would otherwise make
//! quadratic.

/// How two lines are compared, from strictest to most lenient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Exact,
    TrimEnd,
    Trim,
    /// Trimmed, with typographic punctuation and spaces read as ASCII: a model writes `-` and
    /// `"` where the file has `–` and `“`.
    Ascii,
}

const LEVELS: [Level; 4] = [Level::Exact, Level::TrimEnd, Level::Trim, Level::Ascii];

impl Level {
    fn view(self, line: &str) -> &str {
        match self {
            Level::Exact => line,
            Level::TrimEnd => line.trim_end(),
            Level::Trim | Level::Ascii => line.trim(),
        }
    }

    fn chars(self, line: &str) -> impl Iterator<Item = char> + '_ {
        let ascii = self == Level::Ascii;
        self.view(line)
            .chars()
            .map(move |c| if ascii { to_ascii(c) } else { c })
    }

    fn same(self, a: &str, b: &str) -> bool {
        match self {
            Level::Ascii => self.chars(a).eq(self.chars(b)),
            _ => self.view(a) == self.view(b),
        }
    }

    /// FNV-1a over the line's characters as this level sees them: equal lines hash equal.
    fn hash(self, line: &str) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for c in self.chars(line) {
            hash ^= u64::from(u32::from(c));
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash
    }
}

/// The ASCII form of typographic dashes, quotes and spaces (the reference's list).
fn to_ascii(c: char) -> char {
    match c {
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => '-',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}' | '\u{2003}' | '\u{2004}' | '\u{2005}' | '\u{2006}'
        | '\u{2007}' | '\u{2008}' | '\u{2009}' | '\u{200A}' | '\u{202F}' | '\u{205F}'
        | '\u{3000}' => ' ',
        other => other,
    }
}

/// The lines of one file, with each level's line hashes computed once and kept for every hunk
/// sought in it.
pub(crate) struct Haystack<'a> {
    lines: &'a [&'a str],
    hashes: [Option<Vec<u64>>; 4],
}

/// The multiplier of the rolling hash (any odd constant spreads the line hashes).
const BASE: u64 = 0x9e37_79b9_7f4a_7c15;

impl<'a> Haystack<'a> {
    pub(crate) fn new(lines: &'a [&'a str]) -> Self {
        Haystack {
            lines,
            hashes: [None, None, None, None],
        }
    }

    /// The first index at or after `from` where `pattern` is, trying each level in turn; with
    /// `at_end`, the position that ends the file is tried first at every level. An empty pattern
    /// is found at `from`.
    pub(crate) fn find(&mut self, pattern: &[&str], from: usize, at_end: bool) -> Option<usize> {
        let n = self.lines.len();
        if pattern.is_empty() {
            return Some(from.min(n));
        }
        let k = pattern.len();
        if k > n || from > n - k {
            return None;
        }
        if at_end {
            let end = n - k;
            for level in LEVELS {
                if self.matches_at(level, pattern, end) {
                    return Some(end);
                }
            }
        }
        LEVELS
            .into_iter()
            .find_map(|level| self.scan(level, pattern, from))
    }

    fn matches_at(&self, level: Level, pattern: &[&str], at: usize) -> bool {
        pattern
            .iter()
            .zip(&self.lines[at..])
            .all(|(want, have)| level.same(want, have))
    }

    fn scan(&mut self, level: Level, pattern: &[&str], from: usize) -> Option<usize> {
        let slot = level as usize;
        let lines = self.lines;
        let hashes = self.hashes[slot]
            .get_or_insert_with(|| lines.iter().map(|line| level.hash(line)).collect());
        let k = pattern.len();
        let roll = |acc: u64, hash: &u64| acc.wrapping_mul(BASE).wrapping_add(*hash);
        let target = pattern
            .iter()
            .map(|line| level.hash(line))
            .fold(0, |acc, h| roll(acc, &h));
        // BASE^(k-1): what the line leaving the window weighed.
        let top = (1..k).fold(1u64, |acc, _| acc.wrapping_mul(BASE));
        let mut window = hashes[from..from + k].iter().fold(0, roll);
        let mut at = from;
        loop {
            if window == target && self.matches_at(level, pattern, at) {
                return Some(at);
            }
            let hashes = self.hashes[slot].as_deref().unwrap_or_default();
            let next = hashes.get(at + k)?;
            window = window.wrapping_sub(hashes[at].wrapping_mul(top));
            window = roll(window, next);
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(lines: &[&str], pattern: &[&str], from: usize, at_end: bool) -> Option<usize> {
        Haystack::new(lines).find(pattern, from, at_end)
    }

    #[test]
    fn exact_match_wins_over_an_earlier_lenient_one() {
        let lines = ["foo  ", "bar", "foo", "bar"];
        assert_eq!(find(&lines, &["foo", "bar"], 0, false), Some(2));
        assert_eq!(find(&lines, &["foo", "bar"], 3, false), None);
    }

    #[test]
    fn each_level_of_leniency() {
        assert_eq!(
            find(&["a", "foo \t", "bar"], &["foo", "bar"], 0, false),
            Some(1)
        );
        assert_eq!(
            find(&["   foo", "\tbar  "], &["foo", "bar"], 0, false),
            Some(0)
        );
        assert_eq!(
            find(
                &["let s = \u{201C}x\u{201D} \u{2014} y;"],
                &["let s = \"x\" - y;"],
                0,
                false
            ),
            Some(0)
        );
        assert_eq!(find(&["foo"], &["fob"], 0, false), None);
    }

    #[test]
    fn at_end_prefers_the_end_of_the_file() {
        let lines = ["x", "y", "x", "y"];
        assert_eq!(find(&lines, &["x", "y"], 0, true), Some(2));
        assert_eq!(find(&lines, &["x", "y"], 0, false), Some(0));
        // Not at the end: found where it is (the file may end with a blank line).
        assert_eq!(find(&["x", "y", ""], &["x", "y"], 0, true), Some(0));
    }

    #[test]
    fn bounds_never_panic() {
        assert_eq!(find(&[], &["a"], 0, false), None);
        assert_eq!(find(&["a"], &["a", "b"], 0, true), None);
        assert_eq!(find(&["a", "b"], &["b"], 5, false), None);
        assert_eq!(find(&["a"], &[], 7, false), Some(1));
        assert_eq!(find(&["a", "b", "a"], &["a"], 1, false), Some(2));
    }

    #[test]
    fn a_long_pattern_over_repeated_lines_is_not_quadratic() {
        // Compared line by line at every position and level this is 4 × 50 000 × 5 000 line
        // comparisons (seconds even optimised); the rolling hash makes it a few passes.
        let lines = vec!["a"; 50_000];
        let mut pattern = vec!["a"; 5_000];
        pattern.push("b");
        assert_eq!(find(&lines, &pattern, 0, true), None);
        pattern.pop();
        assert_eq!(find(&lines, &pattern, 123, false), Some(123));
    }

    #[test]
    fn repeated_lines_are_found_at_the_first_match() {
        let lines: Vec<&str> = std::iter::repeat_n("same", 1000).chain(["other"]).collect();
        assert_eq!(find(&lines, &["same", "other"], 0, false), Some(999));
        assert_eq!(find(&lines, &["same", "same"], 10, false), Some(10));
    }
}
