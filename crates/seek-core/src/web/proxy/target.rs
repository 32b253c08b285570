//! What one proxy request asks to reach, and whether seek's URL policy lets it: the target of
//! a `CONNECT host:port` or of an absolute-form `GET http://host/path`, checked as a URL
//! (scheme, addresses written in it, `localhost`), then the resolved addresses it may be
//! connected to (each checked with the name it was resolved from; the proxy's own address never).
//!
//! Pure decisions: it must not resolve names or open connections.

use std::net::{IpAddr, SocketAddr};

use hyper::Uri;

use super::RefusalReason;
use crate::web::policy::{UrlPolicy, UrlRefused};

/// Where a request goes, as the URL parser normalised it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// What the request named, as reported: `host:port` for `CONNECT`, else the URL.
    pub named: String,
    /// The URL the policy checked (`https://host:port/` for `CONNECT`).
    pub url: String,
    /// Lower case, IPv4 spellings (`0x7f.1`) as dotted quads, IPv6 without brackets.
    pub host: String,
    pub port: u16,
    /// The host's address when the request wrote one.
    pub literal: Option<IpAddr>,
    /// `host[:port]` as the origin's `Host` header (IPv6 bracketed, a default port left out).
    pub authority: String,
}

/// Why a request is not forwarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Denial {
    /// Not a proxy request seek can serve: answered 400 with this text.
    Bad(String),
    /// The URL policy forbids it: answered 403 and reported.
    Refused(RefusalReason),
}

/// The target of `CONNECT authority`: a host and an explicit port, nothing else.
pub(crate) fn connect_target(policy: &UrlPolicy, authority: &str) -> Result<Target, Denial> {
    let bad = || Denial::Bad(format!("CONNECT needs host:port, not {authority:?}"));
    if authority.is_empty() || authority.contains(['@', '/', '?', '#', '\\']) {
        return Err(bad());
    }
    let (_, port) = authority.rsplit_once(':').ok_or_else(bad)?;
    match port.parse::<u16>() {
        Ok(p) if p != 0 && port.bytes().all(|b| b.is_ascii_digit()) => {}
        _ => return Err(bad()),
    }
    let url = policy
        .check(&format!("https://{authority}/"))
        .map_err(|refused| match refused {
            UrlRefused::Unparsable { .. } => bad(),
            other => Denial::Refused(RefusalReason::Url(other)),
        })?;
    target_of(&url, authority.to_owned())
}

/// The target of a request in absolute form (`GET http://host/path`). `https://` in absolute
/// form is not served (a browser sends `CONNECT` for it); any other scheme is refused.
pub(crate) fn forward_target(policy: &UrlPolicy, uri: &Uri) -> Result<Target, Denial> {
    if uri.scheme().is_none() || uri.authority().is_none() {
        return Err(Denial::Bad(
            "this is a proxy: send the whole URL (GET http://host/path) or CONNECT host:port"
                .to_owned(),
        ));
    }
    let raw = uri.to_string();
    let url = policy.check(&raw).map_err(|refused| match refused {
        UrlRefused::Unparsable { .. } => Denial::Bad(format!("{raw:?} is not a URL")),
        other => Denial::Refused(RefusalReason::Url(other)),
    })?;
    if url.scheme() != "http" {
        return Err(Denial::Bad(format!(
            "{raw} must go through CONNECT: the proxy forwards only http:// in absolute form"
        )));
    }
    target_of(&url, url.to_string())
}

fn target_of(url: &reqwest::Url, named: String) -> Result<Target, Denial> {
    let bad = || Denial::Bad(format!("{named:?} names no host"));
    let written = url.host_str().filter(|h| !h.is_empty()).ok_or_else(bad)?;
    let port = url.port_or_known_default().ok_or_else(bad)?;
    if port == 0 {
        return Err(Denial::Bad(format!("{named:?} names port 0")));
    }
    let host = written
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let authority = match url.port() {
        Some(p) => format!("{written}:{p}"),
        None => written.to_owned(),
    };
    Ok(Target {
        named,
        url: url.to_string(),
        literal: host.parse().ok(),
        host,
        port,
        authority,
    })
}

