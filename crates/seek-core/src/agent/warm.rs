//! Reading ahead while the user is idle: once a task (or the user's command) has finished, or a
//! session was resumed, the start of the request each agent the router may pick next would send
//! — its system prompt and the conversation so far, without the new message — is handed to the
//! model (`ChatModel::warm_up`), so that the built-in engine reads it before the next task
//! arrives and a first switch to that agent reads only the new message. Servers do nothing.
//!
//! Owns which agents are read ahead, in which order, and rendering their requests' start with
//! the very function every request is rendered with (`reply::rendered`): what cannot be
//! predicted exactly (a conversation the budget must trim, the web agent's fresh
//! conversations) is not read ahead. The worked example a small model's coder gets for each
//! task goes after the conversation (`reply::examples_at`), so the start before it is read
//! ahead as any other.
//! It must not wait for anything (a warm-up uses only what an earlier task learnt: the model's
//! size and context window) nor run while a task runs (the runtime calls it only when idle).

use super::memory::Memory;
use super::prompts::PromptEnv;
use super::reply;
use crate::agents::Runs;
use crate::config::{AgentName, Config};
use crate::llm::{Message, WarmUp};

/// The agents read ahead after the one whose prompt the conversation holds (always first: its
/// own follow-up then reads only the new message, even after a note or a resume), in this
/// order: the coder is the router's choice when it is unsure, casual its choice for short
/// prompts ("thanks", "ok") and the usual way out of a coding task, then file and the
/// planner. The web agent is not: each of its steps is a fresh conversation.
pub(super) const AFTER_CURRENT: [AgentName; 4] = [
    AgentName::Coder,
    AgentName::Casual,
    AgentName::File,
    AgentName::Planner,
];

/// The agents to read ahead for, likeliest first, when `current`'s prompt is the memory's.
pub(super) fn order(current: AgentName) -> Vec<AgentName> {
    std::iter::once(current)
        .chain(AFTER_CURRENT)
        .filter(|&agent| crate::agents::spec(agent).runs != Runs::Web)
        .fold(Vec::new(), |mut order, agent| {
            if !order.contains(&agent) {
                order.push(agent);
            }
            order
        })
}

/// The messages `agent`'s next request starts with, before its new message: `memory` under
/// `agent`'s system prompt, rendered as its request will be. `None` when that start cannot be
/// known now: the web agent's (a fresh conversation each step), or a conversation the context
/// budget trims (the new message, or the worked example chosen for it, may change what is
/// trimmed).
pub(super) fn next_request_start(
    config: &Config,
    env: &PromptEnv,
    memory: &Memory,
    window: u64,
    agent: AgentName,
) -> Option<Vec<Message>> {
    let spec = crate::agents::spec(agent);
    let examples = match spec.runs {
        Runs::Web => return None,
        Runs::Plan => Vec::new(),
        // Examples chosen for each task go after this start (`reply::examples_at`), so it does
        // not depend on them; fixed ones are part of it.
        Runs::Blocks => {
            super::profile::examples_for(config.adaptations(), spec, None).unwrap_or_default()
        }
    };
    let mut memory = memory.clone();
    memory.set_system_prompt(super::prompt_for(config, env, agent));
    let rendered = reply::rendered(config, &memory, window, &examples).ok()?;
    (!rendered.fitted.trimmed()).then_some(rendered.messages)
}

