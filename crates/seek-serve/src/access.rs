//! Who may use the API: the bearer token (compared in constant time), and, without a token, only
//! pages and clients on this machine (a loopback `Host`, an allowed `Origin`). Also the CORS
//! headers, given to allowed origins only.
//!
//! Every request passes `guard` before its handler, which also tells the request's connection
//! (`slots::Slot`) whether the request showed the token, and closes a connection that has not
//! after its answer. It must not know what the endpoints do beyond which one is open (`/health`)
//! and which one a page without a token is answered with what to do (`/latest_answer`).

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::slots::Slot;

/// Where a browser says a request comes from (Fetch Metadata): `cross-site`, `same-site`,
/// `same-origin`, or `none` (the user typed the address).
const SEC_FETCH_SITE: header::HeaderName = header::HeaderName::from_static("sec-fetch-site");

/// How requests are let in.
#[derive(Debug, Clone)]
pub struct Access {
    /// `None`: no token (`--no-token`, only on loopback): then `Host` must be loopback.
    token: Option<Arc<str>>,
    /// Origins a browser page may call from (`[serve] allowed_origins`), as browsers write them
    /// (`scheme://host[:port]`, no trailing slash).
    allowed_origins: Arc<[String]>,
}

/// Why a request was refused, and the status that says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 401: no `Authorization: Bearer …`, or a wrong token.
    Token(&'static str),
    /// 403: a `Host` that is not this machine (a DNS-rebinding page) under `--no-token`.
    Host(String),
    /// 403: an `Origin` not in `[serve] allowed_origins`.
    Origin(String),
    /// 403: a request a browser made for another site's page without an `Origin` (an image, a
    /// link, a script tag: `Sec-Fetch-Site: cross-site` or `same-site`), with that value.
    CrossSite(String),
}

impl Refusal {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Token(_) => StatusCode::UNAUTHORIZED,
            Self::Host(_) | Self::Origin(_) | Self::CrossSite(_) => StatusCode::FORBIDDEN,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Self::Token(why) => (*why).to_owned(),
            Self::Host(host) => format!(
                "Host {host:?} is not this machine: without a token only loopback hosts (localhost, 127.0.0.1, [::1]) are served"
            ),
            Self::Origin(origin) => format!(
                "Origin {origin:?} is not allowed: add it to [serve] allowed_origins to let its pages call seek"
            ),
            Self::CrossSite(site) => format!(
                "a {site} page's request without an Origin (an image, a link) is not served: pages call seek with fetch from an origin in [serve] allowed_origins"
            ),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = (
            status,
            super::records::ApiJson(serde_json::json!({"error": self.message()})),
        )
            .into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl Access {
    pub fn new(token: Option<String>, allowed_origins: Vec<String>) -> Self {
        Self {
            token: token.map(Arc::from),
            allowed_origins: allowed_origins
                .into_iter()
                .map(|o| o.trim_end_matches('/').to_owned())
                .collect(),
        }
    }

    /// Checks a request's headers for `path`: `Ok(origin)` with the allowed origin to answer
    /// CORS for (if the request came from a page), or why it is refused.
    pub fn check(
        &self,
        path: &str,
        headers: &HeaderMap,
        preflight: bool,
    ) -> Result<Option<String>, Refusal> {
        if self.token.is_none() {
            let host = header_text(headers, header::HOST).unwrap_or_default();
            if !is_loopback_host(&host) {
                return Err(Refusal::Host(host));
            }
        }
        let origin = match header_text(headers, header::ORIGIN) {
            // A page elsewhere needs no script to send a GET (`<img src=…/stop>`, a link) and
            // browsers send no `Origin` with it; they do say where it came from. Only a request
            // of seek's own origin or one the user made (typed, bookmarked) may come so.
            None => match header_text(headers, SEC_FETCH_SITE) {
                Some(site) if !matches!(site.as_str(), "same-origin" | "none") => {
                    return Err(Refusal::CrossSite(site));
                }
                _ => None,
            },
            Some(origin) if self.origin_allowed(&origin) => Some(origin),
            Some(origin) => return Err(Refusal::Origin(origin)),
        };
        // A browser's preflight carries no credentials; the request it announces will.
        if !preflight && path != "/health" {
            self.check_token(headers)?;
        }
        Ok(origin)
    }

    /// Whether a request that passed `check` authenticates its connection: it carries the token
    /// (on any endpoint, `/health` too), or, without a token, it passed the checks (anyone who
    /// passes them may use the whole API). A preflight carries no credentials.
    pub(crate) fn authenticates(&self, headers: &HeaderMap, preflight: bool) -> bool {
        match &self.token {
            Some(_) => !preflight && self.check_token(headers).is_ok(),
            None => true,
        }
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/');
        self.allowed_origins
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(origin))
    }

