//! A streamable HTTP server's transport: rmcp's client over a reqwest client seek configures
//! (connect timeout, same-origin redirects only, the bearer token from the environment).
//!
//! It must not speak the protocol beyond building the transport, nor read any variable but the
//! one the server's configuration names.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};

/// How long a TCP (and TLS) connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Same-origin redirects followed per request.
const MAX_REDIRECTS: usize = 5;

/// The transport to `url`, with `Authorization: Bearer $VAR` when `bearer_token_env_var` is set.
pub(super) fn transport(
    url: &str,
    bearer_token_env_var: Option<&str>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("its url `{url}` is invalid: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("its url `{url}` is not http:// or https://"));
    }
    // A server restarted behind the same url forgets the session: start a new one then.
    let mut config = StreamableHttpClientTransportConfig::with_uri(Arc::<str>::from(url))
        .reinit_on_expired_session(true);
    if let Some(var) = bearer_token_env_var {
        match std::env::var(var) {
            Ok(token) if !token.trim().is_empty() => {
                config = config.auth_header(token.trim().to_owned());
            }
            Ok(_) => return Err(format!("its bearer token variable `{var}` is empty")),
            Err(_) => return Err(format!("its bearer token variable `{var}` is not set")),
        }
    }
    Ok(StreamableHttpClientTransport::with_client(
        client()?,
        config,
    ))
}

fn client() -> Result<reqwest::Client, String> {
    crate::tls::client_builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_keepalive(Duration::from_secs(30))
        // rmcp's own default: an idle pooled connection whose last response was not read to
        // the end stalls the next request on delayed ACKs.
        .pool_max_idle_per_host(0)
        .redirect(same_origin_redirects())
        .build()
        .map_err(|e| format!("its HTTP client could not be built: {e}"))
}

/// Follows 307/308 to the same origin only: they keep the POST body, and a redirect to another
/// host would hand it the session id and the bearer token.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// The cause rmcp's HTTP error wraps without exposing it as a `source` (the client's own error,
/// which says "connection refused" or "dns error").
pub(super) fn hidden_cause<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    match error.downcast_ref::<StreamableHttpError<reqwest::Error>>()? {
        StreamableHttpError::Client(inner) => Some(inner),
        _ => None,
    }
}
