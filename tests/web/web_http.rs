//! The `http` page reader against the local test site: pages read and classified, links made
//! absolute, the size cap, charsets, redirects (followed, looped, to `file:`), non-text answers,
//! the login form submitted, the timeout, and the URL policy on the first URL and on redirects.

use crate::web_site;

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::Url;
use seek::config::{Origin, Sourced, WebSettings};
use seek::web::policy::{UrlPolicy, UrlRefused};
use seek::web::read::{HttpReader, PageReader, ReadError};
use seek::wire::{PageKind, WebField};
use web_site::{BIG_PAGE_BYTES, JS_TEXT, LOGIN_PASSWORD, LOGIN_USER, WebSite};

fn settings(timeout_secs: u64) -> WebSettings {
    WebSettings {
        allow_private: Sourced::new(true, Origin::Default),
        timeout_secs: Sourced::new(timeout_secs, Origin::Default),
        ..WebSettings::default()
    }
}

fn reader_with(policy: UrlPolicy, timeout_secs: u64) -> HttpReader {
    HttpReader::new(&settings(timeout_secs), Arc::new(policy)).expect("the client builds")
}

fn reader() -> HttpReader {
    reader_with(UrlPolicy::new(true), 20)
}

fn url(text: &str) -> Url {
    Url::parse(text).expect("a valid URL")
}

fn field(name: &str, value: &str) -> WebField {
    WebField {
        name: name.into(),
        value: value.into(),
    }
}

#[tokio::test]
async fn the_article_is_read_with_absolute_links() {
    let site = WebSite::start();
    let mut reader = reader();
    let page = reader
        .open(&url(&site.url("/article.html")))
        .await
        .expect("reads");
    assert_eq!(page.status, Some(200));
    assert_eq!(page.kind, PageKind::Content);
    assert_eq!(page.title, "The Quokka Article");
    assert!(page.text.contains("## Diet"), "{}", page.text);
    assert!(
        page.text.contains("| Weight | 2.5 to 5 kg |"),
        "{}",
        page.text
    );
    assert!(!page.text.contains("SCRIPT-TEXT-MUST-NOT-APPEAR"));
    assert!(!page.truncated);
    assert!(page.bytes > 500);
    let urls: Vec<&str> = page.links.iter().map(|l| l.url.as_str()).collect();
    assert!(urls.contains(&site.url("/links.html").as_str()), "{urls:?}");
    assert!(urls.iter().all(|u| u.starts_with(&site.base())), "{urls:?}");
}

#[tokio::test]
async fn error_and_captcha_pages_are_pages_of_their_kind() {
    let site = WebSite::start();
    let mut reader = reader();
    let missing = reader
        .open(&url(&site.url("/no-such-page")))
        .await
        .expect("a 404 is still a page");
    assert_eq!(missing.status, Some(404));
    assert_eq!(missing.kind, PageKind::Error);
    assert!(missing.text.contains("Not Found"), "{}", missing.text);
    let captcha = reader
        .open(&url(&site.url("/captcha.html")))
        .await
        .expect("reads");
    assert_eq!(captcha.kind, PageKind::Captcha);
}

#[tokio::test]
async fn a_big_page_is_cut_at_the_cap_and_read_quickly() {
    let site = WebSite::start();
    let mut reader = reader();
    let started = Instant::now();
    let page = reader
        .open(&url(&site.url("/big.html")))
        .await
        .expect("reads");
    let elapsed = started.elapsed();
    println!(
        "big page: {} bytes read of {BIG_PAGE_BYTES}, {} chars of text, in {elapsed:?}",
        page.bytes,
        page.text.len()
    );
    assert!(page.truncated);
    assert_eq!(page.bytes, settings(20).max_page_bytes());
    assert!(page.text.contains("Paragraph 0 of the very large page"));
    assert!(!page.text.contains("THE-END-OF-THE-BIG-PAGE"));
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
}

#[tokio::test]
async fn latin1_is_decoded() {
    let site = WebSite::start();
    let page = reader()
        .open(&url(&site.url("/latin1.html")))
        .await
        .expect("reads");
    assert_eq!(page.title, "Café");
    assert!(
        page.text.contains("Un café crème coûte 3 euros."),
        "{}",
        page.text
    );
}

