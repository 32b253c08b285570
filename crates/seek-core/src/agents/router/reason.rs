//! Why the router picked an agent, in a few words for a status line: the prompt's words that
//! pushed hardest towards it ("words: search, web"; for the planner "several steps: then,
//! report").
//!
//! Pure; it must not decide the agent, only explain the classifier's choice.

use super::features::Features;
use super::model::Model;
use crate::wire::AgentName;

/// How many words a reason names.
const WORDS_NAMED: usize = 2;

/// Why the router picks `agent`, in plain words for a user: what the prompt asks for (its
/// declaration's; `auto`'s is the coder's).
pub fn plain(agent: AgentName) -> &'static str {
    crate::agents::spec(agent).routing.because
}

/// The reason `model` chose `label` (at `class` in `data::LABELS`) for a prompt with `features`.
pub fn explain(model: &Model, features: &Features, class: usize, label: AgentName) -> String {
    let mut leaning: Vec<(f32, &str)> = features
        .named
        .iter()
        .map(|named| (model.lean(named.bucket, class), named.text.as_str()))
        .filter(|(lean, _)| *lean > 0.0)
        .collect();
    // Strongest first; equal leans in text order, so the phrase never depends on anything but
    // the prompt and the weights.
    leaning.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let words: Vec<&str> = leaning
        .into_iter()
        .take(WORDS_NAMED)
        .map(|(_, w)| w)
        .collect();
    let kind = crate::agents::spec(label).routing.cues;
    if words.is_empty() {
        "the phrasing as a whole".to_owned()
    } else {
        format!("{kind}: {}", words.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_is_explained_in_its_own_words() {
        for (agent, because) in [
            (AgentName::Coder, "asks to write or run code"),
            (AgentName::Auto, "asks to write or run code"),
            (AgentName::File, "asks about files"),
            (AgentName::Casual, "a question or a chat, no code needed"),
            (AgentName::Web, "needs the web"),
            (AgentName::Planner, "several steps"),
        ] {
            assert_eq!(plain(agent), because, "{agent}");
        }
    }
}
