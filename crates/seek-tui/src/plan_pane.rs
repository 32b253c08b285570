//! The planner's items in the transcript: the plan pane (a checklist of the plan's steps that
//! ticks as they run and is rebuilt when the model rewrites the rest) and the header line that
//! opens each step's own section.
//!
//! Pure state: it must not draw (`render::plan` does) or decide when steps change (the
//! transcript applies the planner's events to it). The steps are the model's words: whoever
//! shows them makes them terminal-safe.

use crate::wire::{AgentName, PlanStep, StepStatus};

/// The plan pane.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanPane {
    /// The plan as it stands, each step with its status.
    pub steps: Vec<PlanStep>,
    /// What was corrected in the model's plan (ids renumbered, needs dropped, …).
    pub notes: Vec<String>,
    /// The last rewrite: how many so far in the task, and why.
    pub replanned: Option<(u32, String)>,
    /// Unfolded: one line per step; folded: one line for the whole plan.
    pub expanded: bool,
}

impl PlanPane {
    /// A new plan: it starts unfolded, since it is what the user wants to follow.
    pub fn new(steps: &[PlanStep], notes: &[String]) -> Self {
        Self {
            steps: steps.to_vec(),
            notes: notes.to_vec(),
            replanned: None,
            expanded: true,
        }
    }

    /// Sets the status of step `id`; false when the plan has no such step.
    pub(crate) fn set_status(&mut self, id: &str, status: StepStatus) -> bool {
        match self.steps.iter_mut().find(|s| s.id == id) {
            Some(step) => {
                step.status = status;
                true
            }
            None => false,
        }
    }

    /// The model rewrote the plan (`steps` is the whole plan now).
    pub fn replan(&mut self, steps: &[PlanStep], replans: u32, reason: &str) {
        self.steps = steps.to_vec();
        self.replanned = Some((replans, reason.to_owned()));
    }

    /// The task ended: `last` is the plan with its final statuses, when the task said it. When
    /// it did not, the steps that never got a result did not run.
    pub fn finish(&mut self, last: Option<&[PlanStep]>) {
        match last {
            Some(steps) => self.steps = steps.to_vec(),
            None => {
                for step in &mut self.steps {
                    if matches!(step.status, StepStatus::Pending | StepStatus::Running) {
                        step.status = StepStatus::Skipped;
                    }
                }
            }
        }
    }

    /// Steps done, and steps in the plan.
    pub fn progress(&self) -> (usize, usize) {
        let done = self
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Done)
            .count();
        (done, self.steps.len())
    }

    /// The step running now, if one is.
    pub fn running(&self) -> Option<&PlanStep> {
        self.steps.iter().find(|s| s.status == StepStatus::Running)
    }
}

/// The line that opens a step's section: `step 2 · coder: <task>`.
#[derive(Debug, Clone, PartialEq)]
pub struct StepHeader {
    pub id: String,
    /// `None` until known (a step's events that came without their `StepStarted`).
    pub agent: Option<AgentName>,
    pub task: String,
    pub status: StepStatus,
}

impl StepHeader {
    pub fn new(id: &str, agent: Option<AgentName>, task: &str) -> Self {
        Self {
            id: id.to_owned(),
            agent,
            task: task.to_owned(),
            status: StepStatus::Running,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str) -> PlanStep {
        PlanStep {
            id: id.into(),
            agent: AgentName::Coder,
            task: format!("task {id}"),
            need: Vec::new(),
            title: None,
            status: StepStatus::Pending,
        }
    }

    #[test]
    fn steps_tick_and_a_plan_that_ends_unsaid_skips_the_rest() {
        let mut plan = PlanPane::new(&[step("1"), step("2"), step("3")], &[]);
        assert!(plan.set_status("1", StepStatus::Done));
        assert!(plan.set_status("2", StepStatus::Running));
        assert!(!plan.set_status("9", StepStatus::Done), "no such step");
        assert_eq!(plan.progress(), (1, 3));
        assert_eq!(plan.running().map(|s| s.id.as_str()), Some("2"));
        plan.finish(None);
        let statuses: Vec<StepStatus> = plan.steps.iter().map(|s| s.status).collect();
        assert_eq!(
            statuses,
            [StepStatus::Done, StepStatus::Skipped, StepStatus::Skipped]
        );
    }
}
