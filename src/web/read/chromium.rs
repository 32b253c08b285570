//! The `chromium` engine: a real headless Chromium driven over WebDriver (fantoccini and
//! chromedriver, which Debian ships at the same version as chromium). chromedriver runs in its
//! own process group with a parent-death signal; Chromium gets a fresh profile in a temporary
//! directory, `--no-sandbox` only when seek runs as root; closing (or dropping) the reader kills
//! the whole group, so no browser process outlives the task. The page is read from the DOM once
//! scripts ran, through `web::html`.
//!
//! It must not decide which URLs may be opened (the policy, checked before and after each load).
//! Processes live in `chromium/launch.rs`, reading the DOM in `chromium/dom.rs`, forms in
//! `chromium/form.rs`.

mod dom;
mod form;
mod launch;

use std::sync::Arc;
use std::time::Duration;

use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder};
use reqwest::Url;
use serde_json::json;

use super::{Engine, Page, PageReader, ReadError};
use crate::BoxFuture;
use crate::config::WebSettings;
use crate::web::html;
use crate::web::policy::UrlPolicy;
use crate::wire::WebField;

pub use launch::{Binaries, find_binaries};

/// How long Chromium may take to start (its first start on a busy machine is slow), at least.
const SESSION_START_BOUND: Duration = Duration::from_secs(30);
/// How long ending the WebDriver session may take before the processes are killed anyway.
const SESSION_END_BOUND: Duration = Duration::from_secs(2);
/// How long the killed processes may take to disappear from `/proc`.
const EXIT_BOUND: Duration = Duration::from_secs(5);
/// How long a screenshot may take before the page goes on without one.
const SCREENSHOT_BOUND: Duration = Duration::from_secs(3);
/// Beyond the page-load timeout Chromium enforces, how long a WebDriver command may hang.
const COMMAND_MARGIN: Duration = Duration::from_secs(5);

/// A Chromium reader.
pub struct ChromiumReader {
    policy: Arc<UrlPolicy>,
    /// `None` once closed.
    client: Option<Client>,
    group: crate::exec::HelperGroup,
    /// Removed when closed (after the processes are gone) or dropped.
    profile: Option<tempfile::TempDir>,
    version: String,
    timeout: Duration,
    max_bytes: usize,
    /// The page open now, if any (forms are filled there).
    current: Option<Url>,
}

impl ChromiumReader {
    /// Starts chromedriver and a headless Chromium session.
    pub async fn start(settings: &WebSettings, policy: Arc<UrlPolicy>) -> Result<Self, ReadError> {
        let binaries = find_binaries(
            settings.chromium.value.as_deref(),
            settings.chromedriver.value.as_deref(),
        )?;
        Self::start_with(&binaries, settings, policy).await
    }

    /// Starts the given binaries.
    pub async fn start_with(
        binaries: &Binaries,
        settings: &WebSettings,
        policy: Arc<UrlPolicy>,
    ) -> Result<Self, ReadError> {
        let profile = tempfile::Builder::new()
            .prefix("seek-chromium-")
            .tempdir()
            .map_err(|e| ReadError::Browser {
                reason: format!("a profile directory could not be made: {e}"),
            })?;
        let driver = launch::spawn_driver(&binaries.chromedriver).await?;
        let major = driver.version.split('.').next().unwrap_or("");
        let args = launch::chromium_args(
            profile.path(),
            &launch::user_agent(major),
            running_as_root(),
        );
        let timeout = settings.timeout();
        let capabilities = capabilities(&binaries.chromium, &args, timeout);
        let mut builder =
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
        builder.capabilities(capabilities);
        let address = format!("http://127.0.0.1:{}", driver.port);
        let bound = SESSION_START_BOUND.max(timeout);
        let client = match tokio::time::timeout(bound, builder.connect(&address)).await {
            Ok(Ok(client)) => client,
            Ok(Err(error)) => {
                driver.group.kill_and_wait(EXIT_BOUND).await;
                return Err(ReadError::Browser {
                    reason: format!(
                        "chromium ({}) failed to start: {}",
                        binaries.chromium.display(),
                        first_line(&error.to_string())
                    ),
                });
            }
            Err(_) => {
                driver.group.kill_and_wait(EXIT_BOUND).await;
                return Err(ReadError::Browser {
                    reason: format!("chromium did not start within {} s", bound.as_secs()),
                });
            }
        };
        let version = client
            .capabilities()
            .and_then(|c| c.get("browserVersion"))
            .and_then(|v| v.as_str())
            .unwrap_or(&driver.version)
            .to_owned();
        Ok(Self {
            policy,
            client: Some(client),
            group: driver.group,
            profile: Some(profile),
            version,
            timeout,
            max_bytes: settings.max_page_bytes(),
            current: None,
        })
    }

