//! Reading a plan out of a reply, tolerantly: the ```json block (or bare JSON) with
//! `{"plan": [{"agent", "id", "need", "task"}]}`, the task headings above it.
//!
//! Pure; it must not do I/O.

use serde_json::Value;

use crate::wire::{AgentName, PlanStep, StepStatus};

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
///
/// A first version: strict JSON in the first ```json block or the whole reply; ids renumbered.
pub fn parse_plan(reply: &str, first_id: usize) -> Result<ParsedPlan, PlanError> {
    let json = json_text(reply).ok_or(PlanError::NoPlan)?;
    let value: Value = serde_json::from_str(json).map_err(|e| PlanError::BadJson(e.to_string()))?;
    let items = value
        .get("plan")
        .and_then(Value::as_array)
        .ok_or(PlanError::NoPlan)?;
    if items.is_empty() {
        return Err(PlanError::Empty);
    }
    let mut steps = Vec::new();
    for (n, item) in items.iter().enumerate() {
        let agent_text = item.get("agent").and_then(Value::as_str).unwrap_or("");
        let agent = crate::agents::find(agent_text)
            .filter(|a| !matches!(a, AgentName::Auto | AgentName::Planner))
            .ok_or_else(|| {
                PlanError::Invalid(format!(
                    "step {} names the agent {agent_text:?}: use coder, file, web or casual",
                    n + 1
                ))
            })?;
        let task = item
            .get("task")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_owned();
        if task.is_empty() {
            return Err(PlanError::Invalid(format!("step {} has no task", n + 1)));
        }
        let need = match item.get("need") {
            Some(Value::Array(ids)) => ids.iter().map(id_text).collect(),
            Some(Value::Null) | None => Vec::new(),
            Some(other) => vec![id_text(other)],
        };
        steps.push(PlanStep {
            id: (first_id + n).to_string(),
            agent,
            task,
            need,
            title: None,
            status: StepStatus::Pending,
        });
    }
    Ok(ParsedPlan {
        steps,
        notes: Vec::new(),
    })
}

fn id_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.trim().to_owned(),
        other => other.to_string(),
    }
}

/// The text of the first ```json block, else the reply itself when it is a JSON object.
fn json_text(reply: &str) -> Option<&str> {
    if let Some(start) = reply.find("```json") {
        let body = &reply[start + "```json".len()..];
        let body = body.strip_prefix('\n').unwrap_or(body);
        let end = body.find("```").unwrap_or(body.len());
        return Some(body[..end].trim());
    }
    let trimmed = reply.trim();
    trimmed.starts_with('{').then_some(trimmed)
}

/// The JSON schema of a plan, flat, for servers that constrain output to a schema.
pub fn plan_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "plan": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "agent": {"type": "string", "enum": ["coder", "file", "web", "casual"]},
                        "id": {"type": "string"},
                        "need": {"type": "array", "items": {"type": "string"}},
                        "task": {"type": "string"}
                    },
                    "required": ["agent", "id", "need", "task"]
                }
            }
        },
        "required": ["plan"]
    })
}
