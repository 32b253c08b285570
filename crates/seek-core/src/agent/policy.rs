//! Per-agent loop policies: after a round, is the task done, does the model get another turn, or
//! does it need the user? Each agent declares its own in its registry file (`crate::agents`);
//! this asks it. Pure decisions; the caps (failed rounds, total rounds) are applied by the turn.

pub use crate::agents::{CLARIFICATION, Decision, RoundReport};
use crate::config::AgentName;

pub fn decide(agent: AgentName, report: &RoundReport) -> Decision {
    (crate::agents::spec(agent).policy)(report)
}