    /// Chromium's version, for the user.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The process group of the driver, Chromium and its helpers (for tests and measurements).
    pub fn process_group(&self) -> i32 {
        self.group.pgid()
    }

    /// The profile directory (it appears on every Chromium process's command line).
    pub fn profile_dir(&self) -> Option<&std::path::Path> {
        self.profile.as_ref().map(tempfile::TempDir::path)
    }

    fn client(&self) -> Result<Client, ReadError> {
        self.client.clone().ok_or_else(|| ReadError::Browser {
            reason: "the browser was closed".into(),
        })
    }

    /// Opens `url` in the page.
    async fn navigate(&mut self, url: &Url) -> Result<Page, ReadError> {
        self.policy.check(url.as_str())?;
        let client = self.client()?;
        self.current = None;
        let bound = self.timeout + COMMAND_MARGIN;
        match tokio::time::timeout(bound, client.goto(url.as_str())).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(dom::navigation_error(url, &error, self.timeout)),
            Err(_) => {
                return Err(ReadError::Timeout {
                    url: url.to_string(),
                    secs: self.timeout.as_secs(),
                });
            }
        }
        self.read(&client, url).await
    }

    /// Reads the page the browser shows now, after `asked` was opened or submitted.
    async fn read(&mut self, client: &Client, asked: &Url) -> Result<Page, ReadError> {
        let bound = self.timeout + COMMAND_MARGIN;
        let taken = tokio::time::timeout(bound, async {
            dom::settle(client, self.timeout).await?;
            dom::snapshot(client, self.max_bytes).await
        })
        .await;
        let snapshot = match taken {
            Ok(Ok(snapshot)) => snapshot,
            Ok(Err(error)) => return Err(dom::browser_error(&error)),
            Err(_) => {
                return Err(ReadError::Timeout {
                    url: asked.to_string(),
                    secs: self.timeout.as_secs(),
                });
            }
        };
        if snapshot.url.starts_with("chrome-error:") {
            return Err(ReadError::Unreachable {
                url: asked.to_string(),
                reason: "the browser showed its error page".into(),
            });
        }
        // A redirect or a script may have led anywhere: the final URL is checked again, and a
        // refused page is left at once.
        let url = match self.policy.check(&snapshot.url) {
            Ok(url) => url,
            Err(refused) => {
                let _ = tokio::time::timeout(bound, client.goto("about:blank")).await;
                return Err(refused.into());
            }
        };
        if !dom::is_text(&snapshot.content_type) {
            return Err(ReadError::NotText {
                url: url.to_string(),
                content_type: snapshot.content_type,
            });
        }
        let truncated = snapshot.truncated();
        let extracted = html::extract(&snapshot.html, &url);
        // WebDriver does not tell the HTTP status: the page's own words say what it is.
        let kind = html::classify(None, &extracted.title, &extracted.text);
        self.current = Some(url.clone());
        Ok(Page {
            url: url.to_string(),
            status: None,
            title: extracted.title,
            text: extracted.text,
            links: extracted.links,
            forms: extracted.forms,
            kind,
            bytes: snapshot.html.len(),
            truncated,
        })
    }

    async fn fill(&mut self, fields: &[WebField]) -> Result<Page, ReadError> {
        let Some(current) = self.current.clone() else {
            return Err(ReadError::NoPage);
        };
        let client = self.client()?;
        let bound = self.timeout + COMMAND_MARGIN;
        let forms = match tokio::time::timeout(bound, form::list_forms(&client)).await {
            Ok(Ok(forms)) => forms,
            Ok(Err(error)) => return Err(dom::browser_error(&error)),
            Err(_) => return Err(timeout_error(&current, self.timeout)),
        };
        let Some(choice) = form::choose(&forms, fields) else {
            return Err(no_matching_form(&current, &forms, fields));
        };
        match tokio::time::timeout(bound, form::fill_and_submit(&client, &choice)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(dom::navigation_error(&current, &error, self.timeout)),
            Err(_) => return Err(timeout_error(&current, self.timeout)),
        }
        self.read(&client, &current).await
    }
}

