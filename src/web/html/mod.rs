//! HTML to what a model can read: markdown-ish text (headings, paragraphs, lists, tables, link
//! texts; scripts, styles, navigation and footer boilerplate dropped), the page's links
//! (absolute, http(s) only, de-duplicated) and its forms with their fields; and whether a page
//! is a CAPTCHA wall or an error page.
//!
//! Pure: both page readers (plain HTTP and Chromium's rendered DOM) call it. It must not
//! fetch anything.

use reqwest::Url;

use super::read::{Form, Link};
use crate::wire::PageKind;

/// What a page holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    pub title: String,
    pub text: String,
    pub links: Vec<Link>,
    pub forms: Vec<Form>,
}

/// Reads `html`, resolving relative links against `base`.
pub fn extract(html: &str, base: &Url) -> Extracted {
    let _ = (html, base);
    Extracted::default()
}

/// What a page is, from its HTTP status (when known), title and extracted text.
pub fn classify(status: Option<u16>, title: &str, text: &str) -> PageKind {
    let _ = (status, title, text);
    PageKind::Content
}
