//! REPLs started with nothing to run (python, node, irb, ghci, sqlite3, psql, mysql): each
//! program's options that run code, name a script or print and quit, and the operands it takes
//! that are not a script. Pure.

use super::{Why, why};
use crate::tools::shell::Invocation;

/// How a REPL is started without a script, and what runs one.
struct Repl {
    /// Options that run code, print and quit, or name a script (the program is not bare).
    runs: &'static [&'static str],
    /// Single-letter options that do the same inside a cluster (`-uc`).
    runs_letters: &'static str,
    /// Options whose value is the next word.
    takes_value: &'static [&'static str],
    /// Options that force the prompt even with a script.
    forces_prompt: &'static [&'static str],
    /// How many operands it takes that are not a script (sqlite3's database, psql's dbname).
    operands: usize,
    advice: &'static str,
}

fn repl_of(name: &str) -> Option<Repl> {
    let python = name == "ipython"
        || name
            .strip_prefix("python")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    Some(match name {
        _ if python => Repl {
            runs: &["--version", "--help", "-"],
            runs_letters: "cmVh?",
            takes_value: &["-W", "-X"],
            forces_prompt: &["-i"],
            operands: 0,
            advice: "put the code in a ```python block, or run python3 -c 'code' or python3 script.py",
        },
        "node" | "nodejs" => Repl {
            runs: &[
                "--eval",
                "--print",
                "--check",
                "--version",
                "--help",
                "--test",
                "--run",
            ],
            runs_letters: "epcvh",
            takes_value: &[
                "-r",
                "--require",
                "--import",
                "--loader",
                "--experimental-loader",
            ],
            forces_prompt: &["-i", "--interactive"],
            operands: 0,
            advice: "run node -e 'code', or write a file and run node file.js",
        },
        "irb" => Repl {
            runs: &["--version", "--help"],
            runs_letters: "vh",
            takes_value: &["-r", "-I"],
            forces_prompt: &[],
            operands: 0,
            advice: "run ruby -e 'code', or write a file and run ruby file.rb",
        },
        "ghci" => Repl {
            runs: &["--version", "--help", "--numeric-version", "--info"],
            runs_letters: "e",
            takes_value: &[],
            forces_prompt: &[],
            operands: usize::MAX,
            advice: "run ghc -e 'expression' file.hs, or runghc file.hs",
        },
        "sqlite3" => Repl {
            runs: &["-version", "--version", "-help", "--help"],
            runs_letters: "",
            takes_value: &[
                "-cmd",
                "--cmd",
                "-separator",
                "-newline",
                "-nullvalue",
                "-init",
                "-vfs",
                "-mmap",
            ],
            forces_prompt: &["-interactive", "--interactive"],
            operands: 1,
            advice: "give the SQL on the command line: sqlite3 db.sqlite 'SELECT …;'",
        },
        "psql" => Repl {
            runs: &["--command", "--file", "--list", "--version", "--help"],
            runs_letters: "cflV?",
            takes_value: &[
                "-d", "-h", "-p", "-U", "-v", "-P", "-T", "-o", "-L", "-F", "-R",
            ],
            forces_prompt: &[],
            operands: usize::MAX,
            advice: "give the SQL on the command line: psql -c 'SELECT …;' (or -f file.sql)",
        },
        "mysql" | "mariadb" => Repl {
            runs: &["--execute", "--version", "--help"],
            runs_letters: "eV?",
            takes_value: &["-u", "-h", "-P", "-D", "-S"],
            forces_prompt: &[],
            operands: usize::MAX,
            advice: "give the SQL on the command line: mysql -e 'SELECT …;'",
        },
        _ => return None,
    })
}

/// A REPL started with nothing to run: no script, no code option, no input.
pub(super) fn repl(c: &Invocation<'_>) -> Option<Why> {
    let spec = repl_of(c.name)?;
    if c.stdin_fed {
        return None;
    }
    let mut operands = 0usize;
    let mut forced = false;
    let mut args = c.args.iter();
    while let Some(arg) = args.next() {
        let text = arg.text.as_str();
        let option = text.split('=').next().unwrap_or(text);
        if spec.runs.contains(&option) {
            return None;
        }
        if spec.forces_prompt.contains(&option) {
            forced = true;
            continue;
        }
        if spec.takes_value.contains(&option) {
            args.next();
            continue;
        }
        if let Some(cluster) = text.strip_prefix('-').filter(|s| !s.starts_with('-')) {
            // A cluster runs code if a letter that does comes before any value-taking one.
            let value_at = cluster
                .char_indices()
                .find(|&(i, letter)| {
                    // `text` is `-` then the cluster: the option so far ends after `letter`.
                    text.get(..1 + i + letter.len_utf8())
                        .is_some_and(|option| spec.takes_value.contains(&option))
                })
                .map_or(cluster.len(), |(i, _)| i);
            if cluster[..value_at].contains(|l| spec.runs_letters.contains(l)) {
                return None;
            }
            continue;
        }
        if !text.starts_with('-') {
            operands += 1;
        }
    }
    let bare = operands <= spec.operands;
    (bare || forced).then_some(())?;
    why(
        format!("{} with no script", c.name),
        format!("it starts an interactive prompt. Instead, {}", spec.advice),
    )
}
