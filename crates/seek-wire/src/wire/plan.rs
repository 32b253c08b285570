//! What the planner and the router tell front ends: a plan's steps and their state, and which
//! agent the router picked.
//!
//! Plain serde data; it must not decide anything.

use serde::{Deserialize, Serialize};

use super::AgentName;

/// Where a step of a plan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    #[default]
    Pending,
    Running,
    Done,
    Failed,
    /// Not run: the task was stopped, or the plan gave up before this step.
    Skipped,
}

/// One step of a plan, as the model wrote it (ids renumbered when they were not 1..n).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// `"1"`, `"2"`, …: unique within the plan.
    pub id: String,
    /// The agent that does the step (never `auto` or `planner`).
    pub agent: AgentName,
    /// The instruction for the agent.
    pub task: String,
    /// Ids of earlier steps whose results the agent is given.
    #[serde(default)]
    pub need: Vec<String>,
    /// The step's heading (`## Task 1: …`), when the model wrote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub status: StepStatus,
}

/// Why the router picked an agent: a short phrase for the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Route {
    pub agent: AgentName,
    /// The classifier's probability for `agent`, 0 to 1.
    pub confidence: f64,
    /// The classifier's evidence (`words: search, web`), for diagnosis.
    pub reason: String,
    /// Why, in plain words for a user (`asks to write or run code`); empty in older sessions.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// Below this confidence a front end shows the router's confidence beside its choice.
pub const ROUTE_SHOWN_UNSURE_BELOW: f64 = 0.6;

impl Route {
    /// The choice as a front end shows it: `coder (asks to write or run code)`, with the
    /// confidence only when the router was unsure (`coder (not sure which agent fits · 0.38)`).
    /// A route without `why` (an older session) shows its `reason`.
    pub fn summary(&self) -> String {
        let why = if self.why.is_empty() {
            &self.reason
        } else {
            &self.why
        };
        // A NaN or out-of-range confidence (a damaged session) shows as what it means at most.
        let confidence = if self.confidence.is_finite() {
            self.confidence.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let mut words = why.clone();
        if confidence < ROUTE_SHOWN_UNSURE_BELOW {
            if !words.is_empty() {
                words.push_str(" · ");
            }
            words.push_str(&format!("{confidence:.2}"));
        }
        if words.is_empty() {
            self.agent.to_string()
        } else {
            format!("{} ({words})", self.agent)
        }
    }
}