fn timeout_error(url: &Url, timeout: Duration) -> ReadError {
    ReadError::Timeout {
        url: url.to_string(),
        secs: timeout.as_secs(),
    }
}

fn no_matching_form(url: &Url, forms: &[Vec<String>], fields: &[WebField]) -> ReadError {
    let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    let mut available: Vec<&str> = forms.iter().flatten().map(String::as_str).collect();
    available.dedup();
    ReadError::NoMatchingForm {
        url: url.to_string(),
        names: names.join(", "),
        available: if available.is_empty() {
            "none (the page has no form)".into()
        } else {
            available.join(", ")
        },
    }
}

/// Chromium refuses to start its sandbox as root (containers): only then is it turned off.
fn running_as_root() -> bool {
    // SAFETY: geteuid(2) cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() == 0 }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

/// The session Chromium is started with.
fn capabilities(binary: &std::path::Path, args: &[String], timeout: Duration) -> Capabilities {
    let millis = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    let value = json!({
        "browserName": "chrome",
        "pageLoadStrategy": "normal",
        // A page's alert() must not block every later command.
        "unhandledPromptBehavior": "dismiss",
        "timeouts": {"pageLoad": millis, "script": millis, "implicit": 0},
        "goog:chromeOptions": {
            "binary": binary.display().to_string(),
            "args": args,
            // Nothing a page offers is saved to disk.
            "prefs": {"download_restrictions": 3},
        },
    });
    match value {
        serde_json::Value::Object(map) => map,
        // The literal above is an object.
        _ => Capabilities::new(),
    }
}

impl PageReader for ChromiumReader {
    fn engine(&self) -> Engine {
        Engine::Chromium
    }

    fn open<'a>(&'a mut self, url: &'a Url) -> BoxFuture<'a, Result<Page, ReadError>> {
        Box::pin(self.navigate(url))
    }

    fn submit<'a>(&'a mut self, fields: &'a [WebField]) -> BoxFuture<'a, Result<Page, ReadError>> {
        Box::pin(self.fill(fields))
    }

    fn screenshot(&mut self) -> BoxFuture<'_, Option<Vec<u8>>> {
        Box::pin(async move {
            let client = self.client.clone()?;
            match tokio::time::timeout(SCREENSHOT_BOUND, client.screenshot()).await {
                Ok(Ok(png)) => Some(png),
                _ => None,
            }
        })
    }

    fn close(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.current = None;
            if let Some(client) = self.client.take() {
                let _ = tokio::time::timeout(SESSION_END_BOUND, client.close()).await;
            }
            self.group.kill_and_wait(EXIT_BOUND).await;
            if let Some(profile) = self.profile.take() {
                let _ = profile.close();
            }
        })
    }
}

impl Drop for ChromiumReader {
    fn drop(&mut self) {
        // The processes first, so that none writes into the profile being removed after.
        self.group.kill();
    }
}
