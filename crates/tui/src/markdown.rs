//! Agent messages rendered as markdown into styled transcript rows: pulldown-cmark parses,
//! this module lays the blocks out (headings, emphasis, code, lists, quotes, links, rules) and
//! wraps them itself to the transcript's width, because scrolling needs to know how many rows
//! a message takes. The parser accepts any prefix of a document, so a message still streaming
//! renders as what it is so far (an unclosed fence is a code block to the end). Rendered rows
//! are cached per entry by width and text length: a finished message is laid out once, the
//! streaming one again only when its text has grown.

use std::sync::{Arc, Mutex, PoisonError};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Inline code and code blocks.
fn code_style() -> Style {
    Style::new().fg(Color::Green)
}

/// Quote bars, link destinations and rules.
fn faint_style() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// Columns a tab in a code block takes.
const CODE_TAB: &str = "    ";

/// The rows of markdown `text` at `width` columns.
pub(crate) fn render(text: &str, width: usize) -> Vec<Line<'static>> {
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut renderer = Renderer::new(width.max(1));
    for event in Parser::new_ext(text, options) {
        renderer.event(event);
    }
    renderer.finish()
}

/// The rendered rows of one agent message, kept for the width and text length they were
/// made for. The message's text only grows (deltas are appended; a completed item replaces
/// the entry with a fresh cache), so an unchanged length means unchanged text.
#[derive(Default)]
pub struct RenderCache(Mutex<Option<Rendered>>);

struct Rendered {
    width: usize,
    len: usize,
    rows: Arc<Vec<Line<'static>>>,
}

impl RenderCache {
    /// The rows of `text` at `width` columns, rendered again only when either changed.
    pub(crate) fn rows(&self, text: &str, width: usize) -> Arc<Vec<Line<'static>>> {
        // A panic while the lock was held cannot leave a half-written value: the slot is only
        // ever replaced whole.
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(rendered) = slot.as_ref()
            && rendered.width == width
            && rendered.len == text.len()
        {
            return Arc::clone(&rendered.rows);
        }
        let rows = Arc::new(render(text, width));
        *slot = Some(Rendered {
            width,
            len: text.len(),
            rows: Arc::clone(&rows),
        });
        rows
    }
}

/// A copy starts empty: the cache is derived from the text, not part of the entry's value.
impl Clone for RenderCache {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// Caches never make entries differ.
impl PartialEq for RenderCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for RenderCache {}

impl std::fmt::Debug for RenderCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RenderCache")
    }
}

/// A block that prefixes the rows inside it.
enum Container {
    /// `│ ` on every row.
    Quote,
    /// The marker on the item's first row, as many spaces on the rest.
    Item { marker: String, pending: bool },
}

/// A link or image being read: where it points, and where its text starts in the inline
/// buffer (an autolink whose text is its destination does not repeat it).
struct OpenLink {
    dest: String,
    text_start: usize,
}

struct Renderer {
    width: usize,
    rows: Vec<Line<'static>>,
    containers: Vec<Container>,
    /// The next number of each open list, `None` for bullets.
    lists: Vec<Option<u64>>,
    styles: Vec<Style>,
    links: Vec<OpenLink>,
    /// The text of the block being read, a character and its style at a time; `\n` is a
    /// hard break.
    inline: Vec<(char, Style)>,
    /// The text of the code block being read.
    code: Option<String>,
    /// Whether the next row starts a block set off from the one before by a blank row, and
    /// inside how many of the containers that row is (a blank row between two quoted
    /// paragraphs keeps the quote's bar, one before a quote does not).
    gap: Option<usize>,
}

