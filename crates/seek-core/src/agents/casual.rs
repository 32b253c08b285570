//! The casual agent: talks, answers from what the model knows, runs nothing.

use super::spec::{AgentSpec, Decision, Prompt, RoundReport, Routing};
use crate::wire::AgentName;

pub(crate) const SPEC: AgentSpec = AgentSpec {
    name: AgentName::Casual,
    aliases: AgentName::Casual.aliases(),
    description: "talks and answers questions from what the model knows; runs nothing",
    prompt: Prompt {
        file: "casual.md",
        text: include_str!("../../../../prompts/casual.md"),
    },
    small_prompt: None,
    tools: &[],
    runs: AgentName::Casual.runs(),
    done_by_running: false,
    routing: Routing {
        because: "a question or a chat, no code needed",
        cues: "words",
    },
    policy,
};

/// One reply is the answer; a reply that kept repeating itself is asked again.
fn policy(report: &RoundReport) -> Decision {
    if report.repetition {
        Decision::AskAgain { failed: true }
    } else {
        Decision::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casual_answers_once() {
        assert_eq!(policy(&RoundReport::default()), Decision::Done);
        let ask = RoundReport {
            clarification: true,
            ..RoundReport::default()
        };
        assert_eq!(policy(&ask), Decision::Done);
    }
}
