//! The real tool lists captured from MCP servers (tests/fixtures/mcp/tools-*.json, written by
//! dump_tools.py) as `ToolInfo`s, for the tests of the block's pure parts.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::mcp::ToolInfo;

/// `python3 -m mcp_server_time`'s tools, as server `time`.
pub fn time() -> Vec<ToolInfo> {
    tools(
        include_str!("../../../../tests/fixtures/mcp/tools-time.json"),
        "time",
    )
}

/// `mcp-server-everything stdio`'s tools, as server `everything`.
pub fn everything() -> Vec<ToolInfo> {
    tools(
        include_str!("../../../../tests/fixtures/mcp/tools-everything.json"),
        "everything",
    )
}

/// `mcp-server-filesystem DIR`'s tools (`@modelcontextprotocol/server-filesystem`), as server
/// `fs`.
pub fn filesystem() -> Vec<ToolInfo> {
    tools(
        include_str!("../../../../tests/fixtures/mcp/tools-filesystem.json"),
        "fs",
    )
}

/// The three servers a user tried together: 29 tools (filesystem, everything, time).
pub fn three() -> Vec<ToolInfo> {
    let mut all = filesystem();
    all.extend(everything());
    all.extend(time());
    all
}

/// Both lists, `time` first.
pub fn both() -> Vec<ToolInfo> {
    let mut all = time();
    all.extend(everything());
    all
}

/// A made-up tool of `server` with `schema` as its input schema.
pub fn tool(server: &str, name: &str, schema: Value) -> ToolInfo {
    ToolInfo {
        server: server.into(),
        name: name.into(),
        description: format!("The {name} tool"),
        input_schema: Arc::new(object(schema)),
    }
}

/// The schema of `server.name` in `tools`.
pub(crate) fn schema_of<'a>(tools: &'a [ToolInfo], name: &str) -> &'a Map<String, Value> {
    &tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
        .input_schema
}

pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn tools(listing: &str, server: &str) -> Vec<ToolInfo> {
    let listing: Value = serde_json::from_str(listing).expect("the fixture is JSON");
    listing["tools"]
        .as_array()
        .expect("the fixture has tools")
        .iter()
        .map(|tool| ToolInfo {
            server: server.into(),
            name: tool["name"].as_str().expect("a name").into(),
            description: tool["description"].as_str().unwrap_or_default().into(),
            input_schema: Arc::new(object(tool["inputSchema"].clone())),
        })
        .collect()
}
