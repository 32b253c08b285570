//! The names the wire spells: agents and approval policies.
//!
//! Owns the canonical spellings only. Aliases (`talk`, `code`, …), descriptions and what an agent
//! does belong to the agent registry (`crate::agents`); this must not know them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The agents a task can be given. On the wire and in settings it is the lowercase name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentName {
    /// Let the router pick an agent for each task.
    Auto,
    Casual,
    Coder,
    File,
    Planner,
    Web,
}

impl AgentName {
    pub const ALL: [AgentName; 6] = [
        Self::Auto,
        Self::Casual,
        Self::Coder,
        Self::File,
        Self::Planner,
        Self::Web,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Casual => "casual",
            Self::Coder => "coder",
            Self::File => "file",
            Self::Planner => "planner",
            Self::Web => "web",
        }
    }
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
