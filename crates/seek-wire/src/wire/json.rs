//! The public JSON of events (`--json`): each event is one object with its `type`; an event of a
//! plan's step is its sub-agent's own event with a `step` field added.
//!
//! In process and in session files a step's event is `Event::Step` (derived serde, nested); this
//! is the only place that flattens it. It must not decide anything else.

use serde_json::{Map, Value};

use super::Event;

/// The event as one JSON object; a step's event is flattened with `"step": "<id>"`.
pub fn event_json(event: &Event) -> Value {
    match event {
        Event::Step { step, event } => {
            let mut inner = match event_json(event) {
                Value::Object(map) => map,
                // Every event serialises to an object (internally tagged); keep any other
                // shape rather than lose it.
                other => {
                    let mut map = Map::new();
                    map.insert("event".into(), other);
                    map
                }
            };
            inner.insert("step".into(), Value::String(step.clone()));
            Value::Object(inner)
        }
        other => serde_json::to_value(other).unwrap_or_else(|e| {
            serde_json::json!({"type": "error", "message": format!("an event could not be written: {e}")})
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_steps_event_is_its_own_event_with_a_step_field() {
        let event = Event::Step {
            step: "2".into(),
            event: Box::new(Event::AnswerDelta { text: "hi".into() }),
        };
        assert_eq!(
            event_json(&event),
            json!({"type": "answer_delta", "text": "hi", "step": "2"})
        );
        assert_eq!(
            event_json(&Event::AnswerDelta { text: "x".into() }),
            json!({"type": "answer_delta", "text": "x"})
        );
    }
}
