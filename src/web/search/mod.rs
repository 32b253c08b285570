//! Web search: the `SearchBackend` trait, AgenticSeek's text shape of results
//! (`Title:…\nSnippet:…\nLink:…`, blank-line separated) and its reading back, and the backend
//! the settings name (SearxNG, `searxng.rs`).
//!
//! Adding a search API: one file implementing `SearchBackend`, and its line in `backend`.
//! It must not read pages or know the agent.

mod searxng;

use std::sync::Arc;

pub use searxng::SearxNg;

use crate::BoxFuture;
use crate::config::WebSettings;

pub use crate::wire::WebHit as SearchHit;

/// Why a search gave no results. The texts are what the model and the user read: each names
/// the URL and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// No backend is configured.
    #[error(
        "no search engine is configured: set [web] searxng_url in the config file (or the SEARXNG_BASE_URL environment variable) to a SearxNG instance, e.g. http://127.0.0.1:8080"
    )]
    NotConfigured,
    #[error("Error: Empty search query provided.")]
    EmptyQuery,
    /// The backend could not be reached (connection refused, DNS, TLS, timeout).
    #[error(
        "Error during search: SearxNG unavailable at {url}: {reason}. Is the SearxNG instance running?"
    )]
    Unreachable { url: String, reason: String },
    /// The backend answered with an error status.
    #[error("Error during search: {url} answered HTTP {status}{detail}")]
    Status {
        url: String,
        status: u16,
        detail: String,
    },
    /// The backend answered something that is not a results page.
    #[error("Error during search: {url} answered something seek could not read: {reason}")]
    Unreadable { url: String, reason: String },
    #[error("the search was stopped")]
    Stopped,
}

/// A search engine.
pub trait SearchBackend: Send + Sync {
    /// Its name for events and messages (`searxng`).
    fn name(&self) -> &'static str;

    /// Searches `query` (already trimmed, not empty). At most `limit` results, in the
    /// engine's order. Every request is bounded by the backend's timeout.
    fn search<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, SearchError>>;
}

/// The backend the settings name (`None`-like error when none is configured).
pub fn backend(settings: &WebSettings) -> Result<Arc<dyn SearchBackend>, SearchError> {
    match &settings.searxng_url.value {
        Some(url) => Ok(Arc::new(SearxNg::new(url, settings.timeout()))),
        None => Err(SearchError::NotConfigured),
    }
}

/// AgenticSeek's shape: `Title:{t}\nSnippet:{s}\nLink:{url}` per result, joined by a blank
/// line. Titles and snippets are made single-line and terminal-safe.
pub fn format_hits(hits: &[SearchHit]) -> String {
    todo_contract(hits)
}

/// A result read back from `format_hits`'s text (AgenticSeek's `jsonify_search_results`):
/// blocks split on blank lines, `Title:` / `Snippet:` / `Link:` lines, values trimmed; a block
/// without a `Link:` is dropped; a missing snippet is `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedHit {
    pub title: Option<String>,
    pub snippet: Option<String>,
    pub link: String,
}

pub fn parse_hits(text: &str) -> Vec<ParsedHit> {
    let _ = text;
    Vec::new()
}

fn todo_contract(hits: &[SearchHit]) -> String {
    let _ = hits;
    String::new()
}
