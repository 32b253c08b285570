//! The transcript the terminal UI shows, built from agent events.
//!
//! Owns the items (prompts, reasoning panels, answer text, execution panes, errors, notices),
//! their fold state and a stamp per item that changes whenever the item does (views cache by
//! it). Pure state: it must not draw, read the keyboard, read the clock or do I/O; the caller
//! passes the time of each event, so every state of every item can be built in a test.
//!
//! No pane outlives its task saying "waiting": a pane whose block got no record (a cut reply, a
//! stopped task, a round that moved on) ends as `Abandoned`. Blocks that never ran are folded
//! to their header line. Each round after the first begins with a rule naming it, and the
//! model's question is shown once, as a question.

use std::time::Instant;

use crate::agent::{BlockRecord, Event, Outcome};
use crate::protocol::placeholder_index;

#[path = "transcript_rounds.rs"]
mod rounds;

use rounds::Rounds;
pub use rounds::{Abandoned, ReplyCut};

#[path = "transcript_pane.rs"]
mod pane;

#[path = "transcript_steps.rs"]
mod steps;

#[path = "transcript_web.rs"]
mod web;

pub use crate::plan_pane::{PlanPane, StepHeader};
pub use crate::web_pane::WebPane;
#[cfg(test)]
use pane::LIVE_OUTPUT_LIMIT;
pub use pane::{Pane, PaneState};

/// A reasoning panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Reasoning {
    pub text: String,
    /// The model is still thinking.
    pub live: bool,
    pub expanded: bool,
    pub since: Instant,
    /// When the thinking stopped (the answer began); `None` while live.
    pub until: Option<Instant>,
}

/// One item of the transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    User(String),
    Reasoning(Reasoning),
    Answer(String),
    Pane(Pane),
    Error(String),
    /// Something seek says: how a task ended when it did not simply succeed, a changed model, …
    Notice(String),
    /// The model's question to the user (`REQUEST_CLARIFICATION`, without the word).
    Question(String),
    /// A thin rule where a round after the first begins, naming it.
    Rule(String),
    /// The agent the router picked for the task, and why.
    Routed(crate::wire::Route),
    /// The planner's plan, ticking as its steps run.
    Plan(PlanPane),
    /// Where a plan step's own section begins.
    Step(StepHeader),
    /// A search, page read or form of the web agent.
    Web(WebPane),
}

impl Item {
    /// Panes and reasoning panels can be folded and focused.
    pub(crate) fn is_foldable(&self) -> bool {
        matches!(
            self,
            Item::Pane(_) | Item::Reasoning(_) | Item::Plan(_) | Item::Web(_)
        )
    }
}

/// The transcript.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    items: Vec<Item>,
    /// `stamps[i]` changes whenever `items[i]` does; never reused.
    stamps: Vec<u64>,
    next_stamp: u64,
    /// Items removed by `/clear`, kept for the plain copy printed on exit.
    cleared: Vec<Item>,
    /// Index of the answer item being streamed this round.
    streaming_answer: Option<usize>,
    /// Index of this round's reasoning panel.
    streaming_reasoning: Option<usize>,
    /// Counts streamed answers (see `streaming_answer_id`).
    answer_generation: u64,
    /// Whether new reasoning panels start unfolded (Ctrl+T).
    pub reasoning_expanded: bool,
    /// Whether finished panes are unfolded (Ctrl+O); a failed pane always starts unfolded.
    pub panes_expanded: bool,
    /// The running task's rounds.
    rounds: Rounds,
    /// Index of the first item of the running (or last) task: its panes are the ones that may
    /// still be open.
    task_start: usize,
    /// The plan step whose sub-agent's event is being applied (`None`: the task's own).
    step: Option<String>,
    /// The section of the plan step whose events came last.
    section: Option<steps::Section>,
}

impl Transcript {
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The stamp of item `index`: equal stamps mean an unchanged item.
    pub(crate) fn stamp(&self, index: usize) -> u64 {
        self.stamps.get(index).copied().unwrap_or(u64::MAX)
    }

    /// Items `/clear` took off the screen, oldest first.
    pub fn cleared(&self) -> &[Item] {
        &self.cleared
    }

    /// Whether item `index` changes with time or with the stream (not worth caching).
    pub(crate) fn is_live(&self, index: usize) -> bool {
        self.streaming_answer == Some(index)
            || match self.items.get(index) {
                Some(Item::Reasoning(r)) => r.live,
                Some(Item::Pane(p)) => matches!(p.state, PaneState::Running { .. }),
                _ => false,
            }
    }

