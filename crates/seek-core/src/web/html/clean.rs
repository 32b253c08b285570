//! Character hygiene for text taken from pages: control characters and bidirectional overrides
//! removed (the text goes to a model and to a terminal, where they could hide or reorder what is
//! shown), whitespace collapsed, one-line labels cut to a length.
//!
//! Pure string handling; it must not know HTML.

/// Whether `c` reorders or hides text without being visible: bidi embeddings, overrides and
/// isolates, the marks, and zero-width characters other than the joiners emoji need.
pub(crate) fn is_invisible_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200b}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// What a character of page text becomes: `None` to drop it, `Some(' ')` for any whitespace or
/// control character (so words on either side stay apart), else itself.
pub(crate) fn clean_char(c: char) -> Option<char> {
    if is_invisible_control(c) {
        None
    } else if c.is_whitespace() || c.is_control() {
        Some(' ')
    } else {
        Some(c)
    }
}

/// `text` on one line: cleaned, whitespace runs collapsed to one space, trimmed, and cut to at
/// most `max_chars` characters (the last one `…` when cut).
pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    let mut pending_space = false;
    for c in text.chars().filter_map(clean_char) {
        if c == ' ' {
            pending_space = !out.is_empty();
            continue;
        }
        let needed = if pending_space { 2 } else { 1 };
        if count + needed > max_chars {
            if max_chars > 0 {
                // Room for the ellipsis: drop characters until it fits.
                while count + 1 > max_chars {
                    out.pop();
                    count -= 1;
                }
                out.push('…');
            }
            return out.trim_end().to_owned();
        }
        if pending_space {
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        out.push(c);
        count += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_and_cleans() {
        assert_eq!(one_line("  a \n\t b\u{202e}c\u{7}d  ", 100), "a bc d");
        assert_eq!(one_line("", 10), "");
    }

    #[test]
    fn one_line_cuts_with_an_ellipsis() {
        let cut = one_line(&"word ".repeat(100), 20);
        assert!(cut.chars().count() <= 20, "{cut}");
        assert!(cut.ends_with('…'), "{cut}");
        assert_eq!(one_line("abc", 3), "abc");
        assert_eq!(one_line("abcd", 3), "ab…");
    }
}
