//! The multi-line input box: a text buffer with a cursor and the edits a prompt line needs.
//!
//! Owns the text and the cursor only (a byte offset, always on a character boundary). It must
//! not know about keys, history or drawing beyond reporting rows and the cursor's place.

use unicode_width::UnicodeWidthChar;

/// `text` as the box keeps it: pasted text may carry CR LF or lone CR line ends; the box keeps
/// LF only, and no other control characters but tabs.
pub fn clean(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .filter(|c| *c == '\n' || *c == '\t' || !c.is_control())
        .collect()
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Composer {
    text: String,
    cursor: usize,
}

impl Composer {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Replaces the text; the cursor goes to the end.
    pub fn set(&mut self, text: impl Into<String>) {
        self.text = text.into();
        self.cursor = self.text.len();
    }

    /// Takes the text out, leaving the box empty.
    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    pub fn insert(&mut self, text: &str) {
        let clean = clean(text);
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    /// Replaces the bytes `range` (clamped to the text and its character boundaries) with
    /// `text`, leaving the cursor after it (a completion).
    pub fn replace(&mut self, range: std::ops::Range<usize>, text: &str) {
        let end = range.end.min(self.text.len());
        let start = range.start.min(end);
        if !self.text.is_char_boundary(start) || !self.text.is_char_boundary(end) {
            return;
        }
        self.text.replace_range(start..end, "");
        self.cursor = start;
        self.insert(text);
    }

    pub(crate) fn backspace(&mut self) {
        if let Some(prev) = self.prev_boundary() {
            self.text.drain(prev..self.cursor);
            self.cursor = prev;
        }
    }

    pub fn delete(&mut self) {
        if let Some(next) = self.next_boundary() {
            self.text.drain(self.cursor..next);
        }
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub(crate) fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        if before.ends_with('\n') {
            self.backspace();
            return;
        }
        let trimmed = before.trim_end_matches(' ');
        let start = trimmed.rfind([' ', '\n']).map(|i| i + 1).unwrap_or(0);
        self.text.drain(start..self.cursor);
        self.cursor = start;
    }

    /// Deletes from the start of the line to the cursor (Ctrl+U).
    pub(crate) fn delete_to_line_start(&mut self) {
        let start = self.line_start();
        self.text.drain(start..self.cursor);
        self.cursor = start;
    }

    pub fn left(&mut self) {
        if let Some(prev) = self.prev_boundary() {
            self.cursor = prev;
        }
    }

    pub fn right(&mut self) {
        if let Some(next) = self.next_boundary() {
            self.cursor = next;
        }
    }

    pub(crate) fn line_home(&mut self) {
        self.cursor = self.line_start();
    }

    pub(crate) fn line_end(&mut self) {
        self.cursor = self.text[self.cursor..]
            .find('\n')
            .map(|i| self.cursor + i)
            .unwrap_or(self.text.len());
    }

    pub(crate) fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    pub(crate) fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Moves to the line above, keeping the column where it can. False on the first line.
    pub fn up(&mut self) -> bool {
        if self.on_first_line() {
            return false;
        }
        let column = self.column();
        let start = self.line_start();
        let prev_start = self.text[..start - 1]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0);
        self.cursor = self.offset_at_column(prev_start, column);
        true
    }

    /// Moves to the line below, keeping the column where it can. False on the last line.
    pub fn down(&mut self) -> bool {
        if self.on_last_line() {
            return false;
        }
        let column = self.column();
        let next_start = self.cursor + self.text[self.cursor..].find('\n').unwrap_or(0) + 1;
        self.cursor = self.offset_at_column(next_start, column);
        true
    }

    /// Rows the text takes at `width` columns (characters wrap, words do not), and the cursor's
    /// row and column among them.
    pub(crate) fn layout(&self, width: usize) -> (Vec<String>, (usize, usize)) {
        let width = width.max(1);
        let mut rows = vec![String::new()];
        let mut column = 0;
        let mut cursor = (0, 0);
        for (offset, c) in self.text.char_indices() {
            if offset == self.cursor {
                cursor = (rows.len() - 1, column);
            }
            if c == '\n' {
                rows.push(String::new());
                column = 0;
                continue;
            }
            let w = c.width().unwrap_or(0);
            if column + w > width {
                rows.push(String::new());
                column = 0;
            }
            if let Some(row) = rows.last_mut() {
                row.push(if c == '\t' { ' ' } else { c });
            }
            column += w;
        }
        if self.cursor >= self.text.len() {
            if column >= width {
                rows.push(String::new());
                column = 0;
            }
            cursor = (rows.len() - 1, column);
        }
        (rows, cursor)
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0)
    }

    fn column(&self) -> usize {
        self.text[self.line_start()..self.cursor].chars().count()
    }

    fn offset_at_column(&self, line_start: usize, column: usize) -> usize {
        let line = &self.text[line_start..];
        let line_len = line.find('\n').unwrap_or(line.len());
        line[..line_len]
            .char_indices()
            .nth(column)
            .map(|(i, _)| line_start + i)
            .unwrap_or(line_start + line_len)
    }

    fn prev_boundary(&self) -> Option<usize> {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_respect_characters() {
        let mut c = Composer::default();
        c.insert("héllo");
        c.backspace();
        c.left();
        c.left();
        c.insert("✓");
        assert_eq!(c.text(), "hé✓ll");
        c.delete();
        assert_eq!(c.text(), "hé✓l");
        c.line_home();
        c.delete();
        assert_eq!(c.text(), "é✓l");
    }

    #[test]
    fn lines_and_columns() {
        let mut c = Composer::default();
        c.insert("first line\nsecond\nthird line");
        assert!(c.on_last_line() && !c.on_first_line());
        assert!(c.up());
        assert_eq!(
            &c.text()[c.cursor()..],
            "\nthird line",
            "column clamped to the line's end"
        );
        assert!(c.up());
        assert_eq!(&c.text()[c.cursor()..], "line\nsecond\nthird line");
        assert!(!c.up(), "the first line has nothing above");
        assert!(c.down() && c.down() && !c.down());
        c.delete_to_line_start();
        assert_eq!(c.text(), "first line\nsecond\nline");
        c.delete_word();
        assert_eq!(
            c.text(),
            "first line\nsecondline",
            "at a line start it joins the lines"
        );
        c.line_end();
        c.delete_word();
        assert_eq!(c.text(), "first line\n");
    }

    #[test]
    fn a_completion_replaces_its_range_and_leaves_the_cursor_after_it() {
        let mut c = Composer::default();
        c.set("see @no and more");
        c.replace(5..7, "notes.txt ");
        assert_eq!(c.text(), "see @notes.txt  and more");
        assert_eq!(&c.text()[c.cursor()..], " and more");
        c.set("é");
        c.replace(1..2, "x");
        assert_eq!(c.text(), "é", "a range inside a character changes nothing");
        c.replace(0..99, "/help");
        assert_eq!(c.text(), "/help");
    }

    #[test]
    fn pasted_line_ends_and_controls_are_cleaned() {
        let mut c = Composer::default();
        c.insert("a\r\nb\rc\x1b[31m");
        assert_eq!(c.text(), "a\nb\nc[31m");
    }

    #[test]
    fn layout_wraps_and_places_the_cursor() {
        let mut c = Composer::default();
        c.insert("abcdef\ngh");
        assert_eq!(
            c.layout(4),
            (vec!["abcd".into(), "ef".into(), "gh".into()], (2, 2))
        );
        c.set("abcd");
        assert_eq!(
            c.layout(4).1,
            (1, 0),
            "a full row puts the cursor on the next"
        );
        c.line_home();
        assert_eq!(c.layout(4).1, (0, 0));
    }
}
