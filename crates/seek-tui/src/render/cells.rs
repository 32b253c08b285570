//! One transcript item as terminal rows: prompts, reasoning panels (folded to a line, or the
//! text dimmed), answers (markdown), execution panes (header, live tail, or code and full
//! output; a block that never ran folds to its header, which says why), errors, notices, the
//! model's questions and the rules between rounds (the planner's and router's items are drawn
//! by `plan`, the web agent's by `web`).
//!
//! Owns how each item looks at a given width and time. It must not decide what is visible or
//! scroll; column 0 of every item's first row is left blank for the focus marker.

use std::time::{Duration, Instant};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::highlight;
use super::markdown;
use super::text::{sanitize, wrap};
use crate::agent::{BlockRecord, NotRun};
use crate::transcript::{Abandoned, Item, Pane, PaneState, Reasoning, ReplyCut};

/// Output lines a running pane shows (its live tail).
pub(crate) const RUNNING_TAIL: usize = 8;
/// Output lines a folded finished pane shows under its header.
pub(crate) const FOLDED_TAIL: usize = 3;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// The spinner frame for a moment: it turns ten times a second.
pub(crate) fn spinner(elapsed: Duration) -> &'static str {
    SPINNER[(elapsed.as_millis() / 100 % SPINNER.len() as u128) as usize]
}

/// `0.04 s`, `12.4 s`, `2 min 05 s`.
pub(crate) fn format_duration(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 1.0 {
        format!("{secs:.2} s")
    } else if secs < 60.0 {
        format!("{secs:.1} s")
    } else {
        let whole = duration.as_secs();
        format!("{} min {:02} s", whole / 60, whole % 60)
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Renders `item` (the `index`th) at `width` columns as of `now`. `live` says the item is still
/// streaming (its markdown is not highlighted until it completes).
pub fn render(
    item: &Item,
    index: usize,
    width: usize,
    now: Instant,
    live: bool,
) -> Vec<Line<'static>> {
    let width = width.max(8);
    match item {
        Item::User(prompt) => user(prompt, index, width),
        Item::Reasoning(r) => reasoning(r, width, now),
        Item::Answer(text) => markdown::render(text, width, " ", !live),
        Item::Pane(pane) => self::pane(pane, width, now),
        Item::Error(message) => labelled(" ! ", message, width, Style::new().fg(Color::Red)),
        Item::Notice(message) => labelled(" · ", message, width, Style::new().fg(Color::Yellow)),
        Item::Question(question) => labelled(
            " ? ",
            question,
            width,
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        ),
        Item::Rule(name) => vec![rule(name, width)],
        Item::Routed(route) => super::plan::routed(route, width),
        Item::Plan(plan) => super::plan::plan(plan, width),
        Item::Step(header) => super::plan::step_header(header, width),
        Item::Web(pane) => super::web::web(pane, width),
    }
}

/// `── attempt 2/5 · the python block failed ───…` across the width, dim.
fn rule(name: &str, width: usize) -> Line<'static> {
    let name: String = sanitize(name).replace('\n', " ");
    let room = width.saturating_sub(6);
    let name = if super::text::width(&name) > room {
        let mut cut = String::new();
        for c in name.chars() {
            if super::text::width(&cut) + 2 > room {
                break;
            }
            cut.push(c);
        }
        format!("{cut}…")
    } else {
        name
    };
    let used = 4 + super::text::width(&name);
    Line::from(vec![
        Span::styled(" ── ", dim()),
        Span::styled(name, dim().add_modifier(Modifier::ITALIC)),
        Span::styled(
            format!(" {}", "─".repeat(width.saturating_sub(used + 1))),
            dim(),
        ),
    ])
}

fn user(prompt: &str, index: usize, width: usize) -> Vec<Line<'static>> {
    let mut rows = Vec::new();
    if index > 0 {
        rows.push(Line::default());
    }
    let label = vec![Span::styled(
        " you  ",
        Style::new().add_modifier(Modifier::BOLD).fg(Color::Cyan),
    )];
    let rest = vec![Span::raw("      ")];
    let bold = Style::new().add_modifier(Modifier::BOLD);
    for (n, line) in sanitize(prompt).lines().enumerate() {
        let first = if n == 0 { &label } else { &rest };
        rows.extend(wrap(
            &[Span::styled(line.to_owned(), bold)],
            width,
            first,
            &rest,
        ));
    }
    if rows.iter().all(|r| r.width() == 0) {
        rows.push(Line::from(label));
    }
    rows.push(Line::default());
    rows
}

