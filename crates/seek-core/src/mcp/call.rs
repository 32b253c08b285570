//! Reading an ```mcp block as a call: the tool's name on the first line, then its arguments as
//! a JSON object or as `key: value` lines.
//!
//! Pure text in, a request out. It must not know which servers exist (`resolve` is given their
//! tools) or check types (`check` does). Small models write calls loosely, so it accepts what
//! they commonly write when the intent is clear: the name in backticks or quotes, after
//! `tool:`/`name:`, with a trailing `:` or `()`, with its arguments in parentheses
//! (`f(a=1, b="x")`) or a JSON object on the same line; arguments as `key = value`, with
//! `'quotes'`, as JSON-ish `"key": "value",` lines, or as a bullet list; a JSON object with a
//! trailing comma; and the whole call as one JSON object (`{"tool": …, "arguments": {…}}`, also
//! `name`/`args`/`params`/`input`, OpenAI's `function` and JSON-RPC's `tools/call` shapes).

mod lines;
mod resolve;

use serde_json::{Map, Value};

pub(crate) use resolve::resolve;

use lines::{arguments_from_lines, parenthesised_arguments};

/// Bytes of a tool's name as written (MCP names are at most 128 characters).
const MAX_NAME_BYTES: usize = 256;
/// How a call is written, for error texts.
const FORMS: &str = "Write the tool's name (`server.tool`) on the first line, then its arguments: one `key: value` per line, or one JSON object.";

/// A block read as a call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRequest {
    /// The tool's name as the block wrote it, without decoration: `server.tool`, `server/tool`
    /// or a bare `tool`. Where the server's name ends is for `resolve` to decide: tool names may
    /// themselves hold `.`, `/`, `-` and `_`.
    pub name: String,
    pub arguments: Map<String, Value>,
    /// The arguments came as `key: value` lines (values that parse as JSON are typed, others
    /// are strings); `check` may turn a typed scalar back into the text written when the schema
    /// wants a string.
    pub from_lines: bool,
}

/// Why a block is not a call; the text is what the model is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct CallParseError(pub String);

fn error(text: impl Into<String>) -> CallParseError {
    CallParseError(text.into())
}

/// Reads `code` (the block's body) as a call.
pub(crate) fn parse_call(code: &str) -> Result<CallRequest, CallParseError> {
    let body = code.trim_start_matches('\u{feff}').trim();
    if body.is_empty() {
        return Err(error(format!("The block is empty. {FORMS}")));
    }
    if body.starts_with('{') {
        return whole_json(body);
    }
    let (first, rest) = body.split_once('\n').unwrap_or((body, ""));
    let (first, rest) = match server_then_tool(first, rest) {
        Some((joined, rest)) => (std::borrow::Cow::Owned(joined), rest),
        None => (std::borrow::Cow::Borrowed(first), rest),
    };
    let line = name_line(&first)?;
    let (arguments, from_lines) = match line.after {
        After::Nothing => arguments_from_text(rest)?,
        After::Arguments(text) => arguments_from_text(&format!("{text}\n{rest}"))?,
        After::Parenthesised(inner) => {
            if !rest.trim().is_empty() {
                return Err(error(
                    "The arguments are given twice: in parentheses on the first line and on the lines after it. Give them once, one `key: value` per line.",
                ));
            }
            if inner.trim_start().starts_with('{') {
                (json_object(&inner)?, false)
            } else {
                (parenthesised_arguments(&inner)?, true)
            }
        }
    };
    Ok(CallRequest {
        name: line.name,
        arguments,
        from_lines,
    })
}

/// The first line, read: the name and what follows it on the line.
struct NameLine {
    name: String,
    after: After,
}

enum After {
    Nothing,
    /// `name {…}` or `name key: value`: the start of the arguments.
    Arguments(String),
    /// `name(…)`: the text between the parentheses.
    Parenthesised(String),
}

