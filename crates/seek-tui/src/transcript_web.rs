//! The web agent's events in the transcript: a pane per search, page read and form submitted,
//! the browser's start as a notice, and each note inside the pane of the page it was taken on.
//!
//! Pure state, as the transcript; it must not draw. A note finds its pane among the panes of
//! the agent whose event it is (the task's, or a plan step's section): the newest page read at
//! its URL, or the newest search when it has none. A note with no such pane is a notice of its
//! own, so no note is ever lost.

use super::{Item, Transcript};
use crate::terminal_safe::web_safe;
use crate::web_pane::{PageRead, WebBody, WebPane};
use crate::wire::Event;

impl Transcript {
    /// One of the web agent's events (others are ignored).
    pub(super) fn web_event(&mut self, event: &Event) {
        let body = match event {
            Event::BrowserStarted {
                engine,
                detail,
                elapsed_ms,
            } => {
                // The driver's words: one line, however they came.
                let line = format!("browser: {engine} {detail}");
                let line = web_safe(&line)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                self.push(Item::Notice(format!("{line} started in {elapsed_ms} ms")));
                return;
            }
            Event::Note { url, text, .. } => {
                self.note(url.as_deref(), text);
                return;
            }
            Event::WebSearch {
                step,
                query,
                backend,
                results,
                error,
                elapsed_ms,
            } => (
                *step,
                WebBody::Search {
                    query: query.clone(),
                    backend: backend.clone(),
                    results: results.clone(),
                    error: error.clone(),
                    elapsed_ms: *elapsed_ms,
                },
            ),
            Event::PageRead {
                step,
                url,
                final_url,
                title,
                engine,
                kind,
                status,
                text,
                chars,
                cut,
                links,
                forms,
                error,
                elapsed_ms,
            } => (
                *step,
                WebBody::Page(Box::new(PageRead {
                    url: url.clone(),
                    final_url: final_url.clone(),
                    title: title.clone(),
                    engine: engine.clone(),
                    kind: *kind,
                    status: *status,
                    text: text.clone(),
                    chars: *chars,
                    cut: *cut,
                    links: *links,
                    forms: *forms,
                    error: error.clone(),
                    elapsed_ms: *elapsed_ms,
                })),
            ),
            Event::FormSubmitted {
                step,
                url,
                fields,
                error,
            } => (
                *step,
                WebBody::Form {
                    url: url.clone(),
                    fields: fields.clone(),
                    error: error.clone(),
                },
            ),
            _ => return,
        };
        let (web_step, body) = body;
        let pane = WebPane::new(self.step.clone(), web_step, body, self.panes_expanded);
        self.push(Item::Web(pane));
    }

    /// A note: into the pane it was taken on, or a notice of its own.
    fn note(&mut self, url: Option<&str>, text: &str) {
        let home = (self.task_start..self.items.len()).rev().find(|&i| {
            matches!(&self.items[i], Item::Web(pane) if pane.step == self.step && match url {
                Some(url) => pane.is_page_of(url),
                None => pane.is_search(),
            })
        });
        match home {
            Some(at) => {
                if let Item::Web(pane) = &mut self.items[at] {
                    pane.notes.push(text.to_owned());
                }
                self.touch(at);
            }
            None => self.push(Item::Notice(format!("note: {}", web_safe(text)))),
        }
    }
}
