//! The names the wire spells: agents and approval policies.
//!
//! Owns the agents' spellings (one `agent_names!` entry per agent: its canonical name and the
//! aliases accepted for it in settings, flags, plans and `/agent`), the order agents are listed
//! in, and the two facts about an agent that layers below the registry need (how it does a task,
//! and whether its blocks may call MCP tools: the configuration checks `[tools.mcp] agents`
//! against them). Descriptions, prompts and tools belong to the agent registry (seek-core's
//! `agents`), which fills its declarations from these entries; this must not know them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How an agent does a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// The block loop: stream a reply, run its blocks, feed the results back, by its policy.
    Blocks,
    /// The planner: a plan of steps, each done by another agent.
    Plan,
    /// The web agent: search, read pages, follow links, fill forms, conclude from notes.
    Web,
}

/// Declares the agents: the order they are listed in, then one entry per agent: its variant, its
/// lowercase name, its aliases (other names accepted for it, lowercase), how it runs and whether
/// its blocks may call MCP tools. The enum (serialized as the name), `AgentName::ALL` (in
/// declaration order), `LISTED`, `as_str`, `aliases`, `runs` and `calls_mcp` come from it, so
/// each is written once.
macro_rules! agent_names {
    (
        listed: [$($listed:ident),+ $(,)?];
        $($(#[$doc:meta])* $variant:ident => $name:literal {
            aliases: [$($alias:literal),* $(,)?],
            runs: $runs:ident,
            mcp: $mcp:literal $(,)?
        },)+
    ) => {
        /// The agents a task can be given. On the wire and in settings it is the lowercase name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum AgentName {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)+
        }

        impl AgentName {
            pub const ALL: [AgentName; [$(AgentName::$variant),+].len()] =
                [$(AgentName::$variant),+];

            /// Every agent in the order listings name them (`auto` first, then the agent
            /// registry's order, which a test there keeps the same).
            pub const LISTED: [AgentName; [$(AgentName::$listed),+].len()] =
                [$(AgentName::$listed),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(AgentName::$variant => $name,)+
                }
            }

            /// Other names accepted for the agent (AgenticSeek's roles among them), lowercase.
            pub const fn aliases(self) -> &'static [&'static str] {
                match self {
                    $(AgentName::$variant => &[$($alias),*],)+
                }
            }

            /// How the agent does a task (`auto`: as the coder, until the router picked one).
            pub const fn runs(self) -> Runs {
                match self {
                    $(AgentName::$variant => Runs::$runs,)+
                }
            }

            /// Whether the agent's blocks may call MCP tools (`auto` is no agent of its own:
            /// the agent the router picks may).
            pub const fn calls_mcp(self) -> bool {
                match self {
                    $(AgentName::$variant => $mcp,)+
                }
            }
        }
    };
}

// Adding an agent: its entry here (the wire's spelling and aliases), its place in `listed`, its
// file in seek-core's `agents/` declaring its `AgentSpec`, and its line in `agents::REGISTRY`
// there (in the `listed` order).
agent_names! {
    listed: [Auto, Coder, File, Casual, Planner, Web];
    /// Let the router pick an agent for each task.
    Auto => "auto" { aliases: [], runs: Blocks, mcp: false },
    Casual => "casual" { aliases: ["talk", "chat"], runs: Blocks, mcp: false },
    Coder => "coder" { aliases: ["code", "coding"], runs: Blocks, mcp: true },
    File => "file" { aliases: ["files"], runs: Blocks, mcp: true },
    Planner => "planner" { aliases: ["planification", "plan"], runs: Plan, mcp: false },
    Web => "web" { aliases: ["browser", "search"], runs: Web, mcp: false },
}

impl AgentName {
    /// The agent `name` (any case, spaces around) or one of its aliases names; `auto` too.
    pub fn find(name: &str) -> Option<AgentName> {
        let wanted = name.trim().to_ascii_lowercase();
        Self::LISTED
            .into_iter()
            .find(|agent| agent.as_str() == wanted || agent.aliases().contains(&wanted.as_str()))
    }

    /// The names `find` accepts, in listing order, for messages: `auto, coder, file, …`.
    pub fn listing() -> String {
        let names: Vec<&str> = Self::LISTED.iter().map(|a| a.as_str()).collect();
        names.join(", ")
    }
}

impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The canonical names only; settings and commands parse through `AgentName::find`, which
/// knows the aliases too.
impl FromStr for AgentName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|a| a.as_str() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|a| a.as_str()).collect();
                format!("expected one of: {}", names.join(", "))
            })
    }
}

/// Whether blocks run without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Run blocks as they come.
    Auto,
    /// Show each block and wait for y (run), n (decline), a (always), e (edit).
    Ask,
    /// Show blocks, never run them.
    Never,
}

impl Approval {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Ask => "ask",
            Self::Never => "never",
        }
    }
}

impl fmt::Display for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Approval {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "ask" => Ok(Self::Ask),
            "never" => Ok(Self::Never),
            _ => Err("expected one of: auto, ask, never".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_wire_names_do_not_change() {
        let names: Vec<&str> = AgentName::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(names, ["auto", "casual", "coder", "file", "planner", "web"]);
        for agent in AgentName::ALL {
            let json = serde_json::to_string(&agent).expect("serializes");
            assert_eq!(json, format!("\"{agent}\""));
            let back: AgentName = serde_json::from_str(&json).expect("deserializes");
            assert_eq!(back, agent);
            assert_eq!(agent.as_str().parse::<AgentName>(), Ok(agent));
        }
    }

    #[test]
    fn names_and_aliases_find_one_agent_each() {
        let mut seen = std::collections::HashSet::new();
        for agent in AgentName::LISTED {
            assert!(seen.insert(agent.as_str()), "{agent} listed twice");
            for alias in agent.aliases() {
                assert!(seen.insert(alias), "{alias} is declared twice");
                assert_eq!(*alias, alias.to_ascii_lowercase());
                assert_eq!(AgentName::find(&alias.to_ascii_uppercase()), Some(agent));
            }
            assert_eq!(AgentName::find(&format!(" {agent} ")), Some(agent));
        }
        assert_eq!(AgentName::LISTED.len(), AgentName::ALL.len());
        assert_eq!(AgentName::find("wizard"), None);
        assert_eq!(
            AgentName::listing(),
            "auto, coder, file, casual, planner, web"
        );
    }
}
