//! The terminal UI's state and its update step: keys, pastes, mouse and agent events in;
//! commands for the agent out.
//!
//! Owns focus, the quit gesture, transient hints and the chosen agent, and routes input to the
//! transcript, the viewport, the input box and the history. It must not do I/O (beyond what
//! `History` does) or draw: the event loop sends its effects and the screen module draws it.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use crate::agent::{Command, Event};
use crate::config::AgentName;
use crate::files::FileWrite;
use crate::tui::composer::Composer;
use crate::tui::history::History;
use crate::tui::render::viewport::Viewport;
use crate::tui::slash::{self, Slash};
use crate::tui::status::StatusLine;
use crate::tui::transcript::Transcript;

/// A second Ctrl+C within this quits.
const QUIT_WINDOW: Duration = Duration::from_secs(2);
/// How long a hint stays in the status line.
const HINT_TIME: Duration = Duration::from_secs(4);
/// Rows one mouse wheel step scrolls.
const WHEEL_ROWS: usize = 3;

/// What the event loop must do after an update.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Send(Command),
    /// A file write (prompt history) for the background writer.
    Write(FileWrite),
}

pub struct App {
    pub transcript: Transcript,
    pub viewport: Viewport,
    pub composer: Composer,
    pub history: History,
    pub status: StatusLine,
    /// The focused transcript item (Tab), or `None` when the input box has the keys.
    pub focus: Option<usize>,
    /// The agent the next task goes to.
    pub agent: AgentName,
    /// `model @ provider url`.
    pub model: String,
    pub work_dir: String,
    hint: Option<(String, Instant)>,
    quit_armed: Option<Instant>,
    pub quit: bool,
}

impl App {
    pub fn new(agent: AgentName, model: String, work_dir: String, history: History) -> Self {
        Self {
            transcript: Transcript::default(),
            viewport: Viewport::default(),
            composer: Composer::default(),
            history,
            status: StatusLine::default(),
            focus: None,
            agent,
            model,
            work_dir,
            hint: None,
            quit_armed: None,
            quit: false,
        }
    }

    pub fn running(&self) -> bool {
        self.status.running()
    }

    /// The hint to show now, if one is fresh.
    pub fn hint(&self, now: Instant) -> Option<&str> {
        self.hint
            .as_ref()
            .filter(|(_, at)| now.saturating_duration_since(*at) < HINT_TIME)
            .map(|(h, _)| h.as_str())
    }

    /// Whether the screen changes with time alone (spinners, clocks, a hint that will expire).
    pub fn animating(&self, now: Instant) -> bool {
        self.running() || self.hint(now).is_some()
    }

    fn say(&mut self, hint: impl Into<String>, now: Instant) {
        self.hint = Some((hint.into(), now));
    }

    pub fn agent_event(&mut self, event: &Event, now: Instant) {
        self.transcript.apply(event, now);
        self.status.apply(event, now);
        match event {
            Event::ModelChanged { description } => self.model.clone_from(description),
            Event::Cleared => {
                self.focus = None;
                self.viewport = Viewport::default();
            }
            _ => {}
        }
        // Items can move when a streamed answer is replaced; a focus that no longer points at
        // a foldable item goes back to the input.
        if let Some(f) = self.focus
            && !self
                .transcript
                .items()
                .get(f)
                .is_some_and(|i| i.is_foldable())
        {
            self.focus = None;
        }
    }

    pub fn paste(&mut self, text: &str) {
        self.focus = None;
        self.composer.insert(text);
    }

    pub fn mouse(&mut self, mouse: MouseEvent, now: Instant) {
        match mouse.kind {
            MouseEventKind::ScrollUp => self.viewport.scroll_up(&self.transcript, WHEEL_ROWS, now),
            MouseEventKind::ScrollDown => {
                self.viewport.scroll_down(&self.transcript, WHEEL_ROWS, now)
            }
            _ => {}
        }
    }

    fn page(&self) -> usize {
        usize::from(self.viewport.area.height)
            .saturating_sub(2)
            .max(1)
    }

