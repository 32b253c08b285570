//! `block:N` placeholders: how a stored answer refers to its executed blocks.
//!
//! Owns the placeholder line format and the expansion of placeholder lines back into text. Pure
//! string functions; the scanner decides where blocks are.

use std::borrow::Cow;

const PREFIX: &str = "block:";

/// The placeholder line for tool block `index`.
pub fn placeholder(index: usize) -> String {
    format!("{PREFIX}{index}")
}

/// The block index of a line that is exactly a placeholder (surrounding spaces allowed).
pub fn placeholder_index(line: &str) -> Option<usize> {
    let digits = line.trim().strip_prefix(PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Replaces each placeholder line with `expand(index)`; a placeholder that `expand` does not know
/// (returns `None`) is left as written. Line endings are kept as they were.
///
/// Placeholders are matched in order (`block:0`, then `block:1`, …), so a stray `block:7` line the
/// model wrote itself, or a repeated index, is not expanded.
pub fn expand_placeholders<'a, F>(text: &'a str, mut expand: F) -> Cow<'a, str>
where
    F: FnMut(usize) -> Option<Cow<'a, str>>,
{
    if !text.contains(PREFIX) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut next = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let expansion = placeholder_index(body)
            .filter(|&i| i == next)
            .and_then(&mut expand);
        match expansion {
            Some(replacement) => {
                out.push_str(&replacement);
                out.push_str(&line[body.len()..]);
                next += 1;
            }
            None => out.push_str(line),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_lines() {
        assert_eq!(placeholder(3), "block:3");
        assert_eq!(placeholder_index("block:12"), Some(12));
        assert_eq!(placeholder_index("  block:0 "), Some(0));
        for line in [
            "block:",
            "block:x",
            "see block: 1 here",
            "block:1a",
            "Block:1",
        ] {
            assert_eq!(placeholder_index(line), None, "{line:?}");
        }
    }

    #[test]
    fn expansion_is_ordered() {
        let text = "a\nblock:1\nblock:0\nb\nblock:1\nblock:1\n";
        let out = expand_placeholders(text, |i| Some(Cow::Owned(format!("<{i}>"))));
        assert_eq!(out, "a\nblock:1\n<0>\nb\n<1>\nblock:1\n");
    }

    #[test]
    fn unknown_placeholders_stay() {
        let out = expand_placeholders("block:0\r\nx", |_| None);
        assert_eq!(out, "block:0\r\nx");
    }
}
