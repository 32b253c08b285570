//! Arguments written as `key: value` lines (or `key = value`), and as `key=value` pairs in
//! parentheses after the name (`get_sum(a=1, b=2)`).
//!
//! Values that parse as JSON are typed (`3`, `true`, `null`, `[1,2]`, `{"a":1}`, `"quoted"`);
//! others are strings, trimmed, without one pair of surrounding single quotes or backticks.
//! A number is typed only when written the way JSON prints it (`3`, `2.5`), so that `check` can
//! give back the text as written when a string is wanted; `1e3` or `007` stay text, which
//! `check` reads as a number when one is wanted. It must not know the schema.

use serde_json::{Map, Value};

use super::{CallParseError, FORMS, error};

/// Bytes of an argument's name (longer is not a name a schema has).
const MAX_KEY_BYTES: usize = 128;

/// `key: value` lines; blank lines are skipped, a repeated key or a line of another shape is an
/// error naming it.
pub(super) fn arguments_from_lines(text: &str) -> Result<Map<String, Value>, CallParseError> {
    let mut arguments = Map::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (key, value) = key_and_value(line)?;
        if arguments.contains_key(&key) {
            return Err(error(format!(
                "The argument `{key}` is given twice; give each argument once."
            )));
        }
        arguments.insert(key, typed(value));
    }
    Ok(arguments)
}

/// `a=1, b="x, y"` (or `a: 1, …`): pairs split at the commas outside quotes and brackets.
pub(super) fn parenthesised_arguments(inner: &str) -> Result<Map<String, Value>, CallParseError> {
    let pairs = split_top_level(inner);
    arguments_from_lines(&pairs.join("\n"))
}

/// `line` as a key and its value text.
fn key_and_value(line: &str) -> Result<(String, &str), CallParseError> {
    let line = ["- ", "* "]
        .iter()
        .find_map(|bullet| line.strip_prefix(bullet))
        .unwrap_or(line)
        .trim_start();
    let separator = line.find([':', '=']);
    let neither = || {
        let shown = crate::mcp::check::one_line(line, 80);
        error(format!(
            "This line is neither `key: value` nor part of a JSON object: `{shown}`. {FORMS}"
        ))
    };
    let Some(at) = separator else {
        return Err(neither());
    };
    let raw_key = line[..at].trim();
    let quoted_key =
        raw_key.len() >= 2 && raw_key.starts_with(['"', '\'']) && raw_key.ends_with(['"', '\'']);
    let key = if quoted_key {
        &raw_key[1..raw_key.len() - 1]
    } else {
        raw_key
    };
    let valid = !key.is_empty()
        && key.len() <= MAX_KEY_BYTES
        && !key.chars().any(|c| c.is_whitespace() || c.is_control());
    if !valid {
        return Err(neither());
    }
    let mut value = line[at + 1..].trim();
    // `"key": "value",` is a line of a JSON object written without its braces.
    if quoted_key {
        value = value.strip_suffix(',').unwrap_or(value).trim_end();
    }
    Ok((key.to_owned(), value))
}

/// A value as written: typed when it is JSON (numbers only in JSON's own spelling), else text.
fn typed(value: &str) -> Value {
    for quote in ['\'', '`'] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return Value::String(value[1..value.len() - 1].to_owned());
        }
    }
    match serde_json::from_str::<Value>(value) {
        Ok(Value::Number(number)) if number.to_string() != value => Value::String(value.to_owned()),
        Ok(parsed) => parsed,
        Err(_) => Value::String(value.to_owned()),
    }
}

/// `text` split at the commas that are outside quotes, brackets and braces.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    for (at, c) in text.char_indices() {
        if let Some(open) = quote {
            if c == open && !escaped {
                quote = None;
            }
            escaped = c == '\\' && !escaped;
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '[' | '{' | '(' => depth += 1,
            ']' | '}' | ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                pieces.push(text[start..at].trim());
                start = at + 1;
            }
            _ => {}
        }
    }
    pieces.push(text[start..].trim());
    pieces.retain(|piece| !piece.is_empty());
    pieces
}
