//! The one masker every session record and log line goes through: the values of credential-like
//! variables become `[redacted]` and URL passwords `***`, wherever they appear.
//!
//! Owns what counts as a secret value (and its minimum length) and the replacement; it must not
//! write anything or decide what is recorded.

use std::borrow::Cow;
use std::ops::Range;

use aho_corasick::{AhoCorasick, MatchKind};

use super::{names::is_credential_name, url};

/// Values shorter than this are not masked as values: `true`, `1234`, `admin` or `user` would
/// blank ordinary words everywhere. URL passwords are masked at any length (the URL marks them).
pub const MIN_SECRET_LEN: usize = 6;
/// What a secret value becomes.
pub const MASK: &str = "[redacted]";
/// What a URL password becomes (`scheme://user:***@host`).
pub const URL_MASK: &str = "***";

/// Masks known secret values and every URL password in text.
#[derive(Default)]
pub struct Masker {
    /// Secret values, and their JSON-escaped forms where those differ (so a serialized record can
    /// be checked as it is). `None`: no value is long enough to mask.
    values: Option<AhoCorasick>,
    count: usize,
}

impl std::fmt::Debug for Masker {
    // Never the values themselves.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Masker")
            .field("values", &self.count)
            .finish()
    }
}

impl Masker {
    /// A masker for `values` (those shorter than `MIN_SECRET_LEN` are dropped).
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut patterns: Vec<String> = Vec::new();
        for value in values {
            if value.chars().count() < MIN_SECRET_LEN {
                continue;
            }
            let escaped = json_escaped(&value);
            if escaped != value {
                patterns.push(escaped);
            }
            patterns.push(value);
        }
        patterns.sort();
        patterns.dedup();
        let count = patterns.len();
        let values = (!patterns.is_empty()).then(|| {
            // Building fails only past the automaton's size limits (billions of states); the
            // patterns are environment values, which the kernel bounds to a few megabytes.
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(&patterns)
                .expect("secret values fit an Aho-Corasick automaton")
        });
        Self { values, count }
    }

    /// The secrets of seek's environment and configuration: the value of every credential-like
    /// variable and of the `configured` credential variables (`Config::credential_vars`), the password of every URL held in any variable, and the
    /// password and secret query values of the model server's `base_url`.
    /// `variables` are the environment's (name, value) pairs (`config::Env::iter`).
    pub fn for_environment<'a>(
        variables: impl IntoIterator<Item = (&'a str, &'a str)>,
        configured: &[&str],
        base_url: &str,
    ) -> Self {
        let mut values = Vec::new();
        for (name, value) in variables {
            if is_credential_name(name) || configured.contains(&name) {
                values.push(value.to_owned());
            }
            values.extend(url::passwords(value));
        }
        values.extend(url_secrets(base_url));
        Self::new(values)
    }

    /// `text` with every secret value and URL password masked (borrowed when there is none).
    pub(crate) fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut spans: Vec<(Range<usize>, &str)> = url::password_ranges(text)
            .into_iter()
            .map(|r| (r, URL_MASK))
            .collect();
        if let Some(values) = &self.values {
            // Every match, overlapping ones too: two secrets sharing characters are masked as
            // one span, with nothing of either left.
            spans.extend(
                values
                    .find_overlapping_iter(text)
                    .map(|m| (m.range(), MASK)),
            );
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_by_key(|(r, _)| r.start);
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut open: Option<Span> = None;
        for (range, mask) in spans {
            let url = (mask == URL_MASK).then(|| range.clone());
            match &mut open {
                Some(span) if range.start < span.range.end => span.merge(range, url),
                _ => {
                    if let Some(done) = open.take() {
                        out.push_str(&text[at..done.range.start]);
                        out.push_str(done.mask());
                        at = done.range.end;
                    }
                    open = Some(Span { range, url });
                }
            }
        }
        if let Some(done) = open {
            out.push_str(&text[at..done.range.start]);
            out.push_str(done.mask());
            at = done.range.end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// Masks every string inside `value` (object keys are seek's field names and stay).
    pub(crate) fn mask_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                if let Cow::Owned(masked) = self.mask(s) {
                    *s = masked;
                }
            }
            serde_json::Value::Array(items) => {
                items.iter_mut().for_each(|item| self.mask_json(item));
            }
            serde_json::Value::Object(fields) => {
                fields.values_mut().for_each(|v| self.mask_json(v));
            }
            _ => {}
        }
    }

    /// `record` as one JSON line (without its line end) with every secret masked, exact JSON
    /// otherwise. The serialized text is checked first, so a record without secrets is written
    /// as it is; one with secrets is masked string by string, so JSON escapes are never cut.
    pub fn json_line(&self, record: &impl serde::Serialize) -> serde_json::Result<String> {
        let line = crate::terminal_safe::json_line(record)?;
        if matches!(self.mask(&line), Cow::Borrowed(_)) {
            return Ok(line);
        }
        let mut value = serde_json::to_value(record)?;
        self.mask_json(&mut value);
        crate::terminal_safe::json_line(&value)
    }
}

/// Overlapping matches merged into one masked span.
struct Span {
    range: Range<usize>,
    /// The extent of the URL passwords in it.
    url: Option<Range<usize>>,
}

impl Span {
    fn merge(&mut self, range: Range<usize>, url: Option<Range<usize>>) {
        self.range.end = self.range.end.max(range.end);
        if let Some(new) = url {
            self.url = Some(match self.url.take() {
                Some(old) => old.start.min(new.start)..old.end.max(new.end),
                None => new,
            });
        }
    }

