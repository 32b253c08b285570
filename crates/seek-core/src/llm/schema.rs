//! Schema-constrained replies: how each wire asks a server to follow a JSON schema (Ollama's
//! `format`, the OpenAI-compatible `response_format`), what a server's refusal of that looks
//! like, and the client's memory that its server refuses (so it is refused once, not on every
//! plan).
//!
//! It must not send anything: the client (`client`) decides to send a request again without the
//! schema when `is_refusal` says so.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::wire::WireFormat;
use super::{ChatRequest, LlmError};

/// Ollama's `format` value: the schema itself (Ollama ≥ 0.5 reads an object as a JSON schema).
pub(super) fn ollama_format(schema: &Value) -> Value {
    schema.clone()
}

/// The OpenAI-compatible `response_format` asking for `schema`. `strict: false`: OpenAI's strict
/// mode demands `additionalProperties: false` everywhere and refuses plain schemas; llama.cpp's
/// server and vLLM read the schema either way.
pub(super) fn openai_response_format(schema: &Value) -> Value {
    json!({
        "type": "json_schema",
        "json_schema": {"name": "plan", "strict": false, "schema": schema},
    })
}

/// Words in an error body that show the server objected to the schema part of a request.
const SCHEMA_WORDS: [&str; 5] = [
    "response_format",
    "json_schema",
    "format",
    "grammar",
    "schema",
];

/// Whether `error`, the answer to a request that carried a schema, is the server refusing the
/// schema: any 400 (servers word it in too many ways to list, and asking again without the
/// schema costs one request), or a 422 whose message names the feature (a 422 about anything
/// else is a real error of the request).
pub(super) fn is_refusal(error: &LlmError) -> bool {
    let LlmError::Http {
        status, message, ..
    } = error
    else {
        return false;
    };
    match status {
        400 => true,
        422 => {
            let message = message.to_ascii_lowercase();
            SCHEMA_WORDS.iter().any(|word| message.contains(word))
        }
        _ => false,
    }
}

/// Remembers, for a client's lifetime, that its server refused a schema.
#[derive(Debug, Default)]
pub(super) struct SchemaSupport {
    refused: AtomicBool,
}

impl SchemaSupport {
    /// Whether a request should carry its schema to this server.
    pub(super) fn carries(&self, request: &ChatRequest) -> bool {
        request.json_schema.is_some() && !self.refused.load(Ordering::Relaxed)
    }

    pub(super) fn remember_refusal(&self) {
        self.refused.store(true, Ordering::Relaxed);
    }
}

/// The body of `request` on `wire`, with its schema only when `with_schema`.
pub(super) fn body(
    wire: &dyn WireFormat,
    request: &ChatRequest,
    model: &str,
    with_schema: bool,
) -> Value {
    if with_schema || request.json_schema.is_none() {
        return wire.body(request, model);
    }
    let without = ChatRequest {
        json_schema: None,
        ..request.clone()
    };
    wire.body(&without, model)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, message: &str) -> LlmError {
        LlmError::Http {
            url: "http://127.0.0.1:1/v1/chat/completions".into(),
            status,
            message: message.into(),
        }
    }

    #[test]
    fn any_400_and_a_422_naming_the_feature_are_refusals() {
        assert!(is_refusal(&http(400, "unknown field")));
        assert!(is_refusal(&http(
            422,
            "Unsupported value: 'response_format.type'"
        )));
        assert!(is_refusal(&http(422, "failed to compile GRAMMAR")));
        assert!(!is_refusal(&http(422, "messages: field required")));
        assert!(!is_refusal(&http(500, "json_schema crashed the server")));
        assert!(!is_refusal(&http(401, "bad key")));
        assert!(!is_refusal(&LlmError::Server {
            url: "u".into(),
            message: "response_format".into()
        }));
    }

    #[test]
    fn the_openai_shape_names_the_schema_plan_and_is_not_strict() {
        let schema = json!({"type": "object"});
        let format = openai_response_format(&schema);
        assert_eq!(format["type"], "json_schema");
        assert_eq!(format["json_schema"]["name"], "plan");
        assert_eq!(format["json_schema"]["strict"], false);
        assert_eq!(format["json_schema"]["schema"], schema);
        assert_eq!(ollama_format(&schema), schema);
    }
}
