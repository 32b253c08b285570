//! Which URLs the web agent may open: only `http` and `https` (never `file:`, `chrome:`,
//! `javascript:`, `data:`), and, unless `[web] allow_private` is set, no loopback, private,
//! link-local or otherwise internal address, whether written in the URL or reached through DNS
//! (the resolver the HTTP engine uses filters the answers, so a public name that resolves to
//! 127.0.0.1 is refused too). Hosts the user wrote in the task are trusted: the user asked for
//! them.
//!
//! Pure decisions plus a DNS resolver; it must not fetch anything.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

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

/// A name whose every address the policy forbids: the resolver's error, found again by the
/// reader in reqwest's error chain to say "refused" rather than "unreachable".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{host} resolves only to loopback or private addresses ({addresses})")]
pub struct PrivateResolution {
    pub host: String,
    pub addresses: String,
}

/// The rules for one task.
#[derive(Debug, Clone, Default)]
pub struct UrlPolicy {
    allow_private: bool,
    /// Hosts (lower case) the user wrote in the task, which may be private.
    trusted_hosts: Vec<String>,
    /// For each trusted *name* resolved so far: whether it may lead to private addresses, as its
    /// first resolution decided (shared by clones: one task's readers see one answer).
    first_seen: Arc<std::sync::Mutex<std::collections::HashMap<String, bool>>>,
}

impl UrlPolicy {
    pub fn new(allow_private: bool) -> Self {
        Self {
            allow_private,
            trusted_hosts: Vec::new(),
            first_seen: Arc::default(),
        }
    }

    /// Trusts the hosts of the URLs written in `prompt` (the user's own words): `http(s)://…`
    /// addresses, and bare `host:port` (`localhost:8080`, `192.168.1.5:3000`).
    pub fn trust_hosts_in(&mut self, prompt: &str) {
        let separators = |c: char| c.is_whitespace() || "<>\"'`(){},;".contains(c);
        for word in prompt.split(separators) {
            let word = word.trim_end_matches(['.', ':', '!', '?']);
            if let Some(host) = written_host(word)
                && !self.trusted_hosts.contains(&host)
            {
                self.trusted_hosts.push(host);
            }
        }
    }

    /// The hosts trusted so far (normalised: lower case, no brackets, no trailing dot).
    pub fn trusted_hosts(&self) -> &[String] {
        &self.trusted_hosts
    }

    fn trusts(&self, host: &str) -> bool {
        let host = normalise_host(host);
        self.trusted_hosts.contains(&host)
    }

    /// The URL `raw` names, if it may be opened: scheme, and a literal address or `localhost`
    /// checked here (names are checked again when they resolve).
    pub fn check(&self, raw: &str) -> Result<Url, UrlRefused> {
        let trimmed = raw.trim();
        let url = Url::parse(trimmed).map_err(|_| UrlRefused::Unparsable {
            url: trimmed.to_owned(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(UrlRefused::Scheme {
                url: url.to_string(),
                scheme: url.scheme().to_owned(),
            });
        }
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
            return Err(UrlRefused::Unparsable {
                url: trimmed.to_owned(),
            });
        };
        // The URL parser has already normalised every IPv4 spelling (`0x7f.1`, `2130706433`,
        // `127.1`) to a dotted quad and IPv6 to its bracketed form.
        let private = match normalise_host(host).parse::<IpAddr>() {
            Ok(ip) => is_private(ip),
            Err(_) => is_localhost(host),
        };
        if private && !self.allow_private && !self.trusts(host) {
            return Err(UrlRefused::Private {
                host: host.to_owned(),
                url: url.to_string(),
            });
        }
        Ok(url)
    }

    /// Whether `host`, resolved to `ip`, may be connected to, without regard to earlier
    /// resolutions (`allowed_addresses` is what connections use).
    pub fn allows(&self, host: &str, ip: IpAddr) -> bool {
        self.allow_private || !is_private(ip) || self.trusts(host)
    }

    /// Of the addresses `host` resolved to, those that may be connected to. A trusted host the
    /// user wrote as a name may lead to private addresses only when it looks internal
    /// (`localhost`, one label such as `nas`) or its first resolution held a private address: a
    /// typed name first seen public stays public for the rest of the task, so its DNS cannot
    /// later rebind it onto an internal service.
    pub(crate) fn allowed_addresses(&self, host: &str, found: &[IpAddr]) -> Vec<IpAddr> {
        let private_ok =
            self.allow_private || (self.trusts(host) && self.name_may_be_private(host, found));
        found
            .iter()
            .copied()
            .filter(|ip| private_ok || !is_private(*ip))
            .collect()
    }

    /// For a trusted host: whether it may lead to private addresses (see `allowed_addresses`).
    fn name_may_be_private(&self, host: &str, found: &[IpAddr]) -> bool {
        let name = normalise_host(host);
        if name.parse::<IpAddr>().is_ok() || is_localhost(&name) || !name.contains('.') {
            return true;
        }
        let mut seen = self.first_seen.lock().unwrap_or_else(|e| e.into_inner());
        *seen
            .entry(name)
            .or_insert_with(|| found.iter().any(|ip| is_private(*ip)))
    }
}

/// The host `word` names when it is a URL or a `host:port` the user wrote.
fn written_host(word: &str) -> Option<String> {
    let lower = word.to_ascii_lowercase();
    if let Some(start) = lower.find("http://").or_else(|| lower.find("https://")) {
        let url = Url::parse(&word[start..]).ok()?;
        return url.host_str().map(normalise_host);
    }
    // `host:port`: the host must look like a name or an address (a dot, brackets or
    // localhost), so that "at 10:30" trusts nothing.
    let (host, rest) = word.rsplit_once(':')?;
    let port = rest.split('/').next().unwrap_or_default();
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let host_lower = host.to_ascii_lowercase();
    let looks_like_host = host_lower == "localhost"
        || host_lower.ends_with(".localhost")
        || (host.contains('.') && host.chars().any(|c| c.is_ascii_alphanumeric()))
        || (host.starts_with('[') && host.ends_with(']'));
    if !looks_like_host {
        return None;
    }
    let url = Url::parse(&format!("http://{word}")).ok()?;
    url.port()?;
    url.host_str().map(normalise_host)
}

fn normalise_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

fn is_localhost(name: &str) -> bool {
    let name = normalise_host(name);
    name == "localhost" || name.ends_with(".localhost")
}

/// Loopback, private (RFC 1918, ULA), link-local, CGNAT, unspecified, broadcast, documentation
/// and IPv4-mapped forms of those.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => is_private_v6(v6),
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    a == 0 // "this network"
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // TEST-NET-1
        || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18/15
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // TEST-NET-3
        || a >= 224 // multicast 224/4, reserved 240/4, broadcast
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    if ip.is_loopback() || ip.is_unspecified() {
        return true;
    }
    let s = ip.segments();
    let embedded_v4 = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    // IPv4-mapped ::ffff:a.b.c.d and the deprecated IPv4-compatible ::a.b.c.d.
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return is_private_v4(embedded_v4(s[6], s[7]));
    }
    // NAT64: the well-known prefix embeds an IPv4 address; the local-use one is internal.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_private_v4(embedded_v4(s[6], s[7]));
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return true;
    }
    // 6to4 embeds an IPv4 address after its prefix.
    if s[0] == 0x2002 {
        return is_private_v4(embedded_v4(s[1], s[2]));
    }
    (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated)
        || (s[0] & 0xff00) == 0xff00 // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
}

