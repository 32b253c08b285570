//! What the web agent tells front ends: the searches it made, the pages it read, the forms it
//! submitted and the notes it took, and the trail of a whole task.
//!
//! Plain serde data; it must not decide anything.

use serde::{Deserialize, Serialize};

/// One search result, as the search backend gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebHit {
    pub title: String,
    pub snippet: String,
    pub link: String,
}

/// A form field the web agent filled: its name and the value typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebField {
    pub name: String,
    pub value: String,
}

/// What a read page turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageKind {
    /// A page with content.
    Content,
    /// A CAPTCHA or "checking your browser" wall: its text is not the content asked for.
    Captcha,
    /// An error page (HTTP status 4xx/5xx, or a page saying it was not found).
    Error,
    /// Nothing readable (an empty body, or only scripts with the `http` engine).
    Empty,
}

impl PageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PageKind::Content => "content",
            PageKind::Captcha => "captcha",
            PageKind::Error => "error",
            PageKind::Empty => "empty",
        }
    }
}

/// Everything the web agent visited and noted in one task, in order (in `TurnFinished`, and so
/// in the session file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebTrail {
    /// The queries searched.
    #[serde(default)]
    pub queries: Vec<String>,
    /// Every URL opened (the final URL after redirects), in order.
    #[serde(default)]
    pub visited: Vec<String>,
    /// The notes taken, in order.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The engine that read the pages: `http` or `chromium` (`None`: no page was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
}
