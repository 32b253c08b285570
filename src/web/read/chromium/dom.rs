//! Reading the page Chromium shows: waiting until it loaded and its scripts stopped writing,
//! taking the rendered DOM (capped), and turning WebDriver failures into `ReadError`s.
//!
//! It must not decide which URLs may be opened (the reader checks the policy) nor fill forms.

use std::time::Duration;

use fantoccini::Client;
use fantoccini::error::{CmdError, ErrorStatus};
use reqwest::Url;
use serde_json::{Value, json};

use super::super::ReadError;

/// How often the page's state is polled while waiting for it.
const POLL: Duration = Duration::from_millis(50);

/// How long script-written text may keep changing before the page is read as it is.
const SETTLE_BOUND: Duration = Duration::from_secs(2);

/// The rendered document, as taken from the DOM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// `location.href`.
    pub url: String,
    /// The start of `document.documentElement.outerHTML`, at most the cap in bytes.
    pub html: String,
    /// The whole document's size in UTF-8 bytes.
    pub size: usize,
    /// `document.contentType` (`text/html`, `application/json`, `image/png`, …).
    pub content_type: String,
}

impl Snapshot {
    pub fn truncated(&self) -> bool {
        self.size > self.html.len()
    }
}

/// Waits until `document.readyState` is `complete` (bounded by `within`), then until the body's
/// text and element count are the same on two polls in a row (bounded by `SETTLE_BOUND`), so
/// text written by scripts after the load is there.
pub async fn settle(client: &Client, within: Duration) -> Result<(), CmdError> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let state = client.execute("return document.readyState", vec![]).await?;
        if state.as_str() == Some("complete") || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    let settle_deadline = tokio::time::Instant::now() + SETTLE_BOUND.min(within);
    let mut last = None;
    loop {
        let shape = client
            .execute(
                "const b = document.body; \
                 return b ? [b.textContent.length, b.getElementsByTagName('*').length] : [0, 0];",
                vec![],
            )
            .await?;
        if last.as_ref() == Some(&shape) || tokio::time::Instant::now() >= settle_deadline {
            return Ok(());
        }
        last = Some(shape);
        tokio::time::sleep(POLL * 2).await;
    }
}

/// Takes the document: its URL, type and markup, the markup cut to `max_bytes`.
pub async fn snapshot(client: &Client, max_bytes: usize) -> Result<Snapshot, CmdError> {
    // The cap is passed in characters (each at least one byte), then cut exactly in bytes here:
    // a 10 MB page never crosses the WebDriver connection whole.
    let cap_chars = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    let value = client
        .execute(
            "const root = document.documentElement; \
             const h = root ? root.outerHTML : ''; \
             return {url: location.href, type: document.contentType || '', \
                     size: new Blob([h]).size, html: h.slice(0, arguments[0])};",
            vec![json!(cap_chars)],
        )
        .await?;
    let field = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or("");
    let mut html = field("html").to_owned();
    cut_to_bytes(&mut html, max_bytes);
    let size = value
        .get("size")
        .and_then(Value::as_u64)
        .and_then(|s| usize::try_from(s).ok())
        .unwrap_or(html.len());
    Ok(Snapshot {
        url: field("url").to_owned(),
        content_type: field("type").to_ascii_lowercase(),
        size: size.max(html.len()),
        html,
    })
}

/// Cuts `text` to at most `max` bytes, at a character boundary.
fn cut_to_bytes(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
}

/// Whether a document of `content_type` is read as text (Chromium shows JSON and plain text as
/// text too; images, PDFs and media are not text).
pub fn is_text(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.is_empty()
        || essence.starts_with("text/")
        || essence == "application/json"
        || essence.ends_with("/xml")
        || essence.ends_with("+xml")
        || essence.ends_with("+json")
}

/// What a failed navigation means for the model.
pub fn navigation_error(url: &Url, error: &CmdError, timeout: Duration) -> ReadError {
    match error {
        CmdError::Standard(w) if w.error == ErrorStatus::Timeout => ReadError::Timeout {
            url: url.to_string(),
            secs: timeout.as_secs(),
        },
        CmdError::Standard(w) if w.message.contains("net::ERR_") => ReadError::Unreachable {
            url: url.to_string(),
            reason: net_error(&w.message),
        },
        other => browser_error(other),
    }
}

/// `net::ERR_NAME_NOT_RESOLVED` out of chromedriver's message (which also names the driver's
/// session details the model does not need).
fn net_error(message: &str) -> String {
    message
        .split_whitespace()
        .find(|word| word.starts_with("net::ERR_"))
        .map_or_else(
            || message.lines().next().unwrap_or("").to_owned(),
            |code| {
                code.trim_end_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .to_owned()
            },
        )
}

/// Any other WebDriver failure: the first line of its message.
pub fn browser_error(error: &CmdError) -> ReadError {
    let text = error.to_string();
    ReadError::Browser {
        reason: text.lines().next().unwrap_or("").trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_respects_characters() {
        let mut text = "aé€".to_owned();
        cut_to_bytes(&mut text, 4);
        assert_eq!(text, "aé");
        let mut short = "abc".to_owned();
        cut_to_bytes(&mut short, 10);
        assert_eq!(short, "abc");
    }

    #[test]
    fn text_types_are_read_and_others_not() {
        assert!(is_text("text/html"));
        assert!(is_text("application/xhtml+xml"));
        assert!(is_text("application/json"));
        assert!(!is_text("image/png"));
        assert!(!is_text("application/pdf"));
    }

    #[test]
    fn the_net_error_code_is_kept() {
        assert_eq!(
            net_error("unknown error: net::ERR_CONNECTION_REFUSED\n  (Session info: chrome=148)"),
            "net::ERR_CONNECTION_REFUSED"
        );
        assert_eq!(net_error("something else\nmore"), "something else");
    }
}
