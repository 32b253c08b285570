//! The `chromium` engine: a real headless Chromium driven over WebDriver (fantoccini and
//! chromedriver, which Debian ships at the same version as chromium). chromedriver runs in its
//! own process group with a parent-death signal; Chromium gets a fresh profile in a temporary
//! directory, `--no-sandbox` only when seek runs as root; closing (or dropping) the reader kills
//! the whole group, so no browser process outlives the task. The page is read from the DOM once
//! scripts ran, through `web::html`.
//!
//! It must not decide which URLs may be opened (the policy, checked before and after each load).

use std::sync::Arc;

use reqwest::Url;

use super::{Engine, Page, PageReader, ReadError};
use crate::BoxFuture;
use crate::config::WebSettings;
use crate::web::policy::UrlPolicy;
use crate::wire::WebField;

/// A Chromium reader.
pub struct ChromiumReader {
    policy: Arc<UrlPolicy>,
}

impl ChromiumReader {
    /// Starts chromedriver and a headless Chromium session.
    pub async fn start(settings: &WebSettings, policy: Arc<UrlPolicy>) -> Result<Self, ReadError> {
        let _ = settings;
        let _ = &policy;
        Err(ReadError::BrowserMissing {
            what: "chromium".into(),
            how: "not built yet".into(),
        })
    }

    /// Chromium's version, for the user.
    pub fn version(&self) -> &str {
        ""
    }
}

impl PageReader for ChromiumReader {
    fn engine(&self) -> Engine {
        Engine::Chromium
    }

    fn open<'a>(&'a mut self, url: &'a Url) -> BoxFuture<'a, Result<Page, ReadError>> {
        let _ = &self.policy;
        Box::pin(async move {
            Err(ReadError::Browser {
                reason: format!("not built yet: {url}"),
            })
        })
    }

    fn submit<'a>(&'a mut self, fields: &'a [WebField]) -> BoxFuture<'a, Result<Page, ReadError>> {
        let _ = fields;
        Box::pin(async move { Err(ReadError::NoPage) })
    }

    fn close(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
