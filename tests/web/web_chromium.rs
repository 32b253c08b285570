//! The `chromium` engine against the local test site: script-written text is read, forms are
//! typed and submitted, CAPTCHA and error pages are recognised, a redirect into a refused
//! address is left, an abandoned load is cleaned up, and `open_reader` picks and falls back as
//! the settings say. After every test no process of the browser is left.
//!
//! The tests share one lock: two Chromiums at once on a 2-core machine make timings flaky.

use crate::procs;
use crate::web_site;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use seek::config::{BrowserChoice, WebSettings};
use seek::web::read::{ChromiumReader, Engine, PageReader, ReadError};
use seek::web::{UrlPolicy, open_reader};
use seek::wire::{PageKind, WebField};
use web_site::{JS_TEXT, LOGIN_PASSWORD, LOGIN_USER, WebSite};

/// One browser at a time.
static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn settings() -> WebSettings {
    let mut settings = WebSettings::default();
    settings.allow_private.value = true;
    settings.browser.value = BrowserChoice::Chromium;
    settings
}

fn url(site: &WebSite, path: &str) -> Url {
    Url::parse(&site.url(path)).expect("a site URL")
}

/// A started reader and what identifies its processes.
struct Started {
    reader: ChromiumReader,
    profile: PathBuf,
    group: i32,
}

async fn start(policy: UrlPolicy) -> Started {
    let reader = ChromiumReader::start(&settings(), Arc::new(policy), &[])
        .await
        .expect("chromium starts (apt install chromium)");
    let profile = reader.profile_dir().expect("a profile").to_path_buf();
    let group = reader.process_group();
    assert!(
        !procs::processes_with(&profile.display().to_string(), false).is_empty(),
        "Chromium runs with the reader's own profile"
    );
    Started {
        reader,
        profile,
        group,
    }
}

/// Live processes of process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.first().is_some_and(|s| *s != "Z" && *s != "X")
                && fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
        })
        .collect()
}