/// The addresses `target` may be connected to, of those its name resolved to (`found`, or the
/// literal address): each must be allowed by the policy for that name, and none may be the
/// proxy itself (`own`; a request to it would loop). Refused when none is left.
pub(crate) fn pin(
    policy: &UrlPolicy,
    target: &Target,
    found: &[IpAddr],
    own: SocketAddr,
) -> Result<Vec<SocketAddr>, RefusalReason> {
    let is_own = |ip: IpAddr| {
        let ip = ip.to_canonical();
        target.port == own.port() && (ip == own.ip() || ip.is_unspecified())
    };
    let allowed: Vec<SocketAddr> = policy
        .allowed_addresses(&target.host, found)
        .into_iter()
        .filter(|ip| !is_own(*ip))
        .map(|ip| SocketAddr::new(ip, target.port))
        .collect();
    if !allowed.is_empty() {
        return Ok(allowed);
    }
    if found.iter().any(|ip| is_own(*ip)) {
        return Err(RefusalReason::Loop {
            url: target.url.clone(),
        });
    }
    Err(RefusalReason::Resolved {
        url: target.url.clone(),
        host: target.host.clone(),
        addresses: found
            .iter()
            .map(IpAddr::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> SocketAddr {
        "127.0.0.1:3128".parse().unwrap()
    }

    fn refused(result: Result<Target, Denial>) -> bool {
        matches!(result, Err(Denial::Refused(_)))
    }

    fn bad(result: Result<Target, Denial>) -> bool {
        matches!(result, Err(Denial::Bad(_)))
    }

    #[test]
    fn connect_needs_host_and_port() {
        let policy = UrlPolicy::new(true);
        for authority in [
            "",
            "example.org",
            "example.org:",
            "example.org:0",
            "example.org:+443",
            "example.org:70000",
            "user@example.org:443",
            "example.org:443/path",
            "[::1",
        ] {
            assert!(bad(connect_target(&policy, authority)), "{authority}");
        }
        let target = connect_target(&policy, "Example.ORG:8443").unwrap();
        assert_eq!(target.host, "example.org");
        assert_eq!(target.port, 8443);
        assert_eq!(target.literal, None);
        assert_eq!(target.named, "Example.ORG:8443");
    }

    #[test]
    fn connect_to_private_addresses_is_refused_in_every_spelling() {
        let policy = UrlPolicy::new(false);
        for authority in [
            "127.0.0.1:443",
            "127.1:443",
            "0x7f.1:80",
            "2130706433:443",
            "localhost:443",
            "api.localhost:443",
            "[::1]:443",
            "[::ffff:127.0.0.1]:443",
            "[fe80::1]:443",
            "169.254.169.254:80",
            "10.0.0.1:443",
            "100.64.0.1:443",
            "0.0.0.0:443",
            "224.0.0.1:443",
        ] {
            assert!(refused(connect_target(&policy, authority)), "{authority}");
        }
        assert!(connect_target(&policy, "93.184.215.14:443").is_ok());
        let v6 = connect_target(&UrlPolicy::new(true), "[::1]:8443").unwrap();
        assert_eq!(v6.host, "::1");
        assert_eq!(v6.literal, Some("::1".parse().unwrap()));
    }

    #[test]
    fn trusted_hosts_pass_the_check() {
        let mut policy = UrlPolicy::new(false);
        policy.trust_hosts_in("look at http://127.0.0.1:8000/ please");
        assert!(connect_target(&policy, "127.0.0.1:9999").is_ok());
        let uri: Uri = "http://127.0.0.1:8000/admin".parse().unwrap();
        assert!(forward_target(&policy, &uri).is_ok());
        assert!(refused(connect_target(&policy, "127.0.0.2:443")));
    }

    #[test]
    fn forwarding_takes_absolute_http_only() {
        let policy = UrlPolicy::new(false);
        let uri: Uri = "/index.html".parse().unwrap();
        assert!(bad(forward_target(&policy, &uri)));
        let uri: Uri = "https://example.org/".parse().unwrap();
        assert!(bad(forward_target(&policy, &uri)));
        let uri: Uri = "ftp://example.org/".parse().unwrap();
        assert!(refused(forward_target(&policy, &uri)));
        let uri: Uri = "http://127.0.0.1:8080/x".parse().unwrap();
        assert!(refused(forward_target(&policy, &uri)));
        let uri: Uri = "http://0x7f.1/x".parse().unwrap();
        assert!(refused(forward_target(&policy, &uri)));

        let uri: Uri = "http://Example.org/a?b=c".parse().unwrap();
        let target = forward_target(&policy, &uri).unwrap();
        assert_eq!(target.host, "example.org");
        assert_eq!(target.port, 80);
        assert_eq!(target.authority, "example.org");
        let uri: Uri = "http://[2001:4860::1]:8080/".parse().unwrap();
        let target = forward_target(&policy, &uri).unwrap();
        assert_eq!(target.authority, "[2001:4860::1]:8080");
        assert_eq!(target.port, 8080);
    }

    #[test]
    fn pinning_keeps_only_allowed_addresses() {
        let policy = UrlPolicy::new(false);
        let target = connect_target(&policy, "rebind.example:443").unwrap();
        let found: Vec<IpAddr> = ["127.0.0.1", "93.184.215.14", "::ffff:10.0.0.1", "fe80::1"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let pinned = pin(&policy, &target, &found, own()).unwrap();
        assert_eq!(pinned, vec!["93.184.215.14:443".parse().unwrap()]);

        let private: Vec<IpAddr> = ["127.0.0.1", "169.254.169.254", "::ffff:127.0.0.1", "::1"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        for ip in &private {
            let refusal = pin(&policy, &target, &[*ip], own()).unwrap_err();
            assert!(matches!(refusal, RefusalReason::Resolved { .. }), "{ip}");
        }
        let all = pin(&policy, &target, &private, own()).unwrap_err();
        assert!(all.to_string().contains("169.254.169.254"), "{all}");
    }

    #[test]
    fn the_proxy_itself_is_never_a_target() {
        let policy = UrlPolicy::new(true);
        let target = connect_target(&policy, "loop.example:3128").unwrap();
        for ip in ["127.0.0.1", "::ffff:127.0.0.1", "0.0.0.0", "::"] {
            let refusal = pin(&policy, &target, &[ip.parse().unwrap()], own()).unwrap_err();
            assert!(matches!(refusal, RefusalReason::Loop { .. }), "{ip}");
        }
        let other_port = connect_target(&policy, "loop.example:3129").unwrap();
        assert!(pin(&policy, &other_port, &["127.0.0.1".parse().unwrap()], own()).is_ok());
    }
}
