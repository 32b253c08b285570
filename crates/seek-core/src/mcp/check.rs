//! Checking a call's arguments against the tool's input schema before it is sent, and
//! describing the expected arguments in a line a small model can follow.
//!
//! A practical subset of JSON Schema (object properties, `required`, `type` including unions,
//! `enum`, `const`, array `items`, nested objects, `additionalProperties: false`, `anyOf`/`oneOf`
//! of simple types); what it does not understand it lets through (the server checks again). It
//! never follows `$ref` and stops after a fixed amount of work, so a hostile schema costs little.
//! `default` is not filled in: the server does that. It must not call anything.
//!
//! Arguments the schema does not list follow the schema: refused only under
//! `additionalProperties: false`; otherwise (absent, `true`, a schema, `patternProperties`) they
//! are sent as given, with a note naming each and the closest listed name (not when
//! `patternProperties` or a schema as `additionalProperties` describes them), since
//! most servers silently ignore a misspelled optional argument and the model would never learn.

mod describe;
mod near;
mod types;

use serde_json::{Map, Value};

pub(in crate::mcp) use describe::{
    arguments_in_order, clean_name, one_line, type_text, value_text,
};
pub use describe::{describe_arguments, signature};
pub(in crate::mcp) use near::closest;

use describe::{declared_types, required_names};
use types::{
    has_type, is_whole, number_in, option_written_as, refuses_unknown, simple_union,
    types_in_words, whole_float_to_integer,
};

/// How deep nested values are checked; deeper ones are let through.
const MAX_DEPTH: usize = 16;
/// Schema and value nodes one check visits at most; the rest is let through.
const MAX_STEPS: usize = 20_000;
/// Problems listed before `… and N more`.
const MAX_LISTED: usize = 12;
/// Characters of a value quoted in a problem.
const QUOTED_CHARS: usize = 60;
/// Keys a model wraps its arguments in (`arguments: {…}`); unwrapped when the schema has no
/// such argument.
const WRAPPER_KEYS: [&str; 6] = [
    "arguments",
    "args",
    "params",
    "parameters",
    "input",
    "inputSchema",
];

/// Checks (and, for `key: value` arguments, coerces) `arguments` against `schema`. On failure,
/// the text says what is wrong and shows the expected arguments.
///
/// Coercions for `key: value` arguments, where the intent is clear: a string wanted and a
/// number, boolean or null written → the text as written; a number, integer or boolean wanted
/// and its text written (`1e3`, `"3"`, `True`) → the value; an array wanted and a plain string
/// (`a, b`) → split at commas, a single number or boolean → a one-item array; an enum value
/// written in another case → the enum's spelling. For all arguments an integer written as
/// `3.0` becomes `3`.
#[cfg(test)] // kept for the tests that pin its behaviour
pub(crate) fn check_arguments(
    schema: &Map<String, Value>,
    arguments: &mut Map<String, Value>,
    from_lines: bool,
) -> Result<(), String> {
    check_arguments_noting(schema, arguments, from_lines).map(|_| ())
}

/// `check_arguments`, and on success the arguments the schema does not list but lets through,
/// one line each (`` `tz` is not one of the tool's arguments — did you mean `timezone`? ``), so
/// the caller can tell the model they were sent as given. On failure they are among the
/// problems.
pub(crate) fn check_arguments_noting(
    schema: &Map<String, Value>,
    arguments: &mut Map<String, Value>,
    from_lines: bool,
) -> Result<Vec<String>, String> {
    unwrap_wrapper(schema, arguments);
    let mut checker = Checker {
        from_lines,
        steps: 0,
        problems: Vec::new(),
        undeclared: Vec::new(),
    };
    checker.object(schema, arguments, "", 0);
    if checker.problems.is_empty() {
        return Ok(checker.undeclared);
    }
    let undeclared = std::mem::take(&mut checker.undeclared);
    checker.problems.extend(undeclared);
    let mut text = String::from("The arguments do not fit the tool's input schema:\n");
    for problem in checker.problems.iter().take(MAX_LISTED) {
        text.push_str("- ");
        text.push_str(problem);
        text.push('\n');
    }
    if checker.problems.len() > MAX_LISTED {
        let more = checker.problems.len() - MAX_LISTED;
        text.push_str(&format!("- … and {more} more\n"));
    }
    text.push_str("Expected arguments:\n");
    text.push_str(&describe_arguments(schema));
    Err(text)
}

