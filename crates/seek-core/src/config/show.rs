//! `seek config`: the effective configuration as TOML, each value commented with its origin.
//!
//! Owns the rendering and the redaction of secrets (API keys and MCP servers' env values are
//! never shown; credentials inside a URL are masked). It must not resolve anything itself.

use std::fmt::Write as _;

use super::{Config, ConfigFile, Env, Origin, Sourced};

/// Renders `config` as a valid TOML document. `env` is consulted only to say whether the API key
/// variable is set; its value is never printed.
pub fn render(config: &Config, env: &Env) -> String {
    let mut out = String::new();
    let file_line = match &config.file {
        ConfigFile::Loaded(path) => format!("# config file: {}", path.display()),
        ConfigFile::Absent(path) => format!(
            "# config file: {} (not present; write one to change defaults)",
            path.display()
        ),
        ConfigFile::NoLocation => {
            "# config file: none (no home directory; use --config or SEEK_CONFIG)".into()
        }
    };
    let _ = writeln!(out, "# seek: effective configuration\n{file_line}");
    let _ = writeln!(out, "# data dir: {}\n", config.data_dir.display());

    let provider = Sourced::new(
        config.provider.value.name.to_owned(),
        config.provider.origin.clone(),
    );
    line(
        &mut out,
        "provider",
        &toml_str(&provider.value),
        &provider.origin,
        None,
    );
    if config.provider.value.wire == super::Wire::InProcess && config.base_url.value.is_empty() {
        let _ = writeln!(
            out,
            "# base_url is not used: the built-in engine runs the model in this process"
        );
    } else {
        line(
            &mut out,
            "base_url",
            &toml_str(&redact_url(&config.base_url.value)),
            &config.base_url.origin,
            None,
        );
    }
    match &config.model.value {
        Some(model) => line(
            &mut out,
            "model",
            &toml_str(model),
            &config.model.origin,
            None,
        ),
        None => {
            let _ = writeln!(
                out,
                "# model is not set: pass --model, SEEK_MODEL or `model = \"…\"`"
            );
        }
    }
    match &config.api_key_env.value {
        Some(var) => {
            let state = if env.get(var).is_some() {
                format!("{var} is set (value hidden)")
            } else {
                format!("{var} is not set")
            };
            line(
                &mut out,
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
    let work_dir = config.work_dir.value.display().to_string();
    line(
        &mut out,
        "work_dir",
        &toml_str(&work_dir),
        &config.work_dir.origin,
        None,
    );
    line(
        &mut out,
        "agent",
        &toml_str(config.agent.value.as_str()),
        &config.agent.origin,
        None,
    );
    line(
        &mut out,
        "max_attempts",
        &config.max_attempts.value.to_string(),
        &config.max_attempts.origin,
        None,
    );

    line(
        &mut out,
        "max_rounds",
        &config.max_rounds.value.to_string(),
        &config.max_rounds.origin,
        None,
    );
    line(
        &mut out,
        "model_size",
        &toml_str(config.model_size.value.as_str()),
        &config.model_size.origin,
        Some(&size_note(config)),
    );
    let m = &config.model_settings;
    for (key, value) in [
        ("context_window", &m.context_window),
        ("max_tokens", &m.max_tokens),
        ("stream_idle_timeout_secs", &m.stream_idle_timeout_secs),
        ("connect_timeout_secs", &m.connect_timeout_secs),
        ("reply_timeout_secs", &m.reply_timeout_secs),
        ("stream_max_line_mib", &m.stream_max_line_mib),
        ("max_retries", &m.max_retries),
    ] {
        line(&mut out, key, &value.value.to_string(), &value.origin, None);
    }
    let built_in = config.provider.value.wire == super::providers::Wire::InProcess;
    for (key, value, engine_default) in [
        (
            "temperature",
            &m.temperature,
            crate::local::sampler::DEFAULT_TEMPERATURE,
        ),
        ("top_p", &m.top_p, crate::local::sampler::DEFAULT_TOP_P),
    ] {
        match value {
            Some(v) => line(&mut out, key, &format!("{:?}", v.value), &v.origin, None),
            // There is no server behind the built-in engine: say what it uses.
            None if built_in => {
                let _ = writeln!(
                    out,
                    "# {key} is not set: the built-in engine uses {engine_default} (llama.cpp's default)"
                );
            }
            None => {
                let _ = writeln!(out, "# {key} is not set: the server's default applies");
            }
        }
    }
    match &m.seed {
        Some(v) => line(&mut out, "seed", &v.value.to_string(), &v.origin, None),
        None => {
            let _ = writeln!(out, "# seed is not set");
        }
    }

    let safety = &config.safety;
    let enforced = crate::exec::sandbox::describe_enforcement();
    let note = match safety.sandbox.value {
        crate::exec::sandbox::SandboxMode::Off => None,
        _ => Some(enforced.as_str()),
    };
    line(
        &mut out,
        "sandbox",
        &toml_str(safety.sandbox.value.as_str()),
        &safety.sandbox.origin,
        note,
    );
    line(
        &mut out,
        "approval",
        &toml_str(safety.approval.value.as_str()),
        &safety.approval.origin,
        None,
    );
    line(
        &mut out,
        "safe_mode",
        &safety.safe_mode.value.to_string(),
        &safety.safe_mode.origin,
        None,
    );

    let _ = writeln!(out, "\n[exec]");
    let limit = &config.output_limit_bytes;
    line(
        &mut out,
        "output_limit_bytes",
        &limit.value.to_string(),
        &limit.origin,
        None,
    );
    let pass_env: Vec<String> = safety.pass_env.value.iter().map(|v| toml_str(v)).collect();
    line(
        &mut out,
        "pass_env",
        &format!("[{}]", pass_env.join(", ")),
        &safety.pass_env.origin,
        None,
    );
    let allow_sockets: Vec<String> = safety
        .allow_sockets
        .value
        .iter()
        .map(|entry| toml_str(&entry.to_string()))
        .collect();
    let socket_note = safety
        .socket_warning()
        .map(|_| "blocks' connections are not supervised here");
    line(
        &mut out,
        "allow_sockets",
        &format!("[{}]", allow_sockets.join(", ")),
        &safety.allow_sockets.origin,
        socket_note,
    );
    let _ = writeln!(
        out,
        "# blocks' processes: {}",
        crate::exec::cgroup::describe()
    );
    for (key, value, unit) in [
        (
            "max_processes",
            &safety.max_processes,
            "processes and threads",
        ),
        ("max_memory_mb", &safety.max_memory_mb, "MiB"),
    ] {
        let note = if value.value == 0 {
            "no limit".to_owned()
        } else {
            unit.to_owned()
        };
        line(
            &mut out,
            key,
            &value.value.to_string(),
            &value.origin,
            Some(&note),
        );
    }

    for tool in &config.tools {
        let _ = writeln!(out, "\n[tools.{}]", tool.tag);
        let numbers = [
            ("timeout_secs", &tool.timeout_secs),
            ("idle_timeout_secs", &tool.idle_timeout_secs),
            ("compile_timeout_secs", &tool.compile_timeout_secs),
            ("max_read_bytes", &tool.max_read_bytes),
        ];
        for (key, value) in numbers {
            if let Some(v) = value {
                line(&mut out, key, &v.value.to_string(), &v.origin, None);
            }
        }
        for (key, value) in [("command", &tool.command), ("runtime", &tool.runtime)] {
            if let Some(v) = value {
                line(&mut out, key, &toml_str(&v.value), &v.origin, None);
            }
        }
        if let Some(v) = &tool.allow_rerun {
            line(
                &mut out,
                "allow_rerun",
                &v.value.to_string(),
                &v.origin,
                None,
            );
        }
        if let Some(v) = &tool.agents {
            let names: Vec<String> = v.value.iter().map(|a| toml_str(a.as_str())).collect();
            line(
                &mut out,
                "agents",
                &format!("[{}]", names.join(", ")),
                &v.origin,
                None,
            );
        }
    }
    super::local::render(&mut out, &config.local);
    super::tui::render(&mut out, &config.tui);
    super::web::render(&mut out, &config.web);
    super::serve::render(&mut out, &config.serve);
    super::mcp::render(&mut out, &config.mcp, env);
    out
}

pub(super) fn line(out: &mut String, key: &str, value: &str, origin: &Origin, note: Option<&str>) {
    let assignment = format!("{key} = {value}");
    let _ = match note {
        Some(note) => writeln!(out, "{assignment:<44} # {origin}; {note}"),
        None => writeln!(out, "{assignment:<44} # {origin}"),
    };
}

/// What `model_size` decides now, and why; under `auto`, that the server is asked first (at the
/// first task: `seek config` contacts no server).
fn size_note(config: &Config) -> String {
    let decision = config.size_decision();
    let verdict = if decision.small {
        "adapted to a small model"
    } else {
        "not treated as a small model"
    };
    if config.model_size.value != super::ModelSize::Auto {
        return verdict.to_owned();
    }
    let first = if config.provider.value.wire == super::Wire::InProcess {
        "the model file's parameter count"
    } else {
        "the parameter count the server reports"
    };
    format!(
        "{verdict} ({}); at the first task {first}, if known, decides first",
        decision.why()
    )
}

/// A TOML basic string.
pub(super) fn toml_str(value: &str) -> String {
    toml::Value::String(value.to_owned()).to_string()
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
