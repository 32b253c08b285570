//! The `[web]` section: where `web_search` asks (`searxng_url`, env `SEARXNG_BASE_URL`), which
//! engine reads pages (`browser`), whether private addresses may be opened (`allow_private`),
//! the web agent's step cap (`max_steps`), the per-request timeout (`timeout_secs`), the size
//! cap of a page (`max_page_bytes`), how long Chromium waits for a loaded page to be ready
//! (`settle_ms`), and where Chromium is (`chromium`; `chromedriver` is accepted and unused since
//! Chromium is driven over a pipe).
//!
//! Owns these keys, their defaults, their validation and their lines in `seek config`. It must
//! not open a connection or start a browser.

use std::fmt;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;

use super::file::{FileConfig, FileValue};
use super::{ConfigError, Origin, Resolver, Sourced, invalid};

/// `[web]` as read from the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebFile {
    pub searxng_url: FileValue<String>,
    pub browser: FileValue<String>,
    pub allow_private: FileValue<bool>,
    pub max_steps: FileValue<i64>,
    pub timeout_secs: FileValue<i64>,
    pub max_page_bytes: FileValue<i64>,
    pub settle_ms: FileValue<i64>,
    pub chromium: FileValue<String>,
    pub chromedriver: FileValue<String>,
}

/// Which engine reads pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrowserChoice {
    /// Chromium where it is installed and starts, else `http`; the agent says which.
    Auto,
    /// Plain HTTP requests: fast, no scripts run.
    Http,
    /// A real headless Chromium over the DevTools protocol: scripts run.
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
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "http" => Ok(Self::Http),
            "chromium" | "chrome" => Ok(Self::Chromium),
            _ => Err("expected one of: auto, http, chromium".into()),
        }
    }
}

/// Default step cap of the web agent (AgenticSeek had none).
pub const DEFAULT_WEB_MAX_STEPS: u64 = 15;
/// Default timeout of one request or page load, in seconds.
pub const DEFAULT_WEB_TIMEOUT_SECS: u64 = 20;
/// Default cap, in milliseconds, on waiting after a load for the network to go idle and the
/// text to stop changing.
pub const DEFAULT_SETTLE_MS: u64 = 2000;
/// Default cap on the bytes of one page read.
pub const DEFAULT_MAX_PAGE_BYTES: u64 = 2 * 1024 * 1024;

/// The effective `[web]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSettings {
    /// The SearxNG instance `web_search` asks (`None`: not configured; searches fail saying
    /// how to set it).
    pub searxng_url: Sourced<Option<String>>,
    pub browser: Sourced<BrowserChoice>,
    /// Loopback and private addresses may be opened even when a search result or a page's link
    /// leads there (the user's own URLs always may).
    pub allow_private: Sourced<bool>,
    pub max_steps: Sourced<u64>,
    pub timeout_secs: Sourced<u64>,
    pub max_page_bytes: Sourced<u64>,
    /// After a page loaded, Chromium waits at most this long (ms) for no request in flight and
    /// unchanged text for 500 ms.
    pub settle_ms: Sourced<u64>,
    /// Chromium's binary (`None`: looked up on `PATH` as `chromium`, `chromium-browser`,
    /// `google-chrome`).
    pub chromium: Sourced<Option<PathBuf>>,
    /// Accepted for old config files and unused: Chromium is driven over a pipe, without
    /// chromedriver.
    pub chromedriver: Sourced<Option<PathBuf>>,
    /// Where the web agent keeps a screenshot of the latest page it read with a real browser
    /// (`updated_screen.png`, AgenticSeek's name). Not a file key: `seek serve` sets it, for its
    /// `/screenshot`; `None` takes none.
    pub screenshots: Option<PathBuf>,
}

impl WebSettings {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.value)
    }

    pub fn settle(&self) -> Duration {
        Duration::from_millis(self.settle_ms.value)
    }

    pub fn max_page_bytes(&self) -> usize {
        usize::try_from(self.max_page_bytes.value).unwrap_or(usize::MAX)
    }
}

impl Default for WebSettings {
    fn default() -> Self {
        Self {
            searxng_url: Sourced::new(None, Origin::Default),
            browser: Sourced::new(BrowserChoice::Auto, Origin::Default),
            allow_private: Sourced::new(false, Origin::Default),
            max_steps: Sourced::new(DEFAULT_WEB_MAX_STEPS, Origin::Default),
            timeout_secs: Sourced::new(DEFAULT_WEB_TIMEOUT_SECS, Origin::Default),
            max_page_bytes: Sourced::new(DEFAULT_MAX_PAGE_BYTES, Origin::Default),
            settle_ms: Sourced::new(DEFAULT_SETTLE_MS, Origin::Default),
            chromium: Sourced::new(None, Origin::Default),
            chromedriver: Sourced::new(None, Origin::Default),
            screenshots: None,
        }
    }
}

