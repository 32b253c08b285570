//! Model-request settings: context window, generation limits, timeouts and retries.
//!
//! Owns their defaults (their keys and bounds, and `ModelSettings` they land in, are the
//! settings table's, which names this file). It must not talk to a server; the
//! `llm` module reads them.

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