    fn check_token(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(expected) = &self.token else {
            return Ok(());
        };
        let Some(value) = header_text(headers, header::AUTHORIZATION) else {
            return Err(Refusal::Token(
                "a token is required: send Authorization: Bearer <token> (printed by seek serve, or SEEK_API_TOKEN)",
            ));
        };
        let Some(given) = value.strip_prefix("Bearer ") else {
            return Err(Refusal::Token(
                "malformed Authorization header: expected Bearer <token>",
            ));
        };
        if tokens_match(given, expected) {
            Ok(())
        } else {
            Err(Refusal::Token("invalid token"))
        }
    }
}

/// Compares two tokens in time that depends on neither: both are hashed first, so not even
/// their lengths show.
pub(crate) fn tokens_match(given: &str, expected: &str) -> bool {
    let given = Sha256::digest(given.as_bytes());
    let expected = Sha256::digest(expected.as_bytes());
    given.ct_eq(&expected).into()
}

/// A `Host` header naming this machine: `localhost`, an address in 127.0.0.0/8, or `[::1]`,
/// with or without a port.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        // `[::1]` or `[::1]:7777`.
        match rest.split_once(']') {
            Some((inside, after)) if after.is_empty() || valid_port(after) => inside,
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if valid_port(&format!(":{port}")) => name,
            Some(_) => return false,
            None => host,
        }
    };
    if name.eq_ignore_ascii_case("localhost") || name.eq_ignore_ascii_case("localhost.") {
        return true;
    }
    name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn valid_port(suffix: &str) -> bool {
    suffix
        .strip_prefix(':')
        .is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// The middleware: refuses what `Access::check` refuses, answers CORS preflights, and adds the
/// CORS headers for allowed origins. A request whose connection has not shown the token (on this
/// request or an earlier one) is answered with `Connection: close`, so that connection holds no
/// place once answered (`slots`).
pub async fn guard(State(access): State<Access>, request: Request, next: Next) -> Response {
    let slot = request.extensions().get::<Arc<Slot>>().cloned();
    if let Some(slot) = &slot {
        slot.request_started();
    }
    let mut response = guarded(&access, slot.as_deref(), request, next).await;
    if slot.is_some_and(|slot| !slot.authenticated()) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

async fn guarded(access: &Access, slot: Option<&Slot>, request: Request, next: Next) -> Response {
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let origin = match access.check(request.uri().path(), request.headers(), preflight) {
        Ok(origin) => origin,
        Err(refusal @ Refusal::Token(_)) => {
            // The origin passed (it is checked first): let its page read why, not a network
            // error.
            let origin = header_text(request.headers(), header::ORIGIN);
            let mut response = if origin.is_some() && page_poll_without_token(&request) {
                super::records::ApiJson(super::records::LatestAnswer::token_needed())
                    .into_response()
            } else {
                refusal.into_response()
            };
            if let Some(origin) = origin {
                add_cors(response.headers_mut(), &origin, false);
            }
            return response;
        }
        Err(refusal) => return refusal.into_response(),
    };
    if let Some(slot) = slot
        && access.authenticates(request.headers(), preflight)
    {
        slot.authenticate();
    }
    let mut response = if preflight {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(request).await
    };
    if let Some(origin) = origin {
        add_cors(response.headers_mut(), &origin, preflight);
    }
    response
}

/// A page's `GET /latest_answer` that carries no `Authorization` at all: AgenticSeek's front
/// end polls so every 3 s and shows each new answer, while a failed request shows it nothing of
/// the server's. Such a poll is answered with what to do (`LatestAnswer::token_needed`, no
/// task's data) instead of the `401`; a wrong or malformed token is still a `401`.
fn page_poll_without_token(request: &Request) -> bool {
    request.method() == Method::GET
        && request.uri().path() == "/latest_answer"
        && !request.headers().contains_key(header::AUTHORIZATION)
}

fn add_cors(headers: &mut HeaderMap, origin: &str, preflight: bool) {
    let Ok(origin) = HeaderValue::from_str(origin) else {
        return;
    };
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    if preflight {
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, OPTIONS"),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("authorization, content-type, last-event-id"),
        );
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                header::HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_str(value).expect("value"),
            );
        }
        map
    }

    fn with_token() -> Access {
        Access::new(Some("s3cret".into()), vec!["http://localhost:3000".into()])
    }

    fn without_token() -> Access {
        Access::new(None, vec!["http://localhost:3000/".into()])
    }

    #[test]
    fn agenticseeks_auth_cases() {
        let access = with_token();
        let host = ("host", "127.0.0.1:7777");
        assert!(matches!(
            access.check("/query", &headers(&[host]), false),
            Err(Refusal::Token(_))
        ));
        for wrong in ["s3cret", "Bearer wrong", "bearer s3cret", "Bearer s3cret "] {
            assert!(
                access
                    .check("/query", &headers(&[host, ("authorization", wrong)]), false)
                    .is_err(),
                "{wrong:?} is refused"
            );
        }
        assert_eq!(
            access.check(
                "/query",
                &headers(&[host, ("authorization", "Bearer s3cret")]),
                false
            ),
            Ok(None)
        );
        assert_eq!(access.check("/health", &headers(&[host]), false), Ok(None));
    }

    #[test]
    fn without_a_token_only_loopback_hosts_are_served() {
        let access = without_token();
        for host in [
            "localhost:7777",
            "127.0.0.1:7777",
            "127.0.0.1",
            "[::1]:7777",
            "LOCALHOST",
        ] {
            assert!(
                access
                    .check("/query", &headers(&[("host", host)]), false)
                    .is_ok(),
                "{host}"
            );
        }
        for host in [
            "evil.example:7777",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "10.0.0.1:7777",
            "[::1]x",
            "localhost:7777:80",
            "",
        ] {
            assert!(
                matches!(
                    access.check("/query", &headers(&[("host", host)]), false),
                    Err(Refusal::Host(_))
                ),
                "{host:?}"
            );
        }
        assert!(matches!(
            access.check("/query", &HeaderMap::new(), false),
            Err(Refusal::Host(_))
        ));
    }

    #[test]
    fn only_listed_origins_may_call() {
        let access = without_token();
        let host = ("host", "localhost:7777");
        assert_eq!(
            access.check(
                "/query",
                &headers(&[host, ("origin", "http://localhost:3000")]),
                false
            ),
            Ok(Some("http://localhost:3000".into()))
        );
        for origin in [
            "http://evil.example",
            "http://localhost:3001",
            "https://localhost:3000",
            "null",
        ] {
            assert!(
                matches!(
                    access.check("/health", &headers(&[host, ("origin", origin)]), false),
                    Err(Refusal::Origin(_))
                ),
                "{origin}"
            );
        }
    }

    #[test]
    fn a_preflight_needs_no_token_but_an_allowed_origin() {
        let access = with_token();
        let host = ("host", "localhost:7777");
        assert!(
            access
                .check(
                    "/query",
                    &headers(&[host, ("origin", "http://localhost:3000")]),
                    true
                )
                .is_ok()
        );
        assert!(
            access
                .check(
                    "/query",
                    &headers(&[host, ("origin", "http://evil.example")]),
                    true
                )
                .is_err()
        );
    }

    #[test]
    fn only_the_token_authenticates_a_connection_unless_there_is_none() {
        let access = with_token();
        let host = ("host", "127.0.0.1:7777");
        let shown = headers(&[host, ("authorization", "Bearer s3cret")]);
        assert!(access.authenticates(&shown, false));
        assert!(!access.authenticates(&headers(&[host]), false));
        assert!(!access.authenticates(&headers(&[host, ("authorization", "Bearer wrong")]), false));
        assert!(
            !access.authenticates(&shown, true),
            "a preflight shows nothing"
        );
        assert!(without_token().authenticates(&headers(&[host]), true));
    }

    #[test]
    fn tokens_compare_by_content_only() {
        assert!(tokens_match("abc", "abc"));
        assert!(!tokens_match("abc", "abd"));
        assert!(!tokens_match("abc", "abcd"));
        assert!(!tokens_match("", "abc"));
    }
}
