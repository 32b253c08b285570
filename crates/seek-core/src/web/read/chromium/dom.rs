//! Reading the page Chromium shows, over the DevTools protocol: one page session (dialogs
//! dismissed, downloads denied), waiting for a load and then until the page is ready (no
//! request in flight and the text unchanged for `QUIET`, bounded by the settle cap), taking the
//! rendered DOM (capped), and turning failures into `ReadError`s.
//!
//! It must not decide which URLs may be opened (the reader and the proxy do) nor fill forms.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::Url;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::time::Instant;

use super::super::ReadError;
use super::cdp::{Cdp, CdpError, CdpEvent};

/// How long the network and the text must stay quiet for the page to count as ready.
pub(crate) const QUIET: Duration = Duration::from_millis(500);

/// How often the page's text is looked at while it settles.
const POLL: Duration = Duration::from_millis(100);

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

/// One page (a tab) of the browser, attached in flat session mode.
#[derive(Clone)]
pub(crate) struct PageSession {
    pub cdp: Cdp,
    pub session: String,
    /// The tab, as the browser names it (to close it when it hangs).
    pub target: String,
    /// Its main frame: only this frame's document says what the page is (an iframe's does not).
    pub frame: String,
}

impl PageSession {
    /// Opens a tab and prepares it: page and network events on, dialogs dismissed as they open,
    /// downloads denied, the user agent of a desktop Chrome.
    pub async fn open(cdp: &Cdp, user_agent: &str) -> Result<Self, CdpError> {
        let created = cdp
            .call(None, "Target.createTarget", json!({"url": "about:blank"}))
            .await?;
        let target = created["targetId"].as_str().unwrap_or_default().to_owned();
        let attached = cdp
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
            )
            .await?;
        let session = attached["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut page = Self {
            cdp: cdp.clone(),
            session,
            target,
            frame: String::new(),
        };
        // Nothing a page offers is saved to disk.
        cdp.call(
            None,
            "Browser.setDownloadBehavior",
            json!({"behavior": "deny"}),
        )
        .await?;
        tokio::spawn(dismiss_dialogs(cdp.subscribe(), page.clone()));
        page.call("Page.enable", json!({})).await?;
        let tree = page.call("Page.getFrameTree", json!({})).await?;
        page.frame = tree["frameTree"]["frame"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        page.call("Network.enable", json!({})).await?;
        page.call(
            "Network.setUserAgentOverride",
            json!({"userAgent": user_agent}),
        )
        .await?;
        Ok(page)
    }

    pub async fn call(&self, method: &str, params: Value) -> Result<Value, CdpError> {
        self.cdp.call(Some(&self.session), method, params).await
    }

    /// Evaluates `expression` in the page and returns its value (`awaitPromise`).
    pub(crate) async fn evaluate(&self, expression: &str) -> Result<Value, CdpError> {
        let answer = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        script_value(answer, "Runtime.evaluate")
    }

