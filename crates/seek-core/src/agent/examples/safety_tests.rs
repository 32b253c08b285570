//! Tests of the examples over many tasks at once: a small model copies the example it is shown,
//! so no task may be shown one that does more than it asks (deletes, moves, edits in place,
//! writes onto a file it names) or picks the opposite lines; and every bank entry must do what
//! its own task says. Test code only: it must not hold what the examples are.

use super::intent::{self, Effect, Polarity};
use super::*;

fn shown(task: &str) -> Option<String> {
    nearest_example(task, true).map(|(_, block)| block)
}

/// Tasks that only read, count or search, written for this test: verbs × objects × places ×
/// phrasings.
fn harmless_tasks() -> Vec<String> {
    let verbs = [
        "count",
        "show",
        "list",
        "print",
        "find",
        "search for",
        "how many are",
        "display",
        "tell me",
        "what are",
        "give me",
        "output",
        "check",
    ];
    let objects = [
        "the lines",
        "the words",
        "the files",
        "the .txt files",
        "the .md files",
        "the .log files",
        "the numbers",
        "the even numbers from 2 to 20",
        "the total number of lines",
        "the characters",
        "the sum of the numbers",
        "the last 4 lines",
        "the names of the .py files",
    ];
    let places = [
        "",
        " in notes.txt",
        " in all the .txt files here",
        " here",
        " in this directory",
        " of report.md",
        " in server.log that contain WARNING",
    ];
    let phrasings = [
        "{}",
        "please {}",
        "can you {}?",
        "{} with bash",
        "I want to {}",
    ];
    let mut tasks = reading_what_the_bank_changes(&verbs);
    for verb in verbs {
        for object in objects {
            for place in places {
                for phrasing in phrasings {
                    tasks.push(phrasing.replace("{}", &format!("{verb} {object}{place}")));
                }
            }
        }
    }
    tasks
}

/// The tasks of the bank's entries that write, move or delete with their verbs of effect
/// dropped and a reading verb put first (`remove every .tmp file here` → `count every .tmp file
/// here`): the nearest a harmless task can come to a harmful entry.
fn reading_what_the_bank_changes(verbs: &[&str]) -> Vec<String> {
    let mut tasks = Vec::new();
    for (task, block) in BANK {
        if intent::of_block(block).effect == Effect::Read {
            continue;
        }
        let kept: Vec<&str> = task
            .split_whitespace()
            .filter(|word| intent::of_task(word).effect == Effect::Read)
            .collect();
        for verb in verbs {
            let reading = format!("{verb} {}", kept.join(" "));
            if intent::of_task(&reading).effect == Effect::Read {
                tasks.push(reading);
            }
        }
    }
    tasks
}

#[test]
fn no_harmless_task_is_shown_a_block_that_writes_moves_or_deletes() {
    let tasks = harmless_tasks();
    assert!(tasks.len() > 500, "{}", tasks.len());
    let mut with_example = 0;
    for task in &tasks {
        assert_eq!(intent::of_task(task).effect, Effect::Read, "{task}");
        let Some(block) = shown(task) else {
            continue;
        };
        with_example += 1;
        let done = intent::of_block(&block);
        assert_eq!(done.effect, Effect::Read, "{task}: {block}");
        assert!(done.targets.is_empty(), "{task}: {block}");
        for word in ["rm ", "mv ", ">", "sed -i", "truncate", "open("] {
            assert!(!block.contains(word), "{task}: {block}");
        }
    }
    assert!(with_example > 0, "the test must see some examples");
}

