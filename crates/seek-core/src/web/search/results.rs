//! Reading a SearxNG answer into results: its JSON (`results[].{title, content, url}`) and its
//! HTML results page (`article.result`, AgenticSeek's selectors). Only absolute http(s) links
//! are kept, each once, at most `limit`; titles and snippets are made one terminal-safe line.
//!
//! Pure parsing of untrusted text: it must not fetch anything, and bad input never panics.

use std::collections::HashSet;
use std::sync::LazyLock;

use scraper::{ElementRef, Html, Selector};

use super::{SNIPPET_CHARS, SearchHit, TITLE_CHARS, one_line};

/// The longest link kept, in bytes: a longer one is not a search result worth a model's
/// context.
const MAX_LINK_BYTES: usize = super::LINK_CHARS;

/// What a JSON answer held.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum JsonAnswer {
    Hits(Vec<SearchHit>),
    /// Not SearxNG's JSON (an HTML page, invalid JSON, no `results` list): the instance does
    /// not serve the JSON format.
    NotJson,
}

/// `body` as SearxNG's JSON answer.
pub(super) fn from_json(body: &str, limit: usize) -> JsonAnswer {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        return JsonAnswer::NotJson;
    };
    let Some(results) = value.get("results").and_then(|r| r.as_array()) else {
        return JsonAnswer::NotJson;
    };
    let text = |item: &serde_json::Value, key: &str| {
        item.get(key)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_owned()
    };
    let mut kept = Kept::new(limit);
    for item in results {
        if kept.full() {
            break;
        }
        kept.push(
            text(item, "title"),
            text(item, "content"),
            &text(item, "url"),
        );
    }
    JsonAnswer::Hits(kept.hits)
}

static RESULT: LazyLock<Option<Selector>> =
    LazyLock::new(|| Selector::parse("article.result").ok());
static URL_HEADER: LazyLock<Option<Selector>> =
    LazyLock::new(|| Selector::parse("a.url_header").ok());
static HEADING_LINK: LazyLock<Option<Selector>> = LazyLock::new(|| Selector::parse("h3 a").ok());
static HEADING: LazyLock<Option<Selector>> = LazyLock::new(|| Selector::parse("h3").ok());
static CONTENT: LazyLock<Option<Selector>> = LazyLock::new(|| Selector::parse("p.content").ok());

/// `body` as SearxNG's HTML results page: per `article.result`, the `a.url_header` link (else
/// the first `h3 a`), the `h3` text and the `p.content` text. A page without results (an error
/// or a CAPTCHA page) gives none.
pub(super) fn from_html(body: &str, limit: usize) -> Vec<SearchHit> {
    // The selectors are constants that parse; `None` would only mean no results are found.
    let (Some(result), Some(url_header), Some(heading_link), Some(heading), Some(content)) = (
        RESULT.as_ref(),
        URL_HEADER.as_ref(),
        HEADING_LINK.as_ref(),
        HEADING.as_ref(),
        CONTENT.as_ref(),
    ) else {
        return Vec::new();
    };
    let document = Html::parse_document(body);
    let mut kept = Kept::new(limit);
    for article in document.select(result) {
        if kept.full() {
            break;
        }
        let link = article
            .select(url_header)
            .chain(article.select(heading_link))
            .find_map(|a| a.value().attr("href"))
            .unwrap_or("");
        let first_text = |selector: &Selector| {
            article
                .select(selector)
                .next()
                .map(|e| text_of(e))
                .unwrap_or_default()
        };
        kept.push(first_text(heading), first_text(content), link);
    }
    kept.hits
}

fn text_of(element: ElementRef<'_>) -> String {
    element.text().collect::<Vec<_>>().join(" ")
}

/// The results kept so far: http(s) links only, each once, at most `limit`.
struct Kept {
    hits: Vec<SearchHit>,
    seen: HashSet<String>,
    limit: usize,
}

impl Kept {
    fn new(limit: usize) -> Self {
        Self {
            hits: Vec::new(),
            seen: HashSet::new(),
            limit,
        }
    }

