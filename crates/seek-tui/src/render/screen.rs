//! The whole screen: header, transcript window, input box, status line, and the plain copy of
//! the transcript printed on exit.
//!
//! Owns the layout of the parts; each part's look lives in its own module. It must not change
//! anything but the viewport's scroll state and cache.

use std::time::Instant;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::cells;
use super::clip;
use super::text::{plain, width};
use crate::app::App;
use crate::status::Tone;

/// Rows the input box may grow to before it scrolls.
const MAX_INPUT_ROWS: usize = 8;
const PROMPT: &str = " › ";
/// Columns `PROMPT` takes.
const PROMPT_WIDTH: usize = 3;

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// Draws the app. `color: false` (NO_COLOR) keeps bold and the like but drops colours.
pub fn draw(frame: &mut Frame<'_>, app: &mut App, now: Instant, color: bool) {
    let cursor = draw_into(frame.buffer_mut(), app, now, color);
    if let Some(position) = cursor {
        frame.set_cursor_position(position);
    }
}

/// Draws the app into `buf` (the whole screen) and says where the cursor goes, if it shows.
/// Every part is clipped to the buffer: no size, 1×1 included, draws outside it.
pub(crate) fn draw_into(
    buf: &mut Buffer,
    app: &mut App,
    now: Instant,
    color: bool,
) -> Option<Position> {
    let area = buf.area;
    let input_width = usize::from(area.width)
        .saturating_sub(PROMPT_WIDTH + 1)
        .max(1);
    let (input_rows, cursor) = app.composer.layout(input_width);
    let input_height = input_rows.len().clamp(1, MAX_INPUT_ROWS) as u16;
    let [header, rule1, transcript, rule2, input, rule3, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
        Constraint::Length(input_height),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(app, header, buf);
    for r in [rule1, rule2, rule3] {
        draw_rule(r, buf);
    }
    let focus = app.focus;
    app.viewport
        .draw(&app.transcript, transcript, buf, now, focus);
    let cursor_at = draw_input(app, input, buf, &input_rows, cursor);
    draw_status(app, status, buf, now);
    // The input side's popup, pickers, help and queue (tui/overlay.rs).
    let below_input = rule3;
    crate::overlay::draw(
        app,
        crate::overlay::Areas {
            transcript,
            below_input,
        },
        buf,
    );
    if !color {
        strip_colours(buf);
    }
    cursor_at.filter(|_| app.focus.is_none() && app.overlay.is_none())
}

fn draw_rule(area: Rect, buf: &mut Buffer) {
    clip::string(buf, area, 0, 0, &"─".repeat(usize::from(area.width)), dim());
}

/// `left` at the start of the row and `right` at its end, `right` dropped when they collide.
fn split_row(area: Rect, buf: &mut Buffer, left: &Line<'_>, right: &Line<'_>) {
    clip::line(buf, area, 0, left);
    let (lw, rw) = (left.width(), right.width());
    let columns = usize::from(area.width);
    if lw + rw + 2 <= columns {
        clip::line_at(buf, area, columns - rw, 0, right);
    }
}

fn draw_header(app: &App, area: Rect, buf: &mut Buffer) {
    let parts = super::header::HeaderParts {
        agent: app.agent,
        model: &app.model,
        sandbox: app.sandbox,
        approval: app.approval,
        work_dir: &app.work_dir,
    };
    let (left, right) = super::header::header(&parts, usize::from(area.width));
    split_row(area, buf, &left, &right);
}

fn draw_input(
    app: &App,
    area: Rect,
    buf: &mut Buffer,
    rows: &[String],
    cursor: (usize, usize),
) -> Option<Position> {
    if area.height == 0 {
        return None;
    }
    let height = usize::from(area.height);
    // Rows around the cursor when the prompt is taller than the box.
    let first = cursor.0.saturating_sub(height - 1);
    let prompt_style = if app.focus.is_some() {
        dim()
    } else {
        Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
    };
    if app.composer.is_empty() {
        let placeholder = if app.running() {
            "type ahead; Esc stops the task"
        } else {
            "ask seek to do something · /help"
        };
        clip::line(
            buf,
            area,
            0,
            &Line::from(vec![
                Span::styled(PROMPT, prompt_style),
                Span::styled(placeholder, dim().add_modifier(Modifier::ITALIC)),
            ]),
        );
    } else {
        for (i, row) in rows.iter().skip(first).take(height).enumerate() {
            let lead = if first + i == 0 { PROMPT } else { "   " };
            clip::line(
                buf,
                area,
                i,
                &Line::from(vec![
                    Span::styled(lead, prompt_style),
                    Span::raw(row.as_str()),
                ]),
            );
        }
    }
    let column = PROMPT_WIDTH + cursor.1;
    let row = cursor.0 - first;
    (column < usize::from(area.width) && row < height).then(|| Position {
        x: area.x + column as u16,
        y: area.y + row as u16,
    })
}

fn draw_status(app: &App, area: Rect, buf: &mut Buffer, now: Instant) {
    let (text, tone) = app.status.describe(now);
    let style = match tone {
        Tone::Quiet => dim(),
        Tone::Busy => Style::new().fg(Color::Yellow),
        Tone::Good => Style::new().fg(Color::Green),
        Tone::Warn => Style::new().fg(Color::Yellow),
        Tone::Bad => Style::new().fg(Color::Red),
    };
    let mut spans = vec![Span::styled(format!(" {text}"), style)];
    // A policy other than auto matters for every block: keep it in sight.
    if let Some(approval) = app.approval.filter(|a| *a != crate::config::Approval::Auto) {
        spans.push(Span::styled(
            format!(" · approval {approval}"),
            Style::new().fg(Color::Yellow),
        ));
    }
    if app.awaiting.is_some() {
        spans.push(Span::styled(
            " · waiting for you",
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    let left = Line::from(spans);
    let right = if let Some(hint) = app.hint(now) {
        Span::styled(
            format!("{hint} "),
            Style::new().add_modifier(Modifier::BOLD),
        )
    } else {
        let room = usize::from(area.width).saturating_sub(width(&plain(&left)) + 2);
        Span::styled(fitting(key_hints(app), room), dim())
    };
    split_row(area, buf, &left, &Line::from(right));
}

/// The keys that matter now, the most useful first.
fn key_hints(app: &App) -> &'static [&'static str] {
    if app.awaiting.is_some() {
        &["y run", "n decline", "a always", "e edit", "Esc stop"]
    } else if app.focus.is_some() {
        &["Enter fold", "Tab older", "Shift+Tab newer", "Esc back"]
    } else if app.running() {
        &["Esc stop", "Tab fold", "Ctrl+T thoughts", "Ctrl+O panes"]
    } else if !app.viewport.following() {
        &["scrolled up", "End follows"]
    } else {
        &[
            "Enter send",
            "Esc stop",
            "Ctrl+R retry",
            "Tab fold",
            "Ctrl+T thoughts",
            "/help",
        ]
    }
}

/// As many of `hints` as fit in `room` columns (at least the first), joined, with a space after.
fn fitting(hints: &[&str], room: usize) -> String {
    let mut shown = String::new();
    for hint in hints {
        let longer = if shown.is_empty() {
            (*hint).to_owned()
        } else {
            format!("{shown} · {hint}")
        };
        if !shown.is_empty() && width(&longer) + 1 > room {
            break;
        }
        shown = longer;
    }
    shown.push(' ');
    shown
}

fn strip_colours(buf: &mut Buffer) {
    for cell in buf.content.iter_mut() {
        cell.set_fg(Color::Reset);
        cell.set_bg(Color::Reset);
    }
}

/// The transcript as plain text at `columns`, as it looks on screen (folds included), for the
/// normal screen after the UI closes.
pub(crate) fn plain_transcript(app: &App, columns: u16, now: Instant) -> String {
    let mut out = String::new();
    let items = app
        .transcript
        .cleared()
        .iter()
        .chain(app.transcript.items());
    for (index, item) in items.enumerate() {
        for line in cells::render(item, index, usize::from(columns), now, false) {
            out.push_str(plain(&line).trim_end());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_hints_are_dropped_from_the_end_until_they_fit() {
        let hints = ["Enter send", "Esc stop", "/help"];
        assert_eq!(fitting(&hints, 80), "Enter send · Esc stop · /help ");
        // "Enter send · Esc stop " is 22 columns.
        assert_eq!(fitting(&hints, 22), "Enter send · Esc stop ");
        assert_eq!(fitting(&hints, 21), "Enter send ");
        assert_eq!(fitting(&hints, 0), "Enter send ", "the first stays");
    }
}
