//! A tool's input schema in words a small model can follow: one line per argument
//! (`describe_arguments`), the arguments on one line (`signature`), and the one-line cleaning of
//! server text both use.
//!
//! Schemas and their descriptions come from servers and are untrusted: every name and
//! description is reduced to one line with its control, bidirectional and invisible characters
//! shown escaped (`\u{202e}`), and every list and text is capped, so a hostile schema cannot
//! break the format, hide what it holds or flood a prompt. It must not check values (`check`
//! does) or follow `$ref`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::terminal_safe::is_invisible;

/// Characters of an argument's description in `describe_arguments`.
const DESCRIPTION_CHARS: usize = 120;
/// Characters of an argument's name (names longer than that are no real tool's).
const NAME_CHARS: usize = 64;
/// Arguments `describe_arguments` lists before `… and N more`.
const MAX_DESCRIBED: usize = 40;
/// Bytes of a signature before it ends with `…`.
const SIGNATURE_BYTES: usize = 240;
/// Enum values shown; more are summarised as `one of N values`.
const MAX_ENUM_SHOWN: usize = 6;
/// Characters of one type's text (`"a" | "b" | …`, `object {…}`).
const TYPE_CHARS: usize = 100;
/// Bytes a cut text moves back to end at a word.
const WORD_BACKOFF: usize = 20;
/// How deep a type's text looks into nested objects, arrays and unions.
const TYPE_DEPTH: usize = 2;

/// `text` on one line: runs of white space (line breaks too) become one space, trimmed; other
/// control characters, bidirectional controls and invisible characters are written out as
/// `\u{…}` (`terminal_safe::escape_invisible`), so a name shows what it holds and an escape
/// sequence is inert; at most `max_chars` characters (cut ones end with `…`).
pub(in crate::mcp) fn one_line(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = count > 0;
            continue;
        }
        if pending_space {
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        if c.is_control() || is_invisible(c) {
            for shown in c.escape_unicode() {
                out.push(shown);
                count += 1;
            }
        } else {
            out.push(c);
            count += 1;
        }
        // One character past the limit is enough to know the text must be cut.
        if count > max_chars {
            let mut cut: String = out.chars().take(max_chars.saturating_sub(1)).collect();
            // At a word's end when one is near, so no word is shown half.
            if let Some(space) = cut.rfind(' ').filter(|at| cut.len() - at <= WORD_BACKOFF) {
                cut.truncate(space);
            }
            cut.truncate(cut.trim_end().len());
            cut.push('…');
            return cut;
        }
    }
    out
}

/// An argument name from a schema, safe to print.
pub(in crate::mcp) fn clean_name(name: &str) -> String {
    one_line(name, NAME_CHARS)
}

/// The arguments in the order they are shown: the required ones in the schema's `required`
/// order, then the optional ones (by name: the schema's own order is not kept by the parser).
/// Each with its schema (`Value::Null` for a required name the properties do not describe) and
/// whether it is required.
pub(in crate::mcp) fn arguments_in_order(schema: &Map<String, Value>) -> Vec<(&str, &Value, bool)> {
    static NO_SCHEMA: Value = Value::Null;
    let properties = schema.get("properties").and_then(Value::as_object);
    // Sets, not list searches: a hostile schema may list many thousands of names.
    let mut required = HashSet::new();
    let mut ordered: Vec<(&str, &Value, bool)> = Vec::new();
    for name in required_names(schema) {
        if required.insert(name) {
            let property = properties.and_then(|p| p.get(name)).unwrap_or(&NO_SCHEMA);
            ordered.push((name, property, true));
        }
    }
    for (name, property) in properties.into_iter().flatten() {
        if !required.contains(name.as_str()) {
            ordered.push((name, property, false));
        }
    }
    ordered
}

/// The names in `schema`'s `required` (strings only).
pub(in crate::mcp) fn required_names(schema: &Map<String, Value>) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The expected arguments, compact: `timezone: string (required) — IANA timezone name`, one
/// per line; `(no arguments)` when there are none.
pub fn describe_arguments(schema: &Map<String, Value>) -> String {
    let arguments = arguments_in_order(schema);
    if arguments.is_empty() {
        return "(no arguments)".to_owned();
    }
    let mut lines: Vec<String> = arguments
        .iter()
        .take(MAX_DESCRIBED)
        .map(|(name, property, required)| describe_one(name, property, *required))
        .collect();
    if arguments.len() > MAX_DESCRIBED {
        lines.push(format!(
            "… and {} more arguments",
            arguments.len() - MAX_DESCRIBED
        ));
    }
    lines.join("\n")
}

