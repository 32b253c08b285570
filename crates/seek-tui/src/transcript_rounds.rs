//! What the transcript remembers of the rounds of the running task, to say where each round
//! after the first begins and why ("attempt 2/5 · the python block failed"), why panes of a
//! cut reply never ran, and whether the model's question was already shown.
//!
//! Pure state and wording, and the transcript's steps at round boundaries; it must not draw
//! (the cells module styles what this says).

use std::time::Instant;

use crate::agent::{AnswerFinish, BlockRecord, CLARIFICATION, NotRun, Outcome};

use super::{Item, PaneState, Transcript};

/// Why a reply ended before the model finished it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyCut {
    /// The repetition guard cut a looping reply.
    Repeated,
    /// `max_tokens` was reached.
    MaxTokens,
}

impl ReplyCut {
    pub fn of(finish: &AnswerFinish) -> Option<Self> {
        match finish {
            AnswerFinish::Repetition => Some(Self::Repeated),
            AnswerFinish::Length => Some(Self::MaxTokens),
            AnswerFinish::Stop | AnswerFinish::Block | AnswerFinish::Other(_) => None,
        }
    }

    /// The words a pane of the cut reply shows.
    pub(crate) fn pane_words(self) -> &'static str {
        match self {
            Self::Repeated => "reply cut: it repeated itself",
            Self::MaxTokens => "reply cut: max_tokens reached",
        }
    }

    /// The notice after the cut reply.
    pub fn notice(self) -> &'static str {
        match self {
            Self::Repeated => "the reply was cut: it repeated itself, so its blocks do not run",
            Self::MaxTokens => "the reply was cut: it reached max_tokens",
        }
    }

    /// Why the round after it began.
    fn reason(self) -> &'static str {
        match self {
            Self::Repeated => "the reply repeated itself",
            Self::MaxTokens => "the reply reached max_tokens",
        }
    }
}

/// Why a pane ended without a record of its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abandoned {
    /// Its reply was cut.
    ReplyCut,
    /// The task was stopped before its turn.
    Stopped,
    /// The round or the task ended without running it.
    Ended,
}

/// The current task's rounds, as far as the transcript needs them.
#[derive(Debug, Clone, Default)]
pub struct Rounds {
    /// The round in progress (0 before the first).
    pub round: u32,
    /// Failed rounds before it.
    attempt: u32,
    /// What went wrong in the round in progress, first thing first.
    failure: Option<String>,
    /// How its reply was cut.
    pub cut: Option<ReplyCut>,
    /// The model's question (`REQUEST_CLARIFICATION`) was shown in this task.
    pub asked: bool,
    /// The task's last reply as shown (placeholders and all), and whether a block of it ran.
    pub last_reply: Option<(String, bool)>,
}

impl Rounds {
    /// Forgets the previous task.
    pub(crate) fn start_task(&mut self) {
        *self = Self::default();
    }

    /// Round `round` begins (its `Status`, or its reply on a replay that has no status): the
    /// rule to show before it, if it is not the first. `attempt`/`max_attempts` are the failed
    /// rounds so far and the cap, when known.
    pub fn begin(&mut self, round: u32, attempts: Option<(u32, u32)>) -> Option<String> {
        if round <= self.round {
            return None;
        }
        let failed_before = match attempts {
            Some((attempt, _)) => attempt > self.attempt,
            None => self.failure.is_some() || self.cut.is_some(),
        };
        let why = self
            .failure
            .take()
            .or_else(|| self.cut.map(|c| c.reason().to_owned()));
        let rule = (round > 1).then(|| match (attempts, failed_before) {
            (Some((attempt, max)), true) => format!(
                "attempt {}/{max} · {}",
                attempt.saturating_add(1),
                why.as_deref().unwrap_or("the previous round failed")
            ),
            (None, true) => format!(
                "round {round} · {}",
                why.as_deref().unwrap_or("the previous round failed")
            ),
            (_, false) => format!("round {round} · continuing"),
        });
        self.round = round;
        if let Some((attempt, _)) = attempts {
            self.attempt = attempt;
        }
        self.failure = None;
        self.cut = None;
        rule
    }

    /// A block of the round in progress finished: the first failure is what the next rule
    /// names.
    pub fn block_finished(&mut self, record: &BlockRecord) {
        if record.round != self.round || self.failure.is_some() {
            return;
        }
        self.failure = failure(record);
    }
}

/// What a failed block's record says went wrong, in a few words; `None` when it succeeded or
/// did not run because of something else (an earlier failure, a cut reply, approval = never).
pub fn failure(record: &BlockRecord) -> Option<String> {
    if record.success {
        return None;
    }
    let tool = &record.tool_type;
    let text = match record.not_run {
        Some(NotRun::Interactive) => format!("the {tool} block was refused: interactive input"),
        Some(NotRun::SafeMode) => format!("the {tool} block was refused by safe mode"),
        Some(NotRun::Declined) => format!("you declined the {tool} block"),
        Some(NotRun::Interrupted) => format!("the {tool} block was interrupted"),
        Some(NotRun::Repeated) => format!("the {tool} block repeated code that had failed"),
        Some(NotRun::EarlierFailure | NotRun::ReplyCut | NotRun::ShownOnly | NotRun::Stopped) => {
            return None;
        }
        None if record.skipped => return None,
        None if record.timed_out => format!("the {tool} block timed out"),
        None if record.stopped => format!("the {tool} block was stopped"),
        None => format!("the {tool} block failed"),
    };
    Some(text)
}

