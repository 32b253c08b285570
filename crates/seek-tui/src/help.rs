//! `/help` as a scrollable overlay over the transcript, so the whole reference can be read at
//! 80x24 (a notice taller than the window was cut off at its top).
//!
//! Owns the overlay's scroll and look; the text itself is `slash::help_text` (the keys, the
//! commands and the registry's agents by name). It must not act on commands.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::picker::clear;
use crate::render::clip;
use crate::slash::help_text;

/// The open help overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HelpView {
    /// The first line shown.
    pub top: usize,
    /// Lines the last draw showed: how far PageUp/PageDown move.
    pub page: usize,
}

/// A scrollable overlay's keys (help, `/mcp`): arrows and pages move `top` (`page` rows a
/// page), Esc/q/Enter close, other keys pass on to the input box.
pub(crate) fn scroll_key(top: &mut usize, page: usize, code: crossterm::event::KeyCode) -> Outcome {
    use crossterm::event::KeyCode;
    let page = page.max(1);
    match code {
        KeyCode::Up => *top = top.saturating_sub(1),
        KeyCode::Down => *top += 1,
        KeyCode::PageUp => *top = top.saturating_sub(page),
        KeyCode::PageDown | KeyCode::Char(' ') => *top += page,
        KeyCode::Home => *top = 0,
        KeyCode::End => *top = usize::MAX,
        KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => return Outcome::Close,
        _ => return Outcome::Pass,
    }
    Outcome::Stay
}

/// A scrollable overlay's first row — `title`, the lines shown of `total`, the keys — drawn over
/// `area` (at least 2 rows high) once `top` is clamped and `page` set to what fits below it.
/// Returns the end of the lines shown (`top..end`).
pub(crate) fn scrolled_header(
    title: &str,
    top: &mut usize,
    page: &mut usize,
    total: usize,
    area: Rect,
    buf: &mut Buffer,
) -> usize {
    let height = usize::from(area.height).saturating_sub(1);
    *page = height.saturating_sub(1).max(1);
    *top = (*top).min(total.saturating_sub(height));
    let last = (*top + height).min(total);
    let more = if last < total { "PageDown more" } else { "end" };
    let heading = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    clip::line(
        buf,
        area,
        0,
        &Line::from(vec![
            Span::styled(title.to_owned(), heading),
            Span::styled(
                format!(
                    " · lines {}-{last} of {total} · ↑↓ PageUp PageDown · {more} · Esc closes",
                    (*top + 1).min(last)
                ),
                Style::new().fg(Color::DarkGray),
            ),
        ]),
    );
    last
}

/// What a key did to the overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The key scrolled (or was ignored): the overlay stays.
    Stay,
    /// Esc, q or Enter: the overlay closes, the key is spent.
    Close,
    /// Another key: the overlay closes and the key goes on to the input box.
    Pass,
}

impl HelpView {
    pub fn key(&mut self, code: crossterm::event::KeyCode) -> Outcome {
        scroll_key(&mut self.top, self.page, code)
    }

    /// Draws the help over `area`; the scroll is clamped to the text here, where the height is
    /// known.
    pub fn draw(&mut self, area: Rect, buf: &mut Buffer) {
        let area = clip::inside(area, buf);
        if area.height < 2 {
            return;
        }
        clear(area, buf);
        let help = help_text();
        let lines: Vec<&str> = help.lines().collect();
        let heading = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        let last = scrolled_header(
            " help",
            &mut self.top,
            &mut self.page,
            lines.len(),
            area,
            buf,
        );
        for (i, line) in lines[self.top..last].iter().enumerate() {
            let style = if line.starts_with(' ') {
                Style::new()
            } else {
                heading
            };
            clip::line(
                buf,
                area,
                1 + i,
                &Line::from(Span::styled(format!(" {line}"), style)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyCode;

    #[test]
    fn scrolling_stops_at_the_end_and_other_keys_pass() {
        let mut view = HelpView::default();
        let area = Rect::new(0, 0, 80, 18);
        let mut buf = Buffer::empty(area);
        view.draw(area, &mut buf);
        for _ in 0..20 {
            assert_eq!(view.key(KeyCode::PageDown), Outcome::Stay);
        }
        view.draw(area, &mut buf);
        assert_eq!(view.top, help_text().lines().count() - 17);
        let shown: String = (0..18)
            .map(|y| {
                (0..80)
                    .map(|x| buf[(x, y)].symbol().to_owned())
                    .collect::<String>()
            })
            .collect();
        assert!(shown.contains("planner, web"), "the agents end it: {shown}");
        assert_eq!(view.key(KeyCode::Char('x')), Outcome::Pass);
        assert_eq!(view.key(KeyCode::Esc), Outcome::Close);
    }
}
