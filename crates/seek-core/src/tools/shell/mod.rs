//! Reading a bash block's text as the shell would run it, for the checks made before a block
//! runs (safe mode's blocklist in `guard`, interactive programs in `interactive`).
//!
//! Owns the lexer (quotes, escapes, comments, here-documents, redirections, pipes, command and
//! process substitutions, also inside double quotes) and the walk over every command that would
//! run: each element of a pipeline or list, subshells and groups, substitutions, `bash -c`/`sh -c`
//! strings, `eval`, wrappers such as `sudo`, `env`, `xargs`, `timeout` or `exec`, and
//! `find -exec`. Pure; it must not decide what is refused (the callers' visitors do).

mod lexer;

use lexer::split;

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

/// The script a shell runs with `-c`: a single-dash option cluster holding `c` (long options
/// such as `--norc` or `--rcfile` are not clusters), then the first argument after it that is
/// not an option.
fn shell_script<'a>(args: &[&'a Word]) -> Option<&'a str> {
    let at = args.iter().position(|a| {
        a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains('c')
    })?;
    args[at + 1..]
        .iter()
        .find(|a| !a.text.starts_with('-'))
        .map(|script| script.text.as_str())
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
                | ("watch", "-n")
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

pub(in crate::tools) fn is_assignment(word: &str) -> bool {
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
pub(super) fn is_stdin_redirect(word: &Word) -> bool {
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
pub(super) fn needs_target(word: &Word) -> bool {
    redirection_parts(word)
        .is_some_and(|(_, rest)| rest.chars().all(|c| matches!(c, '<' | '>' | '&' | '|')))
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
