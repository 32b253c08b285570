//! One request from the browser, answered: a `CONNECT` is checked, connected to its pinned
//! address and answered 200 (the tunnel runs once hyper hands the socket over); any other
//! request must be in absolute form for `http://`, is checked, and is sent in origin form over
//! a fresh connection to the pinned address (hop-by-hop and `Proxy-*` headers removed, `Host`
//! set from the URL, `Connection: close`), its response passed back as it came (redirects
//! included: the browser follows them itself, each hop through the proxy again) but for the
//! hop-by-hop headers and `Alt-Svc` (which could point the browser at QUIC, outside the
//! proxy). A websocket handshake keeps its `Upgrade` and becomes a tunnel on 101.
//!
//! It must not decide what a URL may reach (`target` does) nor accept connections (`mod`).

use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::upgrade::OnUpgrade;
use hyper::{Method, Request, Response, StatusCode, Uri, Version};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, timeout, timeout_at};

use super::target::{Denial, Target, connect_target, forward_target, pin};
use super::{Shared, tunnel::tunnel};

type Body = BoxBody<Bytes, hyper::Error>;

/// The largest response head read from an origin.
const MAX_RESPONSE_HEAD: usize = 256 * 1024;
/// Addresses of one name tried in turn, at most.
const MAX_ADDRESSES: usize = 8;

/// The tunnel a connection turns into after its last response (a `CONNECT`'s 200 or a 101),
/// set by the request handler, run by the connection once hyper hands the socket over.
#[derive(Clone, Default)]
pub(super) struct PendingTunnel(Arc<Mutex<Option<Tunnel>>>);

impl PendingTunnel {
    fn set(&self, tunnel: Tunnel) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(tunnel);
    }

    pub(super) fn take(&self) -> Option<Tunnel> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

pub(super) enum Tunnel {
    /// The browser's socket after `CONNECT`, and the origin's.
    Connect {
        browser: OnUpgrade,
        origin: TcpStream,
    },
    /// Both sides of an upgraded (websocket) request.
    Upgrade {
        browser: OnUpgrade,
        origin: OnUpgrade,
    },
}

impl Tunnel {
    pub(super) async fn run(self, idle: Duration) {
        match self {
            Tunnel::Connect { browser, origin } => {
                if let Ok(Ok(browser)) = timeout(idle, browser).await {
                    tunnel(TokioIo::new(browser), origin, idle).await;
                }
            }
            Tunnel::Upgrade { browser, origin } => {
                let both = timeout(idle, async { (browser.await, origin.await) }).await;
                if let Ok((Ok(browser), Ok(origin))) = both {
                    tunnel(TokioIo::new(browser), TokioIo::new(origin), idle).await;
                }
            }
        }
    }
}

/// Answers one request of a browser connection.
pub(super) async fn handle(
    shared: Arc<Shared>,
    pending: PendingTunnel,
    permit: Arc<OwnedSemaphorePermit>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    Ok(if request.method() == Method::CONNECT {
        connect(&shared, &pending, request).await
    } else {
        forward(&shared, &pending, permit, request).await
    })
}

async fn connect(
    shared: &Shared,
    pending: &PendingTunnel,
    mut request: Request<Incoming>,
) -> Response<Body> {
    let Some(authority) = request.uri().authority().map(|a| a.as_str().to_owned()) else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let target = match connect_target(&shared.policy, &authority) {
        Ok(target) => target,
        Err(denial) => return deny(shared, &authority, denial),
    };
    let origin = match open(shared, &target).await {
        Ok(origin) => origin,
        Err(answer) => return answer,
    };
    pending.set(Tunnel::Connect {
        browser: hyper::upgrade::on(&mut request),
        origin,
    });
    Response::new(empty())
}

