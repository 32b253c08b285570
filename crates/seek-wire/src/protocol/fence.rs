//! One line at a time: is it an opening fence, a closing fence, or content?
//!
//! Owns the CommonMark-shaped rules for fence lines, the container prefix (indentation, list
//! markers, block-quote markers) and de-indentation of content lines. Pure string functions; it
//! must not keep state across lines (the scanner does).

/// An opening fence line, borrowed from the line it was found on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpeningFence<'a> {
    /// Whatever precedes the fence on its line: indentation, `- `, `1. `, `> `.
    pub prefix: &'a str,
    /// `` ` `` or `~`.
    pub fence_char: u8,
    /// Number of fence characters (at least 3).
    pub fence_len: usize,
    /// The info string, trimmed.
    pub info: &'a str,
}

/// The tag word and the `:path` suffix of an info string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoString<'a> {
    pub tag: &'a str,
    pub save_path: Option<&'a str>,
    /// Text after the tag's `:` that does not look like a path (`print('hello')`): ignored, so
    /// the fence is read as its language alone, never saved under that name.
    pub ignored_suffix: Option<&'a str>,
}

/// Whether a `:` suffix looks like a file path, so a block may be saved under it.
///
/// A path is made of letters and digits (any script) and `. _ - / \ : + @ ~`, with at least one
/// letter or digit: `hello.py`, `sub/dir/x.py`, `C:\x\y.py`, `été.py`. Anything else
/// (parentheses, quotes, spaces, `=`, `;`, `$`, `*`, `,`, backticks, …) is code or prose a model
/// wrote on the fence line, such as `print('hello')` or `x = 1`.
pub fn looks_like_path(suffix: &str) -> bool {
    suffix.chars().any(char::is_alphanumeric)
        && suffix.chars().all(|c| {
            c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '\\' | ':' | '+' | '@' | '~')
        })
}

/// Strips a trailing `\n` or `\r\n`.
pub fn without_line_ending(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// Length in bytes of the container prefix: spaces and tabs, `>` block-quote markers, and list
/// markers (`-`, `*`, `+`, `1.`, `1)`) that are followed by whitespace, in any nesting.
pub fn container_prefix_len(line: &str) -> usize {
    let bytes = line.as_bytes();
    let mut pos = 0;
    loop {
        while pos < bytes.len() && matches!(bytes[pos], b' ' | b'\t') {
            pos += 1;
        }
        match bytes.get(pos) {
            Some(b'>') => pos += 1,
            Some(b'-' | b'*' | b'+') if matches!(bytes.get(pos + 1), Some(b' ' | b'\t')) => {
                pos += 1;
            }
            Some(b'0'..=b'9') => {
                let digits = bytes[pos..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                let after = pos + digits;
                let is_marker = digits <= 9
                    && matches!(bytes.get(after), Some(b'.' | b')'))
                    && matches!(bytes.get(after + 1), Some(b' ' | b'\t'));
                if !is_marker {
                    return pos;
                }
                pos = after + 1;
            }
            _ => return pos,
        }
    }
}

/// The prefix that continuation lines of a container carry: list markers become spaces of the same
/// width (content of `1. ```python` is indented by three spaces), block-quote markers stay.
pub fn continuation_prefix(prefix: &str) -> String {
    let bytes = prefix.as_bytes();
    let mut out = String::with_capacity(prefix.len());
    let mut pos = 0;
    while pos < bytes.len() {
        match bytes[pos] {
            b'>' | b' ' | b'\t' => out.push(bytes[pos] as char),
            // Everything else in a container prefix is a list marker character (ASCII).
            _ => out.push(' '),
        }
        pos += 1;
    }
    out
}

/// Parses `line` (without its line ending) as an opening fence.
///
/// A backtick fence whose info string contains a backtick is inline code (```` ```python print(1)``` ````),
/// not a fence, as in CommonMark.
pub fn opening_fence(line: &str) -> Option<OpeningFence<'_>> {
    let prefix_len = container_prefix_len(line);
    let rest = &line[prefix_len..];
    let fence_char = *rest.as_bytes().first()?;
    if fence_char != b'`' && fence_char != b'~' {
        return None;
    }
    let fence_len = rest.bytes().take_while(|&b| b == fence_char).count();
    if fence_len < 3 {
        return None;
    }
    let info = rest[fence_len..].trim();
    if fence_char == b'`' && info.contains('`') {
        return None;
    }
    Some(OpeningFence {
        prefix: &line[..prefix_len],
        fence_char,
        fence_len,
        info,
    })
}

/// Splits an info string into its tag word and optional `:path` suffix.
///
/// The tag runs up to whitespace or `:`. A `:` right after the tag (spaces allowed before it)
/// starts the save path, which runs to the end of the info string, trimmed; so
/// `python:C:\x\y.py` saves to `C:\x\y.py`, not `C` (AgenticSeek §1.3). A suffix that does not
/// look like a path (`looks_like_path`) is no save path: it is `ignored_suffix`.
pub fn split_info(info: &str) -> InfoString<'_> {
    let tag_end = info
        .find(|c: char| c.is_whitespace() || c == ':')
        .unwrap_or(info.len());
    let tag = &info[..tag_end];
    let after = info[tag_end..].trim_start();
    let suffix = after
        .strip_prefix(':')
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let (save_path, ignored_suffix) = match suffix {
        Some(s) if looks_like_path(s) => (Some(s), None),
        Some(s) => (None, Some(s)),
        None => (None, None),
    };
    InfoString {
        tag,
        save_path,
        ignored_suffix,
    }
}

