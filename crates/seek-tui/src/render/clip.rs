//! Drawing that cannot leave its area: every row and string is clipped to the intersection of
//! the area it belongs to and the buffer, so no terminal size (1×1 included) and no layout
//! arithmetic can write outside the buffer (ratatui panics with "index outside of buffer").
//!
//! Owns only the clipping; it must not decide what is drawn. Every drawing of the screen's parts
//! and overlays goes through these helpers instead of `Buffer::set_line`/`set_string`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;

/// `area` cut to the buffer (an empty rect when they do not meet).
pub fn inside(area: Rect, buf: &Buffer) -> Rect {
    area.intersection(buf.area)
}

/// Draws `line` on row `row` of `area` (0 is its first), cut at the area's right edge; nothing
/// when the row is outside the area or the buffer.
pub fn line(buf: &mut Buffer, area: Rect, row: usize, line: &Line<'_>) {
    line_at(buf, area, 0, row, line);
}

/// Draws `line` from column `column` of row `row` of `area`, cut at the area's right edge.
pub(crate) fn line_at(buf: &mut Buffer, area: Rect, column: usize, row: usize, line: &Line<'_>) {
    let Some((x, y, room)) = cell(buf, area, column, row) else {
        return;
    };
    buf.set_line(x, y, line, room);
}

/// Draws `text` from column `column` of row `row` of `area`, cut at the area's right edge.
pub fn string(buf: &mut Buffer, area: Rect, column: usize, row: usize, text: &str, style: Style) {
    let Some((x, y, room)) = cell(buf, area, column, row) else {
        return;
    };
    buf.set_stringn(x, y, text, usize::from(room), style);
}

/// Blanks `area` (what of it is in the buffer).
pub fn clear(buf: &mut Buffer, area: Rect) {
    let area = inside(area, buf);
    let blank = " ".repeat(usize::from(area.width));
    for row in 0..usize::from(area.height) {
        string(buf, area, 0, row, &blank, Style::new());
    }
}

/// The buffer position of `column`, `row` of `area` and the columns left to its right edge;
/// `None` when that cell is outside the area or the buffer.
fn cell(buf: &Buffer, area: Rect, column: usize, row: usize) -> Option<(u16, u16, u16)> {
    let area = inside(area, buf);
    let column = u16::try_from(column).ok()?;
    let row = u16::try_from(row).ok()?;
    if column >= area.width || row >= area.height {
        return None;
    }
    Some((area.x + column, area.y + row, area.width - column))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_columns_outside_the_area_or_the_buffer_are_skipped() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 10, 3));
        // An area reaching past the buffer's bottom and right.
        let area = Rect::new(5, 1, 20, 20);
        line(&mut buf, area, 0, &Line::from("abcdefgh"));
        line(&mut buf, area, 2, &Line::from("below the buffer"));
        line(&mut buf, area, usize::MAX, &Line::from("far below"));
        string(&mut buf, area, 9, 1, "right of it", Style::new());
        string(
            &mut buf,
            Rect::new(40, 40, 3, 3),
            0,
            0,
            "nowhere",
            Style::new(),
        );
        clear(&mut buf, Rect::new(8, 2, 50, 50));
        let rows: Vec<String> = (0..3)
            .map(|y| (0..10).map(|x| buf[(x, y)].symbol().to_owned()).collect())
            .collect();
        assert_eq!(rows, ["          ", "     abcde", "          "]);
    }
}
