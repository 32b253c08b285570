//! The router: picks the agent for a prompt when the user did not name one (`auto`), locally
//! and deterministically, with no model call.
//!
//! Pure (the classifier is built from `assets/` at first use); it must not do I/O.

use crate::wire::{AgentName, Route};

/// The agent for `prompt`, how sure the router is, and why.
pub fn route(prompt: &str) -> Route {
    let _ = prompt;
    Route {
        agent: AgentName::Coder,
        confidence: 0.0,
        reason: "no router yet".into(),
    }
}
