//! `/mcp` as a scrollable overlay over the transcript: each configured MCP server with its state
//! (green when ready, red when it failed or exited), its transport and its tools, one per row
//! with their arguments and first line; and the one-line notice shown when the runtime reports
//! a failed server on its own (at start-up).
//!
//! Owns the overlay's scroll and look. Every name, description and error came from a server or
//! the config: it is drawn with its control, bidirectional and invisible characters escaped
//! (`\u{202e}`, `terminal_safe::escape_invisible`). It must not ask for the list (the
//! app sends `ListMcp`) nor act on anything.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::help::Outcome;
use crate::picker::{Listed, clear};
use crate::render::text::width;
use crate::terminal_safe::escape_invisible;
use crate::wire::{McpServerInfo, McpState};

/// Characters of one tool's row or one error shown at most (a server may send megabytes).
const TEXT_MAX: usize = 1000;

/// The open `/mcp` overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct McpView {
    /// The first row shown.
    pub top: usize,
    /// Rows the last draw showed: how far PageUp/PageDown move.
    pub page: usize,
}

impl McpView {
    /// `help::scroll_key`: arrows and pages scroll, Esc/q/Enter close, others pass on.
    pub fn key(&mut self, code: crossterm::event::KeyCode) -> Outcome {
        crate::help::scroll_key(&mut self.top, self.page, code)
    }

    /// Draws the servers over `area`; the scroll is clamped here, where the height is known.
    pub fn draw(&mut self, servers: &Listed<Vec<McpServerInfo>>, area: Rect, buf: &mut Buffer) {
        let area = crate::render::clip::inside(area, buf);
        if area.height < 2 || area.width < 10 {
            return;
        }
        clear(area, buf);
        let columns = usize::from(area.width);
        let lines = match (&servers.data, servers.state_line()) {
            (Some(list), _) if !list.is_empty() => server_lines(list, columns),
            (_, Some(state)) => vec![dim_line(format!("   {state}"))],
            _ => vec![dim_line(
                "   no MCP servers are configured: add a [mcp_servers.NAME] table to the config \
                 file (docs/mcp.md)"
                    .to_owned(),
            )],
        };
        let last = crate::help::scrolled_header(
            " MCP servers",
            &mut self.top,
            &mut self.page,
            lines.len(),
            area,
            buf,
        );
        for (i, line) in lines[self.top..last].iter().enumerate() {
            crate::render::clip::line(buf, area, 1 + i, line);
        }
    }
}

/// Every server's rows at `columns`: its head line, then its error or its tools (long rows
/// wrap, indented under their start).
pub(crate) fn server_lines(servers: &[McpServerInfo], columns: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for server in servers {
        let (word, color) = state_look(server.state);
        let mut head = vec![
            Span::styled(
                format!(" {}", escape_invisible(&server.name)),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::raw("  "),
            Span::styled(word, Style::new().fg(color).add_modifier(Modifier::BOLD)),
            Span::styled(format!("  {}", escape_invisible(&server.transport)), dim()),
        ];
        if server.state == McpState::Ready {
            let count = server.tools.len();
            head.push(Span::styled(
                format!("  {count} tool{}", if count == 1 { "" } else { "s" }),
                dim(),
            ));
        }
        lines.push(Line::from(head));
        if let Some(error) = &server.error {
            let error = escape_invisible(&one_line(error)).into_owned();
            for row in wrap(&error, columns.saturating_sub(4).max(8)) {
                lines.push(Line::from(Span::styled(
                    format!("   {row}"),
                    Style::new().fg(Color::Red),
                )));
            }
        }
        if server.state == McpState::Disabled {
            lines.push(dim_line("   enabled = false: not started".to_owned()));
        }
        for tool in &server.tools {
            let call = format!(
                "{}({})",
                escape_invisible(&tool.name),
                escape_invisible(&tool.arguments)
            );
            let description = escape_invisible(&one_line(&tool.description)).into_owned();
            let text = if description.is_empty() {
                call.clone()
            } else {
                format!("{call} — {description}")
            };
            for (i, row) in wrap(&text, columns.saturating_sub(6).max(8))
                .into_iter()
                .enumerate()
            {
                let indent = if i == 0 { "   " } else { "     " };
                // The call stands out; what the tool does is dimmed.
                let line = if i == 0 && row.starts_with(&call) {
                    Line::from(vec![
                        Span::raw(format!("{indent}{call}")),
                        Span::styled(row[call.len()..].to_owned(), dim()),
                    ])
                } else {
                    Line::from(Span::styled(format!("{indent}{row}"), dim()))
                };
                lines.push(line);
            }
        }
    }
    lines
}

/// The state as a word and its colour.
fn state_look(state: McpState) -> (&'static str, Color) {
    match state {
        McpState::Ready => ("ready", Color::Green),
        McpState::Starting => ("starting", Color::Yellow),
        McpState::Failed => ("failed", Color::Red),
        McpState::Exited => ("exited", Color::Red),
        McpState::Disabled => ("disabled", Color::DarkGray),
    }
}

/// The notice for servers the runtime reported on its own: one line per failed or exited
/// server (`MCP server `x` failed: …; /mcp for details`), `None` when all is well.
pub(crate) fn failure_notice(servers: &[McpServerInfo]) -> Option<String> {
    let lines: Vec<String> = servers
        .iter()
        .filter(|s| matches!(s.state, McpState::Failed | McpState::Exited))
        .map(|s| {
            let why = s
                .error
                .as_deref()
                .map(crate::mcp::first_line)
                .unwrap_or_default();
            let verb = if s.state == McpState::Exited {
                "exited"
            } else {
                "failed"
            };
            let why = crate::picker::fit(&escape_invisible(&why), 120);
            format!(
                "MCP server `{}` {verb}: {why}; /mcp for details",
                escape_invisible(&s.name)
            )
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// A server's text on one line: line breaks and tabs become spaces (what else it hides is
/// escaped by the caller).
fn one_line(text: &str) -> String {
    text.replace(['\r', '\n', '\t'], " ")
}

/// `text` in rows of at most `columns` display columns, broken at spaces (a word longer than a
/// row is split), at most `TEXT_MAX` characters of it.
fn wrap(text: &str, columns: usize) -> Vec<String> {
    let columns = columns.max(2);
    let cut = text.chars().nth(TEXT_MAX).is_some();
    let mut kept: String = text.chars().take(TEXT_MAX).collect();
    if cut {
        kept.push('…');
    }
    let mut rows: Vec<String> = vec![String::new()];
    let mut used = 0;
    for word in kept.split(' ') {
        if used > 0 && used + 1 + width(word) > columns {
            rows.push(String::new());
            used = 0;
        } else if used > 0 {
            if let Some(row) = rows.last_mut() {
                row.push(' ');
            }
            used += 1;
        }
        for c in word.chars() {
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + w > columns {
                rows.push(String::new());
                used = 0;
            }
            used += w;
            if let Some(row) = rows.last_mut() {
                row.push(c);
            }
        }
    }
    rows
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

fn dim_line(text: String) -> Line<'static> {
    Line::from(Span::styled(text, dim()))
}

#[cfg(test)]
#[path = "mcp_view_tests.rs"]
mod tests;
