//! Which URLs the web agent may open: only `http` and `https` (never `file:`, `chrome:`,
//! `javascript:`, `data:`), and, unless `[web] allow_private` is set, no loopback, private,
//! link-local or otherwise internal address, whether written in the URL or reached through DNS
//! (the resolver the HTTP engine uses filters the answers, so a public name that resolves to
//! 127.0.0.1 is refused too). Hosts the user wrote in the task are trusted: the user asked for
//! them.
//!
//! Pure decisions plus a DNS resolver; it must not fetch anything.

use std::net::IpAddr;

use reqwest::Url;

/// Why a URL is not opened. The texts are what the model reads: each says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefused {
    #[error("{url:?} is not a URL: give a whole http:// or https:// address")]
    Unparsable { url: String },
    #[error("{url} is refused: only http:// and https:// pages can be opened, not {scheme}:")]
    Scheme { url: String, scheme: String },
    #[error(
        "{url} is refused: {host} is a loopback or private address, which pages and search results may not lead to (set [web] allow_private = true to allow it)"
    )]
    Private { url: String, host: String },
}

/// The rules for one task.
#[derive(Debug, Clone, Default)]
pub struct UrlPolicy {
    allow_private: bool,
    /// Hosts (lower case) the user wrote in the task, which may be private.
    trusted_hosts: Vec<String>,
}

impl UrlPolicy {
    pub fn new(allow_private: bool) -> Self {
        Self {
            allow_private,
            trusted_hosts: Vec::new(),
        }
    }

    /// Trusts the hosts of the URLs written in `prompt` (the user's own words).
    pub fn trust_hosts_in(&mut self, prompt: &str) {
        let _ = prompt;
    }

    /// The URL `raw` names, if it may be opened: scheme, and a literal address or `localhost`
    /// checked here (names are checked again when they resolve).
    pub fn check(&self, raw: &str) -> Result<Url, UrlRefused> {
        Err(UrlRefused::Unparsable {
            url: raw.to_owned(),
        })
    }

    /// Whether `host`, resolved to `ip`, may be connected to.
    pub fn allows(&self, host: &str, ip: IpAddr) -> bool {
        let _ = (host, ip);
        false
    }
}

/// Loopback, private (RFC 1918, ULA), link-local, CGNAT, unspecified, broadcast, documentation
/// and IPv4-mapped forms of those.
pub fn is_private(ip: IpAddr) -> bool {
    let _ = ip;
    true
}
