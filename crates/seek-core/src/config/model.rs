//! Model-request settings: context window, generation limits, timeouts and retries.
//!
//! Owns the struct they land in and their defaults (their keys and bounds are the settings
//! table's, which names this file; `resolve.rs` reads them). It must not talk to a server; the
//! `llm` module reads them.

use super::{Origin, Sourced};

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

pub(crate) const DEFAULT_CONTEXT_WINDOW: u64 = 8192;
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 4096;
pub(crate) const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 120;
pub(crate) const DEFAULT_CONNECT_TIMEOUT_SECS: u64 = 10;
pub(crate) const DEFAULT_MAX_RETRIES: u64 = 3;
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
