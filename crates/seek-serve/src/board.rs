//! What the API shows of the latest task, kept up to date from the agent's events: its agent,
//! its answer so far (with `block:N` placeholders, as AgenticSeek's `last_answer`), reasoning,
//! blocks (the running one too, `running`), AgenticSeek's status words, and whether it still
//! runs. Each task gets a number when it
//! begins, and the event that ends it yields its `Ending` (its `/query` answer, taken then), so
//! the bridge can hand each waiter its own task's answer.
//!
//! A stopped task's `/latest_answer` answer is a line saying so (`Stopped task 3.`), new for
//! each task: AgenticSeek's front end changes its status only when the answer text changes, so
//! with the answer left as it was its page would say `Requesting stop...` for good. The line
//! shows once every `/stop` waiting for the task has been answered: the page sets `Requesting
//! stop...` when its `/stop` returns, and a poll answered before that would be overwritten.
//!
//! Pure state: it is fed events and asked for records; it must not send commands, wait, or
//! know about HTTP.

use super::records::{LatestAnswer, QueryResponse, blocks_json, python_bool, status};
use super::running::RunningBlock;
use crate::wire::{BlockRecord, Event, Outcome, Status};

/// The latest task as the API shows it.
#[derive(Debug, Clone, Default)]
struct TaskView {
    agent: String,
    answer: String,
    reasoning: String,
    blocks: Vec<BlockRecord>,
    status: &'static str,
    outcome: Option<Outcome>,
    /// Why the task ended, in words (the model server's error, the question asked, …).
    message: Option<String>,
    /// Changes whenever the answer does, so a poller sees a new message.
    uid: String,
    /// The block that runs now (shown after the finished ones).
    running_block: Option<RunningBlock>,
    /// When the task was stopped: `/latest_answer`'s answer saying so, and its uid.
    stop_note: Option<(String, String)>,
}

/// How one task ended, as its `/query` answers it: taken at the moment its end is applied, so a
/// task that begins right after cannot change what the first one's caller is told.
#[derive(Debug, Clone)]
pub struct Ending {
    /// The task's number (`Board::begin`'s).
    pub ticket: u64,
    pub response: QueryResponse,
    pub outcome: Option<Outcome>,
}

/// Where the running task is on its way to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Begun on the board, not yet handed to the agent (its session may be being resumed).
    Begun,
    /// Begun, and a stop was asked before it reached the agent: the stop goes right after it.
    StopAsked,
    /// Handed to the agent: a stop now reaches it.
    Submitted,
}

/// The API's view of the agent: the latest task and the session it is saved in.
#[derive(Debug, Default)]
pub struct Board {
    task: Option<TaskView>,
    /// The running task's number and stage; `None` when nothing runs.
    running: Option<(u64, Stage)>,
    /// How many tasks have begun: the last one's number.
    begun: u64,
    session: Option<String>,
    /// `/stop`s still waiting for their task to end: a stop's note waits for them.
    stops_waiting: usize,
}

impl Board {
    pub fn running(&self) -> bool {
        self.running.is_some()
    }

    /// The running task's number and stage.
    pub(crate) fn running_task(&self) -> Option<(u64, Stage)> {
        self.running
    }

    /// Moves the running task `ticket` to `stage` (nothing if another runs or none).
    pub(crate) fn set_stage(&mut self, ticket: u64, stage: Stage) {
        if let Some((running, current)) = &mut self.running
            && *running == ticket
        {
            *current = stage;
        }
    }

    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// A `/stop` begins waiting for the running task to end.
    pub(crate) fn stop_waiting(&mut self) {
        self.stops_waiting += 1;
    }

    /// A `/stop` has its answer (its task ended, or its wait ran out).
    pub(crate) fn stop_answered(&mut self) {
        self.stops_waiting = self.stops_waiting.saturating_sub(1);
    }

    /// A task is about to be submitted: its number, or `None` (and nothing changes) when one
    /// still runs.
    pub fn begin(&mut self) -> Option<u64> {
        if self.running.is_some() {
            return None;
        }
        self.begun += 1;
        self.running = Some((self.begun, Stage::Begun));
        self.task = Some(TaskView {
            agent: "Unknown".into(),
            status: status::THINKING,
            uid: new_uid(),
            ..TaskView::default()
        });
        Some(self.begun)
    }