/// Whether an argument `schema` does not list is worth a note: it lists its properties and
/// nothing else describes the others (no `patternProperties`, no schema as
/// `additionalProperties`).
fn notes_undeclared(schema: &Map<String, Value>, properties: Option<&Map<String, Value>>) -> bool {
    properties.is_some_and(|p| !p.is_empty())
        && !schema.contains_key("patternProperties")
        && !schema
            .get("additionalProperties")
            .is_some_and(Value::is_object)
}

/// `{"arguments": {…}}` → `{…}`, when that key is the only one and no argument of the tool;
/// and an empty `arguments:` line above the real ones (YAML-style nesting) is dropped.
fn unwrap_wrapper(schema: &Map<String, Value>, arguments: &mut Map<String, Value>) {
    let declared = schema.get("properties").and_then(Value::as_object);
    let is_declared = |key: &str| declared.is_some_and(|properties| properties.contains_key(key));
    for key in WRAPPER_KEYS {
        if arguments.get(key) == Some(&Value::String(String::new())) && !is_declared(key) {
            arguments.remove(key);
        }
    }
    let Some((key, inner)) = arguments.iter().next() else {
        return;
    };
    let wraps = arguments.len() == 1
        && inner.is_object()
        && WRAPPER_KEYS.contains(&key.as_str())
        && !is_declared(key);
    if wraps {
        let key = key.clone();
        if let Some(Value::Object(inner)) = arguments.remove(&key) {
            *arguments = inner;
        }
    }
}

struct Checker {
    from_lines: bool,
    steps: usize,
    problems: Vec<String>,
    /// Arguments the schema does not list but lets through.
    undeclared: Vec<String>,
}

impl Checker {
    /// Whether the work budget is spent (then everything left is let through).
    fn spent(&mut self) -> bool {
        self.steps += 1;
        self.steps > MAX_STEPS
    }

    fn object(
        &mut self,
        schema: &Map<String, Value>,
        map: &mut Map<String, Value>,
        path: &str,
        depth: usize,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        for name in required_names(schema) {
            if self.spent() {
                return;
            }
            if !map.contains_key(name) {
                let wanted = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                self.problems.push(format!(
                    "missing `{}` ({})",
                    joined(path, &clean_name(name)),
                    type_text(wanted, 0)
                ));
            }
        }
        let refuses_unknown = refuses_unknown(schema);
        let keys: Vec<String> = map.keys().cloned().collect();
        for key in keys {
            if self.spent() {
                return;
            }
            let path_here = joined(path, &clean_name(&key));
            match (properties.and_then(|p| p.get(&key)), map.get_mut(&key)) {
                (Some(property), Some(value)) => self.value(property, value, &path_here, depth + 1),
                _ if refuses_unknown || notes_undeclared(schema, properties) => {
                    let listed = self.problems.len() + self.undeclared.len();
                    let missing = properties
                        .into_iter()
                        .flatten()
                        .map(|(name, _)| name.as_str())
                        .filter(|name| !map.contains_key(*name));
                    // Only listed problems get a suggestion: each costs a search.
                    let near = if listed < MAX_LISTED {
                        closest(&key, missing, 1)
                    } else {
                        Vec::new()
                    };
                    let hint = match near.first() {
                        Some(near) => format!(" — did you mean `{}`?", clean_name(near)),
                        None => String::new(),
                    };
                    if refuses_unknown {
                        self.problems
                            .push(format!("unknown argument `{path_here}`{hint}"));
                    } else if listed < MAX_LISTED {
                        self.undeclared.push(format!(
                            "`{path_here}` is not one of the tool's arguments{hint}"
                        ));
                    }
                }
                _ => {}
            }
        }
    }