async fn forward(
    shared: &Shared,
    pending: &PendingTunnel,
    permit: Arc<OwnedSemaphorePermit>,
    mut request: Request<Incoming>,
) -> Response<Body> {
    let named = request.uri().to_string();
    let target = match forward_target(&shared.policy, request.uri()) {
        Ok(target) => target,
        Err(denial) => return deny(shared, &named, denial),
    };
    let upgrade = wanted_upgrade(request.headers());
    let browser_upgrade = upgrade.is_some().then(|| hyper::upgrade::on(&mut request));
    let origin = match open(shared, &target).await {
        Ok(origin) => origin,
        Err(answer) => return answer,
    };

    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let Ok(path) = path.parse::<Uri>() else {
        return text(
            StatusCode::BAD_REQUEST,
            &format!("{named} has no valid path"),
        );
    };
    let Ok(host) = HeaderValue::from_str(&target.authority) else {
        return text(
            StatusCode::BAD_REQUEST,
            &format!("{named} has no valid host"),
        );
    };
    parts.uri = path;
    parts.version = Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.insert(header::HOST, host);
    match &upgrade {
        Some(protocol) => {
            parts
                .headers
                .insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
            parts.headers.insert(header::UPGRADE, protocol.clone());
        }
        None => {
            parts
                .headers
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
    }
    let request = Request::from_parts(parts, body);

    let idle = shared.settings.idle_timeout;
    let handshake = hyper::client::conn::http1::Builder::new()
        .max_header_size(MAX_RESPONSE_HEAD)
        .max_buf_size(MAX_RESPONSE_HEAD)
        .handshake::<_, Incoming>(TokioIo::new(origin))
        .await;
    let Ok((mut sender, connection)) = handshake else {
        return text(
            StatusCode::BAD_GATEWAY,
            &format!("{named}: the connection failed"),
        );
    };
    let stop = shared.shutdown.clone();
    tokio::spawn(async move {
        // The browser connection's slot stays taken while its origin connection lives.
        let _permit = permit;
        tokio::select! {
            () = stop.cancelled() => {}
            _ = connection.with_upgrades() => {}
        }
    });
    let mut response = match timeout(idle, sender.send_request(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => {
            return text(
                StatusCode::BAD_GATEWAY,
                &format!("{named} gave no valid answer: {error}"),
            );
        }
        Err(_) => {
            return text(
                StatusCode::GATEWAY_TIMEOUT,
                &format!("{named} did not answer within {} s", idle.as_secs()),
            );
        }
    };

    if response.status() == StatusCode::SWITCHING_PROTOCOLS {
        let (Some(browser), Some(protocol)) = (browser_upgrade, upgrade) else {
            return text(
                StatusCode::BAD_GATEWAY,
                &format!("{named} switched protocols unasked"),
            );
        };
        let origin = hyper::upgrade::on(&mut response);
        pending.set(Tunnel::Upgrade { browser, origin });
        let (mut parts, _) = response.into_parts();
        let protocol = parts
            .headers
            .get(header::UPGRADE)
            .cloned()
            .unwrap_or(protocol);
        strip_hop_by_hop(&mut parts.headers);
        parts
            .headers
            .insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        parts.headers.insert(header::UPGRADE, protocol);
        return Response::from_parts(parts, empty());
    }
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(header::ALT_SVC);
    // Only the proxy speaks of refusals: a page cannot pose as one.
    parts.headers.remove(super::REFUSAL_HEADER);
    Response::from_parts(parts, body.boxed())
}

/// Resolves `target` (unless it is an address), keeps the addresses the policy allows, and
/// connects to the first that answers, all within the connect timeout. The answer to send
/// when none can be used.
async fn open(shared: &Shared, target: &Target) -> Result<TcpStream, Response<Body>> {
    let wait = shared.settings.connect_timeout;
    // A timeout too large to add is as good as none (a year).
    let deadline = Instant::now()
        .checked_add(wait)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 86_400));
    let late = |what: &str| {
        text(
            StatusCode::GATEWAY_TIMEOUT,
            &format!(
                "{what} {} took longer than {} s",
                target.named,
                wait.as_secs()
            ),
        )
    };
    let found = match target.literal {
        Some(ip) => vec![ip],
        None => {
            let lookup = shared
                .settings
                .resolver
                .lookup(target.host.clone(), target.port);
            match timeout_at(deadline, lookup).await {
                Ok(Ok(found)) if !found.is_empty() => found,
                Ok(Ok(_)) => {
                    return Err(text(
                        StatusCode::BAD_GATEWAY,
                        &format!("{} has no address", target.host),
                    ));
                }
                Ok(Err(error)) => {
                    return Err(text(
                        StatusCode::BAD_GATEWAY,
                        &format!("{} could not be resolved: {error}", target.host),
                    ));
                }
                Err(_) => return Err(late("resolving")),
            }
        }
    };
    let addresses = match pin(&shared.policy, target, &found, shared.own) {
        Ok(addresses) => addresses,
        Err(reason) => return Err(deny(shared, &target.named, Denial::Refused(reason))),
    };
    let mut failure = None;
    for address in addresses.into_iter().take(MAX_ADDRESSES) {
        match timeout_at(deadline, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(error)) => failure = Some(error),
            Err(_) => return Err(late("connecting to")),
        }
    }
    let why = failure.map_or_else(String::new, |e| format!(": {e}"));
    Err(text(
        StatusCode::BAD_GATEWAY,
        &format!("{} could not be reached{why}", target.named),
    ))
}

