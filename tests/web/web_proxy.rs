//! The browser's policy proxy (`seek::web::proxy`), driven over real sockets on loopback:
//! private targets refused in every form (literal, `localhost`, a name resolving to one, v6,
//! v4-mapped, `CONNECT`) without the origin seeing anything; trusted or allowed targets
//! forwarded (bodies, chunked responses, redirects untouched, keep-alive across hosts, one
//! lookup per request); `CONNECT` and websocket tunnels; the process-group filter; malformed
//! and oversized requests; stopping on drop.
//!
//! Names are resolved by a fake resolver (the tests may use loopback addresses only). Nothing
//! sleeps to wait: every wait is on a socket, bounded so that a broken proxy fails the test
//! instead of hanging the suite.

use crate::proxy_site;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use proxy_site::{
    Origin, bounded, client, closed_silently, echo_server, header_of, proxy, proxy_with,
    read_response, send, status_of,
};
use seek::web::policy::UrlPolicy;
use seek::web::proxy::{PeerFilter, PolicyProxy, Refusal, RefusalReason};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// ---------------------------------------------------------------------------------------------
// Refusals.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_targets_are_refused_in_every_form_and_never_reached() {
    let origin = Origin::start().await;
    let (proxy, _) = proxy(UrlPolicy::new(false)).await;
    let client = client(&proxy);
    let port = origin.port();
    let urls = [
        format!("http://127.0.0.1:{port}/echo"),
        format!("http://127.1:{port}/echo"),
        format!("http://2130706433:{port}/echo"),
        format!("http://localhost:{port}/echo"),
        format!("http://evil.test:{port}/echo"),
        format!("http://metadata.test:{port}/latest/meta-data/"),
        format!("http://mapped.test:{port}/echo"),
        format!("http://six.test:{port}/echo"),
        format!("http://lan.test:{port}/echo"),
        format!("http://[::1]:{port}/echo"),
        format!("http://[::ffff:127.0.0.1]:{port}/echo"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        format!("http://[fe80::1]:{port}/"),
    ];
    for url in &urls {
        let response = bounded(url, client.get(url).send()).await.unwrap();
        assert_eq!(response.status(), 403, "{url}");
        let text = response.text().await.unwrap();
        assert!(text.contains("refused"), "{url}: {text}");
    }
    assert!(origin.seen().is_empty(), "{:?}", origin.seen());

    let refused = proxy.refused();
    assert_eq!(refused.len(), urls.len(), "{refused:#?}");
    let evil = refused
        .iter()
        .find(|r| r.target.contains("evil.test"))
        .unwrap();
    assert!(
        matches!(evil.reason, RefusalReason::Resolved { .. }),
        "{evil:?}"
    );
    assert!(evil.reason.to_string().contains("127.0.0.1"), "{evil:?}");
    let literal = &refused[0];
    assert!(
        matches!(literal.reason, RefusalReason::Url(_)),
        "{literal:?}"
    );
    let metadata = refused
        .iter()
        .find(|r| r.target.contains("metadata.test"))
        .unwrap();
    assert!(metadata.reason.to_string().contains("169.254.169.254"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_to_a_private_address_is_refused() {
    let (echo, accepted) = echo_server().await;
    let (proxy, _) = proxy(UrlPolicy::new(false)).await;
    let port = echo.port();
    for authority in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("evil.test:{port}"),
        format!("mapped.test:{port}"),
        format!("[::1]:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        "metadata.test:443".to_owned(),
        "10.0.0.1:443".to_owned(),
    ] {
        let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
        let (_, head) = send(&proxy, request.as_bytes()).await;
        assert_eq!(status_of(&head), 403, "{authority}: {head}");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
    assert_eq!(proxy.refused().len(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_resolver_refuses_localhost_too() {
    let origin = Origin::start().await;
    let proxy = PolicyProxy::start(Arc::new(UrlPolicy::new(false)), PeerFilter::Any)
        .await
        .unwrap();
    let url = format!("http://localhost:{}/echo", origin.port());
    let response = client(&proxy).get(&url).send().await.unwrap();
    assert_eq!(response.status(), 403);
    assert!(origin.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_to_the_proxy_itself_is_refused() {
    let (proxy, _) = proxy(UrlPolicy::new(true)).await;
    let url = format!("http://{}/", proxy.address());
    let response = client(&proxy).get(&url).send().await.unwrap();
    assert_eq!(response.status(), 403);
    let refused: Vec<Refusal> = proxy.refused();
    assert!(
        matches!(refused[0].reason, RefusalReason::Loop { .. }),
        "{refused:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Forwarding.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_host_is_forwarded_in_origin_form_without_proxy_headers() {
    let origin = Origin::start().await;
    let mut policy = UrlPolicy::new(false);
    policy.trust_hosts_in(&format!("read http://127.0.0.1:{}/ please", origin.port()));
    let (proxy, _) = proxy(policy).await;
    let client = seek::tls::client_builder()
        .proxy(
            reqwest::Proxy::all(format!("http://{}", proxy.address()))
                .unwrap()
                .basic_auth("user", "secret"),
        )
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{}/echo?x=1", origin.port());
    let response = client
        .post(&url)
        .header("x-kept", "yes")
        .body("the body")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert_eq!(
        text,
        format!(
            "POST /echo?x=1 host=127.0.0.1:{} body=the body",
            origin.port()
        )
    );
    let seen = origin.seen();
    assert_eq!(seen.len(), 1);
    let headers = &seen[0].headers;
    assert!(!headers.contains_key("proxy-authorization"), "{headers:?}");
    assert_eq!(headers.get("x-kept").map(String::as_str), Some("yes"));
    assert_eq!(headers.get("connection").map(String::as_str), Some("close"));
    assert!(proxy.refused().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_name_may_resolve_to_a_private_address() {
    let origin = Origin::start().await;
    let mut policy = UrlPolicy::new(false);
    policy.trust_hosts_in(&format!("see pinned.test:{}", origin.port()));
    let (proxy, _) = proxy(policy).await;
    let client = client(&proxy);
    let url = format!("http://pinned.test:{}/echo", origin.port());
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    // Trust is the name's, not the address's: another name for it stays refused.
    let url = format!("http://evil.test:{}/echo", origin.port());
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(origin.seen().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_responses_and_redirects_pass_through() {
    let origin = Origin::start().await;
    let (proxy, _) = proxy(UrlPolicy::new(true)).await;
    let client = client(&proxy);

    let url = format!("http://127.0.0.1:{}/chunked", origin.port());
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "first second third");

    let url = format!("http://127.0.0.1:{}/redirect", origin.port());
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 302);
    assert_eq!(
        response.headers().get("location").unwrap(),
        "http://127.0.0.1:1/admin?do=delete"
    );
    assert!(response.headers().get("alt-svc").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_browser_connection_serves_several_hosts_each_resolved_once() {
    let first = Origin::start().await;
    let second = Origin::start().await;
    let (proxy, resolver) = proxy(UrlPolicy::new(true)).await;
    let mut stream = TcpStream::connect(proxy.address()).await.unwrap();
    let requests = [
        format!("http://127.0.0.1:{}/one", first.port()),
        format!("http://pinned.test:{}/two", second.port()),
        format!("http://pinned.test:{}/three", second.port()),
    ];
    for url in &requests {
        let request = format!(
            "GET {url} HTTP/1.1\r\nHost: {}\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive, x-hop\r\nx-hop: 1\r\nContent-Length: 4\r\n\r\nbody",
            url.trim_start_matches("http://").split('/').next().unwrap()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let (status, _, body) = read_response(&mut stream).await;
        assert_eq!(status, 200, "{url}: {body}");
    }
    let seen = first.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].body.as_str()),
        ("GET", "body")
    );
    let seen = second.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].target, "/two");
    let host = format!("pinned.test:{}", second.port());
    assert_eq!(seen[0].headers.get("host"), Some(&host));
    assert!(
        !seen[0].headers.contains_key("x-hop"),
        "{:?}",
        seen[0].headers
    );
    assert!(!seen[0].headers.contains_key("proxy-connection"));
    // One lookup per request, none for the address.
    assert_eq!(
        *resolver.lookups.lock().unwrap(),
        vec!["pinned.test".to_owned(), "pinned.test".to_owned()]
    );
}

// ---------------------------------------------------------------------------------------------
// Tunnels.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_tunnels_bytes_both_ways_until_the_proxy_is_dropped() {
    let (echo, accepted) = echo_server().await;
    let (proxy, _) = proxy(UrlPolicy::new(true)).await;
    let request = format!("CONNECT {echo} HTTP/1.1\r\nHost: {echo}\r\n\r\n");
    let (mut stream, head) = send(&proxy, request.as_bytes()).await;
    assert_eq!(status_of(&head), 200, "{head}");

    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let (mut read, mut write) = stream.split();
    let sent = big.clone();
    let writer = async move { write.write_all(&sent).await.unwrap() };
    let mut back = vec![0u8; big.len()];
    let reader = read.read_exact(&mut back);
    let ((), got) = bounded("echo", async { tokio::join!(writer, reader) }).await;
    got.unwrap();
    assert_eq!(back, big);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);

    drop(proxy);
    assert!(closed_silently(&mut stream).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_upgrade_over_plain_http_becomes_a_tunnel() {
    let origin = Origin::start().await;
    let (proxy, _) = proxy(UrlPolicy::new(true)).await;
    let authority = format!("127.0.0.1:{}", origin.port());
    let request = format!(
        "GET http://{authority}/ws HTTP/1.1\r\nHost: {authority}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    let (mut stream, head) = send(&proxy, request.as_bytes()).await;
    assert_eq!(status_of(&head), 101, "{head}");
    assert_eq!(header_of(&head, "upgrade"), Some("websocket"));
    assert!(header_of(&head, "sec-websocket-accept").is_some(), "{head}");

    stream.write_all(b"frame one").await.unwrap();
    let mut back = [0u8; 9];
    bounded("ws echo", stream.read_exact(&mut back))
        .await
        .unwrap();
    assert_eq!(&back, b"frame one");
    let seen = origin.seen();
    assert_eq!(
        seen[0].headers.get("upgrade").map(String::as_str),
        Some("websocket")
    );
}

// ---------------------------------------------------------------------------------------------
// Who may connect.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_given_process_group_is_served() {
    let origin = Origin::start().await;
    let url = format!("http://127.0.0.1:{}/echo", origin.port());
    let request = format!("GET {url} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");

    // SAFETY: getpgrp has no preconditions and cannot fail.
    let own = unsafe { libc::getpgrp() };
    let (proxy, _) = proxy_with(UrlPolicy::new(true), PeerFilter::ProcessGroup(own)).await;
    let (_, head) = send(&proxy, request.as_bytes()).await;
    assert_eq!(status_of(&head), 200, "{head}");
    drop(proxy);

    let mut other = std::process::Command::new("sleep");
    std::os::unix::process::CommandExt::process_group(&mut other, 0);
    let mut other = other.arg("60").spawn().unwrap();
    let other_group = other.id() as i32;
    let (proxy, _) = proxy_with(UrlPolicy::new(true), PeerFilter::ProcessGroup(other_group)).await;
    let mut stream = TcpStream::connect(proxy.address()).await.unwrap();
    let _ = stream.write_all(request.as_bytes()).await;
    let refused = closed_silently(&mut stream).await;
    other.kill().unwrap();
    other.wait().unwrap();
    assert!(refused);
    assert_eq!(origin.seen().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Bad input.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_requests_get_an_error_not_a_crash() {
    let origin = Origin::start().await;
    let (proxy, _) = proxy(UrlPolicy::new(true)).await;
    let huge = format!(
        "GET http://127.0.0.1:{}/ HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        origin.port(),
        "a".repeat(100 * 1024)
    );
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (b"GARBAGE\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), 400),
        (
            b"GET https://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n".to_vec(),
            400,
        ),
        (
            b"CONNECT example.org HTTP/1.1\r\nHost: example.org\r\n\r\n".to_vec(),
            400,
        ),
        (
            b"CONNECT user@example.org:443 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            400,
        ),
        (b"CONNECT /path HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), 400),
        (b"GET http://[::1 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), 400),
        (
            b"GET http://no.such.name.test/ HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            502,
        ),
        (b"\x00\xff\xfe\r\n\r\n".to_vec(), 400),
        (huge.into_bytes(), 431),
    ];
    for (request, status) in cases {
        let (_, head) = send(&proxy, &request).await;
        let shown = String::from_utf8_lossy(&request[..request.len().min(60)]).into_owned();
        assert_eq!(status_of(&head), status, "{shown}: {head}");
    }
    // Still serving.
    let url = format!("http://127.0.0.1:{}/echo", origin.port());
    let response = client(&proxy).get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(origin.seen().len(), 1);
}
