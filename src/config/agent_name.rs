//! The names of the agents a task can be given, as settings and the wire spell them.
//!
//! Owns the names and their parsing. It must not know what an agent does.

use std::fmt;
use std::str::FromStr;

/// The agents a task can be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentName {
    /// Pick an agent for the task (the coder until a router exists).
    Auto,
    Casual,
    Coder,
    File,
}

impl AgentName {
    pub const ALL: [AgentName; 4] = [Self::Auto, Self::Casual, Self::Coder, Self::File];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Casual => "casual",
            Self::Coder => "coder",
            Self::File => "file",
        }
    }
}

impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AgentName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|a| a.as_str() == wanted)
            .ok_or_else(|| "expected one of: auto, casual, coder, file".to_owned())
    }
}