/// The answer to a denied request; a refusal is also recorded.
fn deny(shared: &Shared, named: &str, denial: Denial) -> Response<Body> {
    match denial {
        Denial::Bad(why) => text(StatusCode::BAD_REQUEST, &why),
        Denial::Refused(reason) => {
            let mut answer = text(
                StatusCode::FORBIDDEN,
                &format!("seek refused this request: {reason}"),
            );
            // The reader learns from this header, holding this proxy's secret, that the page is
            // a refusal, not content (the reason itself it takes from `refused()`).
            if let Ok(value) = HeaderValue::from_str(&shared.token) {
                answer.headers_mut().insert(super::REFUSAL_HEADER, value);
            }
            shared.refuse(named, reason);
            answer
        }
    }
}

/// The protocol a request asks to switch to (`Connection: upgrade` and an `Upgrade` header).
fn wanted_upgrade(headers: &HeaderMap) -> Option<HeaderValue> {
    let asks = connection_tokens(headers)
        .iter()
        .any(|token| token.eq_ignore_ascii_case("upgrade"));
    asks.then(|| headers.get(header::UPGRADE).cloned())
        .flatten()
}

fn connection_tokens(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|token| token.trim().to_owned())
        .filter(|token| !token.is_empty())
        .collect()
}

/// Removes the headers that concern one connection only: those `Connection` names, the
/// standard hop-by-hop ones, and every `Proxy-*`. With `Transfer-Encoding` gone a
/// `Content-Length` beside it goes too (hyper frames the body again from what it read).
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for token in connection_tokens(headers) {
        if let Ok(name) = HeaderName::from_bytes(token.as_bytes()) {
            headers.remove(name);
        }
    }
    if headers.contains_key(header::TRANSFER_ENCODING) {
        headers.remove(header::CONTENT_LENGTH);
    }
    for name in [
        header::CONNECTION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
    ] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
    let proxy_headers: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("proxy-"))
        .cloned()
        .collect();
    for name in proxy_headers {
        headers.remove(name);
    }
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(format!("{body}\n")))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn hop_by_hop_and_proxy_headers_are_removed() {
        let mut map = headers(&[
            ("connection", "keep-alive, X-Secret"),
            ("keep-alive", "timeout=5"),
            ("x-secret", "1"),
            ("proxy-authorization", "Basic abc"),
            ("proxy-connection", "keep-alive"),
            ("proxy-anything", "x"),
            ("te", "trailers"),
            ("transfer-encoding", "chunked"),
            ("content-length", "12"),
            ("upgrade", "websocket"),
            ("cookie", "a=b"),
            ("location", "http://127.0.0.1/admin"),
        ]);
        strip_hop_by_hop(&mut map);
        let left: Vec<&str> = map.keys().map(HeaderName::as_str).collect();
        assert_eq!(left, vec!["cookie", "location"]);

        let mut sized = headers(&[("content-length", "12")]);
        strip_hop_by_hop(&mut sized);
        assert_eq!(sized.get("content-length").unwrap(), "12");
    }

    #[test]
    fn an_upgrade_needs_both_headers() {
        let asks = headers(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket"),
        ]);
        assert_eq!(wanted_upgrade(&asks).unwrap(), "websocket");
        assert!(wanted_upgrade(&headers(&[("upgrade", "websocket")])).is_none());
        assert!(wanted_upgrade(&headers(&[("connection", "upgrade")])).is_none());
    }
}
