//! Passwords inside URLs (`scheme://user:PASSWORD@host`), found anywhere in a text.
//!
//! Pure string handling; it must not decide what is masked beyond the password itself.

use std::ops::Range;
use std::sync::LazyLock;

/// `scheme://user:password@`: the user holds no `:`, `@` or delimiter; the password runs to the
/// last `@` of the authority (as URL parsers read `u:p@ss@host`). Neither crosses whitespace, a
/// control character, a path, query or fragment delimiter, a quote, angle brackets or a
/// backslash: a match never spans two URLs, and it holds nothing JSON escapes, so a URL password
/// is found alike in a string and in its serialized JSON.
static USERINFO: LazyLock<regex::Regex> = LazyLock::new(|| {
    // The pattern is a literal, compiled by every test of this module.
    regex::Regex::new(
        r#"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\p{Cc}/?#@:"'<>\\`]*:([^\s\p{Cc}/?#"'<>\\`]+)@"#,
    )
    .expect("the URL password pattern is valid")
});

/// The byte ranges of every URL password in `text`.
pub(crate) fn password_ranges(text: &str) -> Vec<Range<usize>> {
    if !text.contains("://") {
        return Vec::new();
    }
    USERINFO
        .captures_iter(text)
        .filter_map(|c| c.get(1))
        .map(|m| m.range())
        .collect()
}

/// The passwords of the URLs in `text`, as written and percent-decoded (when that differs and
/// is text).
pub fn passwords(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for range in password_ranges(text) {
        let raw = &text[range];
        found.push(raw.to_owned());
        if let Ok(decoded) = percent_encoding::percent_decode_str(raw).decode_utf8()
            && decoded != raw
        {
            found.push(decoded.into_owned());
        }
    }
    found
}

/// Whether `text` holds a URL with a password.
pub(crate) fn has_password(text: &str) -> bool {
    !password_ranges(text).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(text: &str) -> String {
        let mut out = text.to_owned();
        for range in password_ranges(text).into_iter().rev() {
            out.replace_range(range, "***");
        }
        out
    }

    #[test]
    fn url_passwords_are_found_anywhere() {
        assert_eq!(
            masked("db at postgres://u:password@db.internal:5432/app, ok"),
            "db at postgres://u:***@db.internal:5432/app, ok"
        );
        assert_eq!(masked("redis://:pw@cache:6379"), "redis://:***@cache:6379");
        assert_eq!(
            masked("http://a:b@c:d@host/x and https://e:f@g"),
            "http://a:***@host/x and https://e:***@g"
        );
        assert_eq!(
            masked(r#"{"url":"http://u:p@h","x":"y@z"}"#),
            r#"{"url":"http://u:***@h","x":"y@z"}"#
        );
    }

    #[test]
    fn urls_without_passwords_are_left_alone() {
        for text in [
            "http://127.0.0.1:8080/v1",
            "ssh://git@github.com:22/x",
            "https://host:8443/path?q=u:p@x",
            "http://user:@host",
            "user:pass@host",
            "http://u:p\u{1}w@h",
            "no url here",
        ] {
            assert_eq!(masked(text), text);
            assert!(!has_password(text), "{text}");
        }
    }

    #[test]
    fn passwords_come_raw_and_decoded() {
        assert_eq!(passwords("https://u:p%40ss%21@h"), ["p%40ss%21", "p@ss!"]);
        assert_eq!(passwords("https://u:plain@h"), ["plain"]);
    }
}
