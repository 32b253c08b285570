//! Markdown answers as terminal lines: headings, emphasis, inline code, lists, quotes, rules,
//! tables and fenced code (highlighted), wrapped to a width.
//!
//! Owns the markdown-to-lines mapping only; it must not know about transcript items. The
//! model's own line breaks are kept (soft breaks end a line): small models format with them.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::highlight;
use super::text::{sanitize, width, wrap};

/// Renders `text` to rows of at most `columns` columns, each starting with `indent`.
/// `highlight_code` is off while an answer streams (it is redone when the answer completes).
pub fn render(
    text: &str,
    columns: usize,
    indent: &str,
    highlight_code: bool,
) -> Vec<Line<'static>> {
    let text = sanitize(text);
    let mut r = Renderer {
        out: Vec::new(),
        line: Vec::new(),
        styles: vec![Style::new()],
        containers: Vec::new(),
        lists: Vec::new(),
        code: None,
        table: None,
        link: None,
        columns,
        indent: indent.to_owned(),
        highlight_code,
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(&text, options) {
        r.event(event);
    }
    r.flush();
    while r.out.last().is_some_and(|l| l.width() <= r.indent.len()) {
        r.out.pop();
    }
    r.out
}

/// A block quote or list item: what starts its first row and what starts the others.
struct Container {
    first: String,
    rest: String,
    first_used: bool,
}

struct CodeBlock {
    language: String,
    text: String,
}

#[derive(Default)]
struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<String>>,
    header_rows: usize,
    cell: String,
}

struct Renderer {
    out: Vec<Line<'static>>,
    line: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// Per open list: the next number, or `None` for bullets.
    lists: Vec<Option<u64>>,
    code: Option<CodeBlock>,
    table: Option<Table>,
    link: Option<String>,
    columns: usize,
    indent: String,
    highlight_code: bool,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, change: impl FnOnce(Style) -> Style) {
        let next = change(self.style());
        self.styles.push(next);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    fn text(&mut self, text: &str) {
        if let Some(code) = &mut self.code {
            code.text.push_str(text);
            return;
        }
        if let Some(table) = &mut self.table {
            table.cell.push_str(text);
            return;
        }
        let style = self.style();
        let mut pieces = text.split('\n');
        if let Some(first) = pieces.next() {
            self.line.push(Span::styled(first.to_owned(), style));
        }
        for piece in pieces {
            self.flush();
            self.line.push(Span::styled(piece.to_owned(), style));
        }
    }

    /// Prefixes for the next row: the indent, then each container's marker or continuation.
    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let dim = Style::new().fg(Color::DarkGray);
        let mut first = self.indent.clone();
        let mut rest = self.indent.clone();
        for c in &mut self.containers {
            if c.first_used {
                first.push_str(&c.rest);
            } else {
                first.push_str(&c.first);
                c.first_used = true;
            }
            rest.push_str(&c.rest);
        }
        (
            vec![Span::styled(first, dim)],
            vec![Span::styled(rest, dim)],
        )
    }

    /// Ends the current logical line (if it has anything) as wrapped rows.
    fn flush(&mut self) {
        if self.line.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.line);
        let (first, rest) = self.prefixes();
        self.out.extend(wrap(&spans, self.columns, &first, &rest));
    }

    fn blank(&mut self) {
        self.flush();
        if self.out.last().is_some_and(|l| l.width() > 0) {
            self.out.push(Line::default());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                let style = self.style().fg(Color::Cyan);
                if let Some(table) = &mut self.table {
                    table.cell.push_str(&code);
                } else {
                    self.line.push(Span::styled(code.into_string(), style));
                }
            }
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::SoftBreak | Event::HardBreak => {
                if let Some(table) = &mut self.table {
                    table.cell.push(' ');
                } else {
                    self.flush();
                }
            }
            Event::Rule => {
                self.flush();
                let rule = "─".repeat(self.columns.saturating_sub(self.indent.len()).min(40));
                self.out.push(Line::from(vec![
                    Span::raw(self.indent.clone()),
                    Span::styled(rule, Style::new().fg(Color::DarkGray)),
                ]));
                self.blank();
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::FootnoteReference(name) => self.text(&format!("[{name}]")),
            Event::InlineMath(m) | Event::DisplayMath(m) => self.text(&m),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.flush();
                let underline = level == HeadingLevel::H1;
                self.push_style(|s| {
                    let s = s.add_modifier(Modifier::BOLD);
                    if underline {
                        s.add_modifier(Modifier::UNDERLINED)
                    } else {
                        s
                    }
                });
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.containers.push(Container {
                    first: "│ ".into(),
                    rest: "│ ".into(),
                    first_used: false,
                });
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split(|c: char| c.is_whitespace() || c == ':')
                        .next()
                        .unwrap_or("")
                        .to_owned(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some(CodeBlock {
                    language,
                    text: String::new(),
                });
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                let rest = " ".repeat(width(&marker));
                self.containers.push(Container {
                    first: marker,
                    rest,
                    first_used: false,
                });
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.into_string());
                self.push_style(|s| s.add_modifier(Modifier::UNDERLINED));
            }
            Tag::Image { dest_url, .. } => {
                self.link = Some(dest_url.into_string());
                self.push_style(|s| s);
            }
            Tag::Table(alignments) => {
                self.flush();
                self.table = Some(Table {
                    alignments,
                    ..Table::default()
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(t) = &mut self.table {
                    t.cell.clear();
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                let tight_item = self
                    .containers
                    .last()
                    .is_some_and(|c| c.rest.trim().is_empty())
                    && !self.lists.is_empty();
                if tight_item {
                    self.flush();
                } else {
                    self.blank();
                }
            }
            TagEnd::Heading(_) => {
                self.pop_style();
                self.blank();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.pop_style();
                self.blank();
            }
            TagEnd::CodeBlock => self.end_code_block(),
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link | TagEnd::Image => {
                self.pop_style();
                if let Some(url) = self.link.take() {
                    let shown: String = self.line.iter().map(|s| s.content.as_ref()).collect();
                    if !shown.ends_with(url.as_str()) && !url.is_empty() {
                        self.line.push(Span::styled(
                            format!(" ({url})"),
                            Style::new().fg(Color::DarkGray),
                        ));
                    }
                }
            }
            TagEnd::TableCell => {
                if let Some(t) = &mut self.table {
                    let cell = std::mem::take(&mut t.cell);
                    if let Some(row) = t.rows.last_mut() {
                        row.push(cell.trim().to_owned());
                    }
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.header_rows = t.rows.len();
                }
            }
            TagEnd::Table => self.end_table(),
            _ => {}
        }
    }

    fn end_code_block(&mut self) {
        let Some(block) = self.code.take() else {
            return;
        };
        let code = block.text.strip_suffix('\n').unwrap_or(&block.text);
        let lines = if self.highlight_code {
            highlight(code, &block.language)
        } else {
            code.lines()
                .map(|l| vec![Span::raw(l.to_owned())])
                .collect()
        };
        let (mut first, mut rest) = self.prefixes();
        first.push(Span::raw("  "));
        rest.push(Span::raw("  "));
        for spans in lines {
            self.out.extend(wrap(&spans, self.columns, &first, &rest));
            first.clone_from(&rest);
        }
        self.blank();
    }

    fn end_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                table
                    .rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| width(s))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let dim = Style::new().fg(Color::DarkGray);
        for (r, row) in table.rows.iter().enumerate() {
            let mut spans = Vec::new();
            for (c, w) in widths.iter().enumerate() {
                if c > 0 {
                    spans.push(Span::styled(" │ ", dim));
                }
                let cell = row.get(c).map(String::as_str).unwrap_or("");
                let pad = w.saturating_sub(width(cell));
                let (left, right) = match table.alignments.get(c) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                let style = if r < table.header_rows {
                    Style::new().add_modifier(Modifier::BOLD)
                } else {
                    Style::new()
                };
                spans.push(Span::styled(
                    format!("{}{cell}{}", " ".repeat(left), " ".repeat(right)),
                    style,
                ));
            }
            self.line = spans;
            self.flush();
            if r + 1 == table.header_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                self.line = vec![Span::styled(rule.join("─┼─"), dim)];
                self.flush();
            }
        }
        self.blank();
    }
}

