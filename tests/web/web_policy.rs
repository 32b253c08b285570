//! Tests of `web::policy`: schemes, every private range and the IPv4-in-IPv6 forms, the odd IPv4
//! spellings the URL parser normalises, trusted hosts from the user's prompt, and the resolver
//! refusing names that lead only to private addresses.

use std::net::IpAddr;
use std::sync::Arc;

use reqwest::dns::{Name, Resolve};
use seek::web::policy::{PrivateResolution, UrlPolicy, UrlRefused, is_private, resolver};

fn ip(text: &str) -> IpAddr {
    text.parse().expect("a valid literal address")
}

#[test]
fn private_v4_ranges() {
    for private in [
        "127.0.0.1",
        "127.255.0.9",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "100.127.255.255",
        "0.0.0.0",
        "0.1.2.3",
        "255.255.255.255",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "192.0.0.8",
        "198.18.0.1",
        "198.19.255.255",
        "192.0.2.1",
        "198.51.100.7",
        "203.0.113.9",
    ] {
        assert!(is_private(ip(private)), "{private}");
    }
    for public in [
        "8.8.8.8",
        "1.1.1.1",
        "172.15.255.255",
        "172.32.0.1",
        "100.63.255.255",
        "100.128.0.1",
        "192.169.0.1",
        "198.20.0.1",
        "223.255.255.255",
        "192.0.1.1",
    ] {
        assert!(!is_private(ip(public)), "{public}");
    }
}

#[test]
fn private_v6_ranges_and_embedded_v4() {
    for private in [
        "::1",
        "::",
        "fc00::1",
        "fd12:3456::1",
        "fe80::1",
        "febf::1",
        "fec0::1",
        "ff02::1",
        "2001:db8::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "::127.0.0.1",
        "64:ff9b::7f00:1",
        "64:ff9b::a00:1",
        "64:ff9b:1::1",
        "2002:7f00:1::1",
        "2002:c0a8:101::1",
    ] {
        assert!(is_private(ip(private)), "{private}");
    }
    for public in [
        "2606:4700::1111",
        "2001:4860:4860::8888",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ] {
        assert!(!is_private(ip(public)), "{public}");
    }
}

#[test]
fn only_http_and_https_are_opened() {
    let policy = UrlPolicy::new(false);
    assert!(policy.check("https://example.com/a?b#c").is_ok());
    assert!(policy.check("  http://example.com  ").is_ok());
    for (raw, scheme) in [
        ("file:///etc/passwd", "file"),
        ("javascript:alert(1)", "javascript"),
        ("data:text/html,hi", "data"),
        ("chrome://settings", "chrome"),
        ("ftp://example.com/", "ftp"),
    ] {
        match policy.check(raw) {
            Err(UrlRefused::Scheme { scheme: s, .. }) => assert_eq!(s, scheme, "{raw}"),
            other => panic!("{raw}: {other:?}"),
        }
    }
    for raw in ["", "example.com", "http://", "not a url", "http://[::1"] {
        assert!(
            matches!(policy.check(raw), Err(UrlRefused::Unparsable { .. })),
            "{raw}: {:?}",
            policy.check(raw)
        );
    }
}

#[test]
fn odd_spellings_of_loopback_are_refused() {
    let policy = UrlPolicy::new(false);
    for raw in [
        "http://127.0.0.1/",
        "http://0x7f.1/",
        "http://2130706433/",
        "http://127.1/",
        "http://0177.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::1]:8080/",
        "http://0/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://app.localhost:3000/",
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1./",
    ] {
        assert!(
            matches!(policy.check(raw), Err(UrlRefused::Private { .. })),
            "{raw}: {:?}",
            policy.check(raw)
        );
    }
    assert!(UrlPolicy::new(true).check("http://0x7f.1/").is_ok());
}

#[test]
fn hosts_the_user_wrote_are_trusted() {
    let mut policy = UrlPolicy::new(false);
    policy.trust_hosts_in(
        "Check http://127.0.0.1:8080/status, then localhost:3000 and (192.168.1.5:9000/x). Meet at 10:30.",
    );
    assert_eq!(
        policy.trusted_hosts(),
        ["127.0.0.1", "localhost", "192.168.1.5"]
    );
    assert!(policy.check("http://127.0.0.1:9999/other").is_ok());
    assert!(policy.check("http://localhost/").is_ok());
    assert!(policy.check("http://192.168.1.5/").is_ok());
    assert!(policy.check("http://10.0.0.1/").is_err());
    assert!(policy.allows("localhost", ip("127.0.0.1")));
    assert!(!policy.allows("evil.test", ip("127.0.0.1")));
    assert!(policy.allows("evil.test", ip("93.184.216.34")));
    assert!(UrlPolicy::new(true).allows("evil.test", ip("127.0.0.1")));

    let mut policy = UrlPolicy::new(false);
    policy.trust_hosts_in("visit HTTPS://[::1]:8443/ please");
    assert!(
        policy.check("https://[::1]/").is_ok(),
        "{:?}",
        policy.trusted_hosts()
    );
}

#[tokio::test]
async fn the_resolver_drops_private_answers() {
    let refusing = resolver(Arc::new(UrlPolicy::new(false)));
    let name: Name = "localhost".parse().expect("a valid name");
    let error = match refusing.resolve(name).await {
        Ok(addrs) => panic!("resolved to {:?}", addrs.collect::<Vec<_>>()),
        Err(error) => error,
    };
    let private = error
        .downcast_ref::<PrivateResolution>()
        .expect("the policy's error");
    assert_eq!(private.host, "localhost");
    assert!(private.addresses.contains("127.0.0.1") || private.addresses.contains("::1"));

    let allowing = resolver(Arc::new(UrlPolicy::new(true)));
    let name: Name = "localhost".parse().expect("a valid name");
    let found: Vec<_> = allowing.resolve(name).await.expect("resolves").collect();
    assert!(found.iter().all(|a| a.ip().is_loopback()) && !found.is_empty());
}