    /// The running task could not be submitted after `begin` (its session could not be
    /// resumed), or will never end (the runtime is gone): the board is free again and says why.
    /// Returns the abandoned task's number (`None`: nothing ran, and nothing changes).
    pub(crate) fn abandon(&mut self, why: &str) -> Option<u64> {
        // A task that ended keeps its ending.
        let (ticket, _) = self.running.take()?;
        if let Some(task) = &mut self.task {
            task.status = status::READY;
            task.message = Some(why.to_owned());
        }
        Some(ticket)
    }

    /// Takes in one of the agent's events; the running task's `Ending` when this event ended it.
    pub fn apply(&mut self, event: &Event) -> Option<Ending> {
        match event {
            Event::SessionStarted { id, .. } | Event::Resumed { id, .. } => {
                self.session = Some(id.clone());
            }
            Event::TurnFinished {
                outcome,
                answer,
                reasoning,
                agent,
                blocks,
                message,
                ..
            } => {
                let task = self.task.get_or_insert_with(TaskView::default);
                task.agent = agent.as_str().to_owned();
                task.set_answer(answer, reasoning.as_deref());
                task.blocks = blocks.clone();
                task.running_block = None;
                task.outcome = Some(*outcome);
                task.message = message.clone();
                task.status = if *outcome == Outcome::Stopped {
                    status::STOPPED
                } else {
                    status::READY
                };
                let number = self.running.map_or(self.begun, |(ticket, _)| ticket);
                task.stop_note = (*outcome == Outcome::Stopped)
                    .then(|| (format!("Stopped task {number}."), new_uid()));
                let (ticket, _) = self.running.take()?;
                return Some(Ending {
                    ticket,
                    response: self.finished(),
                    outcome: Some(*outcome),
                });
            }
            other => {
                if let Some(task) = &mut self.task {
                    task.apply(other);
                }
            }
        }
        None
    }

    /// `/latest_answer`'s record; `None` before the first task.
    pub fn latest(&self) -> Option<LatestAnswer> {
        let task = self.task.as_ref()?;
        let mut blocks = blocks_json(&task.blocks);
        if let Some(running) = &task.running_block {
            blocks.insert(blocks.len().to_string(), running.json());
        }
        let (answer, uid) = match &task.stop_note {
            Some((note, uid)) if self.stops_waiting == 0 => (note.clone(), uid.clone()),
            _ => (task.answer.clone(), task.uid.clone()),
        };
        Some(LatestAnswer {
            done: if self.running() { "false" } else { "true" }.into(),
            answer,
            reasoning: task.reasoning.clone(),
            agent_name: task.agent.clone(),
            success: task.outcome.map_or_else(
                || task.blocks.last().is_none_or(|b| b.success),
                Outcome::success,
            ),
            blocks,
            status: task.status.into(),
            uid,
            outcome: task.outcome,
            session: self.session.clone(),
        })
    }

    /// `/query`'s answer for the task that just ended.
    pub fn finished(&self) -> QueryResponse {
        let Some(task) = &self.task else {
            return QueryResponse::refused(new_uid());
        };
        let answer = match (&task.outcome, &task.message) {
            // AgenticSeek's words for a task that failed on an error.
            (Some(Outcome::ModelError), Some(message)) if task.answer.trim().is_empty() => {
                format!("An error occurred: {message}")
            }
            _ => task.answer.clone(),
        };
        QueryResponse {
            done: "true".into(),
            answer,
            reasoning: task.reasoning.clone(),
            agent_name: task.agent.clone(),
            success: python_bool(task.outcome.is_some_and(Outcome::success)),
            blocks: blocks_json(&task.blocks),
            status: task.status.into(),
            uid: task.uid.clone(),
            outcome: task.outcome,
            session: self.session.clone(),
        }
    }

    /// How the latest task ended (`None` while it runs or before any).
    pub fn outcome(&self) -> Option<Outcome> {
        self.task.as_ref().and_then(|t| t.outcome)
    }

