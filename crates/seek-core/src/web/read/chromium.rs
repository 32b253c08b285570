//! The `chromium` engine: a real headless Chromium driven over the DevTools protocol on a pipe
//! (no WebDriver, no listening control socket), confined like a block (`launch.rs`), with every
//! request it makes (navigations, each redirect hop, subresources, `fetch`/XHR, WebSockets)
//! sent through seek's policy proxy (`web::proxy`), which resolves names itself and connects
//! only to addresses the URL policy allows. A page is read from the DOM when it is ready (its
//! load fired, the network idle and the text unchanged for 500 ms, at most the settle cap).
//! Closing, dropping or stopping the reader kills the whole process group and cgroup, then
//! removes the profile; a profile left by a killed seek is removed by the next start.
//!
//! It must not decide which URLs may be opened (the policy and the proxy do). Processes live in
//! `chromium/launch.rs`, the protocol in `chromium/cdp.rs`, reading the DOM in
//! `chromium/dom.rs`, forms in `chromium/form.rs`.

mod cdp;
mod dom;
mod form;
mod launch;

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde_json::json;
use tokio::time::Instant;

use super::{Engine, Page, PageReader, ReadError};
use crate::BoxFuture;
use crate::config::WebSettings;
use crate::exec::HelperGroup;
use crate::exec::cgroup::BlockGroup;
use crate::web::html;
use crate::web::policy::UrlPolicy;
use crate::web::proxy::{PeerFilter, PolicyProxy, ProxySettings};
use crate::wire::WebField;
use cdp::{Cdp, CdpError};
use dom::{Activity, PageSession};

pub use launch::{find_chromium, remove_stale_profiles};

/// How long Chromium may take to start (its first start on a busy machine is slow), at least.
const START_BOUND: Duration = Duration::from_secs(30);
/// How long Chromium's answer to the first command may take before it is asked again. A lost
/// first answer was seen about once in ten starts on a 2-core machine (the browser idle
/// afterwards, its answer never read); `launch.rs` now places the control pipes after everything
/// else in the child, which explains and removes the cause found. Asking again is kept: it costs
/// one small command, and a start that hangs for 30 s is what the user would otherwise see.
const ASK_AGAIN: Duration = Duration::from_secs(2);
/// How long the killed processes may take to disappear from `/proc`.
const EXIT_BOUND: Duration = Duration::from_secs(5);
/// How long a screenshot may take before the page goes on without one.
const SCREENSHOT_BOUND: Duration = Duration::from_secs(3);
/// Beyond the page-load timeout, how long reading a loaded page may take.
const COMMAND_MARGIN: Duration = Duration::from_secs(5);
/// After a form's button is clicked, how long a navigation may take to begin before the page is
/// taken to have answered in place (a script's `fetch`).
const SUBMIT_NAVIGATION_BOUND: Duration = Duration::from_millis(500);
/// How long replacing a hung tab may take before the whole browser is given up.
const RECOVER_BOUND: Duration = Duration::from_secs(5);

/// A Chromium reader.
pub struct ChromiumReader {
    policy: Arc<UrlPolicy>,
    /// `None` once closed.
    page: Option<PageSession>,
    group: HelperGroup,
    cgroup: Arc<BlockGroup>,
    /// Every request of the browser goes through it; stopped when the reader ends.
    proxy: Option<PolicyProxy>,
    /// Removed when closed (after the processes are gone) or dropped.
    profile: Option<tempfile::TempDir>,
    version: String,
    user_agent: String,
    timeout: Duration,
    settle: Duration,
    max_bytes: usize,
    /// The page open now, if any (forms are filled there).
    current: Option<Url>,
}

/// The browser's answer to `Browser.getVersion`, asked again every `ASK_AGAIN` until one of the
/// questions is answered (the caller bounds the whole wait).
async fn first_answer(cdp: &Cdp) -> Result<serde_json::Value, CdpError> {
    use futures_util::StreamExt;
    let mut asked = futures_util::stream::FuturesUnordered::new();
    asked.push(cdp.call(None, "Browser.getVersion", json!({})));
    loop {
        tokio::select! {
            Some(answer) = asked.next() => return answer,
            () = tokio::time::sleep(ASK_AGAIN) => {
                tracing::warn!("chromium did not answer its first command within 2 s; asked again");
                asked.push(cdp.call(None, "Browser.getVersion", json!({})));
            }
        }
    }
}

