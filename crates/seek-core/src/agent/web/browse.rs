//! The web agent's loop state and steps: where it is (the search results or a page), what it
//! visited and noted, the browser it started, and one method per thing a step does.
//!
//! It must not build prompt text (`crate::agents::web::prompt`) or read answers
//! (`crate::agents::web::parse`).

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::agent::context::TurnContext;
use crate::agent::memory::Memory;
use crate::agent::reply::{ReplyError, Shape, stream_reply};
use crate::agent::usage;
use crate::agents::web::parse::{self, Answer};
use crate::agents::web::prompt;
use crate::llm::Role;
use crate::web::search;
use crate::web::{Page, PageReader, SearchHit, UrlPolicy};
use crate::wire::{Event, Outcome, Status, TurnUsage, WebTrail};

/// Results a search keeps (AgenticSeek's browser kept 16).
const RESULTS_KEPT: usize = crate::tools::SEARCH_LIMIT;
/// Searches that found nothing before the task gives up.
const MAX_EMPTY_SEARCHES: u32 = 2;

/// How the loop ended.
pub(super) enum Ended {
    Done,
    /// `max_steps` reached; the answer was still written from the notes.
    StepCap(String),
    Stopped,
    /// The model server failed (said as an `Error` event already).
    ModelError(String),
    /// Nothing could be done (no search engine, no browser): the message says why and what to do.
    Failed(String),
}

/// What the next step does.
enum Next {
    Search,
    Open {
        url: String,
        before: Option<String>,
    },
    /// Ask the model where it is now, `before` said first.
    Decide {
        before: Option<String>,
    },
}

mod pages;

/// The page the agent is on.
struct Current {
    page: Page,
}

pub(super) struct Browse<'a> {
    ctx: &'a TurnContext,
    cancel: &'a CancellationToken,
    system: String,
    /// The request as the model gets it (with attachments).
    request: String,
    policy: Arc<UrlPolicy>,
    /// The user's own links, opened first instead of a search.
    user_links: Vec<String>,
    reader: Option<Box<dyn PageReader>>,
    hits: Vec<SearchHit>,
    searched: bool,
    empty_searches: u32,
    /// Every URL asked for and where it led, for "never twice".
    history: Vec<String>,
    current: Option<Current>,
    trail: WebTrail,
    /// Pages a note was taken on, in order, for the sources line.
    noted_on: Vec<String>,
    step: u32,
    calls: u32,
    last_answer: String,
    last_reasoning: Option<String>,
    final_answer: String,
    usage: Option<TurnUsage>,
    window: u64,
}

impl<'a> Browse<'a> {
    pub(super) fn new(
        ctx: &'a TurnContext,
        cancel: &'a CancellationToken,
        system: String,
        request: String,
        user_prompt: &str,
    ) -> Self {
        let mut policy = UrlPolicy::new(ctx.config.web.allow_private.value);
        policy.trust_hosts_in(user_prompt);
        let user_links = parse::extract_links(user_prompt)
            .iter()
            .map(|l| parse::absolute(l))
            .collect();
        Self {
            ctx,
            cancel,
            system,
            request,
            policy: Arc::new(policy),
            user_links,
            reader: None,
            hits: Vec::new(),
            searched: false,
            empty_searches: 0,
            history: Vec::new(),
            current: None,
            trail: WebTrail::default(),
            noted_on: Vec::new(),
            step: 0,
            calls: 0,
            last_answer: String::new(),
            last_reasoning: None,
            final_answer: String::new(),
            usage: None,
            window: 0,
        }
    }

    pub(super) async fn run(&mut self) -> Ended {
        let window = tokio::select! {
            () = self.cancel.cancelled() => return Ended::Stopped,
            window = crate::agent::window::known(self.ctx) => window,
        };
        self.window = window;
        let max_steps = u32::try_from(self.ctx.config.web.max_steps.value).unwrap_or(u32::MAX);
        let mut next = match self.user_links.first() {
            Some(url) => Next::Open {
                url: url.clone(),
                before: None,
            },
            None => Next::Search,
        };
        loop {
            if self.cancel.is_cancelled() {
                return Ended::Stopped;
            }
            next = match next {
                Next::Open { url, before } => self.open(url, before).await,
                step if self.step >= max_steps => {
                    drop(step);
                    let message = format!(
                        "stopped after {} steps without concluding ([web] max_steps = {max_steps}); the answer is written from the notes taken",
                        self.step
                    );
                    return match self.conclude().await {
                        Ended::Done => Ended::StepCap(message),
                        other => other,
                    };
                }
                Next::Search => match self.search().await {
                    Ok(Some(next)) => next,
                    Ok(None) => return self.conclude().await,
                    Err(ended) => return ended,
                },
                Next::Decide { before } => match self.decide(before).await {
                    Ok(Some(next)) => next,
                    Ok(None) => return self.conclude().await,
                    Err(ended) => return ended,
                },
            };
        }
    }

