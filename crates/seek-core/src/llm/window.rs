//! Asking a server for the model's context window: Ollama's `/api/show`, llama.cpp's `/props`,
//! vLLM's `/v1/models`. Best effort: any failure is `None` and the configured window applies.
//!
//! Owns those three requests; it must not decide which window to use.

use super::settings::Settings;
use crate::config::Wire;

/// Ollama: `/api/show`'s `<arch>.context_length`; llama.cpp: `/props`' `n_ctx`; vLLM:
/// `/v1/models`' `max_model_len` for the model.
pub(super) async fn context_window(client: &reqwest::Client, settings: &Settings) -> Option<u64> {
    let model = settings.model.clone()?;
    let get_json =
        |request: reqwest::RequestBuilder| async move { super::size::ask(request).await.ok() };
    let with_key = |request: reqwest::RequestBuilder| match &settings.api_key {
        Some(key) => request.bearer_auth(key),
        None => request,
    };
    match settings.wire {
        Wire::Ollama => {
            let url = settings.url.endpoint("/api/show");
            let body = serde_json::json!({ "model": model });
            let info = get_json(with_key(client.post(&url).json(&body))).await?;
            info.get("model_info")?
                .as_object()?
                .iter()
                .find(|(key, _)| key.ends_with(".context_length"))
                .and_then(|(_, v)| v.as_u64())
        }
        Wire::InProcess => None,
        Wire::OpenAi => {
            let base = &settings.url.base;
            let root = base.strip_suffix("/v1").unwrap_or(base);
            if let Some(props) = get_json(with_key(client.get(format!("{root}/props")))).await {
                let n_ctx = props
                    .pointer("/default_generation_settings/n_ctx")
                    .or_else(|| props.get("n_ctx"))
                    .and_then(|v| v.as_u64());
                if n_ctx.is_some() {
                    return n_ctx;
                }
            }
            let models = get_json(with_key(client.get(settings.url.endpoint("/models")))).await?;
            models
                .get("data")?
                .as_array()?
                .iter()
                .find(|m| m.get("id").and_then(|id| id.as_str()) == Some(model.as_str()))?
                .get("max_model_len")?
                .as_u64()
        }
    }
}
