//! A lenient pre-pass that turns the JSON small models write into JSON `serde_json` reads:
//! `//` and `/* */` comments dropped, trailing commas dropped, single-quoted and smart-quoted
//! (“ ” ‘ ’) strings made double-quoted, raw line breaks inside strings escaped, unquoted keys
//! quoted, Python's `None`/`True`/`False` made `null`/`true`/`false`.
//!
//! What is inside a string is never changed, except escaping what JSON cannot hold raw there
//! (a `//` or a `'` in a string stays). Pure and linear in its input; it must not parse plans.

/// `text` rewritten as strict JSON, as far as the rules above reach, up to the end of its first
/// object or array (the caller reads only the first value; prose after it is not scanned). Text
/// that is not JSON-like comes out changed in harmless ways.
pub(super) fn strict_json(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len().min(1 << 20) + 16);
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' => i = copy_string(&chars, i, &['"'], &mut out),
            '\'' => i = copy_string(&chars, i, &['\''], &mut out),
            // Smart quotes: a string opened by either of a pair ends at either (models mix them).
            '\u{201C}' | '\u{201D}' => {
                i = copy_string(&chars, i, &['\u{201C}', '\u{201D}'], &mut out)
            }
            '\u{2018}' | '\u{2019}' => {
                i = copy_string(&chars, i, &['\u{2018}', '\u{2019}'], &mut out)
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    i += 1;
                }
                i = (i + 2).min(chars.len());
            }
            '[' | '{' => {
                depth += 1;
                out.push(c);
                i += 1;
            }
            ']' | '}' => {
                drop_trailing_comma(&mut out);
                out.push(c);
                i += 1;
                if depth == 1 {
                    break;
                }
                depth = depth.saturating_sub(1);
            }
            c if c.is_ascii_alphabetic() || c == '_' => i = copy_word(&chars, i, &mut out),
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Copies the string opened at `chars[start]` as a double-quoted JSON string; returns the index
/// after its closing quote (or the end, for a string never closed).
fn copy_string(chars: &[char], start: usize, closers: &[char], out: &mut String) -> usize {
    let double = closers == ['"'];
    out.push('"');
    let mut i = start + 1;
    while i < chars.len() {
        let c = chars[i];
        if closers.contains(&c) {
            out.push('"');
            return i + 1;
        }
        match c {
            '\\' => match chars.get(i + 1) {
                // `\'` is how a single-quoted string holds its quote; JSON has no such escape.
                Some('\'') => {
                    out.push('\'');
                    i += 2;
                }
                Some(next) => {
                    out.push('\\');
                    out.push(*next);
                    i += 2;
                }
                None => {
                    out.push_str("\\\\");
                    i += 1;
                }
            },
            '"' if !double => {
                out.push_str("\\\"");
                i += 1;
            }
            '\n' => {
                out.push_str("\\n");
                i += 1;
            }
            '\r' => {
                out.push_str("\\r");
                i += 1;
            }
            '\t' => {
                out.push_str("\\t");
                i += 1;
            }
            c if u32::from(c) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    i
}

/// Copies the bare word at `chars[start]`: a key when a `:` follows (quoted), Python's
/// constants as JSON's, anything else as it is. Returns the index after the word.
fn copy_word(chars: &[char], start: usize, out: &mut String) -> usize {
    let mut end = start;
    while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '_') {
        end += 1;
    }
    let word: String = chars[start..end].iter().collect();
    let mut next = end;
    while next < chars.len() && chars[next].is_whitespace() {
        next += 1;
    }
    if chars.get(next) == Some(&':') {
        out.push('"');
        out.push_str(&word);
        out.push('"');
    } else {
        out.push_str(match word.as_str() {
            "None" => "null",
            "True" => "true",
            "False" => "false",
            other => other,
        });
    }
    end
}

/// Removes a `,` that is the last thing before a closing bracket (whitespace between stays).
fn drop_trailing_comma(out: &mut String) {
    let kept = out.trim_end();
    if kept.ends_with(',') {
        let comma = kept.len() - 1;
        out.remove(comma);
    }
}

#[cfg(test)]
mod tests {
    use super::strict_json;

    fn reads(text: &str) -> serde_json::Value {
        serde_json::from_str(&strict_json(text))
            .unwrap_or_else(|e| panic!("{text:?} -> {:?}: {e}", strict_json(text)))
    }

    #[test]
    fn comments_and_trailing_commas_go_but_strings_stay_whole() {
        let value = reads(
            "{\n // the plan\n \"plan\": [ /* one */ {\"task\": \"see http://x.org // not a comment /* nor this */\",},\n ],\n}",
        );
        assert_eq!(
            value["plan"][0]["task"],
            "see http://x.org // not a comment /* nor this */"
        );
    }

    #[test]
    fn single_and_smart_quoted_strings_become_json_strings() {
        let value = reads("{'plan': [{'task': 'say \"hi\" and it\\'s done', 'need': None}]}");
        assert_eq!(value["plan"][0]["task"], "say \"hi\" and it's done");
        assert!(value["plan"][0]["need"].is_null());
        let value = reads("{“plan”: [{“agent”: “coder”, ‘task’: ‘run it’}]}");
        assert_eq!(value["plan"][0]["agent"], "coder");
        assert_eq!(value["plan"][0]["task"], "run it");
        // Inside a real string, quotes of other kinds are text.
        let value = reads("{\"task\": \"write “hello” and 'bye'\"}");
        assert_eq!(value["task"], "write “hello” and 'bye'");
    }

    #[test]
    fn raw_line_breaks_in_strings_and_unquoted_keys_are_repaired() {
        let value = reads("{plan: [{agent: \"file\", task: \"line one\nline two\", ok: True}]}");
        assert_eq!(value["plan"][0]["task"], "line one\nline two");
        assert_eq!(value["plan"][0]["ok"], true);
    }

    #[test]
    fn valid_json_is_unchanged() {
        let text = r#"{"plan": [{"agent": "web", "id": "1", "need": [], "task": "a \"b\" \\ c"}]}"#;
        assert_eq!(strict_json(text), text);
    }

    #[test]
    fn the_pass_ends_with_the_first_value() {
        assert_eq!(
            strict_json("{'a': [1,]} and 'prose' // more"),
            "{\"a\": [1]}"
        );
    }

    #[test]
    fn unclosed_things_end_without_panicking() {
        for text in [
            "'abc",
            "\"abc\\",
            "/* never closed",
            "{'a': 'b\\",
            "“x",
            "//",
        ] {
            let _ = strict_json(text);
        }
    }
}
