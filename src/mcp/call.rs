//! Reading an ```mcp block as a call: the tool's name on the first line, then its arguments as
//! a JSON object or as `key: value` lines.
//!
//! Pure text in, a request out. It must not know which servers exist (`resolve` is given their
//! tools) or check types (`check` does).

use serde_json::{Map, Value};

use super::ToolInfo;

/// A block read as a call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRequest {
    /// `server` of `server.tool`, when the block named one.
    pub server: Option<String>,
    pub tool: String,
    pub arguments: Map<String, Value>,
    /// The arguments came as `key: value` lines (values that parse as JSON are typed, others
    /// are strings); `check` may turn a typed scalar back into the text written when the schema
    /// wants a string.
    pub from_lines: bool,
}

/// Why a block is not a call; the text is what the model is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CallParseError(pub String);

/// Reads `code` (the block's body) as a call.
pub fn parse_call(code: &str) -> Result<CallRequest, CallParseError> {
    let _ = code;
    Err(CallParseError("not implemented".into()))
}

/// The tool `request` names among `tools`: `server.tool` exactly, or a bare `tool` that one
/// server has. The error says what exists (or which servers share the name).
pub fn resolve<'a>(request: &CallRequest, tools: &'a [ToolInfo]) -> Result<&'a ToolInfo, String> {
    let _ = (request, tools);
    Err("not implemented".into())
}
