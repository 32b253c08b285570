//! Ollama's native API: `POST /api/chat`, NDJSON streaming, `num_ctx` always sent (Ollama's small
//! default context silently cuts the system prompt), its `thinking` field as reasoning, a JSON
//! schema as `format`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::wire::{LineDecoder, WireEvent, WireFormat, put_options};
use super::{ChatRequest, Usage};

pub struct Ollama;

impl WireFormat for Ollama {
    fn chat_path(&self) -> &'static str {
        "/api/chat"
    }

    fn models_path(&self) -> &'static str {
        "/api/tags"
    }

    fn body(&self, request: &ChatRequest, model: &str) -> Value {
        let mut options = Map::new();
        options.insert("num_ctx".into(), request.options.context_window.into());
        put_options(&mut options, request, "num_predict");
        let mut body = json!({
            "model": model,
            "messages": request.messages,
            "stream": true,
            "options": options,
        });
        if let Some(schema) = &request.json_schema {
            body["format"] = super::schema::ollama_format(schema);
        }
        body
    }

    fn decoder(&self) -> Box<dyn LineDecoder> {
        Box::new(NdjsonDecoder)
    }

    fn model_names(&self, body: &Value) -> Vec<String> {
        body.get("models")
            .and_then(Value::as_array)
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| {
                        m.get("name")
                            .or_else(|| m.get("model"))
                            .and_then(Value::as_str)
                    })
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn not_found_hint(&self, model: &str) -> String {
        format!("run `ollama pull {model}` (or pick one with `seek models`)")
    }

    fn unreachable_hint(&self) -> &'static str {
        " — is Ollama running? (ollama serve)"
    }
}

struct NdjsonDecoder;

/// The parts of a streamed line seek reads; strings borrow from the line when unescaped.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    message: Option<MessageFields<'a>>,
    #[serde(default)]
    done: Option<bool>,
    #[serde(borrow, default)]
    done_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct MessageFields<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
}

impl LineDecoder for NdjsonDecoder {
    fn line(&mut self, line: &str) -> Result<Vec<WireEvent>, String> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(Vec::new());
        }
        let parsed: Line<'_> = serde_json::from_str(line).map_err(|e| e.to_string())?;
        if let Some(error) = parsed.error {
            let message = error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned);
            return Ok(vec![WireEvent::Error(message)]);
        }
        let mut events = Vec::new();
        let nonempty =
            |f: &Option<Cow<'_, str>>| f.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
        if let Some(message) = &parsed.message {
            if let Some(thinking) = nonempty(&message.thinking) {
                events.push(WireEvent::Reasoning(thinking));
            }
            if let Some(content) = nonempty(&message.content) {
                events.push(WireEvent::Content(content));
            }
        }
        match parsed.done {
            Some(true) => {
                events.push(WireEvent::Finish {
                    reason: parsed.done_reason.as_deref().map(str::to_owned),
                    usage: Some(Usage {
                        prompt_tokens: parsed.prompt_eval_count,
                        completion_tokens: parsed.eval_count,
                    }),
                });
                events.push(WireEvent::Done);
            }
            Some(false) => {}
            None if parsed.message.is_none() => {
                return Err("neither a message nor a done flag".into());
            }
            None => {}
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndjson_lines() {
        let mut d = NdjsonDecoder;
        assert_eq!(
            d.line(
                r#"{"message":{"role":"assistant","content":"Hi","thinking":"hmm"},"done":false}"#
            ),
            Ok(vec![
                WireEvent::Reasoning("hmm".into()),
                WireEvent::Content("Hi".into())
            ])
        );
        let done = d
            .line(r#"{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":12,"eval_count":3}"#)
            .expect("done line");
        assert_eq!(
            done,
            vec![
                WireEvent::Finish {
                    reason: Some("stop".into()),
                    usage: Some(Usage {
                        prompt_tokens: Some(12),
                        completion_tokens: Some(3)
                    })
                },
                WireEvent::Done
            ]
        );
        assert_eq!(
            d.line(r#"{"error":"boom"}"#),
            Ok(vec![WireEvent::Error("boom".into())])
        );
        assert!(d.line("{not json").is_err());
        assert!(d.line(r#"{"unexpected":1}"#).is_err());
        assert_eq!(d.line("  "), Ok(vec![]));
    }
}
