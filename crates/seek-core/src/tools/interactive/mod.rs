//! Programs that need a person at a terminal: full-screen editors, pagers and monitors, bare
//! REPLs, `ssh` without a command, editors that `git` would open, `read` from the terminal.
//! Blocks run without a terminal and with empty input, so such a program hangs until the block's
//! timeout (or quits at once having done nothing); a bash block that would start one is refused
//! before anything runs, with what to do instead.
//!
//! Owns the list and the rule for each program (what makes a use of it non-interactive:
//! `vim -es`, `top -b`, `python3 script.py`, `ssh host cmd`, `git commit -m`, …). The shell text
//! is read by `shell` (every command that would run, pipes, redirections, here-documents). It
//! must not refuse what only looks similar: `less` as an argument, `echo vim`, `vim --version`.
//! Pure.

mod git;
mod repl;

use super::shell::{Found, Invocation, walk};
use git::git;
use repl::repl;

/// Why a block was refused: the model's feedback, naming the command and what to do instead.
pub fn refused(script: &str) -> Option<String> {
    walk(script, &mut |found| {
        match found {
        Found::Command(command) => check(command).map(|why| {
            format!(
                "{} is interactive and cannot run here: {} (The block was refused before anything ran: blocks run without a terminal, and their input is empty. The refused command: `{}`.)",
                why.subject,
                why.advice,
                command.joined()
            )
        }),
        // What a command built at run time, or nested too deep, runs is out of sight: the idle
        // timeout still ends it if it waits for input.
        Found::Dynamic(_) | Found::TooDeep => None,
    }
    })
}

/// What is interactive, and what to do instead.
pub(super) struct Why {
    subject: String,
    advice: String,
}

pub(super) fn why(subject: impl Into<String>, advice: impl Into<String>) -> Option<Why> {
    Some(Why {
        subject: subject.into(),
        advice: advice.into(),
    })
}

/// The rule for one command; `None` when it runs without a person.
fn check(c: &Invocation<'_>) -> Option<Why> {
    let name = c.name;
    match name {
        "vim" | "vi" | "nvim" | "view" | "vimdiff" => vim(c),
        "nano" | "pico" => (!asks_about_itself(c)).then(|| editor(c))?,
        "emacs" => (!(asks_about_itself(c) || c.args.iter().any(|a| emacs_batch(&a.text))))
            .then(|| editor(c))?,
        "vipe" => editor(c),
        "less" | "more" | "most" => (!asks_about_itself(c)).then(|| pager(name))?,
        "top" => (!(asks_about_itself(c) || has_flag(c, 'b'))).then(|| monitor(name))?,
        "htop" | "btop" | "atop" | "iotop" => (!asks_about_itself(c)).then(|| monitor(name))?,
        "watch" => (!asks_about_itself(c)).then(|| {
            why(
                "watch",
                "it redraws the screen forever. Run the command once, or a bounded loop: for i in 1 2 3; do date; sleep 1; done",
            )
        })?,
        "man" | "info" => manual(c),
        "ssh" => ssh(c),
        "ftp" | "telnet" if !c.stdin_fed => why(
            name,
            "it waits for commands typed at its prompt. Fetch files with curl (it speaks ftp:// too); test a port with nc -z HOST PORT or curl",
        ),
        "git" => git(c),
        "read" if !c.stdin_fed && !c.args.iter().any(|a| a.text.starts_with("-u")) => why(
            "read from the terminal",
            "the block's input is empty. Put the value in a variable in the script (name=value), or read from a file: read -r line < file",
        ),
        _ => repl(c),
    }
}

/// `--version`, `--help` and the like: the program prints and quits.
fn asks_about_itself(c: &Invocation<'_>) -> bool {
    c.args
        .iter()
        .any(|a| matches!(a.text.as_str(), "--version" | "-V" | "--help" | "-h"))
}

/// A single-dash option cluster holding `letter` (`-b`, `-bn1`).
fn has_flag(c: &Invocation<'_>, letter: char) -> bool {
    c.args.iter().any(|a| {
        a.text.starts_with('-') && !a.text.starts_with("--") && a.text[1..].contains(letter)
    })
}

fn emacs_batch(arg: &str) -> bool {
    matches!(arg, "--batch" | "-batch" | "--script" | "-script")
}

/// An editor, with where to write instead (the file it was given, if any).
fn editor(c: &Invocation<'_>) -> Option<Why> {
    let file = c
        .args
        .iter()
        .map(|a| a.text.as_str())
        .find(|a| !a.starts_with(['-', '+']))
        .filter(|a| is_plain_path(a))
        .unwrap_or("notes.txt");
    why(
        c.name,
        format!(
            "write the file with a ```bash block using cat <<'EOF' > {file} … EOF, or a ```python:{file} block (its code is saved to that file); change part of a file with sed -i or a python block"
        ),
    )
}

