//! OpenAI-compatible servers (llama.cpp, vLLM, LM Studio, OpenAI, DeepSeek, OpenRouter, Together,
//! Groq, …): `POST …/chat/completions` with SSE streaming; `reasoning_content` or `reasoning`
//! delta fields are reasoning; a JSON schema goes as `response_format` (llama.cpp, vLLM).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::wire::{LineDecoder, WireEvent, WireFormat, put_options};
use super::{ChatRequest, Usage};

pub struct OpenAi;

impl WireFormat for OpenAi {
    fn chat_path(&self) -> &'static str {
        "/chat/completions"
    }

    fn models_path(&self) -> &'static str {
        "/models"
    }

    fn body(&self, request: &ChatRequest, model: &str) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), model.into());
        body.insert("messages".into(), json!(request.messages));
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
        put_options(&mut body, request, "max_tokens");
        if let Some(schema) = &request.json_schema {
            body.insert(
                "response_format".into(),
                super::schema::openai_response_format(schema),
            );
        }
        Value::Object(body)
    }

    fn decoder(&self) -> Box<dyn LineDecoder> {
        Box::new(SseDecoder)
    }

    fn model_names(&self, body: &Value) -> Vec<String> {
        body.get("data")
            .and_then(Value::as_array)
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn not_found_hint(&self, _model: &str) -> String {
        "check the name with `seek models`".to_owned()
    }

    fn unreachable_hint(&self) -> &'static str {
        " — is the server running, and is the base URL right?"
    }
}

struct SseDecoder;

/// The parts of a streamed chunk seek reads; strings borrow from the line when unescaped.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Fields<'a>>,
    #[serde(borrow, default)]
    message: Option<Fields<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
}

impl LineDecoder for SseDecoder {
    fn line(&mut self, line: &str) -> Result<Vec<WireEvent>, String> {
        let line = line.trim_end_matches('\r');
        // Blank lines end an event; `:` lines are comments; `event:`/`id:`/`retry:` carry nothing
        // seek needs.
        let Some(data) = line.strip_prefix("data:") else {
            let ignorable = line.is_empty()
                || line.starts_with(':')
                || line.starts_with("event:")
                || line.starts_with("id:")
                || line.starts_with("retry:");
            return if ignorable {
                Ok(Vec::new())
            } else {
                Err("not a server-sent event line".into())
            };
        };
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(vec![WireEvent::Done]);
        }
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|e| e.to_string())?;
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .or_else(|| error.as_str())
                .map_or_else(|| error.to_string(), str::to_owned);
            return Ok(vec![WireEvent::Error(message)]);
        }
        let mut events = Vec::new();
        let choice = chunk.choices.as_ref().and_then(|c| c.first());
        let fields = choice.and_then(|c| c.delta.as_ref().or(c.message.as_ref()));
        let nonempty =
            |f: &Option<Cow<'_, str>>| f.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
        if let Some(reasoning) =
            fields.and_then(|f| nonempty(&f.reasoning_content).or_else(|| nonempty(&f.reasoning)))
        {
            events.push(WireEvent::Reasoning(reasoning));
        }
        if let Some(content) = fields.and_then(|f| nonempty(&f.content)) {
            events.push(WireEvent::Content(content));
        }
        let reason = choice.and_then(|c| c.finish_reason.as_deref());
        let usage = chunk
            .usage
            .as_ref()
            .filter(|u| u.is_object())
            .map(|u| Usage {
                prompt_tokens: u.get("prompt_tokens").and_then(Value::as_u64),
                completion_tokens: u.get("completion_tokens").and_then(Value::as_u64),
            });
        if reason.is_some() || usage.is_some() {
            events.push(WireEvent::Finish {
                reason: reason.map(str::to_owned),
                usage,
            });
        }
        if chunk.choices.is_none() && usage.is_none() {
            return Err("no choices and no usage".into());
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_lines() {
        let mut d = SseDecoder;
        assert_eq!(
            d.line(
                r#"data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#
            ),
            Ok(vec![WireEvent::Content("Hi".into())])
        );
        assert_eq!(
            d.line(r#"data: {"choices":[{"delta":{"reasoning_content":"let me think"}}]}"#),
            Ok(vec![WireEvent::Reasoning("let me think".into())])
        );
        assert_eq!(
            d.line(r#"data:{"choices":[{"delta":{"reasoning":"r"}}]}"#),
            Ok(vec![WireEvent::Reasoning("r".into())])
        );
        assert_eq!(
            d.line(r#"data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#),
            Ok(vec![WireEvent::Finish {
                reason: None,
                usage: Some(Usage {
                    prompt_tokens: Some(5),
                    completion_tokens: Some(2)
                })
            }])
        );
        assert_eq!(d.line("data: [DONE]"), Ok(vec![WireEvent::Done]));
        assert_eq!(d.line(": keep-alive"), Ok(vec![]));
        assert_eq!(d.line("event: message"), Ok(vec![]));
        assert_eq!(d.line(""), Ok(vec![]));
        assert_eq!(
            d.line(r#"data: {"error":{"message":"overloaded"}}"#),
            Ok(vec![WireEvent::Error("overloaded".into())])
        );
        assert!(d.line("data: {\"choices\": [").is_err());
        assert!(d.line("garbage").is_err());
    }
}
