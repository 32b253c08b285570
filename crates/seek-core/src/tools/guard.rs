//! Safe mode's blocklist (AgenticSeek's `safe_mode`), done properly: the shell text is parsed
//! and every command that would run is checked — each element of a pipeline or list, subshells
//! and groups, command and process substitutions (also inside double quotes), `bash -c`/`sh -c`
//! strings, `eval`, wrappers such as `sudo`, `env`, `xargs`, `timeout` or `exec`, and
//! `find -exec`. A command word the shell would build at run time (`$cmd`) cannot be checked
//! and is refused.
//!
//! A guard rail against a model's mistakes, not a sandbox: code in other languages, a script
//! file written first and run later, or an alias are out of its sight. Pure; the shell text is
//! read by `shell`, and this file owns only the list and the refusal's words.

use super::shell::{Found, Invocation, Word, walk};

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

/// Why `script` is refused: the first blocked command found, as written.
pub fn refused(script: &str) -> Option<String> {
    walk(script, &mut |found| match found {
        Found::Command(command) => is_blocked(command).then(|| command.joined()),
        Found::Dynamic(text) => Some(format!(
            "{text} (a command built at run time cannot be checked)"
        )),
        Found::TooDeep => Some("commands nested too deeply to check".into()),
    })
}

/// Whether `command` is one safe mode refuses by itself.
fn is_blocked(command: &Invocation<'_>) -> bool {
    let name = command.name;
    BLOCKED.contains(&name)
        || name.starts_with("mkfs.")
        || (name == "git" && is_destructive_git(&command.args))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agenticseek_bypasses_are_caught() {
        for script in [
            "bash -c \"rm -rf x\"",
            "sh -c 'rm -rf x'",
            // Long options before `-c` are not the script.
            "bash --norc -c 'rm -rf x'",
            "bash --rcfile /dev/null -c 'rm -rf x'",
            "bash -c -x 'rm -rf x'",
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
            "watch -d rm x",
            "cat <<EOF\n$(rm x)\nEOF",
            "cat <<EOF > out.txt\nok\nEOF\nrm x",
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
            "cat <<'EOF' > notes.txt\nrm -rf / is what not to run\nEOF",
            "cat <<EOF\nrm is listed here\nEOF",
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
