//! AgenticSeek's browser parsing tests (reference §5.4, `test_browser_agent_parsing.py`, 21
//! cases) as conformance cases; its three search-result parsing cases are beside the parser they
//! test, in `web/search/mod.rs`. Where seek fixes a flaw on purpose the case says so and asserts
//! seek's behaviour.

use super::parse::{clean_links, extract_form, extract_links, parse_answer, select_link};
use super::prompt::{PageView, form_filled, navigation_prompt, stringify_results, unvisited};
use crate::wire::{PageKind, WebHit as SearchHit};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn hit(link: &str, snippet: &str) -> SearchHit {
    SearchHit {
        title: "t".into(),
        snippet: snippet.into(),
        link: link.into(),
    }
}

#[test]
fn test_extract_links() {
    let text = "Check this out: https://thriveonai.com/15-ai-startups-in-japan-to-take-note-of, and www.google.com!\nAlso try https://test.org/about?page=1, hey this one as well bro https://weatherstack.com/documentation/.";
    assert_eq!(
        extract_links(text),
        [
            "https://thriveonai.com/15-ai-startups-in-japan-to-take-note-of",
            "www.google.com",
            "https://test.org/about?page=1",
            "https://weatherstack.com/documentation",
        ]
    );
}

#[test]
fn test_extract_links_no_links() {
    assert!(extract_links("No links here at all.").is_empty());
}

#[test]
fn test_extract_links_single_link() {
    assert_eq!(
        extract_links("Visit https://example.com for details"),
        ["https://example.com"]
    );
}

#[test]
fn test_clean_links() {
    let links = strings(&[
        "https://example.com.",
        "www.test.com,",
        "https://clean.org!",
        "https://good.com",
    ]);
    assert_eq!(
        clean_links(&links),
        [
            "https://example.com",
            "www.test.com",
            "https://clean.org",
            "https://good.com"
        ]
    );
}

#[test]
fn test_clean_links_with_slash() {
    assert_eq!(
        clean_links(&strings(&["https://example.com/path/"])),
        ["https://example.com/path"]
    );
}

#[test]
fn test_extract_form() {
    let text = "Fill this: [username](john) and [password](secret123)\nNot a form: [random]text";
    assert_eq!(
        extract_form(text),
        ["[username](john)", "[password](secret123)"]
    );
}

#[test]
fn test_extract_form_empty() {
    assert!(extract_form("Just regular text here.").is_empty());
}

#[test]
fn test_extract_form_checkbox() {
    assert_eq!(
        extract_form("[agree](checked) and [newsletter](unchecked)").len(),
        2
    );
}

#[test]
fn test_parse_answer() {
    let text = "\n        Here's some info\n        Note: This is important. We are doing test it's very cool.\n        action: \n        i wanna navigate to https://test.com\n        ";
    let parsed = parse_answer(text);
    assert_eq!(
        parsed.notes[0],
        "Note: This is important. We are doing test it's very cool."
    );
    assert_eq!(parsed.links, ["https://test.com"]);
}

#[test]
fn test_parse_answer_extracts_links() {
    let parsed = parse_answer("Navigate to https://example.com and https://test.org");
    assert_eq!(parsed.links, ["https://example.com", "https://test.org"]);
}

/// AgenticSeek appended an empty note here; seek keeps no empty notes (they filled the
/// conclusion prompt with blank lines).
#[test]
fn test_parse_answer_no_notes() {
    let parsed = parse_answer("Go to https://example.com");
    assert!(parsed.notes.is_empty());
    assert_eq!(parsed.links, ["https://example.com"]);
}

#[test]
fn test_select_link_unvisited() {
    let history = strings(&["https://visited.com"]);
    let links = strings(&[
        "https://visited.com",
        "https://current.com",
        "https://new.com",
    ]);
    assert_eq!(
        select_link(&links, &history, Some("https://current.com")).map(String::as_str),
        Some("https://new.com")
    );
}

#[test]
fn test_select_link_all_visited() {
    let history = strings(&["https://visited.com"]);
    let links = strings(&["https://visited.com", "https://current.com"]);
    assert_eq!(
        select_link(&links, &history, Some("https://current.com")),
        None
    );
}

#[test]
fn test_select_link_empty() {
    assert_eq!(select_link(&[], &[], Some("https://current.com")), None);
}

#[test]
fn test_stringify_search_results() {
    let text = stringify_results(&[
        hit("https://one.com", "first"),
        hit("https://two.com", "second"),
    ]);
    for part in ["https://one.com", "first", "https://two.com", "second"] {
        assert!(text.contains(part), "{text}");
    }
}

#[test]
fn test_select_unvisited() {
    let hits = [hit("https://one.com", "a"), hit("https://two.com", "b")];
    let left = unvisited(&hits, &strings(&["https://one.com"]));
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].link, "https://two.com");
}

#[test]
fn test_select_unvisited_all_new() {
    let hits = [hit("https://one.com", "a"), hit("https://two.com", "b")];
    assert_eq!(unvisited(&hits, &[]).len(), 2);
}

/// AgenticSeek asked the model for a separate FORM_FILLED reply after filling; seek reads the
/// page the form led to and says so in the next step's prompt, which holds what the
/// original test checks: "You just filled a form", the page text and the user's request.
#[test]
fn test_form_update_prompt_is_sent_to_llm() {
    let before = form_filled(
        "https://site.example/login",
        &[("username".into(), "bob".into())],
    );
    let view = PageView {
        url: "https://site.example/home",
        title: "Home",
        kind: PageKind::Content,
        text: "Welcome, you are logged in.",
        cut: false,
        links: &[],
        links_left_out: 0,
        forms: &[],
    };
    let prompt = navigation_prompt("log me in", &view, &[], Some(&before));
    assert!(prompt.contains("You just filled a form"), "{prompt}");
    assert!(prompt.contains("Welcome, you are logged in."), "{prompt}");
    assert!(prompt.contains("log me in"), "{prompt}");
}