    /// Applies one agent event that happened at `now`.
    pub fn apply(&mut self, event: &Event, now: Instant) {
        match event {
            Event::TurnStarted { prompt, .. } => {
                self.end_round(now);
                self.rounds.start_task();
                self.section = None;
                self.task_start = self.items.len();
                self.push(Item::User(prompt.clone()));
            }
            Event::Status {
                round,
                attempt,
                max_attempts,
                ..
            } => self.begin_round(*round, Some((*attempt, *max_attempts))),
            Event::ReasoningDelta { text } => self.reasoning_arrived(text, now),
            Event::AnswerDelta { text } => self.answer_arrived(text, now),
            Event::AnswerWasReasoning => self.answer_was_reasoning(now),
            Event::AnswerComplete {
                round,
                answer,
                finish,
                ..
            } => {
                // A replayed session has no statuses: its replies say where rounds begin.
                if self.streaming_answer.is_none() {
                    self.begin_round(*round, None);
                }
                self.complete_answer(*round, answer, now);
                self.reply_finished(*round, finish);
            }
            Event::BlockStarted {
                round,
                index,
                tool,
                code,
                save_path,
            } => {
                if *round == self.rounds.round
                    && let Some((_, ran)) = &mut self.rounds.last_reply
                {
                    *ran = true;
                }
                let at = self.pane_or_new(*round, *index);
                self.update_pane(at, |pane| {
                    pane.show_block(tool, code, save_path);
                    pane.state = PaneState::Running { since: now };
                });
            }
            Event::BlockOutput { round, index, text } => {
                if let Some(at) = self.pane_index(*round, *index) {
                    self.update_pane(at, |pane| pane.append_output(text));
                }
            }
            Event::BlockFinished { record } => self.block_finished(record),
            Event::ApprovalRequested {
                round,
                index,
                tool,
                code,
                save_path,
                ..
            } => {
                if let Some(at) = self.pane_index(*round, *index) {
                    self.update_pane(at, |pane| {
                        pane.show_block(tool, code, save_path);
                        pane.state = PaneState::AwaitingApproval;
                        pane.expanded = true;
                    });
                }
            }
            Event::BlocksNotRun { count, limit, .. } => self.push(Item::Notice(format!(
                "{count} more blocks in this reply were not run: seek runs at most {limit} per reply"
            ))),
            Event::BlocksAgentCannotRun {
                agent,
                tools,
                can_run,
                ..
            } => {
                let foreign = crate::agent::foreign::Foreign {
                    tools: tools.clone(),
                    can_run: *can_run,
                };
                let words = crate::agent::foreign::for_user(*agent, &foreign, |other| {
                    format!("/agent {other}")
                });
                self.push(Item::Error(format!("not run: {words}")));
            }
            Event::ApprovalChanged { approval } => self.push(Item::Notice(format!(
                "approval: {approval} for the rest of this session"
            ))),
            Event::Error { message } => self.push(Item::Error(message.clone())),
            Event::ModelChanged { description } => {
                self.push(Item::Notice(format!("model: {description}")))
            }
            Event::Cleared => {
                self.archive(now);
                self.push(Item::Notice(
                    "conversation cleared: the model starts afresh".into(),
                ));
            }
            Event::TurnFinished {
                outcome,
                message,
                plan,
                web,
                answer,
                ..
            } => {
                self.section = None;
                // A plan's or the web agent's answer is shown by their own items.
                // A stopped or failed stream's partial answer is on screen as it streamed.
                let whole = matches!(
                    outcome,
                    Outcome::Done | Outcome::GaveUp | Outcome::RoundLimit
                );
                if whole && plan.is_none() && web.is_none() {
                    self.final_answer(answer);
                }
                self.turn_finished(*outcome, message.as_deref(), now);
                self.plan_finished(plan.as_deref());
            }
            Event::Routed { route } => self.push(Item::Routed(route.clone())),
            Event::Plan { steps, notes } => self.plan_arrived(steps, notes),
            Event::StepStarted { id, agent, task } => self.step_started(id, *agent, task, now),
            Event::StepFinished { id, success, summary } => {
                self.step_finished(id, *success, summary)
            }
            Event::Replanned {
                steps,
                replans,
                reason,
            } => self.replanned(steps, *replans, reason),
            Event::Step { step, event } => self.apply_step(step, event, now),
            Event::BrowserStarted { .. }
            | Event::WebSearch { .. }
            | Event::PageRead { .. }
            | Event::FormSubmitted { .. }
            | Event::Note { .. } => self.web_event(event),
            // Resuming replaces the transcript (the app replays it); the others are for the
            // status line.
            Event::Retrying { .. }
            | Event::ModelPreparing { .. }
            | Event::SessionStarted { .. }
            | Event::Resumed { .. }
            | Event::SessionList { .. }
            | Event::ModelList { .. }
            | Event::McpServers { .. }
            | Event::ModelSize { .. }
            | Event::Attached { .. }
            | Event::Usage { .. }
            | Event::ContextTrimmed { .. } => {}
        }
    }

