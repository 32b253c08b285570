//! The planner's events in the transcript: the plan pane ticking as steps start and finish and
//! rebuilt when the model rewrites the rest, and each step's sub-agent events (`Event::Step`)
//! shown as the step's own section under a header line.
//!
//! A step's sub-agent is a whole task of its own: it starts and ends, and numbers its rounds and
//! blocks from the start again. Its `TurnStarted` opens its section (never a user prompt) and
//! its `TurnFinished` closes it (never the task: only the task's own does). While its events
//! are applied, the transcript works on the step's rounds and section, and its panes are keyed
//! by the step too, so blocks of two steps never share a pane.
//!
//! Pure state, as the transcript; it must not draw.

use std::time::Instant;

use super::rounds::{self, Abandoned, Rounds};
use super::{Item, PlanPane, StepHeader, Transcript};
use crate::agents::planner::MAX_REPLANS;
use crate::wire::{AgentName, Event, Outcome, PlanStep, StepStatus};

/// What the transcript keeps of the section of the step whose events came last.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// The step's id.
    id: String,
    /// The step's sub-agent's rounds.
    rounds: Rounds,
    /// Index of the first item of the step's sub-agent's task.
    start: usize,
}

impl Transcript {
    /// The plan parsed: its pane takes the place of the planner's replies that wrote it (the
    /// JSON and its headings say what the pane shows, better).
    pub(super) fn plan_arrived(&mut self, steps: &[PlanStep], notes: &[String]) {
        if self.streaming_answer.is_none() {
            let mut index = self.items.len();
            while index > self.task_start {
                index -= 1;
                if matches!(&self.items[index], Item::Answer(text) if holds_a_plan(text)) {
                    self.items.remove(index);
                    self.stamps.remove(index);
                    self.fix_indices_after_removal(index);
                    for later in index..self.items.len() {
                        self.touch(later);
                    }
                }
            }
        }
        self.push(Item::Plan(PlanPane::new(steps, notes)));
    }

    /// Step `id` starts: the plan marks it running and its section begins.
    pub(super) fn step_started(&mut self, id: &str, agent: AgentName, task: &str, now: Instant) {
        self.end_round(now);
        self.set_plan_status(id, StepStatus::Running);
        self.open_section(id, Some(agent), task);
    }

    /// Step `id` ended: the plan and its header show how, and a failure says why.
    pub(super) fn step_finished(&mut self, id: &str, success: bool, summary: &str) {
        let status = if success {
            StepStatus::Done
        } else {
            StepStatus::Failed
        };
        self.set_plan_status(id, status);
        if let Some(at) = self.step_header(id)
            && let Item::Step(header) = &mut self.items[at]
        {
            header.status = status;
            self.touch(at);
        }
        if !success {
            let why = summary.trim();
            self.push(Item::Notice(if why.is_empty() {
                format!("step {id} failed")
            } else {
                format!("step {id} failed: {why}")
            }));
        }
        if self.section.as_ref().is_some_and(|s| s.id == id) {
            self.section = None;
        }
    }

    /// The model rewrote the plan after a failed step: the pane shows the new plan, and a rule
    /// marks where it happened.
    pub(super) fn replanned(&mut self, steps: &[PlanStep], replans: u32, reason: &str) {
        match self.plan_item() {
            Some(at) => {
                if let Item::Plan(plan) = &mut self.items[at] {
                    plan.replan(steps, replans, reason);
                }
                self.touch(at);
            }
            None => {
                let mut plan = PlanPane::new(steps, &[]);
                plan.replan(steps, replans, reason);
                self.push(Item::Plan(plan));
            }
        }
        let reason = reason.lines().next().unwrap_or_default();
        self.push(Item::Rule(format!(
            "replanned ({replans}/{MAX_REPLANS}) · {reason}"
        )));
    }

    /// The task ended: its plan shows each step's last status (`last`, when the task gave it),
    /// and a step header still running did not finish.
    pub(super) fn plan_finished(&mut self, last: Option<&[PlanStep]>) {
        let Some(at) = self.plan_item() else {
            return;
        };
        if let Item::Plan(plan) = &mut self.items[at] {
            plan.finish(last);
        }
        self.touch(at);
        let Item::Plan(plan) = &self.items[at] else {
            return;
        };
        let finals: Vec<(String, StepStatus)> = plan
            .steps
            .iter()
            .map(|s| (s.id.clone(), s.status))
            .collect();
        for index in at..self.items.len() {
            if let Item::Step(header) = &mut self.items[index]
                && header.status == StepStatus::Running
            {
                header.status = finals
                    .iter()
                    .find(|(id, _)| *id == header.id)
                    .map_or(StepStatus::Skipped, |(_, s)| *s);
                self.touch(index);
            }
        }
    }

