//! Reading a plan out of a reply, tolerantly: the ```json block (or bare JSON, or an untagged
//! fence holding a plan) with `{"plan": [{"agent", "id", "need", "task"}]}`, the task headings
//! above it as titles; what small models get wrong is repaired and said in notes, what cannot
//! be repaired is an error whose text tells the model what to fix.
//!
//! Pure; it must not do I/O. `extract` finds where the plan may be, `lenient` makes it strict
//! JSON, `steps` turns it into `PlanStep`s.

mod extract;
mod lenient;
mod steps;
#[cfg(test)]
mod tests;

use serde_json::Value;

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
    #[error("the plan has no steps: put at least one step in the \"plan\" list")]
    Empty,
    #[error("{0}")]
    Invalid(String),
}

/// The plan in `reply`, its steps numbered from `first_id` (1 for a new plan; after the steps
/// already run for a replan).
///
/// Tried in order: ```json (any case, json5, jsonc) blocks, untagged blocks holding a plan key,
/// then JSON starting at a `{` or `[` anywhere in the reply; the first piece that holds a plan
/// list is the plan (a plan found but wrong is an error at once). Needs that name an earlier
/// step of a replan (below `first_id`) are kept.
pub fn parse_plan(reply: &str, first_id: usize) -> Result<ParsedPlan, PlanError> {
    let mut syntax_error = None;
    for candidate in extract::candidates(reply) {
        let strict = lenient::strict_json(candidate.text);
        // The first value only: prose after the JSON is not the plan's business.
        let value = serde_json::Deserializer::from_str(&strict)
            .into_iter::<Value>()
            .next();
        let value = match value {
            Some(Ok(value)) => value,
            Some(Err(error)) => {
                if candidate.meant_as_json && syntax_error.is_none() {
                    syntax_error = Some(PlanError::BadJson(error.to_string()));
                }
                continue;
            }
            None => continue,
        };
        let Some(items) = steps::plan_items(&value) else {
            continue;
        };
        let titles = extract::headings(reply, candidate.starts_at);
        let mut notes = Vec::new();
        let steps = steps::steps(items, first_id, titles, &mut notes)?;
        cap_notes(&mut notes);
        return Ok(ParsedPlan { steps, notes });
    }
    Err(syntax_error.unwrap_or(PlanError::NoPlan))
}

/// Notes a plan carries, at most: each is a line on the user's screen and in every event.
const MAX_NOTES: usize = 16;

/// Keeps the first notes and says how many more there were.
fn cap_notes(notes: &mut Vec<String>) {
    if notes.len() > MAX_NOTES {
        let more = notes.len() - (MAX_NOTES - 1);
        notes.truncate(MAX_NOTES - 1);
        notes.push(format!("… and {more} more corrections"));
    }
}

/// The JSON schema of a plan, flat, for servers that constrain output to a schema.
pub fn plan_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "plan": {
                "type": "array",
                "minItems": 1,
                "maxItems": super::MAX_STEPS,
                "items": {
                    "type": "object",
                    "properties": {
                        "agent": {"type": "string", "enum": ["coder", "file", "web", "casual"]},
                        // Bounded, so a grammar-constrained small model cannot spend its
                        // whole reply on one id (seen with llama-server and a 135M model).
                        "id": {"type": "string", "pattern": "^[1-9][0-9]?$"},
                        "need": {
                            "type": "array",
                            "maxItems": super::MAX_STEPS,
                            "items": {"type": "string", "pattern": "^[1-9][0-9]?$"}
                        },
                        "task": {"type": "string", "minLength": 1, "maxLength": 1000}
                    },
                    "required": ["agent", "id", "need", "task"]
                }
            }
        },
        "required": ["plan"]
    })
}
