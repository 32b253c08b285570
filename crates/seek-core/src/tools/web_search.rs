//! The `web_search` tool: the block's first non-empty line is the query (a `search:` prefix and
//! quotes removed, as small models write them), sent to the configured backend. The output is
//! AgenticSeek's `Title:…\nSnippet:…\nLink:…` list; the block succeeds when the search returned
//! results, whatever words the snippets hold (AgenticSeek failed any output containing
//! "Error").
//!
//! It must not read the pages it finds.

use std::sync::{Arc, OnceLock};

use crate::BoxFuture;
use crate::config::WebSettings;
use crate::protocol::Block;
use crate::tool_kind::ToolKind;
use crate::web::search::{self, SearchBackend, SearchError};

use super::{OutputSink, Tool, ToolClass, ToolContext, ToolOutcome, ToolSpec};

/// How many results a search returns (AgenticSeek's browser kept the first 16).
pub const SEARCH_LIMIT: usize = 16;

/// web_search's declaration: its settings are the `[web]` section's (the SearxNG URL, the
/// timeout), not a `[tools.web_search]` table's.
pub const TOOL: ToolSpec = ToolSpec {
    kind: ToolKind::WebSearch,
    class: ToolClass::WebSearch,
    line_comment: None,
    build: |_, config| Some(Box::new(WebSearchTool::new(&config.web))),
};

pub struct WebSearchTool {
    settings: WebSettings,
    /// Built at the first search and kept: one HTTP client (and its connections) for every
    /// search, and what the instance refused (JSON) is remembered.
    backend: OnceLock<Result<Arc<dyn SearchBackend>, SearchError>>,
}

impl WebSearchTool {
    pub fn new(settings: &WebSettings) -> Self {
        Self {
            settings: settings.clone(),
            backend: OnceLock::new(),
        }
    }

    fn backend(&self) -> Result<Arc<dyn SearchBackend>, SearchError> {
        self.backend
            .get_or_init(|| search::backend(&self.settings))
            .clone()
    }
}

/// The longest query sent, in characters: a search engine wants words, not a pasted page.
const MAX_QUERY_CHARS: usize = 400;

/// Prefixes small models put before the query (compared without case).
const QUERY_PREFIXES: [&str; 3] = ["web_search:", "search:", "query:"];

/// The query a block or a reply names: its first non-empty line, without a `search:` /
/// `query:` / `web_search:` prefix (any case), surrounding quotes or backticks, white space
/// collapsed, at most ~400 characters (cut at a word). `None` when nothing is left.
pub fn query_of(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut rest = unquote(line);
    // `search: "x"` and `"search: x"` both occur; a prefix may follow quotes or precede them.
    loop {
        let stripped = QUERY_PREFIXES.iter().find_map(|prefix| {
            rest.get(..prefix.len())
                .filter(|head| head.eq_ignore_ascii_case(prefix))
                .map(|_| &rest[prefix.len()..])
        });
        match stripped {
            Some(after) => rest = unquote(after),
            None => break,
        }
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let mut query = String::new();
    for word in words {
        let added = usize::from(!query.is_empty()) + word.chars().count();
        if query.chars().count() + added > MAX_QUERY_CHARS {
            if query.is_empty() {
                query = word.chars().take(MAX_QUERY_CHARS).collect();
            }
            break;
        }
        if !query.is_empty() {
            query.push(' ');
        }
        query.push_str(word);
    }
    (!query.is_empty()).then_some(query)
}

/// `text` trimmed, without the quotes or backticks around it (matching pairs, nested ones
/// too: ``` `"x"` ```).
fn unquote(text: &str) -> &str {
    let mut text = text.trim();
    loop {
        let inner = ['"', '\'', '`', '“', '‘'].iter().find_map(|&open| {
            let close = match open {
                '“' => '”',
                '‘' => '’',
                other => other,
            };
            text.strip_prefix(open)?.strip_suffix(close)
        });
        match inner {
            Some(inner) => text = inner.trim(),
            None => return text,
        }
    }
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
        Box::pin(async move {
            if block.code.trim().is_empty() {
                return failed(on_output, "Error: No search query provided.".to_owned());
            }
            let Some(query) = query_of(&block.code) else {
                return failed(on_output, SearchError::EmptyQuery.to_string());
            };
            let backend = match self.backend() {
                Ok(backend) => backend,
                Err(e) => return failed(on_output, e.to_string()),
            };
            let found = tokio::select! {
                // Stop wins over a result that arrives in the same instant.
                biased;
                () = ctx.cancel.cancelled() => Err(SearchError::Stopped),
                found = backend.search(&query, SEARCH_LIMIT) => found,
            };
            match found {
                Ok(hits) if hits.is_empty() => failed(
                    on_output,
                    "No search results, web search failed.".to_owned(),
                ),
                Ok(hits) => {
                    let text = format!("{}\n", search::format_hits(&hits));
                    on_output(&text);
                    ToolOutcome::ok_without_process(text)
                }
                Err(e) => failed(on_output, e.to_string()),
            }
        })
    }
}

/// A failure shown as the block's output and sent to the model.
fn failed(on_output: OutputSink<'_>, reason: String) -> ToolOutcome {
    let text = format!("{reason}\n");
    on_output(&text);
    ToolOutcome::failed_without_process(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_is_the_first_line_without_prefix_or_quotes() {
        assert_eq!(query_of("quokka facts").as_deref(), Some("quokka facts"));
        assert_eq!(
            query_of("\n\n  search: quokka facts\nmore").as_deref(),
            Some("quokka facts")
        );
        assert_eq!(
            query_of("Search: \"quokka facts\"").as_deref(),
            Some("quokka facts")
        );
        assert_eq!(
            query_of("\"search: quokka facts\"").as_deref(),
            Some("quokka facts")
        );
        assert_eq!(query_of("QUERY: `rust 1.90`").as_deref(), Some("rust 1.90"));
        assert_eq!(query_of("web_search: 'a   b\tc'").as_deref(), Some("a b c"));
        assert_eq!(query_of("“curly quotes”").as_deref(), Some("curly quotes"));
        // Only whole prefixes: `searching` is a word of the query.
        assert_eq!(
            query_of("searching rust").as_deref(),
            Some("searching rust")
        );
        assert_eq!(
            query_of("don't \"stop\"").as_deref(),
            Some("don't \"stop\"")
        );
    }

    #[test]
    fn nothing_left_is_no_query() {
        assert_eq!(query_of(""), None);
        assert_eq!(query_of("  \n \t\n"), None);
        assert_eq!(query_of("search:"), None);
        assert_eq!(query_of("search: \"\""), None);
        assert_eq!(query_of("``"), None);
        assert_eq!(query_of("\"search:\""), None);
    }

    #[test]
    fn long_queries_are_cut_at_a_word() {
        let query = query_of(&"word ".repeat(200)).unwrap_or_default();
        assert!(query.chars().count() <= MAX_QUERY_CHARS);
        assert!(query.ends_with("word"));
        let one_word = query_of(&"é".repeat(1000)).unwrap_or_default();
        assert_eq!(one_word.chars().count(), MAX_QUERY_CHARS);
    }
}