    /// One event of step `id`'s sub-agent.
    pub(super) fn apply_step(&mut self, id: &str, event: &Event, now: Instant) {
        match event {
            Event::TurnStarted { prompt, agent, .. } => {
                self.fill_header(id, *agent, prompt);
                self.in_section(id, |t| {
                    t.end_round(now);
                    t.rounds.start_task();
                    t.task_start = t.items.len();
                });
            }
            Event::TurnFinished {
                outcome, message, ..
            } => {
                // Nothing to close when the step's section is over already.
                if self.section.as_ref().is_some_and(|s| s.id == id) {
                    self.in_section(id, |t| {
                        t.step_turn_finished(*outcome, message.as_deref(), now)
                    });
                }
            }
            // A sub-agent neither plans nor clears the screen, resumes or lists anything: only
            // the task's own events may (and a step inside a step is not a thing).
            Event::Step { .. }
            | Event::Routed { .. }
            | Event::Plan { .. }
            | Event::StepStarted { .. }
            | Event::StepFinished { .. }
            | Event::Replanned { .. }
            | Event::Cleared
            | Event::Resumed { .. }
            | Event::SessionStarted { .. }
            | Event::SessionList { .. }
            | Event::ModelList { .. }
            | Event::ModelChanged { .. } => {}
            other => self.in_section(id, |t| t.apply(other, now)),
        }
    }

    /// Runs `change` on step `id`'s section: its rounds, its start and its panes. A step whose
    /// events came without its `StepStarted` gets a section (and a header) here.
    fn in_section(&mut self, id: &str, change: impl FnOnce(&mut Self)) {
        if self.section.as_ref().is_none_or(|s| s.id != id) {
            self.open_section(id, None, "");
        }
        let Some(mut section) = self.section.take() else {
            return;
        };
        std::mem::swap(&mut self.rounds, &mut section.rounds);
        std::mem::swap(&mut self.task_start, &mut section.start);
        self.step = Some(section.id.clone());
        change(self);
        self.step = None;
        std::mem::swap(&mut self.rounds, &mut section.rounds);
        std::mem::swap(&mut self.task_start, &mut section.start);
        self.section = Some(section);
    }

    /// The step's header line, and a fresh section after it.
    fn open_section(&mut self, id: &str, agent: Option<AgentName>, task: &str) {
        self.end_round_quietly();
        self.push(Item::Step(StepHeader::new(id, agent, task)));
        self.section = Some(Section {
            id: id.to_owned(),
            rounds: Rounds::default(),
            start: self.items.len(),
        });
    }

    /// A header opened without its `StepStarted` learns its agent and task from the
    /// sub-agent's `TurnStarted`.
    fn fill_header(&mut self, id: &str, agent: AgentName, prompt: &str) {
        if self.section.as_ref().is_none_or(|s| s.id != id) {
            self.open_section(id, Some(agent), prompt.lines().next().unwrap_or_default());
            return;
        }
        if let Some(at) = self.step_header(id)
            && let Item::Step(header) = &mut self.items[at]
            && header.agent.is_none()
        {
            header.agent = Some(agent);
            prompt
                .lines()
                .next()
                .unwrap_or_default()
                .clone_into(&mut header.task);
            self.touch(at);
        }
    }

    /// The step's sub-agent ended (in its section): its open panes will not run, and its
    /// question is shown. How the step went is the step's `StepFinished` to say.
    fn step_turn_finished(&mut self, outcome: Outcome, message: Option<&str>, now: Instant) {
        self.end_round(now);
        let why = if outcome == Outcome::Stopped {
            Abandoned::Stopped
        } else {
            Abandoned::Ended
        };
        self.abandon_open_panes(self.task_start, None, why);
        if outcome == Outcome::NeedsClarification && !self.rounds.asked {
            let question = rounds::question(message.unwrap_or_default());
            if !question.is_empty() {
                self.push(Item::Question(question));
            }
        }
    }

    /// Streams of the previous agent end where a step's section begins (no clock needed: a
    /// live reasoning panel is closed by the next real round end).
    fn end_round_quietly(&mut self) {
        self.streaming_answer = None;
    }

    fn set_plan_status(&mut self, id: &str, status: StepStatus) {
        if let Some(at) = self.plan_item()
            && let Item::Plan(plan) = &mut self.items[at]
            && plan.set_status(id, status)
        {
            self.touch(at);
        }
    }

    /// The task's plan pane (the last one of the task).
    fn plan_item(&self) -> Option<usize> {
        (self.task_start..self.items.len())
            .rev()
            .find(|&i| matches!(self.items[i], Item::Plan(_)))
    }

    /// The header of step `id` in this task.
    fn step_header(&self, id: &str) -> Option<usize> {
        (self.task_start..self.items.len())
            .rev()
            .find(|&i| matches!(&self.items[i], Item::Step(h) if h.id == id))
    }
}

/// Whether a reply of the planner's holds the plan's JSON.
fn holds_a_plan(text: &str) -> bool {
    text.contains("\"plan\"")
}

#[cfg(test)]
#[path = "transcript_steps_tests.rs"]
mod tests;
