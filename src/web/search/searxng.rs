//! SearxNG: its JSON API first (`GET /search?q=…&format=json`), and when the instance refuses
//! JSON (403, or HTML back), its HTML results page parsed (`article.result`, AgenticSeek's
//! selectors). Every request has a timeout; TLS is always verified.
//!
//! It must not read the pages it links to.

use std::time::Duration;

use super::{SearchBackend, SearchError, SearchHit};
use crate::BoxFuture;

/// A SearxNG instance.
pub struct SearxNg {
    base_url: String,
    timeout: Duration,
}

impl SearxNg {
    /// `base_url` without a trailing `/` (`http://127.0.0.1:8080`).
    pub fn new(base_url: &str, timeout: Duration) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            timeout,
        }
    }
}

impl SearchBackend for SearxNg {
    fn name(&self) -> &'static str {
        "searxng"
    }

    fn search<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, SearchError>> {
        let _ = (query, limit, self.timeout);
        Box::pin(async move {
            Err(SearchError::Unreachable {
                url: self.base_url.clone(),
                reason: "not built yet".into(),
            })
        })
    }
}