fn labelled(label: &str, message: &str, width: usize, style: Style) -> Vec<Line<'static>> {
    let first = vec![Span::styled(label.to_owned(), style)];
    let rest = vec![Span::raw(" ".repeat(label.chars().count()))];
    let mut rows = Vec::new();
    for (n, line) in sanitize(message).lines().enumerate() {
        let head = if n == 0 { &first } else { &rest };
        rows.extend(wrap(
            &[Span::styled(line.to_owned(), style)],
            width,
            head,
            &rest,
        ));
    }
    if rows.is_empty() {
        rows.push(Line::from(first));
    }
    rows
}

fn fold_marker(expanded: bool) -> &'static str {
    if expanded { " ▾ " } else { " ▸ " }
}

fn reasoning(r: &Reasoning, width: usize, now: Instant) -> Vec<Line<'static>> {
    let elapsed = r.until.unwrap_or(now).saturating_duration_since(r.since);
    let words = r.text.split_whitespace().count();
    let title = if r.live { "Thinking…" } else { "Thinking" };
    let header = format!(
        "{title} · {} s · {}",
        elapsed.as_secs(),
        plural(words, "word", "words")
    );
    let mut rows = vec![Line::from(vec![
        Span::styled(fold_marker(r.expanded), dim()),
        Span::styled(header, dim().add_modifier(Modifier::ITALIC)),
    ])];
    if r.expanded {
        let indent = vec![Span::raw("   ")];
        for line in sanitize(r.text.trim()).lines() {
            rows.extend(wrap(
                &[Span::styled(line.to_owned(), dim())],
                width,
                &indent,
                &indent,
            ));
        }
    }
    rows
}

/// What an abandoned pane's header says.
fn abandoned_words(why: Abandoned, cut: Option<ReplyCut>) -> &'static str {
    match (why, cut) {
        (_, Some(cut)) => cut.pane_words(),
        (Abandoned::ReplyCut, None) => "reply cut",
        (Abandoned::Stopped, None) => "not run: the task was stopped",
        (Abandoned::Ended, None) => "not run",
    }
}

/// The header's words after the tool name, and the colour of its mark. `cut` says how the
/// block's reply was cut, if it was.
fn outcome(record: &BlockRecord, cut: Option<ReplyCut>) -> (&'static str, Style, String) {
    let red = Style::new().fg(Color::Red);
    let duration = format_duration(Duration::from_secs_f64(
        record.duration_ms.max(0.0) / 1000.0,
    ));
    match record.not_run {
        Some(NotRun::ShownOnly) => return ("·", dim(), "shown, not run (approval = never)".into()),
        Some(NotRun::Declined) => return ("✗", red, "declined by you".into()),
        Some(NotRun::Stopped) => return ("·", dim(), "not run: the task was stopped".into()),
        Some(NotRun::Interrupted) => {
            return ("✗", red, "interrupted: seek stopped while it ran".into());
        }
        Some(NotRun::Interactive) => return ("✗", red, "refused: interactive input".into()),
        Some(NotRun::SafeMode) => return ("✗", red, "refused by safe mode".into()),
        Some(NotRun::Repeated) => {
            return (
                "✗",
                red,
                "not run again: the same code failed before".into(),
            );
        }
        Some(NotRun::ReplyCut) => {
            let words = cut.map_or("reply cut", ReplyCut::pane_words);
            return ("·", dim(), words.into());
        }
        Some(NotRun::EarlierFailure) => {
            return ("·", dim(), "not run: an earlier block failed".into());
        }
        // Older session files say only `skipped`.
        None if record.skipped => {
            return ("·", dim(), "not run: an earlier block failed".into());
        }
        None => {}
    }
    if record.stopped {
        return ("✗", red, format!("stopped by you · {duration}"));
    }
    if record.timed_out {
        return ("✗", red, format!("timed out after {duration}"));
    }
    let exit = match record.exit_code {
        Some(code) => format!("exit {code}"),
        None => "killed by a signal".into(),
    };
    let mark = if record.success {
        ("✓", Style::new().fg(Color::Green))
    } else {
        ("✗", red)
    };
    (mark.0, mark.1, format!("{exit} · {duration}"))
}