    /// Reasoning text streamed in: it goes to this round's panel, which is live again.
    fn reasoning_arrived(&mut self, text: &str, now: Instant) {
        let index = self.reasoning_panel(now);
        if let Item::Reasoning(r) = &mut self.items[index] {
            r.text.push_str(text);
            r.live = true;
            r.until = None;
        }
        self.touch(index);
    }

    /// Answer text streamed in: the thinking is over, and the text grows the streamed answer.
    fn answer_arrived(&mut self, text: &str, now: Instant) {
        self.stop_thinking(now);
        let index = self.answer_item();
        if let Item::Answer(t) = &mut self.items[index] {
            t.push_str(text);
        }
        self.touch(index);
    }

    /// A late `</think>`: the answer streamed so far moves to the front of the reasoning panel.
    fn answer_was_reasoning(&mut self, now: Instant) {
        let Some(index) = self.streaming_answer.take() else {
            return;
        };
        let moved = match self.items.remove(index) {
            Item::Answer(text) => text,
            _ => String::new(),
        };
        self.stamps.remove(index);
        self.fix_indices_after_removal(index);
        let panel = self.reasoning_panel(now);
        if let Item::Reasoning(r) = &mut self.items[panel] {
            r.text.insert_str(0, &moved);
            r.live = true;
            r.until = None;
        }
        self.touch(panel);
    }

    /// A block's result: its pane shows the record, folded if it succeeded or never ran.
    fn block_finished(&mut self, record: &BlockRecord) {
        self.rounds.block_finished(record);
        let Some(at) = self.pane_index(record.round, record.index) else {
            return;
        };
        let panes_expanded = self.panes_expanded;
        self.update_pane(at, |pane| {
            pane.output.clone_from(&record.output);
            // A successful pane collapses; a failed one stays open; one that never ran is a
            // line (its header says why).
            let folded = record.success || rounds::did_not_run(record);
            pane.expanded = !folded || panes_expanded;
            if pane.tool.is_empty() {
                pane.tool.clone_from(&record.tool_type);
                pane.code.clone_from(&record.block);
            }
            pane.state = PaneState::Finished(Box::new(record.clone()));
        });
    }

    /// The pane of block `index` of `round`, added (pending) if the answer had no placeholder
    /// for it.
    fn pane_or_new(&mut self, round: u32, index: usize) -> usize {
        if let Some(at) = self.pane_index(round, index) {
            return at;
        }
        self.push(Item::Pane(Pane::pending(
            self.step.clone(),
            round,
            index,
            self.panes_expanded,
        )));
        self.items.len() - 1
    }

    /// Changes the pane at item `at` (nothing if it is not a pane) and marks it changed.
    fn update_pane(&mut self, at: usize, change: impl FnOnce(&mut Pane)) {
        if let Some(Item::Pane(pane)) = self.items.get_mut(at) {
            change(pane);
            self.touch(at);
        }
    }

    /// Moves everything on screen to the part printed on exit only (a resumed session takes
    /// the screen).
    pub(crate) fn archive(&mut self, now: Instant) {
        self.end_round(now);
        self.cleared.append(&mut self.items);
        self.stamps.clear();
        self.task_start = 0;
        self.section = None;
    }

    /// Adds a notice of seek's own (slash commands, hints).
    pub fn notice(&mut self, text: impl Into<String>) {
        self.push(Item::Notice(text.into()));
    }

    /// Adds an error of seek's own.
    pub fn error(&mut self, text: impl Into<String>) {
        self.push(Item::Error(text.into()));
    }

    /// Unfolds or folds item `index` if it is foldable.
    pub(crate) fn toggle(&mut self, index: usize) {
        match self.items.get_mut(index) {
            Some(Item::Pane(pane)) => pane.expanded = !pane.expanded,
            Some(Item::Reasoning(r)) => r.expanded = !r.expanded,
            Some(Item::Plan(plan)) => plan.expanded = !plan.expanded,
            Some(Item::Web(web)) => web.expanded = !web.expanded,
            _ => return,
        }
        self.touch(index);
    }

    /// Folds or unfolds every reasoning panel (Ctrl+T).
    pub(crate) fn toggle_all_reasoning(&mut self) {
        self.reasoning_expanded = !self.reasoning_expanded;
        let expanded = self.reasoning_expanded;
        self.set_expanded(expanded, |item| match item {
            Item::Reasoning(r) => Some(&mut r.expanded),
            _ => None,
        });
    }