impl Renderer {
    fn new(width: usize) -> Self {
        Self {
            width,
            rows: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            styles: vec![Style::new()],
            links: Vec::new(),
            inline: Vec::new(),
            code: None,
            gap: None,
        }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, patch: Style) {
        let style = self.style().patch(patch);
        self.styles.push(style);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    fn push_text(&mut self, text: &str, style: Style) {
        self.inline.extend(text.chars().map(|c| (c, style)));
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code {
                Some(code) => code.push_str(&text),
                None => self.push_text(&text, self.style()),
            },
            Event::Code(text) => {
                let style = self.style().patch(code_style());
                self.push_text(&text, style);
            }
            Event::InlineMath(text) | Event::DisplayMath(text) => {
                self.push_text(&text, self.style())
            }
            Event::Html(text) | Event::InlineHtml(text) => self.push_text(&text, self.style()),
            Event::FootnoteReference(label) => self.push_text(&format!("[^{label}]"), self.style()),
            Event::SoftBreak => self.push_text(" ", self.style()),
            Event::HardBreak => self.push_text("\n", self.style()),
            Event::Rule => {
                self.flush();
                let width = self.width.saturating_sub(self.prefix_width()).max(1);
                self.push_row(vec![Span::styled("─".repeat(width), faint_style())]);
                self.end_block();
            }
            Event::TaskListMarker(done) => {
                self.push_text(if done { "[x] " } else { "[ ] " }, self.style())
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.flush(),
            Tag::Heading { level, .. } => {
                self.flush();
                let mut style = Style::new().add_modifier(Modifier::BOLD);
                if level == pulldown_cmark::HeadingLevel::H1 {
                    style = style.add_modifier(Modifier::UNDERLINED);
                }
                self.push_style(style);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(_) => {
                self.flush();
                self.code = Some(String::new());
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        let marker = format!("{number}. ");
                        *number += 1;
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                self.containers.push(Container::Item {
                    marker,
                    pending: true,
                });
            }
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.links.push(OpenLink {
                    dest: dest_url.into_string(),
                    text_start: self.inline.len(),
                });
                self.push_style(
                    Style::new()
                        .fg(Color::Blue)
                        .add_modifier(Modifier::UNDERLINED),
                );
            }
            // Tables, footnote definitions and the like are not enabled: their text is read
            // as ordinary text.
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => {
                self.flush();
                self.end_block();
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.pop_style();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.end_block();
            }
            TagEnd::CodeBlock => {
                let code = self.code.take().unwrap_or_default();
                self.code_rows(&code);
                self.end_block();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.end_block();
            }
            TagEnd::Item => {
                self.flush();
                if let Some(Container::Item { pending: true, .. }) = self.containers.last() {
                    // An empty item (`- ` while streaming) still shows its marker.
                    self.push_row(Vec::new());
                }
                self.containers.pop();
                // Items follow each other without blank rows, even in a loose list.
                self.gap = None;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link | TagEnd::Image => {
                self.pop_style();
                if let Some(link) = self.links.pop() {
                    let text: String = self.inline[link.text_start.min(self.inline.len())..]
                        .iter()
                        .map(|(c, _)| c)
                        .collect();
                    let bare = link.dest.strip_prefix("mailto:").unwrap_or(&link.dest);
                    if !link.dest.is_empty() && text != link.dest && text != bare {
                        self.push_text(&format!(" ({})", link.dest), faint_style());
                    }
                }
            }
            _ => {}
        }
    }

    /// Sets the next block off from the one that ends here.
    fn end_block(&mut self) {
        self.gap = Some(self.containers.len());
    }

    /// Adds a row of `content` inside the open containers, after the blank row that sets
    /// its block off if it is the block's first. The blank row comes only with a row after
    /// it, so a block that has no rows yet (a fence just opened) adds none.
    fn push_row(&mut self, content: Vec<Span<'static>>) {
        if let Some(depth) = self.gap.take()
            && !self.rows.is_empty()
        {
            let spans = self.prefix(depth, false);
            self.rows.push(Line::from(spans));
        }
        let mut spans = self.prefix(self.containers.len(), true);
        spans.extend(content);
        self.rows.push(Line::from(spans));
    }

    fn prefix_width(&self) -> usize {
        self.containers
            .iter()
            .map(|container| match container {
                Container::Quote => 2,
                Container::Item { marker, .. } => marker.chars().count(),
            })
            .sum()
    }

    /// The spans that start a row inside the outermost `depth` open containers; `first`
    /// consumes the markers of items whose first row this is.
    fn prefix(&mut self, depth: usize, first: bool) -> Vec<Span<'static>> {
        let mut spans = Vec::new();
        for container in self.containers.iter_mut().take(depth) {
            match container {
                Container::Quote => spans.push(Span::styled("│ ", faint_style())),
                Container::Item { marker, pending } => {
                    if *pending && first {
                        *pending = false;
                        spans.push(Span::raw(marker.clone()));
                    } else {
                        spans.push(Span::raw(" ".repeat(marker.chars().count())));
                    }
                }
            }
        }
        spans
    }

    /// Lays out the inline text read so far, word-wrapped inside the containers' prefix.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let mut cells = std::mem::take(&mut self.inline);
        while cells.last().is_some_and(|(c, _)| *c == '\n') {
            cells.pop();
        }
        let width = self.width.saturating_sub(self.prefix_width()).max(1);
        for hard_line in cells.split(|(c, _)| *c == '\n') {
            for row in wrap_cells(hard_line, width, true) {
                self.push_row(spans_of(&row));
            }
        }
    }

