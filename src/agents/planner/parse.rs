//! Reading a plan out of a reply, tolerantly: the ```json block (or bare JSON) with
//! `{"plan": [{"agent", "id", "need", "task"}]}`, the task headings above it.
//!
//! Pure; it must not do I/O.

use crate::wire::PlanStep;

/// A plan that parsed, and what was corrected in it (said to the user with the plan).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParsedPlan {
    pub steps: Vec<PlanStep>,
    pub notes: Vec<String>,
}

/// Why a reply held no usable plan; the text is fed back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("no plan was found: write the steps as a ```json block with a \"plan\" list")]
    NoPlan,
    #[error("the plan is not valid JSON: {0}")]
    BadJson(String),
    #[error("the plan has no steps")]
    Empty,
    #[error("{0}")]
    Invalid(String),
}

/// The plan in `reply`, its steps numbered from `first_id` (1 for a new plan; after the steps
/// already run for a replan).
pub fn parse_plan(reply: &str, first_id: usize) -> Result<ParsedPlan, PlanError> {
    let _ = (reply, first_id);
    Err(PlanError::NoPlan)
}

/// The JSON schema of a plan, flat, for servers that constrain output to a schema.
pub fn plan_schema() -> serde_json::Value {
    serde_json::json!({})
}
