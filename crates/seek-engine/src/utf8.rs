//! Turning a token's bytes into text as tokens arrive: a character split across tokens (emoji,
//! CJK under byte-level BPE) is held until it is whole, and bytes that can never be UTF-8
//! become U+FFFD instead of an error.
//!
//! Owns that assembly only.

/// Bytes in, complete text out.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds `bytes`; returns the text that is now complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // The prefix was just checked to be UTF-8.
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        // An incomplete character at the end: wait for the next token.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// What is left when the reply ends: an unfinished character becomes U+FFFD.
    pub fn finish(self) -> String {
        String::from_utf8_lossy(&self.pending).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_split_across_tokens_comes_out_whole() {
        let mut s = Utf8Stream::default();
        let crab = "🦀".as_bytes();
        assert_eq!(s.push(b"a"), "a");
        assert_eq!(s.push(&crab[..1]), "");
        assert_eq!(s.push(&crab[1..3]), "");
        assert_eq!(s.push(&crab[3..]), "🦀");
        assert_eq!(s.finish(), "");
    }

    #[test]
    fn bytes_that_are_never_utf8_become_replacement_characters() {
        let mut s = Utf8Stream::default();
        assert_eq!(s.push(b"x\xffy"), "x\u{fffd}y");
        assert_eq!(s.push(b"\xe2\x82"), "");
        assert_eq!(s.finish(), "\u{fffd}");
    }
}
