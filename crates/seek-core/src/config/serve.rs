//! The `[serve]` section: which web origins may call `seek serve` from a browser page
//! (`allowed_origins`, default AgenticSeek's front end at `http://localhost:3000`).
//!
//! Owns the key's default and validation (the key, and `ServeSettings` it lands in, are the
//! settings table's, which names this file). It must not listen on anything.

use super::{ConfigError, Origin, Sourced, invalid};

/// The origin of AgenticSeek's React front end (`npm start`).
pub const DEFAULT_ALLOWED_ORIGIN: &str = "http://localhost:3000";

/// `allowed_origins` as given (flag, variable or file), each origin checked, or the default.
pub(super) fn allowed_origins(
    given: Option<Sourced<Vec<String>>>,
) -> Result<Sourced<Vec<String>>, ConfigError> {
    let Some(given) = given else {
        return Ok(Sourced::new(
            vec![DEFAULT_ALLOWED_ORIGIN.to_owned()],
            Origin::Default,
        ));
    };
    let mut origins = Vec::with_capacity(given.value.len());
    for origin in &given.value {
        let origin = origin.trim().trim_end_matches('/');
        if !is_origin(origin) {
            return Err(invalid(
                &given,
                "serve.allowed_origins",
                "expected origins such as \"http://localhost:3000\" (scheme, host and port only; no path, no \"*\")",
            ));
        }
        origins.push(origin.to_owned());
    }
    Ok(Sourced::new(origins, given.origin))
}

/// `http(s)://host[:port]` and nothing more: a browser's `Origin` has no path, and a wildcard
/// would let every page drive seek.
fn is_origin(text: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(text) else {
        return false;
    };
    matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && !text.ends_with('/')
        && url.query().is_none()
        && url.fragment().is_none()
        && !text.contains('*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        for good in [
            "http://localhost:3000",
            "https://seek.example",
            "http://127.0.0.1:8080",
        ] {
            assert!(is_origin(good), "{good}");
        }
        for bad in [
            "*",
            "http://*.example",
            "localhost:3000",
            "http://localhost:3000/app",
            "http://localhost:3000/",
            "file:///tmp",
            "http://user:pw@host",
            "http://host?x=1",
            "",
        ] {
            assert!(!is_origin(bad), "{bad}");
        }
    }
}
