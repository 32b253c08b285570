//! Reading pages: the `PageReader` trait, what a read page is (`Page`), and the two engines
//! behind it, chosen by `[web] browser`: plain HTTP (`http.rs`: reqwest, no scripts) and a real
//! headless Chromium over the DevTools protocol on a pipe (`chromium.rs`: scripts run, every
//! request through seek's policy proxy). `open_reader` starts the one the settings ask for
//! (`auto`: Chromium where it is installed and starts, else HTTP).
//!
//! A reader is one task's browser: a fresh profile, its processes killed when it is closed or
//! dropped. It must not know the agent loop or cut text to a model's budget (the agent does).

mod chromium;
mod http;

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::Url;

use super::policy::{UrlPolicy, UrlRefused};
use crate::BoxFuture;
use crate::config::{BrowserChoice, WebSettings};
use crate::wire::{PageKind, WebField};

pub use chromium::{ChromiumReader, find_chromium, remove_stale_profiles};
pub use http::HttpReader;
// Plain data the web agent's prompts share, so it lives on the floor below (seek-wire).
pub use crate::wire::{Form, FormField};

/// Which engine reads pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Http,
    Chromium,
}

impl Engine {
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Http => "http",
            Engine::Chromium => "chromium",
        }
    }
}

/// A link on a page: its text and its absolute URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub text: String,
    pub url: String,
}

/// A page as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Where it was read from, after redirects.
    pub url: String,
    /// The HTTP status, when the engine knows it.
    pub status: Option<u16>,
    pub title: String,
    /// The whole extracted text (the agent cuts it to the model's budget).
    pub text: String,
    pub links: Vec<Link>,
    pub forms: Vec<Form>,
    pub kind: PageKind,
    /// The body's size as read, in bytes.
    pub bytes: usize,
    /// The body was larger than `[web] max_page_bytes` and only its start was read.
    pub truncated: bool,
}

/// Why a page could not be read. The texts are what the model and the user read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Refused(#[from] UrlRefused),
    #[error("{url} could not be reached: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} did not load within {secs} s ([web] timeout_secs)")]
    Timeout { url: String, secs: u64 },
    #[error("{url} redirected more than {limit} times")]
    TooManyRedirects { url: String, limit: usize },
    #[error("{url} is not a web page ({content_type}): it cannot be read as text")]
    NotText { url: String, content_type: String },
    #[error("no page is open: open one before filling a form")]
    NoPage,
    #[error("no form on {url} has a field named {names}: the fields are {available}")]
    NoMatchingForm {
        url: String,
        names: String,
        available: String,
    },
    /// seek's proxy refused an address the browser was led to (a name resolving to a private
    /// address, a redirect hop, …).
    #[error("{reason}")]
    Blocked { url: String, reason: String },
    /// Chromium is not installed where looked for.
    #[error("{what} was not found: {how}")]
    BrowserMissing { what: String, how: String },
    /// The browser failed (it crashed, the driver refused a command, …).
    #[error("the browser failed: {reason}")]
    Browser { reason: String },
}

/// The file name of the latest page's screenshot (AgenticSeek's, which its front end asks for).
pub const SCREENSHOT_FILE: &str = "updated_screen.png";

/// One task's browser.
pub trait PageReader: Send {
    fn engine(&self) -> Engine;

    /// Opens `url` (already checked by the policy; redirects are checked again) and reads it.
    fn open<'a>(&'a mut self, url: &'a Url) -> BoxFuture<'a, Result<Page, ReadError>>;

    /// Fills the open page's form that best matches `fields` (by name: exact, case-insensitive,
    /// then contained), submits it, and reads where it led. Fields not given keep their values;
    /// checkboxes are ticked only when named with a true-ish value (`checked`, `true`, `on`,
    /// `yes`, `1`).
    fn submit<'a>(&'a mut self, fields: &'a [WebField]) -> BoxFuture<'a, Result<Page, ReadError>>;

    /// Ends the browser: its processes killed and waited for, its profile removed. Dropping a
    /// reader does the same without waiting.
    fn close(&mut self) -> BoxFuture<'_, ()>;

    /// A PNG of the open page as a browser shows it; `None` when the engine draws nothing (the
    /// `http` engine) or the browser could not take one.
    fn screenshot(&mut self) -> BoxFuture<'_, Option<Vec<u8>>> {
        Box::pin(async { None })
    }
}

/// A started reader, why it was picked, and how long it took to start.
pub struct ReaderStart {
    pub reader: Box<dyn PageReader>,
    /// For the user: `chromium 148.0… (auto: found /usr/bin/chromium)`, `http (auto: no
    /// chromium on PATH)`, …
    pub detail: String,
    pub elapsed: Duration,
}

/// Starts the reader `settings.browser` asks for. `auto` falls back to HTTP (saying why) when
/// Chromium or chromedriver is missing or fails to start; `chromium` fails instead.
pub async fn open_reader(
    settings: &WebSettings,
    policy: Arc<UrlPolicy>,
    env_remove: &[std::ffi::OsString],
) -> Result<ReaderStart, ReadError> {
    let started = Instant::now();
    let (reader, detail): (Box<dyn PageReader>, String) = match settings.browser.value {
        BrowserChoice::Http => (Box::new(HttpReader::new(settings, policy)?), "http".into()),
        BrowserChoice::Chromium => {
            let reader = ChromiumReader::start(settings, policy, env_remove).await?;
            let detail = format!("chromium {}", reader.version());
            (Box::new(reader), detail)
        }
        BrowserChoice::Auto => {
            let binary = chromium::find_chromium(settings.chromium.value.as_deref());
            let chromium = match binary {
                Ok(binary) => {
                    ChromiumReader::start_with(&binary, settings, Arc::clone(&policy), env_remove)
                        .await
                        .map_err(|e| format!("chromium failed to start: {}", browser_failure(&e)))
                }
                Err(missing) => Err(missing_reason(&missing)),
            };
            match chromium {
                Ok(reader) => {
                    let detail = format!("chromium {} (auto)", reader.version());
                    (Box::new(reader), detail)
                }
                Err(why) => (
                    Box::new(HttpReader::new(settings, policy)?),
                    format!("http (auto: {why})"),
                ),
            }
        }
    };
    Ok(ReaderStart {
        reader,
        detail,
        elapsed: started.elapsed(),
    })
}

/// "chromium not found on PATH", "chromium not found at /opt/x (set in [web] chromium)".
fn missing_reason(error: &ReadError) -> String {
    match error {
        ReadError::BrowserMissing { what, .. } => {
            let (name, place) = what.split_once(" (").unwrap_or((what.as_str(), ""));
            let place = place.trim_end_matches(')');
            if let Some(path) = place.strip_prefix("at ") {
                format!("{name} not found at {path}")
            } else if place.is_empty() {
                format!("{name} not found")
            } else {
                format!("{name} not found on PATH")
            }
        }
        other => other.to_string(),
    }
}

/// A start failure's reason without the "the browser failed:" prefix.
fn browser_failure(error: &ReadError) -> String {
    match error {
        ReadError::Browser { reason } => reason.clone(),
        other => other.to_string(),
    }
}