pub(super) fn resolve(
    r: &Resolver<'_>,
    cfg: Option<&FileConfig>,
) -> Result<WebSettings, ConfigError> {
    let file = cfg.map(|c| &c.web);
    let defaults = WebSettings::default();
    let searxng_url = match r.pick_string(
        None,
        "",
        "SEARXNG_BASE_URL",
        file.and_then(|w| w.searxng_url.as_ref()),
    ) {
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
        None => defaults.searxng_url,
    };
    let browser = match r.file_value(file.and_then(|w| w.browser.as_ref())) {
        Some(s) => {
            let choice = s
                .value
                .parse::<BrowserChoice>()
                .map_err(|expected| invalid(&s, "web.browser", &expected))?;
            Sourced::new(choice, s.origin)
        }
        None => defaults.browser,
    };
    let allow_private = r
        .file_value(file.and_then(|w| w.allow_private.as_ref()))
        .unwrap_or(defaults.allow_private);
    let max_steps = r.number(
        file.and_then(|w| w.max_steps.as_ref()),
        "web.max_steps",
        1..=200,
        DEFAULT_WEB_MAX_STEPS,
    )?;
    let timeout_secs = r.number(
        file.and_then(|w| w.timeout_secs.as_ref()),
        "web.timeout_secs",
        1..=600,
        DEFAULT_WEB_TIMEOUT_SECS,
    )?;
    let max_page_bytes = r.number(
        file.and_then(|w| w.max_page_bytes.as_ref()),
        "web.max_page_bytes",
        16 * 1024..=256 * 1024 * 1024,
        DEFAULT_MAX_PAGE_BYTES,
    )?;
    let settle_ms = r.number(
        file.and_then(|w| w.settle_ms.as_ref()),
        "web.settle_ms",
        0..=60_000,
        DEFAULT_SETTLE_MS,
    )?;
    let chromium = binary(r, file.and_then(|w| w.chromium.as_ref()), "web.chromium")?;
    let chromedriver = binary(
        r,
        file.and_then(|w| w.chromedriver.as_ref()),
        "web.chromedriver",
    )?;
    Ok(WebSettings {
        searxng_url,
        browser,
        allow_private,
        max_steps,
        timeout_secs,
        max_page_bytes,
        settle_ms,
        chromium,
        chromedriver,
        screenshots: None,
    })
}

/// A binary's path as the file gives it (`~` expanded; a bare name is looked up on `PATH`
/// when the browser starts).
fn binary(
    r: &Resolver<'_>,
    value: Option<&toml::Spanned<String>>,
    key: &str,
) -> Result<Sourced<Option<PathBuf>>, ConfigError> {
    match r.file_value(value) {
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

/// The `[web]` lines of `seek config`.
pub(super) fn render(out: &mut String, web: &WebSettings) {
    use super::show::{line, toml_str};
    let _ = writeln!(out, "\n[web]");
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
    line(
        out,
        "browser",
        &toml_str(web.browser.value.as_str()),
        &web.browser.origin,
        None,
    );
    line(
        out,
        "allow_private",
        &web.allow_private.value.to_string(),
        &web.allow_private.origin,
        None,
    );
    for (key, value) in [
        ("max_steps", &web.max_steps),
        ("timeout_secs", &web.timeout_secs),
        ("max_page_bytes", &web.max_page_bytes),
        ("settle_ms", &web.settle_ms),
    ] {
        line(out, key, &value.value.to_string(), &value.origin, None);
    }
    let _ = writeln!(
        out,
        "# the browser: DevTools over a pipe (no port), every request through seek's proxy; {}",
        crate::exec::jail::describe()
    );
    if web.chromedriver.value.is_some() {
        let _ = writeln!(
            out,
            "# chromedriver: set but unused (Chromium is driven over a pipe, without a driver)"
        );
    }
    for (key, value) in [("chromium", &web.chromium)] {
        if let Some(path) = &value.value {
            line(
                out,
                key,
                &toml_str(&path.display().to_string()),
                &value.origin,
                None,
            );
        }
    }
}

#[cfg(test)]
mod tests {
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
