//! HTML to what a model can read: markdown-ish text (headings, paragraphs, lists, tables, link
//! texts; scripts, styles, navigation and footer boilerplate dropped), the page's links
//! (absolute, http(s) only, de-duplicated) and its forms with their fields; and whether a page
//! is a CAPTCHA wall or an error page.
//!
//! Pure: both page readers (plain HTTP and Chromium's rendered DOM) call it. It must not
//! fetch anything.

mod classify;
mod clean;
mod depth;
mod forms;
mod links;
mod text;

use reqwest::Url;
use scraper::Html;

use super::read::{Form, Link};

pub use classify::classify;

/// Longest title kept, in characters.
const MAX_TITLE: usize = 300;

/// What a page holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    pub title: String,
    pub text: String,
    pub links: Vec<Link>,
    pub forms: Vec<Form>,
}

/// Reads `html`, resolving relative links against `base` (or the page's `<base href>`).
pub fn extract(html: &str, base: &Url) -> Extracted {
    let doc = Html::parse_document(&depth::cap_nesting(html));
    let link_base = links::document_base(&doc, base);
    Extracted {
        title: title(&doc),
        text: text::text(&doc),
        links: links::links(&doc, &link_base),
        forms: forms::forms(&doc, &link_base, base),
    }
}

/// The `<title>`, else the first `<h1>`, on one line.
fn title(doc: &Html) -> String {
    let named = |name: &str| {
        doc.root_element()
            .descendent_elements()
            .find(|e| e.value().name().eq_ignore_ascii_case(name))
            .map(|e| clean::one_line(&e.text().collect::<String>(), MAX_TITLE))
            .filter(|t| !t.is_empty())
    };
    named("title").or_else(|| named("h1")).unwrap_or_default()
}

/// A `text/plain` body as page text: control and bidi characters removed, line breaks kept,
/// spaces within a line collapsed, runs of blank lines cut to one.
pub(crate) fn plain_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = clean::one_line(line, usize::MAX);
        if line.is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        out.push_str(&line);
    }
    out
}
