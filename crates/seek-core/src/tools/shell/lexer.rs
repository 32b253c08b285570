//! The lexer under `shell`: a script's text into simple commands (words, with quotes removed
//! and redirections marked), whether pipes connect them, and the texts of the command and process
//! substitutions inside (here-document bodies included, unless their delimiter is quoted).
//! Pure; it must not decide anything about the commands it finds.

use super::{Word, is_assignment, is_stdin_redirect, needs_target};

/// One simple command as written, and whether pipes connect it.
#[derive(Debug, Default)]
pub(in crate::tools) struct SimpleCommand {
    pub words: Vec<Word>,
    pub piped_in: bool,
    pub piped_out: bool,
}

/// A script split into its simple commands and the texts of its substitutions.
#[derive(Debug, Default)]
pub(in crate::tools) struct Split {
    pub commands: Vec<SimpleCommand>,
    pub substitutions: Vec<String>,
    /// Some command that is no program (a loop's `done`, a group's closing brace, a bare
    /// `exec`) has its input redirected: it feeds the commands it encloses.
    pub compound_input: bool,
}

/// Splits a script into simple commands and the texts of its command and process
/// substitutions (to check on their own).
pub(in crate::tools) fn split(script: &str) -> Split {
    let mut lexer = Lexer {
        chars: script.chars().collect(),
        ..Lexer::default()
    };
    lexer.run();
    let Lexer {
        mut commands,
        substitutions,
        ..
    } = lexer;
    let mut compound_input = false;
    for command in &mut commands {
        drop_leading_reserved_words(&mut command.words);
        let program = command
            .words
            .iter()
            .find(|w| !w.redirect && !is_assignment(&w.text));
        let encloses = program.is_none_or(|w| {
            !w.dynamic && matches!(w.text.as_str(), "done" | "fi" | "esac" | "exec")
        });
        if encloses && command.words.iter().any(is_stdin_redirect) {
            compound_input = true;
        }
    }
    Split {
        commands,
        substitutions,
        compound_input,
    }
}

/// Reserved words that start compound commands are not commands; what follows them is.
fn drop_leading_reserved_words(command: &mut Vec<Word>) {
    let reserved = |w: &Word| {
        !w.dynamic
            && !w.redirect
            && matches!(
                w.text.as_str(),
                "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "time"
            )
    };
    let count = command.iter().take_while(|w| reserved(w)).count();
    command.drain(..count);
}

/// A here-document whose body starts after the current line.
#[derive(Debug)]
struct PendingHereDoc {
    delimiter: String,
    strip_tabs: bool,
    /// A quoted delimiter (`<<'EOF'`) makes the body literal; otherwise substitutions in it run.
    quoted: bool,
}

/// The state of one pass over a script's text.
#[derive(Debug, Default)]
struct Lexer {
    chars: Vec<char>,
    /// The next character to read.
    i: usize,
    commands: Vec<SimpleCommand>,
    substitutions: Vec<String>,
    /// The words of the command being read, and whether a pipe feeds it.
    words: Vec<Word>,
    piped_in: bool,
    /// The word being read, and whether one has begun (`''` is a word, with no text).
    word: Word,
    in_word: bool,
    here_docs: Vec<PendingHereDoc>,
}

impl Lexer {
    fn run(&mut self) {
        while let Some(&c) = self.chars.get(self.i) {
            match c {
                '\\' => self.escaped(),
                '\'' => self.single_quoted(),
                '"' => self.double_quoted(),
                '`' => {
                    self.backticks();
                    self.in_word = true;
                }
                '$' => {
                    self.in_word = true;
                    self.i = dollar(&self.chars, self.i, &mut self.word, &mut self.substitutions);
                }
                '<' | '>' if self.peek(1) == Some('(') => self.process_substitution(),
                '<' if self.peek(1) == Some('<') && self.peek(2) != Some('<') => {
                    self.here_document();
                }
                '<' | '>' => self.redirection_char(c),
                // `2>&1`, `>&2`, `<&3`, `>|`: part of the redirection being read.
                '&' | '|'
                    if self.in_word
                        && self.word.redirect
                        && self.word.text.ends_with(['<', '>']) =>
                {
                    self.word.text.push(c);
                    self.i += 1;
                }
                // `&>file`: a redirection of both outputs, not a background `&`.
                '&' if self.peek(1) == Some('>') => {
                    self.end_word();
                    self.word.text.push('&');
                    self.word.redirect = true;
                    self.in_word = true;
                    self.i += 1;
                }
                '#' if !self.in_word => self.comment(),
                ';' | '&' | '|' | '\n' | '(' | ')' => self.separator(c),
                c if c.is_whitespace() => {
                    self.end_word();
                    self.i += 1;
                }
                // A group's braces are reserved words, not commands.
                '{' | '}'
                    if !self.in_word
                        && self.peek(1).is_none_or(|n| n.is_whitespace() || n == ';') =>
                {
                    self.i += 1;
                }
                other => {
                    self.word.text.push(other);
                    self.in_word = true;
                    self.i += 1;
                }
            }
        }
        self.end_word();
        self.end_command(false);
    }

