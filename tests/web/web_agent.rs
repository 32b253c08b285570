//! The web agent end to end, in process, with scripted model replies, the `http` engine and the
//! local test site behind a fake SearxNG: search → read → follow a link → notes → conclusion;
//! a form filled and checked by the server; going back; the step cap; no page read twice; a
//! CAPTCHA page called one; Stop during a page load; private addresses refused unless the user
//! named them; no search engine configured.

use crate::fake_model;
use crate::runtime;
use crate::web_site;

use std::sync::Arc;
use std::time::Duration;

use fake_model::{FakeModel, Reply};
use seek::agent::{AgentHandle, Command, Event, Outcome};
use seek::config::{BrowserChoice, Config, Origin, Sourced};
use seek::wire::{AgentName, PageKind, WebTrail};
use web_site::WebSite;

const BOUND: Duration = Duration::from_secs(120);

struct Setup {
    _work: tempfile::TempDir,
    _data: tempfile::TempDir,
    handle: AgentHandle,
}

/// The agent with the web agent chosen, the site's SearxNG, the `http` engine, and
/// `allow_private` as given (the site is on loopback).
fn start(server: &FakeModel, site: &WebSite, allow_private: bool, max_steps: u64) -> Setup {
    start_with(server, site, |config| {
        config.web.allow_private = Sourced::new(allow_private, Origin::Default);
        config.web.max_steps = Sourced::new(max_steps, Origin::Default);
    })
}

fn start_with(server: &FakeModel, site: &WebSite, edit: impl FnOnce(&mut Config)) -> Setup {
    let work = tempfile::tempdir().expect("work dir");
    let data = tempfile::tempdir().expect("data dir");
    let base = runtime::config(&server.url(), work.path(), data.path(), None);
    let mut config = (*base).clone();
    config.agent = Sourced::new(AgentName::Web, Origin::Default);
    config.web.searxng_url = Sourced::new(Some(site.base()), Origin::Default);
    config.web.browser = Sourced::new(BrowserChoice::Http, Origin::Default);
    config.web.timeout_secs = Sourced::new(30, Origin::Default);
    edit(&mut config);
    let handle = runtime::spawn(Arc::new(config));
    Setup {
        _work: work,
        _data: data,
        handle,
    }
}

async fn run_task(setup: &mut Setup, prompt: &str) -> Vec<Event> {
    runtime::submit(&setup.handle, prompt);
    tokio::time::timeout(
        BOUND,
        runtime::until(&mut setup.handle, |e| {
            matches!(e, Event::TurnFinished { .. })
        }),
    )
    .await
    .expect("the task ends within the bound")
}

fn finished(events: &[Event]) -> (Outcome, String, Option<String>, WebTrail) {
    match events.last() {
        Some(Event::TurnFinished {
            outcome,
            answer,
            message,
            web,
            ..
        }) => (
            *outcome,
            answer.clone(),
            message.clone(),
            web.clone().unwrap_or_default(),
        ),
        other => panic!("no end: {other:?}"),
    }
}

fn pages_read(events: &[Event]) -> Vec<(String, PageKind, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::PageRead {
                final_url,
                kind,
                text,
                ..
            } => Some((final_url.clone(), *kind, text.clone())),
            _ => None,
        })
        .collect()
}