/// A DNS resolver for reqwest that asks the system resolver and keeps only the addresses
/// `policy` allows for the name, so that a public name pointing at 127.0.0.1 (DNS rebinding)
/// is refused like the literal address would be.
pub fn resolver(policy: Arc<UrlPolicy>) -> Arc<PolicyResolver> {
    Arc::new(PolicyResolver { policy })
}

/// The resolver `resolver` makes (a concrete type: reqwest takes `Arc<R>` of a sized `R`).
pub struct PolicyResolver {
    policy: Arc<UrlPolicy>,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let ips: Vec<IpAddr> = found.iter().map(SocketAddr::ip).collect();
            let allowed: Vec<SocketAddr> = policy
                .allowed_addresses(&host, &ips)
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            if allowed.is_empty() && !found.is_empty() {
                let addresses = found
                    .iter()
                    .map(|a| a.ip().to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(PrivateResolution { host, addresses }.into());
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().filter_map(|ip| ip.parse().ok()).collect()
    }

    #[test]
    fn a_typed_name_first_seen_public_cannot_rebind_to_a_private_address() {
        let mut policy = UrlPolicy::new(false);
        policy.trust_hosts_in("read https://news.example.org/today");
        let public = ips(&["93.184.216.34"]);
        assert_eq!(
            policy.allowed_addresses("news.example.org", &public),
            public
        );
        // The attacker's DNS now answers an internal address.
        assert!(
            policy
                .allowed_addresses("news.example.org", &ips(&["127.0.0.2", "169.254.169.254"]))
                .is_empty()
        );
        // A clone (another reader of the same task) remembers too.
        let clone = policy.clone();
        assert!(
            clone
                .allowed_addresses("NEWS.example.org.", &ips(&["10.0.0.5"]))
                .is_empty()
        );
    }

    #[test]
    fn typed_internal_names_and_addresses_stay_reachable() {
        let mut policy = UrlPolicy::new(false);
        policy.trust_hosts_in("see http://nas:8080/ and http://intranet.corp.example:81/ and http://127.0.0.1:3000/ and localhost:9000");
        let loopback = ips(&["127.0.0.1"]);
        assert_eq!(
            policy.allowed_addresses("nas", &ips(&["192.168.1.4"])),
            ips(&["192.168.1.4"])
        );
        assert_eq!(policy.allowed_addresses("127.0.0.1", &loopback), loopback);
        assert_eq!(policy.allowed_addresses("localhost", &loopback), loopback);
        // First seen private: an internal name the user asked for.
        assert_eq!(
            policy.allowed_addresses("intranet.corp.example", &ips(&["10.1.2.3"])),
            ips(&["10.1.2.3"])
        );
        // Untrusted names never lead to private addresses; public ones pass.
        assert!(
            policy
                .allowed_addresses("evil.example", &loopback)
                .is_empty()
        );
        assert_eq!(
            policy.allowed_addresses("evil.example", &ips(&["93.184.216.34", "127.0.0.1"])),
            ips(&["93.184.216.34"])
        );
        let open = UrlPolicy::new(true);
        assert_eq!(open.allowed_addresses("evil.example", &loopback), loopback);
    }
}