    /// The character `ahead` places after the current one.
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn end_word(&mut self) {
        if self.in_word {
            let mut word = std::mem::take(&mut self.word);
            if self.words.last().is_some_and(needs_target) {
                word.redirect = true;
            }
            self.words.push(word);
            self.in_word = false;
        }
    }

    /// Ends the command being read; returns whether there was one.
    fn end_command(&mut self, piped_out: bool) -> bool {
        if self.words.is_empty() {
            return false;
        }
        self.commands.push(SimpleCommand {
            words: std::mem::take(&mut self.words),
            piped_in: self.piped_in,
            piped_out,
        });
        true
    }

    /// `<` or `>` outside quotes: starts a redirection word, unless the word so far is its file
    /// descriptor (`2>`); `cat<x` is two words.
    fn redirection_char(&mut self, c: char) {
        let fd_so_far = self.in_word
            && !self.word.dynamic
            && self.word.text.chars().all(|d| d.is_ascii_digit());
        if self.in_word && !fd_so_far && !self.word.redirect {
            self.end_word();
        }
        if self.in_word && self.word.redirect && !self.word.text.ends_with(['<', '>', '&']) {
            // `>out<in`: a second redirection right after the first one's target.
            self.end_word();
        }
        self.word.text.push(c);
        self.word.redirect = true;
        self.in_word = true;
        self.i += 1;
    }

    /// `<<WORD` or `<<-WORD`: the body (the lines after this one, up to WORD) is the command's
    /// input, not commands; an unquoted one's substitutions still run.
    fn here_document(&mut self) {
        self.end_word();
        self.i += 2;
        let strip_tabs = self.peek(0) == Some('-');
        if strip_tabs {
            self.i += 1;
        }
        while self.peek(0).is_some_and(|c| c == ' ' || c == '\t') {
            self.i += 1;
        }
        let mut delimiter = String::new();
        let mut quoted = false;
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek(0) {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => delimiter.push(c),
                None if c == '\'' || c == '"' => {
                    quote = Some(c);
                    quoted = true;
                }
                None if c == '\\' => {
                    quoted = true;
                    self.i += 1;
                    delimiter.extend(self.peek(0));
                }
                None if c.is_whitespace() || ";&|()<>".contains(c) => break,
                None => delimiter.push(c),
            }
            self.i += 1;
        }
        self.words.push(Word {
            text: format!("<<{delimiter}"),
            dynamic: false,
            redirect: true,
        });
        self.here_docs.push(PendingHereDoc {
            delimiter,
            strip_tabs,
            quoted,
        });
    }

    /// Skips the bodies of the here-documents started on the line that just ended (the
    /// current character is the first of the next line).
    fn here_document_bodies(&mut self) {
        for doc in std::mem::take(&mut self.here_docs) {
            let mut body = String::new();
            while self.i < self.chars.len() {
                let end = self.chars[self.i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.chars.len(), |n| self.i + n);
                let line: String = self.chars[self.i..end].iter().collect();
                self.i = (end + 1).min(self.chars.len());
                let compared = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if compared == doc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if !doc.quoted {
                self.substitutions.extend(substitutions_in(&body));
            }
        }
    }

    /// `\x` is `x`; a backslash before a line ending joins the lines.
    fn escaped(&mut self) {
        match self.peek(1) {
            Some(next) => {
                if next != '\n' {
                    self.word.text.push(next);
                    self.in_word = true;
                }
                self.i += 2;
            }
            None => self.i += 1,
        }
    }

    /// `'…'`: every character as it is.
    fn single_quoted(&mut self) {
        self.in_word = true;
        self.i += 1;
        while let Some(c) = self.peek(0).filter(|c| *c != '\'') {
            self.word.text.push(c);
            self.i += 1;
        }
        self.i += 1;
    }

    /// `"…"`: escapes, and substitutions and expansions that still happen inside.
    fn double_quoted(&mut self) {
        self.in_word = true;
        self.i += 1;
        while let Some(c) = self.peek(0).filter(|c| *c != '"') {
            match c {
                '\\' if self.peek(1).is_some() => {
                    self.word.text.extend(self.peek(1));
                    self.i += 2;
                }
                '`' => self.backticks(),
                '$' => {
                    self.i = dollar(&self.chars, self.i, &mut self.word, &mut self.substitutions);
                }
                other => {
                    self.word.text.push(other);
                    self.i += 1;
                }
            }
        }
        self.i += 1;
    }

    /// `` `…` ``: a command substitution; the word's text is decided at run time.
    fn backticks(&mut self) {
        let (inner, next) = until_backtick(&self.chars, self.i + 1);
        self.substitutions.push(inner);
        self.word.dynamic = true;
        self.i = next;
    }

    /// `<(…)` or `>(…)`: its command runs.
    fn process_substitution(&mut self) {
        let (inner, next) = until_close(&self.chars, self.i + 2);
        self.substitutions.push(inner);
        self.i = next;
    }

    /// `# …` to the end of the line.
    fn comment(&mut self) {
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.i += 1;
        }
    }

    /// `;`, `&`, `|`, a line ending or a parenthesis ends a command. `|` and `|&` feed the next
    /// command; `||` does not. A line ending is followed by the bodies of its here-documents.
    fn separator(&mut self, c: char) {
        self.end_word();
        match c {
            '|' if self.peek(1) == Some('|') => {
                if self.end_command(false) {
                    self.piped_in = false;
                }
                self.i += 2;
            }
            '|' => {
                self.end_command(true);
                self.piped_in = true;
                self.i += if self.peek(1) == Some('&') { 2 } else { 1 };
            }
            _ => {
                if self.end_command(false) {
                    self.piped_in = false;
                }
                self.i += 1;
                if c == '\n' {
                    self.here_document_bodies();
                }
            }
        }
    }
}

