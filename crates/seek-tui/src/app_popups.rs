//! The app's input helpers beyond the prompt line: the completion popup, the `/model` and
//! `/resume` pickers, the `/help` and `/mcp` overlays, `!cmd`, the queue of prompts typed while a task runs,
//! Ctrl+Y, and the agent events they wait for (model, session and MCP server lists,
//! attachments, a task's end).
//!
//! A child of `app` (it updates the app's private state); like `app` it must not draw, read the
//! clock or send anything itself: it returns effects.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Effect, Overlay};
use crate::agent::{Attachment, Command, Event, USER_ROUND};
use crate::clipboard::{self, Part};
use crate::complete::{self, Candidate, Sources, Spot, Target};
use crate::help;
use crate::mcp_view::{self, McpView};
use crate::picker::{self, Models, Picker, PickerKind, Row};
use crate::slash::{self, COMMANDS};
use crate::transcript::Item;
use crate::workfiles;

impl App {
    /// A prompt was sent and its task has not ended: another one waits in the queue.
    pub fn busy(&self) -> bool {
        self.running() || self.submitted
    }

    /// Effects that agent events asked for (a queued prompt to send), taken once.
    pub(crate) fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.pending)
    }

    /// What the completion popup completes now, if it is open.
    pub(crate) fn popup_spot(&self) -> Option<Spot> {
        if self.focus.is_some() || self.overlay.is_some() {
            return None;
        }
        if self.popup.dismissed.as_deref() == Some(self.composer.text()) {
            return None;
        }
        complete::spot(self.composer.text(), self.composer.cursor())
    }

    /// The popup's candidates for `spot`, and a line saying why there are none yet.
    pub(crate) fn popup_candidates(&self, spot: &Spot) -> (Vec<Candidate>, Option<String>) {
        let sources = Sources {
            models: self.models.data.as_ref().map(|m| m.entries.as_slice()),
            sessions: self.sessions.data.as_deref(),
            files: self.popup.files.as_deref(),
        };
        let state = match spot.target {
            Target::Argument("/model") => self.models.state_line(),
            Target::Argument("/resume") => self.sessions.state_line(),
            _ => None,
        };
        (complete::candidates(spot, &sources), state)
    }

    /// The rows an open picker shows, and a line saying why there are none yet.
    pub(crate) fn picker_rows(&self, picker: &Picker) -> (Vec<Row>, Option<String>) {
        match picker.kind {
            PickerKind::Model => (
                self.models
                    .data
                    .as_ref()
                    .map(|m| picker.model_rows(m))
                    .unwrap_or_default(),
                self.models.state_line(),
            ),
            PickerKind::Session => (
                self.sessions
                    .data
                    .as_deref()
                    .map(|s| picker.session_rows(s))
                    .unwrap_or_default(),
                self.sessions.state_line(),
            ),
            PickerKind::Agent => (
                picker.agent_rows(&crate::slash::agents(), self.agent.as_str()),
                None,
            ),
        }
    }

    /// Keys while the popup is open; `None` for keys it leaves to the input box.
    pub(super) fn popup_key(&mut self, code: KeyCode, now: Instant) -> Option<Vec<Effect>> {
        let spot = self.popup_spot()?;
        let (found, _) = self.popup_candidates(&spot);
        let chosen = found.get(self.popup.selected.min(found.len().saturating_sub(1)));
        match code {
            KeyCode::Up | KeyCode::Down if !found.is_empty() => {
                self.popup.step(code == KeyCode::Down, found.len());
                Some(Vec::new())
            }
            KeyCode::Tab => {
                let chosen = chosen?.clone();
                self.complete_with(&spot, &chosen);
                Some(self.after_edit())
            }
            KeyCode::Esc => {
                self.popup.dismissed = Some(self.composer.text().to_owned());
                Some(Vec::new())
            }
            KeyCode::Enter => {
                let typed_is_a_command = COMMANDS.iter().any(|c| c.name == spot.query);
                let take = match spot.target {
                    Target::Command => self.popup.moved || !typed_is_a_command,
                    Target::Argument(_) => self.popup.moved,
                    Target::Path => {
                        self.popup.moved || chosen.is_some_and(|c| c.insert != spot.query)
                    }
                };
                if let (true, Some(chosen)) = (take, chosen) {
                    let chosen = chosen.clone();
                    self.complete_with(&spot, &chosen);
                    if spot.target == Target::Path {
                        // A file name goes into the prompt; the prompt is sent on the next Enter.
                        return Some(self.after_edit());
                    }
                }
                Some(self.submit(now))
            }
            _ => None,
        }
    }

    fn complete_with(&mut self, spot: &Spot, chosen: &Candidate) {
        let mut insert = chosen.insert.clone();
        if spot.target == Target::Path && chosen.complete {
            insert.push(' ');
        }
        self.composer.replace(spot.range.clone(), &insert);
        self.popup.selected = 0;
        self.popup.moved = false;
    }

    /// After the prompt changed: a new completion starts afresh, and asks for its list.
    pub(super) fn after_edit(&mut self) -> Vec<Effect> {
        let target = self.popup_spot().map(|s| s.target);
        let began = target.is_some() && target != self.popup.last;
        if began {
            self.popup.selected = 0;
            self.popup.moved = false;
        }
        self.popup.last.clone_from(&target);
        if !began {
            return Vec::new();
        }
        match target {
            Some(Target::Argument("/model")) => self.ask_for_models(),
            Some(Target::Argument("/resume")) => self.ask_for_sessions(),
            Some(Target::Path) => {
                self.popup.files = Some(workfiles::list(&self.work_path));
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn ask_for_models(&mut self) -> Vec<Effect> {
        if self.models.loading {
            return Vec::new();
        }
        self.models.loading = true;
        vec![Effect::Send(Command::ListModels)]
    }

    fn ask_for_sessions(&mut self) -> Vec<Effect> {
        if self.sessions.loading {
            return Vec::new();
        }
        self.sessions.loading = true;
        // A session list is stale as soon as a task runs: never show an old one.
        self.sessions.data = None;
        vec![Effect::Send(Command::ListSessions)]
    }

    /// Opens a picker and asks for what it lists.
    pub(super) fn open_picker(&mut self, kind: PickerKind) -> Vec<Effect> {
        self.overlay = Some(Overlay::Picker(Picker::new(kind)));
        match kind {
            PickerKind::Model => self.ask_for_models(),
            PickerKind::Session => self.ask_for_sessions(),
            PickerKind::Agent => Vec::new(),
        }
    }

    /// `/mcp`: the overlay opens at once ("loading…") and the runtime is asked for the list.
    pub(super) fn open_mcp(&mut self) -> Vec<Effect> {
        self.overlay = Some(Overlay::Mcp(McpView::default()));
        if self.mcp.loading {
            return Vec::new();
        }
        self.mcp.loading = true;
        // A server may have died since the last list: never show an old one.
        self.mcp.data = None;
        vec![Effect::Send(Command::ListMcp)]
    }

    /// Keys while `/help`, `/mcp` or a picker is open; `None` for keys that close it and go on.
    pub(super) fn overlay_key(&mut self, key: KeyEvent, modified: bool) -> Option<Vec<Effect>> {
        let overlay = self.overlay.take()?;
        let closing = modified
            && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('d'))
            && key.modifiers.contains(KeyModifiers::CONTROL);
        if closing {
            return Some(Vec::new());
        }
        match overlay {
            Overlay::Help(mut view) => match view.key(key.code) {
                help::Outcome::Stay => {
                    self.overlay = Some(Overlay::Help(view));
                    Some(Vec::new())
                }
                help::Outcome::Close => Some(Vec::new()),
                help::Outcome::Pass => None,
            },
            Overlay::Mcp(mut view) => match view.key(key.code) {
                help::Outcome::Stay => {
                    self.overlay = Some(Overlay::Mcp(view));
                    Some(Vec::new())
                }
                help::Outcome::Close => Some(Vec::new()),
                help::Outcome::Pass => None,
            },
            Overlay::Picker(mut picker) => {
                if modified {
                    self.overlay = Some(Overlay::Picker(picker));
                    return Some(Vec::new());
                }
                let (rows, _) = self.picker_rows(&picker);
                match picker.key(key.code, &rows) {
                    picker::Outcome::Stay => {
                        self.overlay = Some(Overlay::Picker(picker));
                        Some(Vec::new())
                    }
                    picker::Outcome::Close => Some(Vec::new()),
                    picker::Outcome::Chosen(value) => {
                        self.viewport.scroll_to_end();
                        let command = match picker.kind {
                            PickerKind::Model => Command::SetModel { model: value },
                            PickerKind::Session => Command::Resume { id: Some(value) },
                            // The agent is the UI's to pick: nothing goes to the runtime.
                            PickerKind::Agent => {
                                match crate::agents::parse(&value) {
                                    Ok(agent) => {
                                        self.agent = agent;
                                        self.transcript.notice(slash::agent_chosen(agent));
                                    }
                                    Err(unknown) => self.transcript.error(unknown.to_string()),
                                }
                                return Some(Vec::new());
                            }
                        };
                        Some(vec![Effect::Send(command)])
                    }
                }
            }
        }
    }

    /// `!cmd`: the user's own shell command, run by the agent when no task runs.
    pub(super) fn shell(&mut self, command: String, now: Instant) -> Vec<Effect> {
        if command.is_empty() {
            self.say("type a command after !, e.g. !ls", now);
            return Vec::new();
        }
        if self.busy() {
            // Kept in the box: the agent runs one thing at a time.
            self.say(
                "something is running: run !commands when it ends (Esc stops it)",
                now,
            );
            return Vec::new();
        }
        let mut effects = self.take_into_history();
        self.viewport.scroll_to_end();
        self.transcript.notice(you_ran(&command));
        // Until it starts, prompts typed meanwhile wait in the queue, as during a task.
        self.submitted = true;
        effects.push(Effect::Send(Command::Shell { command }));
        effects
    }

    pub(super) fn clear_queue(&mut self, now: Instant) {
        let dropped = std::mem::take(&mut self.queue).len();
        if dropped > 0 {
            self.say(format!("queue cleared ({dropped} dropped)"), now);
        }
    }

    /// Ctrl+Y: the focused item's text (a pane's code, then its output on the next press), or
    /// the last answer, to the clipboard.
    pub(super) fn copy(&mut self) -> Vec<Effect> {
        let items = self.transcript.items();
        let index = self.focus.or_else(|| {
            items
                .iter()
                .rposition(|i| matches!(i, Item::Answer(t) if !t.trim().is_empty()))
        });
        let Some((index, item)) = index.and_then(|i| items.get(i).map(|item| (i, item))) else {
            self.transcript
                .notice("nothing to copy yet: Tab focuses a pane, Ctrl+Y copies it");
            return Vec::new();
        };
        let first = match self.copied {
            Some((at, Part::Code)) if at == index => Part::Output,
            _ => Part::Code,
        };
        let other = match first {
            Part::Code => Part::Output,
            Part::Output => Part::Code,
        };
        let Some((copy, part)) = clipboard::of_item(item, first)
            .map(|c| (c, first))
            .or_else(|| clipboard::of_item(item, other).map(|c| (c, other)))
        else {
            self.transcript.notice("nothing to copy: it is empty");
            return Vec::new();
        };
        let is_pane = matches!(item, Item::Pane(_));
        self.copied = Some((index, part));
        let mut notice = format!(
            "copied {}: {} bytes{} (OSC 52)",
            copy.what,
            copy.text.len(),
            if copy.cut { ", cut at 64 KiB" } else { "" }
        );
        if is_pane && part == Part::Code {
            notice.push_str(" · Ctrl+Y again: its output");
        }
        notice.push_str(" · Shift+drag selects text");
        self.transcript.notice(notice);
        vec![Effect::Clipboard(copy.text)]
    }

    /// The agent events the input side waits for.
    pub(super) fn input_event(&mut self, event: &Event) {
        match event {
            Event::ModelList {
                current,
                models,
                error,
            } => {
                self.models.loading = false;
                self.models.error.clone_from(error);
                // A failed request with nothing listed shows its error, not an older list.
                self.models.data = (error.is_none() || !models.is_empty()).then(|| Models {
                    current: current.clone(),
                    entries: models.clone(),
                });
            }
            Event::SessionList { lines, sessions } => {
                if self.sessions.loading {
                    self.sessions.loading = false;
                    self.sessions.data = Some(sessions.clone());
                } else {
                    self.transcript.notice(lines.join("\n"));
                }
            }
            Event::McpServers { servers } => {
                if !std::mem::replace(&mut self.mcp.loading, false)
                    && let Some(notice) = mcp_view::failure_notice(servers)
                {
                    // Not asked for: the runtime says a server failed (at start-up).
                    self.transcript.error(notice);
                }
                self.mcp.data = Some(servers.clone());
            }
            Event::Attached { files } => self.transcript.notice(attached(files)),
            Event::TurnStarted { .. } => self.submitted = false,
            Event::BlockStarted {
                round: USER_ROUND, ..
            } => self.submitted = false,
            // A download before a model switch ended (`/model`): what was typed meanwhile goes.
            Event::ModelChanged { .. } | Event::Error { .. }
                if !self.running() && !self.submitted && !self.queue.is_empty() =>
            {
                self.send_next_queued();
            }
            Event::Error { .. } if !self.running() => self.submitted = false,
            Event::TurnFinished { .. } => self.send_next_queued(),
            // The user's own command ended (round 0 is no model round): the queue goes on.
            Event::BlockFinished { record } if record.round == USER_ROUND && !self.running() => {
                self.send_next_queued();
            }
            _ => {}
        }
    }

    /// Something ended: the first queued prompt is sent, if one waits.
    fn send_next_queued(&mut self) {
        self.submitted = false;
        if !self.queue.is_empty() {
            let prompt = self.queue.remove(0);
            self.submitted = true;
            self.viewport.scroll_to_end();
            self.pending.push(Effect::Send(Command::Submit {
                prompt,
                agent: Some(self.agent),
                context: None,
            }));
        }
    }
}

/// `you ran: ls -la`, above the pane of the user's own command.
pub(super) fn you_ran(command: &str) -> String {
    format!("you ran: {}", command.trim())
}

/// `attached notes.txt (1.2 kB), big.log (32.0 kB, only its start)`.
pub(super) fn attached(files: &[Attachment]) -> String {
    let list: Vec<String> = files
        .iter()
        .map(|f| {
            let start = if f.truncated { ", only its start" } else { "" };
            format!(
                "{} ({}{start})",
                f.path,
                crate::local::download::progress::human_bytes(f.bytes)
            )
        })
        .collect();
    if list.is_empty() {
        "nothing was attached".to_owned()
    } else {
        format!("attached {}", list.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_read_as_one_line() {
        let file = |path: &str, bytes, truncated| Attachment {
            path: path.into(),
            bytes,
            truncated,
        };
        assert_eq!(
            attached(&[file("notes.txt", 1_234, false)]),
            "attached notes.txt (1.2 kB)"
        );
        assert_eq!(
            attached(&[file("a", 12, false), file("b.log", 2_500_000, true)]),
            "attached a (12 B), b.log (2.5 MB, only its start)"
        );
    }
}
