//! The turn profile: how seek helps the model through a task of the block loop, behind the one
//! interface the loop calls at its fixed points — before blocks run (`block_rules`), to shape
//! each request (`shape_request`), after each round (`after_round`) and when the policy calls
//! the task done (`on_done`).
//!
//! A capable model gets the default profile (`Adaptations::new(false, …)`: seek adds nothing
//! but refusing code that already failed). A small one gets the small-model profile, each
//! switch of which `SEEK_SMALL_MODEL_OFF` names (`config::model_size::Adaptations`). What an
//! agent is helped toward comes from its registry entry (`AgentSpec::done_by_running`,
//! `AgentSpec::tools`), never from its name.
//!
//! This module decides *when* each help applies; the help itself is text and rules in `small`,
//! `examples` and `execute`. It must not emit events, touch the memory or run anything: it
//! returns what the loop then does.

use super::execute::RoundRules;
use super::policy::RoundReport;
use super::reply::{Shape, capped_tokens};
use crate::agents::AgentSpec;
use crate::config::model_size::Adaptations;
use crate::llm::Message;
use crate::protocol::ToolTags;

/// What the loop knows of the task when it consults the profile.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TaskState<'a> {
    /// A block of the task has succeeded.
    pub succeeded: bool,
    /// Tokens the model has written in the task so far.
    pub written: u64,
    /// The task's last failure, which a give-up message names.
    pub last_error: Option<&'a str>,
}

/// The profile of one task: the switches, the agent's part in them, and what was prepared for
/// the task once (its worked examples, its opened fence).
#[derive(Debug)]
pub(super) struct Profile {
    adapt: Adaptations,
    /// The task is done by a block that works (`AgentSpec::done_by_running`).
    done_by_running: bool,
    /// The reply ends at its first closed block of these tags (`Adaptations::one_block`, for an
    /// agent that runs blocks at all).
    one_block: Option<ToolTags>,
    examples: Vec<Message>,
    opening: Option<String>,
    /// Times the model was stuck: a block resending failed code, or a reply cut for repeating
    /// itself. A greedy model stuck so answers the same way again, so it samples warmer.
    stuck: u32,
    /// The model was told once to run something (`on_done`).
    nudged: bool,
    task: String,
}

/// The worked exchanges `agent`'s requests carry just before the task under `adapt`, for
/// `task`; with no task yet (a warm-up reading the next request's start ahead), `None` when
/// they depend on the task (the bank's nearest example is chosen for each).
pub(crate) fn examples_for(
    adapt: Adaptations,
    agent: &AgentSpec,
    task: Option<&str>,
) -> Option<Vec<Message>> {
    if !(adapt.example_turns && agent.done_by_running) {
        return Some(Vec::new());
    }
    match task {
        Some(task) => Some(super::examples::example_turns(
            task,
            adapt.nearest_example,
            adapt.fill_values,
        )),
        // Without the nearest example every task gets the same neutral one.
        None if !adapt.nearest_example => {
            Some(super::examples::example_turns("", false, adapt.fill_values))
        }
        None => None,
    }
}

impl Profile {
    /// The profile for `task`, given to `agent`, whose blocks are parsed with `tags`.
    pub(crate) fn for_task(
        adapt: Adaptations,
        agent: &AgentSpec,
        task: &str,
        tags: &ToolTags,
    ) -> Self {
        let done_by_running = agent.done_by_running;
        let runs_blocks = !agent.tools.is_empty();
        let examples = examples_for(adapt, agent, Some(task)).unwrap_or_default();
        let opening =
            (adapt.open_fence && done_by_running).then(|| super::small::fence_opening(task, tags));
        Self {
            one_block: (adapt.one_block && runs_blocks).then(|| tags.clone()),
            done_by_running,
            examples,
            opening,
            stuck: 0,
            nudged: false,
            task: task.to_owned(),
            adapt,
        }
    }

