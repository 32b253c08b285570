//! The web agent's items in the transcript: a pane per search, per page read and per form
//! submitted, each holding the notes the agent took on it.
//!
//! Pure state: it must not draw (`render::web` does) or decide when a pane changes (the
//! transcript applies the web events to it). Every text here came from a page, a search backend
//! or the model: whoever shows it makes it safe (`terminal_safe::web_safe`).

use crate::wire::{PageKind, WebField, WebHit};

/// What a web pane shows.
#[derive(Debug, Clone, PartialEq)]
pub enum WebBody {
    /// A search and its results (or why it failed).
    Search {
        query: String,
        backend: String,
        results: Vec<WebHit>,
        error: Option<String>,
        elapsed_ms: u64,
    },
    /// A page read, with the text the model was given.
    Page(Box<PageRead>),
    /// A form filled and submitted.
    Form {
        url: String,
        fields: Vec<WebField>,
        error: Option<String>,
    },
}

/// A page read (the fields of `Event::PageRead` the pane shows).
#[derive(Debug, Clone, PartialEq)]
pub struct PageRead {
    pub url: String,
    pub final_url: String,
    pub title: String,
    pub engine: String,
    pub kind: PageKind,
    pub status: Option<u16>,
    pub text: String,
    pub chars: usize,
    pub cut: bool,
    pub links: usize,
    pub forms: usize,
    pub error: Option<String>,
    pub elapsed_ms: u64,
}

/// One web pane.
#[derive(Debug, Clone, PartialEq)]
pub struct WebPane {
    /// The plan step whose sub-agent did it (`None`: the task's own agent).
    pub step: Option<String>,
    /// The step of the web agent's loop.
    pub web_step: u32,
    pub body: WebBody,
    /// The notes the agent took on this page (or on these results), in order.
    pub notes: Vec<String>,
    pub expanded: bool,
}

impl WebPane {
    /// A new pane: unfolded when it failed (as a failed execution pane is) or when every pane
    /// is unfolded (`panes_expanded`, Ctrl+O).
    pub fn new(step: Option<String>, web_step: u32, body: WebBody, panes_expanded: bool) -> Self {
        let failed = match &body {
            WebBody::Search { error, .. } | WebBody::Form { error, .. } => error.is_some(),
            WebBody::Page(page) => page.error.is_some(),
        };
        Self {
            step,
            web_step,
            body,
            notes: Vec::new(),
            expanded: failed || panes_expanded,
        }
    }

    /// Whether a note taken on `url` belongs here: a page asked for or landed on at `url`.
    pub(crate) fn is_page_of(&self, url: &str) -> bool {
        matches!(&self.body, WebBody::Page(page) if page.url == url || page.final_url == url)
    }

    pub(crate) fn is_search(&self) -> bool {
        matches!(self.body, WebBody::Search { .. })
    }

    /// The pane's text for the clipboard (what the model was given), and how to name it.
    pub(crate) fn copy_text(&self) -> (String, &'static str) {
        let mut text = match &self.body {
            WebBody::Search { results, error, .. } => match error {
                Some(error) => error.clone(),
                None => results
                    .iter()
                    .map(|hit| format!("{}\n{}\n{}\n", hit.title, hit.link, hit.snippet))
                    .collect::<Vec<_>>()
                    .join("\n"),
            },
            WebBody::Page(page) => page.error.clone().unwrap_or_else(|| page.text.clone()),
            WebBody::Form { fields, error, .. } => {
                let mut text: Vec<String> = fields.iter().map(shown_field).collect();
                text.extend(error.clone());
                text.join("\n")
            }
        };
        for note in &self.notes {
            text.push_str(&format!("\nnote: {note}"));
        }
        let what = match self.body {
            WebBody::Search { .. } => "the search results",
            WebBody::Page(_) => "the page text",
            WebBody::Form { .. } => "the form",
        };
        (text, what)
    }
}

/// What a secret field's value shows as.
pub(crate) const MASK: &str = "••••";

/// Whether a form field holds a secret: its name says password (`pass`, `pwd`) or secret.
pub(crate) fn is_secret_field(name: &str) -> bool {
    let name = name.to_lowercase();
    ["pass", "pwd", "secret"].iter().any(|s| name.contains(s))
}

/// `name = value`, the value masked when the field holds a secret.
pub(crate) fn shown_field(field: &WebField) -> String {
    let value = if is_secret_field(&field.name) {
        MASK
    } else {
        field.value.as_str()
    };
    format!("{} = {value}", field.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, value: &str) -> WebField {
        WebField {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn password_fields_are_masked_and_others_shown() {
        assert_eq!(shown_field(&field("user", "ada")), "user = ada");
        assert_eq!(
            shown_field(&field("Password", "hunter2")),
            "Password = ••••"
        );
        assert_eq!(shown_field(&field("passwd", "x")), "passwd = ••••");
        assert_eq!(shown_field(&field("new_pwd", "x")), "new_pwd = ••••");
        assert_eq!(
            shown_field(&field("client_secret", "x")),
            "client_secret = ••••"
        );
    }

    #[test]
    fn a_failed_step_starts_unfolded_and_a_good_one_folded() {
        let ok = WebBody::Form {
            url: "http://x/login".into(),
            fields: vec![field("password", "hunter2")],
            error: None,
        };
        assert!(!WebPane::new(None, 1, ok.clone(), false).expanded);
        assert!(WebPane::new(None, 1, ok.clone(), true).expanded);
        let pane = WebPane::new(None, 1, ok, false);
        let (copied, _) = pane.copy_text();
        assert!(!copied.contains("hunter2"), "{copied}");
        let failed = WebBody::Form {
            url: "http://x/login".into(),
            fields: Vec::new(),
            error: Some("no form matched".into()),
        };
        assert!(WebPane::new(None, 1, failed, false).expanded);
    }
}
