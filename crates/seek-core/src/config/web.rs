//! The `[web]` section: where `web_search` asks (`searxng_url`, env `SEARXNG_BASE_URL`), which
//! engine reads pages (`browser`), whether private addresses may be opened (`allow_private`),
//! the web agent's step cap (`max_steps`), the per-request timeout (`timeout_secs`), the size
//! cap of a page (`max_page_bytes`), how long Chromium waits for a loaded page to be ready
//! (`settle_ms`), and where Chromium is (`chromium`; `chromedriver` is accepted and unused since
//! Chromium is driven over a pipe).
//!
//! Owns the `BrowserChoice` values, the defaults, the special validation and the special cases of
//! their lines in `seek config` (the keys, and `WebSettings` they land in, are the settings
//! table's, which names this file). It must not open a connection or start a browser.

use std::fmt;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;

use super::setting::{Choice, choice_value, line, toml_str};
use super::{Config, ConfigError, Env, Origin, Sourced, invalid};

/// Which engine reads pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BrowserChoice {
    /// Chromium where it is installed and starts, else `http`; the agent says which.
    Auto,
    /// Plain HTTP requests: fast, no scripts run.
    Http,
    /// A real headless Chromium over the DevTools protocol: scripts run.
    #[serde(alias = "chrome")]
    Chromium,
}

impl BrowserChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Http => "http",
            Self::Chromium => "chromium",
        }
    }
}

impl fmt::Display for BrowserChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BrowserChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        super::setting::parse_choice(s)
    }
}

impl Choice for BrowserChoice {
    fn word(self) -> &'static str {
        self.as_str()
    }
}

choice_value!(BrowserChoice);

/// Default step cap of the web agent (AgenticSeek had none).
pub const DEFAULT_WEB_MAX_STEPS: u64 = 15;
/// Default timeout of one request or page load, in seconds.
pub const DEFAULT_WEB_TIMEOUT_SECS: u64 = 20;
/// Default cap, in milliseconds, on waiting after a load for the network to go idle and the
/// text to stop changing.
pub(crate) const DEFAULT_SETTLE_MS: u64 = 2000;
/// Default cap on the bytes of one page read.
pub const DEFAULT_MAX_PAGE_BYTES: u64 = 2 * 1024 * 1024;

/// The SearxNG URL as given (flag, variable or file), checked: an http(s) URL, its trailing `/`
/// cut; empty means not configured.
pub(super) fn searxng_url(
    given: Option<Sourced<String>>,
) -> Result<Sourced<Option<String>>, ConfigError> {
    Ok(match given {
        Some(s) if s.value.trim().is_empty() => Sourced::new(None, s.origin),
        Some(s) => {
            let url = s.value.trim().trim_end_matches('/').to_owned();
            let parsed = reqwest::Url::parse(&url).ok();
            let fine = parsed
                .as_ref()
                .is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
            if !fine {
                return Err(invalid(
                    &s,
                    "web.searxng_url",
                    "expected an http:// or https:// URL, e.g. \"http://127.0.0.1:8080\"",
                ));
            }
            Sourced::new(Some(url), s.origin)
        }
        None => Sourced::new(None, Origin::Default),
    })
}

/// A binary's path as the file gives it (`~` expanded; a bare name is looked up on `PATH`
/// when the browser starts).
pub(super) fn binary(
    value: Option<Sourced<String>>,
    key: &str,
) -> Result<Sourced<Option<PathBuf>>, ConfigError> {
    match value {
        None => Ok(Sourced::new(None, Origin::Default)),
        Some(s) if s.value.trim().is_empty() || s.value.contains('\0') => {
            Err(invalid(&s, key, "expected a program's path or name"))
        }
        Some(s) => Ok(Sourced::new(
            Some(super::local::expand_home(s.value.trim())),
            s.origin,
        )),
    }
}

/// Special case in `seek config`: the SearxNG URL, credentials masked, or how to set it.
pub(super) fn render_searxng_url(config: &Config, _: &Env, out: &mut String) {
    let web = &config.web;
    match &web.searxng_url.value {
        Some(url) => line(
            out,
            "searxng_url",
            &toml_str(&super::show::redact_url(url)),
            &web.searxng_url.origin,
            None,
        ),
        None => {
            let _ = writeln!(
                out,
                "# searxng_url: not set (web_search needs a SearxNG instance; or env SEARXNG_BASE_URL)"
            );
        }
    }
}