    pub fn key(&mut self, key: KeyEvent, now: Instant) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        if key.code != KeyCode::Char('c') || !ctrl {
            self.quit_armed = None;
        }
        match key.code {
            KeyCode::Char('c') if ctrl => return self.ctrl_c(now),
            KeyCode::Char('d') if ctrl => {
                if self.composer.is_empty() {
                    self.quit = true;
                } else {
                    self.composer.delete();
                }
            }
            KeyCode::Esc if self.focus.is_some() => self.focus = None,
            KeyCode::Esc if self.running() => return self.stop(now),
            KeyCode::Char('r') if ctrl => return self.retry(now),
            KeyCode::Char('t') if ctrl => self.transcript.toggle_all_reasoning(),
            KeyCode::Char('o') if ctrl => self.transcript.toggle_all_panes(),
            KeyCode::Tab => self.move_focus(true),
            KeyCode::BackTab => self.move_focus(false),
            KeyCode::PageUp => self.viewport.scroll_up(&self.transcript, self.page(), now),
            KeyCode::PageDown => self
                .viewport
                .scroll_down(&self.transcript, self.page(), now),
            KeyCode::Home if ctrl || self.focus.is_some() || self.composer.is_empty() => {
                self.viewport.to_top()
            }
            KeyCode::End if ctrl || self.focus.is_some() || self.composer.is_empty() => {
                self.viewport.to_end()
            }
            _ if self.focus.is_some() => return self.focused_key(key, now),
            KeyCode::Enter if shift || alt => self.composer.insert("\n"),
            KeyCode::Char('j') if ctrl => self.composer.insert("\n"),
            KeyCode::Enter => return self.submit(now),
            KeyCode::Up => {
                if !self.composer.up()
                    && let Some(older) = self.history.older(self.composer.text())
                {
                    let older = older.to_owned();
                    self.composer.set(older);
                }
            }
            KeyCode::Down => {
                if !self.composer.down()
                    && let Some(newer) = self.history.newer()
                {
                    self.composer.set(newer);
                }
            }
            KeyCode::Left => self.composer.left(),
            KeyCode::Right => self.composer.right(),
            KeyCode::Home => self.composer.line_home(),
            KeyCode::End => self.composer.line_end(),
            KeyCode::Char('a') if ctrl => self.composer.line_home(),
            KeyCode::Char('e') if ctrl => self.composer.line_end(),
            KeyCode::Char('w') if ctrl => self.composer.delete_word(),
            KeyCode::Char('u') if ctrl => self.composer.delete_to_line_start(),
            KeyCode::Backspace => self.composer.backspace(),
            KeyCode::Delete => self.composer.delete(),
            KeyCode::Char(c) if !ctrl => self.composer.insert(c.encode_utf8(&mut [0; 4])),
            _ => {}
        }
        Vec::new()
    }

    /// Keys while a transcript item has the focus.
    fn focused_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Effect> {
        match key.code {
            KeyCode::Enter | KeyCode::Char(' ') => {
                if let Some(f) = self.focus {
                    self.transcript.toggle(f);
                }
            }
            KeyCode::Up => self.move_focus(true),
            KeyCode::Down => self.move_focus(false),
            KeyCode::Char(_) | KeyCode::Backspace => {
                // Typing goes back to the input, keeping the key.
                self.focus = None;
                return self.key(key, now);
            }
            _ => {}
        }
        Vec::new()
    }

    /// Tab (`older`) and Shift+Tab over the foldable items, newest first; past either end the
    /// focus returns to the input.
    fn move_focus(&mut self, older: bool) {
        let order = self.transcript.foldable();
        let position = self.focus.and_then(|f| order.iter().position(|&i| i == f));
        self.focus = match (position, older) {
            (None, true) => order.first().copied(),
            (None, false) => order.last().copied(),
            (Some(p), true) => order.get(p + 1).copied(),
            (Some(p), false) => p.checked_sub(1).and_then(|p| order.get(p).copied()),
        };
        if let Some(f) = self.focus {
            self.viewport.reveal(f);
        }
    }

    fn ctrl_c(&mut self, now: Instant) -> Vec<Effect> {
        if self.running() {
            return self.stop(now);
        }
        if !self.composer.is_empty() {
            self.composer.take();
            return Vec::new();
        }
        match self.quit_armed {
            Some(at) if now.saturating_duration_since(at) < QUIT_WINDOW => self.quit = true,
            _ => {
                self.quit_armed = Some(now);
                self.say("press Ctrl+C again to quit", now);
            }
        }
        Vec::new()
    }

    fn stop(&mut self, now: Instant) -> Vec<Effect> {
        if !self.running() {
            self.say("nothing is running", now);
            return Vec::new();
        }
        self.say("stopping…", now);
        vec![Effect::Send(Command::Stop)]
    }

    fn retry(&mut self, now: Instant) -> Vec<Effect> {
        if self.running() {
            self.say("a task is running: Esc stops it", now);
            return Vec::new();
        }
        self.viewport.to_end();
        vec![Effect::Send(Command::Retry)]
    }

    fn submit(&mut self, now: Instant) -> Vec<Effect> {
        let text = self.composer.text().to_owned();
        if text.trim().is_empty() {
            return Vec::new();
        }
        if text.trim_start().starts_with('/') && !text.trim().contains('\n') {
            let mut effects = self.take_into_history();
            match slash::parse(&text) {
                Ok(command) => effects.extend(self.slash(command, now)),
                Err(message) => self.transcript.error(message),
            }
            return effects;
        }
        if self.running() {
            // Keep what was typed: it goes when the task ends.
            self.say("a task is running: Esc stops it", now);
            return Vec::new();
        }
        let mut effects = self.take_into_history();
        self.viewport.to_end();
        effects.push(Effect::Send(Command::Submit {
            prompt: text,
            agent: Some(self.agent),
        }));
        effects
    }

    /// Empties the input box into the history; the effects write the history file.
    fn take_into_history(&mut self) -> Vec<Effect> {
        let text = self.composer.take();
        self.history
            .push(&text)
            .map(Effect::Write)
            .into_iter()
            .collect()
    }

    fn slash(&mut self, command: Slash, now: Instant) -> Vec<Effect> {
        self.viewport.to_end();
        match command {
            Slash::Help => self.transcript.notice(slash::HELP),
            Slash::Agent(Some(agent)) => {
                self.agent = agent;
                self.transcript
                    .notice(format!("agent: {agent} (from the next task on)"));
            }
            Slash::Agent(None) => self.transcript.notice(format!(
                "agent: {} · /agent NAME picks one of auto, casual, coder, file",
                self.agent
            )),
            Slash::Model(Some(model)) => return vec![Effect::Send(Command::SetModel { model })],
            Slash::Model(None) => self.transcript.notice(format!(
                "model: {} · /model NAME switches; `seek models` lists the server's models",
                self.model
            )),
            Slash::Retry => return self.retry(now),
            Slash::Stop => return self.stop(now),
            Slash::Clear => return vec![Effect::Send(Command::Clear)],
            Slash::Quit => self.quit = true,
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Status;
    use crossterm::event::KeyEvent;

    fn app() -> App {
        App::new(
            AgentName::Coder,
            "m @ p".into(),
            "~/w".into(),
            History::default(),
        )
    }

    fn press(app: &mut App, code: KeyCode, modifiers: KeyModifiers, now: Instant) -> Vec<Effect> {
        app.key(KeyEvent::new(code, modifiers), now)
    }

    fn typed(app: &mut App, text: &str, now: Instant) {
        for c in text.chars() {
            press(app, KeyCode::Char(c), KeyModifiers::NONE, now);
        }
    }

    fn start_turn(app: &mut App, now: Instant) {
        app.agent_event(
            &Event::TurnStarted {
                turn: 1,
                prompt: "p".into(),
                agent: AgentName::Coder,
            },
            now,
        );
        app.agent_event(
            &Event::Status {
                status: Status::Thinking,
                round: 1,
                attempt: 0,
                max_attempts: 5,
            },
            now,
        );
    }

    const NONE: KeyModifiers = KeyModifiers::NONE;
    const CTRL: KeyModifiers = KeyModifiers::CONTROL;

    #[test]
    fn ctrl_c_stops_then_clears_then_quits_on_a_second_press_within_two_seconds() {
        let t = Instant::now();
        let mut a = app();
        start_turn(&mut a, t);
        assert_eq!(
            press(&mut a, KeyCode::Char('c'), CTRL, t),
            [Effect::Send(Command::Stop)]
        );
        a.agent_event(
            &Event::TurnFinished {
                turn: 1,
                outcome: crate::agent::Outcome::Stopped,
                answer: String::new(),
                reasoning: None,
                agent: AgentName::Coder,
                rounds: 1,
                blocks: Vec::new(),
                message: None,
            },
            t,
        );
        typed(&mut a, "draft", t);
        press(&mut a, KeyCode::Char('c'), CTRL, t);
        assert!(a.composer.is_empty() && !a.quit, "clears the input first");
        press(&mut a, KeyCode::Char('c'), CTRL, t);
        assert_eq!(a.hint(t), Some("press Ctrl+C again to quit"));
        press(&mut a, KeyCode::Char('c'), CTRL, t + Duration::from_secs(3));
        assert!(!a.quit, "too late: this press arms again");
        press(&mut a, KeyCode::Char('c'), CTRL, t + Duration::from_secs(4));
        assert!(a.quit);
    }

    #[test]
    fn ctrl_d_quits_only_on_an_empty_input() {
        let t = Instant::now();
        let mut a = app();
        typed(&mut a, "ab", t);
        press(&mut a, KeyCode::Left, NONE, t);
        press(&mut a, KeyCode::Char('d'), CTRL, t);
        assert_eq!(a.composer.text(), "a");
        assert!(!a.quit);
        a.composer.take();
        press(&mut a, KeyCode::Char('d'), CTRL, t);
        assert!(a.quit);
    }

    #[test]
    fn esc_stops_a_running_task_but_first_leaves_the_focus() {
        let t = Instant::now();
        let mut a = app();
        start_turn(&mut a, t);
        a.agent_event(&Event::ReasoningDelta { text: "hmm".into() }, t);
        press(&mut a, KeyCode::Tab, NONE, t);
        assert_eq!(a.focus, Some(1));
        assert!(press(&mut a, KeyCode::Esc, NONE, t).is_empty());
        assert_eq!(a.focus, None);
        assert_eq!(
            press(&mut a, KeyCode::Esc, NONE, t),
            [Effect::Send(Command::Stop)]
        );
    }

    #[test]
    fn tab_walks_foldable_items_newest_first_and_enter_toggles() {
        let t = Instant::now();
        let mut a = app();
        start_turn(&mut a, t);
        a.agent_event(&Event::ReasoningDelta { text: "a".into() }, t);
        a.agent_event(
            &Event::AnswerComplete {
                round: 1,
                answer: "text\nblock:0\nmore\nblock:1\n".into(),
                reasoning: None,
                blocks: 2,
                finish: "stop".into(),
            },
            t,
        );
        // Items: 0 you, 1 thoughts, 2 text, 3 pane, 4 text, 5 pane.
        let order: Vec<_> = (0..4)
            .map(|_| {
                press(&mut a, KeyCode::Tab, NONE, t);
                a.focus
            })
            .collect();
        assert_eq!(order, [Some(5), Some(3), Some(1), None]);
        press(&mut a, KeyCode::BackTab, NONE, t);
        assert_eq!(
            a.focus,
            Some(1),
            "Shift+Tab from the input starts at the oldest"
        );
        press(&mut a, KeyCode::Char(' '), NONE, t);
        assert!(
            matches!(&a.transcript.items()[1], crate::tui::transcript::Item::Reasoning(r) if r.expanded)
        );
        press(&mut a, KeyCode::Down, NONE, t);
        assert_eq!(a.focus, Some(3), "Down moves to the newer item");
        press(&mut a, KeyCode::Enter, NONE, t);
        assert!(
            matches!(&a.transcript.items()[3], crate::tui::transcript::Item::Pane(p) if p.expanded)
        );
        press(&mut a, KeyCode::Char('x'), NONE, t);
        assert_eq!(
            (a.focus, a.composer.text()),
            (None, "x"),
            "typing returns to the input"
        );
    }

    #[test]
    fn enter_sends_and_shift_alt_enter_and_ctrl_j_insert_newlines() {
        let t = Instant::now();
        let mut a = app();
        typed(&mut a, "a", t);
        press(&mut a, KeyCode::Enter, KeyModifiers::SHIFT, t);
        typed(&mut a, "b", t);
        press(&mut a, KeyCode::Enter, KeyModifiers::ALT, t);
        typed(&mut a, "c", t);
        press(&mut a, KeyCode::Char('j'), CTRL, t);
        typed(&mut a, "d", t);
        assert_eq!(
            press(&mut a, KeyCode::Enter, NONE, t),
            [Effect::Send(Command::Submit {
                prompt: "a\nb\nc\nd".into(),
                agent: Some(AgentName::Coder)
            })]
        );
        assert!(a.composer.is_empty());
    }

    #[test]
    fn a_prompt_typed_while_a_task_runs_is_kept_not_lost() {
        let t = Instant::now();
        let mut a = app();
        start_turn(&mut a, t);
        typed(&mut a, "next", t);
        assert!(press(&mut a, KeyCode::Enter, NONE, t).is_empty());
        assert_eq!(a.composer.text(), "next");
        assert_eq!(a.hint(t), Some("a task is running: Esc stops it"));
        assert!(
            press(&mut a, KeyCode::Char('r'), CTRL, t).is_empty(),
            "no retry while running"
        );
    }

    #[test]
    fn up_and_down_recall_history_only_at_the_edges_of_the_input() {
        let t = Instant::now();
        let mut a = app();
        for p in ["one", "two"] {
            typed(&mut a, p, t);
            press(&mut a, KeyCode::Enter, NONE, t);
        }
        typed(&mut a, "x", t);
        press(&mut a, KeyCode::Char('j'), CTRL, t);
        typed(&mut a, "y", t);
        press(&mut a, KeyCode::Up, NONE, t);
        assert_eq!(
            a.composer.text(),
            "x\ny",
            "Up on the second line moves the cursor"
        );
        press(&mut a, KeyCode::Up, NONE, t);
        assert_eq!(a.composer.text(), "two");
        press(&mut a, KeyCode::Up, NONE, t);
        assert_eq!(a.composer.text(), "one");
        press(&mut a, KeyCode::Down, NONE, t);
        press(&mut a, KeyCode::Down, NONE, t);
        assert_eq!(a.composer.text(), "x\ny", "the draft comes back");
    }

    #[test]
    fn home_and_end_scroll_on_an_empty_input_and_edit_otherwise() {
        let t = Instant::now();
        let mut a = app();
        press(&mut a, KeyCode::Home, NONE, t);
        assert!(!a.viewport.following());
        press(&mut a, KeyCode::End, NONE, t);
        assert!(a.viewport.following());
        typed(&mut a, "abc", t);
        press(&mut a, KeyCode::Home, NONE, t);
        assert_eq!(a.composer.cursor(), 0);
        assert!(a.viewport.following());
        press(&mut a, KeyCode::Home, CTRL, t);
        assert!(!a.viewport.following(), "Ctrl+Home always scrolls");
    }

    #[test]
    fn slash_commands() {
        let t = Instant::now();
        let mut a = app();
        typed(&mut a, "/model qwen3:8b", t);
        assert_eq!(
            press(&mut a, KeyCode::Enter, NONE, t),
            [Effect::Send(Command::SetModel {
                model: "qwen3:8b".into()
            })]
        );
        typed(&mut a, "/clear", t);
        assert_eq!(
            press(&mut a, KeyCode::Enter, NONE, t),
            [Effect::Send(Command::Clear)]
        );
        typed(&mut a, "/bogus", t);
        press(&mut a, KeyCode::Enter, NONE, t);
        assert!(
            matches!(a.transcript.items().last(), Some(crate::tui::transcript::Item::Error(e)) if e.contains("/help"))
        );
        typed(&mut a, "/quit", t);
        press(&mut a, KeyCode::Enter, NONE, t);
        assert!(a.quit);
    }
}
