//! The servers' tools as a system prompt lists them, within a budget: each tool's name, its
//! arguments and a one-line description when all fit; when they do not, the descriptions are cut
//! shorter, then dropped, then the argument types, and then as many tools as fit keep their
//! argument names (`path, head?`: `?` marks an optional one) and the rest are listed by name only.
//! A model that knows the argument names writes a right call the first time far more often than
//! one that learns them from refusals.
//!
//! Names and descriptions come from servers and are untrusted: each is reduced to one line
//! without control characters and capped, so no server can break the list's format or flood the
//! prompt. The section never passes its budget. Pure. It must not start or ask servers.

use super::ToolInfo;
use super::check::{arguments_in_order, clean_name, one_line, signature, type_text};

/// Characters of a tool's description.
const DESCRIPTION_CHARS: usize = 120;
/// The shortest cut description worth its bytes; below it descriptions are dropped.
const MIN_DESCRIPTION_CHARS: usize = 24;
/// Characters of a server's or tool's name.
const NAME_CHARS: usize = 128;
/// Bytes of an argument-name list before it ends with `…`.
const NAMES_BYTES: usize = 160;
/// Arguments the example block shows.
const EXAMPLE_ARGUMENTS: usize = 3;

const HEADER: &str = "MCP tools (call one with an ```mcp block: `server.tool` on the first line, then one `key: value` line per argument):";
const NAMES_HEADER: &str = "MCP tools (call one with an ```mcp block: `server.tool` on the first line, then one `key: value` line per argument; a call with wrong arguments is answered with the expected ones):";

/// How much of each tool a line shows.
#[derive(Debug, Clone, Copy)]
enum Detail {
    /// Typed arguments and the description cut to this many characters (0: none).
    Typed(usize),
    /// Argument names, `?` after optional ones.
    Names,
}

/// The section listing `tools`, at most `budget` bytes; empty when there are no tools.
///
/// The first that fits: every tool with typed arguments and its description (cut as short as
/// `MIN_DESCRIPTION_CHARS` to fit), then without descriptions — each with an example block
/// calling the first tool; then every tool with its argument names; then the first tools with
/// their argument names and the others' names grouped by server (`- time: get_current_time,
/// convert_time`), as many with arguments as leave room for every other name; else as many names
/// as fit and `… and N more (ask for one by name)`; else nothing. The example is added to the
/// last three when it fits.
pub(crate) fn tools_section(tools: &[ToolInfo], budget: usize) -> String {
    let Some(first) = tools.first() else {
        return String::new();
    };
    let example = example(first);
    let typed = |chars: usize| {
        let mut lines = vec![HEADER.to_owned()];
        lines.extend(
            tools
                .iter()
                .map(|tool| tool_line(tool, Detail::Typed(chars))),
        );
        lines.push(example.clone());
        lines.join("\n")
    };
    let full = typed(DESCRIPTION_CHARS);
    if full.len() <= budget {
        return full;
    }
    // The longest descriptions that fit (a section's length grows with the cut).
    if let Some(chars) = largest(MIN_DESCRIPTION_CHARS, DESCRIPTION_CHARS - 1, |chars| {
        typed(chars).len() <= budget
    }) {
        return typed(chars);
    }
    let bare = typed(0);
    if bare.len() <= budget {
        return bare;
    }
    let with_example = |section: String| {
        let longer = format!("{section}\n{example}");
        if longer.len() <= budget {
            longer
        } else {
            section
        }
    };
    // As many tools with their argument names as leave room for every other tool's name.
    let complete = |with_names: usize| {
        mixed(tools, with_names, budget).filter(|(_, listed)| *listed == tools.len())
    };
    if let Some(with_names) = largest(0, tools.len(), |k| complete(k).is_some())
        && let Some((section, _)) = complete(with_names)
    {
        return with_example(section);
    }
    match mixed(tools, 0, budget) {
        Some((section, _)) => section,
        None => String::new(),
    }
}

/// The largest `n` in `low..=high` for which `fits(n)` holds, when `fits` holds up to some `n`
/// and not after (a section's length grows with what it shows).
fn largest(low: usize, high: usize, fits: impl Fn(usize) -> bool) -> Option<usize> {
    if low > high || !fits(low) {
        return None;
    }
    let (mut yes, mut no) = (low, high + 1);
    while no - yes > 1 {
        let middle = yes + (no - yes) / 2;
        if fits(middle) {
            yes = middle;
        } else {
            no = middle;
        }
    }
    Some(yes)
}

/// `- server.tool(arguments) — description`, as much as `detail` says.
fn tool_line(tool: &ToolInfo, detail: Detail) -> String {
    let arguments = match detail {
        Detail::Typed(_) => signature(&tool.input_schema),
        Detail::Names => argument_names(tool),
    };
    let mut line = format!(
        "- {}({arguments})",
        one_line(&tool.qualified(), NAME_CHARS * 2)
    );
    if let Detail::Typed(chars) = detail
        && chars > 0
    {
        let description = one_line(&super::first_line(&tool.description), chars);
        if !description.is_empty() {
            line.push_str(" — ");
            line.push_str(&description);
        }
    }
    line
}

/// The argument names, required ones first, `?` after optional ones: `path, head?, tail?`.
fn argument_names(tool: &ToolInfo) -> String {
    let mut out = String::new();
    for (name, _, required) in arguments_in_order(&tool.input_schema) {
        let piece = format!("{}{}", clean_name(name), if required { "" } else { "?" });
        let separator = if out.is_empty() { "" } else { ", " };
        // Room is kept for `, …` so a cut list still fits.
        if out.len() + separator.len() + piece.len() + ", …".len() > NAMES_BYTES {
            out.push_str(separator);
            out.push('…');
            break;
        }
        out.push_str(separator);
        out.push_str(&piece);
    }
    out
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

/// The first `with_names` tools with their argument names, then the others' names grouped by
/// server, as many as `budget` allows (with a line counting the rest). `None` when not even the
/// header, those lines and the counting line fit; else the section and how many tools it names.
fn mixed(tools: &[ToolInfo], with_names: usize, budget: usize) -> Option<(String, usize)> {
    let (described, rest) = tools.split_at(with_names.min(tools.len()));
    let mut out = NAMES_HEADER.to_owned();
    for tool in described {
        out.push('\n');
        out.push_str(&tool_line(tool, Detail::Names));
    }
    let mut servers: Vec<(String, Vec<String>)> = Vec::new();
    for tool in rest {
        let server = one_line(&tool.server, NAME_CHARS);
        let name = one_line(&tool.name, NAME_CHARS);
        match servers.iter_mut().find(|(known, _)| *known == server) {
            Some((_, names)) => names.push(name),
            None => servers.push((server, vec![name])),
        }
    }
    let all_names = servers
        .iter()
        .fold(out.clone(), |mut all, (server, names)| {
            all.push_str(&format!("\n- {server}: {}", names.join(", ")));
            all
        });
    if all_names.len() <= budget {
        return Some((all_names, tools.len()));
    }
    // Room is kept for the line counting what is left out, as long as it can be.
    let more_line = |left: usize| format!("\n… and {left} more (ask for one by name)");
    let reserve = more_line(rest.len()).len();
    let mut listed = described.len();
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
    (out.len() <= budget).then_some((out, listed))
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
