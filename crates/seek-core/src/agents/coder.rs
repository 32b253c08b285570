//! The coder: writes and runs code in every language seek has a tool for.

use super::spec::{AgentSpec, Decision, Prompt, RoundReport, Routing, common_rules};
use crate::tool_kind::ToolKind;
use crate::tools::{ToolClass, tools_of};
use crate::wire::AgentName;

pub(crate) const SPEC: AgentSpec = AgentSpec {
    name: AgentName::Coder,
    aliases: AgentName::Coder.aliases(),
    description: "writes and runs code (bash, python, C, Go, Java) and fixes its own errors",
    prompt: Prompt {
        file: "coder.md",
        text: include_str!("../../../../prompts/coder.md"),
    },
    small_prompt: Some(Prompt {
        file: "coder-small.md",
        text: include_str!("../../../../prompts/coder-small.md"),
    }),
    // Every class but web search: searching is the web agent's (a planner step names it).
    tools: tools_of!(
        ToolClass::Shell,
        ToolClass::Program,
        ToolClass::Files,
        ToolClass::Mcp
    ),
    runs: AgentName::Coder.runs(),
    done_by_running: true,
    routing: Routing {
        because: "asks to write or run code",
        cues: "words",
    },
    policy,
};

/// AgenticSeek's coder rule: a successful round is the end unless its last block's output is
/// for the model to read (bash's); then it goes on.
fn policy(report: &RoundReport) -> Decision {
    if let Some(decision) = common_rules(report) {
        return decision;
    }
    if report.last_tool.is_some_and(ToolKind::coder_reads_output) {
        Decision::AskAgain { failed: false }
    } else {
        Decision::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::spec::round;

    #[test]
    fn coder() {
        assert_eq!(policy(&round(false, true, None)), Decision::Done);
        assert_eq!(
            policy(&round(true, true, Some(ToolKind::Python))),
            Decision::Done
        );
        assert_eq!(
            policy(&round(true, true, Some(ToolKind::Bash))),
            Decision::AskAgain { failed: false },
            "read bash output"
        );
        assert_eq!(
            policy(&round(true, false, Some(ToolKind::Python))),
            Decision::AskAgain { failed: true }
        );
        let ask = RoundReport {
            clarification: true,
            ..round(false, true, None)
        };
        assert_eq!(policy(&ask), Decision::Clarify);
        let looping = RoundReport {
            repetition: true,
            ..round(false, true, None)
        };
        assert_eq!(policy(&looping), Decision::AskAgain { failed: true });
    }
}