fn name_line(line: &str) -> Result<NameLine, CallParseError> {
    let shown = super::check::one_line(line, 80);
    let mut text = strip_bullet(line.trim());
    text = strip_label(text);
    text = text.trim_start_matches(is_quote);
    let end = name_end(text);
    let (name, mut after) = text.split_at(end);
    after = after.trim_start_matches(is_quote).trim();
    let looks_like_argument = after.starts_with(':')
        && !after[1..].trim().is_empty()
        && !after[1..].trim_start().starts_with(['{', '(']);
    if looks_like_argument {
        return Err(error(format!(
            "The first line must name the tool (`server.tool`), but `{shown}` looks like an argument. {FORMS}"
        )));
    }
    after = after.trim_start_matches(':').trim_start();
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err(error(format!(
            "The first line must name the tool (`server.tool`); got `{shown}`. {FORMS}"
        )));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(error(format!(
            "The tool's name on the first line is {} bytes long; tool names are short. {FORMS}",
            name.len()
        )));
    }
    let after = if after.is_empty() || after.starts_with(['—', '–']) || after.starts_with("- ")
    {
        // Nothing, or a description copied from the tool list.
        After::Nothing
    } else if let Some(inner) = after.strip_prefix('(') {
        let Some(close) = inner.rfind(')') else {
            return Err(error(format!(
                "The first line opens a parenthesis it does not close: `{shown}`. {FORMS}"
            )));
        };
        match inner[..close].trim() {
            "" => After::Nothing,
            inner => After::Parenthesised(inner.to_owned()),
        }
    } else {
        After::Arguments(after.to_owned())
    };
    Ok(NameLine {
        name: name.to_owned(),
        after,
    })
}

/// `server: time` then `tool: get_current_time` on the next line → `time.get_current_time`,
/// and the lines after those.
fn server_then_tool<'a>(first: &str, rest: &'a str) -> Option<(String, &'a str)> {
    let labelled = |line: &str, labels: &[&str]| -> Option<String> {
        let (label, value) = line.trim().split_once([':', '='])?;
        let value = value.trim().trim_matches(is_quote).trim();
        let known = labels.iter().any(|l| label.trim().eq_ignore_ascii_case(l));
        (known && !value.is_empty() && !value.contains(char::is_whitespace))
            .then(|| value.to_owned())
    };
    let server = labelled(first, &["server", "server_name", "mcp_server"])?;
    let rest = rest.trim_start();
    let (second, after) = rest.split_once('\n').unwrap_or((rest, ""));
    let tool = labelled(second, &["tool", "tool_name", "name"])?;
    Some((format!("{server}.{tool}"), after))
}

fn is_quote(c: char) -> bool {
    matches!(c, '`' | '"' | '\'')
}

/// `- x`, `* x` → `x`.
fn strip_bullet(text: &str) -> &str {
    ["- ", "* "]
        .iter()
        .find_map(|bullet| text.strip_prefix(bullet))
        .map_or(text, str::trim_start)
}

/// `tool: x`, `name = x`, `tool_name: x`, `function: x` → `x` (unless nothing follows: `tool:`
/// alone names a tool called `tool`).
fn strip_label(text: &str) -> &str {
    for label in ["tool_name", "tool", "name", "function"] {
        let Some(head) = text.get(..label.len()) else {
            continue;
        };
        if !head.eq_ignore_ascii_case(label) {
            continue;
        }
        let after = text[label.len()..].trim_start();
        if let Some(rest) = after.strip_prefix([':', '=']) {
            let rest = rest.trim_start();
            if !rest.is_empty() {
                return rest;
            }
        }
    }
    text
}

/// Where the name ends: at white space, a quote, `(`, `{`, or a `:` that ends the name (`name:`,
/// `name: …`) rather than joins it (`server:tool`).
fn name_end(text: &str) -> usize {
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        // A hidden character as prompts show it (`\u{202e}`) is part of the name, braces and all.
        if let Some(len) = shown_escape_len(&text[at..]) {
            while chars.next_if(|(i, _)| *i < at + len).is_some() {}
            continue;
        }
        let ends = match c {
            ':' => chars
                .peek()
                .is_none_or(|(_, next)| next.is_whitespace() || matches!(next, '{' | '(')),
            '(' | '{' => true,
            c => c.is_whitespace() || is_quote(c),
        };
        if ends {
            return at;
        }
    }
    text.len()
}

/// The length of the `\u{…}` escape (1 to 6 hex digits) `text` starts with, if it does.
fn shown_escape_len(text: &str) -> Option<usize> {
    let digits = text.strip_prefix("\\u{")?;
    let count = digits.chars().take_while(char::is_ascii_hexdigit).count();
    ((1..=6).contains(&count) && digits[count..].starts_with('}')).then_some(3 + count + 1)
}

/// The arguments after the name line: none, a JSON object, or `key: value` lines.
fn arguments_from_text(text: &str) -> Result<(Map<String, Value>, bool), CallParseError> {
    let text = text.trim();
    if text.is_empty() {
        Ok((Map::new(), false))
    } else if text.starts_with('{') {
        Ok((json_object(text)?, false))
    } else {
        Ok((arguments_from_lines(text)?, true))
    }
}

