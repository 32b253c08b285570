//! Where a task's events go: the front end's channel, the session file for those worth keeping,
//! and, for a plan step's sub-agent, the step they belong to.
//!
//! It must not decide anything about a turn or hold state beyond the sink itself.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::session::SessionFile;
use crate::wire::Event;

/// Where events go: the front end, and the session file for those worth keeping.
#[derive(Debug, Clone)]
pub struct EventSink {
    pub front: mpsc::UnboundedSender<Event>,
    pub session: Option<Arc<SessionFile>>,
    /// The plan step whose sub-agent emits through this sink: its events go out as
    /// `Event::Step`.
    pub step: Option<Arc<str>>,
}

impl EventSink {
    pub fn new(front: mpsc::UnboundedSender<Event>) -> Self {
        Self {
            front,
            session: None,
            step: None,
        }
    }

    /// This sink for the sub-agent doing the plan's step `id`.
    pub(crate) fn for_step(&self, id: &str) -> Self {
        Self {
            step: Some(Arc::from(id)),
            ..self.clone()
        }
    }

    pub(crate) fn emit(&self, event: Event) {
        let event = match &self.step {
            Some(step) => Event::Step {
                step: step.to_string(),
                event: Box::new(event),
            },
            None => event,
        };
        if let Some(session) = &self.session {
            session.record_event(&event);
        }
        // A front end that went away cannot be told anything; the turn still ends cleanly.
        let _ = self.front.send(event);
    }
}
