//! The transcript the terminal UI shows, built from agent events.
//!
//! Owns the items (prompts, reasoning panels, answer text, execution panes, errors, notices) and
//! their fold state, and applies each `Event` to them. Pure state: it must not draw, read the
//! keyboard or do I/O, so every state of every item can be built in a test.

use crate::agent::{BlockRecord, Event, Outcome};
use crate::protocol::placeholder_index;

/// Output kept per running pane for display; the finished record carries the full result.
const LIVE_OUTPUT_LIMIT: usize = 64 * 1024;

/// Where a pane is in its life.
#[derive(Debug, Clone, PartialEq)]
pub enum PaneState {
    /// Found in the answer, not started yet.
    Pending,
    Running,
    Finished(Box<BlockRecord>),
}

/// One execution pane.
#[derive(Debug, Clone, PartialEq)]
pub struct Pane {
    pub round: u32,
    pub index: usize,
    pub tool: String,
    pub code: String,
    pub save_path: Option<String>,
    /// Output as it streams (bounded); replaced by the record's output when finished.
    pub output: String,
    pub state: PaneState,
    pub expanded: bool,
}

impl Pane {
    pub fn succeeded(&self) -> bool {
        matches!(&self.state, PaneState::Finished(r) if r.success)
    }
}

/// One item of the transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    User(String),
    Reasoning {
        text: String,
        live: bool,
        expanded: bool,
    },
    Answer(String),
    Pane(Pane),
    Error(String),
    /// How a task ended, when it did not simply succeed.
    Notice(String),
}

impl Item {
    /// Panes and reasoning panels can be folded and focused.
    pub fn is_foldable(&self) -> bool {
        matches!(self, Item::Pane(_) | Item::Reasoning { .. })
    }
}

/// The transcript.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    items: Vec<Item>,
    /// Index of the answer item being streamed this round.
    streaming_answer: Option<usize>,
    /// Index of the reasoning panel being streamed this round.
    streaming_reasoning: Option<usize>,
    /// Whether new reasoning panels start unfolded (Ctrl+T).
    pub reasoning_expanded: bool,
}