    /// Asks for a query and searches it. `None`: the model asked to stop.
    async fn search(&mut self) -> Result<Option<Next>, Ended> {
        // Without a search engine there is nothing to ask the model for.
        let backend = match search::backend(&self.ctx.config.web) {
            Ok(backend) => backend,
            Err(error) => return Err(Ended::Failed(error.to_string())),
        };
        let date = today();
        let answer = self
            .ask(prompt::search_prompt(&self.request, &date))
            .await?;
        if answer.contains(parse::REQUEST_EXIT) && !self.searched {
            return Ok(None);
        }
        let query = parse::query_in(&answer)
            .or_else(|| crate::tools::query_of(&self.request))
            .unwrap_or_default();
        self.searched = true;
        self.trail.queries.push(query.clone());
        self.status("web_search");
        let started = Instant::now();
        let found = tokio::select! {
            () = self.cancel.cancelled() => return Err(Ended::Stopped),
            found = backend.search(&query, RESULTS_KEPT) => found,
        };
        let (results, error) = match found {
            Ok(hits) => (hits, None),
            Err(error) => (Vec::new(), Some(error.to_string())),
        };
        self.ctx.events.emit(Event::WebSearch {
            step: self.step,
            query: query.clone(),
            backend: backend.name().to_owned(),
            results: results.clone(),
            error: error.clone(),
            elapsed_ms: elapsed_ms(started),
        });
        if let Some(error) = error {
            return Err(Ended::Failed(error));
        }
        if results.is_empty() {
            self.empty_searches += 1;
            if self.empty_searches >= MAX_EMPTY_SEARCHES {
                return Err(Ended::Failed(format!(
                    "No search results, web search failed (last query: {query:?})"
                )));
            }
            return Ok(Some(Next::Search));
        }
        self.hits = results;
        self.current = None;
        Ok(Some(Next::Decide { before: None }))
    }

    /// One decision of the model where it is; `None` when it concludes.
    async fn decide(&mut self, before: Option<String>) -> Result<Option<Next>, Ended> {
        let asked = self.prompt_here(before.as_deref());
        let mut answer = self.ask(asked).await?;
        if answer.trim() == self.last_step_answer().trim() && !answer.trim().is_empty() {
            answer = self.ask(self.prompt_here(Some(prompt::STUCK))).await?;
        }
        self.remember_answer(&answer);
        let parsed = parse::parse_answer(&answer);
        self.take_notes(&parsed);
        if parsed.exit {
            return Ok(None);
        }
        if let Some(fields) = self.fields_for_page(&parsed) {
            return Ok(Some(self.fill(fields).await?));
        }
        if parsed.go_back {
            self.current = None;
            if self.hits.is_empty() {
                return Ok(Some(Next::Search));
            }
            return Ok(Some(Next::Decide { before: None }));
        }
        let links: Vec<String> = parsed.links.iter().map(|l| parse::absolute(l)).collect();
        let current = self.current.as_ref().map(|c| c.page.url.as_str());
        match parse::select_link(&links, &self.history, current) {
            Some(link) => Ok(Some(Next::Open {
                url: link.clone(),
                before: None,
            })),
            None if !links.is_empty() => Ok(Some(Next::Decide {
                before: Some(format!(
                    "{} was read already: choose a link you have not opened, GO_BACK, or REQUEST_EXIT.",
                    links[0]
                )),
            })),
            None if self.nothing_left() => Ok(None),
            None => Ok(Some(Next::Decide {
                before: Some(
                    "You did not choose a link. Write I will navigate to <link> with a link from the list, GO_BACK, or REQUEST_EXIT."
                        .into(),
                ),
            })),
        }
    }

    fn take_notes(&mut self, parsed: &Answer) {
        let url = self.current.as_ref().map(|c| c.page.url.clone());
        for note in &parsed.notes {
            if self.trail.notes.contains(note) {
                continue;
            }
            self.trail.notes.push(note.clone());
            self.ctx.events.emit(Event::Note {
                step: self.step,
                url: url.clone(),
                text: note.clone(),
            });
            if let Some(url) = &url
                && !self.noted_on.contains(url)
            {
                self.noted_on.push(url.clone());
            }
        }
    }

    fn last_step_answer(&self) -> &str {
        &self.last_answer
    }

    fn remember_answer(&mut self, answer: &str) {
        answer.clone_into(&mut self.last_answer);
    }