impl ChromiumReader {
    /// Starts a headless Chromium (`[web] chromium`, else found on `PATH`) that inherits none of
    /// `env_remove` (credentials, session handles).
    pub async fn start(
        settings: &WebSettings,
        policy: Arc<UrlPolicy>,
        env_remove: &[OsString],
    ) -> Result<Self, ReadError> {
        let binary = find_chromium(settings.chromium.value.as_deref())?;
        Self::start_with(&binary, settings, policy, env_remove).await
    }

    /// Starts the given binary.
    pub async fn start_with(
        binary: &Path,
        settings: &WebSettings,
        policy: Arc<UrlPolicy>,
        env_remove: &[OsString],
    ) -> Result<Self, ReadError> {
        remove_stale_profiles(&std::env::temp_dir());
        let profile = launch::make_profile()?;
        let proxy_settings = ProxySettings {
            connect_timeout: settings.timeout(),
            ..ProxySettings::default()
        };
        let proxy = PolicyProxy::start_with(
            Arc::clone(&policy),
            PeerFilter::GroupNamedLater,
            proxy_settings,
        )
        .await
        .map_err(|e| ReadError::Browser {
            reason: format!("seek's proxy for the browser could not start: {e}"),
        })?;
        let browser = launch::spawn(binary, profile.path(), proxy.address(), env_remove)?;
        // Only Chromium's own processes may use the proxy.
        proxy.allow_group(browser.group.pgid());
        let cdp = Cdp::new(browser.to_browser, browser.from_browser);
        let timeout = settings.timeout();
        let bound = START_BOUND.max(timeout);
        let started = tokio::time::timeout(bound, async {
            let version = first_answer(&cdp).await?;
            let product = version["product"].as_str().unwrap_or_default().to_owned();
            let number = product.split('/').nth(1).unwrap_or_default().to_owned();
            let major = number.split('.').next().unwrap_or_default().to_owned();
            let page = PageSession::open(&cdp, &launch::user_agent(&major)).await?;
            Ok::<_, CdpError>((number, major, page))
        })
        .await;
        let (version, major, page) = match started {
            Ok(Ok(started)) => started,
            Ok(Err(error)) => {
                browser.group.kill_and_wait(EXIT_BOUND).await;
                let why = launch::last_complaint(&browser.stderr_tail)
                    .unwrap_or_else(|| error.to_string());
                return Err(ReadError::Browser {
                    reason: format!("chromium ({}) failed to start: {why}", binary.display()),
                });
            }
            Err(_) => {
                browser.group.kill_and_wait(EXIT_BOUND).await;
                let why = launch::last_complaint(&browser.stderr_tail)
                    .map(|line| format!(" (its last words: {line})"))
                    .unwrap_or_default();
                return Err(ReadError::Browser {
                    reason: format!("chromium did not start within {} s{why}", bound.as_secs()),
                });
            }
        };
        Ok(Self {
            policy,
            page: Some(page),
            group: browser.group,
            cgroup: browser.cgroup,
            proxy: Some(proxy),
            profile: Some(profile),
            version,
            user_agent: launch::user_agent(&major),
            timeout,
            settle: settings.settle(),
            max_bytes: settings.max_page_bytes(),
            current: None,
        })
    }

    /// Chromium's version, for the user.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The process group of Chromium and its helpers (for tests and measurements).
    pub fn process_group(&self) -> i32 {
        self.group.pgid()
    }

    /// The profile directory (it appears on every Chromium process's command line).
    pub fn profile_dir(&self) -> Option<&Path> {
        self.profile.as_ref().map(tempfile::TempDir::path)
    }

    /// The proxy's address (for tests: only the browser's processes may use it).
    pub fn proxy_address(&self) -> Option<std::net::SocketAddr> {
        self.proxy.as_ref().map(PolicyProxy::address)
    }

    fn page(&self) -> Result<PageSession, ReadError> {
        self.page.clone().ok_or_else(|| ReadError::Browser {
            reason: "the browser was closed".into(),
        })
    }

