//! Making text safe and fitting it to a width: control characters and escape sequences out of
//! model and program output, then greedy word wrapping of styled spans.
//!
//! Owns only string and span manipulation; it must not know about transcript items or terminals.

use std::borrow::Cow;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Columns a tab advances to (the next multiple of it).
const TAB_STOP: usize = 4;

/// Removes what would act on the terminal instead of being shown: ANSI escape sequences (colours,
/// cursor moves, titles), carriage-return overwrites (keeping what a terminal would show last, so
/// progress bars show their final state) and other control characters (shown as `�`). Tabs become
/// spaces. Newlines stay.
pub(crate) fn sanitize(text: &str) -> Cow<'_, str> {
    let clean = !text
        .bytes()
        .any(|b| (b < 0x20 && b != b'\n') || b == 0x7f || b == 0xc2);
    if clean {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        // A bare `\r` returns to the start of the line: what follows the last one overwrites
        // what came before it (enough for progress bars; partial overwrites keep the tail).
        let line = match line.rfind('\r') {
            Some(at) if at + 1 < line.len() => &line[at + 1..],
            Some(at) => &line[..at],
            None => line,
        };
        push_visible(line, &mut out);
    }
    Cow::Owned(out)
}

fn push_visible(line: &str, out: &mut String) {
    let mut column = 0usize;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => skip_escape(&mut chars),
            '\t' => {
                let spaces = TAB_STOP - column % TAB_STOP;
                out.extend(std::iter::repeat_n(' ', spaces));
                column += spaces;
            }
            c if c.is_control() => {
                out.push('\u{fffd}');
                column += 1;
            }
            c => {
                out.push(c);
                column += c.width().unwrap_or(0);
            }
        }
    }
}

/// Skips one escape sequence after its ESC: CSI (`ESC [ … final`), OSC (`ESC ] … BEL|ESC \`),
/// or a two-character escape.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('\x40'..='\x7e').contains(&c) {
                    break;
                }
            }
        }
        Some(']') | Some('P') | Some('_') | Some('^') => {
            while let Some(c) = chars.next() {
                if c == '\x07' {
                    break;
                }
                if c == '\x1b' {
                    chars.next_if_eq(&'\\');
                    break;
                }
            }
        }
        _ => {}
    }
}

/// Display width of `text` in columns.
pub fn width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Wraps one logical line of styled spans to `width` columns, at spaces where it can and inside
/// a word where it must. Each row starts with `first` (the first row) or `rest` (the others).
/// An empty line gives one row holding the prefix.
pub(crate) fn wrap(
    spans: &[Span<'_>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let prefix_width = |p: &[Span<'static>]| p.iter().map(|s| s.width()).sum::<usize>();
    let mut rows: Vec<Line<'static>> = Vec::new();
    let mut row = Row::default();
    let mut available = width.saturating_sub(prefix_width(first)).max(1);
    let rest_available = width.saturating_sub(prefix_width(rest)).max(1);
    for span in spans {
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if row.width + w > available && row.width > 0 {
                // A space that overflows is the break itself; otherwise the word in progress
                // moves down.
                let carried = if c == ' ' {
                    Row::default()
                } else {
                    row.break_at_last_space()
                };
                rows.push(row.into_line(if rows.is_empty() { first } else { rest }));
                row = carried;
                available = rest_available;
                // A carried word can still be too long for the new row; it is split below as
                // characters arrive, except for what was carried.
                while row.width > available {
                    let tail = row.split_at_width(available);
                    rows.push(row.into_line(rest));
                    row = tail;
                }
            }
            if c == ' ' && row.width == 0 && !rows.is_empty() {
                // Spaces that start a wrapped row are the break itself.
                continue;
            }
            row.push(c, w, span.style);
        }
    }
    rows.push(row.into_line(if rows.is_empty() { first } else { rest }));
    rows
}

/// A row being filled: characters with their styles.
#[derive(Default)]
struct Row {
    cells: Vec<(char, usize, Style)>,
    width: usize,
}