fn describe_one(name: &str, property: &Value, required: bool) -> String {
    let mut line = format!("{}: {}", clean_name(name), type_text(property, 0));
    if required {
        line.push_str(" (required)");
    } else if let Some(default) = property.get("default") {
        line.push_str(&format!(" (default {})", value_text(default, 40)));
    }
    let description = property
        .get("description")
        .or_else(|| property.get("title"))
        .and_then(Value::as_str)
        .map(|text| one_line(text, DESCRIPTION_CHARS))
        .unwrap_or_default();
    if !description.is_empty() {
        line.push_str(" — ");
        line.push_str(&description);
    }
    line
}

/// The arguments on one line, for prompts: `timezone: string, dst?: boolean`.
pub fn signature(schema: &Map<String, Value>) -> String {
    signature_at(schema, 0, SIGNATURE_BYTES)
}

fn signature_at(schema: &Map<String, Value>, depth: usize, max_bytes: usize) -> String {
    let mut out = String::new();
    for (name, property, required) in arguments_in_order(schema) {
        let optional = if required { "" } else { "?" };
        let piece = format!(
            "{}{optional}: {}",
            clean_name(name),
            type_text(property, depth)
        );
        let separator = if out.is_empty() { "" } else { ", " };
        // Room is kept for `, …` so a cut signature still fits.
        if out.len() + separator.len() + piece.len() + ", …".len() > max_bytes {
            out.push_str(separator);
            out.push('…');
            return out;
        }
        out.push_str(separator);
        out.push_str(&piece);
    }
    out
}

/// A property's type in words: `string`, `integer | null`, `"a" | "b"`, `array of string`,
/// `object {x: number}`; `any` when the schema does not say.
pub(in crate::mcp) fn type_text(property: &Value, depth: usize) -> String {
    one_line(&type_text_uncut(property, depth), TYPE_CHARS)
}

fn type_text_uncut(property: &Value, depth: usize) -> String {
    let Some(schema) = property.as_object() else {
        return "any".to_owned();
    };
    if let Some(constant) = schema.get("const") {
        return value_text(constant, 40);
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if options.len() <= MAX_ENUM_SHOWN {
            return options
                .iter()
                .map(|option| value_text(option, 30))
                .collect::<Vec<_>>()
                .join(" | ");
        }
        let of = declared_types(schema).map_or_else(|| "value".to_owned(), |t| t.join(" | "));
        return format!("{of}, one of {} values", options.len());
    }
    if let Some(types) = declared_types(schema) {
        return types
            .iter()
            .map(|name| match *name {
                "array" if depth < TYPE_DEPTH => array_text(schema, depth),
                "object" if depth < TYPE_DEPTH => object_text(schema, depth),
                other => other.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(" | ");
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(union).and_then(Value::as_array) {
            if depth >= TYPE_DEPTH {
                return "any".to_owned();
            }
            let mut texts: Vec<String> = Vec::new();
            for branch in branches.iter().take(MAX_ENUM_SHOWN) {
                let text = type_text_uncut(branch, depth + 1);
                if !texts.contains(&text) {
                    texts.push(text);
                }
            }
            if branches.len() > MAX_ENUM_SHOWN {
                texts.push("…".to_owned());
            }
            return texts.join(" | ");
        }
    }
    if schema.contains_key("properties") {
        return if depth < TYPE_DEPTH {
            object_text(schema, depth)
        } else {
            "object".to_owned()
        };
    }
    if schema.contains_key("$ref") {
        return "object".to_owned();
    }
    "any".to_owned()
}

fn array_text(schema: &Map<String, Value>, depth: usize) -> String {
    match schema.get("items") {
        Some(items) if items.is_object() => {
            format!("array of {}", type_text_uncut(items, depth + 1))
        }
        _ => "array".to_owned(),
    }
}

fn object_text(schema: &Map<String, Value>, depth: usize) -> String {
    let inner = signature_at(schema, depth + 1, TYPE_CHARS);
    if inner.is_empty() {
        "object".to_owned()
    } else {
        format!("object {{{inner}}}")
    }
}

/// The JSON types `schema`'s `type` names (a string or an array of strings); `None` when it
/// names none this understands.
pub(in crate::mcp) fn declared_types(schema: &Map<String, Value>) -> Option<Vec<&str>> {
    const KNOWN: [&str; 7] = [
        "string", "number", "integer", "boolean", "array", "object", "null",
    ];
    let names: Vec<&str> = match schema.get("type")? {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let known = !names.is_empty() && names.iter().all(|name| KNOWN.contains(name));
    known.then_some(names)
}

/// A JSON value as compact text on one line, at most `max_chars` characters.
pub(in crate::mcp) fn value_text(value: &Value, max_chars: usize) -> String {
    one_line(&value.to_string(), max_chars)
}
