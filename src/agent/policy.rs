//! Per-agent loop policies: after a round, is the task done, does the model get another turn, or
//! does it need the user? Pure decisions; the caps (failed rounds, total rounds) are applied by
//! the turn.

use crate::config::AgentName;
use crate::tool_kind::ToolKind;

/// The sentinel a model writes to ask the user a question (AgenticSeek's).
pub const CLARIFICATION: &str = "REQUEST_CLARIFICATION";

/// What one round produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundReport {
    /// The reply had tool blocks for this agent.
    pub had_blocks: bool,
    /// Every block ran and succeeded (false when one failed or was not closed).
    pub all_succeeded: bool,
    /// The tool of the last block that ran.
    pub last_tool: Option<ToolKind>,
    /// The reply asked for clarification.
    pub clarification: bool,
    /// The reply was cut for repeating itself.
    pub repetition: bool,
}

/// What happens next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Done,
    /// Ask the model again; `failed` counts the round against `max_attempts`.
    AskAgain {
        failed: bool,
    },
    Clarify,
}

pub fn decide(agent: AgentName, report: &RoundReport) -> Decision {
    if report.repetition {
        return Decision::AskAgain { failed: true };
    }
    if agent == AgentName::Casual {
        return Decision::Done;
    }
    if report.clarification && !report.had_blocks {
        return Decision::Clarify;
    }
    if !report.had_blocks {
        return Decision::Done;
    }
    if !report.all_succeeded {
        return Decision::AskAgain { failed: true };
    }
    match agent {
        // AgenticSeek's coder rule: a successful round is the end unless its last block's
        // output is for the model to read (bash's); then it goes on.
        AgentName::Coder | AgentName::Auto
            if !report.last_tool.is_some_and(ToolKind::coder_reads_output) =>
        {
            Decision::Done
        }
        // The file agent works one command at a time until it answers without a block.
        _ => Decision::AskAgain { failed: false },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(had_blocks: bool, all_succeeded: bool, last_tool: Option<ToolKind>) -> RoundReport {
        RoundReport {
            had_blocks,
            all_succeeded,
            last_tool,
            ..RoundReport::default()
        }
    }

    #[test]
    fn coder() {
        let c = AgentName::Coder;
        assert_eq!(
            decide(c, &round(false, true, None)),
            Decision::Done,
            "no block: final answer"
        );
        assert_eq!(
            decide(c, &round(true, true, Some(ToolKind::Python))),
            Decision::Done
        );
        assert_eq!(
            decide(c, &round(true, true, Some(ToolKind::Bash))),
            Decision::AskAgain { failed: false },
            "read bash output"
        );
        assert_eq!(
            decide(c, &round(true, false, Some(ToolKind::Python))),
            Decision::AskAgain { failed: true }
        );
        let ask = RoundReport {
            clarification: true,
            ..round(false, true, None)
        };
        assert_eq!(decide(c, &ask), Decision::Clarify);
        let looping = RoundReport {
            repetition: true,
            ..round(false, true, None)
        };
        assert_eq!(decide(c, &looping), Decision::AskAgain { failed: true });
    }

    #[test]
    fn file_agent_goes_on_after_each_success() {
        let f = AgentName::File;
        assert_eq!(
            decide(f, &round(true, true, Some(ToolKind::FileFinder))),
            Decision::AskAgain { failed: false }
        );
        assert_eq!(
            decide(f, &round(true, true, Some(ToolKind::Bash))),
            Decision::AskAgain { failed: false }
        );
        assert_eq!(
            decide(f, &round(true, false, Some(ToolKind::Bash))),
            Decision::AskAgain { failed: true }
        );
        assert_eq!(decide(f, &round(false, true, None)), Decision::Done);
    }

    #[test]
    fn casual_answers_once() {
        assert_eq!(
            decide(AgentName::Casual, &round(false, true, None)),
            Decision::Done
        );
        let ask = RoundReport {
            clarification: true,
            ..round(false, true, None)
        };
        assert_eq!(decide(AgentName::Casual, &ask), Decision::Done);
    }
}
