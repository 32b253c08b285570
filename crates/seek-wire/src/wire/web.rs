//! What the web agent tells front ends: the searches it made, the pages it read, the forms it
//! submitted and the notes it took, and the trail of a whole task; and the forms a page reader
//! finds, which the readers (seek-core's `web`) and the web agent's prompts (`agents`) share.
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

/// A field of a form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormField {
    /// The `name` attribute (fields without one are not listed).
    pub name: String,
    /// `text`, `password`, `email`, `hidden`, `checkbox`, `radio`, `select`, `textarea`,
    /// `submit`, …
    pub kind: String,
    /// Its current or default value.
    pub value: String,
    /// A select's options (their values).
    pub options: Vec<String>,
    /// A checkbox's or radio's state.
    pub checked: bool,
    pub required: bool,
}

/// A form on a page as a reader found it: where it goes and its fields (the web agent lists
/// them to the model).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Form {
    /// The absolute URL it submits to (the page's own when it names none).
    pub action: String,
    /// `get` or `post`.
    pub method: String,
    pub fields: Vec<FormField>,
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