/// Whether a record is of a block that never ran (it is folded to one line).
pub(crate) fn did_not_run(record: &BlockRecord) -> bool {
    match record.not_run {
        Some(NotRun::Interrupted) => false,
        Some(_) => true,
        None => record.skipped,
    }
}

/// Whether an answer asks the user a question.
pub fn asks(answer: &str) -> bool {
    answer.contains(CLARIFICATION)
}

/// An answer's text without the question's sentinel word (and the `:` after it).
pub fn question(text: &str) -> String {
    let lines: Vec<String> = text
        .lines()
        .map(|line| match line.find(CLARIFICATION) {
            Some(at) => {
                let rest = line[at + CLARIFICATION.len()..]
                    .trim_start_matches([':', ' ', '-', '—'])
                    .replace(CLARIFICATION, "");
                format!("{}{rest}", &line[..at]).trim_end().to_owned()
            }
            None => line.to_owned(),
        })
        .collect();
    lines.join("\n").trim().to_owned()
}

/// The transcript's round boundaries, cut replies and the task's end.
impl Transcript {
    /// The task's final answer (`TurnFinished`'s), shown when it is not the last reply already
    /// on screen and no block of that reply ran: the agent gave the result of a block that ran
    /// earlier instead of a reply of only placeholders or seek's own echoed words. A reply whose
    /// blocks ran shows their panes, which say the same.
    pub(super) fn final_answer(&mut self, answer: &str) {
        let shown = match &self.rounds.last_reply {
            Some((reply, ran)) => *ran || reply.trim_end() == answer.trim_end(),
            None => false,
        };
        if !shown && !answer.trim().is_empty() {
            self.push(Item::Answer(answer.trim_end().to_owned()));
        }
    }

    /// The task ended: its open panes are abandoned, and a notice says how it ended, unless it
    /// simply succeeded (or the model's question, already shown, says it).
    pub(super) fn turn_finished(&mut self, outcome: Outcome, message: Option<&str>, now: Instant) {
        self.end_round(now);
        let why = if outcome == Outcome::Stopped {
            Abandoned::Stopped
        } else {
            Abandoned::Ended
        };
        self.abandon_open_panes(self.task_start, None, why);
        match outcome {
            // A model error is already in the transcript as an error.
            Outcome::Done | Outcome::ModelError => {}
            Outcome::NeedsClarification if self.rounds.asked => {}
            Outcome::NeedsClarification => {
                let question = question(message.unwrap_or_default());
                if !question.is_empty() {
                    self.push(Item::Question(question));
                }
            }
            _ => {
                let text = message.map_or_else(|| format!("{outcome:?}"), str::to_owned);
                self.push(Item::Notice(text));
            }
        }
    }

    /// Round `round` begins: the panes of earlier rounds that are still open will not run, and
    /// a rule names the round if it is not the first.
    pub(super) fn begin_round(&mut self, round: u32, attempts: Option<(u32, u32)>) {
        if round <= self.rounds.round {
            return;
        }
        self.abandon_open_panes(self.task_start, Some(round), Abandoned::Ended);
        if let Some(rule) = self.rounds.begin(round, attempts) {
            self.push(Item::Rule(rule));
        }
    }

    /// A round's reply is complete: a cut reply is a notice, and its panes will not run when it
    /// repeated itself (the guard's cut runs none of its blocks).
    pub(super) fn reply_finished(&mut self, round: u32, finish: &crate::agent::AnswerFinish) {
        let Some(cut) = ReplyCut::of(finish) else {
            return;
        };
        if round == self.rounds.round {
            self.rounds.cut = Some(cut);
        }
        for index in self.task_start..self.items.len() {
            if let Item::Pane(pane) = &mut self.items[index]
                && pane.round == round
                && pane.step == self.step
            {
                pane.cut = Some(cut);
                if cut == ReplyCut::Repeated && pane.state == PaneState::Pending {
                    pane.state = PaneState::Abandoned(Abandoned::ReplyCut);
                }
                self.touch(index);
            }
        }
        self.push(Item::Notice(cut.notice().to_owned()));
    }

    /// Ends every open pane of the task's rounds from item `from` on (of rounds before
    /// `before_round`, if given, and then only the panes of the agent whose event this is: a
    /// plan step's rounds are its own): its block will get no record now. A pane of a cut reply
    /// says so. The user's own commands (round 0) are not the task's.
    pub(super) fn abandon_open_panes(
        &mut self,
        from: usize,
        before_round: Option<u32>,
        why: Abandoned,
    ) {
        for index in from..self.items.len() {
            if let Item::Pane(pane) = &mut self.items[index]
                && pane.round > 0
                && pane.is_open()
                && before_round.is_none_or(|r| pane.round < r && pane.step == self.step)
            {
                pane.state = PaneState::Abandoned(if pane.cut.is_some() {
                    Abandoned::ReplyCut
                } else {
                    why
                });
                self.touch(index);
            }
        }
    }
}
