//! Text that is safe to print to a terminal: what the model and blocks write must be shown, never
//! obeyed. Plain text loses its escape sequences and control characters; names and descriptions
//! from untrusted servers show every control, bidirectional and invisible character escaped
//! (`\u{202e}`); JSON keeps every value exact but escapes the characters a terminal would act on
//! or that would hide.
//!
//! Pure string handling; it must not print, colour or mask secrets.

use std::borrow::Cow;
use std::iter::Peekable;
use std::str::Chars;

/// What a control character that is not part of a sequence becomes.
const REPLACEMENT: char = '\u{fffd}';

/// `text` with nothing left that a terminal would act on:
/// - escape sequences are removed whole: CSI (`ESC [` … final, or C1 `U+009B`), the string
///   sequences OSC, DCS, SOS, PM and APC (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _` or their C1
///   forms, up to BEL, ST, CAN or SUB), and two-character and `nF` escapes (`ESC c`, `ESC ( B`);
/// - a string sequence that is never terminated, a lone ESC, and every other control character
///   (C0 but `\n` and `\t`, DEL, C1) become `U+FFFD`, so nothing is silently swallowed;
/// - `\r\n` becomes `\n` and a lone `\r` becomes `\n`: a carriage return would let later text
///   overwrite (and hide) earlier text on the same line, so every state of a progress line shows;
/// - `\n` and `\t` stay.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    // Once a string sequence found no terminator, none of the rest has one: later introducers
    // need not look again (which would be quadratic).
    let mut unterminated = false;
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\x1b' => match chars.peek().copied() {
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars, &mut out, &mut unterminated);
                }
                Some('\x20'..='\x2f') => {
                    while chars.next_if(|c| ('\x20'..='\x2f').contains(c)).is_some() {}
                    chars.next_if(|c| ('\x30'..='\x7e').contains(c));
                }
                Some('\x30'..='\x7e') => {
                    chars.next();
                }
                _ => out.push(REPLACEMENT),
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => {
                skip_string(&mut chars, &mut out, &mut unterminated);
            }
            c if c.is_control() => out.push(REPLACEMENT),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Skips a CSI's parameters, intermediates and final byte (what follows `ESC [`). A character
/// that cannot be part of it ends it early and is read as text.
fn skip_csi(chars: &mut Peekable<Chars<'_>>) {
    while chars.next_if(|c| ('\x20'..='\x3f').contains(c)).is_some() {}
    chars.next_if(|c| ('\x40'..='\x7e').contains(c));
}

/// Skips a string sequence's payload and terminator (what follows `ESC ]`, `ESC P`, …). Without
/// a terminator, the introducer shows as `U+FFFD` and the payload is read as text.
fn skip_string(chars: &mut Peekable<Chars<'_>>, out: &mut String, unterminated: &mut bool) {
    let is_end = |c: &char| matches!(c, '\x07' | '\x18' | '\x1a' | '\x1b' | '\u{9c}');
    if *unterminated || !chars.clone().any(|c| is_end(&c)) {
        *unterminated = true;
        out.push(REPLACEMENT);
        return;
    }
    while chars.next_if(|c| !is_end(c)).is_some() {}
    if chars.peek() != Some(&'\x1b') {
        chars.next();
        return;
    }
    // ESC ends the string: as ST (`ESC \`) it is consumed, otherwise it begins what follows.
    let mut after = chars.clone();
    after.next();
    if after.peek() == Some(&'\\') {
        chars.next();
        chars.next();
    }
}

/// Whether `c` is a bidirectional formatting character (the marks, embeddings, overrides and
/// isolates): invisible, but a terminal that does bidi would reorder the text around it, so a
/// link or a name could read as something it is not.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `terminal_safe(text)` without bidirectional formatting characters too: for untrusted text
/// from the web (pages, search results), which may use them to disguise what it shows.
pub fn web_safe(text: &str) -> Cow<'_, str> {
    let safe = terminal_safe(text);
    if !safe.chars().any(is_bidi_control) {
        return safe;
    }
    Cow::Owned(safe.chars().filter(|&c| !is_bidi_control(c)).collect())
}