impl Transcript {
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Applies one agent event.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::TurnStarted { prompt, .. } => {
                self.end_round();
                self.items.push(Item::User(prompt.clone()));
            }
            Event::ReasoningDelta { text } => {
                let index = self.reasoning_panel();
                if let Item::Reasoning { text: t, .. } = &mut self.items[index] {
                    t.push_str(text);
                }
            }
            Event::AnswerDelta { text } => {
                let index = self.answer_item();
                if let Item::Answer(t) = &mut self.items[index] {
                    t.push_str(text);
                }
            }
            Event::AnswerWasReasoning => {
                if let Some(index) = self.streaming_answer.take() {
                    let moved = match self.items.remove(index) {
                        Item::Answer(text) => text,
                        _ => String::new(),
                    };
                    self.fix_indices_after_removal(index);
                    let panel = self.reasoning_panel();
                    if let Item::Reasoning { text, .. } = &mut self.items[panel] {
                        text.insert_str(0, &moved);
                    }
                }
            }
            Event::AnswerComplete { round, answer, .. } => self.complete_answer(*round, answer),
            Event::BlockStarted {
                round,
                index,
                tool,
                code,
                save_path,
            } => {
                let pane = self.pane_mut(*round, *index).map(|p| {
                    p.tool.clone_from(tool);
                    p.code.clone_from(code);
                    p.save_path.clone_from(save_path);
                    p.state = PaneState::Running;
                });
                if pane.is_none() {
                    self.items.push(Item::Pane(Pane {
                        round: *round,
                        index: *index,
                        tool: tool.clone(),
                        code: code.clone(),
                        save_path: save_path.clone(),
                        output: String::new(),
                        state: PaneState::Running,
                        expanded: true,
                    }));
                }
            }
            Event::BlockOutput { round, index, text } => {
                if let Some(pane) = self.pane_mut(*round, *index) {
                    pane.output.push_str(text);
                    if pane.output.len() > LIVE_OUTPUT_LIMIT {
                        let cut = pane.output.len() - LIVE_OUTPUT_LIMIT;
                        let cut = (cut..pane.output.len())
                            .find(|&i| pane.output.is_char_boundary(i))
                            .unwrap_or(0);
                        pane.output.drain(..cut);
                    }
                }
            }
            Event::BlockFinished { record } => {
                if let Some(pane) = self.pane_mut(record.round, record.index) {
                    pane.output.clone_from(&record.output);
                    // A successful pane collapses; a failed one stays open.
                    pane.expanded = !record.success;
                    pane.state = PaneState::Finished(Box::new(record.clone()));
                }
            }
            Event::Error { message } => self.items.push(Item::Error(message.clone())),
            Event::TurnFinished {
                outcome, message, ..
            } => {
                self.end_round();
                if *outcome != Outcome::Done {
                    let text = message.clone().unwrap_or_else(|| format!("{outcome:?}"));
                    self.items.push(Item::Notice(text));
                }
            }
            Event::Status { .. } | Event::Retrying { .. } => {}
        }
    }

    /// Unfolds or folds item `index` if it is foldable.
    pub fn toggle(&mut self, index: usize) {
        match self.items.get_mut(index) {
            Some(Item::Pane(pane)) => pane.expanded = !pane.expanded,
            Some(Item::Reasoning { expanded, .. }) => *expanded = !*expanded,
            _ => {}
        }
    }

    /// Folds or unfolds every reasoning panel (Ctrl+T).
    pub fn toggle_all_reasoning(&mut self) {
        self.reasoning_expanded = !self.reasoning_expanded;
        for item in &mut self.items {
            if let Item::Reasoning { expanded, .. } = item {
                *expanded = self.reasoning_expanded;
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

    fn reasoning_panel(&mut self) -> usize {
        if let Some(index) = self.streaming_reasoning {
            return index;
        }
        self.items.push(Item::Reasoning {
            text: String::new(),
            live: true,
            expanded: self.reasoning_expanded,
        });
        let index = self.items.len() - 1;
        self.streaming_reasoning = Some(index);
        index
    }

    fn answer_item(&mut self) -> usize {
        if let Some(index) = self.streaming_answer {
            return index;
        }
        self.items.push(Item::Answer(String::new()));
        let index = self.items.len() - 1;
        self.streaming_answer = Some(index);
        index
    }

    /// Replaces the streamed answer with its text segments and a pending pane per placeholder.
    fn complete_answer(&mut self, round: u32, answer: &str) {
        if let Some(index) = self.streaming_answer.take() {
            self.items.truncate(index);
        }
        self.finish_reasoning();
        let mut text = String::new();
        for line in answer.split_inclusive('\n') {
            match placeholder_index(line.trim_end()) {
                Some(index) => {
                    self.push_text(std::mem::take(&mut text));
                    self.items.push(Item::Pane(Pane {
                        round,
                        index,
                        tool: String::new(),
                        code: String::new(),
                        save_path: None,
                        output: String::new(),
                        state: PaneState::Pending,
                        expanded: true,
                    }));
                }
                None => text.push_str(line),
            }
        }
        self.push_text(text);
    }

    fn push_text(&mut self, text: String) {
        if !text.trim().is_empty() {
            self.items.push(Item::Answer(text.trim_end().to_owned()));
        }
    }

    fn pane_mut(&mut self, round: u32, index: usize) -> Option<&mut Pane> {
        self.items.iter_mut().rev().find_map(|item| match item {
            Item::Pane(p) if p.round == round && p.index == index => Some(p),
            _ => None,
        })
    }

    fn finish_reasoning(&mut self) {
        if let Some(index) = self.streaming_reasoning.take()
            && let Some(Item::Reasoning { live, .. }) = self.items.get_mut(index)
        {
            *live = false;
        }
    }

    fn end_round(&mut self) {
        self.finish_reasoning();
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
mod tests {
    use super::*;
    use crate::agent::Status;
    use crate::config::AgentName;

    fn record(round: u32, index: usize, success: bool) -> BlockRecord {
        BlockRecord {
            round,
            index,
            tool_type: "python".into(),
            block: "print(1)\n".into(),
            save_path: None,
            feedback: String::new(),
            success,
            exit_code: Some(if success { 0 } else { 1 }),
            timed_out: false,
            stopped: false,
            skipped: false,
            duration_ms: 3.0,
            output: "1\n".into(),
        }
    }

    fn turn(t: &mut Transcript) {
        for event in [
            Event::TurnStarted {
                turn: 1,
                prompt: "count".into(),
                agent: AgentName::Coder,
            },
            Event::Status {
                status: Status::Thinking,
                round: 1,
                attempt: 0,
                max_attempts: 5,
            },
            Event::ReasoningDelta {
                text: "use ".into(),
            },
            Event::ReasoningDelta {
                text: "python".into(),
            },
            Event::AnswerDelta {
                text: "I'll count.\n```python\nprint(1)\n```\nDone.".into(),
            },
            Event::AnswerComplete {
                round: 1,
                answer: "I'll count.\nblock:0\nDone.".into(),
                reasoning: Some("use python".into()),
                blocks: 1,
                finish: "stop".into(),
            },
            Event::BlockStarted {
                round: 1,
                index: 0,
                tool: "python".into(),
                code: "print(1)\n".into(),
                save_path: None,
            },
            Event::BlockOutput {
                round: 1,
                index: 0,
                text: "1\n".into(),
            },
        ] {
            t.apply(&event);
        }
    }

    #[test]
    fn a_turn_becomes_prompt_reasoning_text_pane_text() {
        let mut t = Transcript::default();
        turn(&mut t);
        let items = t.items();
        assert_eq!(items[0], Item::User("count".into()));
        assert_eq!(
            items[1],
            Item::Reasoning {
                text: "use python".into(),
                live: false,
                expanded: false
            }
        );
        assert_eq!(items[2], Item::Answer("I'll count.".into()));
        assert!(
            matches!(&items[3], Item::Pane(p) if p.state == PaneState::Running && p.output == "1\n" && p.expanded)
        );
        assert_eq!(items[4], Item::Answer("Done.".into()));
        t.apply(&Event::BlockFinished {
            record: record(1, 0, true),
        });
        assert!(
            matches!(&t.items()[3], Item::Pane(p) if p.succeeded() && !p.expanded),
            "success collapses"
        );
    }

    #[test]
    fn a_failed_pane_stays_open_and_a_bad_end_leaves_a_notice() {
        let mut t = Transcript::default();
        turn(&mut t);
        t.apply(&Event::BlockFinished {
            record: record(1, 0, false),
        });
        assert!(matches!(&t.items()[3], Item::Pane(p) if !p.succeeded() && p.expanded));
        t.apply(&Event::TurnFinished {
            turn: 1,
            outcome: Outcome::GaveUp,
            answer: String::new(),
            reasoning: None,
            agent: AgentName::Coder,
            rounds: 5,
            blocks: Vec::new(),
            message: Some("gave up after 5 failed attempts".into()),
        });
        assert_eq!(
            t.items().last(),
            Some(&Item::Notice("gave up after 5 failed attempts".into()))
        );
    }

    #[test]
    fn folding() {
        let mut t = Transcript::default();
        turn(&mut t);
        assert_eq!(t.foldable(), [3, 1], "newest first");
        t.toggle(1);
        assert!(matches!(
            t.items()[1],
            Item::Reasoning { expanded: true, .. }
        ));
        t.toggle_all_reasoning();
        assert!(
            matches!(t.items()[1], Item::Reasoning { expanded: true, .. }),
            "Ctrl+T unfolds all"
        );
        t.toggle_all_reasoning();
        assert!(matches!(
            t.items()[1],
            Item::Reasoning {
                expanded: false,
                ..
            }
        ));
        t.toggle(0);
        assert_eq!(
            t.items()[0],
            Item::User("count".into()),
            "prompts do not fold"
        );
    }

    #[test]
    fn a_late_think_close_moves_the_streamed_answer_into_reasoning() {
        let mut t = Transcript::default();
        t.apply(&Event::TurnStarted {
            turn: 1,
            prompt: "x".into(),
            agent: AgentName::Coder,
        });
        t.apply(&Event::AnswerDelta {
            text: "hmm, ".into(),
        });
        t.apply(&Event::AnswerWasReasoning);
        t.apply(&Event::ReasoningDelta { text: "ok".into() });
        t.apply(&Event::AnswerDelta {
            text: "Answer.".into(),
        });
        assert!(
            matches!(&t.items()[1], Item::Reasoning { text, live: true, .. } if text == "hmm, ok")
        );
        assert_eq!(t.items()[2], Item::Answer("Answer.".into()));
    }

    #[test]
    fn live_output_is_bounded() {
        let mut t = Transcript::default();
        turn(&mut t);
        for _ in 0..100 {
            t.apply(&Event::BlockOutput {
                round: 1,
                index: 0,
                text: "x".repeat(4096),
            });
        }
        assert!(matches!(&t.items()[3], Item::Pane(p) if p.output.len() <= LIVE_OUTPUT_LIMIT));
    }
}
