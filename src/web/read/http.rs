//! The `http` engine: pages fetched with reqwest (redirects followed by hand, each hop checked by
//! the URL policy, at most 10; the body read up to `[web] max_page_bytes`; the charset from the
//! header, the `<meta>` tag or a sniff), then read by `web::html`. Forms are submitted as the
//! browser would (GET query or urlencoded POST). No script runs.
//!
//! It must not start processes.

use std::sync::Arc;

use reqwest::Url;

use super::{Engine, Page, PageReader, ReadError};
use crate::BoxFuture;
use crate::config::WebSettings;
use crate::web::policy::UrlPolicy;
use crate::wire::WebField;

/// A plain-HTTP reader.
pub struct HttpReader {
    policy: Arc<UrlPolicy>,
    current: Option<Page>,
}

impl HttpReader {
    pub fn new(settings: &WebSettings, policy: Arc<UrlPolicy>) -> Result<Self, ReadError> {
        let _ = settings;
        Ok(Self {
            policy,
            current: None,
        })
    }
}

impl PageReader for HttpReader {
    fn engine(&self) -> Engine {
        Engine::Http
    }

    fn open<'a>(&'a mut self, url: &'a Url) -> BoxFuture<'a, Result<Page, ReadError>> {
        let _ = (&self.policy, &self.current);
        Box::pin(async move {
            Err(ReadError::Unreachable {
                url: url.to_string(),
                reason: "not built yet".into(),
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
