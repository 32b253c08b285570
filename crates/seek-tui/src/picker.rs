//! The `/model`, `/resume` and `/agent` pickers: a scrollable, filterable list over the transcript, and
//! the lists they show (`Listed`), which arrive from the agent after the UI asks.
//!
//! Owns the picker's selection, scroll and filter, its rows and how they look. Every name and
//! prompt in a row came from a server or a session file: it is made terminal-safe before it is
//! drawn. It must not send anything; choosing returns the value for the app to act on.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::agent::{ModelEntry, SessionEntry};
use crate::complete::first_line;
use crate::render::clip;
use crate::render::text::width;
use crate::terminal_safe::terminal_safe;

/// A list the agent sends on request: what arrived last, whether a newer one is on its way, and
/// why the last request failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed<T> {
    pub data: Option<T>,
    pub loading: bool,
    pub error: Option<String>,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Self {
            data: None,
            loading: false,
            error: None,
        }
    }
}

impl<T> Listed<T> {
    /// A line to show instead of rows, when there are none to show.
    pub(crate) fn state_line(&self) -> Option<String> {
        if self.data.is_some() {
            return None;
        }
        match (&self.error, self.loading) {
            (_, true) => Some("loading…".to_owned()),
            (Some(error), false) => Some(terminal_safe(error).into_owned()),
            (None, false) => None,
        }
    }
}

/// The models a server offers, and which is in use.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Models {
    pub current: String,
    pub entries: Vec<ModelEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerKind {
    Model,
    Session,
    /// `/agent` alone: `auto` and the registry's agents, with what each does.
    Agent,
}

/// An open picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picker {
    pub kind: PickerKind,
    /// Index into the filtered rows.
    pub selected: usize,
    /// The first row shown (kept so the selection stays in sight).
    pub top: usize,
    /// Typed text narrowing the rows.
    pub filter: String,
    /// Rows the last draw showed: how far PageUp/PageDown move.
    pub page: usize,
}

/// One row of a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// What choosing it uses (the model name, the session id).
    pub value: String,
    pub label: String,
    pub detail: String,
    pub current: bool,
}

/// What a key did to the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Stay,
    Close,
    Chosen(String),
}

impl Picker {
    pub fn new(kind: PickerKind) -> Self {
        Self {
            kind,
            selected: 0,
            top: 0,
            filter: String::new(),
            page: 10,
        }
    }

    pub fn title(&self) -> &'static str {
        match self.kind {
            PickerKind::Model => "models",
            PickerKind::Session => "sessions of this directory",
            PickerKind::Agent => "agents",
        }
    }

    /// The model rows matching the filter, the one in use marked.
    pub(crate) fn model_rows(&self, models: &Models) -> Vec<Row> {
        let filter = self.filter.to_lowercase();
        models
            .entries
            .iter()
            .filter(|m| m.name.to_lowercase().contains(&filter))
            .map(|m| Row {
                value: m.name.clone(),
                label: m.name.clone(),
                detail: m.detail.clone(),
                current: m.name == models.current,
            })
            .collect()
    }

    /// The agent rows matching the filter (`agents`: name and what it does), `current` marked.
    pub(crate) fn agent_rows(&self, agents: &[(&str, &str)], current: &str) -> Vec<Row> {
        let filter = self.filter.to_lowercase();
        agents
            .iter()
            .filter(|(name, _)| name.contains(&filter))
            .map(|(name, description)| Row {
                value: (*name).to_owned(),
                label: (*name).to_owned(),
                detail: (*description).to_owned(),
                current: *name == current,
            })
            .collect()
    }

    /// The session rows matching the filter: id, last activity (UTC) and first prompt.
    pub(crate) fn session_rows(&self, sessions: &[SessionEntry]) -> Vec<Row> {
        let filter = self.filter.to_lowercase();
        sessions
            .iter()
            .filter(|s| {
                s.id.to_lowercase().contains(&filter)
                    || s.first_prompt.to_lowercase().contains(&filter)
            })
            .map(|s| Row {
                value: s.id.clone(),
                label: s.id.clone(),
                detail: format!(
                    "{}  {}",
                    crate::log::utc_minutes(s.last_activity_ms),
                    first_line(&s.first_prompt)
                ),
                current: false,
            })
            .collect()
    }

    /// Applies a key to a picker showing `rows`.
    pub fn key(&mut self, code: crossterm::event::KeyCode, rows: &[Row]) -> Outcome {
        use crossterm::event::KeyCode;
        let last = rows.len().saturating_sub(1);
        match code {
            KeyCode::Esc => return Outcome::Close,
            KeyCode::Enter => {
                return match rows.get(self.selected) {
                    Some(row) => Outcome::Chosen(row.value.clone()),
                    None => Outcome::Close,
                };
            }
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(self.page.max(1)),
            KeyCode::PageDown => self.selected = (self.selected + self.page.max(1)).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            KeyCode::Backspace => {
                self.filter.pop();
                self.selected = 0;
            }
            KeyCode::Char(c) if !c.is_control() => {
                self.filter.push(c);
                self.selected = 0;
            }
            _ => {}
        }
        Outcome::Stay
    }

    /// Draws the picker over `area` (the transcript's window).
    pub fn draw(&mut self, rows: &[Row], state: Option<String>, area: Rect, buf: &mut Buffer) {
        let area = clip::inside(area, buf);
        if area.height < 3 || area.width < 10 {
            return;
        }
        clip::clear(buf, area);
        let list_height = usize::from(area.height) - 2;
        self.page = list_height;
        self.selected = self.selected.min(rows.len().saturating_sub(1));
        if self.selected < self.top {
            self.top = self.selected;
        } else if self.selected >= self.top + list_height {
            self.top = self.selected + 1 - list_height;
        }
        self.top = self.top.min(rows.len().saturating_sub(list_height));
        let accent = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        let count = if rows.is_empty() {
            String::new()
        } else {
            format!(" · {}/{}", self.selected + 1, rows.len())
        };
        let filter = if self.filter.is_empty() {
            String::new()
        } else {
            format!(" · filter: {}", self.filter)
        };
        clip::line(
            buf,
            area,
            0,
            &Line::from(vec![
                Span::styled(format!(" {}", self.title()), accent),
                Span::styled(format!("{count}{filter}"), dim()),
            ]),
        );
        let columns = usize::from(area.width);
        if rows.is_empty() {
            let empty = state.unwrap_or_else(|| match (self.kind, self.filter.is_empty()) {
                (_, false) => "nothing matches the filter".to_owned(),
                (PickerKind::Model, true) => "the server lists no models".to_owned(),
                (PickerKind::Session, true) => "no saved sessions in this directory".to_owned(),
                (PickerKind::Agent, true) => "no agents".to_owned(),
            });
            clip::line(
                buf,
                area,
                1,
                &Line::from(Span::styled(format!("   {empty}"), dim())),
            );
        }
        let label_width = rows
            .iter()
            .map(|r| width(&terminal_safe(&r.label)))
            .max()
            .unwrap_or(0)
            .min(columns / 2);
        for (i, row) in rows.iter().enumerate().skip(self.top).take(list_height) {
            let line = row_line(row, label_width, i == self.selected, columns);
            clip::line(buf, area, 1 + i - self.top, &line);
        }
        let hint = " ↑↓ move · type to filter · Enter choose · Esc cancel";
        clip::line(
            buf,
            area,
            usize::from(area.height) - 1,
            &Line::from(Span::styled(hint, dim())),
        );
    }
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// Blanks `area` so the transcript does not show through.
pub fn clear(area: Rect, buf: &mut Buffer) {
    clip::clear(buf, area);
}