    /// A code block's rows: each line of code broken at the width exactly (not at spaces,
    /// so indentation and spacing stay as written), all in the code style.
    fn code_rows(&mut self, code: &str) {
        let code = code.strip_suffix('\n').unwrap_or(code);
        if code.is_empty() {
            return;
        }
        let width = self.width.saturating_sub(self.prefix_width()).max(1);
        for line in code.split('\n') {
            let cells: Vec<(char, Style)> = line
                .replace('\t', CODE_TAB)
                .chars()
                .map(|c| (c, code_style()))
                .collect();
            for row in wrap_cells(&cells, width, false) {
                self.push_row(spans_of(&row));
            }
        }
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        // What a partial document leaves open still shows.
        if let Some(code) = self.code.take() {
            self.code_rows(&code);
        }
        self.flush();
        if self.rows.is_empty() {
            self.rows.push(Line::raw(""));
        }
        self.rows
    }
}

/// Splits `cells` into rows no wider than `width` columns: at spaces where a row has one
/// and `at_spaces`, else exactly at the width. Control characters are dropped (they would
/// move the terminal's cursor), tabs shown as a space.
fn wrap_cells(cells: &[(char, Style)], width: usize, at_spaces: bool) -> Vec<Vec<(char, Style)>> {
    let cell_width = |c: char| c.width().unwrap_or(0);
    let mut rows = Vec::new();
    let mut current: Vec<(char, Style)> = Vec::new();
    let mut current_width = 0;
    // The index of the last space in `current`, where the row may break.
    let mut last_space: Option<usize> = None;
    for &(c, style) in cells {
        let c = match c {
            '\t' => ' ',
            c if c.is_control() => continue,
            c => c,
        };
        let char_width = cell_width(c);
        if current_width + char_width > width && !current.is_empty() {
            if at_spaces && c == ' ' {
                // A break at this very space: it is not carried to the next row.
                rows.push(std::mem::take(&mut current));
                current_width = 0;
                last_space = None;
                continue;
            }
            match last_space {
                Some(at) if at_spaces => {
                    let rest = current.split_off(at + 1);
                    current.truncate(at);
                    rows.push(std::mem::replace(&mut current, rest));
                    current_width = current.iter().map(|(c, _)| cell_width(*c)).sum();
                }
                _ => {
                    rows.push(std::mem::take(&mut current));
                    current_width = 0;
                }
            }
            last_space = None;
        }
        if c == ' ' {
            last_space = Some(current.len());
        }
        current.push((c, style));
        current_width += char_width;
    }
    rows.push(current);
    rows
}

