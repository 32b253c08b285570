//! The `http` engine: pages fetched with reqwest (redirects followed by hand, each hop checked by
//! the URL policy, at most 10; the body read up to `[web] max_page_bytes`; the charset from the
//! header, the `<meta>` tag or a sniff), then read by `web::html`. Forms are submitted as the
//! browser would (GET query or urlencoded POST). No script runs.
//!
//! It must not start processes.

mod charset;
mod fill;

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, LOCATION};
use reqwest::{Client, Method, StatusCode, Url};

use super::{Engine, Page, PageReader, ReadError};
use crate::BoxFuture;
use crate::config::WebSettings;
use crate::web::html;
use crate::web::policy::{PrivateResolution, UrlPolicy, UrlRefused, resolver};
use crate::wire::WebField;

/// Most redirects followed for one page.
pub(crate) const MAX_REDIRECTS: usize = 10;

/// What the reader says it is (some sites refuse clients without a browser-like agent).
const USER_AGENT: &str = concat!(
    "Mozilla/5.0 (X11; Linux x86_64) seek/",
    env!("CARGO_PKG_VERSION")
);

/// A plain-HTTP reader.
pub struct HttpReader {
    client: Client,
    policy: Arc<UrlPolicy>,
    timeout: Duration,
    max_bytes: usize,
    current: Option<Page>,
}

/// One request to send: where, how, and the urlencoded body of a POST.
struct Outgoing {
    method: Method,
    url: Url,
    body: Option<String>,
}

impl HttpReader {
    pub fn new(settings: &WebSettings, policy: Arc<UrlPolicy>) -> Result<Self, ReadError> {
        let timeout = settings.timeout();
        let client = crate::tls::client_builder()
            .dns_resolver(resolver(Arc::clone(&policy)))
            // Every hop goes through the policy: reqwest must not follow any itself.
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve names itself, past the policy's resolver.
            .no_proxy()
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(USER_AGENT)
            .build()
            .map_err(|e| ReadError::Browser {
                reason: format!("the HTTP client could not be built: {e}"),
            })?;
        Ok(Self {
            client,
            policy,
            timeout,
            max_bytes: settings.max_page_bytes(),
            current: None,
        })
    }

    /// Sends `outgoing`, following redirects, and reads the page it ends on, all within the
    /// timeout.
    async fn fetch(&mut self, outgoing: Outgoing) -> Result<Page, ReadError> {
        let url = outgoing.url.to_string();
        let secs = self.timeout.as_secs();
        let page = match tokio::time::timeout(self.timeout, self.follow(outgoing)).await {
            Ok(result) => result?,
            Err(_) => return Err(ReadError::Timeout { url, secs }),
        };
        self.current = Some(page.clone());
        Ok(page)
    }

    async fn follow(&self, mut outgoing: Outgoing) -> Result<Page, ReadError> {
        let mut hops = 0;
        loop {
            let checked = self.policy.check(outgoing.url.as_str())?;
            let mut request = self
                .client
                .request(outgoing.method.clone(), checked.clone());
            if let Some(body) = &outgoing.body {
                request = request
                    .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .body(body.clone());
            }
            let response = request
                .send()
                .await
                .map_err(|e| self.request_error(&checked, &e))?;
            let status = response.status();
            if !status.is_redirection() || status == StatusCode::NOT_MODIFIED {
                return self.read(checked, response).await;
            }
            let Some(location) = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
            else {
                // A redirect that names no target is read as the page it is.
                return self.read(checked, response).await;
            };
            if hops == MAX_REDIRECTS {
                return Err(ReadError::TooManyRedirects {
                    url: checked.to_string(),
                    limit: MAX_REDIRECTS,
                });
            }
            hops += 1;
            let next = checked
                .join(location.trim())
                .map_err(|_| UrlRefused::Unparsable {
                    url: location.to_owned(),
                })?;
            let keeps_method = matches!(
                status,
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            );
            outgoing = if keeps_method {
                Outgoing {
                    url: next,
                    ..outgoing
                }
            } else {
                Outgoing {
                    method: Method::GET,
                    url: next,
                    body: None,
                }
            };
        }
    }