fn pane(pane: &Pane, width: usize, now: Instant) -> Vec<Line<'static>> {
    let tool = if pane.tool.is_empty() {
        "block"
    } else {
        &pane.tool
    };
    let output = sanitize(&pane.output);
    let output_lines: Vec<&str> = output.lines().collect();
    let mut header = vec![Span::styled(fold_marker(pane.expanded), dim())];
    let tail = match &pane.state {
        PaneState::Pending => {
            header.push(Span::styled(format!("· {tool} · waiting"), dim()));
            0
        }
        PaneState::AwaitingApproval => {
            let ask = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
            header.push(Span::styled(format!("? run this {tool} block?"), ask));
            header.push(Span::raw("  y run · n decline · a always · e edit"));
            0
        }
        PaneState::Running { since } => {
            let elapsed = now.saturating_duration_since(*since);
            header.push(Span::styled(
                spinner(elapsed),
                Style::new().fg(Color::Yellow),
            ));
            header.push(Span::raw(format!(" {tool} · {}", format_duration(elapsed))));
            RUNNING_TAIL
        }
        PaneState::Abandoned(why) => {
            header.push(Span::styled(
                format!("· {tool} · {}", abandoned_words(*why, pane.cut)),
                dim(),
            ));
            0
        }
        PaneState::Finished(record) => {
            let (mark, style, words) = outcome(record, pane.cut);
            header.push(Span::styled(mark, style));
            let mut text = format!(" {tool} · {words}");
            if !output_lines.is_empty() {
                text.push_str(&format!(
                    " · {}",
                    plural(output_lines.len(), "line", "lines")
                ));
            }
            if let (Some(path), true) = (&record.save_path, record.success) {
                text.push_str(&format!(" · saved {path}"));
            }
            header.push(Span::raw(text));
            // A block that never ran folds to its header: its output is only why.
            if pane.did_not_run() { 0 } else { FOLDED_TAIL }
        }
    };
    let mut rows = wrap(&header, width, &[], &[Span::raw("   ")]);
    let gutter = vec![Span::styled("   │ ", dim())];
    if pane.expanded {
        for spans in highlight(pane.code.trim_end_matches('\n'), &pane.tool) {
            rows.extend(wrap(&spans, width, &gutter, &gutter));
        }
        if let Some(path) = &pane.save_path {
            rows.push(Line::from(vec![
                gutter[0].clone(),
                Span::styled(format!("→ {path}"), dim()),
            ]));
        }
        if !matches!(
            pane.state,
            PaneState::Pending | PaneState::AwaitingApproval | PaneState::Abandoned(_)
        ) {
            rows.push(Line::from(vec![
                gutter[0].clone(),
                Span::styled("─────", dim()),
            ]));
            if output_lines.is_empty() && matches!(pane.state, PaneState::Finished(_)) {
                rows.push(Line::from(vec![
                    gutter[0].clone(),
                    Span::styled("(no output)", dim()),
                ]));
            }
        }
    }
    let shown = if pane.expanded {
        &output_lines[..]
    } else {
        &output_lines[output_lines.len().saturating_sub(tail)..]
    };
    for line in shown {
        rows.extend(wrap(
            &[Span::raw((*line).to_owned())],
            width,
            &gutter,
            &gutter,
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_of(not_run: Option<NotRun>, skipped: bool) -> String {
        let record = BlockRecord {
            round: 1,
            index: 0,
            tool_type: "bash".into(),
            block: "ls".into(),
            save_path: None,
            feedback: String::new(),
            success: false,
            exit_code: None,
            timed_out: false,
            stopped: false,
            skipped,
            duration_ms: 0.0,
            output: String::new(),
            not_run,
        };
        outcome(&record, None).2
    }

    #[test]
    fn blocks_that_did_not_run_say_why() {
        assert_eq!(
            header_of(Some(NotRun::ShownOnly), true),
            "shown, not run (approval = never)"
        );
        assert_eq!(header_of(Some(NotRun::Declined), false), "declined by you");
        assert_eq!(
            header_of(Some(NotRun::Stopped), true),
            "not run: the task was stopped"
        );
        assert_eq!(header_of(None, true), "not run: an earlier block failed");
        assert_eq!(
            header_of(Some(NotRun::Interactive), false),
            "refused: interactive input"
        );
        assert_eq!(
            header_of(Some(NotRun::SafeMode), false),
            "refused by safe mode"
        );
        assert_eq!(header_of(Some(NotRun::ReplyCut), true), "reply cut");
        assert_eq!(
            header_of(Some(NotRun::Repeated), false),
            "not run again: the same code failed before"
        );
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(Duration::from_millis(40)), "0.04 s");
        assert_eq!(format_duration(Duration::from_millis(12_400)), "12.4 s");
        assert_eq!(format_duration(Duration::from_secs(125)), "2 min 05 s");
    }
}