/// Pairs of tasks that ask for opposite lines: (plain, negated), with a file and a word.
fn opposite_pairs() -> Vec<(String, String)> {
    let pairs = [
        (
            "show the lines of {f} that contain {w}",
            "show the lines of {f} that do not contain {w}",
        ),
        (
            "print only the lines in {f} with {w}",
            "print only the lines in {f} without {w}",
        ),
        (
            "which lines of {f} mention {w}",
            "which lines of {f} don't mention {w}",
        ),
        (
            "count the lines of {f} that contain {w}",
            "count the lines of {f} that don't contain {w}",
        ),
        (
            "find the lines containing {w} in {f}",
            "find the lines not containing {w} in {f}",
        ),
        (
            "print every line of {f} that has {w}",
            "print every line of {f} except those with {w}",
        ),
        (
            "how many lines of {f} contain {w}",
            "how many lines of {f} do not contain {w}",
        ),
        (
            "show the lines of {f} including {w}",
            "show the lines of {f} excluding {w}",
        ),
    ];
    let mut tasks = Vec::new();
    for file in ["notes.txt", "server.log", "list.txt", "app.log"] {
        for word in ["ERROR", "apple", "skip", "WARNING"] {
            for (plain, negated) in pairs {
                let fill = |t: &str| t.replace("{f}", file).replace("{w}", word);
                tasks.push((fill(plain), fill(negated)));
            }
        }
    }
    tasks
}

#[test]
fn tasks_for_lines_that_do_and_do_not_match_are_never_swapped() {
    let mut seen = (0, 0);
    for (plain, negated) in opposite_pairs() {
        assert_eq!(intent::of_task(&plain).polarity, Polarity::Plain, "{plain}");
        assert_eq!(
            intent::of_task(&negated).polarity,
            Polarity::Negated,
            "{negated}"
        );
        if let Some(block) = shown(&plain) {
            seen.0 += 1;
            assert_eq!(
                intent::of_block(&block).polarity,
                Polarity::Plain,
                "{plain}: {block}"
            );
            assert!(!block.contains("-v"), "{plain}: {block}");
        }
        if let Some(block) = shown(&negated) {
            seen.1 += 1;
            assert_eq!(
                intent::of_block(&block).polarity,
                Polarity::Negated,
                "{negated}: {block}"
            );
        }
    }
    assert!(
        seen.0 > 0 && seen.1 > 0,
        "both kinds shown examples: {seen:?}"
    );
}

#[test]
fn every_bank_entry_does_what_its_own_task_says() {
    for (task, block) in BANK {
        let asked = intent::of_task(task);
        let done = intent::of_block(block);
        assert_eq!(asked.effect, done.effect, "{task}: {block}");
        assert_eq!(asked.polarity, done.polarity, "{task}: {block}");
        assert_eq!(intent::refusal(&asked, &done), None, "{task}: {block}");
    }
}

#[test]
fn the_review_s_cases_get_a_safe_example_or_none() {
    let block = shown("count the total number of lines in all the .txt files here");
    assert!(
        block.as_ref().is_none_or(|b| !b.contains("rm ")),
        "{block:?}"
    );
    let block = shown("how many words are there in all the .md files");
    assert!(
        block.as_ref().is_none_or(|b| !b.contains("rm ")),
        "{block:?}"
    );
    let block = shown("show only the lines of server.log that contain WARNING");
    assert_eq!(
        block.as_deref(),
        Some("```bash\ngrep WARNING server.log\n```"),
        "the lines that contain it, not `grep -v`"
    );
    let block = shown("print the even numbers from 2 to 20");
    assert!(block.as_ref().is_none_or(|b| !b.contains('>')), "{block:?}");
    for task in [
        "print the current year",
        "print the current year with the date command",
        "show the current year",
    ] {
        let block = shown(task);
        assert!(
            block.as_ref().is_none_or(|b| !b.contains("pwd")),
            "{task}: {block:?}"
        );
    }
    for task in [
        "how many CPU cores does this machine have",
        "count the CPU cores",
    ] {
        let block = shown(task);
        assert!(
            block.as_ref().is_none_or(|b| !b.contains("ls")),
            "{task}: {block:?}"
        );
    }
}