/// Special case in `seek config`: how the browser is confined here, then that `chromedriver`
/// is unused when it is set.
pub(super) fn render_chromedriver(config: &Config, _: &Env, out: &mut String) {
    let _ = writeln!(
        out,
        "# the browser: DevTools over a pipe (no port), every request through seek's proxy; {}",
        crate::exec::jail::describe()
    );
    if config.web.chromedriver.value.is_some() {
        let _ = writeln!(
            out,
            "# chromedriver: set but unused (Chromium is driven over a pipe, without a driver)"
        );
    }
}

/// Special case in `seek config`: Chromium's path, only when set.
pub(super) fn render_chromium(config: &Config, _: &Env, out: &mut String) {
    let chromium = &config.web.chromium;
    if let Some(path) = &chromium.value {
        line(
            out,
            "chromium",
            &toml_str(&path.display().to_string()),
            &chromium.origin,
            None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::WebSettings;
    use super::super::tests::resolve_in as resolve;
    use super::*;

    #[test]
    fn defaults_are_safe_and_bounded() {
        let dir = tempfile::tempdir().expect("temp dir");
        let web = resolve(dir.path(), None, &[]).expect("defaults").web;
        assert_eq!(web, WebSettings::default());
        assert!(!web.allow_private.value);
        assert_eq!(web.max_steps.value, 15);
        assert_eq!(web.browser.value, BrowserChoice::Auto);
    }

    #[test]
    fn the_environment_names_searxng_over_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = "[web]\nsearxng_url = \"http://file:8080/\"\nbrowser = \"HTTP\"\nallow_private = true\nmax_steps = 4\n";
        let from_file = resolve(dir.path(), Some(text), &[]).expect("file").web;
        assert_eq!(
            from_file.searxng_url.value.as_deref(),
            Some("http://file:8080")
        );
        assert_eq!(from_file.browser.value, BrowserChoice::Http);
        assert!(from_file.allow_private.value);
        assert_eq!(from_file.max_steps.value, 4);
        let from_env = resolve(
            dir.path(),
            Some(text),
            &[("SEARXNG_BASE_URL", "https://searx.example")],
        )
        .expect("env")
        .web;
        assert_eq!(
            from_env.searxng_url.value.as_deref(),
            Some("https://searx.example")
        );
        assert_eq!(from_env.searxng_url.origin, Origin::Env("SEARXNG_BASE_URL"));
    }

    #[test]
    fn bad_values_name_the_key() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (text, key) in [
            ("[web]\nsearxng_url = \"file:///etc\"\n", "web.searxng_url"),
            ("[web]\nbrowser = \"firefox\"\n", "web.browser"),
            ("[web]\nmax_steps = 0\n", "web.max_steps"),
            ("[web]\ntimeout_secs = 0\n", "web.timeout_secs"),
            ("[web]\nmax_page_bytes = 10\n", "web.max_page_bytes"),
            ("[web]\nchromium = \"\"\n", "web.chromium"),
            ("[web]\nallow_private = \"yes\"\n", "allow_private"),
            ("[web]\nproxy = 1\n", "proxy"),
        ] {
            let err = resolve(dir.path(), Some(text), &[])
                .expect_err(text)
                .to_string();
            assert!(err.contains(key), "{text}: {err}");
        }
    }

    #[test]
    fn seek_config_shows_the_section() {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = "[web]\nsearxng_url = \"http://user:pw@searx.local:8080\"\nmax_steps = 9\n";
        let config = resolve(dir.path(), Some(text), &[]).expect("file");
        let shown = super::super::render(&config, &super::super::Env::default());
        assert!(shown.contains("\n[web]\n"), "{shown}");
        assert!(!shown.contains("pw@"), "credentials are masked: {shown}");
        assert!(shown.contains("max_steps = 9"), "{shown}");
        assert!(shown.contains("browser = \"auto\""), "{shown}");
        toml::from_str::<toml::Value>(&shown).expect("seek config stays valid TOML");
    }
}
