//! The web agent: searches, reads pages, follows links, fills forms and concludes from the notes
//! it took (AgenticSeek's browser agent, with a step cap, no revisits, notes that survive
//! stateless steps, CAPTCHA and error pages called what they are). This module holds its
//! declaration and the pure parts: reading the model's answers (`parse`) and the prompts it
//! is sent (`prompt`). Running it is the agent runtime's (`crate::agent::web`).

pub mod parse;
pub mod prompt;

#[cfg(test)]
mod conformance_tests;

use super::spec::{AgentSpec, Decision, Prompt, RoundReport, Routing};
use crate::tools::{ToolClass, tools_of};
use crate::wire::AgentName;

pub(crate) const SPEC: AgentSpec = AgentSpec {
    name: AgentName::Web,
    aliases: AgentName::Web.aliases(),
    description: "searches the web, reads pages, follows links and fills forms",
    prompt: Prompt {
        file: "web.md",
        text: include_str!("../../../../../prompts/web.md"),
    },
    small_prompt: None,
    tools: tools_of!(ToolClass::WebSearch),
    runs: AgentName::Web.runs(),
    done_by_running: false,
    routing: Routing {
        because: "needs the web",
        cues: "words",
    },
    policy,
};

/// The web agent's steps are not block rounds: its runner decides.
fn policy(_report: &RoundReport) -> Decision {
    Decision::Done
}
