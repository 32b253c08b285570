//! Reading the web agent's answers: the links it names, the notes it takes, the form fields it
//! fills, and its action words (`REQUEST_EXIT`, `GO_BACK`, `FORM_FILLED`), AgenticSeek's
//! protocol. Its flaws are fixed here: a note starts only at a line that begins with `Note:`
//! (not at any line containing "note", like a URL with `take-note-of` in it), an answer without
//! a note adds none, and a markdown link `[text](url)` is not taken for a form field unless the
//! page has a field of that name (the runner checks that).
//!
//! Pure: it must not open anything.

use std::sync::LazyLock;

use regex::Regex;

/// AgenticSeek's action words.
pub const REQUEST_EXIT: &str = "REQUEST_EXIT";
pub(crate) const FORM_FILLED: &str = "FORM_FILLED";
pub const GO_BACK: &str = "GO_BACK";

/// A link written in prose: a scheme or `www.`, up to the next space.
static LINK: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(https?://\S+|www\.\S+)").ok());

/// `[field](value)`: AgenticSeek's form syntax; names may also hold `-`, `.` and `:` (real
/// forms' names do), values any text but `)` on one line.
static FORM_FIELD: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\[([\w\-.:]+)\]\(([^)\n]+)\)").ok());

/// A line that starts a note: `Note:`, `- Note:`, `**Note:**`, `Notes:` (any case).
static NOTE_START: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)^\s*(?:[-*•]\s*)?(?:\*\*)?notes?\s*(?:\*\*)?\s*:").ok());

fn is_note_start(line: &str) -> bool {
    NOTE_START.as_ref().is_some_and(|re| re.is_match(line))
}

/// What one answer says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// Each note as written (its `Note:` line and the lines that continue it, joined by ". ").
    pub notes: Vec<String>,
    /// The links it names, cleaned, in order.
    pub links: Vec<String>,
    /// `[field](value)` pairs, as written.
    pub form_fields: Vec<(String, String)>,
    pub exit: bool,
    pub go_back: bool,
    pub form_filled: bool,
}

/// Reads an answer.
pub fn parse_answer(text: &str) -> Answer {
    let (notes, rest) = notes_and_rest(text);
    Answer {
        notes,
        links: extract_links(&rest),
        form_fields: form_fields(text),
        exit: text.contains(REQUEST_EXIT),
        go_back: text.contains(GO_BACK),
        form_filled: text.contains(FORM_FILLED),
    }
}

/// The notes of `text` and the lines that are not notes. A note runs from its `Note:` line to an
/// empty line, an `Action:` line, or the next note; lines are trimmed and joined with ". "
/// (AgenticSeek's), doubled full stops avoided.
fn notes_and_rest(text: &str) -> (Vec<String>, String) {
    let mut notes = Vec::new();
    let mut rest = String::new();
    let mut current: Option<Vec<String>> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        let ends_note = trimmed.is_empty()
            || trimmed.to_ascii_lowercase().starts_with("action:")
            || is_note_start(trimmed)
            || is_action(trimmed);
        if ends_note && let Some(lines) = current.take() {
            push_note(&mut notes, &lines);
        }
        if is_note_start(trimmed) {
            current = Some(vec![trimmed.to_owned()]);
        } else if let Some(lines) = current.as_mut() {
            lines.push(trimmed.to_owned());
        } else {
            rest.push_str(line);
            rest.push('\n');
        }
    }
    if let Some(lines) = current {
        push_note(&mut notes, &lines);
    }
    (notes, rest)
}

/// A line that acts rather than notes: it names a link, an action word or a form field, so a
/// note without a blank line after it does not swallow the navigation that follows.
fn is_action(line: &str) -> bool {
    [REQUEST_EXIT, GO_BACK, FORM_FILLED]
        .iter()
        .any(|word| line.contains(word))
        || LINK.as_ref().is_some_and(|re| re.is_match(line))
        || FORM_FIELD.as_ref().is_some_and(|re| re.is_match(line))
        || line.to_ascii_lowercase().contains("navigate to")
}

fn push_note(notes: &mut Vec<String>, lines: &[String]) {
    let mut joined = String::new();
    for line in lines.iter().filter(|l| !l.is_empty()) {
        if !joined.is_empty() {
            joined.push_str(if joined.ends_with(['.', '!', '?', ':']) {
                " "
            } else {
                ". "
            });
        }
        joined.push_str(line);
    }
    // A bare "Note:" with nothing after it says nothing.
    let body = NOTE_START
        .as_ref()
        .map_or_else(|| joined.clone(), |re| re.replace(&joined, "").into_owned());
    if !body.trim().is_empty() {
        notes.push(joined);
    }
}

/// The links written in `text`, cleaned (AgenticSeek's `extract_links`).
pub(crate) fn extract_links(text: &str) -> Vec<String> {
    let found: Vec<String> = LINK.as_ref().map_or_else(Vec::new, |re| {
        re.find_iter(text).map(|m| m.as_str().to_owned()).collect()
    });
    clean_links(&found)
}

