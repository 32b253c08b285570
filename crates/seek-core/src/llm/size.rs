//! Asking a server for the model's parameter count: llama.cpp's `/v1/models` (`meta.n_params`),
//! Ollama's `/api/show` (`general.parameter_count`, `details.parameter_size`), LM Studio's
//! `/api/v1/models` (`params_string`). vLLM and the cloud services do not say. Best effort: a
//! failure is a reason for the log, and the name decides instead.
//!
//! Owns those requests and reading their answers; it must not decide what the count means
//! (`config::model_size` does).

use serde_json::Value;

use super::settings::Settings;
use crate::config::Wire;
use crate::config::model_size::{Reported, parse_parameters};

/// A JSON answer to `request`, or why there is none.
pub(super) async fn ask(request: reqwest::RequestBuilder) -> Result<Value, String> {
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("HTTP {}", status.as_u16()));
    }
    // A server cannot make seek hold more than a bounded body.
    let body = super::body::read_body(response, super::bounds::MAX_BODY_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    serde_json::from_str(&body).map_err(|e| format!("not JSON: {e}"))
}

/// The parameter count of `settings.model` as the server reports it, or why it could not.
pub(super) async fn parameters(
    client: &reqwest::Client,
    settings: &Settings,
) -> Result<Reported, String> {
    let model = settings.model.as_deref().ok_or("no model is named")?;
    let with_key = |request: reqwest::RequestBuilder| match &settings.api_key {
        Some(key) => request.bearer_auth(key),
        None => request,
    };
    let found = |source: &str, parameters: Option<f64>| {
        parameters
            .map(|parameters| Reported {
                parameters,
                source: source.to_owned(),
            })
            .ok_or_else(|| format!("{source} gives no parameter count for {model:?}"))
    };
    match settings.wire {
        Wire::InProcess => Err("not a server".into()),
        Wire::Ollama => {
            const SOURCE: &str = "Ollama /api/show";
            let url = settings.url.endpoint("/api/show");
            let body = serde_json::json!({ "model": model });
            let show = ask(with_key(client.post(&url).json(&body)))
                .await
                .map_err(|e| format!("{SOURCE}: {e}"))?;
            found(SOURCE, from_ollama_show(&show))
        }
        Wire::OpenAi => {
            const LLAMA: &str = "llama-server /v1/models";
            const LM_STUDIO: &str = "LM Studio /api/v1/models";
            let models = ask(with_key(client.get(settings.url.endpoint("/models")))).await;
            let first = match &models {
                Ok(models) => found(LLAMA, from_llama_server_models(models, model)),
                Err(e) => Err(format!("{}: {e}", settings.url.endpoint("/models"))),
            };
            // LM Studio's own API, only where it may run: a cloud service is not asked twice.
            if first.is_ok() || !(settings.provider == "lm-studio" || settings.url.is_local()) {
                return first;
            }
            let base = &settings.url.base;
            let root = base.strip_suffix("/v1").unwrap_or(base);
            match ask(with_key(client.get(format!("{root}/api/v1/models")))).await {
                Ok(models) => found(LM_STUDIO, from_lm_studio_models(&models, model)).or(first),
                Err(_) => first,
            }
        }
    }
}

/// llama-server's `/v1/models`: `data[].meta.n_params` of the entry whose `id` is the model, or
/// of the only entry (llama-server answers to any model name with the one it serves).
pub(crate) fn from_llama_server_models(body: &Value, model: &str) -> Option<f64> {
    let data = body.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or(match data.as_slice() {
            [only] => Some(only),
            _ => None,
        })?;
    positive(entry.pointer("/meta/n_params")?)
}

/// Ollama's `/api/show`: `model_info."general.parameter_count"` (exact), else
/// `details.parameter_size` (`"7.6B"`).
pub(crate) fn from_ollama_show(body: &Value) -> Option<f64> {
    body.get("model_info")
        .and_then(|info| info.get("general.parameter_count"))
        .and_then(positive)
        .or_else(|| {
            body.pointer("/details/parameter_size")
                .and_then(Value::as_str)
                .and_then(parse_parameters)
        })
}

/// LM Studio's `/api/v1/models`: `models[].params_string` (`"7B"`) of the model whose `key`, or
/// one of whose `loaded_instances[].id`, is the model.
pub(crate) fn from_lm_studio_models(body: &Value, model: &str) -> Option<f64> {
    let named = |m: &&Value| {
        m.get("key").and_then(Value::as_str) == Some(model)
            || m.get("loaded_instances")
                .and_then(Value::as_array)
                .is_some_and(|all| {
                    all.iter()
                        .any(|i| i.get("id").and_then(Value::as_str) == Some(model))
                })
    };
    body.get("models")?
        .as_array()?
        .iter()
        .find(named)?
        .get("params_string")?
        .as_str()
        .and_then(parse_parameters)
}

