//! The terminal UI's state and its update step: keys, pastes, mouse and agent events in;
//! commands for the agent out.
//!
//! Owns focus, the quit gesture, transient hints and the chosen agent, and routes input to the
//! transcript, the viewport, the input box and the history; the popup, the pickers, `/help`,
//! the queue and copying live in `app_popups.rs`, a resumed session's replay in
//! `app_session.rs`. It must not do I/O (beyond what `History` does, and listing the work dir's
//! names when an `@` completion begins), read the clock or draw: every update is given its
//! time, the event loop carries out its effects and the screen module draws it.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use crate::agent::{ApprovalDecision, ApprovalId, Command, Event};
use crate::clipboard::Part;
use crate::composer::Composer;
use crate::config::{AgentName, Approval};
use crate::files::FileWrite;
use crate::help::HelpView;
use crate::history::History;
use crate::mcp_view::McpView;
use crate::picker::{Listed, Models, Picker, PickerKind};
use crate::popup::Popup;
use crate::render::viewport::Viewport;
use crate::slash::{self, Slash};
use crate::status::StatusLine;
use crate::transcript::Transcript;

/// A second Ctrl+C within this quits.
const QUIT_WINDOW: Duration = Duration::from_secs(2);
/// How long a hint stays in the status line.
const HINT_TIME: Duration = Duration::from_secs(4);
/// The hint while a stop is on its way (dropped once the task has stopped).
const STOPPING: &str = "stopping…";
/// Rows one mouse wheel step scrolls.
const WHEEL_ROWS: usize = 3;

/// What the event loop must do after an update.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Send(Command),
    /// A file write (prompt history) for the background writer.
    Write(FileWrite),
    /// Open the awaiting block's code in the user's editor, then answer question `id` with the
    /// result.
    Edit {
        id: ApprovalId,
        tool: String,
        code: String,
    },
    /// Put this text on the terminal's clipboard (OSC 52).
    Clipboard(String),
}

/// What covers the transcript and takes the keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    Help(HelpView),
    Picker(Picker),
    /// `/mcp`: the servers in `App::mcp`.
    Mcp(McpView),
}

