//! Reading a bash block's text as the shell would run it, for the checks made before a block
//! runs (safe mode's blocklist in `guard`, interactive programs in `interactive`).
//!
//! Owns the lexer (quotes, escapes, comments, here-documents, redirections, pipes, command and
//! process substitutions, also inside double quotes) and the walk over every command that would
//! run: each element of a pipeline or list, subshells and groups, substitutions, `bash -c`/`sh -c`
//! strings, `eval`, wrappers such as `sudo`, `env`, `xargs`, `timeout` or `exec`, and
//! `find -exec`. Pure; it must not decide what is refused (the callers' visitors do).

/// Commands that run the command after their own options.
const WRAPPERS: &[&str] = &[
    "env", "nohup", "time", "nice", "ionice", "timeout", "xargs", "exec", "command", "builtin",
    "stdbuf", "setsid", "watch", "strace", "busybox", "unbuffer", "then", "do", "else", "!",
    "sudo", "doas",
];

/// Shells whose `-c` string is a script of its own.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "fish"];

/// How deep `bash -c "bash -c …"` may nest before the walk gives up (and says so).
const MAX_DEPTH: usize = 8;

/// One word of a command: its text after quote removal, whether part of it was a parameter
/// expansion outside single quotes (so the shell decides its text at run time), and whether it
/// is a redirection or a redirection's target (`2>&1`, `<`, `in.txt`, `<<EOF`).
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Word {
    pub text: String,
    pub dynamic: bool,
    pub redirect: bool,
}

/// One command that would run, as a visitor sees it.
#[derive(Debug)]
pub(super) struct Invocation<'a> {
    /// The command word as written (`/usr/bin/vim`).
    pub written: &'a str,
    /// Its last path component (`vim`).
    pub name: &'a str,
    /// The words after it, without redirections.
    pub args: Vec<&'a Word>,
    /// `NAME=value` words before it (and an `env` wrapper's).
    pub assignments: Vec<&'a str>,
    /// Its standard input is a pipe, a file, a here-document or a here-string (not the block's
    /// empty stdin).
    pub stdin_fed: bool,
    /// Its standard output goes into a pipe or a file.
    pub stdout_captured: bool,
}

