//! The web agent: searches the web and reads pages. Not in this build yet: its steps and tasks
//! fail with a message saying so.

use super::spec::{AgentSpec, Decision, Prompt, RoundReport, Runs};
use crate::wire::AgentName;

pub const SPEC: AgentSpec = AgentSpec {
    name: AgentName::Web,
    aliases: &["browser", "search"],
    description: "searches the web and reads pages (not available yet)",
    prompt: Prompt {
        file: "web.md",
        text: "",
    },
    tools: &[],
    runs: Runs::Unavailable(
        "the web agent is not available in this version of seek (no web search or browser yet); \
         the coder can fetch a known URL with curl",
    ),
    policy,
};

fn policy(_report: &RoundReport) -> Decision {
    Decision::Done
}
