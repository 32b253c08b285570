//! What the input side draws over the screen: the completion popup above the input box, the
//! `/model` and `/resume` pickers, `/help` and `/mcp` over the transcript, and the queued prompts on
//! the row under the input box.
//!
//! The one hook the screen calls after drawing its parts; each look lives in its own module
//! (`popup`, `picker`, `help`, `mcp_view`). It must not change anything but the overlays' scroll state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use crate::app::{App, Overlay};
use crate::picker::fit;
use crate::popup;
use crate::render::text::width;

/// The screen's parts the overlays cover.
#[derive(Debug, Clone, Copy)]
pub struct Areas {
    /// The transcript's window.
    pub transcript: Rect,
    /// The row under the input box.
    pub below_input: Rect,
}

/// Draws whatever is open.
pub fn draw(app: &mut App, areas: Areas, buf: &mut Buffer) {
    draw_queue(app, areas.below_input, buf);
    match app.overlay.take() {
        Some(Overlay::Help(mut view)) => {
            view.draw(areas.transcript, buf);
            app.overlay = Some(Overlay::Help(view));
        }
        Some(Overlay::Mcp(mut view)) => {
            view.draw(&app.mcp, areas.transcript, buf);
            app.overlay = Some(Overlay::Mcp(view));
        }
        Some(Overlay::Picker(mut picker)) => {
            let (rows, state) = app.picker_rows(&picker);
            picker.draw(&rows, state, areas.transcript, buf);
            app.overlay = Some(Overlay::Picker(picker));
        }
        None => {
            if let Some(spot) = app.popup_spot() {
                let (candidates, state) = app.popup_candidates(&spot);
                popup::draw(&app.popup, &candidates, state, areas.transcript, buf);
            }
        }
    }
}

/// `─ queued: fix the tests ─ queued: then push ──…` on the rule under the input box.
fn draw_queue(app: &App, area: Rect, buf: &mut Buffer) {
    if app.queue.is_empty() || area.height == 0 {
        return;
    }
    let columns = usize::from(area.width);
    let each = (columns.saturating_sub(4) / app.queue.len()).clamp(12, 40);
    let mut spans = vec![Span::styled("─ ", Style::new().fg(Color::DarkGray))];
    let mut used = 2;
    for (i, prompt) in app.queue.iter().enumerate() {
        let text = format!("queued: {} ", fit(prompt, each.saturating_sub(9)));
        used += width(&text) + 2;
        if used > columns {
            break;
        }
        if i > 0 {
            spans.push(Span::styled("─ ", Style::new().fg(Color::DarkGray)));
        }
        spans.push(Span::styled(text, Style::new().fg(Color::Yellow)));
    }
    crate::render::clip::line(buf, area, 0, &Line::from(spans));
}

#[cfg(test)]
#[path = "overlay_tests.rs"]
mod tests;