    /// `***` when the span is exactly URL passwords (a value inside one included), so the URL
    /// still reads `user:***@host`; `[redacted]` when a value reaches beyond.
    fn mask(&self) -> &'static str {
        if self.url.as_ref() == Some(&self.range) {
            URL_MASK
        } else {
            MASK
        }
    }
}

/// A value as it appears inside a JSON string.
fn json_escaped(value: &str) -> String {
    let quoted = crate::terminal_safe::json_line(&value).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(&quoted)
        .to_owned()
}

/// The password of a server's URL (also when written without a scheme, which seek adds) and
/// the values of query parameters named like credentials (`?api_key=…`, `?token=…`).
pub fn url_secrets(base_url: &str) -> Vec<String> {
    let with_scheme = if base_url.contains("://") {
        base_url.to_owned()
    } else {
        format!("http://{base_url}")
    };
    let mut found = url::passwords(&with_scheme);
    if let Some((_, query)) = base_url.split_once('?') {
        let query = query.split('#').next().unwrap_or(query);
        for (name, value) in query.split('&').filter_map(|pair| pair.split_once('=')) {
            if is_credential_name(name) {
                found.push(value.to_owned());
                if let Ok(decoded) = percent_encoding::percent_decode_str(value).decode_utf8() {
                    found.push(decoded.into_owned());
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_url_passwords_are_masked_wherever_they_appear() {
        let masker = Masker::new(["sk-live-123456".to_owned(), "hunter2".to_owned()]);
        assert_eq!(
            masker.mask("key sk-live-123456, pw hunter2hunter2, db postgres://u:pw@h/x"),
            "key [redacted], pw [redacted][redacted], db postgres://u:***@h/x"
        );
        assert!(matches!(masker.mask("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn short_values_are_not_masked() {
        let masker = Masker::new(["user".to_owned(), "12345".to_owned()]);
        assert_eq!(masker.mask("user 12345"), "user 12345");
        // …but a short password inside a URL is.
        assert_eq!(masker.mask("https://u:1@h"), "https://u:***@h");
    }

    #[test]
    fn overlapping_secrets_are_masked_whole() {
        let masker = Masker::new(["abcdef".to_owned(), "cdefgh".to_owned()]);
        assert_eq!(masker.mask("xabcdefghx"), "x[redacted]x");
        // A value that is also a URL password: one mask.
        let masker = Masker::new(["s3cret-pw".to_owned()]);
        assert_eq!(
            masker.mask("http://u:s3cret-pw@h and s3cret-pw"),
            "http://u:***@h and [redacted]"
        );
        // A value reaching beyond the password masks the whole span.
        let masker = Masker::new(["pw@host-key".to_owned()]);
        assert_eq!(
            masker.mask("http://u:pw@host-key/x"),
            "http://u:[redacted]/x"
        );
    }

    #[test]
    fn the_environment_gives_credential_values_url_passwords_and_the_base_url() {
        let env = [
            ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG"),
            ("DATABASE_URL", "postgres://app:db-pass-77@db/app"),
            ("MY_LLM", "llm-key-0001"),
            ("HOME", "/home/someone"),
            ("XDG_SESSION_TYPE", "wayland"),
        ];
        let masker = Masker::for_environment(
            env,
            &["MY_LLM"],
            "bob:base-pw-99@gpu-box:8080/v1?api_key=query-key-1",
        );
        let text = "wJalrXUtnFEMI/K7MDENG db-pass-77 llm-key-0001 base-pw-99 query-key-1 /home/someone wayland";
        assert_eq!(
            masker.mask(text),
            "[redacted] [redacted] [redacted] [redacted] [redacted] /home/someone wayland"
        );
        assert!(!format!("{masker:?}").contains("wJalr"));
    }

    #[test]
    fn json_lines_mask_strings_without_breaking_escapes() {
        let masker = Masker::new(["quo\"te-secret".to_owned(), "plainsecret".to_owned()]);
        let record = serde_json::json!({
            "a": "x quo\"te-secret y",
            "b": ["plainsecret", "http://u:pw@h"],
            "c": "nothing",
        });
        let line = masker.json_line(&record).unwrap();
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back["a"], "x [redacted] y");
        assert_eq!(back["b"][0], "[redacted]");
        assert_eq!(back["b"][1], "http://u:***@h");
        assert_eq!(back["c"], "nothing");
        let clean = serde_json::json!({"c": "nothing"});
        assert_eq!(masker.json_line(&clean).unwrap(), r#"{"c":"nothing"}"#);
    }

    proptest::proptest! {
        /// Whatever a string holds (quotes, backslashes, controls, pieces of secrets and URLs),
        /// its JSON line parses back to exactly the string masked, and no secret is left.
        #[test]
        fn a_json_line_is_the_masked_string(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", " ", "\"", "\\", "\n", "\u{1}", "\u{85}", "\u{7f}", "é", "@", ":",
                    "http://", "u:", "pw@h", "/", "se\"cr\u{85}et", "secret-1",
                ]),
                0..24,
            )
        ) {
            let odd_secret = "se\"cr\u{85}et";
            let masker = Masker::new([odd_secret.to_owned(), "secret-1".to_owned()]);
            let raw: String = pieces.concat();
            let line = masker.json_line(&serde_json::json!({ "s": raw })).unwrap();
            let back: serde_json::Value = serde_json::from_str(&line).unwrap();
            let expected = masker.mask(&raw).into_owned();
            proptest::prop_assert_eq!(back["s"].as_str(), Some(expected.as_str()));
            proptest::prop_assert!(!expected.contains("secret-1"));
            proptest::prop_assert!(!expected.contains(odd_secret));
        }
    }
}
