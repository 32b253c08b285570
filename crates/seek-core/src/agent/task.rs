//! A task as the runtime hands it to a turn: the user's own words kept apart from the context
//! handed along with them (piped stdin), the message the model gets, and what was attached.
//!
//! Only the user's words may name `@path` files or hosts the web agent trusts; this type is
//! where the two are told apart. It must not read files or decide anything about a turn.

use crate::wire::Attachment;

/// A task as the runtime hands it over: the prompt as given (the user's words, then any context
/// handed along with them), and the message the model gets (that prompt with its `@path`
/// attachments).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The user's words and the context after them (`TurnStarted`'s `prompt`, the router's and
    /// the planner's text).
    pub prompt: String,
    pub message: String,
    pub attached: Vec<Attachment>,
    /// Files named with `@` but not attached, each with why (told to the user as an error).
    pub refused: Vec<String>,
    /// The router's choice of agent, when the task was given to `auto` (sent as `Routed`).
    pub route: Option<crate::wire::Route>,
    /// The words the user typed, whose hosts the web agent trusts and whose `@path` mentions
    /// were attached. Never the context handed along (piped stdin), a page, a tool's output or a
    /// model's reply: a plan step's prompt is the planner's and earlier steps' words, so it
    /// carries the plan's user words here.
    pub user_words: String,
}

impl Task {
    /// A prompt of the user's words with nothing attached.
    pub fn plain(prompt: impl Into<String>) -> Self {
        Self::with_context(prompt.into(), None)
    }

    /// The user's `words` and the `context` handed along as data, with nothing attached.
    pub(crate) fn with_context(words: String, context: Option<&str>) -> Self {
        let prompt = joined(&words, context);
        Self {
            message: prompt.clone(),
            user_words: words,
            prompt,
            attached: Vec::new(),
            refused: Vec::new(),
            route: None,
        }
    }
}

/// The prompt of the user's `words` and the `context` after them: either alone when the other is
/// empty, else the words, a blank line and the context.
pub fn joined(words: &str, context: Option<&str>) -> String {
    match context.filter(|c| !c.is_empty()) {
        None => words.to_owned(),
        Some(context) if words.trim().is_empty() => context.to_owned(),
        Some(context) => format!("{words}\n\n{context}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_context_join_with_a_blank_line_and_either_stands_alone() {
        assert_eq!(
            joined("why", Some("This came from stdin:\n```\nx\n```")),
            "why\n\nThis came from stdin:\n```\nx\n```"
        );
        assert_eq!(joined("", Some("explain this")), "explain this");
        assert_eq!(joined("  ", Some("explain this")), "explain this");
        assert_eq!(joined("why", None), "why");
        assert_eq!(joined("why", Some("")), "why");
    }

    #[test]
    fn the_context_is_in_the_prompt_and_the_message_but_never_the_user_words() {
        let task = Task::with_context("why".into(), Some("see @secret.txt http://127.0.0.1/"));
        assert_eq!(task.user_words, "why");
        assert!(task.prompt.contains("@secret.txt"));
        assert_eq!(task.message, task.prompt);
        let plain = Task::plain("see @notes.txt");
        assert_eq!(plain.user_words, "see @notes.txt");
        assert_eq!(plain.prompt, plain.user_words);
    }
}