/// A path safe to repeat in advice (no spaces or shell characters).
fn is_plain_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 200
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/~".contains(c))
}

/// vim and friends: fine in Ex batch mode (`-es`), headless, or when the commands it is given
/// quit (`+wq`, `-c wq`).
fn vim(c: &Invocation<'_>) -> Option<Why> {
    let single = |letter: char| has_flag(c, letter);
    let batch = (single('e') || single('E')) && single('s');
    if asks_about_itself(c) || batch || c.has("--headless") {
        return None;
    }
    let mut commands = c.args.iter().enumerate().filter_map(|(i, a)| {
        if let Some(command) = a.text.strip_prefix('+') {
            Some(command)
        } else if a.text == "-c" || a.text == "--cmd" {
            c.args.get(i + 1).map(|next| next.text.as_str())
        } else {
            None
        }
    });
    if commands.any(quits_vim) {
        return None;
    }
    editor(c)
}

/// Whether an Ex command ends the editor (`wq`, `x!`, `%s/a/b/g | wq`).
fn quits_vim(command: &str) -> bool {
    let last = command.rsplit('|').next().unwrap_or(command).trim();
    let last = last.trim_end_matches('!');
    matches!(
        last,
        "q" | "qa" | "qall" | "quit" | "wq" | "wqa" | "wqall" | "x" | "xa" | "xall" | "exit" | "cq"
    )
}

fn pager(name: &str) -> Option<Why> {
    why(
        name,
        format!(
            "it is a pager, and a block's output is captured already. Drop `| {name}`, or show a part with head -n 50, tail -n 50 or grep"
        ),
    )
}

fn monitor(name: &str) -> Option<Why> {
    why(
        name,
        "it redraws the screen until someone quits it. Take one snapshot: top -b -n 1 | head -n 20, or ps aux --sort=-%cpu | head",
    )
}

/// `man`/`info` open a pager unless their output goes somewhere else.
fn manual(c: &Invocation<'_>) -> Option<Why> {
    let pager_set = c
        .assignments
        .iter()
        .any(|a| a.starts_with("PAGER=") || a.starts_with("MANPAGER="));
    let prints = c.args.iter().any(|a| {
        matches!(
            a.text.as_str(),
            "-k" | "-f" | "-w" | "-W" | "-K" | "-P" | "-o" | "--apropos" | "--whatis"
        ) || a.text.starts_with("--pager")
            || a.text.starts_with("--where")
            || a.text.starts_with("--output")
    });
    if c.stdout_captured || pager_set || prints || asks_about_itself(c) {
        return None;
    }
    why(
        c.name,
        format!(
            "it opens a pager. Print the page instead: {} … | cat, or the program's own --help",
            c.name
        ),
    )
}