/// `text` made terminal-safe, on one line, cut to `columns` with an ellipsis.
pub fn fit(text: &str, columns: usize) -> String {
    let safe = terminal_safe(text).replace(['\n', '\t'], " ");
    if width(&safe) <= columns {
        return safe;
    }
    let mut out = String::new();
    for c in safe.chars() {
        if width(&out) + unicode_width::UnicodeWidthChar::width(c).unwrap_or(0) + 1 > columns {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

/// One row: a marker for the selection and the current entry, the label padded to
/// `label_width`, the detail dimmed.
pub(crate) fn row_line(
    row: &Row,
    label_width: usize,
    selected: bool,
    columns: usize,
) -> Line<'static> {
    let marker = match (selected, row.current) {
        (true, _) => " › ",
        (false, true) => " ● ",
        (false, false) => "   ",
    };
    let label = fit(&row.label, label_width.max(1));
    let pad = label_width.saturating_sub(width(&label));
    let room = columns.saturating_sub(3 + label_width + 2);
    let mut detail = if row.detail.is_empty() || room < 4 {
        String::new()
    } else {
        format!("  {}", fit(&row.detail, room))
    };
    if row.current && selected {
        detail.push_str(" ●");
    }
    let label_style = if selected {
        Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
    } else {
        Style::new()
    };
    Line::from(vec![
        Span::styled(marker, Style::new().fg(Color::Cyan)),
        Span::styled(format!("{label}{}", " ".repeat(pad)), label_style),
        Span::styled(detail, dim()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyCode;

    fn rows(n: usize) -> Vec<Row> {
        (0..n)
            .map(|i| Row {
                value: format!("m{i}"),
                label: format!("m{i}"),
                detail: String::new(),
                current: false,
            })
            .collect()
    }

    #[test]
    fn keys_move_within_the_rows_and_choose() {
        for n in [0, 1, 500] {
            let rows = rows(n);
            let mut p = Picker::new(PickerKind::Model);
            for _ in 0..3 {
                p.key(KeyCode::Down, &rows);
            }
            p.key(KeyCode::PageDown, &rows);
            p.key(KeyCode::End, &rows);
            assert_eq!(p.selected, n.saturating_sub(1));
            p.key(KeyCode::PageUp, &rows);
            p.key(KeyCode::Home, &rows);
            p.key(KeyCode::Up, &rows);
            assert_eq!(p.selected, 0);
            let chosen = p.key(KeyCode::Enter, &rows);
            if n == 0 {
                assert_eq!(chosen, Outcome::Close);
            } else {
                assert_eq!(chosen, Outcome::Chosen("m0".into()));
            }
        }
    }

    #[test]
    fn names_from_a_server_are_drawn_terminal_safe_and_cut() {
        assert_eq!(fit("evil\x1b]0;title\x07name", 40), "evilname");
        assert_eq!(fit("a\nb", 40), "a b");
        assert_eq!(fit("abcdefgh", 5), "abcd…");
    }
}
