//! rmcp's types to seek's: a listed tool to `ToolInfo`, a call's result to `CallOutput`.
//!
//! Owns what seek keeps of a server's answers and the bounds on them (tool names, descriptions;
//! base64 payloads become sizes). Pure: it must not talk to servers or decide states.

use std::collections::HashSet;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::{Map, Value};

use crate::mcp::{CallOutput, Part, ToolInfo};

/// Longest tool name kept (the MCP spec's own bound).
const MAX_TOOL_NAME: usize = 128;
/// Longest description kept, in characters: prompts use its first line, `seek mcp` shows it.
const MAX_DESCRIPTION_CHARS: usize = 4000;

/// What listing kept, and what it dropped and why (for the log).
#[derive(Debug, Default)]
pub(super) struct Listed {
    pub tools: Vec<ToolInfo>,
    pub dropped: Vec<String>,
}

/// Adds `page` to `listed`: tools with unusable names or a name already listed are dropped.
pub(super) fn add_tools(
    server: &str,
    page: Vec<Tool>,
    seen: &mut HashSet<String>,
    listed: &mut Listed,
) {
    for tool in page {
        let name = tool.name.as_ref();
        if let Some(why) = unusable_name(name) {
            let shown = super::stderr::shorten(&crate::terminal_safe::terminal_safe(name), 60);
            listed.dropped.push(format!("tool `{shown}`: {why}"));
            continue;
        }
        if !seen.insert(name.to_owned()) {
            listed
                .dropped
                .push(format!("tool `{name}`: listed twice, the first kept"));
            continue;
        }
        let description = tool.description.as_deref().unwrap_or_default();
        listed.tools.push(ToolInfo {
            server: server.to_owned(),
            name: name.to_owned(),
            description: super::stderr::shorten(description, MAX_DESCRIPTION_CHARS),
            input_schema: object_schema(&tool.input_schema),
        });
    }
}

/// Why a block could not name this tool (or a prompt show it), if it cannot.
fn unusable_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("empty name")
    } else if name.len() > MAX_TOOL_NAME {
        Some("name longer than 128 bytes")
    } else if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("name with spaces or control characters")
    } else {
        None
    }
}

/// The input schema as a JSON schema object (`{"type":"object"}` when the server gave an empty
/// one).
fn object_schema(schema: &Arc<Map<String, Value>>) -> Arc<Map<String, Value>> {
    if schema.is_empty() {
        let mut object = Map::new();
        object.insert("type".into(), Value::String("object".into()));
        return Arc::new(object);
    }
    Arc::clone(schema)
}

/// A call's result as seek keeps it.
pub(super) fn call_output(result: CallToolResult) -> CallOutput {
    CallOutput {
        is_error: result.is_error.unwrap_or(false),
        parts: result.content.into_iter().map(part).collect(),
        structured: result.structured_content,
    }
}

fn part(block: ContentBlock) -> Part {
    match block {
        ContentBlock::Text(text) => Part::Text(text.text),
        ContentBlock::Image(image) => Part::Image {
            mime_type: image.mime_type,
            bytes: base64_decoded_len(&image.data),
        },
        ContentBlock::Audio(audio) => Part::Audio {
            mime_type: audio.mime_type,
            bytes: base64_decoded_len(&audio.data),
        },
        ContentBlock::ResourceLink(link) => Part::ResourceLink {
            uri: link.uri,
            name: Some(link.name).filter(|name| !name.is_empty()),
            mime_type: link.mime_type,
        },
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => Part::Resource {
                uri,
                mime_type,
                text: Some(text),
                blob_bytes: None,
            },
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Part::Resource {
                uri,
                mime_type,
                text: None,
                blob_bytes: Some(base64_decoded_len(&blob)),
            },
            other => unknown("resource", &other),
        },
        other => unknown("content", &other),
    }
}

/// A kind of content newer than this client: named, not shown.
fn unknown(what: &str, value: &impl serde::Serialize) -> Part {
    let kind = serde_json::to_value(value)
        .ok()
        .and_then(|value| value.get("type").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned());
    let kind = super::stderr::shorten(&crate::terminal_safe::terminal_safe(&kind), 40);
    Part::Text(format!("[{what} of type `{kind}` that seek cannot show]"))
}

/// The size `data` decodes to, from its length alone (whitespace ignored; invalid data is not
/// checked: only the size is shown).
fn base64_decoded_len(data: &str) -> usize {
    let significant = data.bytes().filter(|b| !b.is_ascii_whitespace());
    let (mut chars, mut padding) = (0usize, 0usize);
    for byte in significant {
        chars += 1;
        padding = if byte == b'=' { padding + 1 } else { 0 };
    }
    let data_chars = chars - padding.min(chars);
    data_chars * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        let mut tool = Tool::default();
        tool.name = name.to_owned().into();
        tool
    }

    #[test]
    fn base64_sizes() {
        assert_eq!(base64_decoded_len(""), 0);
        assert_eq!(base64_decoded_len("TWFu"), 3);
        assert_eq!(base64_decoded_len("TWE="), 2);
        assert_eq!(base64_decoded_len("TQ=="), 1);
        assert_eq!(base64_decoded_len("TW\nFu\n"), 3);
    }

    #[test]
    fn unusable_and_repeated_names_are_dropped_and_empty_schemas_become_objects() {
        let mut listed = Listed::default();
        let mut seen = HashSet::new();
        let page = vec![
            tool("echo"),
            tool(""),
            tool("two words"),
            tool("bell\u{7}"),
            tool(&"x".repeat(129)),
            tool("echo"),
            tool("a.b-c_d"),
        ];
        add_tools("srv", page, &mut seen, &mut listed);
        let names: Vec<_> = listed.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["echo", "a.b-c_d"]);
        assert_eq!(listed.dropped.len(), 5);
        assert_eq!(
            listed.tools[0].input_schema.get("type"),
            Some(&Value::String("object".into()))
        );
        assert!(listed.dropped.iter().all(|why| !why.contains('\u{7}')));
    }
}
