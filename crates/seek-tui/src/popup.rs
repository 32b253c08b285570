//! The completion popup above the input box: its selection and scroll, and how it looks.
//!
//! Owns the popup's state between keys (which row is highlighted, whether the user moved it,
//! whether Esc closed it for the text as it is, and the work dir's file names for `@`). What
//! it lists comes from `complete`; it must not read the disk or send anything itself.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use crate::complete::{Candidate, Target};
use crate::picker::{Row, row_line};
use crate::render::clip;
use crate::render::text::width;

/// Rows of candidates shown at most (the list scrolls within them): every slash command fits.
pub(crate) const ROWS: usize = 12;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Popup {
    pub selected: usize,
    /// Up/Down moved the highlight: Enter takes it (otherwise Enter sends what was typed).
    pub moved: bool,
    /// Esc closed the popup while the prompt read this; it stays closed until the text changes.
    pub dismissed: Option<String>,
    /// What the last key's prompt completed, to notice when a new completion begins.
    pub last: Option<Target>,
    /// The work dir's entries, listed when an `@` completion begins.
    pub files: Option<Vec<String>>,
}

impl Popup {
    /// Moves the highlight over `count` candidates, wrapping at the ends.
    pub fn step(&mut self, down: bool, count: usize) {
        if count == 0 {
            return;
        }
        self.moved = true;
        self.selected = if down {
            (self.selected + 1) % count
        } else {
            (self.selected + count - 1) % count
        };
    }
}

/// Draws the popup at the bottom of `area` (the transcript's window, just above the input box):
/// the candidates, or `state` ("loading…", an error) when there are none.
pub fn draw(
    popup: &Popup,
    candidates: &[Candidate],
    state: Option<String>,
    area: Rect,
    buf: &mut Buffer,
) {
    let area = clip::inside(area, buf);
    // The rule takes one row; the candidates get what is left of the window, up to `ROWS`.
    let shown = candidates
        .len()
        .min(ROWS)
        .min(usize::from(area.height).saturating_sub(1));
    let rows = if candidates.is_empty() { 1 } else { shown };
    let height = (rows + 1).min(usize::from(area.height)) as u16;
    if height < 2 || area.width < 10 {
        return;
    }
    let area = Rect::new(area.x, area.bottom() - height, area.width, height);
    clip::clear(buf, area);
    let dim = Style::new().fg(Color::DarkGray);
    let selected = popup.selected.min(candidates.len().saturating_sub(1));
    let top = (selected + 1).saturating_sub(shown);
    let count = if candidates.len() > shown {
        format!(" {}/{}", selected + 1, candidates.len())
    } else {
        String::new()
    };
    let rule = format!(
        "─ Tab complete · ↑↓ move · Esc close{count} {}",
        "─".repeat(usize::from(area.width))
    );
    clip::line(buf, area, 0, &Line::from(Span::styled(rule, dim)));
    if candidates.is_empty() {
        let text = state.unwrap_or_else(|| "no match".to_owned());
        clip::line(
            buf,
            area,
            1,
            &Line::from(Span::styled(format!("   {text}"), dim)),
        );
        return;
    }
    let columns = usize::from(area.width);
    let rows: Vec<Row> = candidates
        .iter()
        .map(|c| Row {
            value: c.insert.clone(),
            label: c.label.clone(),
            detail: c.detail.clone(),
            current: false,
        })
        .collect();
    let label_width = rows
        .iter()
        .map(|r| width(&crate::terminal_safe::terminal_safe(&r.label)))
        .max()
        .unwrap_or(0)
        .min(columns / 2);
    for (i, row) in rows.iter().enumerate().skip(top).take(shown) {
        let line = row_line(row, label_width, i == selected, columns);
        clip::line(buf, area, 1 + i - top, &line);
    }
}