    /// Opens `url` in the page.
    async fn navigate(&mut self, url: &Url) -> Result<Page, ReadError> {
        self.policy.check(url.as_str())?;
        let page = self.page()?;
        self.current = None;
        let mut events = page.cdp.subscribe();
        let mut activity = Activity::of(&page);
        let deadline = Instant::now() + self.timeout;
        let navigated = tokio::time::timeout_at(
            deadline,
            page.call("Page.navigate", json!({"url": url.as_str()})),
        )
        .await;
        match navigated {
            Err(_) => return Err(timeout_error(url, self.timeout)),
            Ok(Err(error)) => return Err(dom::browser_error(&error)),
            Ok(Ok(answer)) => {
                if let Some(error_text) = answer["errorText"].as_str().filter(|t| !t.is_empty()) {
                    return Err(self.failed_navigation(url, error_text));
                }
            }
        }
        let loaded = dom::wait_for_load(&mut events, &page, &mut activity, deadline)
            .await
            .map_err(|e| dom::browser_error(&e))?;
        if !loaded {
            return Err(timeout_error(url, self.timeout));
        }
        self.read(&page, events, activity, url).await
    }

    /// Why a navigation failed: the proxy's refusal when it refused the address, else the
    /// browser's network error.
    fn failed_navigation(&self, url: &Url, error_text: &str) -> ReadError {
        let host = url.host_str().unwrap_or_default();
        let refused = self
            .proxy
            .as_ref()
            .and_then(|proxy| proxy.refusal_for(host));
        match refused {
            Some(reason) => ReadError::Blocked {
                url: url.to_string(),
                reason,
            },
            None => dom::navigation_error(url, error_text),
        }
    }

