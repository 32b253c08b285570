//! A guard before parsing: html5ever's tree building is quadratic in nesting depth (20,000
//! nested `<div>`s take ~26 s in a debug build), so a hostile page could hang the reader. Start
//! tags nested deeper than `MAX_DEPTH` are removed, with as many of the following end tags; the
//! text stays, only that markup is lost.
//!
//! A byte scan, not a parser: tags inside scripts or comments may be miscounted, which can only
//! remove markup of pages already nested that deep. It must not change a page within the cap.

use std::borrow::Cow;

/// Deepest nesting kept (browsers render far less; Chromium's parser caps at 512).
pub(crate) const MAX_DEPTH: usize = 2000;

/// Elements that never nest (void) or are usually closed implicitly: not counted.
const UNCOUNTED: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "p", "li", "option", "td", "th", "tr", "dt", "dd",
];

/// `html` with start tags past `MAX_DEPTH` removed (borrowed when nothing is).
pub(crate) fn cap_nesting(html: &str) -> Cow<'_, str> {
    let bytes = html.as_bytes();
    let mut depth = 0usize;
    let mut dropped = 0usize;
    let mut out: Option<String> = None;
    let mut kept_from = 0;
    let mut i = 0;
    while let Some(offset) = bytes[i..].iter().position(|b| *b == b'<') {
        let start = i + offset;
        let closing = bytes.get(start + 1) == Some(&b'/');
        let name_at = start + 1 + usize::from(closing);
        if !bytes.get(name_at).is_some_and(u8::is_ascii_alphabetic) {
            i = start + 1;
            continue;
        }
        let end = bytes[start..]
            .iter()
            .position(|b| *b == b'>')
            .map_or(bytes.len(), |e| start + e + 1);
        let name_end = bytes[name_at..end]
            .iter()
            .position(|b| !b.is_ascii_alphanumeric())
            .map_or(end, |e| name_at + e);
        // Both ends are ASCII positions, so this is a valid slice.
        let name = html[name_at..name_end].to_ascii_lowercase();
        let self_closing = bytes[..end].ends_with(b"/>");
        let counted = !UNCOUNTED.contains(&name.as_str()) && !self_closing;
        let mut drop_tag = false;
        if counted && closing {
            if dropped > 0 {
                dropped -= 1;
                drop_tag = true;
            } else {
                depth = depth.saturating_sub(1);
            }
        } else if counted {
            if depth >= MAX_DEPTH {
                dropped += 1;
                drop_tag = true;
            } else {
                depth += 1;
            }
        }
        if drop_tag {
            let buffer = out.get_or_insert_with(|| String::with_capacity(html.len()));
            buffer.push_str(&html[kept_from..start]);
            kept_from = end;
        }
        i = end;
        if i >= bytes.len() {
            break;
        }
    }
    match out {
        None => Cow::Borrowed(html),
        Some(mut buffer) => {
            buffer.push_str(&html[kept_from..]);
            Cow::Owned(buffer)
        }
    }
}
