//! Bytes of a page to text: the charset named by the Content-Type header, else by a `<meta
//! charset>` or `http-equiv` tag in the first 1024 bytes, else UTF-8; a byte order mark wins
//! over both, as in browsers. Undecodable bytes become U+FFFD.
//!
//! Pure; it must not read the network.

use encoding_rs::{Encoding, UTF_8};

/// How far into the body a `<meta>` charset is looked for (the HTML standard's prescan).
const META_PRESCAN_BYTES: usize = 1024;

/// `body` decoded, with the charset from `content_type` or the document.
pub(super) fn decode(body: &[u8], content_type: Option<&str>) -> String {
    let encoding = content_type
        .and_then(charset_param)
        .and_then(|label| Encoding::for_label(label.as_bytes()))
        .or_else(|| meta_charset(body))
        .unwrap_or(UTF_8);
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

/// The `charset=` parameter of a Content-Type value.
fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (key, value) = param.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']).to_owned())
    })
}

/// The charset a `<meta>` tag names near the start of `body`.
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = &body[..body.len().min(META_PRESCAN_BYTES)];
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    let mut from = 0;
    while let Some(found) = find(&lower[from..], b"<meta") {
        let start = from + found;
        let end = find(&lower[start..], b">").map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        if let Some(at) = find(tag, b"charset=") {
            let value: Vec<u8> = tag[at + b"charset=".len()..]
                .iter()
                .copied()
                .skip_while(|b| *b == b'"' || *b == b'\'' || *b == b' ')
                .take_while(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(b))
                .collect();
            if let Some(encoding) = Encoding::for_label(&value) {
                // A page cannot declare itself UTF-16 in ASCII-compatible bytes; browsers read
                // that as UTF-8.
                return Some(encoding.output_encoding());
            }
        }
        from = end;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_then_the_meta_then_utf8() {
        assert_eq!(
            decode(b"caf\xe9", Some("text/html; charset=ISO-8859-1")),
            "café"
        );
        assert_eq!(
            decode(b"<meta charset=\"windows-1252\">caf\xe9", Some("text/html")),
            "<meta charset=\"windows-1252\">café"
        );
        let equiv = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=latin1\">\xe9";
        assert!(decode(equiv, None).ends_with('é'));
        assert_eq!(decode("café".as_bytes(), None), "café");
        assert_eq!(decode(b"caf\xe9", None), "caf\u{fffd}");
        assert_eq!(decode(b"x", Some("text/html; charset=no-such")), "x");
    }
}