    /// Reads the page the browser shows now, after `asked` was opened or submitted, once it is
    /// ready.
    async fn read(
        &mut self,
        page: &PageSession,
        mut events: tokio::sync::broadcast::Receiver<cdp::CdpEvent>,
        mut activity: Activity,
        asked: &Url,
    ) -> Result<Page, ReadError> {
        let bound = self.settle + COMMAND_MARGIN;
        let taken = tokio::time::timeout(bound, async {
            dom::settle(&mut events, page, &mut activity, self.settle).await?;
            dom::snapshot(page, self.max_bytes).await
        })
        .await;
        let snapshot = match taken {
            Ok(Ok(snapshot)) => snapshot,
            Ok(Err(error)) => return Err(dom::browser_error(&error)),
            Err(_) => return Err(timeout_error(asked, self.timeout)),
        };
        if snapshot.url.starts_with("chrome-error:") {
            return Err(ReadError::Unreachable {
                url: asked.to_string(),
                reason: "the browser showed its error page".into(),
            });
        }
        // The proxy refused the document (a redirect hop into a refused address, or the address
        // itself): the page is its refusal, not content. Only the header holding this proxy's
        // secret counts (a page cannot pose as a refusal); the reason is the proxy's own.
        let token = self.proxy.as_ref().map(PolicyProxy::refusal_token);
        if activity.refused.is_some() && activity.refused.as_deref() == token {
            let _ = page
                .call("Page.navigate", json!({"url": "about:blank"}))
                .await;
            let host = Url::parse(&snapshot.url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_default();
            let reason = self
                .proxy
                .as_ref()
                .and_then(|proxy| proxy.refusal_for(&host))
                .unwrap_or_else(|| format!("{} is refused by seek's URL policy", snapshot.url));
            return Err(ReadError::Blocked {
                url: snapshot.url,
                reason,
            });
        }
        // Where the page ended is checked again: a script may have led anywhere.
        let url = match self.policy.check(&snapshot.url) {
            Ok(url) => url,
            Err(refused) => {
                let _ = page
                    .call("Page.navigate", json!({"url": "about:blank"}))
                    .await;
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
        let kind = html::classify(activity.status, &extracted.title, &extracted.text);
        self.current = Some(url.clone());
        Ok(Page {
            url: url.to_string(),
            status: activity.status,
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
        let page = self.page()?;
        let bound = self.timeout + COMMAND_MARGIN;
        let forms = match tokio::time::timeout(bound, form::list_forms(&page)).await {
            Ok(Ok(forms)) => forms,
            Ok(Err(error)) => return Err(dom::browser_error(&error)),
            Err(_) => return Err(timeout_error(&current, self.timeout)),
        };
        let Some(choice) = form::choose(&forms, fields) else {
            return Err(no_matching_form(&current, &forms, fields));
        };
        let mut events = page.cdp.subscribe();
        let mut activity = Activity::of(&page);
        match tokio::time::timeout(bound, form::fill_and_submit(&page, &choice)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(dom::browser_error(&error)),
            Err(_) => return Err(timeout_error(&current, self.timeout)),
        }
        // A submit that navigates is waited for like a load; one a script answers in place is
        // read once the network is quiet.
        let began = Instant::now() + SUBMIT_NAVIGATION_BOUND;
        while !activity.started_loading && Instant::now() < began {
            match tokio::time::timeout_at(began, events.recv()).await {
                Ok(Ok(event)) => activity.note(&event, Instant::now()),
                Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => {
                    return Err(dom::browser_error(&CdpError::Closed));
                }
                Err(_) => break,
            }
        }
        if activity.started_loading {
            let deadline = Instant::now() + self.timeout;
            let loaded = dom::wait_for_load(&mut events, &page, &mut activity, deadline)
                .await
                .map_err(|e| dom::browser_error(&e))?;
            if !loaded {
                return Err(timeout_error(&current, self.timeout));
            }
        }
        self.read(&page, events, activity, &current).await
    }

    /// After a load or a read that did not end in time (a page's script spinning forever, a
    /// `document.write` that never ends): the tab is thrown away and a fresh one opened, so the
    /// next page is not held up by this one. If even that fails, the browser is ended.
    async fn recover(&mut self) {
        self.current = None;
        let Some(old) = self.page.take() else {
            return;
        };
        let cdp = old.cdp.clone();
        let user_agent = self.user_agent.clone();
        let renewed = tokio::time::timeout(RECOVER_BOUND, async move {
            // Stops a spinning script, so the renderer can take the close.
            let _ = tokio::time::timeout(
                Duration::from_secs(1),
                old.call("Runtime.terminateExecution", json!({})),
            )
            .await;
            let _ = cdp
                .call(None, "Target.closeTarget", json!({"targetId": old.target}))
                .await;
            PageSession::open(&cdp, &user_agent).await
        })
        .await;
        match renewed {
            Ok(Ok(page)) => self.page = Some(page),
            _ => self.kill(),
        }
    }

    /// Kills the browser's processes (group and cgroup) now, without waiting.
    fn kill(&self) {
        self.cgroup.kill();
        self.group.kill();
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

impl PageReader for ChromiumReader {
    fn engine(&self) -> Engine {
        Engine::Chromium
    }

    fn open<'a>(&'a mut self, url: &'a Url) -> BoxFuture<'a, Result<Page, ReadError>> {
        Box::pin(async move {
            let read = self.navigate(url).await;
            if matches!(read, Err(ReadError::Timeout { .. })) {
                self.recover().await;
            }
            read
        })
    }

    fn submit<'a>(&'a mut self, fields: &'a [WebField]) -> BoxFuture<'a, Result<Page, ReadError>> {
        Box::pin(async move {
            let read = self.fill(fields).await;
            if matches!(read, Err(ReadError::Timeout { .. })) {
                self.recover().await;
            }
            read
        })
    }

    fn screenshot(&mut self) -> BoxFuture<'_, Option<Vec<u8>>> {
        Box::pin(async move {
            let page = self.page.clone()?;
            let taken = tokio::time::timeout(
                SCREENSHOT_BOUND,
                page.call("Page.captureScreenshot", json!({"format": "png"})),
            )
            .await;
            let data = match taken {
                Ok(Ok(answer)) => answer["data"].as_str()?.to_owned(),
                _ => return None,
            };
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.decode(data).ok()
        })
    }

    fn close(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.current = None;
            self.page = None;
            // Killed, not asked to close: a page can keep a polite close waiting, and nothing of
            // the profile is kept anyway.
            self.kill();
            self.group.kill_and_wait(EXIT_BOUND).await;
            self.proxy = None;
            if let Some(profile) = self.profile.take() {
                let _ = profile.close();
            }
        })
    }
}

impl Drop for ChromiumReader {
    fn drop(&mut self) {
        // The processes first, so that none writes into the profile being removed after; the
        // profile goes once they are gone (a thread waits, bounded, rather than the caller).
        self.kill();
        if let Some(profile) = self.profile.take() {
            let pgid = self.group.pgid();
            std::thread::spawn(move || {
                let deadline = std::time::Instant::now() + EXIT_BOUND;
                while crate::exec::group_alive(pgid) && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = profile.close();
            });
        }
    }
}
