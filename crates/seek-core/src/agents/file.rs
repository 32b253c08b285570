//! The file agent: finds, reads and moves files, one command at a time.

use super::spec::{AgentSpec, Decision, Prompt, RoundReport, Routing, common_rules};
use crate::tools::{ToolClass, tools_of};
use crate::wire::AgentName;

pub(crate) const SPEC: AgentSpec = AgentSpec {
    name: AgentName::File,
    aliases: AgentName::File.aliases(),
    description: "finds, reads, moves and organises files, one command at a time",
    prompt: Prompt {
        file: "file.md",
        text: include_str!("../../../../prompts/file.md"),
    },
    small_prompt: None,
    tools: tools_of!(ToolClass::Files, ToolClass::Shell, ToolClass::Mcp),
    runs: AgentName::File.runs(),
    done_by_running: false,
    routing: Routing {
        because: "asks about files",
        cues: "words",
    },
    policy,
};

/// One command at a time until it answers without a block.
fn policy(report: &RoundReport) -> Decision {
    common_rules(report).unwrap_or(Decision::AskAgain { failed: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::spec::round;
    use crate::tool_kind::ToolKind;

    #[test]
    fn file_agent_goes_on_after_each_success() {
        for tool in [ToolKind::FileFinder, ToolKind::Bash] {
            assert_eq!(
                policy(&round(true, true, Some(tool))),
                Decision::AskAgain { failed: false }
            );
        }
        assert_eq!(
            policy(&round(true, false, Some(ToolKind::Bash))),
            Decision::AskAgain { failed: true }
        );
        assert_eq!(policy(&round(false, true, None)), Decision::Done);
    }
}
