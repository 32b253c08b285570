//! Code blocks a reply holds for tools its agent does not have: ```` ```python ```` written to
//! the file agent, which has bash and file_finder only. They are not run (the agent cannot run
//! them) and must not pass as ordinary markdown either: the task would end `done` with nothing
//! done. This finds them and words what the model and the user are told.
//!
//! Pure text; it must not run anything or emit events (the turn does).

use crate::agents;
use crate::protocol::{self, ToolTags};
use crate::tool_kind::ToolKind;
use crate::wire::AgentName;

/// The blocks of a reply that its agent cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// Their canonical tags, in the order they first appear.
    pub tools: Vec<String>,
    /// An agent that has every one of those tools, to switch to.
    pub can_run: Option<AgentName>,
}

/// The tools checked: those that run code or read files. MCP depends on configured servers and
/// web searches on the web agent's own loop; a fence naming them elsewhere stays markdown.
fn checked_tags() -> ToolTags {
    ToolTags::new(
        ToolKind::ALL
            .into_iter()
            .filter(|k| !matches!(k, ToolKind::Mcp | ToolKind::WebSearch))
            .map(ToolKind::tag),
    )
}

/// The blocks of `reply` for tools that `own` (the agent's tags) does not hold, `None` when
/// there are none.
pub(crate) fn foreign_blocks(reply: &str, own: &ToolTags) -> Option<Foreign> {
    let mut tools: Vec<String> = Vec::new();
    for block in protocol::parse(reply, &checked_tags()).blocks {
        if own.resolve(&block.tag).is_none() && !tools.contains(&block.tag) {
            tools.push(block.tag);
        }
    }
    if tools.is_empty() {
        return None;
    }
    let has_all = |agent: AgentName| {
        let spec = agents::spec(agent);
        tools
            .iter()
            .all(|t| ToolKind::from_tag(t).is_some_and(|kind| spec.tools.contains(&kind)))
    };
    let can_run = [AgentName::Coder, AgentName::File]
        .into_iter()
        .find(|&a| has_all(a));
    Some(Foreign { tools, can_run })
}

/// `python`, `python and c`, `bash, c and go`.
fn listed(tools: &[String]) -> String {
    match tools {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What the user is told: why the blocks did not run, and what to do. `switch` is how the
/// front end switches agents (`/agent coder`, `--agent coder`), given the agent's name.
pub fn for_user(agent: AgentName, foreign: &Foreign, switch: impl Fn(&str) -> String) -> String {
    let mut text = format!(
        "the {agent} agent cannot run {} blocks, so that code was not run",
        listed(&foreign.tools)
    );
    if let Some(other) = foreign.can_run {
        text.push_str(&format!(
            ": ask again with the {other} agent ({})",
            switch(other.as_str())
        ));
    }
    text
}

/// How the task's end says it when nothing else ran: both ways of switching.
pub fn ending_message(agent: AgentName, foreign: &Foreign) -> String {
    for_user(agent, foreign, |other| {
        format!("`/agent {other}`, or `--agent {other}` with -p")
    })
}

/// What the model is told, so that it uses a tool it has.
pub(crate) fn for_model(agent: AgentName, foreign: &Foreign) -> String {
    let own: Vec<&str> = agents::spec(agent)
        .tools
        .iter()
        .filter(|k| !matches!(k, ToolKind::Mcp))
        .map(|k| k.tag())
        .collect();
    format!(
        "The {} blocks were not run: this agent cannot run them. Use only {} blocks.",
        listed(&foreign.tools),
        own.join(" or ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_tags() -> ToolTags {
        ToolTags::new(["file_finder", "bash"])
    }

    #[test]
    fn python_to_the_file_agent_is_foreign_and_the_coder_can_run_it() {
        let reply =
            "Count:\n```python\nprint(len(open('notes.txt').readlines()))\n```\n```py\nx\n```\n";
        let foreign = foreign_blocks(reply, &file_tags()).expect("foreign");
        assert_eq!(foreign.tools, ["python"]);
        assert_eq!(foreign.can_run, Some(AgentName::Coder));
        assert_eq!(
            ending_message(AgentName::File, &foreign),
            "the file agent cannot run python blocks, so that code was not run: ask again with the coder agent (`/agent coder`, or `--agent coder` with -p)"
        );
        assert_eq!(
            for_model(AgentName::File, &foreign),
            "The python blocks were not run: this agent cannot run them. Use only file_finder or bash blocks."
        );
    }

    #[test]
    fn own_blocks_prose_fences_and_examples_are_not_foreign() {
        let tags = file_tags();
        for reply in [
            "```bash\nwc -l notes.txt\n```\n",
            "```text\nplain\n```\n",
            "````markdown\n```python\nprint(1)\n```\n````\n",
            "```javascript\nconsole.log(1)\n```\n",
            "```mcp\ntime.now\n```\n",
            "no code at all",
        ] {
            assert_eq!(foreign_blocks(reply, &tags), None, "{reply:?}");
        }
    }

    #[test]
    fn several_tools_are_listed_once_each() {
        let reply = "```c\nint main(){}\n```\n```go\npackage main\n```\n```c\n```\n";
        let foreign = foreign_blocks(reply, &file_tags()).expect("foreign");
        assert_eq!(listed(&foreign.tools), "c and go");
        assert_eq!(listed(&["a".into(), "b".into(), "c".into()]), "a, b and c");
    }
}
