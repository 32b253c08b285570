//! The special cases of `seek config`'s lines for the top-level keys (the settings table,
//! `settings.rs`, names them: this file sits below it and names no key), and the redaction of
//! secrets in what is shown (API keys are never shown; credentials inside a URL are masked).
//! It must not resolve anything itself, nor walk the table (`render.rs` does).

use std::fmt::Write as _;

use super::setting::{line, toml_str};
use super::{Config, Env, Wire};

// The special cases of `seek config`'s lines, named by the settings table.

/// `provider`: the preset's name.
pub(super) fn provider(config: &Config, _: &Env, out: &mut String) {
    let provider = &config.provider;
    line(
        out,
        "provider",
        &toml_str(provider.value.name),
        &provider.origin,
        None,
    );
}

/// `base_url`, credentials masked; or that the built-in engine needs none.
pub(super) fn base_url(config: &Config, _: &Env, out: &mut String) {
    if config.provider.value.wire == Wire::InProcess && config.base_url.value.is_empty() {
        let _ = writeln!(
            out,
            "# base_url is not used: the built-in engine runs the model in this process"
        );
    } else {
        line(
            out,
            "base_url",
            &toml_str(&redact_url(&config.base_url.value)),
            &config.base_url.origin,
            None,
        );
    }
}

/// `model`, or how to set it.
pub(super) fn model(config: &Config, _: &Env, out: &mut String) {
    match &config.model.value {
        Some(model) => line(out, "model", &toml_str(model), &config.model.origin, None),
        None => {
            let _ = writeln!(
                out,
                "# model is not set: pass --model, SEEK_MODEL or `model = \"…\"`"
            );
        }
    }
}

/// `api_key_env`, and whether that variable is set (never its value).
pub(super) fn api_key_env(config: &Config, env: &Env, out: &mut String) {
    match &config.api_key_env.value {
        Some(var) => {
            let state = if env.get(var).is_some() {
                format!("{var} is set (value hidden)")
            } else {
                format!("{var} is not set")
            };
            line(
                out,
                "api_key_env",
                &toml_str(var),
                &config.api_key_env.origin,
                Some(&state),
            );
        }
        None => {
            let _ = writeln!(
                out,
                "# api_key_env is not set: {} needs no key",
                config.provider.value.name
            );
        }
    }
}

/// `agent`: the canonical name of the agent an alias named.
pub(super) fn agent(config: &Config, _: &Env, out: &mut String) {
    let agent = &config.agent;
    line(
        out,
        "agent",
        &toml_str(agent.value.as_str()),
        &agent.origin,
        None,
    );
}

/// What applies when `temperature` is not set.
pub(super) fn temperature_unset(config: &Config) -> String {
    sampling_unset(
        config,
        "temperature",
        seek_engine::sampler::DEFAULT_TEMPERATURE,
    )
}

/// What applies when `top_p` is not set.
pub(super) fn top_p_unset(config: &Config) -> String {
    sampling_unset(config, "top_p", seek_engine::sampler::DEFAULT_TOP_P)
}

fn sampling_unset(config: &Config, key: &str, engine_default: f32) -> String {
    // There is no server behind the built-in engine: say what it uses.
    if config.provider.value.wire == Wire::InProcess {
        format!("{key} is not set: the built-in engine uses {engine_default} (llama.cpp's default)")
    } else {
        format!("{key} is not set: the server's default applies")
    }
}

/// The note on `sandbox`: what the kernel enforces here.
pub(super) fn sandbox_note(config: &Config) -> Option<String> {
    (config.safety.sandbox.value != super::SandboxMode::Off)
        .then(crate::exec::sandbox::describe_enforcement)
}

/// The note on `allow_sockets` where blocks' connections are not supervised.
pub(super) fn sockets_note(config: &Config) -> Option<String> {
    config
        .safety
        .socket_warning()
        .map(|_| "blocks' connections are not supervised here".to_owned())
}

/// The line before the resource limits: what confines blocks' processes here.
pub(super) fn processes_line(_: &Config) -> String {
    format!("blocks' processes: {}", crate::exec::cgroup::describe())
}

/// The note on a resource limit: its unit, or that 0 is none.
pub(super) fn limit_note(value: u64, unit: &str) -> String {
    if value == 0 {
        "no limit".to_owned()
    } else {
        unit.to_owned()
    }
}

/// What `model_size` decides now, and why; under `auto`, that the server is asked first (at the
/// first task: `seek config` contacts no server).
pub(super) fn size_note(config: &Config) -> Option<String> {
    let decision = config.size_decision();
    let verdict = if decision.small {
        "adapted to a small model"
    } else {
        "not treated as a small model"
    };
    if config.model_size.value != super::ModelSize::Auto {
        return Some(verdict.to_owned());
    }
    let first = if config.provider.value.wire == Wire::InProcess {
        "the model file's parameter count"
    } else {
        "the parameter count the server reports"
    };
    Some(format!(
        "{verdict} ({}); at the first task {first}, if known, decides first",
        decision.why()
    ))
}

/// Masks a password in the URL's user info and the values of key- or token-like query parameters.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let user = authority[..at].split(':').next().unwrap_or("");
            format!("{user}:***@{}", &authority[at + 1..])
        }
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) if crate::secrets::is_credential_name(name) => {
                        format!("{name}=***")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn urls_lose_their_secrets() {
        assert_eq!(
            redact_url("http://127.0.0.1:11434"),
            "http://127.0.0.1:11434"
        );
        assert_eq!(
            redact_url("https://bob:hunter2@example.com/v1"),
            "https://bob:***@example.com/v1"
        );
        assert_eq!(
            redact_url("https://h/v1?api_key=abc&x=1&token=t"),
            "https://h/v1?api_key=***&x=1&token=***"
        );
        assert_eq!(redact_url("localhost:8080/v1"), "localhost:8080/v1");
    }
}
