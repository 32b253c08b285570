//! The servers' tools as a system prompt lists them: name, a one-line description and the
//! arguments, within a budget; only the names when there are too many.
//!
//! Pure. It must not start or ask servers.

use super::ToolInfo;

/// The section listing `tools`, at most `budget` bytes; empty when there are no tools.
pub fn tools_section(tools: &[ToolInfo], budget: usize) -> String {
    let _ = (tools, budget);
    String::new()
}