    /// The page `response` holds, read up to the size cap.
    async fn read(&self, url: Url, mut response: reqwest::Response) -> Result<Page, ReadError> {
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let essence = content_type
            .as_deref()
            .and_then(|c| c.split(';').next())
            .map(|c| c.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let plain = essence == "text/plain";
        // No Content-Type at all: read it as HTML, as browsers sniff it.
        let is_html =
            essence.is_empty() || essence == "text/html" || essence == "application/xhtml+xml";
        if !plain && !is_html {
            if status >= 400 {
                return Ok(error_page(url, status));
            }
            return Err(ReadError::NotText {
                url: url.to_string(),
                content_type: essence,
            });
        }
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.request_error(&url, &e))?
        {
            let room = self.max_bytes.saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let text = charset::decode(&body, content_type.as_deref());
        let (title, text, links, forms) = if plain {
            (
                String::new(),
                html::plain_text(&text),
                Vec::new(),
                Vec::new(),
            )
        } else {
            let extracted = html::extract(&text, &url);
            (
                extracted.title,
                extracted.text,
                extracted.links,
                extracted.forms,
            )
        };
        Ok(Page {
            kind: html::classify(Some(status), &title, &text),
            url: url.to_string(),
            status: Some(status),
            title,
            text,
            links,
            forms,
            bytes: body.len(),
            truncated,
        })
    }

    /// What a failed request means: a name the policy kept from resolving is refused, a slow
    /// server timed out, anything else is unreachable.
    fn request_error(&self, url: &Url, error: &reqwest::Error) -> ReadError {
        let mut source = error.source();
        while let Some(cause) = source {
            if let Some(private) = cause.downcast_ref::<PrivateResolution>() {
                return UrlRefused::Private {
                    url: url.to_string(),
                    host: private.host.clone(),
                }
                .into();
            }
            source = cause.source();
        }
        if error.is_timeout() {
            return ReadError::Timeout {
                url: url.to_string(),
                secs: self.timeout.as_secs(),
            };
        }
        ReadError::Unreachable {
            url: url.to_string(),
            reason: error_chain(error),
        }
    }

    async fn submit_form(&mut self, fields: &[WebField]) -> Result<Page, ReadError> {
        let page = self.current.as_ref().ok_or(ReadError::NoPage)?;
        let Some(index) = fill::pick_form(&page.forms, fields) else {
            return Err(ReadError::NoMatchingForm {
                url: page.url.clone(),
                names: fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                available: fill::available(&page.forms),
            });
        };
        let form = &page.forms[index];
        let pairs = fill::pairs(form, fields);
        let mut action = self.policy.check(&form.action)?;
        action.set_fragment(None);
        let outgoing = if form.method == "post" {
            // The urlencoded serialisation of the pairs, as a query string is.
            let mut encoder = action.clone();
            encoder.set_query(None);
            encoder.query_pairs_mut().extend_pairs(&pairs);
            Outgoing {
                method: Method::POST,
                body: Some(encoder.query().unwrap_or_default().to_owned()),
                url: action,
            }
        } else {
            // A GET form replaces the action's query with its fields, as browsers do.
            action.set_query(None);
            if !pairs.is_empty() {
                action.query_pairs_mut().extend_pairs(&pairs);
            }
            Outgoing {
                method: Method::GET,
                url: action,
                body: None,
            }
        };
        self.fetch(outgoing).await
    }
}

/// A page of kind Error for a 4xx/5xx answer whose body is not text.
fn error_page(url: Url, status: u16) -> Page {
    Page {
        url: url.to_string(),
        status: Some(status),
        title: String::new(),
        text: String::new(),
        links: Vec::new(),
        forms: Vec::new(),
        kind: html::classify(Some(status), "", ""),
        bytes: 0,
        truncated: false,
    }
}

/// `error` and its causes on one line (reqwest's own text says only "error sending request").
fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

impl PageReader for HttpReader {
    fn engine(&self) -> Engine {
        Engine::Http
    }

    fn open<'a>(&'a mut self, url: &'a Url) -> BoxFuture<'a, Result<Page, ReadError>> {
        Box::pin(async move {
            let outgoing = Outgoing {
                method: Method::GET,
                url: url.clone(),
                body: None,
            };
            self.fetch(outgoing).await
        })
    }

    fn submit<'a>(&'a mut self, fields: &'a [WebField]) -> BoxFuture<'a, Result<Page, ReadError>> {
        Box::pin(self.submit_form(fields))
    }

    fn close(&mut self) -> BoxFuture<'_, ()> {
        self.current = None;
        Box::pin(async {})
    }
}