    /// The final answer, written from the notes.
    async fn conclude(&mut self) -> Ended {
        let asked = prompt::conclude_prompt(&self.request, &self.trail.notes, &self.trail.visited);
        match self.ask(asked).await {
            Ok(answer) => {
                self.final_answer = with_sources(answer, &self.noted_on);
                Ended::Done
            }
            Err(ended) => ended,
        }
    }

    /// One model call in a fresh conversation: the web agent's system prompt and `prompt`.
    async fn ask(&mut self, prompt: String) -> Result<String, Ended> {
        self.step += 1;
        self.calls += 1;
        let max_steps = u32::try_from(self.ctx.config.web.max_steps.value).unwrap_or(u32::MAX);
        self.ctx.events.emit(Event::Status {
            status: Status::Thinking,
            round: self.calls,
            attempt: 0,
            max_attempts: max_steps,
        });
        let mut memory = Memory::new(self.system.clone());
        memory.push(Role::User, prompt);
        let reply = match stream_reply(
            self.ctx,
            &memory,
            self.window,
            self.cancel,
            Shape::default(),
        )
        .await
        {
            Ok(reply) => reply,
            Err((ReplyError::Stopped, _)) => return Err(Ended::Stopped),
            Err((error, _)) => {
                let message = error.to_string();
                self.ctx.events.emit(Event::Error {
                    message: message.clone(),
                });
                return Err(Ended::ModelError(message));
            }
        };
        let round_usage = reply.usage(self.window);
        self.last_reasoning = Some(reply.reasoning.trim().to_owned()).filter(|r| !r.is_empty());
        self.ctx.events.emit(Event::AnswerComplete {
            round: self.calls,
            answer: reply.answer.clone(),
            reasoning: self.last_reasoning.clone(),
            blocks: 0,
            finish: crate::llm::answer_finish(reply.finish.as_ref()),
        });
        self.ctx.events.emit(Event::Usage {
            round: self.calls,
            usage: round_usage,
        });
        self.usage = Some(usage::add(self.usage, &round_usage));
        Ok(reply.answer)
    }

    fn status(&self, tool: &str) {
        self.ctx.events.emit(Event::Status {
            status: Status::Executing {
                tool: tool.to_owned(),
            },
            round: self.calls,
            attempt: 0,
            max_attempts: u32::try_from(self.ctx.config.web.max_steps.value).unwrap_or(u32::MAX),
        });
    }

    /// Ends the browser (its processes killed and waited for).
    pub(super) async fn close(&mut self) {
        if let Some(mut reader) = self.reader.take() {
            reader.close().await;
        }
    }

    /// The task's `TurnFinished`.
    pub(super) fn finish(self, turn: u64, outcome: Outcome, message: Option<String>) -> Event {
        let answer = if self.final_answer.is_empty() {
            self.last_answer
        } else {
            self.final_answer
        };
        Event::TurnFinished {
            turn,
            outcome,
            answer,
            reasoning: self.last_reasoning,
            agent: crate::wire::AgentName::Web,
            rounds: self.calls,
            blocks: Vec::new(),
            message,
            usage: self.usage,
            plan: None,
            web: Some(self.trail),
        }
    }
}

/// The answer, with the pages its notes came from when it does not name them.
fn with_sources(answer: String, noted_on: &[String]) -> String {
    let missing: Vec<&String> = noted_on
        .iter()
        .filter(|url| !answer.contains(url.as_str()))
        .collect();
    if missing.is_empty() {
        return answer;
    }
    let mut out = answer.trim_end().to_owned();
    out.push_str("\n\nSources:");
    for url in missing {
        out.push_str("\n- ");
        out.push_str(url);
    }
    out
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Today as AgenticSeek wrote it: `December 01, 2026`.
fn today() -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    let (year, month, day) = crate::log::civil_from_days(i64::try_from(days).unwrap_or(0));
    let name = MONTHS
        .get(usize::try_from(month).unwrap_or(1).saturating_sub(1))
        .copied()
        .unwrap_or("January");
    format!("{name} {day:02}, {year}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_added_only_when_the_answer_lacks_them() {
        let pages = vec!["https://a.example/x".to_owned()];
        assert_eq!(
            with_sources("See https://a.example/x.".into(), &pages),
            "See https://a.example/x."
        );
        assert_eq!(
            with_sources("Quokkas eat grass.".into(), &pages),
            "Quokkas eat grass.\n\nSources:\n- https://a.example/x"
        );
    }

    #[test]
    fn the_date_reads_like_agenticseeks() {
        let date = today();
        assert!(date.contains(", 20"), "{date}");
    }
}
