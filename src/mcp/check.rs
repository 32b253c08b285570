//! Checking a call's arguments against the tool's input schema before it is sent, and
//! describing the expected arguments in a line a small model can follow.
//!
//! A practical subset of JSON Schema (object properties, `required`, `type` including unions,
//! `enum`, `const`, array `items`, nested objects, `additionalProperties: false`); what it does
//! not understand it lets through (the server checks again). It must not call anything.

use serde_json::{Map, Value};

/// Checks (and, for `key: value` arguments, coerces) `arguments` against `schema`. On failure,
/// the text says what is wrong and shows the expected arguments.
pub fn check_arguments(
    schema: &Map<String, Value>,
    arguments: &mut Map<String, Value>,
    from_lines: bool,
) -> Result<(), String> {
    let _ = (schema, arguments, from_lines);
    Ok(())
}

/// The expected arguments, compact: `timezone: string (required) — IANA timezone name`, one
/// per line; `(no arguments)` when there are none.
pub fn describe_arguments(schema: &Map<String, Value>) -> String {
    let _ = schema;
    String::new()
}

/// The arguments on one line, for prompts: `timezone: string, dst?: boolean`.
pub fn signature(schema: &Map<String, Value>) -> String {
    let _ = schema;
    String::new()
}