/// Whether `c` shows nothing, or changes how the text around it shows, without being a control
/// character: the bidirectional controls, zero-width and other format characters (Unicode `Cf`),
/// the line and paragraph separators, invisible fillers, variation selectors and tag characters.
/// A name holding one can pass for another (`read\u{200b}_file`) or show reversed.
pub fn is_invisible(c: char) -> bool {
    is_bidi_control(c)
        || matches!(
            c,
            '\u{ad}'
                | '\u{34f}'
                | '\u{600}'..='\u{605}'
                | '\u{6dd}'
                | '\u{70f}'
                | '\u{890}'..='\u{891}'
                | '\u{8e2}'
                | '\u{115f}'..='\u{1160}'
                | '\u{17b4}'..='\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{110bd}'
                | '\u{110cd}'
                | '\u{13430}'..='\u{1343f}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0000}'..='\u{e0fff}'
        )
}

/// Whether `escape_invisible` writes `c` out.
fn is_escaped(c: char) -> bool {
    c.is_control() || is_invisible(c)
}

/// Untrusted text (an MCP server's names, descriptions and messages) for showing on one line:
/// every control character (C0 with `\n` and `\t`, DEL, C1), bidirectional control and invisible
/// character is written out as `\u{…}`, everything else stays. An escape sequence is left inert
/// (its ESC shows as `\u{1b}`), a reversed name shows what it is (`\u{202e}gnp.exe`), and
/// nothing is hidden or silently dropped: the text stays readable.
pub fn escape_invisible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_escaped(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// JSON text whose strings escape DEL, the C1 controls (`U+007F`–`U+009F`) and the invisible
/// characters (`is_invisible`: bidi controls, zero-width and format characters) as `\uXXXX` too:
/// serde_json escapes only what JSON requires (C0, `"` and `\`), some terminals act on C1
/// characters, and the others hide or reorder text. The value parses back exactly the same.
pub fn json_line(value: &impl serde::Serialize) -> serde_json::Result<String> {
    let mut buffer = Vec::with_capacity(256);
    let mut serializer = serde_json::Serializer::with_formatter(&mut buffer, EscapeC1);
    value.serialize(&mut serializer)?;
    String::from_utf8(buffer).map_err(<serde_json::Error as serde::ser::Error>::custom)
}

/// serde_json's compact format, with DEL, C1 and invisible characters escaped inside strings.
struct EscapeC1;

impl serde_json::ser::Formatter for EscapeC1 {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut start = 0;
        for (at, c) in fragment.char_indices() {
            if ('\u{7f}'..='\u{9f}').contains(&c) || is_invisible(c) {
                writer.write_all(&fragment.as_bytes()[start..at])?;
                // Beyond the BMP (tag characters) as a UTF-16 surrogate pair, as JSON writes it.
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(writer, "\\u{:04x}", unit)?;
                }
                start = at + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn safe(text: &str) -> String {
        terminal_safe(text).into_owned()
    }

    #[test]
    fn web_text_loses_bidi_controls_as_well_as_escapes() {
        assert_eq!(
            web_safe("pay\u{202e}lmth.exe\u{2066}x\u{2069}\x1b[2J\u{200f}!"),
            "paylmth.exex!"
        );
        assert_eq!(web_safe("שלום plain"), "שלום plain");
        assert!(matches!(web_safe("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn untrusted_names_show_every_hidden_character_escaped() {
        assert_eq!(escape_invisible("\u{202e}gnp.exe"), "\\u{202e}gnp.exe");
        assert_eq!(
            escape_invisible("read\u{200b}_file\u{2066}x\u{2069}\u{feff}\u{e0041}"),
            "read\\u{200b}_file\\u{2066}x\\u{2069}\\u{feff}\\u{e0041}"
        );
        assert_eq!(
            escape_invisible("a\x1b[2Jb\x1b]0;t\x07\u{9b}c\nd\te\r\x7f"),
            "a\\u{1b}[2Jb\\u{1b}]0;t\\u{7}\\u{9b}c\\u{a}d\\u{9}e\\u{d}\\u{7f}"
        );
        for c in [
            '\u{61c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{2068}', '\u{ad}', '\u{2028}',
        ] {
            let shown = escape_invisible(&c.to_string()).into_owned();
            assert!(shown.starts_with("\\u{"), "{c:?}: {shown}");
        }
        // Readable text, other scripts and emoji stay as they are.
        assert!(matches!(
            escape_invisible("get_time שלום 日本 é 🙂"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(
            terminal_safe("plain\ttext\nüñí 日本"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn csi_sequences_go() {
        assert_eq!(safe("\x1b[31mred\x1b[0m"), "red");
        assert_eq!(safe("a\x1b[2Jb\x1b[H\x1b[?1049h"), "ab");
        assert_eq!(safe("c1\u{9b}2Jx"), "c1x");
        // Cut short by a character that cannot be in it: that character is text.
        assert_eq!(safe("\x1b[31\u{e9}x"), "\u{e9}x");
    }

    #[test]
    fn osc_goes_whether_ended_by_bel_or_st() {
        assert_eq!(safe("a\x1b]52;c;ZXZpbA==\x07b"), "ab");
        assert_eq!(safe("a\x1b]2;pwned title\x1b\\b"), "ab");
        assert_eq!(safe("a\u{9d}0;t\u{9c}b"), "ab");
        assert_eq!(safe("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b"), "alinkb");
    }

    #[test]
    fn dcs_apc_pm_and_sos_go() {
        assert_eq!(safe("a\x1bPq#0;2;0;0;0\x1b\\b"), "ab");
        assert_eq!(safe("a\x1b_Gf=100;AAAA\x1b\\b"), "ab");
        assert_eq!(safe("a\x1b^privacy\x1b\\b"), "ab");
        assert_eq!(safe("a\x1bXsos\x07b"), "ab");
        assert_eq!(safe("a\u{90}dcs\u{9c}b\u{9f}apc\x07c"), "abc");
    }

    #[test]
    fn an_unterminated_string_shows_its_payload() {
        assert_eq!(safe("a\x1b]52;c;ZXZpbA=="), "a\u{fffd}52;c;ZXZpbA==");
        // Linear, not quadratic, with many introducers and no terminator.
        let many = "\u{9d}".repeat(100_000);
        assert_eq!(terminal_safe(&many).chars().count(), 100_000);
        // ESC that is not ST ends the string and begins the next sequence.
        assert_eq!(safe("a\x1b]0;t\x1b[31mb"), "ab");
    }

    #[test]
    fn escapes_and_lone_esc() {
        assert_eq!(safe("a\x1bcb"), "ab", "RIS");
        assert_eq!(safe("a\x1b(Bb\x1b#8c"), "abc", "nF escapes");
        assert_eq!(safe("a\x1b7\x1b8b"), "ab");
        assert_eq!(safe("end\x1b"), "end\u{fffd}");
        assert_eq!(safe("a\x1b\nb"), "a\u{fffd}\nb");
        assert_eq!(safe("a\x1b\u{e9}"), "a\u{fffd}\u{e9}");
    }

    #[test]
    fn other_controls_are_replaced_and_carriage_returns_become_line_ends() {
        assert_eq!(
            safe("bell\x07 bs\x08 nul\0 del\x7f c1\u{85}"),
            "bell\u{fffd} bs\u{fffd} nul\u{fffd} del\u{fffd} c1\u{fffd}"
        );
        assert_eq!(safe("crlf\r\nline"), "crlf\nline");
        assert_eq!(safe("10%\r50%\r100%\n"), "10%\n50%\n100%\n");
        assert_eq!(
            safe("rm -rf ~\rls      "),
            "rm -rf ~\nls      ",
            "nothing is hidden"
        );
        assert_eq!(safe("tab\tstays"), "tab\tstays");
    }

    #[test]
    fn json_escapes_every_control_and_stays_exact() {
        let text = "osc\x1b]52;c;eA==\x07 del\x7f c1\u{9b}2J nl\n ok é";
        let line = json_line(&serde_json::json!({ "text": text })).unwrap();
        assert!(
            !line.chars().any(char::is_control),
            "no raw control character: {line:?}"
        );
        assert!(line.contains(r"\u001b]52;c;eA==\u0007"), "{line}");
        assert!(
            line.contains(r"\u007f") && line.contains(r"\u009b"),
            "{line}"
        );
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back["text"], text);
        let hidden = "\u{202e}gnp.exe\u{200b}\u{e0041} שלום";
        let line = json_line(&serde_json::json!({ "name": hidden })).unwrap();
        assert!(!line.chars().any(is_invisible), "{line:?}");
        assert!(
            line.contains(r"\u202egnp.exe\u200b\udb40\udc41 שלום"),
            "{line}"
        );
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back["name"], hidden);
    }
}