/// Runs of equally styled characters as spans.
fn spans_of(cells: &[(char, Style)]) -> Vec<Span<'static>> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for &(c, cell_style) in cells {
        if style.is_some_and(|style| style != cell_style) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                style.unwrap_or_default(),
            ));
        }
        style = Some(cell_style);
        text.push(c);
    }
    if let Some(style) = style {
        spans.push(Span::styled(text, style));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    fn text(rows: &[Line<'_>]) -> Vec<String> {
        rows.iter().map(ToString::to_string).collect()
    }

    /// The style of the first character of `needle` in `rows`.
    fn style_of(rows: &[Line<'_>], needle: &str) -> Style {
        for row in rows {
            for span in &row.spans {
                if span.content.contains(needle) {
                    return span.style;
                }
            }
        }
        panic!("{needle:?} not in {:?}", text(rows));
    }

    #[test]
    fn an_unclosed_fence_is_code_so_far() {
        let partial = "Run this:\n\n```sh\ncargo test -p tandem-tui\ncargo clip";
        let rows = render(partial, 40);
        assert_eq!(
            text(&rows),
            ["Run this:", "", "cargo test -p tandem-tui", "cargo clip"]
        );
        assert_eq!(style_of(&rows, "cargo clip"), code_style());
        assert_eq!(style_of(&rows, "Run this"), Style::new());
        // The fence closed and text after it: the code is the same, the text a paragraph.
        let rows = render(&format!("{partial}py\n```\n\nDone *now*."), 40);
        assert_eq!(
            text(&rows),
            [
                "Run this:",
                "",
                "cargo test -p tandem-tui",
                "cargo clippy",
                "",
                "Done now."
            ]
        );
        assert!(
            style_of(&rows, "now")
                .add_modifier
                .contains(Modifier::ITALIC)
        );
        // Only the fence so far: nothing yet, and no panic.
        assert_eq!(text(&render("Run this:\n\n```", 40)), ["Run this:"]);
    }

    #[test]
    fn partial_inline_markup_shows_its_text() {
        // An unclosed `**` or backtick is literal text until it closes.
        assert_eq!(text(&render("a **bold", 40)), ["a **bold"]);
        let rows = render("a **bold** and `co", 40);
        assert_eq!(text(&rows), ["a bold and `co"]);
        assert!(
            style_of(&rows, "bold")
                .add_modifier
                .contains(Modifier::BOLD)
        );
        assert_eq!(text(&render("- ", 40)), ["• "]);
        assert_eq!(text(&render("", 40)), [""]);
    }

    #[test]
    fn lists_quotes_and_links_are_indented_and_wrapped() {
        let markdown = "1. first item with enough words to wrap\n2. second\n   - nested one\n\n\
                        > quoted words that wrap too\n\nSee [the docs](https://x.dev/d) or <https://x.dev>.";
        let rows = render(markdown, 20);
        assert_eq!(
            text(&rows),
            [
                "1. first item with",
                "   enough words to",
                "   wrap",
                "2. second",
                "   • nested one",
                "",
                "│ quoted words that",
                "│ wrap too",
                "",
                "See the docs",
                "(https://x.dev/d) or",
                "https://x.dev.",
            ]
        );
        for row in &rows {
            assert!(row.width() <= 20, "{row}");
        }
        let link = style_of(&rows, "the docs");
        assert_eq!(link.fg, Some(Color::Blue));
        assert_eq!(style_of(&rows, "(https://x.dev/d)"), faint_style());
    }

    #[test]
    fn code_lines_break_at_the_width_exactly_and_keep_their_spaces() {
        let rows = render("```\nfn main() {\n    let answer = 42;\n}\n```", 12);
        assert_eq!(
            text(&rows),
            ["fn main() {", "    let answ", "er = 42;", "}"]
        );
        assert!(rows.iter().all(|row| row.to_string().width() <= 12));
    }

    #[test]
    fn the_cache_renders_again_only_when_the_text_grew_or_the_width_changed() {
        let cache = RenderCache::default();
        let first = cache.rows("# Title", 20);
        assert!(Arc::ptr_eq(&first, &cache.rows("# Title", 20)));
        let wider = cache.rows("# Title", 30);
        assert!(!Arc::ptr_eq(&first, &wider));
        let grown = cache.rows("# Title\n\nmore", 30);
        assert_eq!(text(&grown), ["Title", "", "more"]);
        assert!(
            style_of(&grown, "Title")
                .add_modifier
                .contains(Modifier::BOLD)
        );
    }
}
