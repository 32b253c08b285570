//! The web, as the web agent and the `web_search` tool see it: search backends (`search`),
//! page readers (`read`: plain HTTP, or a real headless Chromium), the HTML-to-text converter
//! both readers share (`html`), which URLs may be opened at all (`policy`), and the proxy that
//! holds the browser's every request to those rules (`proxy`).
//!
//! Everything here treats what comes from the network as untrusted: sizes are capped, every
//! request has a timeout, URLs are checked before they are opened. It must not know the agent
//! loop, prompts or the terminal.

pub mod html;
pub mod policy;
pub mod proxy;
pub mod read;
pub mod search;

pub use policy::{UrlPolicy, UrlRefused};
pub use proxy::{PeerFilter, PolicyProxy, ProxyError, Refusal, RefusalReason};
pub use read::{Engine, Form, FormField, Link, Page, PageReader, ReadError, open_reader};
pub use search::{SearchBackend, SearchError, SearchHit, format_hits, parse_hits};
