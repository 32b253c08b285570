//! The config file's schema and its parsing.
//!
//! Owns the reading of a TOML config file into the struct the settings table generates
//! (`settings::FileConfig`; the per-tool tables are `tools.rs`'s, the MCP servers' `mcp.rs`'s)
//! and turns parse failures into messages naming the file, the line and the key. It must not
//! apply precedence or defaults (the resolver does).

use std::path::{Path, PathBuf};

use super::ConfigError;

/// The top level and the sections of scalar keys are generated from the settings table.
pub use super::settings::FileConfig;

/// A parsed config file and its text (kept to turn spans into line numbers).
#[derive(Debug)]
pub(crate) struct LoadedFile {
    pub path: PathBuf,
    pub text: String,
    pub config: FileConfig,
}

impl LoadedFile {
    /// The 1-based line of a byte offset.
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .bytes()
            .filter(|&b| b == b'\n')
            .count()
            + 1
    }
}

/// Reads and parses a config file.
pub fn load(path: &Path) -> Result<LoadedFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(path, text)
}

/// Parses config text that came from `path`.
pub fn parse(path: &Path, text: String) -> Result<LoadedFile, ConfigError> {
    let config = toml::from_str::<FileConfig>(&text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        message: describe(&e, &text),
    })?;
    Ok(LoadedFile {
        path: path.to_owned(),
        text,
        config,
    })
}

/// Characters of the offending line shown on either side of the error.
const EXCERPT_SIDE: usize = 40;
/// The most characters of the parser's own message shown (it may quote a whole value).
const MESSAGE_MAX: usize = 500;

/// A parse error as a few short lines, however long the offending line or value is:
/// `line L, column C: message`, then an excerpt of the line around the column with a caret.
fn describe(error: &toml::de::Error, text: &str) -> String {
    // serde names Rust types; users write TOML.
    let message = error
        .message()
        .trim_end()
        .replace("expected i64", "expected a whole number");
    let message = cut(&shorten_quoted(&message), MESSAGE_MAX);
    let Some(at) = error.span().map(|span| span.start.min(text.len())) else {
        return message;
    };
    let at = (0..=at)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line_no = text[..line_start].matches('\n').count() + 1;
    let before: Vec<char> = text[line_start..at].chars().collect();
    let column = before.len() + 1;
    let after: String = text[at..line_end].trim_end_matches('\r').chars().collect();
    let shown_before: String = before[before.len().saturating_sub(EXCERPT_SIDE)..]
        .iter()
        .collect();
    let left = if before.len() > EXCERPT_SIDE {
        "…"
    } else {
        ""
    };
    let right = if after.chars().count() > EXCERPT_SIDE {
        "…"
    } else {
        ""
    };
    let shown_after: String = after.chars().take(EXCERPT_SIDE).collect();
    let excerpt =
        format!("{left}{shown_before}{shown_after}{right}").replace(|c: char| c.is_control(), " ");
    let caret = " ".repeat(left.chars().count() + shown_before.chars().count());
    format!("line {line_no}, column {column}: {message}\n  | {excerpt}\n  | {caret}^")
}

/// Characters kept of a value the parser quotes in its message.
const QUOTED_MAX: usize = 40;

/// `message` with each quoted value longer than `QUOTED_MAX` characters cut (serde quotes the
/// whole offending value: `invalid type: string "…200 KB…", expected …`).
fn shorten_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(1024));
    let mut rest = message;
    while let Some(open) = rest.find('"') {
        out.push_str(&rest[..=open]);
        let inner = &rest[open + 1..];
        let mut escaped = false;
        let close = inner.char_indices().find_map(|(i, c)| match (escaped, c) {
            (true, _) => {
                escaped = false;
                None
            }
            (false, '\\') => {
                escaped = true;
                None
            }
            (false, '"') => Some(i),
            _ => None,
        });
        let Some(close) = close else {
            out.push_str(&cut(inner, QUOTED_MAX));
            return out;
        };
        out.push_str(&cut(&inner[..close], QUOTED_MAX));
        out.push('"');
        rest = &inner[close + 1..];
    }
    out.push_str(rest);
    out
}

/// At most `max` characters, with an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