    fn full(&self) -> bool {
        self.hits.len() >= self.limit
    }

    fn push(&mut self, title: String, snippet: String, link: &str) {
        let Some(link) = web_link(link) else { return };
        if self.full() || !self.seen.insert(link.clone()) {
            return;
        }
        self.hits.push(SearchHit {
            title: one_line(&title, TITLE_CHARS),
            snippet: one_line(&snippet, SNIPPET_CHARS),
            link,
        });
    }
}

/// `raw` when it is an absolute http(s) URL of sensible length, normalised (so two spellings
/// of one URL count once); `None` otherwise (`javascript:`, `data:`, relative, garbage).
fn web_link(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > MAX_LINK_BYTES {
        return None;
    }
    let url = reqwest::Url::parse(raw).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return None;
    }
    Some(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(title: &str, snippet: &str, link: &str) -> SearchHit {
        SearchHit {
            title: title.into(),
            snippet: snippet.into(),
            link: link.into(),
        }
    }

    #[test]
    fn json_results_are_read_in_order() {
        let body = r#"{"query":"q","results":[
            {"title":"One","content":"first","url":"https://one.example/"},
            {"title":"Two","content":"second\nline","url":"http://two.example/a?b=1"}]}"#;
        assert_eq!(
            from_json(body, 16),
            JsonAnswer::Hits(vec![
                hit("One", "first", "https://one.example/"),
                hit("Two", "second line", "http://two.example/a?b=1"),
            ])
        );
    }

    #[test]
    fn json_drops_non_web_links_duplicates_and_extra_results() {
        let body = r#"{"results":[
            {"title":"a","content":"","url":"javascript:alert(1)"},
            {"title":"b","content":"","url":"/relative"},
            {"title":"c","content":"","url":"https://c.example"},
            {"title":"c again","content":"","url":"https://c.example/"},
            {"title":"no url"},
            {"title":7,"content":null,"url":"https://d.example/"},
            {"title":"e","content":"","url":"https://e.example/"}]}"#;
        assert_eq!(
            from_json(body, 2),
            JsonAnswer::Hits(vec![
                hit("c", "", "https://c.example/"),
                hit("", "", "https://d.example/"),
            ])
        );
    }

    #[test]
    fn json_that_is_not_searxng_is_refused() {
        assert_eq!(from_json("<html>hi</html>", 16), JsonAnswer::NotJson);
        assert_eq!(from_json("{\"results\": 3}", 16), JsonAnswer::NotJson);
        assert_eq!(from_json("[1,2]", 16), JsonAnswer::NotJson);
        assert_eq!(from_json("", 16), JsonAnswer::NotJson);
        assert_eq!(from_json("{\"results\": []}", 16), JsonAnswer::Hits(vec![]));
    }

    #[test]
    fn html_results_use_agenticseek_selectors() {
        let body = r#"<html><body><div id="results">
          <article class="result result-default">
            <a href="https://one.example/page" class="url_header">one.example</a>
            <h3><a href="https://elsewhere.example/">The <b>first</b>
              result</a></h3>
            <p class="content">Its   snippet</p>
          </article>
          <article class="result"><h3><a href="https://two.example/">Second</a></h3></article>
          <article class="result"><h3>No link</h3></article>
          <article class="other"><h3><a href="https://ignored.example/">x</a></h3></article>
          <article class="result"><a class="url_header" href="data:text/html,hi">d</a></article>
        </div></body></html>"#;
        assert_eq!(
            from_html(body, 16),
            vec![
                hit(
                    "The first result",
                    "Its snippet",
                    "https://one.example/page"
                ),
                hit("Second", "", "https://two.example/"),
            ]
        );
        assert_eq!(from_html(body, 1).len(), 1);
    }

    #[test]
    fn html_without_results_gives_none() {
        assert!(from_html("<html><title>Too many requests</title></html>", 16).is_empty());
        assert!(from_html("\u{0}<<>>&&", 16).is_empty());
    }
}
