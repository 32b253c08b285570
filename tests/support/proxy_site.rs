//! Servers and raw-HTTP helpers for the policy proxy's tests (`tests/web/web_proxy.rs`): an origin
//! server on loopback that records what reached it (`/redirect`, `/chunked`, `/ws` upgrading to
//! an echo, anything else echoed back as text), a TCP echo server for `CONNECT` tunnels, a fake
//! resolver, the proxy started with it, and a byte-exact reader of response heads.
//!
//! Every wait is on a socket and bounded, so a broken proxy fails a test instead of hanging it.

#![allow(dead_code)]

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
use seek::web::proxy::{PeerFilter, PolicyProxy, ProxySettings, Resolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const BOUND: Duration = Duration::from_secs(60);

pub async fn bounded<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(BOUND, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what}: no answer within {BOUND:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// An origin server: records every request; `/redirect`, `/chunked`, `/ws` (101 then echo),
// anything else echoes the request back as text.

#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub headers: HashMap<String, String>,
    pub body: String,
}

pub struct Origin {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Origin {
    pub async fn start() -> Self {
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

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

pub type TestBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

pub async fn answer(
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
pub async fn echo_server() -> (SocketAddr, Arc<AtomicUsize>) {
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
pub struct FakeResolver {
    pub names: HashMap<String, Vec<IpAddr>>,
    pub lookups: Mutex<Vec<String>>,
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

pub const NAMES: &[(&str, &[&str])] = &[
    ("evil.test", &["127.0.0.1"]),
    ("metadata.test", &["169.254.169.254"]),
    ("mapped.test", &["::ffff:127.0.0.1"]),
    ("six.test", &["::1"]),
    ("lan.test", &["192.168.1.1", "10.0.0.1", "fe80::1"]),
    ("pinned.test", &["127.0.0.1"]),
];

pub async fn proxy_with(policy: UrlPolicy, peers: PeerFilter) -> (PolicyProxy, Arc<FakeResolver>) {
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

pub async fn proxy(policy: UrlPolicy) -> (PolicyProxy, Arc<FakeResolver>) {
    proxy_with(policy, PeerFilter::Any).await
}

pub fn client(proxy: &PolicyProxy) -> reqwest::Client {
    seek::tls::client_builder()
        .proxy(reqwest::Proxy::all(format!("http://{}", proxy.address())).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .timeout(BOUND)
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP/1.1 over a socket, for what reqwest does not send.

/// Reads a response head (up to the blank line, byte by byte so nothing after it is taken).
pub async fn read_head(stream: &mut TcpStream) -> String {
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

pub fn status_of(head: &str) -> u16 {
    head.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

pub fn header_of<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// A whole response with a `Content-Length` body: status, head, body.
pub async fn read_response(stream: &mut TcpStream) -> (u16, String, String) {
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

pub async fn send(proxy: &PolicyProxy, request: &[u8]) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(proxy.address()).await.unwrap();
    stream.write_all(request).await.unwrap();
    let head = read_head(&mut stream).await;
    (stream, head)
}

/// Whether the proxy closed `stream` without a byte of answer.
pub async fn closed_silently(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    match bounded("close", stream.read(&mut buf)).await {
        Ok(0) | Err(_) => true,
        Ok(_) => false,
    }
}
