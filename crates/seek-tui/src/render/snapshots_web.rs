//! Snapshot tests of the web agent's panes, drawn by the real screen code: a search, a page
//! read with its notes, a CAPTCHA wall, a form with a password, folded and unfolded (Ctrl+O,
//! Enter on the focused pane); failed steps; the same task inside a plan step and replayed from
//! a session; and hostile pages and results that try to act on the terminal or disguise
//! themselves. The events are made by hand in the shapes `crate::wire` documents.

use crossterm::event::{KeyCode, KeyModifiers};

use super::screen::plain_transcript;
use super::snapshots::{Scene, status};
use crate::agent::{Event, Outcome, Status};
use crate::config::AgentName;
use crate::transcript::Item;
use crate::web_pane::WebBody;
use crate::wire::{PageKind, WebField, WebHit};

const SITE: &str = "http://127.0.0.1:41234";

fn hit(title: &str, path: &str, snippet: &str) -> WebHit {
    WebHit {
        title: title.into(),
        snippet: snippet.into(),
        link: format!("{SITE}{path}"),
    }
}

fn search(step: u32, query: &str, results: Vec<WebHit>, error: Option<&str>) -> Event {
    Event::WebSearch {
        step,
        query: query.into(),
        backend: "searxng".into(),
        results,
        error: error.map(str::to_owned),
        elapsed_ms: 312,
    }
}

fn page(step: u32, path: &str, title: &str, kind: PageKind, text: &str) -> Event {
    Event::PageRead {
        step,
        url: format!("{SITE}{path}"),
        final_url: format!("{SITE}{path}"),
        title: title.into(),
        engine: "chromium".into(),
        kind,
        status: Some(if kind == PageKind::Error { 404 } else { 200 }),
        text: text.into(),
        chars: text.chars().count(),
        cut: false,
        links: 4,
        forms: usize::from(path.contains("login")),
        error: None,
        elapsed_ms: 840,
    }
}

fn note(step: u32, path: Option<&str>, text: &str) -> Event {
    Event::Note {
        step,
        url: path.map(|p| format!("{SITE}{p}")),
        text: text.into(),
    }
}

fn field(name: &str, value: &str) -> WebField {
    WebField {
        name: name.into(),
        value: value.into(),
    }
}

fn finished() -> Event {
    Event::TurnFinished {
        turn: 1,
        outcome: Outcome::Done,
        answer: String::new(),
        reasoning: None,
        agent: AgentName::Web,
        rounds: 6,
        blocks: Vec::new(),
        message: None,
        usage: None,
        plan: None,
        web: None,
    }
}

/// The web agent's steps of one task: the browser starts, a search, a page with two notes (one
/// taken on its final URL), a CAPTCHA wall, a login form with a password and the page after it.
pub(super) fn web_steps() -> Vec<Event> {
    let mut moved = page(
        2,
        "/article.html",
        "Tide tables of the North Sea",
        PageKind::Content,
        "Tide tables\nHigh water at Den Helder is at 06:12 and 18:40 today.\nLow water follows six hours later.",
    );
    if let Event::PageRead { final_url, cut, .. } = &mut moved {
        *final_url = format!("{SITE}/deeper.html");
        *cut = true;
    }
    vec![
        Event::BrowserStarted {
            engine: "chromium".into(),
            detail: "148.0.7778.96".into(),
            elapsed_ms: 812,
        },
        search(
            1,
            "den helder high tide today",
            vec![
                hit(
                    "Tide tables of the North Sea",
                    "/article.html",
                    "High and low water for every port, updated daily.",
                ),
                hit("Links", "/links.html", ""),
            ],
            None,
        ),
        note(1, None, "the first result has today's tides"),
        moved,
        note(2, Some("/deeper.html"), "high water at 06:12 and 18:40"),
        page(
            3,
            "/captcha.html",
            "Just a moment…",
            PageKind::Captcha,
            "Checking your browser before accessing the site.",
        ),
        Event::FormSubmitted {
            step: 4,
            url: format!("{SITE}/login.html"),
            fields: vec![field("user", "ada"), field("password", "hunter2")],
            error: None,
        },
        page(
            4,
            "/welcome",
            "Welcome",
            PageKind::Content,
            "Welcome back, ada.",
        ),
    ]
}