#[test]
fn a_task_that_asks_to_delete_or_write_still_gets_its_example() {
    assert_eq!(
        shown("delete the file junk.tmp").as_deref(),
        Some("```bash\nrm junk.tmp\n```")
    );
    assert_eq!(
        shown("remove every .tmp file here").as_deref(),
        Some("```bash\nrm -f *.tmp\n```")
    );
    assert_eq!(
        shown("append done to todo.txt as a new line").as_deref(),
        Some("```bash\necho 'done' >> todo.txt\n```")
    );
    let block = shown("copy a.txt to b.txt");
    assert_eq!(block.as_deref(), Some("```bash\ncp a.txt b.txt\n```"));
}

/// The prompts of every task set in `benches/smallmodel/` (blind ones included: this reads only
/// their prompts, to check what they would be shown; it shapes nothing).
fn every_benchmark_prompt() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/smallmodel");
    let mut prompts = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let set: toml::Value = toml::from_str(&text).unwrap();
        for task in set["task"].as_array().unwrap() {
            let name = task["name"].as_str().unwrap().to_string();
            prompts.push((name, task["prompt"].as_str().unwrap().to_string()));
        }
    }
    prompts
}

/// Whether a block deletes, moves, truncates or edits in place, read from its code with plain
/// string tests (not the classifier under test).
fn destroys(block: &str) -> bool {
    let code = format!(" {}", block.replace('\n', " "));
    [
        " rm ",
        " mv ",
        "sed -i",
        "truncate",
        "unlink",
        "os.remove",
        "shutil.move",
        "shutil.rmtree",
        "os.rename",
        "remove(",
    ]
    .iter()
    .any(|word| code.contains(word))
}

/// Whether a block writes onto a file the task names (`> notes.txt`, `open("notes.txt", "w")`).
fn writes_onto_named_file(task: &str, block: &str) -> bool {
    let named: Vec<&str> = task
        .split(|c: char| c.is_whitespace() || c == ',' || c == '\'' || c == '"' || c == '`')
        .map(|word| word.trim_end_matches(['.', '?', '!', ':', ';']))
        .filter(|word| word.contains('.') && !word.starts_with('.'))
        .collect();
    named.iter().any(|file| {
        block.contains(&format!("> {file}"))
            || block.contains(&format!(">{file}"))
            || block.contains(&format!("open('{file}', 'w"))
            || block.contains(&format!("open(\"{file}\", \"w"))
    })
}

#[test]
fn no_task_of_any_benchmark_set_is_shown_a_destructive_or_opposite_example() {
    let prompts = every_benchmark_prompt();
    assert!(prompts.len() > 150, "{}", prompts.len());
    let mut shown_count = 0;
    for (name, prompt) in &prompts {
        let Some(block) = shown(prompt) else {
            continue;
        };
        shown_count += 1;
        let lower = prompt.to_lowercase();
        let asks_to_destroy = [
            "delete", "remove", "move", "rename", "erase", "clear", "empty", "truncate", "replace",
            "edit", "change", "rm ",
        ]
        .iter()
        .any(|word| lower.contains(word));
        assert!(
            asks_to_destroy || !destroys(&block),
            "{name}: {prompt}: {block}"
        );
        let asks_to_write = asks_to_destroy
            || [
                "write",
                "save",
                "create",
                "make",
                "overwrite",
                "append",
                "add",
                "put",
                "store",
                "copy",
                "sort",
                "into",
                "to a file",
            ]
            .iter()
            .any(|word| lower.contains(word));
        assert!(
            asks_to_write || !writes_onto_named_file(prompt, &block),
            "{name}: {prompt}: {block}"
        );
        let asked = intent::of_task(prompt);
        let done = intent::of_block(&block);
        assert_eq!(
            intent::refusal(&asked, &done),
            None,
            "{name}: {prompt}: {block}"
        );
        if lower.contains("not contain") || lower.contains("don't contain") {
            assert_eq!(
                done.polarity,
                Polarity::Negated,
                "{name}: {prompt}: {block}"
            );
        }
    }
    assert!(shown_count > 0, "the test must see some examples");
    eprintln!(
        "{shown_count} of {} benchmark prompts were shown an example; none destructive",
        prompts.len()
    );
}
