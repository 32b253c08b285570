//! Provider presets: a name a user types instead of a URL.
//!
//! Owns the table of known servers and services (wire format, default base URL, the env var that
//! holds the API key, a sensible default model). Pure data; it must not talk to any server.

use serde::Serialize;

/// How a provider is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Wire {
    /// Ollama's native `POST /api/chat`, NDJSON streaming.
    Ollama,
    /// `POST …/v1/chat/completions` with SSE streaming.
    OpenAi,
    /// No server: seek's built-in engine runs the model in this process.
    InProcess,
}

/// One preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub wire: Wire,
    pub base_url: &'static str,
    /// The env var holding the API key; `None` for local servers that need none.
    pub api_key_env: Option<&'static str>,
    /// The model used when none is configured; `None` where only the user can know.
    pub default_model: Option<&'static str>,
}

/// The model the built-in engine runs when none is named: small enough to download in
/// seconds and to run on any laptop.
pub(crate) const DEFAULT_LOCAL_MODEL: &str = "smollm2-135m";

const fn preset(
    name: &'static str,
    wire: Wire,
    base_url: &'static str,
    api_key_env: Option<&'static str>,
    default_model: Option<&'static str>,
) -> Preset {
    Preset {
        name,
        wire,
        base_url,
        api_key_env,
        default_model,
    }
}

/// Every preset. Which one applies when none is named is the resolver's rule (see
/// `config::Resolver::provider`): `local` unless the settings point at a server.
pub const PRESETS: &[Preset] = &[
    preset(
        "local",
        Wire::InProcess,
        "",
        None,
        Some(DEFAULT_LOCAL_MODEL),
    ),
    preset(
        "ollama",
        Wire::Ollama,
        "http://127.0.0.1:11434",
        None,
        Some("qwen2.5-coder:7b"),
    ),
    preset(
        "llama.cpp",
        Wire::OpenAi,
        "http://127.0.0.1:8080/v1",
        None,
        None,
    ),
    preset(
        "lm-studio",
        Wire::OpenAi,
        "http://127.0.0.1:1234/v1",
        None,
        None,
    ),
    preset("vllm", Wire::OpenAi, "http://127.0.0.1:8000/v1", None, None),
    preset(
        "openai",
        Wire::OpenAi,
        "https://api.openai.com/v1",
        Some("OPENAI_API_KEY"),
        Some("gpt-4o-mini"),
    ),
    preset(
        "deepseek",
        Wire::OpenAi,
        "https://api.deepseek.com/v1",
        Some("DEEPSEEK_API_KEY"),
        Some("deepseek-chat"),
    ),
    preset(
        "openrouter",
        Wire::OpenAi,
        "https://openrouter.ai/api/v1",
        Some("OPENROUTER_API_KEY"),
        None,
    ),
    preset(
        "together",
        Wire::OpenAi,
        "https://api.together.xyz/v1",
        Some("TOGETHER_API_KEY"),
        None,
    ),
    preset(
        "groq",
        Wire::OpenAi,
        "https://api.groq.com/openai/v1",
        Some("GROQ_API_KEY"),
        None,
    ),
];

/// The preset named `name` (case-insensitive; `llamacpp`, `llama-cpp` and `lmstudio` accepted).
pub fn find(name: &str) -> Option<&'static Preset> {
    let wanted = name.trim().to_ascii_lowercase();
    let wanted = match wanted.as_str() {
        "llamacpp" | "llama-cpp" | "llama-server" => "llama.cpp",
        "lmstudio" => "lm-studio",
        other => other,
    };
    PRESETS.iter().find(|p| p.name == wanted)
}

/// The built-in engine's preset, used when no provider is named and nothing points at a server.
pub(crate) fn local_preset() -> &'static Preset {
    &PRESETS[0]
}

/// The preset used when no provider is named but a server is (a base URL, `OLLAMA_HOST`, or a
/// model name no built-in catalog knows): Ollama, as before the built-in engine existed.
pub(crate) fn server_preset() -> &'static Preset {
    &PRESETS[1]
}

/// The preset names, for error messages.
pub fn names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_is_forgiving_about_spelling() {
        assert_eq!(find("Ollama").map(|p| p.name), Some("ollama"));
        assert_eq!(find("llamacpp").map(|p| p.name), Some("llama.cpp"));
        assert_eq!(find("lmstudio").map(|p| p.name), Some("lm-studio"));
        assert_eq!(find("anthropic"), None);
    }

    #[test]
    fn cloud_presets_name_their_key_and_local_ones_do_not() {
        for p in PRESETS.iter().filter(|p| p.wire != Wire::InProcess) {
            let local = p.base_url.starts_with("http://127.0.0.1");
            assert_eq!(p.api_key_env.is_none(), local, "{}", p.name);
        }
    }
}