impl super::Runtime {
    /// Hands the model the conversations to read ahead now that nothing runs (a no-op for
    /// servers, with `[local] warm_agents = false`, or before a task has told the model's size
    /// and window).
    pub(super) fn warm_up(&self) {
        let ctx = &self.ctx;
        // Nothing is rendered for a model that reads nothing ahead (a server): the task's end
        // is told right after this.
        if !ctx.config.local.warm_agents.value || self.running.is_some() || !ctx.model.reads_ahead()
        {
            return;
        }
        let (Some(config), Some(&window), Some(memory)) = (
            ctx.sized.get(),
            ctx.context_window.get(),
            self.memory.as_ref(),
        ) else {
            return;
        };
        // The MCP tools the prompts list, as the next task's start lists them.
        let env = match &ctx.mcp {
            Some(hub) => self.prompt_env.with_mcp_tools(config, hub),
            None => self.prompt_env.clone(),
        };
        let conversations: Vec<Vec<Message>> = order(self.prompt_agent)
            .into_iter()
            .filter_map(|agent| next_request_start(config, &env, memory, window, agent))
            .collect();
        if conversations.is_empty() {
            return;
        }
        ctx.model.warm_up(WarmUp {
            conversations,
            prefix_file: reply::prefix_file(ctx),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelSize;
    use crate::llm::Role;

    fn config(size: ModelSize) -> Config {
        Config::defaults_for_tests(size)
    }

    fn memory(config: &Config, agent: AgentName) -> Memory {
        let mut memory = Memory::new(super::super::prompt_for(
            config,
            &PromptEnv::default(),
            agent,
        ));
        memory.begin_turn("count the lines of main.rs");
        memory.push(Role::Assistant, "```bash\nwc -l main.rs\n```");
        memory.push(Role::User, "[success] 42 main.rs");
        memory.push(Role::Assistant, "main.rs has 42 lines.");
        memory
    }

    #[test]
    fn the_current_agent_comes_first_then_a_fixed_order_without_the_web_agent() {
        assert_eq!(
            order(AgentName::File),
            [
                AgentName::File,
                AgentName::Coder,
                AgentName::Casual,
                AgentName::Planner
            ]
        );
        assert_eq!(order(AgentName::Coder), AFTER_CURRENT);
        assert_eq!(order(AgentName::Web), AFTER_CURRENT);
    }

    #[test]
    fn the_next_request_starts_with_the_agent_s_prompt_and_the_whole_conversation() {
        let config = config(ModelSize::Large);
        let env = PromptEnv::default();
        let coder = memory(&config, AgentName::Coder);
        let casual = next_request_start(&config, &env, &coder, 8192, AgentName::Casual)
            .expect("casual's next request is known");
        assert_eq!(
            casual[0].content,
            super::super::prompt_for(&config, &env, AgentName::Casual)
        );
        assert_eq!(casual[1..], coder.messages()[1..]);
        // The task that follows is rendered by the same function: this is its start.
        let mut next = coder.clone();
        next.set_system_prompt(super::super::prompt_for(&config, &env, AgentName::Casual));
        next.begin_turn("thanks!");
        let sent = reply::rendered(&config, &next, 8192, &[])
            .expect("fits")
            .messages;
        assert_eq!(sent[..sent.len() - 1], casual[..]);
    }

    #[test]
    fn what_is_trimmed_or_fresh_is_not_read_ahead_and_a_small_coder_s_start_is() {
        let small = config(ModelSize::Small);
        let env = PromptEnv::default();
        let coder = memory(&small, AgentName::Coder);
        // A small model's coder gets the worked example nearest each task, after the start.
        let start = next_request_start(&small, &env, &coder, 8192, AgentName::Coder)
            .expect("the start before the example is known");
        let task = "print the sum of the numbers in data.txt";
        let examples = crate::agent::profile::examples_for(
            small.adaptations(),
            crate::agents::spec(AgentName::Coder),
            Some(task),
        )
        .expect("a task's examples");
        assert!(
            !examples.is_empty(),
            "a small model's coder is shown an example"
        );
        let mut next = coder.clone();
        next.begin_turn(task);
        let sent = reply::rendered(&small, &next, 8192, &examples)
            .expect("fits")
            .messages;
        assert_eq!(sent[..start.len()], start[..]);
        assert_eq!(sent[start.len()..sent.len() - 1], examples[..]);
        assert!(next_request_start(&small, &env, &coder, 8192, AgentName::Casual).is_some());
        assert!(next_request_start(&small, &env, &coder, 8192, AgentName::Planner).is_some());
        assert_eq!(
            next_request_start(&small, &env, &coder, 8192, AgentName::Web),
            None
        );
        // A capable model's coder gets no examples: its start is known.
        let large = config(ModelSize::Large);
        let coder = memory(&large, AgentName::Coder);
        assert!(next_request_start(&large, &env, &coder, 8192, AgentName::Coder).is_some());
        // A long output the budget shortens: what it keeps may change with the new message.
        let mut long = memory(&large, AgentName::Coder);
        long.push(
            Role::User,
            "[success] ".to_owned() + &"a line of output\n".repeat(2000),
        );
        long.push(Role::Assistant, "Done.");
        let window = 4096;
        assert!(next_request_start(&large, &env, &coder, window, AgentName::Casual).is_some());
        assert_eq!(
            next_request_start(&large, &env, &long, window, AgentName::Casual),
            None
        );
    }
}