#[cfg(test)]
mod tests {
    use super::super::text::plain;
    use super::*;

    fn rows(text: &str, columns: usize) -> Vec<String> {
        render(text, columns, " ", true).iter().map(plain).collect()
    }

    #[test]
    fn paragraphs_lists_and_code() {
        let md = "# Title\n\nSome *text* and `code`.\nSecond line.\n\n- one\n- two\n\n1. first\n2. second\n\n```python\nprint(1)\n```\n\nEnd.";
        assert_eq!(
            rows(md, 40),
            [
                " Title",
                "",
                " Some text and code.",
                " Second line.",
                "",
                " • one",
                " • two",
                "",
                " 1. first",
                " 2. second",
                "",
                "   print(1)",
                "",
                " End.",
            ]
        );
    }

    #[test]
    fn wrapped_list_items_and_quotes_keep_their_indent() {
        assert_eq!(
            rows("- alpha beta gamma delta", 14),
            [" • alpha beta", "   gamma delta"]
        );
        assert_eq!(
            rows("> quoted words here", 12),
            [" │ quoted", " │ words", " │ here"]
        );
    }

    #[test]
    fn tables_line_up() {
        let md = "| a | bb |\n|---|---:|\n| ccc | d |";
        assert_eq!(rows(md, 40), [" a   │ bb", " ────┼───", " ccc │  d"]);
    }

    #[test]
    fn links_show_their_target_and_styles_apply() {
        assert_eq!(
            rows("see [docs](https://x.dev)", 40),
            [" see docs (https://x.dev)"]
        );
        let lines = render("**bold**", 20, "", false);
        assert!(
            lines[0]
                .spans
                .iter()
                .any(|s| s.content == "bold" && s.style.add_modifier.contains(Modifier::BOLD))
        );
    }

    #[test]
    fn escape_sequences_in_answers_do_not_reach_the_terminal() {
        assert_eq!(rows("red \x1b[31mtext\x1b[0m", 40), [" red text"]);
    }

    #[test]
    fn an_unclosed_fence_while_streaming_still_renders() {
        assert_eq!(
            rows("Here:\n```bash\necho hi", 40),
            [" Here:", "", "   echo hi"]
        );
    }
}