/// The block waiting for the user's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Awaiting {
    /// The question's id, which the answer carries back.
    pub id: ApprovalId,
    /// The block's tool tag.
    pub tool: String,
    pub code: String,
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
    /// How blocks are confined, for the header (`None`: not shown).
    pub sandbox: Option<crate::render::header::SandboxBadge>,
    /// The approval policy (`None`: not shown).
    pub approval: Option<Approval>,
    /// The block waiting for the user's decision.
    pub awaiting: Option<Awaiting>,
    /// Tells an unfocused user that a long task ended.
    pub notifier: crate::notify::Notifier,
    hint: Option<(String, Instant)>,
    quit_armed: Option<Instant>,
    pub quit: bool,
    /// The work dir itself (`work_dir` is its short form), for `@` completion.
    pub work_path: std::path::PathBuf,
    /// `/help` or a picker, over the transcript.
    pub overlay: Option<Overlay>,
    pub popup: Popup,
    pub models: Listed<Models>,
    pub sessions: Listed<Vec<crate::agent::SessionEntry>>,
    /// The MCP servers, as the runtime last reported them.
    pub mcp: Listed<Vec<crate::wire::McpServerInfo>>,
    /// Prompts typed while a task ran, sent one by one as tasks end.
    pub queue: Vec<String>,
    /// A prompt was sent and its task has not started yet: more prompts wait in the queue.
    submitted: bool,
    /// The item (and pane part) Ctrl+Y copied last: pressing it again copies the other part.
    copied: Option<(usize, Part)>,
    /// Effects of agent events (a queued prompt to send), for the event loop to take.
    pending: Vec<Effect>,
    /// The session this run saves to: its file (written once the model first answers), or
    /// `Resumed` for a continued one (on the disk already). `None`: nothing saved yet.
    pub session: Option<session::SessionSeen>,
    /// Large pastes shown as `[pasted N lines]`, and prompts sent with them.
    pub pastes: crate::paste::Pastes,
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
            sandbox: None,
            approval: None,
            awaiting: None,
            notifier: crate::notify::Notifier::default(),
            hint: None,
            quit_armed: None,
            quit: false,
            work_path: std::path::PathBuf::from("."),
            overlay: None,
            popup: Popup::default(),
            models: Listed::default(),
            sessions: Listed::default(),
            mcp: Listed::default(),
            queue: Vec::new(),
            submitted: false,
            copied: None,
            pending: Vec::new(),
            session: None,
            pastes: crate::paste::Pastes::default(),
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
    pub(crate) fn animating(&self, now: Instant) -> bool {
        self.running() || self.hint(now).is_some()
    }

    fn say(&mut self, hint: impl Into<String>, now: Instant) {
        self.hint = Some((hint.into(), now));
    }

    pub fn agent_event(&mut self, event: &Event, now: Instant) {
        // A prompt sent with large pastes is shown with their labels.
        let shown = match event {
            Event::TurnStarted {
                turn,
                prompt,
                agent,
            } => self.pastes.shown(prompt).map(|prompt| Event::TurnStarted {
                turn: *turn,
                prompt,
                agent: *agent,
            }),
            _ => None,
        };
        self.transcript.apply(shown.as_ref().unwrap_or(event), now);
        self.status.apply(event, now);
        // Once stopped, "stopping…" is over: the status line says so on its own.
        if !self.running()
            && self
                .hint
                .as_ref()
                .is_some_and(|(hint, _)| hint.starts_with(STOPPING))
        {
            self.hint = None;
        }
        self.approval_event(event);
        match event {
            // A plan step's sub-agent asks for approvals too; its start and end are not the
            // task's.
            Event::Step { event: inner, .. } => self.approval_event(inner),
            Event::ApprovalChanged { approval } => self.approval = Some(*approval),
            Event::TurnFinished { outcome, .. } => {
                self.awaiting = None;
                if let Some(took) = self.status.elapsed(now) {
                    self.notifier.task_ended(took, *outcome);
                }
            }
            Event::ModelChanged { description } => self.model.clone_from(description),
            Event::SessionStarted { path, .. } => {
                self.session = Some(session::SessionSeen::Started(path.into()));
            }
            Event::ModelSize { small, reason, .. } => {
                let size = if *small { "small" } else { "large" };
                self.say(format!("treated as a {size} model ({reason})"), now);
            }
            Event::Cleared => {
                self.focus = None;
                self.viewport = Viewport::default();
            }
            Event::Resumed {
                id,
                turns,
                warnings,
                replay,
            } => {
                self.session = Some(session::SessionSeen::Resumed);
                self.replay(id, *turns, warnings, replay, now);
            }
            _ => {}
        }
        self.input_event(event);
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

    /// A block waits for the user's decision, or the waiting is over.
    fn approval_event(&mut self, event: &Event) {
        match event {
            Event::ApprovalRequested { id, tool, code, .. } => {
                self.awaiting = Some(Awaiting {
                    id: *id,
                    tool: tool.clone(),
                    code: code.clone(),
                });
            }
            Event::BlockStarted { .. } | Event::BlockFinished { .. } => self.awaiting = None,
            _ => {}
        }
    }

    /// The editor opened on question `id`'s block closed with `edited`: the edited code
    /// answers the question if it still waits; a failed edit leaves it waiting.
    pub fn edited(
        &mut self,
        id: ApprovalId,
        edited: Result<String, String>,
        now: Instant,
    ) -> Vec<Effect> {
        match edited {
            Err(message) => {
                self.transcript.error(message);
                Vec::new()
            }
            Ok(code) if self.awaiting.as_ref().is_some_and(|a| a.id == id) => {
                self.awaiting = None;
                let decision = ApprovalDecision::Edit { code };
                vec![Effect::Send(Command::Approve { id, decision })]
            }
            Ok(_) => {
                self.say("the block no longer waits: the edit was not used", now);
                Vec::new()
            }
        }
    }

    /// The terminal reported that it gained (`true`) or lost the focus.
    pub(crate) fn focus_changed(&mut self, focused: bool) {
        self.notifier.focus_changed(focused);
    }

    /// Pasted text goes into the prompt box; a large paste as a label (`[pasted 4,000 lines]`)
    /// that is sent as the whole text.
    pub fn paste(&mut self, text: &str) {
        self.focus = None;
        let clean = crate::composer::clean(text);
        match self.pastes.hold(&clean) {
            Some(label) => self.composer.insert(&label),
            None => self.composer.insert(&clean),
        }
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
        if let Some(effects) = self.overlay_key(key, ctrl || alt) {
            return effects;
        }
        if let Some(effects) = self.approval_key(key.code, ctrl || alt) {
            return effects;
        }
        if key.code == KeyCode::Char('y') && ctrl {
            return self.copy();
        }
        if !ctrl
            && !alt
            && let Some(effects) = self.popup_key(key.code, now)
        {
            return effects;
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
            KeyCode::Esc if self.composer.is_empty() => self.clear_queue(now),
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
                self.viewport.scroll_to_end()
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
        self.after_edit()
    }

    /// y, n, a and e answer a waiting approval while the input box is empty.
    fn approval_key(&mut self, code: KeyCode, modified: bool) -> Option<Vec<Effect>> {
        let awaiting = self.awaiting.as_ref()?;
        if modified || !self.composer.is_empty() {
            return None;
        }
        let id = awaiting.id;
        let decision = match code {
            KeyCode::Char('y') => ApprovalDecision::Run,
            KeyCode::Char('n') => ApprovalDecision::Decline,
            KeyCode::Char('a') => ApprovalDecision::Always,
            KeyCode::Char('e') => {
                return Some(vec![Effect::Edit {
                    id,
                    tool: awaiting.tool.clone(),
                    code: awaiting.code.clone(),
                }]);
            }
            _ => return None,
        };
        self.awaiting = None;
        Some(vec![Effect::Send(Command::Approve { id, decision })])
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
            self.pastes.forget_held();
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
            if self.queue.is_empty() {
                self.say("nothing is running", now);
            } else {
                self.clear_queue(now);
            }
            return Vec::new();
        }
        let dropped = std::mem::take(&mut self.queue).len();
        if dropped > 0 {
            self.say(format!("{STOPPING} ({dropped} queued dropped)"), now);
        } else {
            self.say(STOPPING, now);
        }
        vec![Effect::Send(Command::Stop)]
    }

    fn retry(&mut self, now: Instant) -> Vec<Effect> {
        if self.running() {
            self.say("a task is running: Esc stops it", now);
            return Vec::new();
        }
        self.viewport.scroll_to_end();
        vec![Effect::Send(Command::Retry)]
    }

    fn submit(&mut self, now: Instant) -> Vec<Effect> {
        let typed = self.composer.text().to_owned();
        if typed.trim().is_empty() {
            return Vec::new();
        }
        // What is sent: every large paste in full.
        let text = self.pastes.expand(&typed);
        if let Some(command) = text.trim_start().strip_prefix('!') {
            return self.shell(command.trim().to_owned(), now);
        }
        if text.trim_start().starts_with('/') && !text.trim().contains('\n') {
            let mut effects = self.take_into_history();
            match slash::parse(&text) {
                Ok(command) => effects.extend(self.slash(command, now)),
                Err(message) => self.transcript.error(message),
            }
            return effects;
        }
        if self.busy() {
            // It goes when the task ends.
            let effects = self.take_into_history();
            self.pastes.sent(&text, &typed);
            self.queue.push(text);
            self.say(
                "queued: sent when the task ends · Esc stops and clears",
                now,
            );
            return effects;
        }
        let mut effects = self.take_into_history();
        self.viewport.scroll_to_end();
        self.submitted = true;
        self.pastes.sent(&text, &typed);
        effects.push(Effect::Send(Command::Submit {
            prompt: text,
            agent: Some(self.agent),
            context: None,
        }));
        effects
    }

    /// Empties the input box into the history; the effects write the history file.
    fn take_into_history(&mut self) -> Vec<Effect> {
        let typed = self.composer.take();
        // Recalled later, a prompt holds its pastes, not labels that stand for nothing then.
        let text = self.pastes.expand(&typed);
        self.pastes.forget_held();
        self.history
            .push(&text)
            .map(Effect::Write)
            .into_iter()
            .collect()
    }

    fn slash(&mut self, command: Slash, now: Instant) -> Vec<Effect> {
        self.viewport.scroll_to_end();
        match command {
            Slash::Help => self.overlay = Some(Overlay::Help(HelpView::default())),
            Slash::Agent(Some(agent)) => {
                self.agent = agent;
                self.transcript.notice(slash::agent_chosen(agent));
            }
            Slash::Agent(None) => return self.open_picker(PickerKind::Agent),
            Slash::Model(Some(model)) => return vec![Effect::Send(Command::SetModel { model })],
            Slash::Model(None) => return self.open_picker(PickerKind::Model),
            Slash::Retry => return self.retry(now),
            Slash::Stop => return self.stop(now),
            Slash::Clear => return vec![Effect::Send(Command::Clear)],
            Slash::New => return vec![Effect::Send(Command::NewSession)],
            Slash::Resume(None) => return self.open_picker(PickerKind::Session),
            Slash::Resume(Some(id)) => return vec![Effect::Send(Command::Resume { id: Some(id) })],
            Slash::Mcp => return self.open_mcp(),
            Slash::Quit => self.quit = true,
        }
        Vec::new()
    }
}

#[path = "app_popups.rs"]
mod popups;

#[path = "app_session.rs"]
pub mod session;

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "app_shell_tests.rs"]
mod shell_tests;