/// The command substitutions in an unquoted here-document's body.
fn substitutions_in(body: &str) -> Vec<String> {
    let chars: Vec<char> = body.chars().collect();
    let mut found = Vec::new();
    let mut scratch = Word::default();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '$' => i = dollar(&chars, i, &mut scratch, &mut found),
            '`' => {
                let (inner, next) = until_backtick(&chars, i + 1);
                found.push(inner);
                i = next;
            }
            _ => i += 1,
        }
    }
    found
}

/// Handles `$…` at `i`: `$(…)` is a substitution, `$((…))` arithmetic, `${…}`/`$NAME` make the
/// word dynamic. Returns the index after it.
fn dollar(chars: &[char], i: usize, word: &mut Word, substitutions: &mut Vec<String>) -> usize {
    match chars.get(i + 1) {
        Some('(') if chars.get(i + 2) == Some(&'(') => {
            let (_, next) = until_close(chars, i + 3);
            word.text.push('0');
            next.saturating_add(1).min(chars.len())
        }
        Some('(') => {
            let (inner, next) = until_close(chars, i + 2);
            substitutions.push(inner);
            word.dynamic = true;
            next
        }
        Some('{') => {
            let mut j = i + 2;
            while j < chars.len() && chars[j] != '}' {
                j += 1;
            }
            word.dynamic = true;
            word.text.push('$');
            j + 1
        }
        Some(c)
            if c.is_ascii_alphanumeric()
                || matches!(c, '_' | '@' | '*' | '#' | '?' | '$' | '!' | '-') =>
        {
            let mut j = i + 1;
            if c.is_ascii_alphabetic() || *c == '_' {
                while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
            } else {
                j += 1;
            }
            word.dynamic = true;
            word.text.push('$');
            word.text.extend(&chars[i + 1..j]);
            j
        }
        _ => {
            word.text.push('$');
            i + 1
        }
    }
}

/// The text up to the `)` that closes an opening just before `start` (quotes and nesting
/// respected), and the index after it.
fn until_close(chars: &[char], start: usize) -> (String, usize) {
    let mut depth = 1;
    let mut i = start;
    let mut quote: Option<char> = None;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) if c == '\\' => i += 1,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '\\' => i += 1,
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return (chars[start..i].iter().collect(), i + 1);
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    (
        chars[start.min(chars.len())..].iter().collect(),
        chars.len(),
    )
}

fn until_backtick(chars: &[char], start: usize) -> (String, usize) {
    let mut i = start;
    let mut inner = String::new();
    while i < chars.len() && chars[i] != '`' {
        if chars[i] == '\\' && i + 1 < chars.len() {
            inner.push(chars[i + 1]);
            i += 2;
            continue;
        }
        inner.push(chars[i]);
        i += 1;
    }
    (inner, i + 1)
}