impl Row {
    fn push(&mut self, c: char, w: usize, style: Style) {
        self.cells.push((c, w, style));
        self.width += w;
    }

    /// Moves the word after the last space (if the row has one) into a new row.
    fn break_at_last_space(&mut self) -> Row {
        let Some(space) = self.cells.iter().rposition(|(c, _, _)| *c == ' ') else {
            return Row::default();
        };
        let moved: Vec<_> = self.cells.drain(space + 1..).collect();
        while self.cells.last().is_some_and(|(c, _, _)| *c == ' ') {
            self.cells.pop();
        }
        self.width = self.cells.iter().map(|(_, w, _)| w).sum();
        let width = moved.iter().map(|(_, w, _)| w).sum();
        Row {
            cells: moved,
            width,
        }
    }

    /// Keeps the first `width` columns and returns the rest.
    fn split_at_width(&mut self, width: usize) -> Row {
        let mut used = 0;
        let at = self
            .cells
            .iter()
            .position(|(_, w, _)| {
                used += w;
                used > width
            })
            .unwrap_or(self.cells.len())
            .max(1);
        let moved: Vec<_> = self.cells.drain(at..).collect();
        self.width = self.cells.iter().map(|(_, w, _)| w).sum();
        let width = moved.iter().map(|(_, w, _)| w).sum();
        Row {
            cells: moved,
            width,
        }
    }

    fn into_line(self, prefix: &[Span<'static>]) -> Line<'static> {
        let mut spans: Vec<Span<'static>> = prefix.to_vec();
        let mut text = String::new();
        let mut style = None;
        for (c, _, s) in self.cells {
            if style != Some(s) {
                if let Some(style) = style
                    && !text.is_empty()
                {
                    spans.push(Span::styled(std::mem::take(&mut text), style));
                }
                style = Some(s);
            }
            text.push(c);
        }
        if let Some(style) = style
            && !text.is_empty()
        {
            spans.push(Span::styled(text, style));
        }
        Line::from(spans)
    }
}

/// A line's text without styles.
pub fn plain(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str, width: usize) -> Vec<String> {
        wrap(&[Span::raw(text.to_owned())], width, &[], &[])
            .iter()
            .map(plain)
            .collect()
    }

    #[test]
    fn wraps_at_spaces_and_splits_long_words() {
        assert_eq!(
            rows("hello brave new world", 11),
            ["hello brave", "new world"]
        );
        assert_eq!(rows("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(rows("", 10), [""]);
        assert_eq!(rows("a verylongword", 5), ["a", "veryl", "ongwo", "rd"]);
    }

    #[test]
    fn prefixes_and_styles_survive_wrapping() {
        let bold = Style::new().bold();
        let lines = wrap(
            &[Span::styled("one two three", bold)],
            9,
            &[Span::raw("> ")],
            &[Span::raw("  ")],
        );
        let text: Vec<_> = lines.iter().map(plain).collect();
        assert_eq!(text, ["> one two", "  three"]);
        assert_eq!(lines[1].spans[1].style, bold);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        assert_eq!(rows("日本語のテキスト", 6), ["日本語", "のテキ", "スト"]);
    }

    #[test]
    fn sanitize_removes_what_would_drive_the_terminal() {
        assert_eq!(sanitize("plain\ntext"), "plain\ntext");
        assert_eq!(sanitize("\x1b[31mred\x1b[0m"), "red");
        assert_eq!(sanitize("\x1b]0;title\x07after"), "after");
        assert_eq!(sanitize("10%\r50%\r100%\n"), "100%\n");
        assert_eq!(sanitize("crlf\r\nline"), "crlf\nline");
        assert_eq!(sanitize("a\tb"), "a   b");
        assert_eq!(sanitize("bell\x07 nul\0"), "bell\u{fffd} nul\u{fffd}");
        assert_eq!(sanitize("c1\u{9b}31m"), "c1\u{fffd}31m");
    }
}
