//! The names the wire spells: agents and approval policies.
//!
//! Owns the canonical spellings only (one `agent_names!` entry per agent). Aliases (`talk`,
//! `code`, …), descriptions and what an agent does belong to the agent registry
//! (`crate::agents`); this must not know them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Declares the agents' wire names: one entry per agent, its variant and its lowercase name.
/// The enum (serialized as that name), `AgentName::ALL` (in declaration order) and `as_str`
/// come from it, so a name is written once.
macro_rules! agent_names {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)+) => {
        /// The agents a task can be given. On the wire and in settings it is the lowercase name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum AgentName {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)+
        }

        impl AgentName {
            pub const ALL: [AgentName; [$(AgentName::$variant),+].len()] =
                [$(AgentName::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(AgentName::$variant => $name,)+
                }
            }
        }
    };
}

// Adding an agent: its entry here (the wire's spelling), its file in seek-core's `agents/`
// declaring its `AgentSpec`, and its line in `agents::REGISTRY` there.
agent_names! {
    /// Let the router pick an agent for each task.
    Auto => "auto",
    Casual => "casual",
    Coder => "coder",
    File => "file",
    Planner => "planner",
    Web => "web",
}

impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The canonical names only; settings and commands parse through the registry
/// (`crate::agents::find`), which knows the aliases too.
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
}
