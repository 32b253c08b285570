//! Which tool a call names: `server.tool` exactly (also `server/tool`, `server:tool`,
//! `server::tool`, `server__tool` and Claude Code's `mcp__server__tool`), else a bare `tool` that
//! one server has; the same again ignoring case when that finds exactly one. When nothing
//! matches, the error names the closest tools and says how to call one.
//!
//! Pure: it is given the tools. It must not check arguments.

use std::borrow::Cow;

use super::CallRequest;
use crate::mcp::ToolInfo;
use crate::mcp::check::{closest, one_line};
use crate::terminal_safe::escape_invisible;

/// What joins a server's name to its tool's in the names models write.
const SEPARATORS: [&str; 5] = [".", "/", "::", ":", "__"];
/// Tools listed in full when there are no closer suggestions.
const LIST_ALL_UP_TO: usize = 12;
/// Suggestions in an error.
const MAX_SUGGESTIONS: usize = 5;
/// How to call a tool, for error texts.
const HOW: &str = "Write the tool's name as `server.tool` on the block's first line.";

/// The tool `request` names among `tools`: `server.tool` exactly, or a bare `tool` that one
/// server has; a name holding invisible or bidirectional characters also as prompts and
/// listings show it (escaped, `\u{202e}`). The error says what exists (or which servers share
/// the name).
pub(crate) fn resolve<'a>(
    request: &CallRequest,
    tools: &'a [ToolInfo],
) -> Result<&'a ToolInfo, String> {
    let written = request.name.trim();
    let name = written.strip_prefix("mcp__").unwrap_or(written);
    if let Some(found) = find(name, written, tools)? {
        return Ok(&tools[found]);
    }
    // The model calls a tool by the name it was shown.
    let hidden = |text: &str| matches!(escape_invisible(text), Cow::Owned(_));
    if tools.iter().any(|t| hidden(&t.server) || hidden(&t.name)) {
        let shown: Vec<ToolInfo> = tools
            .iter()
            .map(|t| ToolInfo {
                server: escape_invisible(&t.server).into_owned(),
                name: escape_invisible(&t.name).into_owned(),
                ..t.clone()
            })
            .collect();
        if let Some(found) = find(name, written, &shown)? {
            return Ok(&tools[found]);
        }
    }
    Err(unknown(written, name, tools))
}

/// The index of the tool `name` names among `tools`, exactly, then ignoring case.
fn find(name: &str, written: &str, tools: &[ToolInfo]) -> Result<Option<usize>, String> {
    for same in [str::eq as fn(&str, &str) -> bool, str::eq_ignore_ascii_case] {
        let qualified: Vec<usize> = (0..tools.len())
            .filter(|&i| names_qualified(name, &tools[i], same))
            .collect();
        if let Some(found) = single(&qualified, tools, written)? {
            return Ok(Some(found));
        }
        let bare: Vec<usize> = (0..tools.len())
            .filter(|&i| same(&tools[i].name, name))
            .collect();
        if let Some(found) = single(&bare, tools, written)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Whether `name` is `tool`'s server and name joined by one of the separators.
fn names_qualified(name: &str, tool: &ToolInfo, same: fn(&str, &str) -> bool) -> bool {
    SEPARATORS.iter().any(|separator| {
        name.len() == tool.server.len() + separator.len() + tool.name.len()
            && name.is_char_boundary(tool.server.len())
            && name.is_char_boundary(tool.server.len() + separator.len())
            && same(&name[..tool.server.len()], &tool.server)
            && &name[tool.server.len()..tool.server.len() + separator.len()] == *separator
            && same(&name[tool.server.len() + separator.len()..], &tool.name)
    })
}

/// The one tool found (its index), none, or an error when several servers have it.
fn single(found: &[usize], tools: &[ToolInfo], written: &str) -> Result<Option<usize>, String> {
    match found {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        several => {
            let names: Vec<String> = several.iter().map(|&i| display(&tools[i])).collect();
            Err(format!(
                "`{}` is a tool of several servers: {}. Write which one, e.g. `{}`.",
                one_line(written, 80),
                names.join(", "),
                names[0]
            ))
        }
    }
}

/// The error for a name no tool has.
fn unknown(written: &str, name: &str, tools: &[ToolInfo]) -> String {
    let shown = one_line(written, 80);
    if tools.is_empty() {
        return format!("There is no MCP tool `{shown}`: no MCP server is ready.");
    }
    if let Some((server, tool)) = server_prefix(name, tools) {
        let own: Vec<&ToolInfo> = tools.iter().filter(|t| t.server == server).collect();
        let near = closest(tool, own.iter().map(|t| t.name.as_str()), MAX_SUGGESTIONS);
        let hint = match near.first() {
            Some(near) => format!(
                " Did you mean `{}.{}`?",
                one_line(&server, 64),
                one_line(near, 64)
            ),
            None => String::new(),
        };
        return format!(
            "The MCP server `{}` has no tool `{}`.{hint} Its tools: {}.",
            one_line(&server, 64),
            one_line(tool, 80),
            listed(own.iter().map(|t| one_line(&t.name, 64)).collect())
        );
    }
    let qualified: Vec<String> = tools.iter().map(display).collect();
    let by_qualified = closest(name, qualified.iter().map(String::as_str), MAX_SUGGESTIONS);
    let by_bare = closest(name, tools.iter().map(|t| t.name.as_str()), MAX_SUGGESTIONS);
    let mut suggestions: Vec<String> = by_qualified.into_iter().map(str::to_owned).collect();
    for bare in by_bare {
        for tool in tools.iter().filter(|tool| tool.name == bare) {
            let name = display(tool);
            if !suggestions.contains(&name) {
                suggestions.push(name);
            }
        }
    }
    suggestions.truncate(MAX_SUGGESTIONS);
    if !suggestions.is_empty() {
        return format!(
            "There is no MCP tool `{shown}`. Did you mean: {}? {HOW}",
            suggestions.join(", ")
        );
    }
    format!(
        "There is no MCP tool `{shown}`. The tools are: {}. {HOW}",
        listed(qualified)
    )
}

/// `name` split after the name of a server it starts with (the longest), when it does.
fn server_prefix<'a>(name: &'a str, tools: &[ToolInfo]) -> Option<(String, &'a str)> {
    let mut best: Option<(String, &str)> = None;
    for tool in tools {
        let server = tool.server.as_str();
        let Some(head) = name.get(..server.len()) else {
            continue;
        };
        if !head.eq_ignore_ascii_case(server) {
            continue;
        }
        let rest = &name[server.len()..];
        let Some(tool_name) = SEPARATORS.iter().find_map(|s| rest.strip_prefix(s)) else {
            continue;
        };
        if !tool_name.is_empty() && best.as_ref().is_none_or(|(b, _)| b.len() < server.len()) {
            best = Some((server.to_owned(), tool_name));
        }
    }
    best
}

/// `names`, at most `LIST_ALL_UP_TO` of them then `… and N more`.
fn listed(names: Vec<String>) -> String {
    let more = names.len().saturating_sub(LIST_ALL_UP_TO);
    let mut shown: Vec<String> = names.into_iter().take(LIST_ALL_UP_TO).collect();
    if more > 0 {
        shown.push(format!("… and {more} more"));
    }
    shown.join(", ")
}

fn display(tool: &ToolInfo) -> String {
    one_line(&tool.qualified(), 130)
}
