//! `git` commands that wait for a person: an editor for a commit's or tag's message or for an
//! interactive rebase's list, and the commands that ask about each change (`add -p`, …). Setting
//! the editor (`GIT_EDITOR=…`, `-c core.editor=…`) or giving the message makes them fine. Pure.

use super::{Why, why};
use crate::tools::shell::{Invocation, Word};

/// `git` commands that open an editor or ask about each change.
pub(super) fn git(c: &Invocation<'_>) -> Option<Why> {
    let editor_set = |names: &[&str], config: &[&str]| {
        c.assignments
            .iter()
            .any(|a| names.iter().any(|n| a.starts_with(&format!("{n}="))))
            || c.args.iter().any(|a| {
                config
                    .iter()
                    .any(|key| a.text.to_ascii_lowercase().starts_with(&format!("{key}=")))
            })
    };
    let message_editor = editor_set(&["GIT_EDITOR", "EDITOR", "VISUAL"], &["core.editor"]);
    let sequence_editor = editor_set(&["GIT_SEQUENCE_EDITOR"], &["sequence.editor"]);
    let (sub, rest) = git_subcommand(&c.args)?;
    let has = |options: &[&str]| rest.iter().any(|a| options.contains(&a.as_str()));
    let cluster_has = |letters: &[char]| {
        rest.iter()
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(letters))
    };
    let gives_message = || {
        cluster_has(&['m', 'F', 'C'])
            || rest.iter().any(|a| {
                [
                    "--message",
                    "--file",
                    "--reuse-message",
                    "--fixup",
                    "--no-edit",
                ]
                .iter()
                .any(|o| a == o || a.starts_with(&format!("{o}=")))
                    || a == "--dry-run"
            })
    };
    let patch = match sub {
        "add" => has(&["-p", "--patch", "-i", "--interactive", "-e", "--edit"]),
        "checkout" | "reset" | "restore" | "stash" | "commit" => {
            has(&["-p", "--patch", "--interactive"])
        }
        "clean" => has(&["-i", "--interactive"]),
        _ => false,
    };
    if patch {
        return why(
            format!("git {sub} asking about each change"),
            "it waits for an answer per change. Name the files instead (git add FILE), or write the change with a block first",
        );
    }
    let opens_editor = match sub {
        "commit" => !gives_message() && !message_editor,
        "tag" => cluster_has(&['a', 's', 'u']) && !gives_message() && !message_editor,
        "rebase" => has(&["-i", "--interactive"]) && !sequence_editor,
        _ => false,
    };
    if !opens_editor {
        return None;
    }
    let advice = if sub == "rebase" {
        "it opens an editor for the list of commits. Rebase without -i, or set GIT_SEQUENCE_EDITOR to a command that edits the list (such as sed -i …)"
    } else {
        "it opens an editor for the message. Give it on the command line: git commit -m 'message' (or --no-edit to keep the current one)"
    };
    why(format!("git {sub} without a message"), advice)
}

/// git's subcommand after its global options, and the words after it.
fn git_subcommand<'a>(args: &[&'a Word]) -> Option<(&'a str, Vec<String>)> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let text = arg.text.as_str();
        match text {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env" => i += 2,
            _ if text.starts_with('-') => i += 1,
            _ => {
                let rest = args[i + 1..].iter().map(|a| a.text.clone()).collect();
                return Some((text, rest));
            }
        }
    }
    None
}
