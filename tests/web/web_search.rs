//! `web_search` end to end against the local fake SearxNG (tests/support/web_site.rs): JSON,
//! the HTML fallback when JSON is refused (and remembered), error statuses, an address nothing
//! listens on, a server that never answers, the tool through `Toolbox::builtin` and its stop.

use crate::web_site;

use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use seek::config::{Config, Dirs, Env, Overrides};
use seek::protocol::Block;
use seek::tools::{ToolContext, ToolOutcome, Toolbox};
use seek::web::search::{ParsedHit, SearchBackend, SearchError, SearxNg, parse_hits};
use web_site::{FAILURE_BOUND, Hit, SearchMode, WebSite, default_hits};

fn searxng(site: &WebSite) -> SearxNg {
    SearxNg::new(&site.base(), Duration::from_secs(20))
}

async fn bounded<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(FAILURE_BOUND, future)
        .await
        .expect("finishes within the failure bound")
}

fn links(site: &WebSite, paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| site.url(p)).collect()
}

#[tokio::test]
async fn json_results_are_read_in_order() {
    let site = WebSite::start();
    let backend = searxng(&site);
    let hits = bounded(backend.search("quokka facts", 16))
        .await
        .expect("results");
    assert_eq!(
        hits.iter().map(|h| h.link.clone()).collect::<Vec<_>>(),
        links(
            &site,
            &["/article.html", "/links.html", "/js.html", "/login.html"]
        )
    );
    assert_eq!(hits[0].title, "The Quokka Article");
    let requests = site.requests_for("/search");
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "GET");
    assert!(requests[0].target.contains("format=json"));
    assert!(requests[0].target.contains("q=quokka"));
    assert!(
        requests[0]
            .header("user-agent")
            .is_some_and(|ua| ua.starts_with("Mozilla/5.0"))
    );
    assert_eq!(
        bounded(backend.search("quokka", 2)).await.map(|h| h.len()),
        Ok(2)
    );
}

#[tokio::test]
async fn refused_json_falls_back_to_html_and_is_remembered() {
    let site = WebSite::start();
    site.set_mode(SearchMode::RefuseJson);
    let backend = searxng(&site);
    let hits = bounded(backend.search("quokka", 16))
        .await
        .expect("results");
    assert_eq!(hits.len(), default_hits().len());
    assert_eq!(hits[0].link, site.url("/article.html"));
    assert_eq!(hits[0].title, "The Quokka Article");
    assert!(hits[0].snippet.starts_with("All about quokkas."));
    assert!(backend.json_refused());
    let methods: Vec<String> = site
        .requests_for("/search")
        .iter()
        .map(|r| r.method.clone())
        .collect();
    assert_eq!(methods, ["GET", "POST"]);
    let post = &site.requests_for("/search")[1];
    assert!(
        post.body.contains("theme=simple") && post.body.contains("q=quokka"),
        "{}",
        post.body
    );

    let again = bounded(backend.search("wombat", 16))
        .await
        .expect("results");
    assert_eq!(again.len(), hits.len());
    let methods: Vec<String> = site
        .requests_for("/search")
        .iter()
        .map(|r| r.method.clone())
        .collect();
    assert_eq!(
        methods,
        ["GET", "POST", "POST"],
        "the second search skips JSON"
    );
}

#[tokio::test]
async fn non_web_and_duplicate_links_are_dropped() {
    let site = WebSite::start();
    site.set_hits(vec![
        Hit::new("script", "x", "javascript:alert(1)"),
        Hit::new("one", "x", "https://one.example/"),
        Hit::new("one again", "x", "https://one.example/"),
        Hit::new("file", "x", "file:///etc/passwd"),
    ]);
    for mode in [SearchMode::Json, SearchMode::RefuseJson] {
        site.set_mode(mode);
        let hits = bounded(searxng(&site).search("q", 16))
            .await
            .expect("results");
        assert_eq!(hits.len(), 1, "{mode:?}: {hits:?}");
        assert_eq!(hits[0].link, "https://one.example/");
    }
}

#[tokio::test]
async fn a_server_error_is_a_status_naming_the_url() {
    let site = WebSite::start();
    site.set_mode(SearchMode::Broken);
    let error = bounded(searxng(&site).search("q", 16))
        .await
        .expect_err("500");
    let SearchError::Status {
        url,
        status,
        detail,
    } = &error
    else {
        panic!("expected Status, got {error:?}");
    };
    assert_eq!(*status, 500);
    assert_eq!(url, &format!("{}/search", site.base()));
    assert!(detail.contains("Internal error"), "{detail}");
    assert!(error.to_string().contains(&site.base()), "{error}");
}

