//! A tool's result as the text the model and the execution pane get.
//!
//! Text parts as they are, structured content as compact JSON only when the text parts do not
//! already say it (`said_by_text`: its JSON, or all its values), images, audio and resources as one line each; made terminal-safe (a server
//! is untrusted: its escape sequences and control characters must not reach a terminal, and
//! the model gains nothing from them); cut to the output limit keeping the head and the tail.
//! It must not decide success (`CallOutput::is_error` does).
//!
//! The crate's other head-and-tail cutters are private to their modules or work on bytes
//! (`exec::capture::HeadTail` may split a character and adds its note beyond the limit), so
//! this one is its own: on character boundaries, at line starts where one is near, and never
//! past `limit` with its note included.

use serde_json::Value;

use super::check::one_line;
use super::{CallOutput, Part};
use crate::terminal_safe::terminal_safe;

/// Characters of a URI, name or MIME type on a part's summary line.
const SUMMARY_CHARS: usize = 200;
/// How far a cut point moves back (or on) to fall at a line start.
const LINE_WINDOW: usize = 256;

/// The result's text, at most `limit` bytes.
pub fn render(output: &CallOutput, limit: usize) -> String {
    let mut pieces: Vec<String> = output.parts.iter().map(part_text).collect();
    if let Some(structured) = &output.structured
        && !said_by_text(structured, &output.parts)
    {
        pieces.push(structured.to_string());
    }
    let text = pieces.join("\n");
    let text = if text.trim().is_empty() {
        "(no content)".to_owned()
    } else {
        terminal_safe(&text).into_owned()
    };
    head_and_tail(&text, limit)
}

fn part_text(part: &Part) -> String {
    match part {
        Part::Text(text) => text.clone(),
        Part::Image { mime_type, bytes } => {
            format!("[image: {}, {}]", clean(mime_type), size(*bytes))
        }
        Part::Audio { mime_type, bytes } => {
            format!("[audio: {}, {}]", clean(mime_type), size(*bytes))
        }
        Part::ResourceLink {
            uri,
            name,
            mime_type,
        } => {
            let mut line = format!("[resource: {}", clean(uri));
            if let Some(name) = name.as_deref().map(clean).filter(|n| !n.is_empty()) {
                line.push_str(&format!(" — {name}"));
            }
            if let Some(mime_type) = mime_type {
                line.push_str(&format!(" ({})", clean(mime_type)));
            }
            line.push(']');
            line
        }
        Part::Resource {
            uri,
            mime_type,
            text,
            blob_bytes,
        } => {
            let mut header = format!("[resource: {}", clean(uri));
            if let Some(mime_type) = mime_type {
                header.push_str(&format!(" ({})", clean(mime_type)));
            }
            match (text, blob_bytes) {
                (Some(text), _) => format!("{header}]\n{text}"),
                (None, Some(bytes)) => format!("{header}, {}]", size(*bytes)),
                (None, None) => format!("{header}]"),
            }
        }
    }
}

/// Whether the text parts already say what `structured` holds, so it is not sent twice. Servers
/// often send both: the JSON as text for old clients, or the same values in words or as they
/// are (server-filesystem's `read_text_file` gives the file as text and `{"content": <the same
/// file>}` as structure). Said when a text part is `structured`'s JSON, or when every value in it
/// (each string, number and boolean; keys aside) appears in the text: the model then loses only
/// the keys' names. A structure whose check would cost more than `MAX_MATCH_WORK` is kept.
fn said_by_text(structured: &Value, parts: &[Part]) -> bool {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) if !text.trim().is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if texts.is_empty() {
        return false;
    }
    let is_its_json = |text: &str| {
        let text = text.trim();
        (text.starts_with('{') || text.starts_with('['))
            && serde_json::from_str::<Value>(text).is_ok_and(|value| value == *structured)
    };
    if texts.iter().any(|text| is_its_json(text)) {
        return true;
    }
    let text = texts.join("\n");
    let mut values = Vec::new();
    if !scalars(structured, &mut values, MAX_MATCH_WORK / text.len().max(1)) {
        return false;
    }
    values.iter().all(|value| match value {
        Value::String(s) => text.contains(s.as_str()),
        Value::Number(n) => contains_number(&text, &n.to_string()),
        Value::Bool(b) => text.to_ascii_lowercase().contains(&b.to_string()),
        _ => true,
    })
}

/// Bytes of text times values a `said_by_text` check may compare (a few milliseconds).
const MAX_MATCH_WORK: usize = 64 * 1024 * 1024;

/// Collects `value`'s strings, numbers and booleans into `out`; `false` when there are more than
/// `max`.
fn scalars<'a>(value: &'a Value, out: &mut Vec<&'a Value>, max: usize) -> bool {
    match value {
        Value::Object(map) => map.values().all(|v| scalars(v, out, max)),
        Value::Array(items) => items.iter().all(|v| scalars(v, out, max)),
        Value::Null => true,
        scalar => {
            out.push(scalar);
            out.len() <= max
        }
    }
}

/// Whether `number` appears in `text` as a number of its own (`5` in `is 5.`, not in `15` or
/// `5.5`).
fn contains_number(text: &str, number: &str) -> bool {
    let is_part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit() || c == '.');
    text.match_indices(number).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let mut after = text[at + number.len()..].chars();
        let next = after.next();
        // A sentence's full stop after the number is not a decimal point.
        let decimal_point = next == Some('.') && after.next().is_some_and(|c| c.is_ascii_digit());
        !(is_part(before) || next.is_some_and(|c| c.is_ascii_digit()) || decimal_point)
    })
}

fn clean(text: &str) -> String {
    one_line(text, SUMMARY_CHARS)
}

/// `340 bytes`, `1.2 KB`, `3.4 MB`.
fn size(bytes: usize) -> String {
    const KB: f64 = 1024.0;
    // Sizes of real parts are far below 2^52, where f64 is exact.
    let value = bytes as f64;
    if value < KB {
        format!("{bytes} bytes")
    } else if value < KB * KB {
        format!("{:.1} KB", value / KB)
    } else {
        format!("{:.1} MB", value / (KB * KB))
    }
}

/// `text` if it fits `limit` bytes, else its head and tail around a line saying how much was
/// cut, all within `limit` bytes, cut at character boundaries (at line starts when one is
/// within `LINE_WINDOW` bytes). A limit too small for that line gets the text's head alone.
fn head_and_tail(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    // The note can be no longer than for the whole text cut, plus the line ends around it.
    let longest_note = note(text.len()).len() + 2;
    if limit < longest_note + 16 {
        return text[..text.floor_char_boundary(limit)].to_owned();
    }
    let room = limit - longest_note;
    let mut head_end = text.floor_char_boundary(room / 2);
    let window_start = text.floor_char_boundary(head_end.saturating_sub(LINE_WINDOW));
    if let Some(newline) = text[window_start..head_end].rfind('\n') {
        head_end = window_start + newline + 1;
    }
    let mut tail_start = text.ceil_char_boundary(text.len() - (room - room / 2));
    let window_end = text.floor_char_boundary((tail_start + LINE_WINDOW).min(text.len()));
    if let Some(newline) = text[tail_start..window_end].find('\n') {
        tail_start += newline + 1;
    }
    let (head, tail) = (&text[..head_end], &text[tail_start..]);
    let mut out = String::with_capacity(limit);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&note(tail_start - head_end));
    out.push('\n');
    out.push_str(tail);
    out
}

fn note(cut: usize) -> String {
    format!("[… {cut} bytes of the result cut …]")
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