    /// Why the latest task ended, in words.
    pub fn message(&self) -> Option<&str> {
        self.task.as_ref().and_then(|t| t.message.as_deref())
    }
}

impl TaskView {
    fn apply(&mut self, event: &Event) {
        match event {
            Event::TurnStarted { agent, .. } => {
                self.agent = agent.as_str().to_owned();
                // An agent that plans shows AgenticSeek's planning status from its start.
                if crate::agents::spec(*agent).runs == crate::agents::Runs::Plan {
                    self.status = status::PLANNING;
                }
            }
            Event::Status { status: s, .. } => {
                self.status = match s {
                    Status::Thinking => status::THINKING,
                    // AgenticSeek says `Navigating...` while its browser loads a page, before
                    // the page is read; a search is its own word.
                    Status::Executing { tool } if tool == "browser" => status::NAVIGATING,
                    Status::Executing { tool } if tool == "web_search" => status::SEARCHING,
                    Status::Executing { .. } => status::EXECUTING,
                    Status::Correcting => status::CORRECTING,
                };
            }
            Event::AnswerComplete {
                answer, reasoning, ..
            } => self.set_answer(answer, reasoning.as_deref()),
            Event::BlockStarted {
                round,
                index,
                tool,
                code,
                save_path,
            } => {
                self.running_block = Some(RunningBlock::started(
                    *round,
                    *index,
                    tool,
                    code,
                    save_path.as_deref(),
                ));
            }
            Event::BlockOutput { round, index, text } => {
                if let Some(block) = &mut self.running_block
                    && block.is(*round, *index)
                {
                    block.output(text);
                }
            }
            Event::BlockFinished { record } => {
                self.running_block = None;
                self.blocks.push(record.clone());
            }
            Event::Plan { .. } | Event::StepStarted { .. } => {
                self.status = status::STARTING_AGENTS;
            }
            Event::Replanned { .. } => self.status = status::UPDATING_PLAN,
            Event::WebSearch { .. } => self.status = status::SEARCHING,
            Event::PageRead { .. } => self.status = status::NAVIGATING,
            Event::FormSubmitted { .. } => self.status = status::FILLING_FORM,
            // A plan's step: the sub-agent's answers, blocks and status show as they come, as
            // AgenticSeek's current agent is the step's while it runs; the step's agent is named.
            Event::Step { event, .. } => {
                if let Event::TurnStarted { agent, .. } = event.as_ref() {
                    self.agent = agent.as_str().to_owned();
                } else {
                    self.apply(event);
                }
            }
            _ => {}
        }
    }

    fn set_answer(&mut self, answer: &str, reasoning: Option<&str>) {
        if answer != self.answer {
            self.answer = answer.to_owned();
            self.uid = new_uid();
        }
        self.reasoning = reasoning.unwrap_or_default().to_owned();
    }
}

fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::AgentName;

    fn block(success: bool) -> BlockRecord {
        BlockRecord {
            round: 1,
            index: 0,
            tool_type: "bash".into(),
            block: "false\n".into(),
            save_path: None,
            feedback: String::new(),
            success,
            exit_code: Some(i32::from(!success)),
            timed_out: false,
            stopped: false,
            skipped: false,
            duration_ms: 1.0,
            output: String::new(),
            not_run: None,
        }
    }

    fn finished(outcome: Outcome, answer: &str, message: Option<&str>) -> Event {
        Event::TurnFinished {
            turn: 1,
            outcome,
            answer: answer.into(),
            reasoning: None,
            agent: AgentName::Coder,
            rounds: 1,
            blocks: vec![block(true)],
            message: message.map(str::to_owned),
            usage: None,
            plan: None,
            web: None,
        }
    }

    #[test]
    fn a_page_being_loaded_says_navigating_not_executing_code() {
        let mut task = TaskView::default();
        let executing = |tool: &str| Event::Status {
            status: Status::Executing { tool: tool.into() },
            round: 1,
            attempt: 0,
            max_attempts: 15,
        };
        task.apply(&executing("browser"));
        assert_eq!(task.status, status::NAVIGATING);
        task.apply(&executing("web_search"));
        assert_eq!(task.status, status::SEARCHING);
        task.apply(&executing("bash"));
        assert_eq!(task.status, status::EXECUTING);
    }

    #[test]
    fn nothing_is_shown_before_the_first_task() {
        let board = Board::default();
        assert!(board.latest().is_none());
        assert!(!board.running());
    }

    #[test]
    fn one_task_at_a_time() {
        let mut board = Board::default();
        assert_eq!(board.begin(), Some(1));
        assert_eq!(
            board.begin(),
            None,
            "a second task while one runs is refused"
        );
        let ending = board.apply(&finished(Outcome::Done, "done", None));
        assert_eq!(ending.map(|e| e.ticket), Some(1));
        assert_eq!(
            board.begin(),
            Some(2),
            "the next task is accepted once it ended"
        );
    }

    #[test]
    fn a_tasks_ending_is_its_own_whatever_begins_after_it() {
        let mut board = Board::default();
        let first = board.begin().expect("free");
        let ending = board
            .apply(&finished(Outcome::Done, "first answer", None))
            .expect("the running task ended");
        // The next task begins before the first one's caller reads its answer.
        let second = board.begin().expect("free again");
        assert_ne!(first, second);
        assert_eq!(ending.ticket, first);
        assert_eq!(ending.response.answer, "first answer");
        assert_eq!(ending.response.done, "true");
        assert_eq!(ending.outcome, Some(Outcome::Done));
        assert_eq!(board.outcome(), None, "the board shows the second task");
        assert_eq!(board.running_task(), Some((second, Stage::Begun)));
    }

    #[test]
    fn an_ending_nobody_began_ends_no_task() {
        let mut board = Board::default();
        assert!(
            board
                .apply(&finished(Outcome::Done, "stray", None))
                .is_none()
        );
        assert!(!board.running());
        assert_eq!(board.abandon("gone"), None);
    }

    #[test]
    fn the_record_follows_the_task_and_its_uid_the_answer() {
        let mut board = Board::default();
        board.begin();
        board.apply(&Event::TurnStarted {
            turn: 1,
            prompt: "p".into(),
            agent: AgentName::Coder,
        });
        board.apply(&Event::Status {
            status: Status::Executing {
                tool: "bash".into(),
            },
            round: 1,
            attempt: 0,
            max_attempts: 3,
        });
        let running = board.latest().expect("a record");
        assert_eq!(running.done, "false");
        assert_eq!(running.status, status::EXECUTING);
        assert_eq!(running.agent_name, "coder");
        board.apply(&Event::AnswerComplete {
            round: 1,
            answer: "block:0".into(),
            reasoning: Some("why".into()),
            blocks: 1,
            finish: crate::wire::AnswerFinish::Stop,
        });
        let answered = board.latest().expect("a record");
        assert_eq!(answered.answer, "block:0");
        assert_eq!(answered.reasoning, "why");
        assert_ne!(answered.uid, running.uid, "a new answer is a new record");
        assert_eq!(board.latest().expect("again").uid, answered.uid);
        board.apply(&Event::BlockFinished {
            record: block(false),
        });
        assert!(!board.latest().expect("a record").success);
        board.apply(&finished(Outcome::Done, "all done", None));
        let done = board.latest().expect("a record");
        assert_eq!(done.done, "true");
        assert!(done.success);
        assert_eq!(done.status, status::READY);
        let response = board.finished();
        assert_eq!(response.success, "True");
        assert_eq!(response.answer, "all done");
    }

    #[test]
    fn a_stopped_task_says_stopped_and_a_model_error_says_what_happened() {
        let mut board = Board::default();
        board.begin();
        board.apply(&finished(Outcome::Stopped, "", None));
        assert_eq!(board.latest().expect("record").status, status::STOPPED);
        assert_eq!(board.finished().success, "False");
        board.begin();
        board.apply(&finished(
            Outcome::ModelError,
            "",
            Some("the model server is unreachable"),
        ));
        assert_eq!(
            board.finished().answer,
            "An error occurred: the model server is unreachable"
        );
    }

    #[test]
    fn a_running_block_is_shown_after_the_finished_ones_until_it_ends() {
        let mut board = Board::default();
        board.begin();
        board.apply(&Event::BlockFinished {
            record: block(true),
        });
        board.apply(&Event::BlockStarted {
            round: 1,
            index: 1,
            tool: "bash".into(),
            code: "sleep 5\n".into(),
            save_path: None,
        });
        board.apply(&Event::BlockOutput {
            round: 1,
            index: 1,
            text: "half way\n".into(),
        });
        // Another block's output is not this one's.
        board.apply(&Event::BlockOutput {
            round: 1,
            index: 0,
            text: "stray\n".into(),
        });
        let running = board.latest().expect("a record");
        assert_eq!(running.blocks.len(), 2);
        assert_eq!(running.blocks["0"]["success"], true);
        assert!(running.blocks["0"].get("running").is_none());
        assert_eq!(running.blocks["1"]["running"], true);
        assert_eq!(running.blocks["1"]["block"], "sleep 5\n");
        assert_eq!(running.blocks["1"]["output"], "half way\n");
        assert!(running.success, "a running block is no failure");
        let mut second = block(false);
        second.index = 1;
        board.apply(&Event::BlockFinished { record: second });
        let ended = board.latest().expect("a record");
        assert_eq!(ended.blocks.len(), 2);
        assert!(ended.blocks["1"].get("running").is_none());
        assert!(!ended.success);
    }

    #[test]
    fn a_stopped_task_s_latest_answer_says_so_once_its_stop_is_answered() {
        let mut board = Board::default();
        board.begin();
        board.apply(&Event::AnswerComplete {
            round: 1,
            answer: "Running it.\nblock:0".into(),
            reasoning: None,
            blocks: 1,
            finish: crate::wire::AnswerFinish::Stop,
        });
        let before = board.latest().expect("a record");
        board.stop_waiting();
        board.apply(&finished(Outcome::Stopped, "Running it.\nblock:0", None));
        // The page sets "Requesting stop..." when its /stop returns: the line waits for that.
        let waiting = board.latest().expect("a record");
        assert_eq!(waiting.answer, before.answer);
        assert_eq!(waiting.status, status::STOPPED);
        board.stop_answered();
        let stopped = board.latest().expect("a record");
        assert_eq!(stopped.answer, "Stopped task 1.");
        assert_ne!(stopped.uid, before.uid, "a new message");
        assert_eq!(
            board.finished().answer,
            "Running it.\nblock:0",
            "/query's answer is the task's own"
        );
        // The next stopped task's line is another one.
        board.begin();
        board.apply(&finished(Outcome::Stopped, "", None));
        assert_eq!(board.latest().expect("a record").answer, "Stopped task 2.");
        board.begin();
        board.apply(&finished(Outcome::Done, "fine", None));
        assert_eq!(board.latest().expect("a record").answer, "fine");
    }

    #[test]
    fn a_plan_steps_events_show_the_steps_agent_and_blocks() {
        let mut board = Board::default();
        board.begin();
        board.apply(&Event::TurnStarted {
            turn: 1,
            prompt: "p".into(),
            agent: AgentName::Planner,
        });
        assert_eq!(board.latest().expect("r").status, status::PLANNING);
        board.apply(&Event::Step {
            step: "1".into(),
            event: Box::new(Event::TurnStarted {
                turn: 1,
                prompt: "s".into(),
                agent: AgentName::Web,
            }),
        });
        board.apply(&Event::Step {
            step: "1".into(),
            event: Box::new(Event::BlockFinished {
                record: block(true),
            }),
        });
        let record = board.latest().expect("r");
        assert_eq!(record.agent_name, "web");
        assert_eq!(record.blocks.len(), 1);
    }

    #[test]
    fn an_abandoned_task_frees_the_board() {
        let mut board = Board::default();
        let ticket = board.begin();
        assert_eq!(board.abandon("no session abc"), ticket);
        assert!(!board.running());
        assert_eq!(board.message(), Some("no session abc"));
    }
}
