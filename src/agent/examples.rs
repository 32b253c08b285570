//! The worked exchanges a small model sees before a coder task's conversation, as if they had
//! happened (`Adaptations::example_turns`): a 135M model imitates the turns it was just shown far
//! more than the rules of a system prompt, and copies the last one most of all: its command, its
//! file names, its shape.
//!
//! So the exchanges are: first one that teaches the round trip (a python loop → `[success]` and
//! its output → "Done: …", so a finished task is answered in words), then the one-line task of
//! a small bank nearest the user's task (`Adaptations::nearest_example`), with the file names the
//! user's task names put in place of the example's: the model copies the command, and a copied
//! file name is then the right one. With no bank entry near the task (or `nearest` off), the
//! last exchange is a neutral one that only reads (`show the file draft.txt` → `cat`).
//!
//! Owns the bank, the nearness rule and the file-name substitution. Pure text: it must not run
//! anything nor decide the round. None of these messages is kept in memory or shown.

use crate::llm::{Message, Role};

/// The round trip every small coder task is shown first.
const ROUND_TRIP: [(Role, &str); 4] = [
    (Role::User, "print the numbers 7 to 9 with python"),
    (
        Role::Assistant,
        "```python\nfor n in range(7, 10):\n    print(n)\n```",
    ),
    (
        Role::User,
        "[success] Execution success, code output:\n7\n8\n9",
    ),
    (Role::Assistant, "Done: it printed 7, 8 and 9."),
];

/// The last exchange when no bank entry is near the task. It only reads: with an
/// `echo … > file` example last, the model overwrote the file it was asked to show.
const NEUTRAL: (&str, &str) = (
    "show the file draft.txt with bash",
    "```bash\ncat draft.txt\n```",
);

/// One-line tasks people ask of a shell agent, each with the block that does it. Every file name
/// in a task appears in its block, so that the task's own names can be put in their place.
const BANK: &[(&str, &str)] = &[
    (
        "show the content of notes.txt",
        "```bash\ncat notes.txt\n```",
    ),
    (
        "print the first line of notes.txt",
        "```bash\nhead -n 1 notes.txt\n```",
    ),
    (
        "print the last line of notes.txt",
        "```bash\ntail -n 1 notes.txt\n```",
    ),
    (
        "count the lines in notes.txt",
        "```bash\nwc -l < notes.txt\n```",
    ),
    (
        "count the words in notes.txt",
        "```bash\nwc -w < notes.txt\n```",
    ),
    (
        "sort the lines of notes.txt and print them",
        "```bash\nsort notes.txt\n```",
    ),
    (
        "print the lines of notes.txt without duplicates",
        "```bash\nsort -u notes.txt\n```",
    ),
    (
        "find the lines with TODO in notes.txt",
        "```bash\ngrep TODO notes.txt\n```",
    ),
    (
        "replace red with blue in notes.txt and save it",
        "```bash\nsed -i 's/red/blue/g' notes.txt\n```",
    ),
    (
        "print notes.txt in upper case",
        "```bash\ntr 'a-z' 'A-Z' < notes.txt\n```",
    ),
    (
        "create notes.txt containing Good morning",
        "```bash\necho 'Good morning' > notes.txt\n```",
    ),
    (
        "write the numbers 4 to 6 into notes.txt, one per line",
        "```bash\nseq 4 6 > notes.txt\n```",
    ),
    (
        "add the line buy milk at the end of notes.txt",
        "```bash\necho 'buy milk' >> notes.txt\n```",
    ),
    (
        "create an empty file notes.txt",
        "```bash\ntouch notes.txt\n```",
    ),
    (
        "make a directory called docs",
        "```bash\nmkdir -p docs\n```",
    ),
    ("remove the file notes.txt", "```bash\nrm notes.txt\n```"),
    (
        "copy notes.txt to backup.txt",
        "```bash\ncp notes.txt backup.txt\n```",
    ),
    (
        "rename notes.txt to todo.md",
        "```bash\nmv notes.txt todo.md\n```",
    ),
    ("list the files here", "```bash\nls\n```"),
    ("count the files here", "```bash\nls | wc -l\n```"),
    ("print today's date", "```bash\ndate\n```"),
    (
        "print the result of 6 times 9 with python",
        "```python\nprint(6 * 9)\n```",
    ),
    (
        "compute 5 factorial in python",
        "```python\nimport math\nprint(math.factorial(5))\n```",
    ),
    (
        "print the word apple backwards with python",
        "```python\nprint('apple'[::-1])\n```",
    ),
    (
        "with python, count the letter s in the word mississippi",
        "```python\nprint('mississippi'.count('s'))\n```",
    ),
    (
        "write a C program that prints Hi",
        "```c\n#include <stdio.h>\n\nint main(void) {\n    printf(\"Hi\\n\");\n    return 0;\n}\n```",
    ),
    (
        "save a python script hello.py that prints hello",
        "```python:hello.py\nprint('hello')\n```",
    ),
    (
        "create settings.json with the key color set to red",
        "```bash\necho '{\"color\": \"red\"}' > settings.json\n```",
    ),
];

