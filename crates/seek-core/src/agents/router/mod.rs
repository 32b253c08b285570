//! The router: picks the agent for a prompt when the user did not name one (`auto`), locally
//! and deterministically, with no model call: a logistic-regression classifier over word and
//! character n-grams, trained once at first use from the labelled prompts in
//! `assets/router/train.tsv` (compiled in).
//!
//! On top of the classifier: a prompt it is unsure of goes to the coder (the agent that can do
//! the most alone), or to casual when it is a very short one ("hi").
//!
//! Pure (no I/O, no clock, no randomness); it must not run agents or know the terminal.

pub mod data;
mod features;
mod model;
mod reason;

use std::sync::OnceLock;

use crate::wire::{AgentName, Route};
use data::{DataError, LABELS};
use model::{Model, argmax};

/// Below this probability for its top label the classifier is "unsure" and the coder gets the
/// task. Chosen on the held-apart set: nearly every wrong top label there scores below it,
/// nearly every right one above it.
pub const UNSURE_BELOW: f64 = 0.45;

/// A prompt of at most this many chars that the classifier is unsure of is small talk ("hi",
/// "thanks", "ok"): it goes to casual, not to the coder.
pub(crate) const SHORT_PROMPT_CHARS: usize = 12;

const TRAINING_SET: &str = include_str!("../../../../../assets/router/train.tsv");

/// What the classifier alone says about a prompt, for measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    /// The label with the highest probability (the first in `data::LABELS` on a tie).
    pub agent: AgentName,
    /// That label's probability, 0 to 1.
    pub confidence: f64,
    /// Every label's probability, in `data::LABELS` order.
    pub scores: [(AgentName, f64); LABELS.len()],
}

/// The agent for `prompt`, how sure the router is, and why (a short phrase for a status line).
pub fn route(prompt: &str) -> Route {
    let model = match trained() {
        Ok(model) => model,
        Err(error) => {
            return Route {
                agent: AgentName::Coder,
                confidence: 0.0,
                reason: format!("router data invalid ({error}): coder"),
                why: "the router could not decide; the coder can do the most".into(),
            };
        }
    };
    let features = features::extract(prompt);
    let probabilities = model.probabilities(&features);
    let top = argmax(&probabilities);
    let (label, confidence) = (LABELS[top], probabilities[top]);

    if confidence < UNSURE_BELOW {
        let short = prompt.trim().chars().count() <= SHORT_PROMPT_CHARS;
        let agent = if short {
            AgentName::Casual
        } else {
            AgentName::Coder
        };
        let why = if short { "short, unsure" } else { "unsure" };
        return Route {
            agent,
            confidence,
            reason: format!("{why} ({label} {confidence:.2}): {agent}"),
            why: if short {
                "a short message".into()
            } else {
                "not sure which agent fits; the coder can do the most".into()
            },
        };
    }
    Route {
        agent: label,
        confidence,
        reason: reason::explain(model, &features, top, label),
        why: reason::plain(label).into(),
    }
}

/// A web task needs a search engine unless it names the page to read: without one
/// (`[web] searxng_url` unset) the task goes to the coder, which can fetch a known URL, and the
/// reason says why.
pub(crate) fn unless_web_cannot_search(route: Route, search_ready: bool, prompt: &str) -> Route {
    let names_a_page = prompt.contains("http://") || prompt.contains("https://");
    if route.agent != AgentName::Web || search_ready || names_a_page {
        return route;
    }
    Route {
        agent: AgentName::Coder,
        confidence: route.confidence,
        reason: "web, but no search engine is configured ([web] searxng_url): coder".into(),
        why: "needs the web, but no search engine is configured ([web] searxng_url)".into(),
    }
}

/// What the classifier says about `prompt`, before the fallbacks `route` applies (an
/// unavailable agent stays; a low confidence stays). A broken training set classifies every
/// prompt as the coder with confidence 0.
pub fn classify(prompt: &str) -> Classification {
    let Ok(model) = trained() else {
        return Classification {
            agent: AgentName::Coder,
            confidence: 0.0,
            scores: LABELS.map(|agent| (agent, 0.0)),
        };
    };
    let probabilities = model.probabilities(&features::extract(prompt));
    let top = argmax(&probabilities);
    let mut scores = LABELS.map(|agent| (agent, 0.0));
    for (score, p) in scores.iter_mut().zip(probabilities) {
        score.1 = p;
    }
    Classification {
        agent: LABELS[top],
        confidence: probabilities[top],
        scores,
    }
}

/// Trains the classifier now rather than at the first routed prompt (for a bench or a warm
/// start); the result is kept either way.
pub fn warm_up() -> Result<(), DataError> {
    trained().map(|_| ()).map_err(Clone::clone)
}

/// Trains a fresh classifier on `training_set` (lines `agent<TAB>prompt`) and classifies
/// `prompt` with it: for measuring training time and for tests of other sets. `route` and
/// `classify` use the shipped set, trained once.
pub fn train_and_classify(training_set: &str, prompt: &str) -> Result<AgentName, DataError> {
    let model = Model::train(&data::parse(training_set)?);
    let probabilities = model.probabilities(&features::extract(prompt));
    Ok(LABELS[argmax(&probabilities)])
}

/// The classifier, trained on the first call.
fn trained() -> Result<&'static Model, &'static DataError> {
    static MODEL: OnceLock<Result<Model, DataError>> = OnceLock::new();
    MODEL
        .get_or_init(|| data::parse(TRAINING_SET).map(|examples| Model::train(&examples)))
        .as_ref()
}

#[cfg(test)]
mod tests;
