//! How the planner's and the router's items look: the plan pane (a checklist, one line per step,
//! or one line for the whole plan when folded), the header of a step's section, and the dim
//! `→ coder (asks to write or run code)` line of a routed task.
//!
//! Owns their look at a given width; it must not decide what the plan is. Every text here is
//! the model's (tasks, notes, reasons): it goes through `terminal_safe` and is kept to one line
//! per row, cut with `…` to the width. Column 0 of the first row stays blank for the focus
//! marker.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use crate::agents::planner::MAX_REPLANS;
use crate::plan_pane::{PlanPane, StepHeader};
use crate::terminal_safe::terminal_safe;
use crate::wire::{PlanStep, Route, StepStatus};

/// Steps listed at most: a damaged session file cannot make the pane endless.
pub(crate) const MOST_STEPS: usize = 40;
/// Notes listed at most.
const MOST_NOTES: usize = 8;

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// `text` made safe and flattened to one line (newlines and tabs become spaces).
pub fn one_line(text: &str) -> String {
    let safe = terminal_safe(text);
    safe.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to `room` columns, ending in `…` when it was cut.
pub fn ellipsis(text: &str, room: usize) -> String {
    if super::text::width(text) <= room {
        return text.to_owned();
    }
    let mut cut = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > room {
            break;
        }
        cut.push(c);
        used += w;
    }
    if room > 0 {
        cut.push('…');
    }
    cut
}

/// A step's mark and its colour.
pub fn mark(status: StepStatus) -> (&'static str, Style) {
    match status {
        StepStatus::Pending => ("·", dim()),
        StepStatus::Running => ("▸", Style::new().fg(Color::Yellow)),
        StepStatus::Done => ("✓", Style::new().fg(Color::Green)),
        StepStatus::Failed => ("✗", Style::new().fg(Color::Red)),
        StepStatus::Skipped => ("-", dim()),
    }
}

/// The plan pane at `width` columns.
pub fn plan(pane: &PlanPane, width: usize) -> Vec<Line<'static>> {
    let fold = if pane.expanded { " ▾ " } else { " ▸ " };
    let (done, total) = pane.progress();
    let mut summary = format!("plan · {done}/{total} done");
    if let Some(step) = pane.running() {
        summary.push_str(&format!(" · step {} running", one_line(&step.id)));
    }
    if pane.steps.iter().any(|s| s.status == StepStatus::Failed) {
        summary.push_str(" · a step failed");
    }
    let room = width.saturating_sub(3);
    let mut rows = vec![Line::from(vec![
        Span::styled(fold, dim()),
        Span::styled(
            ellipsis(&summary, room),
            Style::new().add_modifier(Modifier::BOLD),
        ),
    ])];
    if !pane.expanded {
        return rows;
    }
    let id_width = pane
        .steps
        .iter()
        .take(MOST_STEPS)
        .map(|s| super::text::width(&one_line(&s.id)).min(4))
        .max()
        .unwrap_or(1);
    for step in pane.steps.iter().take(MOST_STEPS) {
        rows.push(step_row(step, id_width, width));
    }
    if pane.steps.len() > MOST_STEPS {
        rows.push(dim_row(
            &format!("… {} more steps", pane.steps.len() - MOST_STEPS),
            width,
        ));
    }
    if let Some((replans, reason)) = &pane.replanned {
        let text = format!("replanned ({replans}/{MAX_REPLANS}): {}", one_line(reason));
        rows.push(Line::from(vec![
            Span::raw("   "),
            Span::styled(
                ellipsis(&text, width.saturating_sub(3)),
                Style::new().fg(Color::Yellow),
            ),
        ]));
    }
    for note in pane.notes.iter().take(MOST_NOTES) {
        rows.push(dim_row(&one_line(note), width));
    }
    rows
}

