//! Safe mode's blocklist (AgenticSeek's `safe_mode`), done properly: the shell text is parsed
//! and every command that would run is checked — each element of a pipeline or list, subshells
//! and groups, command and process substitutions (also inside double quotes), `bash -c`/`sh -c`
//! strings, `eval`, wrappers such as `sudo`, `env`, `xargs`, `timeout` or `exec`, and
//! `find -exec`. A command word the shell would build at run time (`$cmd`) cannot be checked
//! and is refused.
//!
//! A guard rail against a model's mistakes, not a sandbox: code in other languages, a script
//! file written first and run later, or an alias are out of its sight. Pure.

/// Commands safe mode refuses (AgenticSeek's list without `git`, which it blocked wholesale,
/// plus the ones its list missed).
const BLOCKED: &[&str] = &[
    "rm",
    "rmdir",
    "shred",
    "dd",
    "mkfs",
    "fdisk",
    "parted",
    "wipefs",
    "mkswap",
    "chmod",
    "chown",
    "chgrp",
    "chattr",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "init",
    "sysctl",
    "kill",
    "pkill",
    "killall",
    "tee",
    "mount",
    "umount",
    "passwd",
    "useradd",
    "userdel",
    "usermod",
    "groupadd",
    "groupdel",
    "visudo",
    "chroot",
    "route",
    "iptables",
    "crontab",
    "sudo",
    "su",
    "doas",
    "brew",
    "systemctl",
    "modprobe",
    "insmod",
    "rmmod",
    "truncate",
];

/// Commands that run the command after their own options.
const WRAPPERS: &[&str] = &[
    "env", "nohup", "time", "nice", "ionice", "timeout", "xargs", "exec", "command", "builtin",
    "stdbuf", "setsid", "watch", "strace", "busybox", "unbuffer", "then", "do", "else", "!",
];

/// Shells whose `-c` string is a script of its own.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "fish"];

/// Why `script` is refused: the first blocked command found, as written.
pub fn refused(script: &str) -> Option<String> {
    check_script(script, 0)
}

/// How deep `bash -c "bash -c …"` may nest before the text counts as refused.
const MAX_DEPTH: usize = 8;

/// The first blocked command of `script`: its substitutions' first, then its own commands'.
fn check_script(script: &str, depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return Some("commands nested too deeply to check".into());
    }
    let (commands, substitutions) = split(script);
    substitutions
        .iter()
        .find_map(|inner| check_script(inner, depth + 1))
        .or_else(|| {
            commands
                .iter()
                .find_map(|words| check_command(words, depth))
        })
}

