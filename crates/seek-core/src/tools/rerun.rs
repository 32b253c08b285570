//! AgenticSeek's "don't run code through bash" rule, done right.
//!
//! A bash block whose every command only runs a file that a `:path` block of the same reply saved
//! (and that seek therefore already ran), such as `python hello.py` after ```` ```python:hello.py ````,
//! is skipped, and the feedback says so. Anything else runs. Owns only that decision.

use std::path::Path;

/// Programs that run or build a source file given as an argument.
const RUNNERS: &[&str] = &[
    "python", "python3", "py", "bash", "sh", "gcc", "cc", "g++", "clang", "go", "javac", "java",
];

/// If every command of `script` re-runs a file saved earlier in this reply, the commands that do.
pub(crate) fn only_reruns(script: &str, saved: &[String]) -> Option<Vec<String>> {
    if saved.is_empty() {
        return None;
    }
    let saved: Vec<&str> = saved.iter().map(|s| normalise(s)).collect();
    let mut reruns = Vec::new();
    for line in script.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        for command in line.split("&&").flat_map(|c| c.split(';')) {
            let words: Vec<&str> = command.split_whitespace().collect();
            let Some(&program) = words.first() else {
                continue;
            };
            if program == "cd" {
                continue;
            }
            if !runs_saved_file(program, &words[1..], &saved) {
                return None;
            }
            reruns.push(command.trim().to_owned());
        }
    }
    (!reruns.is_empty()).then_some(reruns)
}

fn runs_saved_file(program: &str, args: &[&str], saved: &[&str]) -> bool {
    let base = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    if RUNNERS.contains(&base) {
        // `java Hello` runs Hello.java's class; the others name the file.
        return args.iter().any(|a| {
            saved.contains(&normalise(a)) || (base == "java" && saved.iter().any(|s| stem(s) == *a))
        });
    }
    // `./hello` runs the binary built from hello.c or hello.go.
    program.starts_with("./")
        && args.is_empty()
        && saved.iter().any(|s| stem(s) == normalise(program))
}

fn normalise(path: &str) -> &str {
    path.trim().trim_start_matches("./")
}

fn stem(path: &str) -> &str {
    path.rsplit_once('.').map_or(path, |(stem, _)| stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(paths: &[&str]) -> Vec<String> {
        paths.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn reruns_of_saved_files_are_found() {
        let s = saved(&["hello.py", "main.c", "Hello.java", "app.go"]);
        for script in [
            "python hello.py",
            "python3 ./hello.py\n",
            "# run it\ncd /work && python3 hello.py",
            "gcc main.c -o main && ./main",
            "javac Hello.java && java Hello",
            "go run app.go",
        ] {
            assert!(only_reruns(script, &s).is_some(), "{script}");
        }
    }

    #[test]
    fn anything_else_runs() {
        let s = saved(&["hello.py"]);
        for script in [
            "python other.py",
            "pip install requests && python hello.py",
            "echo good",
            "ls -la",
            "python -m pytest",
        ] {
            assert_eq!(only_reruns(script, &s), None, "{script}");
        }
        assert_eq!(
            only_reruns("python hello.py", &[]),
            None,
            "nothing saved in this reply"
        );
    }
}