#[tokio::test]
async fn nothing_listening_is_unreachable_naming_the_url() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let backend = SearxNg::new(
        &format!("http://user:pw123@127.0.0.1:{port}"),
        Duration::from_secs(5),
    );
    let error = bounded(backend.search("q", 16)).await.expect_err("refused");
    assert!(
        matches!(error, SearchError::Unreachable { .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}/search")), "{text}");
    assert!(!text.contains("pw123"), "credentials masked: {text}");
    assert!(text.contains("Is the SearxNG instance running?"), "{text}");
}

/// A server that accepts connections and never answers; reports each accepted connection.
fn silent_server() -> (u16, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
            let _ = tx.send(());
        }
    });
    (port, rx)
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let (port, _accepted) = silent_server();
    let backend = SearxNg::new(&format!("http://127.0.0.1:{port}"), Duration::from_secs(1));
    let started = Instant::now();
    let error = bounded(backend.search("q", 16)).await.expect_err("timeout");
    let took = started.elapsed();
    assert!(
        matches!(error, SearchError::Unreachable { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("no answer within 1 s"),
        "{error}"
    );
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(
        took < Duration::from_secs(10),
        "bounded by the timeout: {took:?}"
    );
}

fn config(searxng_url: Option<String>, timeout_secs: u64) -> (tempfile::TempDir, Config) {
    let dir = tempfile::tempdir().expect("tempdir");
    let dirs = Dirs {
        default_config_file: None,
        data_dir: dir.path().join("data"),
    };
    let env = Env::from_pairs(Vec::<(String, String)>::new());
    let mut config =
        Config::resolve(&Overrides::default(), &env, &dirs, dir.path()).expect("defaults resolve");
    config.web.searxng_url.value = searxng_url;
    config.web.timeout_secs.value = timeout_secs;
    (dir, config)
}

fn block(code: &str) -> Block {
    Block {
        index: 0,
        tag: "web_search".into(),
        info: "web_search".into(),
        save_path: None,
        code: code.into(),
        closed: true,
        span: 0..0,
    }
}

async fn run_tool(config: &Config, code: &str, ctx: &ToolContext) -> (ToolOutcome, String) {
    let toolbox = Toolbox::builtin(config);
    let tool = toolbox.get("web_search").expect("web_search is built in");
    let mut shown = String::new();
    let outcome =
        bounded(tool.run(&block(code), ctx, &mut |chunk: &str| shown.push_str(chunk))).await;
    (outcome, shown)
}

#[tokio::test]
async fn the_tool_succeeds_on_results_even_with_error_in_a_snippet() {
    let site = WebSite::start();
    let (dir, config) = config(Some(site.base()), 20);
    let ctx = ToolContext::new(dir.path());
    let (outcome, shown) = run_tool(&config, "search: \"quokka facts\"\n", &ctx).await;
    assert!(outcome.success, "{outcome:?}");
    assert!(
        outcome.output.contains("Error rates"),
        "the site's first snippet says Error"
    );
    assert_eq!(shown, outcome.output);
    assert!(outcome.feedback.contains("Title:The Quokka Article"));
    let parsed = parse_hits(&outcome.output);
    assert_eq!(parsed.len(), 4);
    assert_eq!(
        parsed[0],
        ParsedHit {
            title: Some("The Quokka Article".into()),
            snippet: Some("All about quokkas. Error rates of field counts are discussed.".into()),
            link: site.url("/article.html"),
        }
    );
    let request = &site.requests_for("/search")[0];
    assert!(
        request.target.contains("q=quokka+facts") || request.target.contains("q=quokka%20facts"),
        "{}",
        request.target
    );
}

#[tokio::test]
async fn the_tool_fails_without_query_results_or_configuration() {
    let site = WebSite::start();
    let (dir, config_ok) = config(Some(site.base()), 20);
    let ctx = ToolContext::new(dir.path());
    let (outcome, _) = run_tool(&config_ok, "  \n", &ctx).await;
    assert!(!outcome.success);
    assert_eq!(outcome.output.trim(), "Error: No search query provided.");
    let (outcome, _) = run_tool(&config_ok, "search: \"\"\n", &ctx).await;
    assert_eq!(outcome.output.trim(), "Error: Empty search query provided.");

    site.set_hits(Vec::new());
    let (outcome, _) = run_tool(&config_ok, "nothing at all\n", &ctx).await;
    assert!(!outcome.success);
    assert_eq!(
        outcome.output.trim(),
        "No search results, web search failed."
    );

    site.set_mode(SearchMode::Broken);
    let (outcome, _) = run_tool(&config_ok, "q\n", &ctx).await;
    assert!(!outcome.success);
    assert!(
        outcome.output.contains("answered HTTP 500"),
        "{}",
        outcome.output
    );

    let (_dir, unset) = config(None, 20);
    let (outcome, _) = run_tool(&unset, "quokka\n", &ctx).await;
    assert!(!outcome.success);
    assert_eq!(
        outcome.output.trim(),
        SearchError::NotConfigured.to_string()
    );
    assert!(outcome.feedback.contains("searxng_url"));
}

#[tokio::test]
async fn stop_ends_the_search_at_once() {
    let (port, accepted) = silent_server();
    let (dir, config) = config(Some(format!("http://127.0.0.1:{port}")), 20);
    let ctx = ToolContext::new(dir.path());
    let cancel = ctx.cancel.clone();
    let stopper = std::thread::spawn(move || {
        // Stop once the search is waiting on the server, not before it asked.
        let arrived = accepted.recv_timeout(FAILURE_BOUND).is_ok();
        cancel.cancel();
        arrived
    });
    let started = Instant::now();
    let (outcome, _) = run_tool(&config, "quokka\n", &ctx).await;
    assert!(
        stopper.join().expect("stopper thread"),
        "the search reached the server"
    );
    assert!(!outcome.success);
    assert_eq!(outcome.output.trim(), SearchError::Stopped.to_string());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "ended before the timeout"
    );
}