/// One word of a command: its text after quote removal, and whether part of it was a
/// parameter expansion outside single quotes (so the shell decides its text at run time).
#[derive(Debug, Clone, PartialEq, Default)]
struct Word {
    text: String,
    dynamic: bool,
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The blocked command of one simple command (or of what it runs), as written.
fn check_command(words: &[Word], depth: usize) -> Option<String> {
    // Leading assignments and redirections are not the command.
    let mut rest = words
        .iter()
        .skip_while(|w| is_assignment(&w.text) || is_redirection(&w.text) || w.text.is_empty());
    let first = rest.next()?;
    if first.dynamic {
        return Some(format!(
            "{} (a command built at run time cannot be checked)",
            first.text
        ));
    }
    let name = basename(&first.text);
    let args: Vec<&Word> = rest.collect();
    if is_blocked(name, &args) {
        return Some(join(first, &args));
    }
    match name {
        _ if SHELLS.contains(&name) => {
            shell_script(&args).and_then(|script| check_script(script, depth + 1))
        }
        "eval" => {
            let script: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
            check_script(&script.join(" "), depth + 1)
        }
        "find" => find_commands(&args).find_map(|inner| check_command(&inner, depth + 1)),
        _ if WRAPPERS.contains(&name) => check_command(&wrapped_command(name, &args), depth + 1),
        _ => None,
    }
}

/// Whether command `name` with `args` is one safe mode refuses by itself.
fn is_blocked(name: &str, args: &[&Word]) -> bool {
    BLOCKED.contains(&name)
        || name.starts_with("mkfs.")
        || (name == "git" && is_destructive_git(args))
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
/// option's value for the few that take one, and `env`'s assignments.
fn wrapped_command(name: &str, args: &[&Word]) -> Vec<Word> {
    let takes_value = |option: &str| {
        matches!(
            (name, option),
            ("nice", "-n")
                | ("timeout", "-s" | "-k")
                | ("xargs", "-I" | "-n" | "-P" | "-d")
                | ("ionice", "-c" | "-n")
                | ("env", "-u" | "-C")
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
        args[start..].iter().map(|w| (*w).clone()).collect()
    })
}

fn is_destructive_git(args: &[&Word]) -> bool {
    let has = |w: &str| args.iter().any(|a| a.text == w);
    let sub = args
        .iter()
        .find(|a| !a.text.starts_with('-'))
        .map(|a| a.text.as_str());
    match sub {
        Some("push") => {
            has("--force") || has("-f") || args.iter().any(|a| a.text.starts_with("--force"))
        }
        Some("reset") => has("--hard"),
        Some("clean") => args
            .iter()
            .any(|a| a.text.starts_with('-') && a.text.contains('f')),
        _ => false,
    }
}

fn join(first: &Word, args: &[&Word]) -> String {
    std::iter::once(first.text.as_str())
        .chain(args.iter().map(|a| a.text.as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

fn is_redirection(word: &str) -> bool {
    let rest = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
    rest.starts_with('>') || rest.starts_with('<')
}

/// Splits a script into simple commands (word lists) and the texts of its command and process
/// substitutions (to check on their own).
fn split(script: &str) -> (Vec<Vec<Word>>, Vec<String>) {
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
    for command in &mut commands {
        drop_leading_reserved_words(command);
    }
    (commands, substitutions)
}

/// Reserved words that start compound commands are not commands; what follows them is.
fn drop_leading_reserved_words(command: &mut Vec<Word>) {
    let reserved = |w: &Word| {
        !w.dynamic
            && matches!(
                w.text.as_str(),
                "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "time"
            )
    };
    let count = command.iter().take_while(|w| reserved(w)).count();
    command.drain(..count);
}

/// The state of one pass over a script's text.
#[derive(Debug, Default)]
struct Lexer {
    chars: Vec<char>,
    /// The next character to read.
    i: usize,
    commands: Vec<Vec<Word>>,
    substitutions: Vec<String>,
    /// The words of the command being read.
    words: Vec<Word>,
    /// The word being read, and whether one has begun (`''` is a word, with no text).
    word: Word,
    in_word: bool,
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
        self.end_command();
    }

    /// The character `ahead` places after the current one.
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn end_word(&mut self) {
        if self.in_word {
            self.words.push(std::mem::take(&mut self.word));
            self.in_word = false;
        }
    }

    fn end_command(&mut self) {
        if !self.words.is_empty() {
            self.commands.push(std::mem::take(&mut self.words));
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

    /// `;`, `&`, `|`, a line ending or a parenthesis ends a command, except the `&` of a
    /// redirection (`2>&1`, `&>`), which belongs to its word.
    fn separator(&mut self, c: char) {
        self.end_word();
        let redirect = c == '&'
            && (self.peek(1) == Some('>')
                || self.words.last().is_some_and(|w| w.text.ends_with('>')));
        if redirect {
            if let Some(last) = self.words.last_mut() {
                last.text.push(c);
            }
        } else {
            self.end_command();
        }
        self.i += 1;
    }
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

    #[test]
    fn agenticseek_bypasses_are_caught() {
        for script in [
            "bash -c \"rm -rf x\"",
            "sh -c 'rm -rf x'",
            "echo x|rm y",
            "a | rm y",
            "ls;rm x",
            "ls && rm x",
            "false || rm x",
            "$(rm x)",
            "echo `rm x`",
            "echo \"$(rm x)\"",
            "(rm x)",
            "{ rm x; }",
            "/bin/rm x",
            "\"rm\" x",
            "r\\m x",
            "'rm' x",
            "sudo rm x",
            "env A=1 rm x",
            "FOO=bar rm x",
            "nohup rm x &",
            "timeout 5 rm x",
            "xargs rm < list",
            "find . -name '*.o' -exec rm {} \\;",
            "eval 'rm x'",
            "bash -c \"bash -c 'rm x'\"",
            "cat <(rm x)",
            "if true; then rm x; fi",
            "while true; do rm x; done",
            "echo ok\nrm x",
            "exec rm x",
            "command rm x",
            "mkfs.ext4 /dev/sda1",
            "git push --force",
            "git reset --hard HEAD~3",
            "dd if=/dev/zero of=/dev/sda",
            "echo x | tee /etc/passwd",
            "$cmd x",
            "${RM:-rm} x",
        ] {
            assert!(refused(script).is_some(), "not caught: {script}");
        }
    }

    #[test]
    fn ordinary_commands_pass() {
        for script in [
            "ls -la",
            "echo 'rm is a command' > notes.txt",
            "echo \"remove with rm\"",
            "grep -r rm .",
            "python3 -c 'print(1)'",
            "cat file | wc -l",
            "git status && git log --oneline | head",
            "for f in *.txt; do echo \"$f\"; done",
            "x=$((1 + 2)); echo $x",
            "ls 2>&1 | head",
            "echo hi &> out.txt",
            "# rm everything\necho no",
            "git push origin main",
            "mkdir -p build && cd build",
            "echo $HOME",
        ] {
            assert_eq!(refused(script), None, "wrongly refused: {script}");
        }
    }

    #[test]
    fn the_refusal_names_the_command() {
        assert_eq!(
            refused("ls; rm -rf some_dir").as_deref(),
            Some("rm -rf some_dir")
        );
        // Of several, the first to run: a substitution runs before its command.
        assert_eq!(
            refused("rm -f a \"$(shred b)\"").as_deref(),
            Some("shred b")
        );
        assert_eq!(
            refused("find . -exec rm {} \\; -exec shred {} \\;").as_deref(),
            Some("rm {}")
        );
    }
}
