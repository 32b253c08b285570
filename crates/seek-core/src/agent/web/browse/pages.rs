//! The web agent's page side: opening a page (policy first, the browser started on first use),
//! recording what was read, the prompt for where the agent is, and filling forms.
//!
//! It must not ask the model (the loop in `browse.rs` does).

use std::sync::Arc;
use std::time::Instant;

use super::super::text::{cut_to, page_budget};
use super::{Browse, Current, Ended, Next, elapsed_ms};
use crate::agents::web::parse::{self, Answer};
use crate::agents::web::prompt::{self, PageView};
use crate::web::Page;
use crate::web::read::SCREENSHOT_FILE;
use crate::wire::{Event, WebField};

impl Browse<'_> {
    /// Opens `url` (checked by the policy) and reads it; then the model decides.
    pub(super) async fn open(&mut self, url: String, before: Option<String>) -> Next {
        let checked = match self.policy.check(&url) {
            Ok(checked) => checked,
            Err(refused) => {
                return self.back_with(format!("{refused}"), before);
            }
        };
        if self.reader.is_none()
            && let Err(why) = self.start_reader().await
        {
            return self.back_with(why, before);
        }
        self.status("browser");
        self.history.push(url.clone());
        let Some(reader) = self.reader.as_mut() else {
            return self.back_with("no browser is running".into(), before);
        };
        let started = Instant::now();
        let read = tokio::select! {
            () = self.cancel.cancelled() => return Next::Decide { before: None },
            read = reader.open(&checked) => read,
        };
        let page = match read {
            Ok(page) => page,
            Err(error) => {
                self.page_failed(&url, &error.to_string(), elapsed_ms(started));
                return self.back_with(format!("{url} could not be read: {error}"), before);
            }
        };
        self.page_read(&url, page, elapsed_ms(started));
        self.keep_screenshot().await;
        Next::Decide { before }
    }

    /// After a page could not be opened: back where the agent was, saying why.
    pub(super) fn back_with(&mut self, why: String, before: Option<String>) -> Next {
        let why = match before {
            Some(before) => format!("{before}\n\n{why}"),
            None => why,
        };
        if self.current.is_none() && self.hits.is_empty() && !self.searched {
            // The user's own link failed before any search: search instead, and say why.
            self.ctx.events.emit(Event::Error {
                message: why.clone(),
            });
            return Next::Search;
        }
        Next::Decide { before: Some(why) }
    }

    pub(super) async fn start_reader(&mut self) -> Result<(), String> {
        self.status("browser");
        let settings = &self.ctx.config.web;
        let started = tokio::select! {
            () = self.cancel.cancelled() => return Err("stopped".into()),
            started = crate::web::open_reader(settings, Arc::clone(&self.policy), &self.ctx.env_remove) => started,
        };
        match started {
            Ok(start) => {
                let engine = start.reader.engine().as_str().to_owned();
                self.ctx.events.emit(Event::BrowserStarted {
                    engine: engine.clone(),
                    detail: start.detail,
                    elapsed_ms: u64::try_from(start.elapsed.as_millis()).unwrap_or(u64::MAX),
                });
                self.trail.engine = Some(engine);
                self.reader = Some(start.reader);
                Ok(())
            }
            Err(error) => Err(error.to_string()),
        }
    }

    /// Records a page read: the event with the text as the model gets it, the trail.
    pub(super) fn page_read(&mut self, asked: &str, page: Page, elapsed_ms: u64) {
        if !parse::same_page(asked, &page.url) {
            self.history.push(page.url.clone());
        }
        self.trail.visited.push(page.url.clone());
        let (text, cut) = self.cut_page(&page);
        self.ctx.events.emit(Event::PageRead {
            step: self.step,
            url: asked.to_owned(),
            final_url: page.url.clone(),
            title: page.title.clone(),
            engine: self.engine_name(),
            kind: page.kind,
            status: page.status,
            text,
            chars: page.text.chars().count(),
            cut: cut || page.truncated,
            links: page.links.len(),
            forms: page.forms.len(),
            error: None,
            elapsed_ms,
        });
        self.current = Some(Current { page });
    }

    /// Under `seek serve`, the page as the browser shows it, for `/screenshot`: written beside
    /// and renamed, so a reader never sees half a file. Failing to take or keep one changes
    /// nothing else.
    async fn keep_screenshot(&mut self) {
        let Some(dir) = self.ctx.config.web.screenshots.clone() else {
            return;
        };
        let Some(reader) = self.reader.as_mut() else {
            return;
        };
        let png = tokio::select! {
            () = self.cancel.cancelled() => return,
            png = reader.screenshot() => png,
        };
        let Some(png) = png else {
            return;
        };
        // A fresh file of a random name (created exclusively, never through a link), renamed
        // over the last one.
        let _ = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            let mut partial = tempfile::NamedTempFile::new_in(&dir)?;
            std::io::Write::write_all(&mut partial, &png)?;
            partial.persist(dir.join(SCREENSHOT_FILE))?;
            Ok(())
        })
        .await;
    }

    pub(super) fn page_failed(&mut self, url: &str, error: &str, elapsed_ms: u64) {
        self.ctx.events.emit(Event::PageRead {
            step: self.step,
            url: url.to_owned(),
            final_url: url.to_owned(),
            title: String::new(),
            engine: self.engine_name(),
            kind: crate::wire::PageKind::Error,
            status: None,
            text: String::new(),
            chars: 0,
            cut: false,
            links: 0,
            forms: 0,
            error: Some(error.to_owned()),
            elapsed_ms,
        });
    }

    pub(super) fn engine_name(&self) -> String {
        self.reader
            .as_ref()
            .map_or("none", |r| r.engine().as_str())
            .to_owned()
    }

    /// The page's text cut to what this step may carry.
    pub(super) fn cut_page(&self, page: &Page) -> (String, bool) {
        let notes = self.trail.notes.join("\n");
        let limit = page_budget(
            self.window,
            self.ctx.config.model_settings.max_tokens.value,
            &[&self.system, &self.request, &notes],
        );
        cut_to(&page.text, limit)
    }

    /// The prompt for where the agent is: the page it is on, or the search results.
    pub(super) fn prompt_here(&self, before: Option<&str>) -> String {
        match &self.current {
            Some(current) => {
                let page = &current.page;
                let (text, cut) = self.cut_page(page);
                let mut listed = Vec::new();
                let mut left_out = 0;
                for link in &page.links {
                    let seen = self.history.iter().any(|h| parse::same_page(h, &link.url))
                        || parse::same_page(&link.url, &page.url);
                    if seen || listed.len() >= prompt::MAX_LINKS_LISTED {
                        left_out += 1;
                    } else {
                        listed.push((link.url.clone(), link.text.clone()));
                    }
                }
                let view = PageView {
                    url: &page.url,
                    title: &page.title,
                    kind: page.kind,
                    text: &text,
                    cut: cut || page.truncated,
                    links: &listed,
                    links_left_out: left_out,
                    forms: &page.forms,
                };
                prompt::navigation_prompt(&self.request, &view, &self.trail.notes, before)
            }
            None => {
                let left = prompt::unvisited(&self.hits, &self.history);
                prompt::results_prompt(&self.request, &left, &self.trail.notes, before)
            }
        }
    }

    /// No result left to open and no page with links.
    pub(super) fn nothing_left(&self) -> bool {
        let results_left = !prompt::unvisited(&self.hits, &self.history).is_empty();
        let page_links = self.current.as_ref().is_some_and(|c| {
            c.page
                .links
                .iter()
                .any(|l| !self.history.iter().any(|h| parse::same_page(h, &l.url)))
        });
        !results_left && !page_links && self.searched
    }

    /// The `[field](value)` pairs that name fields of a form on the current page (a markdown
    /// link `[text](url)` is not a form field).
    pub(super) fn fields_for_page(&self, parsed: &Answer) -> Option<Vec<WebField>> {
        let current = self.current.as_ref()?;
        let names: Vec<&str> = current
            .page
            .forms
            .iter()
            .flat_map(|f| f.fields.iter().map(|field| field.name.as_str()))
            .collect();
        let fields: Vec<WebField> = parsed
            .form_fields
            .iter()
            .filter(|(name, _)| {
                names.iter().any(|n| {
                    n.eq_ignore_ascii_case(name)
                        || n.to_ascii_lowercase().contains(&name.to_ascii_lowercase())
                })
            })
            .map(|(name, value)| WebField {
                name: name.clone(),
                value: value.clone(),
            })
            .collect();
        (!fields.is_empty()).then_some(fields)
    }

    /// Fills and submits the current page's form; the page it led to is next.
    pub(super) async fn fill(&mut self, fields: Vec<WebField>) -> Result<Next, Ended> {
        let url = self
            .current
            .as_ref()
            .map(|c| c.page.url.clone())
            .unwrap_or_default();
        // Masked by the field the name fills (the reader matches names by substring), not only
        // by the name the model wrote: `[word](…)` fills `password`.
        let secret_fields: Vec<String> = self
            .current
            .as_ref()
            .map(|c| {
                c.page
                    .forms
                    .iter()
                    .flat_map(|f| f.fields.iter())
                    .filter(|x| x.kind == "password" || prompt::mask_if_secret(&x.name, "x") != "x")
                    .map(|x| x.name.to_lowercase())
                    .collect()
            })
            .unwrap_or_default();
        let secret = |name: &str| {
            let wanted = name.trim().to_lowercase();
            prompt::mask_if_secret(name, "x") != "x"
                || secret_fields.iter().any(|have| {
                    have == &wanted || have.contains(&wanted) || wanted.contains(have.as_str())
                })
        };
        let shown: Vec<WebField> = fields
            .iter()
            .map(|f| WebField {
                name: f.name.clone(),
                value: if secret(&f.name) {
                    prompt::MASK.to_owned()
                } else {
                    f.value.clone()
                },
            })
            .collect();
        let pairs: Vec<(String, String)> = shown
            .iter()
            .map(|f| (f.name.clone(), f.value.clone()))
            .collect();
        self.status("browser");
        let Some(reader) = self.reader.as_mut() else {
            return Ok(Next::Decide { before: None });
        };
        let started = Instant::now();
        let submitted = tokio::select! {
            () = self.cancel.cancelled() => return Err(Ended::Stopped),
            submitted = reader.submit(&fields) => submitted,
        };
        match submitted {
            Ok(page) => {
                self.ctx.events.emit(Event::FormSubmitted {
                    step: self.step,
                    url: url.clone(),
                    fields: shown,
                    error: None,
                });
                let led_to = page.url.clone();
                self.page_read(&led_to, page, elapsed_ms(started));
                self.keep_screenshot().await;
                Ok(Next::Decide {
                    before: Some(prompt::form_filled(&url, &pairs)),
                })
            }
            Err(error) => {
                self.ctx.events.emit(Event::FormSubmitted {
                    step: self.step,
                    url: url.clone(),
                    fields: shown,
                    error: Some(error.to_string()),
                });
                Ok(Next::Decide {
                    before: Some(format!("The form could not be submitted: {error}")),
                })
            }
        }
    }
}