/// Words that say nothing of what a task is.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "into", "with", "and", "it", "its", "is", "that", "this",
    "by", "for", "on", "at", "as", "then", "using", "use", "please", "me", "file", "called",
    "named", "txt", "python", "bash", "shell", "c",
];

/// What each word of a bank task that the user's task lacks takes off its nearness.
const UNSHARED_COST: f64 = 0.05;

/// At least this much shared meaning (`nearness`) makes a bank entry the task's example.
const NEAR_ENOUGH: f64 = 0.5;

/// The exchanges for a coder task, in order, as messages.
pub fn example_turns(task: &str, nearest: bool) -> Vec<Message> {
    let (user, assistant) = nearest
        .then(|| nearest_example(task))
        .flatten()
        .unwrap_or_else(|| (NEUTRAL.0.to_owned(), NEUTRAL.1.to_owned()));
    ROUND_TRIP
        .iter()
        .map(|(role, text)| Message::new(*role, *text))
        .chain([
            Message::new(Role::User, user),
            Message::new(Role::Assistant, assistant),
        ])
        .collect()
}

/// The bank entry nearest `task`, its file names replaced by the task's when both name as many,
/// or `None` when none is near enough.
fn nearest_example(task: &str) -> Option<(String, String)> {
    let task_words = content_words(task);
    // Examples in the language the task names ("print hi with bash" is not near "write a C
    // program that prints Hi"), bash when it names none, as the opened fence is.
    let language = super::small::named_language(task).unwrap_or("bash");
    let (entry, score) = BANK
        .iter()
        .filter(|entry| block_tag(entry.1) == language)
        .map(|entry| (entry, nearness(&task_words, &content_words(entry.0))))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if score < NEAR_ENOUGH {
        return None;
    }
    let (mut user, mut assistant) = (entry.0.to_owned(), entry.1.to_owned());
    let theirs = file_names(task);
    let ours = file_names(entry.0);
    if !ours.is_empty() && theirs.len() == ours.len() {
        // Through placeholders, so that swapping two names cannot replace one twice.
        for (i, name) in ours.iter().enumerate() {
            let mark = format!("\u{0}{i}\u{0}");
            user = user.replace(name, &mark);
            assistant = assistant.replace(name, &mark);
        }
        for (i, name) in theirs.iter().enumerate() {
            let mark = format!("\u{0}{i}\u{0}");
            user = user.replace(&mark, name);
            assistant = assistant.replace(&mark, name);
        }
    }
    Some((user, assistant))
}

/// A bank block's fence tag (`python` of "```python:hello.py").
fn block_tag(block: &str) -> &str {
    let line = block.lines().next().unwrap_or_default();
    let tag = line.trim_start_matches('`');
    tag.split(':').next().unwrap_or_default()
}

/// How much two tasks' words share: each shared word counts by how rare it is in the bank, so
/// that `first` and `line` say more than `print`; each word of the entry the task lacks costs a
/// little, so that of two entries sharing as much the one saying less else wins.
fn nearness(task: &[String], entry: &[String]) -> f64 {
    let (shared, unshared): (Vec<&String>, Vec<&String>) =
        entry.iter().partition(|word| task.contains(word));
    let weight: f64 = shared
        .iter()
        .map(|word| 1.0 / bank_frequency(word) as f64)
        .sum();
    weight - UNSHARED_COST * unshared.len() as f64
}

/// In how many bank tasks `word` appears (at least 1).
fn bank_frequency(word: &str) -> usize {
    BANK.iter()
        .filter(|entry| content_words(entry.0).iter().any(|w| w == word))
        .count()
        .max(1)
}

/// A task's words that carry meaning, lower case, a plural's `s` dropped. Left out: file names
/// (they are substituted, not matched), numbers (data, not what is done: "1 to 5" is not near
/// "5 factorial") and language names (the language is chosen before, `nearest_example`).
fn content_words(task: &str) -> Vec<String> {
    let names = file_names(task);
    task.split_whitespace()
        .filter(|word| !names.iter().any(|name| word.contains(name.as_str())))
        .flat_map(|word| word.split(|c: char| !c.is_ascii_alphanumeric()))
        .map(str::to_ascii_lowercase)
        .filter(|word| {
            !word.is_empty()
                && !word.chars().all(|c| c.is_ascii_digit())
                && !STOP_WORDS.contains(&word.as_str())
        })
        .map(|word| match word.strip_suffix('s') {
            Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_owned(),
            _ => word,
        })
        .collect()
}

