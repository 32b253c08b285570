//! The web agent through the real binary: headless `--json` carries `browser_started`,
//! `web_search`, `page_read` and `note` events, the session file keeps every visited URL and
//! note, and the human-readable mode prints the answer.

use crate::fake_model;
use crate::support;
use crate::web_site;

use std::time::Duration;

use fake_model::{FakeModel, Reply};
use support::{Sandbox, run_within, stderr, stdout};
use web_site::WebSite;

const BOUND: Duration = Duration::from_secs(120);

fn config(site: &WebSite) -> String {
    format!(
        "[web]\nsearxng_url = \"{}\"\nbrowser = \"http\"\nallow_private = true\n",
        site.base()
    )
}

fn replies(site: &WebSite) -> Vec<Reply> {
    vec![
        Reply::text("search: quokka"),
        Reply::text(format!("I will navigate to {}", site.url("/article.html"))),
        Reply::text("Note: About 12,000 quokkas live on Rottnest Island.\nREQUEST_EXIT"),
        Reply::text("About 12,000."),
    ]
}

#[test]
fn json_mode_carries_the_web_events_and_the_session_keeps_them() {
    let site = WebSite::start();
    let server = FakeModel::start(replies(&site));
    let sb = Sandbox::new();
    sb.write_config(&config(&site));
    let out = run_within(
        &mut sb.seek_at(
            &server.url(),
            &["--agent", "web", "--json", "-p", "how many quokkas?"],
        ),
        BOUND,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    for wanted in [
        "browser_started",
        "web_search",
        "page_read",
        "note",
        "turn_finished",
    ] {
        assert!(types.contains(&wanted), "{wanted} in {types:?}");
    }
    let search = lines
        .iter()
        .find(|l| l["type"] == "web_search")
        .expect("search");
    assert_eq!(search["query"], "quokka");
    assert_eq!(search["results"].as_array().map(Vec::len), Some(4));
    let page = lines
        .iter()
        .find(|l| l["type"] == "page_read")
        .expect("page");
    assert_eq!(page["final_url"], site.url("/article.html"));
    assert_eq!(page["kind"], "content");
    let end = lines
        .iter()
        .find(|l| l["type"] == "turn_finished")
        .expect("the end");
    assert_eq!(end["web"]["visited"][0], site.url("/article.html"));
    assert_eq!(
        end["web"]["notes"][0],
        "Note: About 12,000 quokkas live on Rottnest Island."
    );

    let sessions: Vec<_> = std::fs::read_dir(sb.path("data/seek/sessions"))
        .expect("sessions dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let saved = std::fs::read_to_string(&sessions[0]).expect("session file");
    assert!(saved.contains("\"page_read\""), "{saved}");
    assert!(saved.contains("\"note\""), "{saved}");
    assert!(saved.contains(&site.url("/article.html")), "{saved}");
}

#[test]
fn text_mode_prints_the_answer_and_the_steps() {
    let site = WebSite::start();
    let server = FakeModel::start(replies(&site));
    let sb = Sandbox::new();
    sb.write_config(&config(&site));
    let out = run_within(
        &mut sb.seek_at(
            &server.url(),
            &["--agent", "web", "-p", "how many quokkas?"],
        ),
        BOUND,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("About 12,000."), "{}", stdout(&out));
    assert!(stdout(&out).contains("Sources:"), "{}", stdout(&out));
}

#[test]
fn seek_config_shows_the_web_section() {
    let site = WebSite::start();
    let sb = Sandbox::new();
    sb.write_config(&config(&site));
    let out = run_within(sb.seek().arg("config"), BOUND);
    let shown = stdout(&out);
    assert!(shown.contains("[web]"), "{shown}");
    assert!(
        shown.contains(&format!("searxng_url = \"{}\"", site.base())),
        "{shown}"
    );
    assert!(shown.contains("browser = \"http\""), "{shown}");
}
