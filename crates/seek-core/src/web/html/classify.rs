//! What kind of page was read: an error page (HTTP 4xx/5xx, or a tiny "not found" page served
//! with 200), a CAPTCHA or bot wall, an empty page, or content.
//!
//! Pure; it judges only the status, title and extracted text it is given.

use crate::wire::PageKind;

/// Pages longer than this (in characters of text) are content even if they mention a CAPTCHA:
/// an article about CAPTCHAs is not a wall.
const SHORT_PAGE_CHARS: usize = 3000;
/// A "not found" title on a page shorter than this is an error page served with status 200.
const TINY_PAGE_CHARS: usize = 1000;

/// Phrases of bot walls (Cloudflare, reCAPTCHA, hCaptcha, Turnstile, Google's "unusual
/// traffic").
const CAPTCHA_MARKERS: &[&str] = &[
    "captcha",
    "checking your browser",
    "checking if the site connection is secure",
    "verify you are human",
    "verify that you are human",
    "are you a robot",
    "not a robot",
    "i'm not a robot",
    "turnstile",
    "unusual traffic from your computer",
    "press & hold",
];

const NOT_FOUND_TITLES: &[&str] = &["404", "not found", "page not found", "no such page"];

/// What a page is, from its HTTP status (when known), title and extracted text.
pub fn classify(status: Option<u16>, title: &str, text: &str) -> PageKind {
    if status.is_some_and(|s| s >= 400) {
        return PageKind::Error;
    }
    let length = text.chars().count();
    if length < SHORT_PAGE_CHARS {
        let haystack = format!("{title}\n{text}").to_lowercase();
        if CAPTCHA_MARKERS.iter().any(|m| haystack.contains(m)) {
            return PageKind::Captcha;
        }
    }
    if length < TINY_PAGE_CHARS {
        let title = title.to_lowercase();
        if NOT_FOUND_TITLES.iter().any(|m| title.contains(m)) {
            return PageKind::Error;
        }
    }
    if text.trim().is_empty() {
        return PageKind::Empty;
    }
    PageKind::Content
}