/// `   ✓ 2  coder    write the script…`
fn step_row(step: &PlanStep, id_width: usize, width: usize) -> Line<'static> {
    let (mark, style) = mark(step.status);
    let id = ellipsis(&one_line(&step.id), 4);
    let id = format!("{id:<id_width$}");
    let agent = format!("{:<7}", step.agent.as_str());
    let used = 3 + 2 + id_width + 2 + 7 + 2;
    let task = ellipsis(&one_line(&step.task), width.saturating_sub(used));
    let task_style = match step.status {
        StepStatus::Skipped => dim(),
        StepStatus::Running => Style::new().add_modifier(Modifier::BOLD),
        _ => Style::new(),
    };
    Line::from(vec![
        Span::raw("   "),
        Span::styled(mark, style),
        Span::raw(" "),
        Span::styled(id, dim()),
        Span::raw("  "),
        Span::styled(agent, Style::new().fg(Color::Cyan)),
        Span::raw("  "),
        Span::styled(task, task_style),
    ])
}

fn dim_row(text: &str, width: usize) -> Line<'static> {
    Line::from(vec![
        Span::raw("   "),
        Span::styled(ellipsis(text, width.saturating_sub(3)), dim()),
    ])
}

/// `── ✓ step 2 · coder: write the script ──…` across the width: where a step's section
/// begins.
pub(crate) fn step_header(header: &StepHeader, width: usize) -> Vec<Line<'static>> {
    let (mark, style) = mark(header.status);
    let agent = header.agent.map_or("agent", |a| a.as_str());
    let mut text = format!("step {} · {agent}", one_line(&header.id));
    let task = one_line(&header.task);
    if !task.is_empty() {
        text.push_str(&format!(": {task}"));
    }
    // ` ── ✓ ` before it and at least ` ──` after it.
    let text = ellipsis(&text, width.saturating_sub(9));
    let used = 6 + super::text::width(&text);
    vec![
        Line::default(),
        Line::from(vec![
            Span::styled(" ── ", dim()),
            Span::styled(mark, style),
            Span::raw(" "),
            Span::styled(text, Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(
                format!(" {}", "─".repeat(width.saturating_sub(used + 1))),
                dim(),
            ),
        ]),
    ]
}

/// `→ coder (asks to write or run code)`, with the confidence only when the router was unsure
/// (`Route::summary`), cut to the width.
pub fn routed(route: &Route, width: usize) -> Vec<Line<'static>> {
    let text = format!("→ {}", one_line(&route.summary()));
    vec![Line::from(vec![
        Span::raw(" "),
        Span::styled(ellipsis(&text, width.saturating_sub(1)), dim()),
    ])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::AgentName;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(super::super::text::plain).collect()
    }

    #[test]
    fn cutting_keeps_to_the_width_even_with_wide_characters() {
        assert_eq!(ellipsis("short", 10), "short");
        assert_eq!(ellipsis("abcdefghij", 5), "abcd…");
        let wide = ellipsis("漢字漢字漢字", 5);
        assert!(super::super::text::width(&wide) <= 5, "{wide}");
        assert_eq!(ellipsis("abc", 0), "");
    }

    #[test]
    fn hostile_text_from_the_model_stays_on_one_line_and_inert() {
        let route = Route {
            agent: AgentName::Coder,
            confidence: f64::NAN,
            reason: "looks\nlike \x1b]52;c;ZWNobyBoaQ==\x07code\x1b[2J".into(),
            why: String::new(),
        };
        let rows = text(&routed(&route, 100));
        assert_eq!(rows, [" → coder (looks like code · 0.00)"]);
        let step = PlanStep {
            id: "1\x1b[31m".into(),
            agent: AgentName::File,
            task: "a\rb\tc\u{9b}2J".into(),
            need: Vec::new(),
            title: None,
            status: StepStatus::Pending,
        };
        let rows = text(&plan(&PlanPane::new(&[step], &["n\x1bo".into()]), 40));
        for row in &rows {
            assert!(!row.contains('\x1b') && !row.contains('\r'), "{row:?}");
            assert!(super::super::text::width(row) <= 40, "{row:?}");
        }
    }
}