    /// Collapses or expands every execution and web pane (Ctrl+O).
    pub(crate) fn toggle_all_panes(&mut self) {
        self.panes_expanded = !self.panes_expanded;
        let expanded = self.panes_expanded;
        self.set_expanded(expanded, |item| match item {
            Item::Pane(p) => Some(&mut p.expanded),
            Item::Web(w) => Some(&mut w.expanded),
            _ => None,
        });
    }

    /// Sets the fold flag `flag` picks out of each item that has one.
    fn set_expanded(&mut self, expanded: bool, flag: impl Fn(&mut Item) -> Option<&mut bool>) {
        for index in 0..self.items.len() {
            if let Some(f) = flag(&mut self.items[index]) {
                *f = expanded;
                self.touch(index);
            }
        }
    }

    /// Indices of the foldable items, newest first (Tab order).
    pub fn foldable(&self) -> Vec<usize> {
        (0..self.items.len())
            .rev()
            .filter(|&i| self.items[i].is_foldable())
            .collect()
    }

    fn push(&mut self, item: Item) {
        self.items.push(item);
        self.stamps.push(self.next_stamp);
        self.next_stamp += 1;
    }

    fn touch(&mut self, index: usize) {
        if let Some(stamp) = self.stamps.get_mut(index) {
            *stamp = self.next_stamp;
            self.next_stamp += 1;
        }
    }

    fn reasoning_panel(&mut self, now: Instant) -> usize {
        if let Some(index) = self.streaming_reasoning {
            return index;
        }
        self.push(Item::Reasoning(Reasoning {
            text: String::new(),
            live: true,
            expanded: self.reasoning_expanded,
            since: now,
            until: None,
        }));
        let index = self.items.len() - 1;
        self.streaming_reasoning = Some(index);
        index
    }

    fn answer_item(&mut self) -> usize {
        if let Some(index) = self.streaming_answer {
            return index;
        }
        self.push(Item::Answer(String::new()));
        let index = self.items.len() - 1;
        self.streaming_answer = Some(index);
        self.answer_generation += 1;
        index
    }

    /// An id of the answer being streamed at `index`, new for every streamed answer: within
    /// one, the text only grows at its end.
    pub(crate) fn streaming_answer_id(&self, index: usize) -> Option<u64> {
        (self.streaming_answer == Some(index)).then_some(self.answer_generation)
    }

    /// Replaces the streamed answer with its text segments and a pending pane per placeholder.
    fn complete_answer(&mut self, round: u32, answer: &str, now: Instant) {
        if let Some(index) = self.streaming_answer.take() {
            self.items.truncate(index);
            self.stamps.truncate(index);
        }
        self.stop_thinking(now);
        self.streaming_reasoning = None;
        let asks = rounds::asks(answer);
        self.rounds.asked |= asks;
        self.rounds.last_reply = Some((answer.to_owned(), false));
        let mut text = String::new();
        for line in answer.split_inclusive('\n') {
            match placeholder_index(line.trim_end()) {
                Some(index) => {
                    self.push_text(std::mem::take(&mut text), asks);
                    let step = self.step.clone();
                    self.push(Item::Pane(Pane::pending(
                        step,
                        round,
                        index,
                        self.panes_expanded,
                    )));
                }
                None => text.push_str(line),
            }
        }
        self.push_text(text, asks);
    }

    /// A piece of a completed answer; in an answer that asks the user something, the piece
    /// holding the question is shown as one (without the sentinel word).
    fn push_text(&mut self, text: String, asks: bool) {
        if asks && rounds::asks(&text) {
            let question = rounds::question(&text);
            if !question.is_empty() {
                self.push(Item::Question(question));
            }
        } else if !text.trim().is_empty() {
            self.push(Item::Answer(text.trim_end().to_owned()));
        }
    }

    /// The pane of block `index` of `round` of the agent whose event is being applied (a plan
    /// step's sub-agent numbers its rounds from 1 again).
    fn pane_index(&self, round: u32, index: usize) -> Option<usize> {
        self.items.iter().rposition(|item| {
            matches!(item, Item::Pane(p)
                if p.round == round && p.index == index && p.step == self.step)
        })
    }

    /// The answer began (or the round ended): this round's panel stops being live.
    fn stop_thinking(&mut self, now: Instant) {
        if let Some(index) = self.streaming_reasoning
            && let Some(Item::Reasoning(r)) = self.items.get_mut(index)
            && r.live
        {
            r.live = false;
            r.until = Some(now);
            self.touch(index);
        }
    }

    fn end_round(&mut self, now: Instant) {
        self.stop_thinking(now);
        self.streaming_reasoning = None;
        self.streaming_answer = None;
    }

    fn fix_indices_after_removal(&mut self, removed: usize) {
        if let Some(r) = self.streaming_reasoning.as_mut()
            && *r > removed
        {
            *r -= 1;
        }
    }
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
