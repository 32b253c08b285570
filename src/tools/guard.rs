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
    let mut found = None;
    check_script(script, 0, &mut found);
    found
}

/// How deep `bash -c "bash -c …"` may nest before the text counts as refused.
const MAX_DEPTH: usize = 8;

fn check_script(script: &str, depth: usize, found: &mut Option<String>) {
    if found.is_some() {
        return;
    }
    if depth > MAX_DEPTH {
        *found = Some("commands nested too deeply to check".into());
        return;
    }
    let (commands, substitutions) = split(script);
    for inner in substitutions {
        check_script(&inner, depth + 1, found);
    }
    for words in commands {
        check_command(&words, depth, found);
        if found.is_some() {
            return;
        }
    }
}

/// One word of a command: its text after quote removal, and whether part of it was a
/// parameter expansion outside single quotes (so the shell decides its text at run time).
#[derive(Debug, Clone, PartialEq)]
struct Word {
    text: String,
    dynamic: bool,
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn check_command(words: &[Word], depth: usize, found: &mut Option<String>) {
    // Leading assignments and redirections are not the command.
    let mut rest = words
        .iter()
        .skip_while(|w| is_assignment(&w.text) || is_redirection(&w.text) || w.text.is_empty())
        .peekable();
    let Some(first) = rest.next() else { return };
    if first.dynamic {
        *found = Some(format!(
            "{} (a command built at run time cannot be checked)",
            first.text
        ));
        return;
    }
    let name = basename(&first.text);
    let args: Vec<&Word> = rest.collect();
    if BLOCKED.contains(&name) || name.starts_with("mkfs.") {
        *found = Some(join(first, &args));
        return;
    }
    if name == "git" && is_destructive_git(&args) {
        *found = Some(join(first, &args));
        return;
    }
    if SHELLS.contains(&name) {
        if let Some(at) = args
            .iter()
            .position(|a| a.text.starts_with('-') && a.text.contains('c'))
            && let Some(script) = args.get(at + 1)
        {
            check_script(&script.text, depth + 1, found);
        }
        return;
    }
    if name == "eval" {
        let script: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        check_script(&script.join(" "), depth + 1, found);
        return;
    }
    if name == "find" {
        for (i, a) in args.iter().enumerate() {
            if matches!(a.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                let inner: Vec<Word> = args[i + 1..]
                    .iter()
                    .take_while(|w| w.text != ";" && w.text != "+")
                    .map(|w| (*w).clone())
                    .collect();
                check_command(&inner, depth + 1, found);
            }
        }
        return;
    }
    if WRAPPERS.contains(&name) {
        // The wrapped command: after options, an option's value for the few that take one,
        // and `env`'s assignments.
        let mut inner: Vec<Word> = Vec::new();
        let mut skipping = true;
        let mut expect_value = false;
        for a in &args {
            if skipping {
                if expect_value {
                    expect_value = false;
                    continue;
                }
                if a.text.starts_with('-') && a.text != "-" {
                    expect_value = matches!(
                        (name, a.text.as_str()),
                        ("nice", "-n")
                            | ("timeout", "-s" | "-k")
                            | ("xargs", "-I" | "-n" | "-P" | "-d")
                            | ("ionice", "-c" | "-n")
                            | ("env", "-u" | "-C")
                    );
                    continue;
                }
                if is_assignment(&a.text)
                    || (name == "timeout"
                        && a.text.chars().next().is_some_and(|c| c.is_ascii_digit()))
                {
                    continue;
                }
                skipping = false;
            }
            inner.push((*a).clone());
        }
        check_command(&inner, depth + 1, found);
    }
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
    let chars: Vec<char> = script.chars().collect();
    let mut commands = Vec::new();
    let mut substitutions = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut word = Word {
        text: String::new(),
        dynamic: false,
    };
    let mut in_word = false;
    let mut i = 0;
    let end_word = |words: &mut Vec<Word>, word: &mut Word, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::replace(
                word,
                Word {
                    text: String::new(),
                    dynamic: false,
                },
            ));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                if let Some(&next) = chars.get(i + 1) {
                    if next != '\n' {
                        word.text.push(next);
                        in_word = true;
                    }
                    i += 2;
                } else {
                    i += 1;
                }
                continue;
            }
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.text.push(chars[i]);
                    i += 1;
                }
                i += 1;
                continue;
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    match chars[i] {
                        '\\' if i + 1 < chars.len() => {
                            word.text.push(chars[i + 1]);
                            i += 2;
                        }
                        '`' => {
                            let (inner, next) = until_backtick(&chars, i + 1);
                            substitutions.push(inner);
                            word.dynamic = true;
                            i = next;
                        }
                        '$' => {
                            i = dollar(&chars, i, &mut word, &mut substitutions);
                        }
                        other => {
                            word.text.push(other);
                            i += 1;
                        }
                    }
                }
                i += 1;
                continue;
            }
            '`' => {
                let (inner, next) = until_backtick(&chars, i + 1);
                substitutions.push(inner);
                word.dynamic = true;
                in_word = true;
                i = next;
                continue;
            }
            '$' => {
                in_word = true;
                i = dollar(&chars, i, &mut word, &mut substitutions);
                continue;
            }
            '<' | '>' if chars.get(i + 1) == Some(&'(') => {
                // Process substitution: its command runs.
                let (inner, next) = until_close(&chars, i + 2);
                substitutions.push(inner);
                i = next;
                continue;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                end_word(&mut words, &mut word, &mut in_word);
                // `2>&1` and `&>` are redirections, not separators.
                let redirect = c == '&'
                    && (chars.get(i + 1) == Some(&'>')
                        || words.last().is_some_and(|w| w.text.ends_with('>')));
                if redirect {
                    if let Some(last) = words.last_mut() {
                        last.text.push(c);
                    }
                    i += 1;
                    continue;
                }
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
                i += 1;
                continue;
            }
            c if c.is_whitespace() => {
                end_word(&mut words, &mut word, &mut in_word);
                i += 1;
                continue;
            }
            '{' | '}'
                if !in_word
                    && chars
                        .get(i + 1)
                        .is_none_or(|n| n.is_whitespace() || *n == ';') =>
            {
                // A group's braces are reserved words, not commands.
                i += 1;
                continue;
            }
            other => {
                word.text.push(other);
                in_word = true;
                i += 1;
            }
        }
    }
    end_word(&mut words, &mut word, &mut in_word);
    if !words.is_empty() {
        commands.push(words);
    }
    // Reserved words that start compound commands are not commands; what follows them is.
    for command in &mut commands {
        while command.first().is_some_and(|w| {
            !w.dynamic
                && matches!(
                    w.text.as_str(),
                    "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "time"
                )
        }) {
            command.remove(0);
        }
    }
    (commands, substitutions)
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
    }
}
