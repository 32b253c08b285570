//! How the web agent's panes look: `search: <query>` with its results, `read: <url>` with the
//! text the model was given, `form: <url>` with the fields typed (secrets masked), each with a
//! one-line header that says how it went and the notes the agent took on it.
//!
//! Folded, a pane is its header and its notes (one line each): the notes are what the agent
//! took away, the reason the pane exists. Unfolded, the body follows in the execution panes'
//! gutter, and the notes in full. A failed step's pane starts unfolded (`WebPane::new`).
//!
//! Owns their look at a given width; it must not decide what is shown when. Every text here is
//! untrusted (pages, search backends, the model): it goes through `web_safe` (no escapes, no
//! control or bidi characters) before anything else. Column 0 of the first row stays blank for
//! the focus marker.

use std::time::Duration;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::cells::format_duration;
use super::plan::{ellipsis, one_line};
use super::text::{sanitize, wrap};
use crate::terminal_safe::web_safe;
use crate::web_pane::{PageRead, WebBody, WebPane, shown_field};
use crate::wire::{PageKind, WebField, WebHit};

/// Columns a query, URL or title takes in a header at most: the rest of the header (how it
/// went) must stay in sight.
const HEADER_TEXT: usize = 80;
/// Results listed at most (a damaged session file cannot make the pane endless).
const MOST_RESULTS: usize = 50;
/// Lines of a page's text shown at most, unfolded.
const MOST_LINES: usize = 1000;

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

fn red() -> Style {
    Style::new().fg(Color::Red)
}

fn note_style() -> Style {
    Style::new().fg(Color::Cyan)
}

fn gutter() -> Vec<Span<'static>> {
    vec![Span::styled("   │ ", dim())]
}

/// Untrusted text, safe and flattened to one line, cut to `room` columns.
fn short(text: &str, room: usize) -> String {
    ellipsis(&one_line(&web_safe(text)), room)
}

/// Untrusted text, safe, its lines kept (tabs become spaces).
fn lines_of(text: &str) -> Vec<String> {
    sanitize(&web_safe(text))
        .lines()
        .map(str::to_owned)
        .collect()
}

fn ms(elapsed_ms: u64) -> String {
    format_duration(Duration::from_millis(elapsed_ms))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The web pane at `width` columns.
pub fn web(pane: &WebPane, width: usize) -> Vec<Line<'static>> {
    let fold = if pane.expanded { " ▾ " } else { " ▸ " };
    let mut header = vec![Span::styled(fold, dim())];
    let mut body = Vec::new();
    match &pane.body {
        WebBody::Search {
            query,
            backend,
            results,
            error,
            elapsed_ms,
        } => {
            search(
                &mut header,
                (query, backend, *elapsed_ms),
                results,
                error.as_deref(),
            );
            if pane.expanded {
                body = search_body(results, error.as_deref(), width);
            }
        }
        WebBody::Page(page) => {
            page_header(&mut header, page);
            if pane.expanded {
                body = page_body(page, width);
            }
        }
        WebBody::Form { url, fields, error } => {
            let (mark, style) = if error.is_some() {
                ("✗", red())
            } else {
                ("✓", Style::new().fg(Color::Green))
            };
            header.push(Span::styled(mark, style));
            header.push(Span::raw(format!(
                " form: {} · {}",
                short(url, HEADER_TEXT),
                plural(fields.len(), "field", "fields")
            )));
            if pane.expanded {
                body = form_body(fields, error.as_deref(), width);
            }
        }
    }
    let mut rows = wrap(&header, width, &[], &[Span::raw("   ")]);
    rows.extend(body);
    rows.extend(notes(&pane.notes, pane.expanded, width));
    rows
}

/// `✓ search: <query> · searxng · 3 results · 0.31 s`
fn search(
    header: &mut Vec<Span<'static>>,
    (query, backend, elapsed_ms): (&str, &str, u64),
    results: &[WebHit],
    error: Option<&str>,
) {
    let (mark, style, how) = match error {
        Some(_) => ("✗", red(), "failed".to_owned()),
        None => (
            "✓",
            Style::new().fg(Color::Green),
            plural(results.len(), "result", "results"),
        ),
    };
    header.push(Span::styled(mark, style));
    header.push(Span::raw(format!(
        " search: {} · {} · {how} · {}",
        short(query, HEADER_TEXT),
        short(backend, 20),
        ms(elapsed_ms)
    )));
}

fn search_body(results: &[WebHit], error: Option<&str>, width: usize) -> Vec<Line<'static>> {
    let gutter = gutter();
    if let Some(error) = error {
        return failure(error, width);
    }
    if results.is_empty() {
        return vec![Line::from(vec![
            gutter[0].clone(),
            Span::styled("(no results)", dim()),
        ])];
    }
    let mut rows = Vec::new();
    let indent = vec![gutter[0].clone(), Span::raw("   ")];
    for (n, hit) in results.iter().take(MOST_RESULTS).enumerate() {
        let number = vec![gutter[0].clone(), Span::raw(format!("{:<3}", n + 1))];
        let title = one_line(&web_safe(&hit.title));
        let title = if title.is_empty() {
            "(no title)".to_owned()
        } else {
            title
        };
        let bold = Style::new().add_modifier(Modifier::BOLD);
        rows.extend(wrap(&[Span::styled(title, bold)], width, &number, &indent));
        let link = Style::new().fg(Color::Blue);
        rows.extend(wrap(
            &[Span::styled(one_line(&web_safe(&hit.link)), link)],
            width,
            &indent,
            &indent,
        ));
        let snippet = one_line(&web_safe(&hit.snippet));
        if !snippet.is_empty() {
            rows.extend(wrap(
                &[Span::styled(snippet, dim())],
                width,
                &indent,
                &indent,
            ));
        }
    }
    if results.len() > MOST_RESULTS {
        rows.push(Line::from(vec![
            gutter[0].clone(),
            Span::styled(
                format!("… {} more results", results.len() - MOST_RESULTS),
                dim(),
            ),
        ]));
    }
    rows
}