/// `text` as one JSON object, tolerating trailing commas (`{"a": 1,}`), which small models
/// write and which leave no doubt about what was meant.
fn json_object(text: &str) -> Result<Map<String, Value>, CallParseError> {
    let parsed = serde_json::from_str::<Value>(text).or_else(|first| {
        serde_json::from_str::<Value>(&without_trailing_commas(text)).map_err(|_| first)
    });
    match parsed {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(error(format!(
            "The arguments must be a JSON object. {FORMS}"
        ))),
        Err(why) => Err(error(format!(
            "The arguments are not valid JSON ({why}). {FORMS}"
        ))),
    }
}

/// `text` without the commas that directly precede a closing `}` or `]` outside strings.
fn without_trailing_commas(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut pending_comma: Option<usize> = None;
    for c in text.chars() {
        if in_string {
            in_string = c != '"' || escaped;
            escaped = c == '\\' && !escaped;
            out.push(c);
            continue;
        }
        match c {
            '}' | ']' => {
                if let Some(at) = pending_comma.take() {
                    out.remove(at);
                }
            }
            ',' => {
                pending_comma = Some(out.len());
            }
            c if c.is_whitespace() => {}
            _ => pending_comma = None,
        }
        if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    out
}

/// Keys that name the tool in a whole-JSON call, by priority.
const NAME_KEYS: [&str; 4] = ["tool", "tool_name", "name", "function"];
/// Keys that hold the arguments in a whole-JSON call, by priority.
const ARGUMENT_KEYS: [&str; 7] = [
    "arguments",
    "args",
    "params",
    "parameters",
    "input",
    "inputSchema",
    "input_schema",
];
/// Keys of a call's envelope that are never arguments.
const ENVELOPE_KEYS: [&str; 4] = ["server", "type", "id", "jsonrpc"];

/// The whole block is one JSON object naming the tool and holding its arguments.
fn whole_json(body: &str) -> Result<CallRequest, CallParseError> {
    let object = json_object(body)?;
    let call = find_call(&object, 0).ok_or_else(|| {
        error("The JSON object names no tool. Write `{\"tool\": \"server.tool\", \"arguments\": {…}}`, or the tool's name on the first line and its arguments after it.")
    })?;
    let (name_key, name) = call.name;
    if name.trim().is_empty() || name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(error(format!(
            "The JSON object's `{name_key}` is not a tool's name. {FORMS}"
        )));
    }
    let name = match call.object.get("server").and_then(Value::as_str) {
        Some(server) if name_key == "tool" && !server.trim().is_empty() => {
            format!("{}.{}", server.trim(), name.trim())
        }
        _ => name.trim().to_owned(),
    };
    let arguments = match ARGUMENT_KEYS.iter().find_map(|key| call.object.get(*key)) {
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(Value::Null) => Map::new(),
        // OpenAI's function calls carry their arguments as a JSON text.
        Some(Value::String(text)) if text.trim().is_empty() => Map::new(),
        Some(Value::String(text)) => json_object(text)?,
        Some(_) => {
            return Err(error(format!(
                "The call's arguments must be a JSON object. {FORMS}"
            )));
        }
        None => call
            .object
            .iter()
            .filter(|(key, _)| *key != name_key && !ENVELOPE_KEYS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
    };
    Ok(CallRequest {
        name,
        arguments,
        from_lines: false,
    })
}

struct FoundCall<'a> {
    object: &'a Map<String, Value>,
    name: (&'static str, &'a str),
}

/// The object that names the tool: this one, or one level or two in (`{"function": {…}}`,
/// `{"method": "tools/call", "params": {…}}`).
fn find_call(object: &Map<String, Value>, depth: usize) -> Option<FoundCall<'_>> {
    if let Some(found) = NAME_KEYS.iter().find_map(|key| {
        let name = object.get(*key)?.as_str()?;
        Some((*key, name))
    }) {
        return Some(FoundCall {
            object,
            name: found,
        });
    }
    if depth >= 2 {
        return None;
    }
    ["function", "params", "call", "tool_call"]
        .iter()
        .find_map(|key| find_call(object.get(*key)?.as_object()?, depth + 1))
}

#[cfg(test)]
#[path = "call_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "test_tools.rs"]
pub(super) mod test_tools;