    fn value(&mut self, property: &Value, value: &mut Value, path: &str, depth: usize) {
        if depth > MAX_DEPTH || self.spent() {
            return;
        }
        // `true`, `false` and anything else that is not an object, and `$ref`, are let through.
        let Some(schema) = property.as_object() else {
            return;
        };
        if schema.contains_key("$ref") {
            return;
        }
        let union = simple_union(schema);
        let types = declared_types(schema).or_else(|| union.as_ref().map(|u| u.types.clone()));
        if let Some(types) = &types {
            if !types.iter().any(|name| has_type(value, name)) && !self.coerce(types, value) {
                self.problems.push(format!(
                    "`{path}` should be {}, got {}",
                    types_in_words(types),
                    value_text(value, QUOTED_CHARS)
                ));
                return;
            }
            if types.contains(&"integer") && !types.contains(&"number") {
                whole_float_to_integer(value);
            }
        }
        if !self.enumerated(schema, value, path) {
            return;
        }
        // An array or object is checked against the branch of a union that wants it.
        let structure = match (&union, &*value) {
            (Some(union), Value::Array(_)) => union.branch_for("array").unwrap_or(schema),
            (Some(union), Value::Object(_)) => union.branch_for("object").unwrap_or(schema),
            _ => schema,
        };
        match value {
            Value::Array(items) => {
                if let Some(item_schema) = structure.get("items").filter(|s| s.is_object()) {
                    for (index, item) in items.iter_mut().enumerate() {
                        if self.steps > MAX_STEPS {
                            return;
                        }
                        self.value(item_schema, item, &format!("{path}[{index}]"), depth + 1);
                    }
                }
            }
            Value::Object(map) => {
                let describes_members = ["properties", "required", "additionalProperties"]
                    .iter()
                    .any(|key| structure.contains_key(*key));
                if describes_members {
                    self.object(structure, map, path, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// `enum` and `const`: whether `value` is (or, for lines, could be read as) one of them.
    fn enumerated(&mut self, schema: &Map<String, Value>, value: &mut Value, path: &str) -> bool {
        let options: &[Value] = match (schema.get("const"), schema.get("enum")) {
            (Some(constant), _) => std::slice::from_ref(constant),
            (None, Some(Value::Array(options))) => options,
            _ => return true,
        };
        if options.contains(value) {
            return true;
        }
        if self.from_lines
            && let Some(option) = option_written_as(options, value)
        {
            *value = option.clone();
            return true;
        }
        let shown: Vec<String> = options
            .iter()
            .take(MAX_LISTED)
            .map(|option| value_text(option, 30))
            .collect();
        let more = if options.len() > MAX_LISTED {
            ", …"
        } else {
            ""
        };
        let wanted = if options.len() == 1 {
            shown.join("")
        } else {
            format!("one of {}{more}", shown.join(", "))
        };
        self.problems.push(format!(
            "`{path}` should be {wanted}, got {}",
            value_text(value, QUOTED_CHARS)
        ));
        false
    }

    /// Turns a `key: value` argument into one of `types` where the intent is clear.
    fn coerce(&self, types: &[&str], value: &mut Value) -> bool {
        if !self.from_lines {
            return false;
        }
        let wants = |name: &str| types.contains(&name);
        let coerced = match &*value {
            Value::Number(_) | Value::Bool(_) | Value::Null if wants("string") => {
                Some(Value::String(value.to_string()))
            }
            Value::Number(_) | Value::Bool(_) if wants("array") => {
                Some(Value::Array(vec![value.clone()]))
            }
            Value::String(text) => {
                let text = text.trim();
                let number = number_in(text);
                let wanted =
                    number.filter(|n| wants("number") || (wants("integer") && is_whole(n)));
                if let Some(number) = wanted {
                    Some(Value::Number(number))
                } else if wants("boolean") && text.eq_ignore_ascii_case("true") {
                    Some(Value::Bool(true))
                } else if wants("boolean") && text.eq_ignore_ascii_case("false") {
                    Some(Value::Bool(false))
                } else if wants("array") {
                    Some(Value::Array(
                        text.split(',')
                            .map(str::trim)
                            .filter(|piece| !piece.is_empty())
                            .map(|piece| Value::String(piece.to_owned()))
                            .collect(),
                    ))
                } else {
                    None
                }
            }
            _ => None,
        };
        match coerced {
            Some(coerced) => {
                *value = coerced;
                true
            }
            None => false,
        }
    }
}

fn joined(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