/// The file names a text names, in order: `name.ext` with an extension of one to five
/// letters or digits, a letter first (`poem.txt`, `greet.py`, not `3.5`), each once.
fn file_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let word = word.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        let Some((stem, ext)) = word.rsplit_once('.') else {
            continue;
        };
        let stem_ok = !stem.is_empty()
            && stem
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        let ext_ok = (1..=5).contains(&ext.len())
            && ext.starts_with(|c: char| c.is_ascii_alphabetic())
            && ext.chars().all(|c| c.is_ascii_alphanumeric());
        if stem_ok && ext_ok && !names.iter().any(|n| n == word) {
            names.push(word.to_owned());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolTags, parse};

    fn last_exchange(task: &str) -> (String, String) {
        let turns = example_turns(task, true);
        let n = turns.len();
        (turns[n - 2].content.clone(), turns[n - 1].content.clone())
    }

    #[test]
    fn the_exchanges_alternate_and_every_block_parses() {
        let tags = ToolTags::new(["bash", "python", "c"]);
        let round_trip = example_turns("anything", false);
        assert_eq!(round_trip.len(), 6);
        for (i, turn) in round_trip.iter().enumerate() {
            let expected = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            assert_eq!(turn.role, expected, "turn {i}");
        }
        for (task, block) in BANK.iter().chain([&NEUTRAL]) {
            let parsed = parse(block, &tags);
            assert_eq!(parsed.blocks.len(), 1, "{task}: {block}");
            for name in file_names(task) {
                assert!(block.contains(&name), "{task}: its block names {name}");
            }
        }
    }

    #[test]
    fn the_nearest_entry_is_chosen_with_the_task_s_file_names() {
        assert_eq!(
            last_exchange("print the last line of poem.txt"),
            (
                "print the last line of poem.txt".to_owned(),
                "```bash\ntail -n 1 poem.txt\n```".to_owned()
            )
        );
        let (_, block) = last_exchange("copy a.txt to b.txt with bash");
        assert_eq!(block, "```bash\ncp a.txt b.txt\n```");
        let (_, block) = last_exchange("rename b.txt to a.txt");
        assert_eq!(block, "```bash\nmv b.txt a.txt\n```", "names swap cleanly");
        let (_, block) = last_exchange("write a C program that prints 6 times 7");
        assert!(block.starts_with("```c\n"), "{block}");
        let (_, block) = last_exchange("print 6 times 7 with python");
        assert_eq!(block, "```python\nprint(6 * 9)\n```");
        let (_, block) = last_exchange("count the words in essay.txt");
        assert_eq!(
            block, "```bash\nwc -w < essay.txt\n```",
            "of two entries sharing `count` and `word`, the one saying less else"
        );
    }

    #[test]
    fn a_task_near_no_entry_gets_the_neutral_exchange() {
        let neutral = (NEUTRAL.0.to_owned(), NEUTRAL.1.to_owned());
        assert_eq!(last_exchange("explain monads to me"), neutral);
        assert_eq!(
            last_exchange("print hi with bash"),
            neutral,
            "only examples in the language the task names: the C one prints Hi"
        );
        let (_, block) = last_exchange("create greeting.txt with the text hi");
        assert!(
            block.starts_with("```bash\n"),
            "a task naming no language is shown bash, as its fence opens, not the C `Hi`: {block}"
        );
        assert_eq!(
            last_exchange("print the numbers 1 to 5 with python"),
            neutral,
            "numbers are not what a task does: not near `compute 5 factorial`"
        );
        let turns = example_turns("print the last line of poem.txt", false);
        assert_eq!(
            turns[5].content, NEUTRAL.1,
            "nearest off: the fixed exchanges"
        );
    }

    #[test]
    fn the_fixed_exchanges_never_write() {
        for (_, text) in ROUND_TRIP.iter().chain([&(Role::User, NEUTRAL.1)]) {
            for verb in ["rm ", "mv ", "> ", "open("] {
                assert!(!text.contains(verb), "{verb} in {text}");
            }
        }
    }

    #[test]
    fn file_names_are_found_in_order_and_once() {
        assert_eq!(
            file_names("copy a.txt to b.txt, then cat a.txt."),
            ["a.txt", "b.txt"]
        );
        assert_eq!(file_names("save greet.py"), ["greet.py"]);
        assert!(file_names("it costs 3.5 dollars... e.g. this").len() <= 1);
        assert!(file_names("no names here").is_empty());
    }
}
