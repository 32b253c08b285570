//! `seek -p`'s plain progress for a plan: a line for the plan and its steps, each step's start
//! and end, a replan; and the last step's blocks, which the plan's answer expands.
//!
//! Lines only: printing them (terminal-safe) is `super::say`'s. It must not print.

use crate::agent::{BlockRecord, Event};

/// A plan's progress lines: the plan, each step's start and end, a replan. Model text is cut
/// to a line here; `say` makes it terminal-safe.
pub(super) fn plan_line(event: &Event) -> Option<String> {
    const TASK_CHARS: usize = 120;
    Some(match event {
        Event::Plan { steps, notes } => {
            let mut text = format!(
                "seek: plan: {} step{}",
                steps.len(),
                if steps.len() == 1 { "" } else { "s" }
            );
            for step in steps {
                text.push_str(&format!(
                    "\n  {} ({}): {}",
                    step.id,
                    step.agent,
                    one_line(&step.task, TASK_CHARS)
                ));
            }
            for note in notes {
                text.push_str(&format!("\n  note: {}", one_line(note, TASK_CHARS)));
            }
            text
        }
        Event::StepStarted { id, agent, task } => {
            format!("seek: step {id} ({agent}): {}", one_line(task, TASK_CHARS))
        }
        Event::StepFinished {
            id,
            success,
            summary,
        } => format!(
            "seek: step {id} {}: {}",
            if *success { "done" } else { "failed" },
            one_line(summary, TASK_CHARS)
        ),
        Event::Replanned {
            steps,
            replans,
            reason,
        } => format!(
            "seek: replanned ({replans}): {}; now {} steps",
            one_line(reason, TASK_CHARS),
            steps.len()
        ),
        _ => return None,
    })
}

/// The first non-empty line of `text`, at most `limit` chars.
fn one_line(text: &str, limit: usize) -> String {
    // A lone `\r` is a line end too: on a terminal it would let the rest overwrite the line.
    let line = text
        .split(['\n', '\r'])
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= limit {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(limit.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The plan step running or run last: its blocks, and its rounds once it ended.
#[derive(Debug, Default)]
pub(super) struct LastStep {
    blocks: Vec<BlockRecord>,
    rounds: u32,
}

impl LastStep {
    /// Takes note of one of the step's own events.
    pub(super) fn saw(&mut self, event: &Event) {
        match event {
            Event::BlockFinished { record } => self.blocks.push(record.clone()),
            Event::TurnFinished { rounds, .. } => self.rounds = *rounds,
            _ => {}
        }
    }

    /// The blocks of the step's last round.
    pub(super) fn last_round(&self) -> Vec<&BlockRecord> {
        self.blocks
            .iter()
            .filter(|b| b.round == self.rounds)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Outcome;

    #[test]
    fn a_plan_s_progress_is_a_few_short_lines() {
        use crate::wire::{AgentName, PlanStep, StepStatus};
        let step = |id: &str, agent, task: &str| PlanStep {
            id: id.into(),
            agent,
            task: task.into(),
            need: Vec::new(),
            title: None,
            status: StepStatus::Pending,
        };
        let mut progress = super::super::Progress::default();
        let plan = Event::Plan {
            steps: vec![
                step("1", AgentName::Coder, "write it\nin python"),
                step("2", AgentName::Casual, "explain"),
            ],
            notes: vec!["ids renumbered".into()],
        };
        assert_eq!(
            progress.line(&plan).as_deref(),
            Some(
                "seek: plan: 2 steps\n  1 (coder): write it\n  2 (casual): explain\n  note: ids renumbered"
            )
        );
        let started = Event::StepStarted {
            id: "1".into(),
            agent: AgentName::Coder,
            task: "write it\rover".into(),
        };
        assert_eq!(
            progress.line(&started).as_deref(),
            Some("seek: step 1 (coder): write it")
        );
        let nested = Event::Step {
            step: "1".into(),
            event: Box::new(Event::BlockStarted {
                round: 1,
                index: 0,
                tool: "python".into(),
                code: String::new(),
                save_path: None,
            }),
        };
        assert_eq!(
            progress.line(&nested).as_deref(),
            Some("  seek: running python block 0…")
        );
        let finished = Event::StepFinished {
            id: "1".into(),
            success: false,
            summary: "x".repeat(300),
        };
        let line = progress.line(&finished).expect("a line");
        assert!(line.starts_with("seek: step 1 failed: xxx"), "{line}");
        assert!(line.chars().count() < 160, "cut: {line}");
        let replanned = Event::Replanned {
            steps: vec![
                step("1", AgentName::Coder, "a"),
                step("2", AgentName::File, "b"),
            ],
            replans: 1,
            reason: "step 1 (coder) failed: boom".into(),
        };
        assert_eq!(
            progress.line(&replanned).as_deref(),
            Some("seek: replanned (1): step 1 (coder) failed: boom; now 2 steps")
        );
    }

    #[test]
    fn a_plan_s_answer_expands_the_last_step_s_last_round() {
        let record = |round, output: &str| BlockRecord {
            round,
            index: 0,
            tool_type: "python".into(),
            block: "print()\n".into(),
            save_path: None,
            feedback: String::new(),
            success: true,
            exit_code: Some(0),
            timed_out: false,
            stopped: false,
            skipped: false,
            duration_ms: 1.0,
            output: output.into(),
            not_run: None,
        };
        let in_step = |step: &str, event| Event::Step {
            step: step.into(),
            event: Box::new(event),
        };
        let mut progress = super::super::Progress::default();
        for event in [
            in_step(
                "1",
                Event::BlockFinished {
                    record: record(1, "first step\n"),
                },
            ),
            Event::StepStarted {
                id: "2".into(),
                agent: crate::wire::AgentName::Coder,
                task: "t".into(),
            },
            in_step(
                "2",
                Event::BlockFinished {
                    record: record(1, "old round\n"),
                },
            ),
            in_step(
                "2",
                Event::BlockFinished {
                    record: record(2, "last round\n"),
                },
            ),
            in_step(
                "2",
                Event::TurnFinished {
                    turn: 1,
                    outcome: Outcome::Done,
                    answer: String::new(),
                    reasoning: None,
                    agent: crate::wire::AgentName::Coder,
                    rounds: 2,
                    blocks: Vec::new(),
                    message: None,
                    usage: None,
                    plan: None,
                    web: None,
                },
            ),
        ] {
            progress.line(&event);
        }
        let outputs: Vec<&str> = progress
            .last_step_round()
            .iter()
            .map(|b| b.output.as_str())
            .collect();
        assert_eq!(outputs, ["last round\n"]);
    }
}