/// What kind of page it was, marked so that a CAPTCHA wall or an error page cannot be taken
/// for content: the mark, its colour, and the words.
fn kind_mark(page: &PageRead) -> (&'static str, Style, String) {
    let warn = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
    match page.kind {
        PageKind::Content => ("✓", Style::new().fg(Color::Green), "content".into()),
        PageKind::Captcha => ("⚠", warn, "CAPTCHA".into()),
        PageKind::Error => (
            "✗",
            warn,
            match page.status {
                Some(status) => format!("error page {status}"),
                None => "error page".into(),
            },
        ),
        PageKind::Empty => ("·", dim(), "empty".into()),
    }
}

/// `✓ read: <url> · <title> · chromium · content · 1234 chars · cut · 12 links · 1 form · 0.84 s`
fn page_header(header: &mut Vec<Span<'static>>, page: &PageRead) {
    let url = short(&page.url, HEADER_TEXT);
    let engine = short(&page.engine, 20);
    if page.error.is_some() {
        header.push(Span::styled("✗", red()));
        header.push(Span::raw(format!(
            " read: {url} · {engine} · failed · {}",
            ms(page.elapsed_ms)
        )));
        return;
    }
    let (mark, style, kind) = kind_mark(page);
    header.push(Span::styled(mark, style));
    let mut text = format!(" read: {url}");
    let title = short(&page.title, HEADER_TEXT / 2);
    if !title.is_empty() {
        text.push_str(&format!(" · “{title}”"));
    }
    text.push_str(&format!(" · {engine} · "));
    header.push(Span::raw(text));
    let marked = !matches!(page.kind, PageKind::Content | PageKind::Empty);
    header.push(if marked {
        Span::styled(kind, style)
    } else {
        Span::raw(kind)
    });
    let mut rest = format!(" · {}", plural(page.chars, "char", "chars"));
    if page.cut {
        rest.push_str(" · cut");
    }
    rest.push_str(&format!(
        " · {} · {} · {}",
        plural(page.links, "link", "links"),
        plural(page.forms, "form", "forms"),
        ms(page.elapsed_ms)
    ));
    header.push(Span::raw(rest));
}

fn page_body(page: &PageRead, width: usize) -> Vec<Line<'static>> {
    if let Some(error) = &page.error {
        return failure(error, width);
    }
    let gutter = gutter();
    let mut rows = Vec::new();
    if !page.final_url.is_empty() && page.final_url != page.url {
        rows.extend(wrap(
            &[Span::styled(
                format!("→ {}", one_line(&web_safe(&page.final_url))),
                dim(),
            )],
            width,
            &gutter,
            &gutter,
        ));
    }
    let lines = lines_of(&page.text);
    if lines.iter().all(|l| l.trim().is_empty()) {
        rows.push(Line::from(vec![
            gutter[0].clone(),
            Span::styled("(no text)", dim()),
        ]));
        return rows;
    }
    for line in lines.iter().take(MOST_LINES) {
        rows.extend(wrap(&[Span::raw(line.clone())], width, &gutter, &gutter));
    }
    if lines.len() > MOST_LINES {
        rows.push(Line::from(vec![
            gutter[0].clone(),
            Span::styled(format!("… {} more lines", lines.len() - MOST_LINES), dim()),
        ]));
    }
    rows
}

fn form_body(fields: &[WebField], error: Option<&str>, width: usize) -> Vec<Line<'static>> {
    let gutter = gutter();
    let mut rows = Vec::new();
    for field in fields {
        rows.extend(wrap(
            &[Span::raw(one_line(&web_safe(&shown_field(field))))],
            width,
            &gutter,
            &gutter,
        ));
    }
    if let Some(error) = error {
        rows.extend(failure(error, width));
    }
    rows
}

/// Why a step failed, in the failure style.
fn failure(error: &str, width: usize) -> Vec<Line<'static>> {
    let gutter = gutter();
    let mut rows = Vec::new();
    for line in lines_of(error) {
        rows.extend(wrap(&[Span::styled(line, red())], width, &gutter, &gutter));
    }
    rows
}

/// `note: …` lines: one line each when folded, in full when unfolded.
fn notes(notes: &[String], expanded: bool, width: usize) -> Vec<Line<'static>> {
    let label = vec![Span::styled(
        "   note: ",
        note_style().add_modifier(Modifier::BOLD),
    )];
    let indent = vec![Span::raw("         ")];
    let mut rows = Vec::new();
    for note in notes {
        if expanded {
            for (n, line) in lines_of(note).into_iter().enumerate() {
                let first = if n == 0 { &label } else { &indent };
                rows.extend(wrap(
                    &[Span::styled(line, note_style())],
                    width,
                    first,
                    &indent,
                ));
            }
        } else {
            let mut row = label.clone();
            row.push(Span::styled(
                short(note, width.saturating_sub(9)),
                note_style(),
            ));
            rows.push(Line::from(row));
        }
    }
    rows
}