/// Trailing punctuation removed: `.,!?;:)` and quotes/brackets, then one more character that
/// is not a letter or digit (a trailing `/`), as AgenticSeek did; empty results dropped.
pub(crate) fn clean_links(links: &[String]) -> Vec<String> {
    links
        .iter()
        .filter_map(|link| {
            let mut link = link
                .trim_end_matches([
                    '.', ',', '!', '?', ';', ':', ')', '"', '\'', '`', '>', ']', '*',
                ])
                .to_owned();
            if link.chars().last().is_some_and(|c| !c.is_alphanumeric()) {
                link.pop();
            }
            (!link.is_empty()).then_some(link)
        })
        .collect()
}

/// The `[field](value)` pairs of `text`, as written (AgenticSeek's `extract_form`).
#[cfg(test)] // kept for the tests that pin its behaviour
pub(crate) fn extract_form(text: &str) -> Vec<String> {
    FORM_FIELD.as_ref().map_or_else(Vec::new, |re| {
        re.find_iter(text).map(|m| m.as_str().to_owned()).collect()
    })
}

/// The `[field](value)` pairs of `text` as names and values (values trimmed).
pub(crate) fn form_fields(text: &str) -> Vec<(String, String)> {
    FORM_FIELD.as_ref().map_or_else(Vec::new, |re| {
        re.captures_iter(text)
            .map(|c| (c[1].to_owned(), c[2].trim().to_owned()))
            .collect()
    })
}

/// The first of `links` not visited and not the current page (AgenticSeek's `select_link`).
pub(crate) fn select_link<'a>(
    links: &'a [String],
    history: &[String],
    current: Option<&str>,
) -> Option<&'a String> {
    links
        .iter()
        .find(|link| Some(link.as_str()) != current && !history.iter().any(|h| same_page(h, link)))
}

/// Whether two URLs name the same page: a trailing `/`, a `#fragment` and `www.` without a
/// scheme do not make a page new.
pub(crate) fn same_page(a: &str, b: &str) -> bool {
    normalise(a) == normalise(b)
}

fn normalise(url: &str) -> String {
    let url = url.split('#').next().unwrap_or(url);
    let url = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or(url);
    url.trim_end_matches('/').to_ascii_lowercase()
}

/// A link as it can be opened: `www.x` gets `https://`.
pub fn absolute(link: &str) -> String {
    if link.starts_with("www.") {
        format!("https://{link}")
    } else {
        link.to_owned()
    }
}

/// The search query in the model's answer to the search prompt: a ```web_search block's first
/// line if there is one, else the first non-empty line without a `search:` prefix or quotes
/// (see `crate::tools::query_of`).
pub(crate) fn query_in(answer: &str) -> Option<String> {
    let fenced = answer.split("```").nth(1).and_then(|block| {
        let (tag, body) = block.split_once('\n')?;
        let tag = tag.trim().to_ascii_lowercase();
        matches!(tag.as_str(), "web_search" | "search" | "").then(|| body.to_owned())
    });
    let text = fenced.as_deref().unwrap_or(answer);
    crate::tools::query_of(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_starts_only_at_a_note_line() {
        let answer = "I will navigate to https://x.example/how-to-take-note-of-things\nNote: quokkas eat grass\nthey live 10 years\n\nGO_BACK";
        let parsed = parse_answer(answer);
        assert_eq!(
            parsed.notes,
            ["Note: quokkas eat grass. they live 10 years"]
        );
        assert_eq!(
            parsed.links,
            ["https://x.example/how-to-take-note-of-things"]
        );
        assert!(parsed.go_back && !parsed.exit);
    }

    #[test]
    fn a_note_ends_where_the_navigation_starts() {
        let parsed =
            parse_answer("Note: 12,000 quokkas\nI will navigate to https://x.example/next");
        assert_eq!(parsed.notes, ["Note: 12,000 quokkas"]);
        assert_eq!(parsed.links, ["https://x.example/next"]);
    }

    #[test]
    fn notes_in_bullets_and_bold_are_read_and_empty_ones_dropped() {
        let parsed = parse_answer("- Note: one\n**Note:** two\nNote:\nREQUEST_EXIT");
        assert_eq!(parsed.notes, ["- Note: one", "**Note:** two"]);
        assert!(parsed.exit);
    }

    #[test]
    fn links_inside_markdown_and_angle_brackets_are_cleaned() {
        let links = extract_links("see [a](https://a.example/x) or <https://b.example/>.");
        assert_eq!(links, ["https://a.example/x", "https://b.example"]);
    }

    #[test]
    fn a_visited_page_is_the_same_with_a_slash_or_a_fragment() {
        let history = vec!["https://a.example/page/".to_owned()];
        let links = vec![
            "https://a.example/page#top".to_owned(),
            "http://a.example/other".to_owned(),
        ];
        assert_eq!(
            select_link(&links, &history, None).map(String::as_str),
            Some("http://a.example/other")
        );
    }

    #[test]
    fn form_fields_take_names_real_forms_use() {
        assert_eq!(
            form_fields("[user-name](bob) [login.pass]( x1 )"),
            [
                ("user-name".to_owned(), "bob".to_owned()),
                ("login.pass".to_owned(), "x1".to_owned())
            ]
        );
    }

    #[test]
    fn the_query_comes_from_a_block_or_the_first_line() {
        assert_eq!(
            query_in("```web_search\nquokka diet\n```").as_deref(),
            Some("quokka diet")
        );
        assert_eq!(
            query_in("search: \"quokka diet\"\nthanks").as_deref(),
            Some("quokka diet")
        );
    }
}
