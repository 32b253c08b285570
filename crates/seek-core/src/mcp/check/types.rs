//! JSON types for the argument check: which type a value has, reading a `key: value` text as
//! the number, boolean or enum option it means, and the `anyOf`/`oneOf` unions of plain types
//! the check understands. Pure; it must not report problems (`check` words them).

use serde_json::{Map, Number, Value};

use super::MAX_LISTED;
use super::describe::declared_types;

/// The option of an enum a `key: value` argument means: its text (`3` for `"3"`), a number for
/// its text, or a string option in another case when only one matches.
pub(super) fn option_written_as<'a>(options: &'a [Value], value: &Value) -> Option<&'a Value> {
    let text = match value {
        Value::String(text) => text.trim().to_owned(),
        other => other.to_string(),
    };
    if let Some(option) = options.iter().find(|option| match option {
        Value::String(option) => *option == text,
        Value::Number(option) => number_in(&text).is_some_and(|n| n.as_f64() == option.as_f64()),
        Value::Bool(option) => text.eq_ignore_ascii_case(&option.to_string()),
        _ => false,
    }) {
        return Some(option);
    }
    let mut same_ignoring_case = options.iter().filter(|option| {
        option
            .as_str()
            .is_some_and(|o| o.eq_ignore_ascii_case(&text))
    });
    match (same_ignoring_case.next(), same_ignoring_case.next()) {
        (Some(option), None) => Some(option),
        _ => None,
    }
}

/// `anyOf`/`oneOf` whose branches are all plain types (`{"type": "string"}`,
/// `{"type": "array", "items": …}`); anything richer is not understood and let through.
pub(super) struct SimpleUnion<'a> {
    pub(super) types: Vec<&'a str>,
    branches: Vec<(&'a str, &'a Map<String, Value>)>,
}

impl<'a> SimpleUnion<'a> {
    pub(super) fn branch_for(&self, type_name: &str) -> Option<&'a Map<String, Value>> {
        self.branches
            .iter()
            .find(|(name, _)| *name == type_name)
            .map(|(_, branch)| *branch)
    }
}

pub(super) fn simple_union(schema: &Map<String, Value>) -> Option<SimpleUnion<'_>> {
    const RICHER: [&str; 8] = [
        "anyOf", "oneOf", "allOf", "not", "$ref", "enum", "const", "if",
    ];
    let branches = ["anyOf", "oneOf"]
        .iter()
        .find_map(|key| schema.get(*key).and_then(Value::as_array))?;
    let mut union = SimpleUnion {
        types: Vec::new(),
        branches: Vec::new(),
    };
    for branch in branches.iter().take(MAX_LISTED) {
        let branch = branch.as_object()?;
        if RICHER.iter().any(|key| branch.contains_key(*key)) {
            return None;
        }
        for name in declared_types(branch)? {
            if !union.types.contains(&name) {
                union.types.push(name);
            }
            union.branches.push((name, branch));
        }
    }
    (branches.len() <= MAX_LISTED && !union.types.is_empty()).then_some(union)
}

/// Whether `schema` refuses properties it does not list: only an explicit
/// `additionalProperties: false` does (JSON Schema's default lets others through).
pub(super) fn refuses_unknown(schema: &Map<String, Value>) -> bool {
    matches!(schema.get("additionalProperties"), Some(Value::Bool(false)))
}

pub(super) fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.as_number().is_some_and(is_whole),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

pub(super) fn is_whole(number: &Number) -> bool {
    number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// `3.0` → `3` (when it fits an integer exactly).
pub(super) fn whole_float_to_integer(value: &mut Value) {
    let Some(float) = value
        .as_number()
        .filter(|n| n.is_f64())
        .and_then(Number::as_f64)
    else {
        return;
    };
    // The bounds are exact powers of two, so the casts below cannot saturate.
    if float.fract() == 0.0
        && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&float)
    {
        *value = Value::Number(Number::from(float as i64));
    }
}

/// A JSON number written as text (`3`, `-1.5`, `1e3`); `None` for anything else.
pub(super) fn number_in(text: &str) -> Option<Number> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Number(number)) => Some(number),
        _ => None,
    }
}

pub(super) fn types_in_words(types: &[&str]) -> String {
    let words: Vec<String> = types
        .iter()
        .map(|name| match *name {
            "integer" => "an integer".to_owned(),
            "array" => "an array".to_owned(),
            "object" => "an object".to_owned(),
            "string" | "number" | "boolean" => format!("a {name}"),
            other => other.to_owned(),
        })
        .collect();
    words.join(" or ")
}
