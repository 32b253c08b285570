//! A page's readable text as markdown-ish lines: `#` headings, paragraphs apart by blank lines,
//! `- ` list items, `| a | b |` table rows, `<br>` as a newline, link texts inline (never their
//! URLs), images as `[IMAGE: alt]`. Scripts, styles, navigation, footers, asides, hidden
//! elements and form controls are dropped; whitespace is collapsed; control and bidi characters
//! are removed.
//!
//! The walk is iterative (open/close edges of the tree), so a page nested a hundred thousand
//! levels deep cannot overflow the stack. Pure; it must not know links' targets or forms.

use ego_tree::NodeId;
use ego_tree::iter::Edge;
use scraper::node::Element;
use scraper::{Html, Node};

use super::clean::{clean_char, one_line};

/// Longest image alt text kept, in characters.
const MAX_ALT: usize = 200;

/// The readable text of `doc`.
pub(crate) fn text(doc: &Html) -> String {
    let mut writer = Writer::default();
    // The element whose subtree is being skipped, until its close edge.
    let mut skipping: Option<NodeId> = None;
    let mut list_depth = 0usize;
    let mut pre_depth = 0usize;
    // Cells written in the current table row.
    let mut cells = 0usize;
    for edge in doc.tree.root().traverse() {
        match edge {
            Edge::Open(node) => {
                if skipping.is_some() {
                    continue;
                }
                match node.value() {
                    Node::Text(text) => writer.text(text, pre_depth > 0),
                    Node::Element(element) => {
                        if is_dropped(element) {
                            skipping = Some(node.id());
                            continue;
                        }
                        match element.name() {
                            "br" => writer.line_break(),
                            "hr" => writer.paragraph_break(),
                            "img" => {
                                let alt = one_line(element.attr("alt").unwrap_or(""), MAX_ALT);
                                if !alt.is_empty() {
                                    writer.literal(&format!("[IMAGE: {alt}]"));
                                }
                            }
                            "h1" => writer.block_with_prefix("# "),
                            "h2" => writer.block_with_prefix("## "),
                            "h3" | "h4" | "h5" | "h6" => writer.block_with_prefix("### "),
                            "ul" | "ol" => {
                                list_depth += 1;
                                writer.line_break();
                            }
                            "li" => {
                                writer.line_break();
                                let indent = "  ".repeat(list_depth.saturating_sub(1).min(8));
                                writer.set_prefix(format!("{indent}- "));
                            }
                            "tr" => {
                                writer.line_break();
                                cells = 0;
                            }
                            "td" | "th" => {
                                writer.literal(if cells == 0 { "| " } else { " | " });
                                cells += 1;
                            }
                            "pre" => {
                                pre_depth += 1;
                                writer.paragraph_break();
                            }
                            name if is_block(name) => writer.paragraph_break(),
                            _ => {}
                        }
                    }
                    _ => {}
                }
            }
            Edge::Close(node) => {
                if let Some(id) = skipping {
                    if id == node.id() {
                        skipping = None;
                    }
                    continue;
                }
                let Node::Element(element) = node.value() else {
                    continue;
                };
                match element.name() {
                    "ul" | "ol" => {
                        list_depth = list_depth.saturating_sub(1);
                        writer.line_break();
                        if list_depth == 0 {
                            writer.paragraph_break();
                        }
                    }
                    "li" => writer.line_break(),
                    "tr" => {
                        if cells > 0 {
                            writer.literal(" |");
                        }
                        writer.line_break();
                        cells = 0;
                    }
                    "pre" => {
                        pre_depth = pre_depth.saturating_sub(1);
                        writer.paragraph_break();
                    }
                    "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => writer.paragraph_break(),
                    name if is_block(name) => writer.paragraph_break(),
                    _ => {}
                }
            }
        }
    }
    writer.finish()
}

/// Elements whose whole subtree is not text a reader sees.
fn is_dropped(element: &Element) -> bool {
    let dropped_tag = matches!(
        element.name(),
        "script"
            | "style"
            | "noscript"
            | "template"
            | "svg"
            | "math"
            | "iframe"
            | "object"
            | "embed"
            | "canvas"
            | "head"
            | "title"
            | "nav"
            | "footer"
            | "aside"
            | "input"
            | "select"
            | "option"
            | "datalist"
            | "textarea"
    );
    dropped_tag
        || element.attr("hidden").is_some()
        || element
            .attr("aria-hidden")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || element.attr("role").is_some_and(|role| {
            role.split_ascii_whitespace().any(|r| {
                ["navigation", "banner", "contentinfo"]
                    .iter()
                    .any(|dropped| r.eq_ignore_ascii_case(dropped))
            })
        })
}

/// Elements that start and end a paragraph of their own.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "main"
            | "header"
            | "blockquote"
            | "table"
            | "thead"
            | "tbody"
            | "tfoot"
            | "caption"
            | "dl"
            | "dt"
            | "dd"
            | "figure"
            | "figcaption"
            | "address"
            | "details"
            | "summary"
            | "form"
            | "fieldset"
            | "legend"
            | "body"
            | "html"
    )
}

/// Which break is owed before the next visible character.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
enum Break {
    #[default]
    None,
    Line,
    Paragraph,
}

/// Builds the text, deciding spaces and breaks lazily so that empty blocks leave no blank lines.
#[derive(Default)]
struct Writer {
    out: String,
    pending_break: Break,
    pending_space: bool,
    /// Written before the next visible character (a heading's `#`, a list item's `- `).
    pending_prefix: Option<String>,
}

impl Writer {
    fn line_break(&mut self) {
        self.pending_break = self.pending_break.max(Break::Line);
        self.pending_space = false;
    }

    fn paragraph_break(&mut self) {
        self.pending_break = Break::Paragraph;
        self.pending_space = false;
    }

    fn block_with_prefix(&mut self, prefix: &str) {
        self.paragraph_break();
        self.set_prefix(prefix.to_owned());
    }

    fn set_prefix(&mut self, prefix: String) {
        self.pending_prefix = Some(prefix);
    }

    /// Owed breaks and prefix, before visible text.
    fn settle(&mut self) {
        if !self.out.is_empty() {
            match self.pending_break {
                Break::None => {
                    if self.pending_space && !self.out.ends_with([' ', '\n']) {
                        self.out.push(' ');
                    }
                }
                Break::Line => {
                    self.trim_trailing_spaces();
                    self.out.push('\n');
                }
                Break::Paragraph => {
                    self.trim_trailing_spaces();
                    self.out.push_str("\n\n");
                }
            }
        }
        self.pending_break = Break::None;
        self.pending_space = false;
        if let Some(prefix) = self.pending_prefix.take() {
            self.out.push_str(&prefix);
        }
    }

    fn trim_trailing_spaces(&mut self) {
        let kept = self.out.trim_end_matches(' ').len();
        self.out.truncate(kept);
    }

    /// Markup written as is (table bars, image labels).
    fn literal(&mut self, text: &str) {
        self.settle();
        self.out.push_str(text);
    }

    /// Page text: cleaned, whitespace collapsed (kept as line breaks inside `<pre>`).
    fn text(&mut self, text: &str, preformatted: bool) {
        for raw in text.chars() {
            if preformatted && raw == '\n' {
                self.line_break();
                continue;
            }
            match clean_char(raw) {
                None => {}
                Some(' ') => self.pending_space = true,
                Some(c) => {
                    self.settle();
                    self.out.push(c);
                }
            }
        }
    }

    fn finish(mut self) -> String {
        self.trim_trailing_spaces();
        self.out
    }
}
