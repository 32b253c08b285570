//! The agent registry: one file per agent declaring its name, aliases, description, prompt,
//! tools and loop policy, and this list of them. Also the router (which agent for a prompt) and
//! the planner's pure parts.
//!
//! Adding an agent: its file (name, aliases, description, prompt by `include_str!` of its
//! `prompts/*.md`, tools by class, how it runs, routing words, loop policy), its line in
//! `REGISTRY`, and its wire entry in seek-wire's `agent_names!` (name, aliases, how it runs,
//! whether it calls MCP tools; its place in `listed`, which is `REGISTRY`'s order). The router picks it for
//! `auto` once it has labelled examples (`router::data::LABELS`, `assets/router/*.tsv`). It must
//! not know the terminal or run anything.

mod casual;
mod coder;
mod file;
pub mod planner;
pub mod router;
mod spec;
pub mod web;

pub use spec::{
    AgentSpec, CLARIFICATION, Decision, Prompt, RoundReport, Routing, Runs, common_rules,
};

use crate::wire::AgentName;

/// Every agent, in the order they are listed: one line per agent.
const DECLARED: &[&AgentSpec] = &[
    &coder::SPEC,
    &file::SPEC,
    &casual::SPEC,
    &planner::SPEC,
    &web::SPEC,
];

/// `DECLARED` as an array, whose length follows the list (an array is what callers iterate by
/// value).
pub const REGISTRY: [&AgentSpec; DECLARED.len()] = as_array(DECLARED);

const fn as_array<const N: usize>(declared: &[&'static AgentSpec]) -> [&'static AgentSpec; N] {
    // Every slot is overwritten: `N` is `declared.len()`.
    let mut all = [&coder::SPEC; N];
    let mut i = 0;
    while i < N {
        all[i] = declared[i];
        i += 1;
    }
    all
}

/// What `auto` means, for listings.
pub const AUTO_DESCRIPTION: &str = "picks the agent for each task (the router)";

/// The agent `name` (any case) or one of its aliases names; `auto` too (the names are the wire
/// entries', `AgentName::find`).
pub fn find(name: &str) -> Option<AgentName> {
    AgentName::find(name)
}

/// A name `find` does not know, with the names it does (the error a setting or a flag shows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent {name:?}: expected one of {expected}")]
pub struct UnknownAgent {
    pub name: String,
    /// `names()`.
    pub expected: String,
}

/// `find`, with the error a setting or a flag shows.
pub fn parse(name: &str) -> Result<AgentName, UnknownAgent> {
    find(name).ok_or_else(|| UnknownAgent {
        name: name.to_owned(),
        expected: names(),
    })
}

/// The names `find` accepts, as a list for messages: `auto, coder, file, …`.
pub fn names() -> String {
    AgentName::listing()
}

/// The declaration of `agent`. `auto` is not an agent of its own: until the router picked one,
/// it is the coder (the agent that can do the most alone).
pub fn spec(agent: AgentName) -> &'static AgentSpec {
    let wanted = if agent == AgentName::Auto {
        AgentName::Coder
    } else {
        agent
    };
    REGISTRY
        .iter()
        .copied()
        .find(|spec| spec.name == wanted)
        .unwrap_or(&coder::SPEC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wire_name_but_auto_has_one_declaration() {
        for name in AgentName::ALL {
            let declared = REGISTRY.iter().filter(|s| s.name == name).count();
            let expected = usize::from(name != AgentName::Auto);
            assert_eq!(declared, expected, "{name}");
        }
    }

    #[test]
    fn the_registry_keeps_the_wire_entries_order_and_facts() {
        let listed: Vec<AgentName> = REGISTRY.iter().map(|spec| spec.name).collect();
        assert_eq!(
            listed,
            AgentName::LISTED[1..],
            "REGISTRY's order is `listed`'s"
        );
        for spec in REGISTRY {
            assert_eq!(spec.aliases, spec.name.aliases(), "{}", spec.name);
            assert_eq!(spec.runs, spec.name.runs(), "{}", spec.name);
            let calls_mcp =
                spec.runs == Runs::Blocks && spec.tools.contains(&crate::tool_kind::ToolKind::Mcp);
            assert_eq!(calls_mcp, spec.name.calls_mcp(), "{}", spec.name);
        }
    }

    #[test]
    fn agenticseeks_roles_are_accepted_as_aliases() {
        for (role, agent) in [
            ("talk", AgentName::Casual),
            ("code", AgentName::Coder),
            ("files", AgentName::File),
            ("web", AgentName::Web),
            ("planification", AgentName::Planner),
            ("CODER", AgentName::Coder),
            (" Auto ", AgentName::Auto),
        ] {
            assert_eq!(find(role), Some(agent), "{role}");
        }
        assert_eq!(find("wizard"), None);
        assert!(
            parse("wizard")
                .unwrap_err()
                .to_string()
                .contains("auto, coder, file")
        );
    }

    #[test]
    fn each_agent_gets_the_tools_of_its_classes_in_the_order_they_are_taught() {
        use crate::tool_kind::ToolKind::{self, *};
        let expected: [(AgentName, &[ToolKind]); 5] = [
            (
                AgentName::Coder,
                &[Bash, Python, C, Go, Java, FileFinder, Mcp],
            ),
            (AgentName::File, &[FileFinder, Bash, Mcp]),
            (AgentName::Casual, &[]),
            (AgentName::Planner, &[]),
            (AgentName::Web, &[WebSearch]),
        ];
        for (agent, tools) in expected {
            assert_eq!(spec(agent).tools, tools, "{agent}");
        }
    }

    #[test]
    fn no_alias_names_two_agents() {
        let mut seen = std::collections::HashSet::new();
        for spec in REGISTRY {
            assert!(seen.insert(spec.name.as_str()));
            for alias in spec.aliases {
                assert!(seen.insert(alias), "{alias} is declared twice");
                assert_eq!(*alias, alias.to_ascii_lowercase());
            }
        }
    }
}