/// `ssh host` with no remote command opens a login shell.
fn ssh(c: &Invocation<'_>) -> Option<Why> {
    const TAKES_VALUE: &str = "BbcDEeFIiJLlmOopQRSWw";
    let mut positional = 0;
    let mut args = c.args.iter();
    while let Some(arg) = args.next() {
        let text = arg.text.as_str();
        if let Some(cluster) = text.strip_prefix('-').filter(|s| !s.is_empty()) {
            if cluster.contains(['N', 'V', 'G', 'O', 'Q']) {
                return None;
            }
            // A value-taking letter ends the cluster; its value is the rest, or the next word.
            if let Some(at) = cluster.find(|l| TAKES_VALUE.contains(l))
                && at + 1 == cluster.len()
            {
                args.next();
            }
            continue;
        }
        positional += 1;
    }
    (positional == 1 && !c.stdin_fed).then_some(())?;
    why(
        "ssh without a remote command",
        "it opens a login shell that waits for typing. Give the command to run: ssh HOST 'command'",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interactive_programs_are_refused() {
        for script in [
            "vim x",
            "vi notes.txt",
            "nvim",
            "/usr/bin/vim x",
            "nano file",
            "emacs x",
            "emacs -nw x",
            "vipe",
            "less file",
            "more file",
            "most file",
            "cat log | less",
            "git log | less -R",
            "ls |& more",
            "top",
            "htop",
            "btop",
            "watch ls",
            "watch -n 1 df",
            "man ls",
            "info bash",
            "python",
            "python3",
            "python3.12",
            "python3 -u",
            "python3 -i script.py",
            "ipython",
            "node",
            "irb",
            "ghci",
            "ghci Main.hs",
            "sqlite3",
            "sqlite3 db.sqlite",
            "psql",
            "psql -U postgres mydb",
            "mysql",
            "mysql -u root",
            "ssh host",
            "ssh -p 2222 user@host",
            "ftp example.com",
            "telnet example.com 80",
            "git commit",
            "git commit -a",
            "git commit --amend",
            "git -C repo commit",
            "git rebase -i HEAD~3",
            "git add -p",
            "git add --patch file",
            "git tag -a v1",
            "read name",
            "read -p 'Name: ' name",
            "ls && vim x",
            "echo $(vim x)",
            "bash -c 'vim x'",
            "sudo vim /etc/hosts",
            "timeout 5 nano x",
            "env TERM=xterm vim x",
            "find . -name '*.txt' -exec vim {} \\;",
            "if true; then less x; fi",
            "(top)",
        ] {
            assert!(refused(script).is_some(), "not refused: {script}");
        }
    }

    #[test]
    fn what_only_looks_interactive_runs() {
        for script in [
            "echo vim",
            "echo less is more",
            // An option cluster with letters of more than one byte is read, not split mid-letter.
            "python3 -é script.py",
            "psql -ü -f x.sql",
            "node -→ app.js",
            "grep -r less .",
            "ls less",
            "vim --version",
            "vim -es -c 'wq' x",
            "vim -Es +'%s/a/b/g' +wq x",
            "vim -c 'wq' x",
            "vim +'%s/a/b/g | wq' x",
            "nvim --headless -c q",
            "emacs --batch -l x.el",
            "nano --version",
            "less --version",
            "top -b -n 1",
            "top -bn1 | head",
            "watch --version",
            "man ls | cat",
            "man -k printf",
            "man ls > ls.txt",
            "PAGER=cat man ls",
            "MANPAGER=cat man ls",
            "info bash | head",
            "python3 script.py",
            "python3 -c 'print(1)'",
            "python3 -uc 'print(1)'",
            "python3 -m http.server",
            "python3 -W ignore script.py",
            "python3 --version",
            "python3 -V",
            "python3 < script.py",
            "echo 'print(1)' | python3",
            "python3 - <<'EOF'\nprint(1)\nEOF",
            "python3 <<EOF\nprint(1)\nEOF",
            "node app.js",
            "node -e 'console.log(1)'",
            "node -p 1+1",
            "node --version",
            "irb --version",
            "ghci -e 'print 1' Main.hs",
            "sqlite3 db.sqlite 'select 1'",
            "sqlite3 db.sqlite < schema.sql",
            "sqlite3 -version",
            "psql -c 'select 1'",
            "psql -Atc 'select 1'",
            "psql -h localhost -U me -f x.sql",
            "mysql -e 'select 1'",
            "mysql -uroot -e 'select 1'",
            "mysql db < dump.sql",
            "ssh host ls",
            "ssh -p 2222 host 'uname -a'",
            "ssh -N -L 8080:localhost:80 host",
            "ssh -V",
            "ftp < commands.txt",
            "git commit -m 'msg'",
            "git commit -am 'msg'",
            "git commit --message=msg",
            "git commit -F msg.txt",
            "git commit --amend --no-edit",
            "git commit --fixup=HEAD",
            "GIT_EDITOR=true git commit",
            "git -c core.editor=true commit",
            "git rebase main",
            "GIT_SEQUENCE_EDITOR=: git rebase -i HEAD~2",
            "git add .",
            "git add -A",
            "git log",
            "git tag v1",
            "git tag -a v1 -m 'release'",
            "read -r line < file",
            "while read -r line; do echo \"$line\"; done < list.txt",
            "cat list | while read -r l; do echo \"$l\"; done",
            "read x <<< 'value'",
            "read -u 3 x",
            "cat <<'EOF' > notes.txt\nvim is nice\nless is more\nEOF",
            "# vim x\necho ok",
            "printf '%s\\n' 'man ls'",
            "$EDITOR x",
        ] {
            assert_eq!(refused(script), None, "wrongly refused: {script}");
        }
    }

    #[test]
    fn the_refusal_says_what_to_do_instead() {
        let vim = refused("vim notes.txt").expect("refused");
        assert!(
            vim.starts_with(
                "vim is interactive and cannot run here: write the file with a ```bash block using cat <<'EOF' > notes.txt"
            ),
            "{vim}"
        );
        assert!(vim.contains("```python:notes.txt block"), "{vim}");
        assert!(vim.contains("`vim notes.txt`"), "{vim}");
        let pager = refused("ls -l | less").expect("refused");
        assert!(pager.contains("Drop `| less`"), "{pager}");
        let repl = refused("python3").expect("refused");
        assert!(
            repl.starts_with("python3 with no script is interactive"),
            "{repl}"
        );
        let commit = refused("git commit").expect("refused");
        assert!(commit.contains("git commit -m 'message'"), "{commit}");
        // A name with shell characters is not repeated into the advice.
        let odd = refused("vim 'a b;c'").expect("refused");
        assert!(odd.contains("> notes.txt"), "{odd}");
    }
}