/// Closes the reader and checks that none of its processes and not its profile is left.
async fn close_and_check(mut started: Started) {
    started.reader.close().await;
    let marker = started.profile.display().to_string();
    assert_eq!(
        procs::processes_with(&marker, false),
        vec![],
        "no Chromium process is left"
    );
    assert_eq!(
        group_members(started.group),
        Vec::<i32>::new(),
        "no process of the group is left"
    );
    assert!(!started.profile.exists(), "the profile is removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_written_text_and_an_article_are_read() {
    let _one = BROWSER.lock().await;
    let site = WebSite::start();
    let mut started = start(UrlPolicy::new(true)).await;
    let page = started
        .reader
        .open(&url(&site, "/js.html"))
        .await
        .expect("the JS page reads");
    assert!(
        page.text.contains(JS_TEXT),
        "script-written text is read: {}",
        page.text
    );
    assert_eq!(page.kind, PageKind::Content);
    assert_eq!(
        page.status,
        Some(200),
        "the document's HTTP status is known"
    );
    let article = started
        .reader
        .open(&url(&site, "/article.html"))
        .await
        .expect("the article reads");
    assert!(article.text.contains("Quokka"), "{}", article.text);
    assert_eq!(article.url, site.url("/article.html"));
    assert!(!article.truncated);
    assert_eq!(started.reader.engine(), Engine::Chromium);
    close_and_check(started).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_form_is_typed_into_and_submitted() {
    let _one = BROWSER.lock().await;
    let site = WebSite::start();
    let mut started = start(UrlPolicy::new(true)).await;
    let none = started.reader.submit(&[]).await;
    assert_eq!(none, Err(ReadError::NoPage));
    started
        .reader
        .open(&url(&site, "/login.html"))
        .await
        .expect("the login page reads");
    let wrong = started
        .reader
        .submit(&[WebField {
            name: "email".into(),
            value: "x".into(),
        }])
        .await;
    assert!(
        matches!(&wrong, Err(ReadError::NoMatchingForm { available, .. }) if available.contains("username")),
        "{wrong:?}"
    );
    let fields = [
        WebField {
            name: "username".into(),
            value: LOGIN_USER.into(),
        },
        WebField {
            name: "Password".into(),
            value: LOGIN_PASSWORD.into(),
        },
    ];
    let page = started
        .reader
        .submit(&fields)
        .await
        .expect("the form submits");
    assert!(page.text.contains("Welcome back"), "{}", page.text);
    let posts = site.requests_for("/login");
    assert_eq!(posts.len(), 1, "{posts:?}");
    let body = &posts[0].body;
    assert_eq!(
        web_site::param(body, "csrf").as_deref(),
        Some("token-123"),
        "{body}"
    );
    assert_eq!(
        web_site::param(body, "newsletter"),
        None,
        "no box is ticked unasked: {body}"
    );
    assert_eq!(web_site::param(body, "remember"), None, "{body}");
    close_and_check(started).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captcha_and_missing_pages_are_recognised() {
    let _one = BROWSER.lock().await;
    let site = WebSite::start();
    let mut started = start(UrlPolicy::new(true)).await;
    let captcha = started
        .reader
        .open(&url(&site, "/captcha.html"))
        .await
        .expect("the captcha page reads");
    assert_eq!(captcha.kind, PageKind::Captcha);
    let missing = started
        .reader
        .open(&url(&site, "/no-such-page"))
        .await
        .expect("a 404 page still reads");
    assert_eq!(missing.kind, PageKind::Error, "{missing:?}");
    close_and_check(started).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_into_a_refused_address_is_left() {
    let _one = BROWSER.lock().await;
    let site = WebSite::start();
    // Only the site's own address is trusted (as if the user wrote it); `localhost` is not.
    let mut policy = UrlPolicy::new(false);
    policy.trust_hosts_in(&format!("read {}", site.base()));
    let mut started = start(policy).await;
    let target = format!("http://localhost:{}/article.html", site.port);
    let redirect = Url::parse(&format!("{}/redirect?to={target}", site.base())).expect("url");
    let refused = started.reader.open(&redirect).await;
    // The hop is refused by seek's proxy before the browser connects anywhere.
    assert!(
        matches!(&refused, Err(ReadError::Blocked { reason, .. }) if reason.contains("localhost")),
        "{refused:?}"
    );
    let submit = started.reader.submit(&[]).await;
    assert_eq!(
        submit,
        Err(ReadError::NoPage),
        "the refused page is not kept open"
    );
    close_and_check(started).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_load_leaves_no_process_after_close() {
    let _one = BROWSER.lock().await;
    let site = Arc::new(WebSite::start());
    let mut started = start(UrlPolicy::new(true)).await;
    let slow = url(&site, "/slow.html");
    let watcher = Arc::clone(&site);
    let arrived = tokio::task::spawn_blocking(move || watcher.wait_for("/slow.html"));
    tokio::select! {
        read = started.reader.open(&slow) => panic!("the slow page is held, yet: {read:?}"),
        done = arrived => done.expect("the site saw the request"),
    }
    close_and_check(started).await;
    site.open_slow_page();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_falls_back_to_http_and_says_why() {
    let _one = BROWSER.lock().await;
    let mut settings = settings();
    settings.browser.value = BrowserChoice::Auto;
    settings.chromium.value = Some(PathBuf::from("/nonexistent/chromium"));
    let start = open_reader(&settings, Arc::new(UrlPolicy::new(true)), &[])
        .await
        .map_err(|e| e.to_string())
        .expect("auto always starts a reader");
    assert_eq!(start.reader.engine(), Engine::Http);
    assert_eq!(
        start.detail,
        "http (auto: chromium not found at /nonexistent/chromium, set in [web] chromium)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_picks_chromium_when_installed() {
    let _one = BROWSER.lock().await;
    let mut settings = settings();
    settings.browser.value = BrowserChoice::Auto;
    let mut start = open_reader(&settings, Arc::new(UrlPolicy::new(true)), &[])
        .await
        .map_err(|e| e.to_string())
        .expect("auto starts a reader");
    assert_eq!(start.reader.engine(), Engine::Chromium, "{}", start.detail);
    // The version is whatever Debian ships today; only its shape is the contract.
    let version = start
        .detail
        .strip_prefix("chromium ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_default();
    assert!(
        version.split('.').count() == 4
            && version.split('.').all(|part| part.parse::<u32>().is_ok()),
        "{}",
        start.detail
    );
    assert!(start.detail.ends_with("(auto)"), "{}", start.detail);
    assert!(start.elapsed > Duration::ZERO);
    start.reader.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_asked_for_but_missing_is_an_error() {
    let _one = BROWSER.lock().await;
    let mut settings = settings();
    settings.chromium.value = Some(PathBuf::from("/nonexistent/chromium"));
    let error = open_reader(&settings, Arc::new(UrlPolicy::new(true)), &[])
        .await
        .err()
        .expect("no reader without chromium");
    assert!(
        matches!(&error, ReadError::BrowserMissing { what, how }
            if what.contains("/nonexistent/chromium") && how.contains("apt install chromium")),
        "{error:?}"
    );
    let mut settings = WebSettings::default();
    settings.browser.value = BrowserChoice::Http;
    let http = open_reader(&settings, Arc::new(UrlPolicy::new(true)), &[])
        .await
        .map_err(|e| e.to_string())
        .expect("http always starts");
    assert_eq!(http.detail, "http");
}
