//! The links of a page: every `a[href]` resolved against the page's base, kept only when it is
//! http(s), without its fragment, de-duplicated, in page order, with a one-line text.
//!
//! Pure; it must not decide whether a link may be opened (the URL policy does).

use std::collections::HashMap;

use reqwest::Url;
use scraper::Html;

use super::clean::one_line;
use crate::web::read::Link;

/// Longest link text kept, in characters.
pub(crate) const MAX_LINK_TEXT: usize = 100;

/// The links of `doc`, resolved against `base`.
pub(crate) fn links(doc: &Html, base: &Url) -> Vec<Link> {
    let mut out: Vec<Link> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for element in doc.root_element().descendent_elements() {
        if !element.value().name().eq_ignore_ascii_case("a") {
            continue;
        }
        let Some(url) = element.attr("href").and_then(|href| resolve(base, href)) else {
            continue;
        };
        let mut text = one_line(&element.text().collect::<String>(), MAX_LINK_TEXT);
        if text.is_empty() {
            // An icon link: its label, or the alt text of its image.
            let label = element
                .attr("aria-label")
                .or_else(|| element.attr("title"))
                .or_else(|| {
                    element
                        .descendent_elements()
                        .find_map(|e| e.value().attr("alt"))
                })
                .unwrap_or_default();
            text = one_line(label, MAX_LINK_TEXT);
        }
        match seen.get(&url) {
            Some(&index) => {
                if out[index].text.is_empty() {
                    out[index].text = text;
                }
            }
            None => {
                seen.insert(url.clone(), out.len());
                out.push(Link { text, url });
            }
        }
    }
    out
}

/// `href` made absolute against `base`, without fragment; `None` unless it is http(s).
pub(crate) fn resolve(base: &Url, href: &str) -> Option<String> {
    let mut url = base.join(href.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return None;
    }
    url.set_fragment(None);
    Some(url.into())
}

/// The base links resolve against: the page's `<base href>` when it is http(s), else `page`.
pub(crate) fn document_base(doc: &Html, page: &Url) -> Url {
    doc.root_element()
        .descendent_elements()
        .find(|e| e.value().name().eq_ignore_ascii_case("base") && e.attr("href").is_some())
        .and_then(|e| e.attr("href"))
        .and_then(|href| page.join(href.trim()).ok())
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .unwrap_or_else(|| page.clone())
}
