//! `seek -p`'s plain progress for the web agent: a line for the browser's start, each search,
//! each page read, each form submitted and each note taken.
//!
//! Lines only: printing them (terminal-safe) is `super::say`'s; it must not print. Every text
//! here came from a page, a search backend or the model: it is cut to one line here and loses
//! its bidi controls, so a hostile title cannot forge or reorder a progress line.

use crate::agent::Event;
use crate::terminal_safe::web_safe;
use crate::wire::PageKind;

/// Characters of a query, URL or error shown at most.
const TEXT_CHARS: usize = 160;
/// Characters of a note shown at most (a note is what the agent kept: it gets more room).
const NOTE_CHARS: usize = 400;

/// The progress line for a web event, if it is one.
pub(super) fn web_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::BrowserStarted {
            engine,
            detail,
            elapsed_ms,
        } => {
            let detail = one_line(detail, TEXT_CHARS);
            let sep = if detail.is_empty() { "" } else { " " };
            format!(
                "seek: browser: {}{sep}{detail} started in {elapsed_ms} ms",
                one_line(engine, TEXT_CHARS)
            )
        }
        Event::WebSearch {
            query,
            results,
            error,
            ..
        } => {
            let query = one_line(query, TEXT_CHARS);
            match error {
                Some(error) => format!("seek: search: {query} ✗ {}", one_line(error, TEXT_CHARS)),
                None => format!(
                    "seek: search: {query} → {} result{}",
                    results.len(),
                    if results.len() == 1 { "" } else { "s" }
                ),
            }
        }
        Event::PageRead {
            url,
            kind,
            status,
            chars,
            cut,
            error,
            ..
        } => {
            let url = one_line(url, TEXT_CHARS);
            if let Some(error) = error {
                return Some(format!(
                    "seek: read: {url} ✗ {}",
                    one_line(error, TEXT_CHARS)
                ));
            }
            let kind = match (kind, status) {
                (PageKind::Error, Some(status)) => format!("error {status}"),
                (PageKind::Captcha, _) => "CAPTCHA".to_owned(),
                (kind, _) => kind.as_str().to_owned(),
            };
            format!(
                "seek: read: {url} ({kind}, {chars} chars{})",
                if *cut { ", cut" } else { "" }
            )
        }
        Event::FormSubmitted {
            url, fields, error, ..
        } => {
            let mut line = format!(
                "seek: form: {} ({} field{})",
                one_line(url, TEXT_CHARS),
                fields.len(),
                if fields.len() == 1 { "" } else { "s" }
            );
            if let Some(error) = error {
                line.push_str(&format!(" ✗ {}", one_line(error, TEXT_CHARS)));
            }
            line
        }
        Event::Note { text, .. } => format!("seek: note: {}", one_line(text, NOTE_CHARS)),
        _ => return None,
    })
}

/// `text` safe, on one line (its whitespace runs become one space), at most `limit` chars.
fn one_line(text: &str, limit: usize) -> String {
    let safe = web_safe(text);
    let line = safe.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= limit {
        return line;
    }
    let mut cut: String = line.chars().take(limit.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{WebField, WebHit};

    fn hit(n: u32) -> WebHit {
        WebHit {
            title: format!("title {n}"),
            snippet: "snippet".into(),
            link: format!("https://example.org/{n}"),
        }
    }

    fn page(kind: PageKind, status: Option<u16>, error: Option<&str>) -> Event {
        Event::PageRead {
            step: 2,
            url: "http://127.0.0.1:8080/article.html".into(),
            final_url: "http://127.0.0.1:8080/article.html".into(),
            title: "An article".into(),
            engine: "http".into(),
            kind,
            status,
            text: "the text".into(),
            chars: 1234,
            cut: kind == PageKind::Content,
            links: 3,
            forms: 0,
            error: error.map(str::to_owned),
            elapsed_ms: 40,
        }
    }

    #[test]
    fn each_web_step_is_one_line() {
        let lines: Vec<Option<String>> = [
            Event::BrowserStarted {
                engine: "chromium".into(),
                detail: "148.0.7778.0".into(),
                elapsed_ms: 812,
            },
            Event::WebSearch {
                step: 1,
                query: "rust async book".into(),
                backend: "searxng".into(),
                results: vec![hit(1), hit(2), hit(3)],
                error: None,
                elapsed_ms: 310,
            },
            Event::WebSearch {
                step: 1,
                query: "x".into(),
                backend: "searxng".into(),
                results: Vec::new(),
                error: Some("the search engine is unreachable".into()),
                elapsed_ms: 3,
            },
            page(PageKind::Content, Some(200), None),
            page(PageKind::Captcha, Some(200), None),
            page(PageKind::Error, Some(404), None),
            page(PageKind::Content, None, Some("timed out after 20 s")),
            Event::FormSubmitted {
                step: 3,
                url: "http://127.0.0.1:8080/login.html".into(),
                fields: vec![
                    WebField {
                        name: "user".into(),
                        value: "ada".into(),
                    },
                    WebField {
                        name: "password".into(),
                        value: "hunter2".into(),
                    },
                ],
                error: None,
            },
            Event::Note {
                step: 4,
                url: None,
                text: "the book is at\nrust-lang.github.io".into(),
            },
            Event::Usage {
                round: 1,
                usage: Default::default(),
            },
        ]
        .iter()
        .map(web_line)
        .collect();
        let expected = [
            Some("seek: browser: chromium 148.0.7778.0 started in 812 ms"),
            Some("seek: search: rust async book → 3 results"),
            Some("seek: search: x ✗ the search engine is unreachable"),
            Some("seek: read: http://127.0.0.1:8080/article.html (content, 1234 chars, cut)"),
            Some("seek: read: http://127.0.0.1:8080/article.html (CAPTCHA, 1234 chars)"),
            Some("seek: read: http://127.0.0.1:8080/article.html (error 404, 1234 chars)"),
            Some("seek: read: http://127.0.0.1:8080/article.html ✗ timed out after 20 s"),
            Some("seek: form: http://127.0.0.1:8080/login.html (2 fields)"),
            Some("seek: note: the book is at rust-lang.github.io"),
            None,
        ];
        assert_eq!(lines, expected.map(|l| l.map(str::to_owned)));
        assert!(!lines.iter().flatten().any(|l| l.contains("hunter2")));
    }

    #[test]
    fn hostile_text_cannot_forge_or_reorder_a_line() {
        let line = web_line(&Event::WebSearch {
            step: 1,
            query: "a\n\rseek: done\x1b[2J\u{202e}evil\u{2066}".into(),
            backend: "searxng".into(),
            results: Vec::new(),
            error: None,
            elapsed_ms: 1,
        })
        .unwrap_or_default();
        assert_eq!(line, "seek: search: a seek: doneevil → 0 results");
        let long = web_line(&Event::Note {
            step: 1,
            url: None,
            text: "x".repeat(10_000),
        })
        .unwrap_or_default();
        assert_eq!(long.chars().count(), "seek: note: ".len() + NOTE_CHARS);
    }
}
