//! The composer: the multi-line message editor at the bottom of the chat screen, with a
//! history of sent messages (Up on the first row and Down on the last browse it, as in a
//! shell). It knows nothing of turns: the app decides whether a submission starts a turn,
//! steers the running one or answers a question.

use std::collections::VecDeque;

/// A multi-line text being edited, with a cursor and the history of submissions.
#[derive(Debug, Clone)]
pub struct Composer {
    lines: Vec<String>,
    row: usize,
    /// The cursor's column in characters (not bytes) on `row`.
    col: usize,
    history: VecDeque<String>,
    history_limit: usize,
    /// The history entry shown, while browsing.
    browsing: Option<usize>,
    /// What was being typed when browsing started, restored after the newest entry.
    draft: String,
}

/// The byte offset of character `col` in `line` (its length past the end).
fn byte_at(line: &str, col: usize) -> usize {
    line.char_indices()
        .nth(col)
        .map_or(line.len(), |(index, _)| index)
}

impl Composer {
    /// An empty composer keeping at most `history_limit` submissions.
    pub fn new(history_limit: usize) -> Self {
        Self {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            browsing: None,
            draft: String::new(),
        }
    }

    /// The text, rows joined with newlines.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The rows being edited.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The cursor: row and column in characters.
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// Whether nothing but whitespace has been typed.
    pub fn is_blank(&self) -> bool {
        self.lines.iter().all(|line| line.trim().is_empty())
    }

    /// Replaces the text, with the cursor at its end.
    pub fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].chars().count();
    }

    fn edited(&mut self) {
        self.browsing = None;
    }

    /// Types `c` at the cursor.
    pub fn insert_char(&mut self, c: char) {
        if c == '\n' {
            return self.insert_newline();
        }
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.insert(at, c);
        self.col += 1;
        self.edited();
    }

    /// Types `text` (a paste) at the cursor, newlines included.
    pub fn insert_str(&mut self, text: &str) {
        for c in text.chars().filter(|c| *c != '\r') {
            self.insert_char(c);
        }
    }

    /// Splits the row at the cursor.
    pub fn insert_newline(&mut self) {
        let line = &mut self.lines[self.row];
        let rest = line.split_off(byte_at(line, self.col));
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
        self.edited();
    }

    /// Deletes the character before the cursor, joining rows at a row's start.
    pub fn backspace(&mut self) {
        if self.col > 0 {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col - 1);
            line.remove(at);
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
            self.lines[self.row].push_str(&line);
        }
        self.edited();
    }

    /// Deletes the character under the cursor, joining rows at a row's end.
    pub fn delete(&mut self) {
        let len = self.lines[self.row].chars().count();
        if self.col < len {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col);
            line.remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
        self.edited();
    }

    /// Moves the cursor one character left (to the previous row's end at a row's start).
    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
        }
    }

    /// Moves the cursor one character right (to the next row's start at a row's end).
    pub fn right(&mut self) {
        if self.col < self.lines[self.row].chars().count() {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// Moves the cursor to the start of its row.
    pub fn home(&mut self) {
        self.col = 0;
    }

    /// Moves the cursor to the end of its row.
    pub fn end(&mut self) {
        self.col = self.lines[self.row].chars().count();
    }

    /// Up: the row above, or on the first row the previous history entry.
    pub fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let previous = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(index) => index - 1,
        };
        let entry = self.history[previous].clone();
        self.set_text(&entry);
        self.browsing = Some(previous);
    }

    /// Down: the row below, or on the last row the next history entry (after the newest,
    /// what was being typed).
    pub fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let Some(index) = self.browsing else { return };
        if index + 1 < self.history.len() {
            let entry = self.history[index + 1].clone();
            self.set_text(&entry);
            self.browsing = Some(index + 1);
        } else {
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
            self.browsing = None;
        }
    }

    /// Empties the composer (the history stays).
    pub fn clear(&mut self) {
        self.lines = vec![String::new()];
        self.row = 0;
        self.col = 0;
        self.browsing = None;
    }

    /// The text to send, if any: it goes to the history and the composer empties.
    pub fn take_submission(&mut self) -> Option<String> {
        if self.is_blank() {
            return None;
        }
        let text = self.text();
        if self.history.back() != Some(&text) {
            if self.history.len() == self.history_limit {
                self.history.pop_front();
            }
            self.history.push_back(text.clone());
        }
        self.clear();
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(text: &str) -> Composer {
        let mut composer = Composer::new(10);
        composer.insert_str(text);
        composer
    }

    #[test]
    fn editing_across_rows() {
        let mut composer = typed("hello\nwörld");
        assert_eq!(composer.cursor(), (1, 5));
        composer.home();
        composer.backspace();
        assert_eq!(composer.text(), "hellowörld");
        assert_eq!(composer.cursor(), (0, 5));
        composer.right();
        composer.right();
        composer.delete();
        assert_eq!(composer.text(), "hellowöld");
        composer.insert_newline();
        assert_eq!(composer.lines(), ["hellowö", "ld"]);
        composer.up();
        composer.end();
        composer.delete();
        assert_eq!(composer.text(), "hellowöld");
    }

    #[test]
    fn history_browses_and_restores_the_draft() {
        let mut composer = typed("first");
        assert_eq!(composer.take_submission().as_deref(), Some("first"));
        composer.insert_str("second");
        assert_eq!(composer.take_submission().as_deref(), Some("second"));
        assert_eq!(composer.take_submission(), None);
        composer.insert_str("draft");
        composer.up();
        assert_eq!(composer.text(), "second");
        composer.up();
        assert_eq!(composer.text(), "first");
        composer.up();
        assert_eq!(composer.text(), "first");
        composer.down();
        assert_eq!(composer.text(), "second");
        composer.down();
        assert_eq!(composer.text(), "draft");
    }

    #[test]
    fn history_is_bounded() {
        let mut composer = Composer::new(2);
        for text in ["a", "b", "c"] {
            composer.insert_str(text);
            composer.take_submission();
        }
        composer.up();
        composer.up();
        composer.up();
        assert_eq!(composer.text(), "b");
    }
}
