//! The servers' tools as a system prompt lists them: name, a one-line description and the
//! arguments, within a budget; only the names when there are too many.
//!
//! Names and descriptions come from servers and are untrusted: each is reduced to one line
//! without control characters and capped, so no server can break the list's format or flood the
//! prompt. The section never passes its budget. Pure. It must not start or ask servers.

use super::ToolInfo;
use super::check::{arguments_in_order, one_line, signature, type_text};

/// Characters of a tool's description.
const DESCRIPTION_CHARS: usize = 120;
/// Characters of a server's or tool's name.
const NAME_CHARS: usize = 128;
/// Arguments the example block shows.
const EXAMPLE_ARGUMENTS: usize = 3;

const HEADER: &str = "MCP tools (call one with an ```mcp block: `server.tool` on the first line, then one `key: value` line per argument):";
const NAMES_HEADER: &str = "MCP tools (call one with an ```mcp block: `server.tool` on the first line, then one `key: value` line per argument; a call with wrong arguments is answered with the expected ones):";

/// The section listing `tools`, at most `budget` bytes; empty when there are no tools.
///
/// In full when it fits: one line per tool with its arguments and description, and an example
/// block calling the first tool. Else the names grouped by server (`- time: get_current_time,
/// convert_time`), with the example if it still fits; else as many names as fit and
/// `… and N more (ask for one by name)`; else nothing.
pub fn tools_section(tools: &[ToolInfo], budget: usize) -> String {
    let Some(first) = tools.first() else {
        return String::new();
    };
    let example = example(first);
    let mut full = vec![HEADER.to_owned()];
    full.extend(tools.iter().map(tool_line));
    full.push(example.clone());
    let full = full.join("\n");
    if full.len() <= budget {
        return full;
    }
    let (names, complete) = names_by_server(tools, budget);
    let with_example = format!("{names}\n{example}");
    if complete && with_example.len() <= budget {
        with_example
    } else {
        names
    }
}

/// `- server.tool(arguments) — description`.
fn tool_line(tool: &ToolInfo) -> String {
    let description = one_line(&super::first_line(&tool.description), DESCRIPTION_CHARS);
    let mut line = format!(
        "- {}({})",
        one_line(&tool.qualified(), NAME_CHARS * 2),
        signature(&tool.input_schema)
    );
    if !description.is_empty() {
        line.push_str(" — ");
        line.push_str(&description);
    }
    line
}

/// An ```mcp block calling `tool` with its first required arguments, their values shown as
/// `<type>` placeholders.
fn example(tool: &ToolInfo) -> String {
    let mut block = format!(
        "Example (replace the <…> values):\n```mcp\n{}\n",
        one_line(&tool.qualified(), NAME_CHARS * 2)
    );
    for (name, property, _) in arguments_in_order(&tool.input_schema)
        .into_iter()
        .filter(|(_, _, required)| *required)
        .take(EXAMPLE_ARGUMENTS)
    {
        block.push_str(&format!(
            "{}: <{}>\n",
            one_line(name, NAME_CHARS),
            type_text(property, 1)
        ));
    }
    block.push_str("```");
    block
}

/// The names grouped by server, as many as `budget` allows (with a line counting the rest);
/// empty when not even the header and that line fit. Also whether all are listed.
fn names_by_server(tools: &[ToolInfo], budget: usize) -> (String, bool) {
    let mut servers: Vec<(String, Vec<String>)> = Vec::new();
    for tool in tools {
        let server = one_line(&tool.server, NAME_CHARS);
        let name = one_line(&tool.name, NAME_CHARS);
        match servers.iter_mut().find(|(known, _)| *known == server) {
            Some((_, names)) => names.push(name),
            None => servers.push((server, vec![name])),
        }
    }
    let mut out = NAMES_HEADER.to_owned();
    for (server, names) in &servers {
        out.push_str(&format!("\n- {server}: {}", names.join(", ")));
    }
    if out.len() <= budget {
        return (out, true);
    }
    out = NAMES_HEADER.to_owned();
    // Room is kept for the line counting what is left out, as long as it can be.
    let more_line = |left: usize| format!("\n… and {left} more (ask for one by name)");
    let reserve = more_line(tools.len()).len();
    let mut listed = 0;
    for (server, names) in &servers {
        let mut line = format!("\n- {server}: ");
        let mut on_line = 0;
        for name in names {
            let separator = if on_line == 0 { "" } else { ", " };
            if out.len() + line.len() + separator.len() + name.len() + reserve > budget {
                break;
            }
            line.push_str(separator);
            line.push_str(name);
            on_line += 1;
        }
        if on_line > 0 {
            out.push_str(&line);
            listed += on_line;
        }
        if on_line < names.len() {
            break;
        }
    }
    if listed < tools.len() {
        out.push_str(&more_line(tools.len() - listed));
    }
    if out.len() > budget {
        return (String::new(), false);
    }
    (out, listed == tools.len())
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
