//! What an HTTP client is built from: the configuration resolved into one value (`Settings`),
//! which the client and its side requests (the context window, the parameter count) read.
//! Plain data in its own file so those side requests need not name the client that calls them.

use std::time::Duration;

use super::retry::RetryPolicy;
use super::url::ServerUrl;
use crate::config::Wire;

/// Everything a client needs, resolved from the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    pub provider: &'static str,
    pub wire: Wire,
    pub url: ServerUrl,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    /// The longest wait for content (keep-alive lines are not content).
    pub idle_timeout: Duration,
    /// The longest one reply may take, retries included.
    pub reply_timeout: Duration,
    /// The longest streamed line read.
    pub max_line_bytes: usize,
    pub retry: RetryPolicy,
    pub context_window: u64,
}
