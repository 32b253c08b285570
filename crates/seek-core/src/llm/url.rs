//! Base-URL normalisation: users write `localhost:11434`, `http://host:8080`, `…/v1/`, or paste a
//! whole endpoint; seek works out the URL to call and shows exactly that URL in errors.
//!
//! Pure string handling; it must not make requests.

use crate::config::Wire;

/// A normalised server address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    /// Scheme, host, port and API prefix, without a trailing slash
    /// (`http://127.0.0.1:8080/v1`, `http://127.0.0.1:11434`).
    pub base: String,
}

impl ServerUrl {
    /// Normalises `raw` for `wire`:
    /// - a missing scheme becomes `http://` for local and private hosts and `https://` otherwise;
    /// - trailing slashes go;
    /// - a pasted endpoint (`…/chat/completions`, `…/api/chat`) is cut back to its base;
    /// - OpenAI-compatible servers get `/v1` when no path is given; Ollama loses a `/v1` or `/api`.
    pub fn normalise(raw: &str, wire: Wire) -> Self {
        let trimmed = raw.trim().trim_end_matches('/');
        let with_scheme = if trimmed.contains("://") {
            trimmed.to_owned()
        } else {
            let scheme = if is_local(host_of(trimmed)) {
                "http"
            } else {
                "https"
            };
            format!("{scheme}://{trimmed}")
        };
        let mut base = with_scheme;
        for suffix in [
            "/chat/completions",
            "/completions",
            "/api/chat",
            "/api/generate",
            "/models",
            "/api/tags",
        ] {
            if let Some(stripped) = base.strip_suffix(suffix) {
                base = stripped.to_owned();
                break;
            }
        }
        let base = base.trim_end_matches('/').to_owned();
        let has_path = path_of(&base).is_some_and(|p| !p.is_empty());
        let base = match wire {
            Wire::OpenAi if !has_path => format!("{base}/v1"),
            Wire::Ollama => base
                .strip_suffix("/v1")
                .or_else(|| base.strip_suffix("/api"))
                .unwrap_or(&base)
                .to_owned(),
            Wire::OpenAi | Wire::InProcess => base,
        };
        Self { base }
    }

    /// The host, lower-case, without port or brackets (`api.openai.com`, `127.0.0.1`, `::1`).
    pub fn host(&self) -> String {
        host_of(&self.base).to_ascii_lowercase()
    }

    /// Whether the server is on this machine or a private network (loopback, private ranges,
    /// `.local`), where local model servers run.
    pub fn is_local(&self) -> bool {
        is_local(host_of(&self.base))
    }

    /// The full URL of an endpoint below the base (`/chat/completions`, `/api/chat`).
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

fn after_scheme(url: &str) -> &str {
    url.split_once("://").map_or(url, |(_, rest)| rest)
}

fn host_of(url: &str) -> &str {
    let authority = after_scheme(url)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or("");
    }
    authority.split(':').next().unwrap_or("")
}

fn path_of(url: &str) -> Option<&str> {
    let rest = after_scheme(url);
    rest.find('/').map(|i| &rest[i..])
}

/// Loopback, private-range and `.local` hosts, which are spoken to over plain HTTP by default.
fn is_local(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    if matches!(host.as_str(), "localhost" | "::1" | "0.0.0.0")
        || host.ends_with(".local")
        || !host.contains('.')
    {
        return true;
    }
    let octets: Vec<u8> = host.split('.').filter_map(|p| p.parse().ok()).collect();
    match octets.as_slice() {
        [127, ..] | [10, ..] | [192, 168, ..] => true,
        [172, second, ..] => (16..=31).contains(second),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openai(raw: &str) -> String {
        ServerUrl::normalise(raw, Wire::OpenAi).base
    }

    fn ollama(raw: &str) -> String {
        ServerUrl::normalise(raw, Wire::Ollama).base
    }

    #[test]
    fn openai_compatible_bases() {
        assert_eq!(openai("http://127.0.0.1:8080"), "http://127.0.0.1:8080/v1");
        assert_eq!(openai("http://127.0.0.1:8080/"), "http://127.0.0.1:8080/v1");
        assert_eq!(
            openai("http://127.0.0.1:8080/v1/"),
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(openai("localhost:1234"), "http://localhost:1234/v1");
        assert_eq!(
            openai("192.168.1.20:8000/v1"),
            "http://192.168.1.20:8000/v1"
        );
        assert_eq!(openai("api.openai.com/v1"), "https://api.openai.com/v1");
        assert_eq!(
            openai("https://openrouter.ai/api/v1"),
            "https://openrouter.ai/api/v1"
        );
        assert_eq!(
            openai("https://generativelanguage.googleapis.com/v1beta/openai/"),
            "https://generativelanguage.googleapis.com/v1beta/openai"
        );
        assert_eq!(
            openai("http://127.0.0.1:8080/v1/chat/completions"),
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(
            openai("gpu-box:8080"),
            "http://gpu-box:8080/v1",
            "a bare hostname is local"
        );
    }

    #[test]
    fn ollama_bases() {
        assert_eq!(ollama("http://127.0.0.1:11434"), "http://127.0.0.1:11434");
        assert_eq!(ollama("127.0.0.1:11434"), "http://127.0.0.1:11434");
        assert_eq!(
            ollama("http://localhost:11434/v1"),
            "http://localhost:11434"
        );
        assert_eq!(
            ollama("http://localhost:11434/api/"),
            "http://localhost:11434"
        );
        assert_eq!(
            ollama("http://localhost:11434/api/chat"),
            "http://localhost:11434"
        );
        assert_eq!(ollama("[::1]:11434"), "http://[::1]:11434");
    }

    #[test]
    fn hosts() {
        let host = |raw: &str| ServerUrl::normalise(raw, Wire::OpenAi).host();
        assert_eq!(host("https://API.openai.com/v1/"), "api.openai.com");
        assert_eq!(host("http://user:pw@127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host("[::1]:8080"), "::1");
        assert_eq!(host("localhost"), "localhost");
    }

    #[test]
    fn endpoints() {
        let url = ServerUrl::normalise("localhost:8080", Wire::OpenAi);
        assert_eq!(
            url.endpoint("/chat/completions"),
            "http://localhost:8080/v1/chat/completions"
        );
    }
}