/// A web task run live: its prompt, the steps, the answer and the end.
fn web_task(s: &mut Scene) -> &mut Scene {
    s.event(
        0,
        Event::TurnStarted {
            turn: 1,
            prompt: "when is high tide at Den Helder today?".into(),
            agent: AgentName::Web,
        },
    )
    .event(0, status(Status::Thinking, 0));
    for event in web_steps() {
        s.event(500, event);
    }
    s.event(900, finished())
}

#[test]
fn web_panes_folded_show_headers_and_notes() {
    let mut s = Scene::new();
    web_task(&mut s);
    let screen = s.draw(110, 20, 1_000);
    assert!(!screen.contains("hunter2"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn web_panes_unfolded_show_results_text_and_fields() {
    let mut s = Scene::new();
    web_task(&mut s);
    s.key(1_000, KeyCode::Char('o'), KeyModifiers::CONTROL);
    let screen = s.draw(100, 48, 1_000);
    assert!(
        !screen.contains("hunter2"),
        "the password is masked: {screen}"
    );
    assert!(screen.contains("password = ••••"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn enter_on_a_focused_web_pane_unfolds_only_it() {
    let mut s = Scene::new();
    web_task(&mut s);
    // Tab focuses the newest foldable item: the page after the form.
    s.key(1_000, KeyCode::Tab, KeyModifiers::NONE);
    s.key(1_000, KeyCode::Tab, KeyModifiers::NONE);
    let focused = s.app.focus.and_then(|f| s.app.transcript.items().get(f));
    assert!(
        matches!(focused, Some(Item::Web(w)) if matches!(w.body, WebBody::Form { .. }) && !w.expanded),
        "the form pane has the focus: {focused:?}"
    );
    s.key(1_000, KeyCode::Enter, KeyModifiers::NONE);
    let screen = s.draw(100, 20, 1_000);
    assert!(screen.contains("user = ada"), "{screen}");
    assert!(
        !screen.contains("Welcome back"),
        "the page after it stays folded: {screen}"
    );
}

#[test]
fn failed_web_steps_start_unfolded_in_the_failure_style() {
    let mut s = Scene::new();
    s.event(
        0,
        Event::TurnStarted {
            turn: 1,
            prompt: "find the tides".into(),
            agent: AgentName::Web,
        },
    )
    .event(
        100,
        search(
            1,
            "tides",
            Vec::new(),
            Some(
                "the search engine is unreachable: connection refused (is SEARXNG_BASE_URL right?)",
            ),
        ),
    )
    .event(
        200,
        Event::PageRead {
            step: 2,
            url: format!("{SITE}/slow.html"),
            final_url: String::new(),
            title: String::new(),
            engine: "http".into(),
            kind: PageKind::Empty,
            status: None,
            text: String::new(),
            chars: 0,
            cut: false,
            links: 0,
            forms: 0,
            error: Some("timed out after 20 s".into()),
            elapsed_ms: 20_000,
        },
    )
    .event(
        300,
        page(3, "/nothing", "Not Found", PageKind::Error, "404 Not Found"),
    )
    .event(
        400,
        Event::FormSubmitted {
            step: 4,
            url: format!("{SITE}/links.html"),
            fields: vec![field("q", "tides")],
            error: Some("no form on the page has the fields q".into()),
        },
    )
    .event(
        500,
        note(5, Some("/never-read"), "a note on a page never read"),
    )
    .event(900, finished());
    insta::assert_snapshot!(s.draw(100, 22, 1_000));
}

fn in_step(event: Event) -> Event {
    Event::Step {
        step: "1".into(),
        event: Box::new(event),
    }
}

#[test]
fn a_plan_steps_web_panes_sit_in_its_section_and_its_notes_find_them() {
    let mut s = Scene::new();
    s.event(
        0,
        Event::TurnStarted {
            turn: 1,
            prompt: "plan: find the tides, then write them down".into(),
            agent: AgentName::Planner,
        },
    )
    .event(
        10,
        Event::StepStarted {
            id: "1".into(),
            agent: AgentName::Web,
            task: "find today's tides at Den Helder".into(),
        },
    );
    for event in web_steps() {
        s.event(500, in_step(event));
    }
    let items = s.app.transcript.items();
    let webs: Vec<&crate::transcript::WebPane> = items
        .iter()
        .filter_map(|i| match i {
            Item::Web(w) => Some(w),
            _ => None,
        })
        .collect();
    assert_eq!(webs.len(), 5);
    assert!(webs.iter().all(|w| w.step.as_deref() == Some("1")));
    assert_eq!(webs[0].notes, ["the first result has today's tides"]);
    assert_eq!(webs[1].notes, ["high water at 06:12 and 18:40"]);
    assert!(
        matches!(items.first(), Some(Item::User(_))) && matches!(items.get(1), Some(Item::Step(_))),
        "{items:?}"
    );
}

#[test]
fn a_resumed_session_shows_the_same_web_panes() {
    let mut live = Scene::new();
    web_task(&mut live);
    let mut events = vec![Event::TurnStarted {
        turn: 1,
        prompt: "when is high tide at Den Helder today?".into(),
        agent: AgentName::Web,
    }];
    events.extend(web_steps());
    events.push(finished());
    let mut resumed = Scene::new();
    resumed.event(
        1_000,
        Event::Resumed {
            id: "s1".into(),
            turns: 1,
            warnings: Vec::new(),
            replay: events.into_iter().map(|e| (1_000, e)).collect(),
        },
    );
    let now = live.at(1_000);
    let live_text = plain_transcript(&live.app, 100, now);
    let resumed_text = plain_transcript(&resumed.app, 100, resumed.at(1_000));
    assert!(
        resumed_text.contains(live_text.trim_end()),
        "live:\n{live_text}\nresumed:\n{resumed_text}"
    );
}

const HOSTILE: &str = "\x1b]0;pwned\x07\x1b[2J\x1b[H\u{202e}gpj.exe\u{2066}\x1b]52;c;ZWNobyBoaQ==\x07\u{9b}31m\rforged\u{200f}";

#[test]
fn hostile_titles_snippets_links_and_text_are_rendered_harmless() {
    let mut s = Scene::new();
    s.event(
        0,
        Event::TurnStarted {
            turn: 1,
            prompt: "search".into(),
            agent: AgentName::Web,
        },
    )
    .event(
        100,
        Event::WebSearch {
            step: 1,
            query: HOSTILE.into(),
            backend: HOSTILE.into(),
            results: vec![WebHit {
                title: HOSTILE.into(),
                snippet: HOSTILE.into(),
                link: HOSTILE.into(),
            }],
            error: None,
            elapsed_ms: 1,
        },
    )
    .event(
        200,
        Event::PageRead {
            step: 2,
            url: HOSTILE.into(),
            final_url: format!("{HOSTILE}/x"),
            title: HOSTILE.into(),
            engine: HOSTILE.into(),
            kind: PageKind::Content,
            status: Some(200),
            text: format!("{HOSTILE}\n{HOSTILE}\ttab"),
            chars: 3,
            cut: false,
            links: 0,
            forms: 0,
            error: None,
            elapsed_ms: 1,
        },
    )
    .event(300, note(3, None, HOSTILE))
    .event(
        400,
        Event::FormSubmitted {
            step: 4,
            url: HOSTILE.into(),
            fields: vec![field(HOSTILE, HOSTILE)],
            error: Some(HOSTILE.into()),
        },
    )
    .event(
        500,
        Event::BrowserStarted {
            engine: HOSTILE.into(),
            detail: HOSTILE.into(),
            elapsed_ms: 1,
        },
    )
    .event(600, note(5, Some("http://nowhere"), HOSTILE));
    s.key(700, KeyCode::Char('o'), KeyModifiers::CONTROL);
    for width in [100, 30, 8] {
        let screen = s.draw(width, 60, 700);
        let text = plain_transcript(&s.app, width, s.at(700));
        for shown in [&screen, &text] {
            for c in shown.chars() {
                assert!(
                    !c.is_control() || c == '\n',
                    "control {c:?} reached the screen at {width}: {shown}"
                );
                assert!(
                    !crate::terminal_safe::is_bidi_control(c),
                    "bidi control {c:?} reached the screen at {width}: {shown}"
                );
            }
            assert!(!shown.contains("52;c"), "{shown}");
        }
    }
    let text = plain_transcript(&s.app, 100, s.at(700));
    assert!(text.contains("gpj.exe"), "the text is still shown: {text}");
    insta::assert_snapshot!(text);
}