#[tokio::test]
async fn redirects_are_followed_and_loops_and_file_urls_refused() {
    let site = WebSite::start();
    let mut reader = reader();
    let page = reader
        .open(&url(&site.url("/redirect?to=/article.html")))
        .await
        .expect("follows");
    assert_eq!(page.url, site.url("/article.html"));
    assert_eq!(page.title, "The Quokka Article");

    match reader.open(&url(&site.url("/loop"))).await {
        Err(ReadError::TooManyRedirects { limit, .. }) => assert_eq!(limit, 10),
        other => panic!("{other:?}"),
    }
    assert_eq!(site.requests_for("/loop").len(), 11);

    match reader
        .open(&url(&site.url("/redirect?to=file:///etc/passwd")))
        .await
    {
        Err(ReadError::Refused(UrlRefused::Scheme { scheme, .. })) => assert_eq!(scheme, "file"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn non_text_answers_are_refused() {
    let site = WebSite::start();
    let mut reader = reader();
    for (path, kind) in [
        ("/data.json", "application/json"),
        ("/image.png", "image/png"),
    ] {
        match reader.open(&url(&site.url(path))).await {
            Err(ReadError::NotText { content_type, .. }) => assert_eq!(content_type, kind),
            other => panic!("{path}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn scripts_do_not_run() {
    let site = WebSite::start();
    let page = reader()
        .open(&url(&site.url("/js.html")))
        .await
        .expect("reads");
    assert!(!page.text.contains(JS_TEXT), "{}", page.text);
    assert!(matches!(page.kind, PageKind::Content | PageKind::Empty));
}

#[tokio::test]
async fn the_login_form_is_submitted_with_its_hidden_field() {
    let site = WebSite::start();
    let mut reader = reader();
    assert!(matches!(
        reader.submit(&[field("username", LOGIN_USER)]).await,
        Err(ReadError::NoPage)
    ));
    reader
        .open(&url(&site.url("/login.html")))
        .await
        .expect("reads");
    match reader.submit(&[field("shoe_size", "44")]).await {
        Err(ReadError::NoMatchingForm { available, .. }) => {
            assert_eq!(available, "username, password, remember, newsletter")
        }
        other => panic!("{other:?}"),
    }
    let welcome = reader
        .submit(&[
            field("Username", LOGIN_USER),
            field("pass", LOGIN_PASSWORD),
            field("remember", "yes"),
        ])
        .await
        .expect("submits");
    assert_eq!(welcome.status, Some(200));
    assert!(
        welcome.text.contains("Welcome back, alice"),
        "{}",
        welcome.text
    );
    let posts = site.requests_for("/login");
    assert_eq!(posts.len(), 1);
    let body = &posts[0].body;
    assert_eq!(posts[0].method, "POST");
    assert!(body.contains("csrf=token-123"), "{body}");
    assert!(body.contains("remember=on"), "{body}");
    assert!(!body.contains("newsletter"), "{body}");

    reader
        .open(&url(&site.url("/login.html")))
        .await
        .expect("reads");
    let refused = reader
        .submit(&[field("username", LOGIN_USER), field("password", "wrong")])
        .await
        .expect("a 401 is still a page");
    assert_eq!(refused.status, Some(401));
    assert_eq!(refused.kind, PageKind::Error);
    assert!(refused.text.contains("Login failed"));
}

#[tokio::test]
async fn a_slow_page_times_out() {
    let site = WebSite::start();
    let mut reader = reader_with(UrlPolicy::new(true), 1);
    let started = Instant::now();
    let result = reader.open(&url(&site.url("/slow.html"))).await;
    let elapsed = started.elapsed();
    site.wait_for("/slow.html");
    site.open_slow_page();
    match result {
        Err(ReadError::Timeout { secs, .. }) => assert_eq!(secs, 1),
        other => panic!("{other:?}"),
    }
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[tokio::test]
async fn private_addresses_are_refused_unless_trusted() {
    let site = WebSite::start();
    let mut strict = reader_with(UrlPolicy::new(false), 20);
    match strict.open(&url(&site.url("/article.html"))).await {
        Err(ReadError::Refused(UrlRefused::Private { host, .. })) => {
            assert_eq!(host, "127.0.0.1")
        }
        other => panic!("{other:?}"),
    }
    assert!(site.requests_for("/article.html").is_empty());

    // The user named 127.0.0.1; its redirect to localhost (untrusted, private) is refused.
    let mut policy = UrlPolicy::new(false);
    policy.trust_hosts_in(&format!("read {}", site.url("/article.html")));
    let mut trusting = reader_with(policy, 20);
    trusting
        .open(&url(&site.url("/article.html")))
        .await
        .expect("the user's own host");
    let hop = format!("/redirect?to=http://localhost:{}/article.html", site.port);
    match trusting.open(&url(&site.url(&hop))).await {
        Err(ReadError::Refused(UrlRefused::Private { host, .. })) => {
            assert_eq!(host, "localhost")
        }
        other => panic!("{other:?}"),
    }
}