    /// Calls `function` with `this` bound to the object `object_id` and `args` (by value).
    pub(crate) async fn call_on(
        &self,
        object_id: &str,
        function: &str,
        args: &[Value],
    ) -> Result<Value, CdpError> {
        let arguments: Vec<Value> = args.iter().map(|a| json!({"value": a})).collect();
        let answer = self
            .call(
                "Runtime.callFunctionOn",
                json!({"objectId": object_id, "functionDeclaration": function,
                       "arguments": arguments, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        script_value(answer, "Runtime.callFunctionOn")
    }

    /// A handle on the object `expression` evaluates to (`None`: it is `null` or `undefined`).
    pub async fn handle(&self, expression: &str) -> Result<Option<String>, CdpError> {
        let answer = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": false}),
            )
            .await?;
        if let Some(details) = answer.get("exceptionDetails") {
            return Err(script_error(details, "Runtime.evaluate"));
        }
        Ok(answer["result"]["objectId"].as_str().map(str::to_owned))
    }

    /// Whether `event` is about this page.
    pub fn owns(&self, event: &CdpEvent) -> bool {
        event.session.as_deref() == Some(self.session.as_str())
    }
}

fn script_value(answer: Value, method: &str) -> Result<Value, CdpError> {
    if let Some(details) = answer.get("exceptionDetails") {
        return Err(script_error(details, method));
    }
    Ok(answer["result"]["value"].clone())
}

fn script_error(details: &Value, method: &str) -> CdpError {
    let text = details["exception"]["description"]
        .as_str()
        .or_else(|| details["text"].as_str())
        .unwrap_or("the page's script failed");
    CdpError::Command {
        method: method.to_owned(),
        message: text.lines().next().unwrap_or_default().to_owned(),
    }
}

/// A page's `alert()`, `confirm()` or `prompt()` is dismissed at once, so it never blocks a
/// later command.
async fn dismiss_dialogs(mut events: broadcast::Receiver<CdpEvent>, page: PageSession) {
    loop {
        match events.recv().await {
            Ok(event) if event.method == "Page.javascriptDialogOpening" && page.owns(&event) => {
                let _ = page
                    .call("Page.handleJavaScriptDialog", json!({"accept": false}))
                    .await;
            }
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// What the network of one page did since a navigation began.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    session: String,
    frame: String,
    in_flight: HashSet<String>,
    last: Option<Instant>,
    /// The main frame's document: its HTTP status, and the value of seek's proxy's refusal
    /// header on it (the reader compares it with the proxy's secret).
    pub status: Option<u16>,
    pub refused: Option<String>,
    pub loaded: bool,
    pub started_loading: bool,
}

impl Activity {
    /// Nothing seen yet of `page`.
    pub fn of(page: &PageSession) -> Self {
        Self {
            session: page.session.clone(),
            frame: page.frame.clone(),
            ..Self::default()
        }
    }

    /// Takes one event into account (events of other pages are ignored).
    pub fn note(&mut self, event: &CdpEvent, now: Instant) {
        if event.session.as_deref() != Some(self.session.as_str()) {
            return;
        }
        let main_frame = params_frame(&event.params) == Some(self.frame.as_str());
        let params = &event.params;
        let id = || params["requestId"].as_str().unwrap_or_default().to_owned();
        match event.method.as_str() {
            "Network.requestWillBeSent" => {
                self.in_flight.insert(id());
                self.last = Some(now);
            }
            "Network.loadingFinished" | "Network.loadingFailed" => {
                self.in_flight.remove(&id());
                self.last = Some(now);
            }
            "Network.responseReceived" if params["type"] == "Document" && main_frame => {
                let response = &params["response"];
                self.status = response["status"]
                    .as_u64()
                    .and_then(|s| u16::try_from(s).ok());
                self.refused = refusal(&response["headers"]);
                self.last = Some(now);
            }
            "Page.loadEventFired" => self.loaded = true,
            "Page.frameStartedLoading" if main_frame => self.started_loading = true,
            _ => {}
        }
    }

    /// Whether no request is in flight and none ended within `QUIET` before `now`.
    pub fn quiet(&self, now: Instant) -> bool {
        self.in_flight.is_empty() && self.last.is_none_or(|last| now - last >= QUIET)
    }
}

fn params_frame(params: &Value) -> Option<&str> {
    params["frameId"].as_str()
}

/// The value of seek's proxy's refusal header, if the response has one.
fn refusal(headers: &Value) -> Option<String> {
    let headers = headers.as_object()?;
    headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(crate::web::proxy::REFUSAL_HEADER))
        .and_then(|(_, value)| value.as_str())
        .map(str::to_owned)
}

/// Drains what arrived on `events` into `activity` without waiting.
pub fn drain(
    events: &mut broadcast::Receiver<CdpEvent>,
    activity: &mut Activity,
) -> Result<(), CdpError> {
    loop {
        match events.try_recv() {
            Ok(event) => activity.note(&event, Instant::now()),
            Err(broadcast::error::TryRecvError::Empty) => return Ok(()),
            // Events were missed: count the network as busy now, so the quiet period starts over.
            Err(broadcast::error::TryRecvError::Lagged(_)) => {
                activity.last = Some(Instant::now());
            }
            Err(broadcast::error::TryRecvError::Closed) => return Err(CdpError::Closed),
        }
    }
}

/// Waits for the page's load event (until `deadline`); `Ok(false)` when it did not come.
pub(crate) async fn wait_for_load(
    events: &mut broadcast::Receiver<CdpEvent>,
    page: &PageSession,
    activity: &mut Activity,
    deadline: Instant,
) -> Result<bool, CdpError> {
    while !activity.loaded {
        let next = tokio::time::timeout_at(deadline, events.recv()).await;
        match next {
            Err(_) => return Ok(false),
            Ok(Ok(event)) => activity.note(&event, Instant::now()),
            Ok(Err(broadcast::error::RecvError::Lagged(_))) => {
                // A missed load event is found by asking the page.
                let state = page.evaluate("document.readyState").await?;
                activity.loaded = state.as_str() == Some("complete");
            }
            Ok(Err(broadcast::error::RecvError::Closed)) => return Err(CdpError::Closed),
        }
    }
    Ok(true)
}

/// After the load: waits until no request has been in flight and the body's text and element
/// count have not changed for `QUIET`, or until `cap` has passed, whichever is first. So text a
/// script writes after the load, or fetches from an API, is there when the page is read.
pub(crate) async fn settle(
    events: &mut broadcast::Receiver<CdpEvent>,
    page: &PageSession,
    activity: &mut Activity,
    cap: Duration,
) -> Result<(), CdpError> {
    let deadline = Instant::now() + cap;
    let mut shape = Value::Null;
    let mut shape_since = Instant::now();
    loop {
        drain(events, activity)?;
        let now_shape = page
            .evaluate(
                "(() => { const b = document.body; \
                 return b ? [b.textContent.length, b.getElementsByTagName('*').length] : [0, 0]; })()",
            )
            .await?;
        let now = Instant::now();
        if now_shape != shape {
            shape = now_shape;
            shape_since = now;
        }
        if (activity.quiet(now) && now - shape_since >= QUIET) || now >= deadline {
            return Ok(());
        }
        tokio::time::sleep(POLL.min(deadline.saturating_duration_since(now))).await;
    }
}

/// Takes the document: its URL, type and markup, the markup cut to `max_bytes`.
pub(crate) async fn snapshot(page: &PageSession, max_bytes: usize) -> Result<Snapshot, CdpError> {
    // The cap is passed in characters (each at least one byte), then cut exactly in bytes here:
    // a 10 MB page never crosses the pipe whole.
    let cap_chars = u64::try_from(max_bytes).unwrap_or(u64::MAX).min(1 << 52);
    let value = page
        .evaluate(&format!(
            "(() => {{ const root = document.documentElement; \
             const h = root ? root.outerHTML : ''; \
             return {{url: location.href, type: document.contentType || '', \
                     size: new Blob([h]).size, html: h.slice(0, {cap_chars})}}; }})()"
        ))
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
pub(crate) fn is_text(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.is_empty()
        || essence.starts_with("text/")
        || essence == "application/json"
        || essence.ends_with("/xml")
        || essence.ends_with("+xml")
        || essence.ends_with("+json")
}

/// What a navigation's `errorText` (`net::ERR_NAME_NOT_RESOLVED`) means for the model.
pub(crate) fn navigation_error(url: &Url, error_text: &str) -> ReadError {
    ReadError::Unreachable {
        url: url.to_string(),
        reason: error_text
            .split_whitespace()
            .find(|word| word.starts_with("net::ERR_"))
            .unwrap_or(error_text)
            .to_owned(),
    }
}

/// Any other failure of the browser.
pub(crate) fn browser_error(error: &CdpError) -> ReadError {
    ReadError::Browser {
        reason: error.to_string(),
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
        let url = Url::parse("http://example.org/").expect("a URL");
        let error = navigation_error(&url, "net::ERR_CONNECTION_REFUSED");
        assert!(error.to_string().contains("net::ERR_CONNECTION_REFUSED"));
    }

    #[test]
    fn the_network_is_quiet_only_with_nothing_in_flight_for_a_while() {
        let event = |method: &str, id: &str| CdpEvent {
            method: method.into(),
            session: Some("s".into()),
            params: json!({"requestId": id}),
        };
        let start = Instant::now();
        let mut activity = Activity {
            session: "s".into(),
            frame: "main".into(),
            ..Activity::default()
        };
        assert!(activity.quiet(start));
        activity.note(&event("Network.requestWillBeSent", "1"), start);
        assert!(!activity.quiet(start + QUIET * 4));
        activity.note(&event("Network.loadingFinished", "1"), start);
        assert!(!activity.quiet(start + QUIET / 2));
        assert!(activity.quiet(start + QUIET));
        // Another page's requests do not count.
        let mut other = event("Network.requestWillBeSent", "2");
        other.session = Some("t".into());
        activity.note(&other, start);
        assert!(activity.quiet(start + QUIET));
    }

    #[test]
    fn only_the_main_frames_document_says_what_the_page_is() {
        let mut activity = Activity {
            session: "s".into(),
            frame: "main".into(),
            ..Activity::default()
        };
        let document = |frame: &str, status: u16, refused: bool| CdpEvent {
            method: "Network.responseReceived".into(),
            session: Some("s".into()),
            params: json!({"type": "Document", "frameId": frame, "requestId": frame,
                "response": {"status": status,
                    "headers": if refused { json!({"x-seek-refused": "t"}) } else { json!({}) }}}),
        };
        let now = Instant::now();
        activity.note(&document("main", 200, false), now);
        // An iframe refused by the proxy neither refuses the page nor changes its status.
        activity.note(&document("child", 403, true), now);
        assert_eq!(activity.status, Some(200));
        assert_eq!(activity.refused, None);
        activity.note(&document("main", 403, true), now);
        assert_eq!(activity.refused.as_deref(), Some("t"));
    }

    #[test]
    fn a_refusal_header_of_the_proxy_is_found_in_any_case() {
        let headers = json!({"X-Seek-Refused": "127.0.0.1 is loopback"});
        assert_eq!(refusal(&headers), Some("127.0.0.1 is loopback".into()));
        assert_eq!(refusal(&json!({"content-type": "text/html"})), None);
    }
}
