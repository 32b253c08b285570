//! SearxNG: its JSON API first (`GET /search?q=…&format=json`), and when the instance refuses
//! JSON (a 4xx, or HTML or invalid JSON back), its HTML results page (`POST /search`, the form
//! AgenticSeek sent) parsed by `results.rs`. An instance that refused JSON is remembered, so
//! later searches go straight to HTML. One client per backend: every request has a connect and
//! a total timeout, TLS is always verified, redirects are limited, bodies are read up to a cap.
//!
//! It must not read the pages it links to. Errors name the search URL with its credentials
//! masked.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::StatusCode;

use super::results::{self, JsonAnswer};
use super::{SearchBackend, SearchError, SearchHit, one_line};
use crate::BoxFuture;

/// A browser's User-Agent (AgenticSeek's): public instances turn away obvious bots.
const USER_AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/134.0.0.0 Safari/537.36";
/// The longest a connection may take to open (the total timeout still bounds it when shorter).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Redirects followed (an instance behind a proxy may add one or two).
const MAX_REDIRECTS: usize = 3;
/// The most of a results answer read: a real one is tens of KiB.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// The most of an error answer read for its detail.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// The characters of an error answer's text quoted in the error.
const ERROR_DETAIL_CHARS: usize = 120;

/// A SearxNG instance.
pub struct SearxNg {
    /// `{base}/search`.
    search_url: String,
    /// `search_url` with credentials masked, for messages.
    shown_url: String,
    timeout: Duration,
    client: Result<reqwest::Client, String>,
    /// The instance answered a JSON request with something else; only HTML is asked from now.
    json_refused: AtomicBool,
}

/// What a JSON request came to.
enum JsonTry {
    Hits(Vec<SearchHit>),
    /// Ask for HTML instead; `remember` when the refusal is the instance's configuration (not a
    /// passing rate limit).
    Refused {
        remember: bool,
    },
}

impl SearxNg {
    /// `base_url` without a trailing `/` (`http://127.0.0.1:8080`); `timeout` bounds each
    /// request from connecting to the last byte of its answer.
    pub fn new(base_url: &str, timeout: Duration) -> Self {
        let search_url = format!("{}/search", base_url.trim_end_matches('/'));
        let client = crate::tls::client_builder()
            .user_agent(USER_AGENT)
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
            .build()
            .map_err(|e| format!("its HTTP client could not be built: {e}"));
        Self {
            shown_url: crate::config::redact_url(&search_url),
            search_url,
            timeout,
            client,
            json_refused: AtomicBool::new(false),
        }
    }

    /// Whether this instance refused JSON once (later searches ask for HTML only).
    pub fn json_refused(&self) -> bool {
        self.json_refused.load(Ordering::Relaxed)
    }

    async fn search_json(
        &self,
        client: &reqwest::Client,
        query: &str,
        limit: usize,
    ) -> Result<JsonTry, SearchError> {
        let request = client
            .get(&self.search_url)
            .header(reqwest::header::ACCEPT, "application/json")
            .header(reqwest::header::ACCEPT_LANGUAGE, "en-US,en;q=0.9")
            .query(&[
                ("q", query),
                ("format", "json"),
                ("categories", "general"),
                ("language", "auto"),
                ("safesearch", "0"),
            ]);
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        let status = response.status();
        if status.is_server_error() {
            return Err(self.status_error(response).await);
        }
        if !status.is_success() {
            // 429 is a rate limit: HTML may be refused too, but JSON may work next time.
            return Ok(JsonTry::Refused {
                remember: status != StatusCode::TOO_MANY_REQUESTS,
            });
        }
        let body = self.read_body(response, MAX_BODY_BYTES).await?;
        Ok(match results::from_json(&body, limit) {
            JsonAnswer::Hits(hits) => JsonTry::Hits(hits),
            JsonAnswer::NotJson => JsonTry::Refused { remember: true },
        })
    }

