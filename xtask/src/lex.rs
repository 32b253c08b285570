//! Rust source to tokens, just enough to read paths: identifiers, `::`, string literals (their
//! text, for `#[path = "…"]`) and single punctuation, each with its line. Comments, character
//! literals, lifetimes and numbers are dropped. It must not try to parse Rust: the reader above
//! (`read.rs`) picks the `use` trees, `mod` declarations and paths out of this stream.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Ident(String),
    /// `::`
    PathSep,
    Str(String),
    Punct(char),
}

#[derive(Debug, Clone)]
pub struct Token {
    pub kind: Kind,
    pub line: usize,
}

impl Token {
    pub fn is_ident(&self, name: &str) -> bool {
        matches!(&self.kind, Kind::Ident(ident) if ident == name)
    }

    pub fn is_punct(&self, c: char) -> bool {
        self.kind == Kind::Punct(c)
    }

    pub fn ident(&self) -> Option<&str> {
        match &self.kind {
            Kind::Ident(ident) => Some(ident),
            _ => None,
        }
    }
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// The tokens of one file. Malformed input (an unclosed string or comment) ends the stream early
/// rather than failing: the compiler is the judge of syntax, this only reads what it accepted.
pub fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if let Some((text, end)) = raw_string(&chars, i) {
            let start_line = line;
            line += text.matches('\n').count();
            out.push(Token {
                kind: Kind::Str(text),
                line: start_line,
            });
            i = end;
        } else if c == '"' || ((c == 'b' || c == 'c') && next == Some('"')) {
            let start_line = line;
            i += if c == '"' { 1 } else { 2 };
            let mut text = String::new();
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if let Some(&ch) = chars.get(i) {
                    if ch == '\n' {
                        line += 1;
                    }
                    text.push(ch);
                }
                i += 1;
            }
            i += 1;
            out.push(Token {
                kind: Kind::Str(text),
                line: start_line,
            });
        } else if c == '\'' || (c == 'b' && next == Some('\'')) {
            i += if c == '\'' { 1 } else { 2 };
            if chars.get(i) == Some(&'\\') {
                // An escaped character literal: '\n', '\'', '\u{..}'.
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 1) == Some(&'\'') {
                i += 2;
            }
            // Otherwise a lifetime or a label: its name is read as an identifier and dropped
            // with the quote, which never starts a path.
            else {
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
        } else if c == 'r'
            && next == Some('#')
            && chars.get(i + 2).is_some_and(|&c| is_ident_start(c))
        {
            // A raw identifier, r#type.
            let start = i + 2;
            i = start;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            out.push(Token {
                kind: Kind::Ident(chars[start..i].iter().collect()),
                line,
            });
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            out.push(Token {
                kind: Kind::Ident(chars[start..i].iter().collect()),
                line,
            });
        } else if c == ':' && next == Some(':') {
            out.push(Token {
                kind: Kind::PathSep,
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                kind: Kind::Punct(c),
                line,
            });
            i += 1;
        }
    }
    out
}

/// A raw string literal starting at `i` (r"…", r#"…"#, br"…", cr#"…"#): its text and the index
/// after it.
fn raw_string(chars: &[char], i: usize) -> Option<(String, usize)> {
    let mut j = i;
    if matches!(chars.get(j), Some('b' | 'c')) {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    let start = j;
    while j < chars.len() {
        if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
            return Some((chars[start..j].iter().collect(), j + 1 + hashes));
        }
        j += 1;
    }
    Some((chars[start..].iter().collect(), chars.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(source: &str) -> Vec<String> {
        tokens(source)
            .iter()
            .filter_map(|t| t.ident().map(str::to_string))
            .collect()
    }

    #[test]
    fn comments_strings_chars_and_lifetimes_are_not_identifiers() {
        let source =
            "a // b\n/* c /* d */ e */ f \"g\\\"h\" 'i' '\\'' 'j: loop {} fn k<'l>() r#\"m\"# r#n";
        assert_eq!(idents(source), ["a", "f", "loop", "fn", "k", "n"]);
    }

    #[test]
    fn lines_count_newlines_inside_comments_and_strings() {
        let found = tokens("/*\n*/ \"x\ny\" z");
        assert_eq!(found.last().map(|t| t.line), Some(3));
    }
}