/// Removes the container prefix of the opening line from a content line.
///
/// As AgenticSeek: a line that starts with the exact prefix loses it; otherwise seek also accepts
/// the continuation form (list markers as spaces), and a blank line shorter than the prefix becomes
/// empty. Any other line is kept unchanged.
pub fn strip_container<'a>(line: &'a str, prefix: &str, continuation: &str) -> &'a str {
    if prefix.is_empty() {
        return line;
    }
    if let Some(rest) = line.strip_prefix(prefix) {
        return rest;
    }
    if let Some(rest) = line.strip_prefix(continuation) {
        return rest;
    }
    let bare = without_line_ending(line);
    if prefix.starts_with(bare) || continuation.starts_with(bare) {
        return &line[bare.len()..];
    }
    line
}

/// Whether `line` (without its line ending) closes a fence of `fence_char` × `fence_len` opened
/// with `prefix`: after the container prefix (or any indentation), only fence characters, at least
/// as many, then optional whitespace.
pub fn is_closing_fence(
    line: &str,
    prefix: &str,
    continuation: &str,
    fence_char: u8,
    fence_len: usize,
) -> bool {
    let rest = strip_container(line, prefix, continuation).trim_start_matches([' ', '\t']);
    let run = rest.bytes().take_while(|&b| b == fence_char).count();
    run >= fence_len && rest[run..].trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_prefixes() {
        for (line, prefix) in [
            ("```python", ""),
            ("    ```python", "    "),
            ("- ```python", "- "),
            ("  * ```python", "  * "),
            ("1. ```python", "1. "),
            ("12) ```python", "12) "),
            ("> ```python", "> "),
            ("> - ```python", "> - "),
            (">```python", ">"),
            ("Run: ```python", ""),
            ("-```python", ""),
            ("1.```python", ""),
        ] {
            assert_eq!(&line[..container_prefix_len(line)], prefix, "{line:?}");
        }
    }

    #[test]
    fn opening_fences() {
        let f = opening_fence("  - ````Python:hello.py ").unwrap();
        assert_eq!(
            (f.prefix, f.fence_char, f.fence_len, f.info),
            ("  - ", b'`', 4, "Python:hello.py")
        );
        assert_eq!(opening_fence("~~~bash").unwrap().fence_char, b'~');
        assert!(opening_fence("``python").is_none());
        assert!(
            opening_fence("```python print(1)```").is_none(),
            "inline code is not a fence"
        );
        assert!(
            opening_fence("Run: ```python").is_none(),
            "text before a fence is not a container"
        );
        assert!(opening_fence("~~~ info with ` is fine").is_some());
        assert_eq!(opening_fence("```").unwrap().info, "");
    }

    #[test]
    fn info_strings() {
        let cases = [
            ("python", "python", None),
            ("python:hello.py", "python", Some("hello.py")),
            ("python: sub/dir/tmp.py", "python", Some("sub/dir/tmp.py")),
            ("python :a.py", "python", Some("a.py")),
            (r"python:C:\x\y.py", "python", Some(r"C:\x\y.py")),
            ("python:", "python", None),
            ("python {.numberLines}", "python", None),
            ("file_finder:read", "file_finder", Some("read")),
            ("bash:~/bin/run-me.sh", "bash", Some("~/bin/run-me.sh")),
            ("python:été.py", "python", Some("été.py")),
        ];
        for (info, tag, path) in cases {
            assert_eq!(
                split_info(info),
                InfoString {
                    tag,
                    save_path: path,
                    ignored_suffix: None,
                },
                "{info:?}"
            );
        }
    }

    #[test]
    fn a_suffix_that_is_not_a_path_is_ignored_never_saved() {
        for (info, suffix) in [
            ("python:print('hello')", "print('hello')"),
            ("python: print(\"hi\")", "print(\"hi\")"),
            ("python:a b.py", "a b.py"),
            ("python:x = 1", "x = 1"),
            ("bash:echo $HOME", "echo $HOME"),
            ("bash:ls;rm x", "ls;rm x"),
            ("python:*.py", "*.py"),
            ("python:...", "..."),
            ("python:`x.py`", "`x.py`"),
        ] {
            let split = split_info(info);
            assert_eq!(split.save_path, None, "{info:?}");
            assert_eq!(split.ignored_suffix, Some(suffix), "{info:?}");
            assert_eq!(split.tag, info.split(':').next().unwrap_or_default());
        }
    }

    #[test]
    fn de_indentation_follows_the_container() {
        assert_eq!(strip_container("    x = 1\n", "    ", "    "), "x = 1\n");
        assert_eq!(strip_container("        y\n", "    ", "    "), "    y\n");
        assert_eq!(strip_container("   print(1)\n", "1. ", "   "), "print(1)\n");
        assert_eq!(strip_container("> print(1)\n", "> ", "> "), "print(1)\n");
        assert_eq!(strip_container(">\n", "> ", "> "), "\n");
        assert_eq!(strip_container("  \n", "    ", "    "), "\n");
        assert_eq!(
            strip_container("x\n", "    ", "    "),
            "x\n",
            "an unindented line is kept"
        );
    }

    #[test]
    fn closing_fences() {
        assert!(is_closing_fence("```", "", "", b'`', 3));
        assert!(is_closing_fence("````  ", "", "", b'`', 3));
        assert!(is_closing_fence("   ```", "1. ", "   ", b'`', 3));
        assert!(is_closing_fence("  ```", "", "", b'`', 3), "indented close");
        assert!(
            !is_closing_fence("```", "", "", b'`', 4),
            "shorter than the opening"
        );
        assert!(
            !is_closing_fence("~~~", "", "", b'`', 3),
            "other fence character"
        );
        assert!(
            !is_closing_fence("```python", "", "", b'`', 3),
            "info string on a close"
        );
        assert!(!is_closing_fence("print(\"```\")", "", "", b'`', 3));
        assert!(!is_closing_fence("- ```", "", "", b'`', 3));
    }
}
