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

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use seek::web::policy::UrlPolicy;
use seek::web::proxy::{PeerFilter, PolicyProxy, ProxySettings, Refusal, RefusalReason, Resolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BOUND: Duration = Duration::from_secs(60);

async fn bounded<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(BOUND, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what}: no answer within {BOUND:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// An origin server: records every request; `/redirect`, `/chunked`, `/ws` (101 then echo),
// anything else echoes the request back as text.

#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    headers: HashMap<String, String>,
    body: String,
}

struct Origin {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Origin {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let record = Arc::clone(&record);
                let service =
                    hyper::service::service_fn(move |request| answer(Arc::clone(&record), request));
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        Self { addr, seen }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

type TestBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn answer(
    record: Arc<Mutex<Vec<Seen>>>,
    mut request: Request<Incoming>,
) -> Result<Response<TestBody>, Infallible> {
    let upgrade = hyper::upgrade::on(&mut request);
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let headers: HashMap<String, String> = parts
        .headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("?").to_owned()))
        .collect();
    let seen = Seen {
        method: parts.method.to_string(),
        target: parts.uri.to_string(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    record.lock().unwrap().push(seen.clone());
    let full = |text: String| Full::new(Bytes::from(text)).boxed();
    let response = match parts.uri.path() {
        "/redirect" => Response::builder()
            .status(StatusCode::FOUND)
            .header("location", "http://127.0.0.1:1/admin?do=delete")
            .header("alt-svc", "h3=\":443\"")
            .body(full(String::new()))
            .unwrap(),
        "/chunked" => {
            let chunks = ["first ", "second ", "third"]
                .map(|c| Ok::<_, Infallible>(Frame::data(Bytes::from(c))));
            let body = StreamBody::new(futures_util::stream::iter(chunks));
            Response::new(BodyExt::boxed(body))
        }
        "/ws" => {
            tokio::spawn(async move {
                if let Ok(upgraded) = upgrade.await {
                    let mut io = TokioIo::new(upgraded);
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = io.read(&mut buf).await {
                        if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            });
            Response::builder()
                .status(StatusCode::SWITCHING_PROTOCOLS)
                .header("connection", "upgrade")
                .header("upgrade", "websocket")
                .header("sec-websocket-accept", "dGhlIHNhbXBsZSBub25jZQ==")
                .body(full(String::new()))
                .unwrap()
        }
        _ => {
            let text = format!(
                "{} {} host={} body={}",
                seen.method,
                seen.target,
                seen.headers.get("host").map_or("-", String::as_str),
                seen.body
            );
            Response::new(full(text))
        }
    };
    Ok(response)
}

/// A TCP echo server (what a `CONNECT` tunnel reaches), counting its connections.
async fn echo_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    (addr, accepted)
}

// ---------------------------------------------------------------------------------------------
// The proxy with a fake resolver.

#[derive(Default)]
struct FakeResolver {
    names: HashMap<String, Vec<IpAddr>>,
    lookups: Mutex<Vec<String>>,
}

impl Resolver for FakeResolver {
    fn lookup(&self, host: String, _port: u16) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        self.lookups.lock().unwrap().push(host.clone());
        let found = self.names.get(&host).cloned();
        Box::pin(async move {
            found.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such name"))
        })
    }
}

const NAMES: &[(&str, &[&str])] = &[
    ("evil.test", &["127.0.0.1"]),
    ("metadata.test", &["169.254.169.254"]),
    ("mapped.test", &["::ffff:127.0.0.1"]),
    ("six.test", &["::1"]),
    ("lan.test", &["192.168.1.1", "10.0.0.1", "fe80::1"]),
    ("pinned.test", &["127.0.0.1"]),
];

async fn proxy_with(policy: UrlPolicy, peers: PeerFilter) -> (PolicyProxy, Arc<FakeResolver>) {
    let resolver = Arc::new(FakeResolver {
        names: NAMES
            .iter()
            .map(|(name, ips)| {
                let ips = ips.iter().map(|ip| ip.parse().unwrap()).collect();
                ((*name).to_owned(), ips)
            })
            .collect(),
        lookups: Mutex::default(),
    });
    let settings = ProxySettings {
        connect_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(30),
        resolver: Arc::clone(&resolver) as Arc<dyn Resolver>,
        ..ProxySettings::default()
    };
    let proxy = PolicyProxy::start_with(Arc::new(policy), peers, settings)
        .await
        .unwrap();
    (proxy, resolver)
}

async fn proxy(policy: UrlPolicy) -> (PolicyProxy, Arc<FakeResolver>) {
    proxy_with(policy, PeerFilter::Any).await
}

fn client(proxy: &PolicyProxy) -> reqwest::Client {
    reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(format!("http://{}", proxy.address())).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .timeout(BOUND)
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP/1.1 over a socket, for what reqwest does not send.

/// Reads a response head (up to the blank line, byte by byte so nothing after it is taken).
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = bounded("response head", stream.read(&mut byte))
            .await
            .unwrap_or(0);
        if n == 0 {
            break;
        }
        head.push(byte[0]);
        assert!(head.len() < 1 << 20, "endless head");
    }
    String::from_utf8_lossy(&head).into_owned()
}

fn status_of(head: &str) -> u16 {
    head.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn header_of<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// A whole response with a `Content-Length` body: status, head, body.
async fn read_response(stream: &mut TcpStream) -> (u16, String, String) {
    let head = read_head(stream).await;
    let length: usize = header_of(&head, "content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    bounded("response body", stream.read_exact(&mut body))
        .await
        .unwrap();
    (
        status_of(&head),
        head,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

async fn send(proxy: &PolicyProxy, request: &[u8]) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(proxy.address()).await.unwrap();
    stream.write_all(request).await.unwrap();
    let head = read_head(&mut stream).await;
    (stream, head)
}

/// Whether the proxy closed `stream` without a byte of answer.
async fn closed_silently(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    match bounded("close", stream.read(&mut buf)).await {
        Ok(0) | Err(_) => true,
        Ok(_) => false,
    }
}

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
    let client = reqwest::Client::builder()
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