/// A count as a JSON number (or a numeric string), if it is one above zero.
fn positive(value: &Value) -> Option<f64> {
    let n = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => parse_parameters(s)?,
        _ => return None,
    };
    (n.is_finite() && n > 0.0).then_some(n)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn llama_server_says_n_params_for_the_model_it_serves() {
        // As llama-server answers (tools/server/README.md), the model id being the file.
        let body = json!({
            "object": "list",
            "models": [{"name": "smollm2-135m-instruct-q8_0.gguf", "model": "smollm2-135m-instruct-q8_0.gguf"}],
            "data": [{
                "id": "smollm2-135m-instruct-q8_0.gguf",
                "object": "model",
                "created": 1_735_689_600,
                "owned_by": "llamacpp",
                "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": 8192, "n_embd": 576,
                         "n_params": 134_515_008u64, "size": 144_807_168u64}
            }]
        });
        assert_eq!(
            from_llama_server_models(&body, "default"),
            Some(134_515_008.0)
        );
        assert_eq!(
            from_llama_server_models(&body, "smollm2-135m-instruct-q8_0.gguf"),
            Some(134_515_008.0)
        );
    }

    #[test]
    fn among_several_models_only_the_named_one_counts() {
        let body = json!({"data": [
            {"id": "big", "meta": {"n_params": 8_030_261_248u64}},
            {"id": "small", "meta": {"n_params": 494_032_768u64}},
            {"id": "unloaded"}
        ]});
        assert_eq!(
            from_llama_server_models(&body, "small"),
            Some(494_032_768.0)
        );
        assert_eq!(from_llama_server_models(&body, "other"), None);
        assert_eq!(from_llama_server_models(&body, "unloaded"), None);
    }

    #[test]
    fn vllm_and_cloud_lists_give_no_count() {
        let vllm = json!({"object": "list", "data": [{"id": "Qwen/Qwen2.5-1.5B-Instruct",
            "object": "model", "owned_by": "vllm", "max_model_len": 32768}]});
        assert_eq!(
            from_llama_server_models(&vllm, "Qwen/Qwen2.5-1.5B-Instruct"),
            None
        );
        let openai = json!({"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model",
            "created": 1_721_172_741, "owned_by": "system"}]});
        assert_eq!(from_llama_server_models(&openai, "gpt-4o-mini"), None);
        for hostile in [
            json!({"data": [{"id": "m", "meta": {"n_params": -5}}]}),
            json!({"data": [{"id": "m", "meta": {"n_params": 0}}]}),
            json!({"data": [{"id": "m", "meta": {"n_params": "lots"}}]}),
            json!({"data": "m"}),
            json!([1, 2]),
        ] {
            assert_eq!(from_llama_server_models(&hostile, "m"), None, "{hostile}");
        }
    }

    #[test]
    fn ollama_says_the_exact_count_or_a_size_label() {
        // As `ollama show` answers for qwen2.5-coder:1.5b (fields trimmed).
        let body = json!({
            "modelfile": "FROM …",
            "details": {"parent_model": "", "format": "gguf", "family": "qwen2",
                        "families": ["qwen2"], "parameter_size": "1.5B",
                        "quantization_level": "Q4_K_M"},
            "model_info": {"general.architecture": "qwen2", "general.file_type": 15,
                           "general.parameter_count": 1_543_714_304u64,
                           "qwen2.context_length": 32768}
        });
        assert_eq!(from_ollama_show(&body), Some(1_543_714_304.0));
        let label_only = json!({"details": {"parameter_size": "135M"}});
        assert_eq!(from_ollama_show(&label_only), Some(1.35e8));
        let large = json!({"details": {"parameter_size": "7.6B"}, "model_info": {}});
        assert_eq!(from_ollama_show(&large), Some(7.6e9));
        assert_eq!(from_ollama_show(&json!({"details": {}})), None);
        assert_eq!(
            from_ollama_show(&json!({"details": {"parameter_size": "big"}})),
            None
        );
    }

    #[test]
    fn lm_studio_says_a_params_string_for_a_listed_model() {
        // As LM Studio's `GET /api/v1/models` answers (docs: developer/rest/list).
        let body = json!({"models": [
            {"type": "llm", "publisher": "lmstudio-community", "key": "qwen2.5-7b-instruct",
             "display_name": "Qwen2.5 7B Instruct", "architecture": "qwen2",
             "quantization": {"name": "Q4_K_M", "bits_per_weight": 4.8},
             "size_bytes": 4_683_073_536u64, "params_string": "7B",
             "loaded_instances": [{"id": "qwen2.5-7b-instruct:2", "config": {"context_length": 4096}}],
             "max_context_length": 32768, "format": "gguf"},
            {"type": "llm", "key": "smollm2-135m-instruct", "params_string": "135M",
             "loaded_instances": [], "max_context_length": 8192},
            {"type": "embedding", "key": "nomic-embed", "params_string": null,
             "loaded_instances": []}
        ]});
        assert_eq!(
            from_lm_studio_models(&body, "smollm2-135m-instruct"),
            Some(1.35e8)
        );
        assert_eq!(
            from_lm_studio_models(&body, "qwen2.5-7b-instruct:2"),
            Some(7e9)
        );
        assert_eq!(from_lm_studio_models(&body, "nomic-embed"), None);
        assert_eq!(from_lm_studio_models(&body, "missing"), None);
        // The v0 API lists no counts.
        let v0 = json!({"object": "list", "data": [{"id": "meta-llama-3.1-8b-instruct",
            "object": "model", "type": "llm", "arch": "llama", "quantization": "Q4_K_M",
            "state": "not-loaded", "max_context_length": 131_072}]});
        assert_eq!(
            from_lm_studio_models(&v0, "meta-llama-3.1-8b-instruct"),
            None
        );
    }
}