impl Invocation<'_> {
    /// Whether any argument is exactly `word`.
    pub fn has(&self, word: &str) -> bool {
        self.args.iter().any(|a| a.text == word)
    }

    /// The command as written, for messages.
    pub fn joined(&self) -> String {
        std::iter::once(self.written)
            .chain(self.args.iter().map(|a| a.text.as_str()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What a walk meets.
#[derive(Debug)]
pub(super) enum Found<'a> {
    /// A command that would run.
    Command(&'a Invocation<'a>),
    /// A command word the shell builds at run time (`$cmd`): what it runs cannot be known.
    Dynamic(&'a str),
    /// Shells nested deeper than the walk follows.
    TooDeep,
}

/// Calls `visit` with every command `script` would run, substitutions before the command they
/// are part of, until it returns `Some`.
pub(super) fn walk<T>(script: &str, visit: &mut dyn FnMut(Found<'_>) -> Option<T>) -> Option<T> {
    walk_script(script, 0, false, visit)
}

fn walk_script<T>(
    script: &str,
    depth: usize,
    stdin_fed: bool,
    visit: &mut dyn FnMut(Found<'_>) -> Option<T>,
) -> Option<T> {
    if depth > MAX_DEPTH {
        return visit(Found::TooDeep);
    }
    let parsed = split(script);
    // A loop or group whose input is redirected (`done < list`) feeds the commands inside it.
    let fed = stdin_fed || parsed.compound_input;
    for inner in &parsed.substitutions {
        if let Some(found) = walk_script(inner, depth + 1, fed, visit) {
            return Some(found);
        }
    }
    for command in &parsed.commands {
        let context = Context {
            stdin_fed: fed || command.piped_in || command.words.iter().any(is_stdin_redirect),
            stdout_captured: command.piped_out || command.words.iter().any(is_stdout_redirect),
        };
        if let Some(found) = walk_command(&command.words, depth, context, visit) {
            return Some(found);
        }
    }
    None
}

/// Where one command's input and output go.
#[derive(Debug, Clone, Copy)]
struct Context {
    stdin_fed: bool,
    stdout_captured: bool,
}

/// Visits one simple command, then what it runs in turn (a shell's `-c` script, `eval`'s text,
/// `find -exec`'s commands, a wrapper's command).
fn walk_command<T>(
    words: &[Word],
    depth: usize,
    context: Context,
    visit: &mut dyn FnMut(Found<'_>) -> Option<T>,
) -> Option<T> {
    let mut rest = words.iter().filter(|w| !w.redirect);
    let mut assignments = Vec::new();
    let first = loop {
        let word = rest.next()?;
        if is_assignment(&word.text) {
            assignments.push(word.text.as_str());
        } else if !word.text.is_empty() || word.dynamic {
            break word;
        }
    };
    if first.dynamic {
        return visit(Found::Dynamic(&first.text));
    }
    let name = basename(&first.text);
    let args: Vec<&Word> = rest.collect();
    let invocation = Invocation {
        written: &first.text,
        name,
        args,
        assignments,
        stdin_fed: context.stdin_fed,
        stdout_captured: context.stdout_captured,
    };
    if let Some(found) = visit(Found::Command(&invocation)) {
        return Some(found);
    }
    let args = &invocation.args;
    match name {
        _ if SHELLS.contains(&name) => shell_script(args)
            .and_then(|script| walk_script(script, depth + 1, context.stdin_fed, visit)),
        "eval" => {
            let script: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
            walk_script(&script.join(" "), depth + 1, context.stdin_fed, visit)
        }
        "find" => find_commands(args).find_map(|inner| {
            let context = Context {
                stdin_fed: true,
                ..context
            };
            walk_command(&inner, depth + 1, context, visit)
        }),
        _ if WRAPPERS.contains(&name) => {
            let mut inner: Vec<Word> = invocation
                .assignments
                .iter()
                .map(|text| Word {
                    text: (*text).to_owned(),
                    ..Word::default()
                })
                .collect();
            inner.extend(wrapped_command(name, args));
            walk_command(&inner, depth + 1, context, visit)
        }
        _ => None,
    }
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The script a shell runs with `-c SCRIPT` (any option cluster holding `c`).
fn shell_script<'a>(args: &[&'a Word]) -> Option<&'a str> {
    let at = args
        .iter()
        .position(|a| a.text.starts_with('-') && a.text.contains('c'))?;
    args.get(at + 1).map(|script| script.text.as_str())
}

/// The commands `find` runs: each `-exec`/`-execdir`/`-ok`/`-okdir` up to its `;` or `+`.
fn find_commands<'a>(args: &'a [&'a Word]) -> impl Iterator<Item = Vec<Word>> + 'a {
    args.iter()
        .enumerate()
        .filter(|(_, a)| matches!(a.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))
        .map(|(i, _)| {
            args[i + 1..]
                .iter()
                .take_while(|w| w.text != ";" && w.text != "+")
                .map(|w| (*w).clone())
                .collect()
        })
}

/// The command a wrapper (`env`, `timeout`, `xargs`, …) runs: what follows its options, an
/// option's value for the few that take one; `env`'s assignments are kept before it.
fn wrapped_command(name: &str, args: &[&Word]) -> Vec<Word> {
    let takes_value = |option: &str| {
        matches!(
            (name, option),
            ("nice", "-n")
                | ("timeout", "-s" | "-k")
                | ("xargs", "-I" | "-n" | "-P" | "-d")
                | ("ionice", "-c" | "-n")
                | ("env", "-u" | "-C")
                | ("sudo", "-u" | "-g" | "-C" | "-D" | "-h" | "-p" | "-U")
                | ("watch", "-n" | "-d")
        )
    };
    let mut expect_value = false;
    let start = args.iter().position(|a| {
        if expect_value {
            expect_value = false;
            return false;
        }
        if a.text.starts_with('-') && a.text != "-" {
            expect_value = takes_value(&a.text);
            return false;
        }
        let leading_duration =
            name == "timeout" && a.text.chars().next().is_some_and(|c| c.is_ascii_digit());
        !(is_assignment(&a.text) || leading_duration)
    });
    start.map_or_else(Vec::new, |start| {
        args[..start]
            .iter()
            .filter(|a| is_assignment(&a.text))
            .chain(&args[start..])
            .map(|w| (*w).clone())
            .collect()
    })
}

pub(super) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// A redirection word's file descriptor digits and its operator onwards (`2>&1` → `2`, `>&1`).
fn redirection_parts(word: &Word) -> Option<(&str, &str)> {
    if !word.redirect {
        return None;
    }
    let operator_at = word
        .text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(word.text.len());
    let (fd, rest) = word.text.split_at(operator_at);
    (rest.starts_with('<') || rest.starts_with('>') || rest.starts_with("&>")).then_some((fd, rest))
}

/// `<`, `0<`, `<<EOF`, `<<<`, `<&3`, `<>`: standard input comes from somewhere.
fn is_stdin_redirect(word: &Word) -> bool {
    redirection_parts(word)
        .is_some_and(|(fd, rest)| (fd.is_empty() || fd == "0") && rest.starts_with('<'))
}

/// `>`, `1>`, `>>`, `&>`, `>|`: standard output goes to a file (or another descriptor).
fn is_stdout_redirect(word: &Word) -> bool {
    redirection_parts(word).is_some_and(|(fd, rest)| {
        rest.starts_with("&>") || ((fd.is_empty() || fd == "1") && rest.starts_with('>'))
    })
}

/// Whether a redirection word still waits for its target in the next word (`<`, `2>`, `&>`).
fn needs_target(word: &Word) -> bool {
    redirection_parts(word)
        .is_some_and(|(_, rest)| rest.chars().all(|c| matches!(c, '<' | '>' | '&' | '|')))
}

/// One simple command as written, and whether pipes connect it.
#[derive(Debug, Default)]
pub(super) struct SimpleCommand {
    pub words: Vec<Word>,
    pub piped_in: bool,
    pub piped_out: bool,
}

/// A script split into its simple commands and the texts of its substitutions.
#[derive(Debug, Default)]
pub(super) struct Split {
    pub commands: Vec<SimpleCommand>,
    pub substitutions: Vec<String>,
    /// Some command that is no program (a loop's `done`, a group's closing brace, a bare
    /// `exec`) has its input redirected: it feeds the commands it encloses.
    pub compound_input: bool,
}

/// Splits a script into simple commands and the texts of its command and process
/// substitutions (to check on their own).
pub(super) fn split(script: &str) -> Split {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each command the walk meets: its name, arguments, and where its input and output go.
    fn commands(script: &str) -> Vec<(String, Vec<String>, bool, bool)> {
        let mut seen = Vec::new();
        walk::<()>(script, &mut |found| {
            if let Found::Command(c) = found {
                seen.push((
                    c.name.to_owned(),
                    c.args.iter().map(|a| a.text.clone()).collect(),
                    c.stdin_fed,
                    c.stdout_captured,
                ));
            }
            None
        });
        seen
    }

    fn names(script: &str) -> Vec<String> {
        commands(script).into_iter().map(|c| c.0).collect()
    }

    #[test]
    fn here_document_bodies_are_input_not_commands() {
        let script = "cat <<'EOF' > notes.txt\nvim is great\nrm -rf /\nEOF\necho done";
        assert_eq!(names(script), ["cat", "echo"]);
        let tabs = "cat <<-END\n\tless is more\n\tEND\nls";
        assert_eq!(names(tabs), ["cat", "ls"]);
        // An unquoted body's substitutions still run.
        assert_eq!(names("cat <<EOF\n$(rm x)\nEOF"), ["rm", "cat"]);
        assert_eq!(names("cat <<'EOF'\n$(rm x)\nEOF"), ["cat"]);
    }

    #[test]
    fn pipes_and_redirections_are_seen() {
        let seen = commands("ls | less; python3 < in.py > out.txt 2>&1; a || b");
        assert_eq!(
            seen,
            [
                ("ls".into(), vec![], false, true),
                ("less".into(), vec![], true, false),
                ("python3".into(), vec![], true, true),
                ("a".into(), vec![], false, false),
                ("b".into(), vec![], false, false),
            ]
        );
        assert_eq!(commands("cat<x")[0].1, Vec::<String>::new());
        assert!(commands("python3 <<< 'print(1)'")[0].2);
        assert!(commands("ls |& less")[1].2);
        assert!(commands("echo hi &> out")[0].3);
    }

    #[test]
    fn a_redirected_loop_feeds_the_commands_inside_it() {
        let seen = commands("while read -r line; do echo \"$line\"; done < list.txt");
        assert_eq!(seen[0].0, "read");
        assert!(seen[0].2, "read's input is the loop's");
    }

    #[test]
    fn wrappers_keep_their_assignments_and_context() {
        let mut seen = Vec::new();
        walk::<()>("env PAGER=cat man ls | cat", &mut |found| {
            if let Found::Command(c) = found {
                seen.push((
                    c.name.to_owned(),
                    c.assignments.join(","),
                    c.stdout_captured,
                ));
            }
            None
        });
        assert_eq!(seen[1], ("man".into(), "PAGER=cat".into(), true));
    }
}