    async fn search_html(
        &self,
        client: &reqwest::Client,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SearchHit>, SearchError> {
        let request = client
            .post(&self.search_url)
            .header(
                reqwest::header::ACCEPT,
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            )
            .header(reqwest::header::ACCEPT_LANGUAGE, "en-US,en;q=0.9")
            .form(&[
                ("q", query),
                ("categories", "general"),
                ("language", "auto"),
                ("time_range", ""),
                ("safesearch", "0"),
                ("theme", "simple"),
            ]);
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        if !response.status().is_success() {
            return Err(self.status_error(response).await);
        }
        let body = self.read_body(response, MAX_BODY_BYTES).await?;
        Ok(results::from_html(&body, limit))
    }

    /// The body, read chunk by chunk so a huge or endless answer stops at `cap`.
    async fn read_body(
        &self,
        mut response: reqwest::Response,
        cap: usize,
    ) -> Result<String, SearchError> {
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.unreachable(&e))? {
            if body.len() + chunk.len() > cap {
                return Err(SearchError::Unreadable {
                    url: self.shown_url.clone(),
                    reason: format!("its answer is larger than {} KiB", cap / 1024),
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// An error status, with the answer's first words as the detail.
    async fn status_error(&self, response: reqwest::Response) -> SearchError {
        let status = response.status();
        let reason = status.canonical_reason().unwrap_or("error");
        // The detail is a courtesy: an answer too big or too slow to read is left out.
        let text = match self.read_body(response, MAX_ERROR_BODY_BYTES).await {
            Ok(body) => visible_text(&body),
            Err(_) => String::new(),
        };
        let text = one_line(&text, ERROR_DETAIL_CHARS);
        let detail = if text.is_empty() || text.eq_ignore_ascii_case(reason) {
            format!(" ({reason})")
        } else {
            format!(" ({reason}): {text}")
        };
        SearchError::Status {
            url: self.shown_url.clone(),
            status: status.as_u16(),
            detail,
        }
    }

    fn unreachable(&self, error: &reqwest::Error) -> SearchError {
        let reason = if error.is_timeout() {
            format!("no answer within {}", seconds(self.timeout))
        } else {
            causes(error)
        };
        SearchError::Unreachable {
            url: self.shown_url.clone(),
            reason,
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
        Box::pin(async move {
            let client = self
                .client
                .as_ref()
                .map_err(|reason| SearchError::Unreachable {
                    url: self.shown_url.clone(),
                    reason: reason.clone(),
                })?;
            if !self.json_refused() {
                match self.search_json(client, query, limit).await? {
                    JsonTry::Hits(hits) => return Ok(hits),
                    JsonTry::Refused { remember } => {
                        if remember {
                            self.json_refused.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
            self.search_html(client, query, limit).await
        })
    }
}

/// The error and its causes, outermost first, without the URL (the message names it masked)
/// and without repeats (hyper's layers often say the same thing twice).
fn causes(error: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = current {
        let text = match e.downcast_ref::<reqwest::Error>() {
            // `reqwest::Error`'s text names the URL, credentials included.
            Some(_) if parts.is_empty() => {
                if error.is_connect() {
                    "could not connect".to_owned()
                } else if error.is_redirect() {
                    "too many redirects".to_owned()
                } else if error.is_builder() {
                    "the URL is not valid".to_owned()
                } else {
                    "the request failed".to_owned()
                }
            }
            _ => e.to_string(),
        };
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    one_line(&parts.join(": "), 400)
}

/// `1 s`, `2.5 s`.
fn seconds(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{} s", millis / 1000)
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// The text a browser would show of an error page (its tags dropped).
fn visible_text(body: &str) -> String {
    let document = scraper::Html::parse_document(body);
    let text: Vec<&str> = document.root_element().text().collect();
    text.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_written_plainly() {
        assert_eq!(seconds(Duration::from_secs(20)), "20 s");
        assert_eq!(seconds(Duration::from_millis(2500)), "2.5 s");
    }

    #[test]
    fn error_pages_show_their_text() {
        assert_eq!(
            visible_text("<html><body><h1>Internal</h1><p>error</p></body></html>").trim(),
            "Internal error"
        );
    }

    #[test]
    fn shown_url_masks_credentials() {
        let backend = SearxNg::new("https://me:hunter2@searx.example/", Duration::from_secs(5));
        assert!(
            !backend.shown_url.contains("hunter2"),
            "{}",
            backend.shown_url
        );
        assert!(backend.shown_url.ends_with("searx.example/search"));
        assert_eq!(
            backend.search_url,
            "https://me:hunter2@searx.example/search"
        );
    }
}