fn notes(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Note { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The user message of each chat request, and checks every request is one fresh step: the
/// web agent's system prompt (never page text) and one user message.
fn asked(server: &FakeModel) -> Vec<String> {
    server
        .chat_requests()
        .iter()
        .map(|request| {
            let json = request.json();
            let messages = json["messages"].as_array().expect("messages");
            assert_eq!(messages.len(), 2, "one fresh step per request: {json}");
            let system = messages[0]["content"].as_str().unwrap_or_default();
            assert!(system.contains("web agent"), "{system}");
            assert!(
                !system.contains("<<<PAGE"),
                "page text in the system prompt"
            );
            messages[1]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_read_follow_note_and_conclude() {
    let site = WebSite::start();
    let article = site.url("/article.html");
    let links = site.url("/links.html");
    let deeper = site.url("/deeper.html");
    let server = FakeModel::start(vec![
        Reply::text("search: quokka facts"),
        Reply::text(format!("I will navigate to {article}")),
        Reply::text(format!(
            "Note: About 12,000 quokkas live on Rottnest Island.\nI will navigate to {links}"
        )),
        Reply::text(format!(
            "The deeper page has the riddle.\nI will navigate to {deeper}."
        )),
        Reply::text("Note: The answer to the riddle is LIGHTHOUSE.\nREQUEST_EXIT"),
        Reply::text("About 12,000 quokkas live there; the riddle's answer is LIGHTHOUSE."),
    ]);
    let mut setup = start(&server, &site, true, 15);
    let events = run_task(&mut setup, "How many quokkas live on Rottnest Island?").await;
    let (outcome, answer, message, trail) = finished(&events);
    assert_eq!(outcome, Outcome::Done, "{message:?}");
    assert!(answer.starts_with("About 12,000 quokkas"), "{answer}");
    assert!(
        answer.contains(&format!("Sources:\n- {article}")),
        "{answer}"
    );

    let searched: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::WebSearch {
                query,
                results,
                error,
                ..
            } => Some((query.clone(), results.len(), error.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(searched, [("quokka facts".to_owned(), 4, None)]);
    let read = pages_read(&events);
    let urls: Vec<&str> = read.iter().map(|(u, _, _)| u.as_str()).collect();
    assert_eq!(urls, [article.as_str(), links.as_str(), deeper.as_str()]);
    assert!(read.iter().all(|(_, kind, _)| *kind == PageKind::Content));
    assert!(
        read[0].2.contains("Quokkas of Rottnest Island"),
        "{}",
        read[0].2
    );
    assert!(!read[0].2.contains("SCRIPT-TEXT-MUST-NOT-APPEAR"));
    assert_eq!(
        notes(&events),
        [
            "Note: About 12,000 quokkas live on Rottnest Island.",
            "Note: The answer to the riddle is LIGHTHOUSE."
        ]
    );
    assert_eq!(trail.queries, ["quokka facts"]);
    assert_eq!(
        trail.visited,
        [article.clone(), links.clone(), deeper.clone()]
    );
    assert_eq!(trail.notes.len(), 2);
    assert_eq!(trail.engine.as_deref(), Some("http"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::BrowserStarted { engine, .. } if engine == "http"))
    );

    let asked = asked(&server);
    assert_eq!(asked.len(), 6);
    assert!(asked[0].contains("How many quokkas"), "{}", asked[0]);
    assert!(
        asked[1].contains("Search results") && asked[1].contains(&article),
        "{}",
        asked[1]
    );
    assert!(
        asked[2].contains("<<<PAGE") && asked[2].contains("Rottnest"),
        "{}",
        asked[2]
    );
    // The note taken on the article is carried into the later, otherwise fresh steps.
    assert!(
        asked[3].contains("Your notes so far:\n1. Note: About 12,000"),
        "{}",
        asked[3]
    );
    assert!(asked[4].contains("LIGHTHOUSE"), "{}", asked[4]);
    assert!(
        asked[5].contains("Your notes from the web:"),
        "{}",
        asked[5]
    );
    assert!(
        asked[5].contains("2. Note: The answer to the riddle is LIGHTHOUSE."),
        "{}",
        asked[5]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_filled_and_the_server_checks_the_values() {
    let site = WebSite::start();
    let login = site.url("/login.html");
    let server = FakeModel::start(vec![
        Reply::text("search: members login"),
        Reply::text(format!("I will navigate to {login}")),
        Reply::text(format!(
            "[username]({})\n[password]({})\nFORM_FILLED",
            web_site::LOGIN_USER,
            web_site::LOGIN_PASSWORD
        )),
        Reply::text("Note: Logged in; the membership number is 777-31.\nREQUEST_EXIT"),
        Reply::text("Your membership number is 777-31."),
    ]);
    let mut setup = start(&server, &site, true, 15);
    let events = run_task(&mut setup, "log me in and find my membership number").await;
    let (outcome, _, message, _) = finished(&events);
    assert_eq!(outcome, Outcome::Done, "{message:?}");
    let posted = site.requests_for("/login");
    assert_eq!(posted.len(), 1, "{posted:?}");
    let body = &posted[0].body;
    assert_eq!(web_site::param(body, "csrf").as_deref(), Some("token-123"));
    assert_eq!(web_site::param(body, "username").as_deref(), Some("alice"));
    assert_eq!(
        web_site::param(body, "newsletter"),
        None,
        "no box ticked unasked: {body}"
    );
    let form = events.iter().find_map(|e| match e {
        Event::FormSubmitted { fields, error, .. } => Some((fields.clone(), error.clone())),
        _ => None,
    });
    let (fields, error) = form.expect("a form event");
    assert_eq!(error, None);
    assert!(
        fields
            .iter()
            .any(|f| f.name == "password" && f.value == "••••"),
        "{fields:?}"
    );
    let asked = asked(&server);
    assert!(asked[3].contains("You just filled a form"), "{}", asked[3]);
    assert!(asked[3].contains("Welcome back, alice"), "{}", asked[3]);
    assert!(!asked[3].contains(web_site::LOGIN_PASSWORD), "{}", asked[3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_back_returns_to_the_results_without_the_page_read() {
    let site = WebSite::start();
    let article = site.url("/article.html");
    let server = FakeModel::start(vec![
        Reply::text("quokka"),
        Reply::text(format!("I will navigate to {article}")),
        Reply::text("Nothing useful here. GO_BACK"),
        // The same link again: refused as read already.
        Reply::text(format!("I will navigate to {article}")),
        Reply::text("REQUEST_EXIT"),
        Reply::text("Nothing found."),
    ]);
    let mut setup = start(&server, &site, true, 15);
    let events = run_task(&mut setup, "find quokka facts").await;
    let (outcome, _, _, trail) = finished(&events);
    assert_eq!(outcome, Outcome::Done);
    assert_eq!(trail.visited, std::slice::from_ref(&article), "read once");
    let asked = asked(&server);
    assert!(asked[3].contains("Search results"), "{}", asked[3]);
    assert!(
        !asked[3].contains(&format!("Link: {article}")),
        "{}",
        asked[3]
    );
    assert!(asked[4].contains("was read already"), "{}", asked[4]);
    assert_eq!(site.requests_for("/article.html").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_step_cap_ends_the_loop_and_still_concludes() {
    let site = WebSite::start();
    let server = FakeModel::start(vec![
        Reply::text("quokka"),
        Reply::text(format!("I will navigate to {}", site.url("/article.html"))),
        Reply::text(format!(
            "Note: 12,000.\nI will navigate to {}",
            site.url("/links.html")
        )),
        Reply::text("Here is what I found: 12,000."),
    ]);
    let mut setup = start(&server, &site, true, 3);
    let events = run_task(&mut setup, "find quokka facts").await;
    let (outcome, answer, message, _) = finished(&events);
    assert_eq!(outcome, Outcome::RoundLimit);
    assert!(message.unwrap_or_default().contains("max_steps = 3"));
    assert!(answer.starts_with("Here is what I found"), "{answer}");
    assert_eq!(
        server.chat_requests().len(),
        4,
        "three steps and the conclusion"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_captcha_page_is_called_one() {
    let site = WebSite::start();
    let captcha = site.url("/captcha.html");
    let server = FakeModel::start(vec![
        Reply::text(format!("I will navigate to {captcha}")),
        Reply::text("REQUEST_EXIT"),
        Reply::text("The page was a CAPTCHA."),
    ]);
    let mut setup = start(&server, &site, true, 15);
    let events = run_task(&mut setup, &format!("read {captcha}")).await;
    assert_eq!(finished(&events).0, Outcome::Done);
    let read = pages_read(&events);
    assert_eq!(read[0].1, PageKind::Captcha);
    let asked = asked(&server);
    assert!(asked[0].contains("CAPTCHA or bot check"), "{}", asked[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_during_a_page_load_ends_the_task_at_once() {
    let site = Arc::new(WebSite::start());
    let slow = site.url("/slow.html");
    let server = FakeModel::start(vec![]);
    let mut setup = start(&server, &site, true, 15);
    runtime::submit(&setup.handle, &format!("summarise {slow}"));
    let arrived = {
        let site = Arc::clone(&site);
        tokio::task::spawn_blocking(move || site.wait_for("/slow.html"))
    };
    arrived.await.expect("the slow page was asked for");
    runtime::send(&setup.handle, Command::Stop);
    let events = tokio::time::timeout(
        Duration::from_secs(10),
        runtime::until(&mut setup.handle, |e| {
            matches!(e, Event::TurnFinished { .. })
        }),
    )
    .await
    .expect("Stop ends the task while the page is still loading");
    assert_eq!(finished(&events).0, Outcome::Stopped);
    assert!(
        server.chat_requests().is_empty(),
        "the user's link opened first, no model asked"
    );
    site.open_slow_page();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_from_results_are_refused_unless_the_user_named_them() {
    let site = WebSite::start();
    let article = site.url("/article.html");
    let server = FakeModel::start(vec![
        Reply::text("quokka"),
        Reply::text(format!("I will navigate to {article}")),
        Reply::text("REQUEST_EXIT"),
        Reply::text("Nothing could be read."),
    ]);
    let mut setup = start(&server, &site, false, 15);
    let events = run_task(&mut setup, "find quokka facts").await;
    assert_eq!(finished(&events).0, Outcome::Done);
    assert!(
        pages_read(&events).is_empty(),
        "nothing on loopback was opened"
    );
    assert!(site.requests_for("/article.html").is_empty());
    let asked = asked(&server);
    assert!(asked[2].contains("allow_private"), "{}", asked[2]);

    // The user's own link to the same host is opened.
    let searches = site.requests_for("/search").len();
    let server = FakeModel::start(vec![
        Reply::text("Note: 12,000 quokkas.\nREQUEST_EXIT"),
        Reply::text("12,000."),
    ]);
    let mut setup = start(&server, &site, false, 15);
    let events = run_task(&mut setup, &format!("summarise {article}")).await;
    assert_eq!(finished(&events).0, Outcome::Done);
    assert_eq!(pages_read(&events).len(), 1);
    assert_eq!(
        site.requests_for("/search").len(),
        searches,
        "no search for a named page"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_search_engine_the_task_says_how_to_set_one() {
    let site = WebSite::start();
    let server = FakeModel::start(vec![]);
    let mut setup = start_with(&server, &site, |config| {
        config.web.searxng_url = Sourced::new(None, Origin::Default);
    });
    let events = run_task(&mut setup, "find quokka facts").await;
    let (outcome, _, message, _) = finished(&events);
    assert_eq!(outcome, Outcome::GaveUp);
    let message = message.unwrap_or_default();
    assert!(
        message.contains("searxng_url") && message.contains("SEARXNG_BASE_URL"),
        "{message}"
    );
    assert!(server.chat_requests().is_empty());
}
