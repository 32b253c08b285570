//! The `web_search` tool: the block's first non-empty line is the query (a `search:` prefix and
//! quotes removed, as small models write them), sent to the configured backend. The output is
//! AgenticSeek's `Title:…\nSnippet:…\nLink:…` list; the block succeeds when the search returned
//! results, whatever words the snippets hold (AgenticSeek failed any output containing
//! "Error").
//!
//! It must not read the pages it finds.

use crate::BoxFuture;
use crate::config::WebSettings;
use crate::protocol::Block;
use crate::tool_kind::ToolKind;

use super::{OutputSink, Tool, ToolContext, ToolOutcome};

/// How many results a search returns (AgenticSeek's browser kept the first 16).
pub const SEARCH_LIMIT: usize = 16;

pub struct WebSearchTool {
    settings: WebSettings,
}

impl WebSearchTool {
    pub fn new(settings: &WebSettings) -> Self {
        Self {
            settings: settings.clone(),
        }
    }
}

/// The query a block or a reply names: its first non-empty line, without a `search:` /
/// `query:` prefix, surrounding quotes or backticks. `None` when nothing is left.
pub fn query_of(text: &str) -> Option<String> {
    let _ = text;
    None
}

impl Tool for WebSearchTool {
    fn kind(&self) -> ToolKind {
        ToolKind::WebSearch
    }

    fn run<'a>(
        &'a self,
        block: &'a Block,
        ctx: &'a ToolContext,
        on_output: OutputSink<'a>,
    ) -> BoxFuture<'a, ToolOutcome> {
        let _ = (block, ctx, on_output, &self.settings);
        Box::pin(async {
            ToolOutcome::failed_without_process("web_search is not built yet".into())
        })
    }
}