    /// Before blocks run: how they run and are fed back (short feedback, refusing code that
    /// already failed, ending on a resend of code that worked).
    pub(crate) fn block_rules(&self, rules: &mut RoundRules) {
        rules.short_feedback = self.adapt.short_feedback;
        rules.refuse_repeats = self.adapt.refuse_repeats;
        rules.end_on_rerun = self.adapt.end_on_rerun;
        rules.task.clone_from(&self.task);
    }

    /// Before each request: its shape, or why the task ends now (the small model's token
    /// budget for a task is spent with no block that worked).
    pub(crate) fn shape_request(&self, state: TaskState<'_>) -> Result<Shape<'_>, String> {
        let left = self.tokens_left(state);
        if left == Some(0) {
            return Err(self.budget_spent(state.last_error));
        }
        Ok(Shape {
            one_block: self.one_block.as_ref(),
            min_temperature: self
                .adapt
                .resample
                .then(|| super::small::resample_temperature(self.stuck))
                .flatten(),
            strict_loops: self.adapt.strict_loops,
            examples: &self.examples,
            max_tokens: match (self.adapt.reply_cap, left) {
                (Some(cap), Some(left)) => Some(cap.min(left)),
                (cap, left) => cap.or(left),
            },
            // Once a block worked, the model may answer in words ("Done: …").
            opening: self.opening.as_deref().filter(|_| !state.succeeded),
        })
    }

    /// The most tokens a reply was asked for, as the message about a cut reply says it.
    pub(crate) fn asked_tokens(&self, max_tokens: u64) -> u64 {
        capped_tokens(max_tokens, self.adapt.reply_cap)
    }

    /// After a round: `stuck` is 1 when the reply was cut for repeating itself, else how many
    /// of its blocks resent code that had failed.
    pub(crate) fn after_round(&mut self, stuck: u32) {
        self.stuck = self.stuck.saturating_add(stuck);
    }

    /// When the policy calls the task done: the message that sends the model back to work
    /// instead, once a task — a small model's reply that would end a task done by running
    /// with nothing run and no block that worked before. Such models often answer in prose
    /// ("12 factorial is 12 * 11 factorial.") at first, or after a failed or looping reply.
    pub(crate) fn on_done(&mut self, state: TaskState<'_>, report: &RoundReport) -> Option<String> {
        let nothing_done = !state.succeeded && !report.had_blocks && !report.clarification;
        if !self.adapt.nudge || !self.done_by_running || self.nudged || !nothing_done {
            return None;
        }
        self.nudged = true;
        Some(super::small::nudge(&self.task))
    }

    /// What the task may still write before a block of it works (`Adaptations::task_tokens`):
    /// the whole budget once one has; `None` without a budget.
    fn tokens_left(&self, state: TaskState<'_>) -> Option<u64> {
        let budget = self.adapt.task_tokens.filter(|_| self.done_by_running)?;
        if state.succeeded {
            return Some(budget);
        }
        Some(budget.saturating_sub(state.written))
    }

    /// The give-up message once the budget is spent.
    fn budget_spent(&self, last_error: Option<&str>) -> String {
        let budget = self.adapt.task_tokens.unwrap_or_default();
        let mut message = format!(
            "gave up: the model wrote {budget} tokens without a block that worked (a small model's \
             limit for a task); try a bigger model (/model) or say the task another way"
        );
        if let Some(error) = last_error {
            message.push_str(&format!("; the last error: {error}"));
        }
        message
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::spec;
    use crate::config::AgentName;

    fn tags() -> ToolTags {
        ToolTags::new(["bash", "python", "c", "go", "java"])
    }

    fn small() -> Adaptations {
        Adaptations::new(true, &[])
    }

    fn capable() -> Adaptations {
        Adaptations::new(false, &[])
    }

    #[test]
    fn a_capable_model_gets_a_plain_request_and_no_nudge() {
        let mut profile = Profile::for_task(capable(), spec(AgentName::Coder), "x", &tags());
        let shape = profile
            .shape_request(TaskState::default())
            .expect("no budget");
        assert!(shape.one_block.is_none() && shape.examples.is_empty());
        assert_eq!((shape.max_tokens, shape.opening), (None, None));
        assert_eq!(shape.min_temperature, None);
        assert!(!shape.strict_loops);
        assert_eq!(
            profile.on_done(TaskState::default(), &RoundReport::default()),
            None
        );
        let mut rules = RoundRules::default();
        profile.block_rules(&mut rules);
        assert!(rules.refuse_repeats && !rules.short_feedback && !rules.end_on_rerun);
    }

    #[test]
    fn a_small_models_coder_task_gets_examples_a_fence_and_one_nudge() {
        let task = "print hello with python";
        let mut profile = Profile::for_task(small(), spec(AgentName::Coder), task, &tags());
        let shape = profile
            .shape_request(TaskState::default())
            .expect("budget left");
        assert!(shape.one_block.is_some() && !shape.examples.is_empty());
        assert_eq!(shape.opening, Some("```python"));
        let done = TaskState {
            succeeded: true,
            ..TaskState::default()
        };
        assert_eq!(profile.shape_request(done).expect("left").opening, None);
        let nudge = profile.on_done(TaskState::default(), &RoundReport::default());
        assert!(nudge.is_some_and(|n| n.contains("```python")));
        assert_eq!(
            profile.on_done(TaskState::default(), &RoundReport::default()),
            None,
            "once a task"
        );
    }

    #[test]
    fn help_follows_the_registry_not_the_agents_name() {
        let casual = Profile::for_task(small(), spec(AgentName::Casual), "hi", &tags());
        let shape = casual
            .shape_request(TaskState::default())
            .expect("no budget");
        assert!(shape.one_block.is_none(), "casual runs no blocks");
        assert!(shape.examples.is_empty() && shape.opening.is_none());
        let mut file = Profile::for_task(small(), spec(AgentName::File), "find a.txt", &tags());
        let shape = file.shape_request(TaskState::default()).expect("no budget");
        assert!(shape.one_block.is_some(), "the file agent runs blocks");
        assert!(shape.examples.is_empty() && shape.opening.is_none());
        assert_eq!(
            file.on_done(TaskState::default(), &RoundReport::default()),
            None
        );
    }

    #[test]
    fn the_budget_caps_the_last_reply_then_ends_the_task() {
        let profile = Profile::for_task(small(), spec(AgentName::Coder), "x", &tags());
        let budget = crate::config::model_size::SMALL_TASK_TOKENS;
        let cap = crate::config::model_size::SMALL_REPLY_TOKENS;
        let near = TaskState {
            written: budget - 10,
            ..TaskState::default()
        };
        assert_eq!(
            profile.shape_request(near).expect("left").max_tokens,
            Some(10)
        );
        let spent = TaskState {
            written: budget,
            last_error: Some("bash block: boom"),
            ..TaskState::default()
        };
        let message = profile.shape_request(spent).expect_err("spent");
        assert!(message.starts_with(&format!("gave up: the model wrote {budget} tokens")));
        assert!(
            message.ends_with("; the last error: bash block: boom"),
            "{message}"
        );
        let worked = TaskState {
            succeeded: true,
            written: budget * 4,
            last_error: None,
        };
        assert_eq!(
            profile.shape_request(worked).expect("whole").max_tokens,
            Some(cap)
        );
    }

    #[test]
    fn a_stuck_model_samples_warmer() {
        let mut profile = Profile::for_task(small(), spec(AgentName::Coder), "x", &tags());
        let before = profile.shape_request(TaskState::default()).expect("left");
        assert_eq!(before.min_temperature, None);
        profile.after_round(1);
        let after = profile.shape_request(TaskState::default()).expect("left");
        assert!(after.min_temperature.is_some_and(|t| t > 0.0));
    }
}
