//! From the plan's JSON items to `PlanStep`s: the agent (any case, an alias; never `auto` or
//! `planner`), the task, the `need` in any of the shapes models write, ids renumbered from the
//! first id in order of appearance with the needs rewritten through the mapping, and a note for
//! every correction.
//!
//! Pure; it must not look for the plan in a reply (`extract` does).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::PlanError;
use crate::agents::planner::MAX_STEPS;
use crate::wire::{AgentName, PlanStep, StepStatus};

/// The longest piece of the model's text quoted back in an error or a note, in characters.
const MAX_QUOTE_CHARS: usize = 40;
/// A step's task, at most (characters): it goes into events, prompts and every replan request.
/// The schema asks for at most 1000; free text gets some room more.
const MAX_TASK_CHARS: usize = 2000;
/// Ids one step's `need` may name, at most: more can only be noise.
const MAX_NEEDS: usize = 2 * MAX_STEPS;

/// The plan's list in a parsed value: a top-level array of objects, or the value under `plan`,
/// `steps` or `tasks` (any case), one level down too (`{"plan": {"steps": […]}}`).
pub(super) fn plan_items(value: &Value) -> Option<&Vec<Value>> {
    match value {
        // Not empty: a bare `[]` (a step's `"need": []` found when the whole plan did not
        // parse) is no plan, and taking it for one would hide the real syntax error.
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
            Some(items)
        }
        Value::Object(object) => {
            let inner = ["plan", "steps", "tasks"]
                .iter()
                .find_map(|key| field(object, key))?;
            match inner {
                Value::Array(items) => Some(items),
                Value::Object(nested) => ["steps", "tasks", "plan"]
                    .iter()
                    .find_map(|key| field(nested, key))
                    .and_then(Value::as_array),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A field by name, any case (`"Agent"`, `"TASK"`).
fn field<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    object.get(name).or_else(|| {
        object
            .iter()
            .find(|(key, _)| key.trim().eq_ignore_ascii_case(name))
            .map(|(_, value)| value)
    })
}

/// A step as read, before renumbering.
struct Read {
    agent: AgentName,
    task: String,
    id: Option<String>,
    need: Vec<String>,
}

/// The steps of `items`, ids from `first_id`, with `titles` when there is one per step.
pub(super) fn steps(
    items: &[Value],
    first_id: usize,
    titles: Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Vec<PlanStep>, PlanError> {
    if items.is_empty() {
        return Err(PlanError::Empty);
    }
    if items.len() > MAX_STEPS {
        return Err(PlanError::Invalid(format!(
            "the plan has {} steps, more than the {MAX_STEPS} allowed: merge steps or leave \
             details to the agents",
            items.len()
        )));
    }
    let read = items
        .iter()
        .enumerate()
        .map(|(n, item)| read_step(n + 1, item, notes))
        .collect::<Result<Vec<_>, _>>()?;

    let new_id = |n: usize| first_id.saturating_add(n).to_string();
    // The id the model gave each step → the id it gets; the first step wins a duplicated id.
    let mut mapping: HashMap<String, usize> = HashMap::new();
    let mut duplicated = Vec::new();
    for (n, step) in read.iter().enumerate() {
        if let Some(id) = step.id.as_deref() {
            if mapping.contains_key(id) {
                duplicated.push(quote(id));
            } else {
                mapping.insert(id.to_owned(), n);
            }
        }
    }
    let renumbered = read
        .iter()
        .enumerate()
        .any(|(n, step)| step.id.as_deref() != Some(new_id(n).as_str()));
    if renumbered {
        let given: Vec<String> = read
            .iter()
            .map(|s| s.id.as_deref().map_or_else(|| "none".to_owned(), quote))
            .collect();
        notes.push(format!(
            "ids renumbered {}..{} in the order of the steps (the plan gave {})",
            new_id(0),
            new_id(read.len() - 1),
            given.join(", ")
        ));
    }
    duplicated.dedup();
    for id in duplicated {
        notes.push(format!(
            "id {id} was given to more than one step: needs of {id} point at the first of them"
        ));
    }

    let use_titles = titles.len() == read.len();
    let mut titles = titles.into_iter();
    let mut out = Vec::with_capacity(read.len());
    for (n, step) in read.into_iter().enumerate() {
        let id = new_id(n);
        let mut need: Vec<String> = Vec::new();
        for wanted in &step.need {
            let resolved = match mapping.get(wanted.as_str()) {
                Some(&target) if target < n => Some(new_id(target)),
                Some(&target) => {
                    let what = if target == n {
                        "itself"
                    } else {
                        "a later step"
                    };
                    notes.push(format!(
                        "step {id} needed {what} ({}): dropped",
                        quote(wanted)
                    ));
                    None
                }
                None => match wanted.parse::<usize>() {
                    // A step before this plan (a replan's done steps).
                    Ok(earlier) if (1..first_id).contains(&earlier) => Some(earlier.to_string()),
                    _ => {
                        notes.push(format!(
                            "step {id} needed {}, which is no earlier step: dropped",
                            quote(wanted)
                        ));
                        None
                    }
                },
            };
            if let Some(resolved) = resolved
                && !need.contains(&resolved)
            {
                need.push(resolved);
            }
        }
        out.push(PlanStep {
            id,
            agent: step.agent,
            task: step.task,
            need,
            title: if use_titles { titles.next() } else { None },
            status: StepStatus::Pending,
        });
    }
    Ok(out)
}

/// One item as a step; `n` counts from 1, for messages.
fn read_step(n: usize, item: &Value, notes: &mut Vec<String>) -> Result<Read, PlanError> {
    let Value::Object(object) = item else {
        return Err(PlanError::Invalid(format!(
            "step {n} is not an object: write each step as {{\"agent\", \"id\", \"need\", \"task\"}}"
        )));
    };
    let agent = read_agent(n, field(object, "agent"))?;
    let task = match field(object, "task") {
        Some(Value::String(text)) => text.trim().to_owned(),
        Some(Value::Number(number)) => number.to_string(),
        _ => String::new(),
    };
    let task = if task.chars().count() > MAX_TASK_CHARS {
        notes.push(format!(
            "step {n}: its task was cut to {MAX_TASK_CHARS} characters"
        ));
        task.chars().take(MAX_TASK_CHARS).collect()
    } else {
        task
    };
    if task.is_empty() {
        return Err(PlanError::Invalid(format!(
            "step {n} has no task: give each step a \"task\", a precise instruction for its agent"
        )));
    }
    // Cleaned as the needs are, so `"id": "step1"` and `"need": ["step 1"]` still meet.
    let id = field(object, "id").and_then(id_text).map(|text| {
        let mut tokens = split_ids(&text);
        match (tokens.pop(), tokens.is_empty()) {
            (Some(only), true) => only,
            _ => text,
        }
    });
    let need = read_need(
        n,
        field(object, "need").or_else(|| field(object, "needs")),
        notes,
    );
    Ok(Read {
        agent,
        task,
        id,
        need,
    })
}

fn read_agent(n: usize, value: Option<&Value>) -> Result<AgentName, PlanError> {
    let valid = step_agents();
    let Some(Value::String(name)) = value else {
        return Err(PlanError::Invalid(format!(
            "step {n} has no agent: give each step one of {valid}"
        )));
    };
    match crate::agents::find(name) {
        Some(agent) if !can_do_a_step(agent) => Err(PlanError::Invalid(format!(
            "step {n} names the agent {}, which cannot do a step: use one of {valid}",
            quote(name)
        ))),
        Some(agent) => Ok(agent),
        None => Err(PlanError::Invalid(format!(
            "step {n} names the agent {}, which does not exist: use one of {valid}",
            quote(name)
        ))),
    }
}

/// Whether a step may be given to `agent`: `auto` is no agent, and an agent that plans does
/// not run as a step of a plan.
fn can_do_a_step(agent: AgentName) -> bool {
    agent != AgentName::Auto && crate::agents::spec(agent).runs != crate::agents::Runs::Plan
}

/// The agents a step may name, for messages: `coder, file, casual, web`.
fn step_agents() -> String {
    crate::agents::REGISTRY
        .iter()
        .map(|spec| spec.name)
        .filter(|&name| can_do_a_step(name))
        .map(AgentName::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// An id as text: a string trimmed, a whole number without its `.0`.
fn id_text(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(text) => text.trim().to_owned(),
        Value::Number(number) => match number.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{f:.0}"),
            _ => number.to_string(),
        },
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// The ids a `need` names, whatever its shape: missing or null (none), a string (`"1"`,
/// `"1,2"`, `"1 and 2"`, `"none"`), a number, or a list of strings or numbers.
fn read_need(n: usize, value: Option<&Value>, notes: &mut Vec<String>) -> Vec<String> {
    let mut ids = Vec::new();
    let mut dropped = false;
    match value {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => ids.extend(split_ids(text)),
        Some(Value::Number(_)) => ids.extend(value.and_then(id_text)),
        Some(Value::Array(items)) => {
            for item in items {
                match item {
                    Value::String(text) => ids.extend(split_ids(text)),
                    Value::Number(_) => ids.extend(id_text(item)),
                    Value::Null => {}
                    _ => dropped = true,
                }
            }
        }
        Some(_) => dropped = true,
    }
    if dropped {
        notes.push(format!("step {n}: a need that is not an id was dropped"));
    }
    if ids.len() > MAX_NEEDS {
        notes.push(format!(
            "step {n}: only the first {MAX_NEEDS} of its {} needs were read",
            ids.len()
        ));
        ids.truncate(MAX_NEEDS);
    }
    ids
}

/// Ids in a string: split on commas, semicolons, `and` and spaces; `step`, `task` and `#`
/// prefixes and brackets dropped; `none`/`null`/`-` mean no id.
fn split_ids(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .map(|token| {
            token
                .trim_matches(|c: char| matches!(c, '[' | ']' | '"' | '\'' | '(' | ')' | '.'))
                .trim_start_matches('#')
        })
        .filter(|token| {
            let lower = token.to_ascii_lowercase();
            !matches!(
                lower.as_str(),
                "" | "none" | "null" | "-" | "and" | "step" | "steps" | "task" | "tasks"
            )
        })
        .map(|token| {
            let lower = token.to_ascii_lowercase();
            ["step", "task"]
                .iter()
                .find_map(|prefix| lower.strip_prefix(prefix))
                .map_or_else(|| token.to_owned(), str::to_owned)
        })
        .collect()
}

/// The model's text quoted for a message, bounded.
fn quote(text: &str) -> String {
    let mut short: String = text.chars().take(MAX_QUOTE_CHARS).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    format!("{short:?}")
}
