//! Model-request settings: context window, generation limits, timeouts and retries.
//!
//! Owns their defaults and validation. It must not talk to a server; the `llm` module reads them.

use serde::Deserialize;
use toml::Spanned;

use super::{ConfigError, Origin, Sourced};

/// A TOML number that may be written as an integer (`temperature = 0`) or a float.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }
}

/// The keys as read from the file (top level).
#[derive(Debug, Default)]
pub struct ModelFile<'a> {
    pub context_window: Option<&'a Spanned<i64>>,
    pub max_tokens: Option<&'a Spanned<i64>>,
    pub temperature: Option<&'a Spanned<Number>>,
    pub top_p: Option<&'a Spanned<Number>>,
    pub seed: Option<&'a Spanned<i64>>,
    pub stream_idle_timeout_secs: Option<&'a Spanned<i64>>,
    pub connect_timeout_secs: Option<&'a Spanned<i64>>,
    pub reply_timeout_secs: Option<&'a Spanned<i64>>,
    pub stream_max_line_mib: Option<&'a Spanned<i64>>,
    pub max_retries: Option<&'a Spanned<i64>>,
}

/// Effective model-request settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    /// Tokens the model can attend to; sent to Ollama as `num_ctx`.
    pub context_window: Sourced<u64>,
    /// Most tokens one reply may have.
    pub max_tokens: Sourced<u64>,
    pub temperature: Option<Sourced<f64>>,
    pub top_p: Option<Sourced<f64>>,
    pub seed: Option<Sourced<i64>>,
    /// A stream that sends no content for this long is an error (keep-alive comments and blank
    /// lines are not content).
    pub stream_idle_timeout_secs: Sourced<u64>,
    pub connect_timeout_secs: Sourced<u64>,
    /// The longest one reply may take, from sending the request (retries included) to its end.
    pub reply_timeout_secs: Sourced<u64>,
    /// The longest line of a streamed reply seek reads, in MiB; a longer one is an error.
    pub stream_max_line_mib: Sourced<u64>,
    /// Retries of a request that failed before its first token.
    pub max_retries: Sourced<u64>,
}

pub const DEFAULT_CONTEXT_WINDOW: u64 = 8192;
pub const DEFAULT_MAX_TOKENS: u64 = 4096;
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 120;
pub const DEFAULT_CONNECT_TIMEOUT_SECS: u64 = 10;
pub const DEFAULT_MAX_RETRIES: u64 = 3;
/// An hour: a slow CPU-only model writes 4,096 tokens well within it, and a server that drips
/// tokens for ever is still stopped.
pub const DEFAULT_REPLY_TIMEOUT_SECS: u64 = 3600;
/// One streamed line carries one token's event (a few hundred bytes); servers that send a whole
/// reply as one line stay far below this.
pub const DEFAULT_STREAM_MAX_LINE_MIB: u64 = 4;

impl Default for ModelSettings {
    fn default() -> Self {
        let d = |v| Sourced::new(v, Origin::Default);
        Self {
            context_window: d(DEFAULT_CONTEXT_WINDOW),
            max_tokens: d(DEFAULT_MAX_TOKENS),
            temperature: None,
            top_p: None,
            seed: None,
            stream_idle_timeout_secs: d(DEFAULT_IDLE_TIMEOUT_SECS),
            connect_timeout_secs: d(DEFAULT_CONNECT_TIMEOUT_SECS),
            max_retries: d(DEFAULT_MAX_RETRIES),
            reply_timeout_secs: d(DEFAULT_REPLY_TIMEOUT_SECS),
            stream_max_line_mib: d(DEFAULT_STREAM_MAX_LINE_MIB),
        }
    }
}

/// Resolves the settings; `origin` maps a byte offset in the file to where it is.
pub fn resolve(
    file: &ModelFile<'_>,
    origin: &dyn Fn(usize) -> Origin,
) -> Result<ModelSettings, ConfigError> {
    let defaults = ModelSettings::default();
    let int =
        |value: Option<&Spanned<i64>>, key: &str, min: i64, max: i64, default: Sourced<u64>| {
            let Some(v) = value else { return Ok(default) };
            let n = *v.get_ref();
            if (min..=max).contains(&n) {
                Ok(Sourced::new(n.unsigned_abs(), origin(v.span().start)))
            } else {
                Err(out_of_range(
                    origin(v.span().start),
                    key,
                    &n.to_string(),
                    &format!("a whole number from {min} to {max}"),
                ))
            }
        };
    let float = |value: Option<&Spanned<Number>>, key: &str, min: f64, max: f64| {
        let Some(v) = value else { return Ok(None) };
        let n = v.get_ref().as_f64();
        if (min..=max).contains(&n) {
            Ok(Some(Sourced::new(n, origin(v.span().start))))
        } else {
            Err(out_of_range(
                origin(v.span().start),
                key,
                &n.to_string(),
                &format!("a number from {min} to {max}"),
            ))
        }
    };
    Ok(ModelSettings {
        context_window: int(
            file.context_window,
            "context_window",
            256,
            10_000_000,
            defaults.context_window,
        )?,
        max_tokens: int(
            file.max_tokens,
            "max_tokens",
            1,
            1_000_000,
            defaults.max_tokens,
        )?,
        temperature: float(file.temperature, "temperature", 0.0, 2.0)?,
        top_p: float(file.top_p, "top_p", 0.0, 1.0)?,
        seed: file
            .seed
            .map(|v| Sourced::new(*v.get_ref(), origin(v.span().start))),
        stream_idle_timeout_secs: int(
            file.stream_idle_timeout_secs,
            "stream_idle_timeout_secs",
            1,
            86_400,
            defaults.stream_idle_timeout_secs,
        )?,
        connect_timeout_secs: int(
            file.connect_timeout_secs,
            "connect_timeout_secs",
            1,
            3600,
            defaults.connect_timeout_secs,
        )?,
        max_retries: int(file.max_retries, "max_retries", 0, 20, defaults.max_retries)?,
        reply_timeout_secs: int(
            file.reply_timeout_secs,
            "reply_timeout_secs",
            1,
            7 * 86_400,
            defaults.reply_timeout_secs,
        )?,
        stream_max_line_mib: int(
            file.stream_max_line_mib,
            "stream_max_line_mib",
            1,
            1024,
            defaults.stream_max_line_mib,
        )?,
    })
}

fn out_of_range(origin: Origin, key: &str, value: &str, expected: &str) -> ConfigError {
    ConfigError::Invalid {
        origin,
        key: key.to_owned(),
        value: value.to_owned(),
        expected: format!("expected {expected}"),
    }
}
