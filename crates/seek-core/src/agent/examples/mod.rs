//! The worked exchanges a small model sees before a coder task's conversation, as if they had
//! happened (`Adaptations::example_turns`): a 135M model imitates the turns it was just shown far
//! more than the rules of a system prompt, and copies the last one most of all: its command, its
//! file names, its shape.
//!
//! So the exchanges are: first one that teaches the round trip (a python loop → `[success]` and
//! its output → "Done: …", so a finished task is answered in words), then the one-line task of
//! a bank (`bank`) nearest the user's task (`Adaptations::nearest_example`), with the values the
//! user's task names (file names, extensions, numbers, lists, ordinals) and the words it differs
//! in put in place of the example's (`fill`): the model copies the command, and what it copies is
//! then about its own task. An entry is the example only if it does what the task asks and no
//! more (`intent`): a block that deletes, moves, edits or writes more than the task asks, or
//! picks the opposite lines, is never shown. With no bank entry near the task and safe (or
//! `nearest` off), the last exchange is a neutral one that only reads (`show the file
//! draft.txt` → `cat`).
//!
//! Owns the exchanges and the nearness rule. Pure text: it must not run anything nor decide the
//! round. None of these messages is kept in memory or shown.

mod bank;
mod fill;
mod intent;
#[cfg(test)]
mod safety_tests;

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::llm::{Message, Role};
use bank::BANK;
use fill::{file_names, value_counts};

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

/// Words that say nothing of what a task is.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "into", "with", "and", "it", "its", "is", "that", "this",
    "by", "for", "on", "at", "as", "then", "using", "use", "please", "me", "file", "called",
    "named", "txt", "python", "bash", "shell", "c", "over", "up", "as", "by", "from", "so",
    "those", "how",
];

/// What each word of a bank task that the user's task lacks takes off its nearness.
const UNSHARED_COST: f64 = 0.05;

/// What each kind of value named alike (or named by the entry alone) adds (takes off).
const SAME_SHAPE: f64 = 0.1;

/// At least this share of a task's meaning (`nearness`) makes a bank entry its example.
const NEAR_ENOUGH: f64 = 0.5;

/// A task longer than this (in bytes) is no one-line task: no bank entry is near it.
const LONGEST_TASK: usize = 2000;

/// Shared words weighing less than this say too little (`print` alone weighs about 0.6).
const LEAST_SHARED: f64 = 1.0;

/// Words that mean what a bank entry's word means, as tasks write them (after a plural's `s`
/// is dropped).
const SYNONYMS: &[(&str, &str)] = &[
    ("show", "print"),
    ("display", "print"),
    ("output", "print"),
    ("compute", "print"),
    ("calculate", "print"),
    ("delete", "remove"),
    ("erase", "remove"),
    ("make", "create"),
    ("folder", "directory"),
    ("dir", "directory"),
    ("append", "add"),
    ("unique", "duplicate"),
    ("distinct", "duplicate"),
    ("reversed", "backward"),
    ("product", "time"),
    ("multiplied", "time"),
    ("plus", "sum"),
    ("character", "byte"),
    ("result", "print"),
    ("containing", "contain"),
    ("printed", "print"),
    ("printing", "print"),
    ("including", "contain"),
    ("include", "contain"),
];

/// Phrases a task may write for a bank entry's words, rewritten before its words are read.
const PHRASES: &[(&str, &str)] = &[
    ("in the current directory", "here"),
    ("in this directory", "here"),
    ("in the current folder", "here"),
    ("in this folder", "here"),
    ("how many", "count"),
    ("with the text", "containing"),
    ("with the line", "containing"),
    ("with the content", "containing"),
    ("capital letters", "upper case"),
    ("uppercase", "upper case"),
    ("lowercase", "lower case"),
];

/// The exchanges for a coder task, in order, as messages: the nearest bank entry last when
/// `nearest`, with all the task's values put in when `fill_values`, else only its file names.
pub(crate) fn example_turns(task: &str, nearest: bool, fill_values: bool) -> Vec<Message> {
    let (user, assistant) = nearest
        .then(|| nearest_example(task, fill_values))
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

/// The bank entry nearest `task`, with the task's values and differing words put in
/// (`fill::fill`), or `None` when none is near enough. Of the entries near enough, nearest first,
/// the first that does what the task does (`does_what_it_asks`) and that is safe to show it
/// (`intent::refusal`) is the example: none is better than a wrong one, which a small model
/// copies.
fn nearest_example(task: &str, fill_values: bool) -> Option<(String, String)> {
    if task.len() > LONGEST_TASK {
        return None;
    }
    let task_words = content_words(task);
    let known: f64 = task_words.iter().map(|word| weight(word)).sum();
    let counts = value_counts(task);
    // Examples in the language the task names ("print hi with bash" is not near "write a C
    // program that prints Hi"), bash when it names none, as the opened fence is.
    let language = super::small::named_language(task).unwrap_or("bash");
    let mut ranked: Vec<(usize, f64)> = BANK
        .iter()
        .zip(&INDEX.words)
        .enumerate()
        .filter(|(_, (entry, _))| block_tag(entry.1) == language)
        .filter_map(|(index, (_, words))| {
            let shared = nearness(&task_words, known, words)?;
            Some((index, shared + shape_bonus(counts, INDEX.values[index])))
        })
        .filter(|(_, score)| *score >= NEAR_ENOUGH)
        .collect();
    // Nearest first; of two as near, the later entry (as the bank has always been read).
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    let asked = intent::of_task(task);
    ranked.into_iter().find_map(|(index, _)| {
        if !does_what_it_asks(&task_words, counts, index) {
            return None;
        }
        let (entry_task, entry_block) = BANK[index];
        let (user, block) = fill::fill(entry_task, entry_block, task, fill_values);
        // The block as it would be shown, with the task's own file names in it.
        let done = intent::of_block(&block);
        intent::refusal(&asked, &done)
            .is_none()
            .then_some((user, block))
    })
}

/// Whether an entry does what the task asks, not only to what it names: the task has every
/// key word of the entry (`key_words`: what it does and what it is about; `current` and
/// `directory` of `print the current directory`, which `print the current year` lacks), and
/// names numbers, lists and ordinals where the entry does.
fn does_what_it_asks(task_words: &[String], counts: [usize; 5], index: usize) -> bool {
    // An entry naming numbers, lists or ordinals where the task names none would show its own
    // (`NR == 2` for `print the lines in reverse order`): it is about something else.
    let own_values = fill::value_kinds_beyond_files()
        .into_iter()
        .any(|kind| INDEX.values[index][kind] > 0 && counts[kind] == 0);
    !own_values && INDEX.keys[index].iter().all(|key| task_words.contains(key))
}

/// A bank block's fence tag (`python` of "```python:hello.py").
fn block_tag(block: &str) -> &str {
    let line = block.lines().next().unwrap_or_default();
    crate::protocol::split_info(line.trim_start_matches('`')).tag
}

/// How much of a task's meaning an entry shares, from 0 to 1, less a little for each word of
/// the entry the task lacks (of two entries sharing as much, the one saying less else wins), or
/// `None` when what is shared is too little to go by (`print` alone). A word weighs by how rare
/// it is in the bank (`last` says more than `print`); a word the bank never uses weighs nothing:
/// it is most often the task's own value (`WARN`, `bread`), which no entry could share.
fn nearness(task: &[String], known: f64, entry: &[String]) -> Option<f64> {
    let (shared, unshared): (Vec<&String>, Vec<&String>) =
        entry.iter().partition(|word| task.contains(word));
    let shared: f64 = shared.iter().map(|word| weight(word)).sum();
    (shared >= LEAST_SHARED && known > 0.0)
        .then(|| shared / known - UNSHARED_COST * unshared.len() as f64)
}

/// Each bank entry's content words and value counts, and in how many entries each word
/// appears: read once.
struct Index {
    words: Vec<Vec<String>>,
    /// The words a task must have for the entry to be its example (`does_what_it_asks`).
    keys: Vec<Vec<String>>,
    values: Vec<[usize; 5]>,
    uses: HashMap<String, usize>,
}

static INDEX: LazyLock<Index> = LazyLock::new(|| {
    let words: Vec<Vec<String>> = BANK.iter().map(|entry| content_words(entry.0)).collect();
    let mut uses: HashMap<String, usize> = HashMap::new();
    for entry in &words {
        let mut once = entry.clone();
        once.sort();
        once.dedup();
        for word in once {
            *uses.entry(word).or_default() += 1;
        }
    }
    let values = BANK.iter().map(|entry| value_counts(entry.0)).collect();
    let keys = BANK
        .iter()
        .zip(&words)
        .map(|((_, block), words)| key_words(words, block))
        .collect();
    Index {
        words,
        keys,
        values,
        uses,
    }
});

/// Words of a bank task that say nothing of what it does: every entry prints, shows or
/// gives back something, and these only frame it.
const FRAME_WORDS: &[&str] = &[
    "print",
    "only",
    "just",
    "all",
    "every",
    "each",
    "whole",
    "new",
    "do",
    "doe",
    "not",
    "without",
    "have",
    "ha",
    "are",
    "there",
    "what",
    "which",
    "one",
    "them",
    "so",
    "from",
    "than",
    "per",
    "give",
    "get",
    "except",
    "excluding",
    "exclude",
    "is",
    "am",
    "i",
];

/// An entry's key words (`does_what_it_asks`): its content words but frame words, single
/// letters, the words its block holds as arguments (the values a task puts in: `apple` of
/// `grep -c apple`; a line's first word is its command, which a task names: `sort`, `date`),
/// and the words that say what it does to files (`replace`, `store`, `in place`): whether a
/// block does as much as its task, in other words, is `intent::refusal`'s to judge.
fn key_words(words: &[String], block: &str) -> Vec<String> {
    let code = block.to_ascii_lowercase();
    let in_block = |word: &str| {
        code.lines().skip(1).any(|line| {
            line.split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|token| !token.is_empty())
                .skip(1)
                .any(|token| stem(token) == word)
        })
    };
    let mut keys: Vec<String> = words
        .iter()
        .filter(|word| word.len() > 1 && !FRAME_WORDS.contains(&word.as_str()))
        .filter(|word| !in_block(word))
        .filter(|word| !intent::names_effect(word))
        .cloned()
        .collect();
    keys.dedup();
    keys
}

/// How rare `word` is in the bank (its inverse document frequency), 0 for a word it never uses.
fn weight(word: &str) -> f64 {
    match INDEX.uses.get(word) {
        Some(&uses) if uses > 0 => ((BANK.len() + 1) as f64 / uses as f64).ln(),
        _ => 0.0,
    }
}

/// What a task and an entry naming values of the same kinds, as many of each, add to their
/// nearness: of `print the last line` and `print the last 3 lines`, the second is the example
/// for `show the last 2 lines`. Too little to make an entry near by itself.
fn shape_bonus(theirs: [usize; 5], ours: [usize; 5]) -> f64 {
    ours.iter()
        .zip(theirs)
        .map(|(&o, t)| match (o, t) {
            (0, 0) => 0.0,
            (o, t) if o == t => SAME_SHAPE,
            (o, _) if o > 0 => -SAME_SHAPE,
            _ => 0.0,
        })
        .sum()
}

/// A task's words that carry meaning, lower case, a plural's `s` dropped, a synonym as the
/// bank words it (`show` → `print`). Left out: file names,
/// extensions, lists and ordinals (they are substituted, not matched: `fill`), numbers (data, not what is done: "1 to 5" is not near
/// "5 factorial") and language names (the language is chosen before, `nearest_example`).
fn content_words(task: &str) -> Vec<String> {
    let task = PHRASES
        .iter()
        .fold(task.to_ascii_lowercase(), |text, (said, meant)| {
            text.replace(said, meant)
        });
    let names = file_names(&task);
    task.split_whitespace()
        .filter(|word| !names.iter().any(|name| word.contains(name.as_str())))
        .filter(|word| !fill::is_value_word(word))
        .flat_map(|word| word.split(|c: char| !c.is_ascii_alphanumeric()))
        .map(str::to_ascii_lowercase)
        .filter(|word| {
            !word.is_empty()
                && !word.chars().all(|c| c.is_ascii_digit())
                && !STOP_WORDS.contains(&word.as_str())
        })
        .map(|word| {
            // A synonym as written (`plus`), else as its singular (`characters`).
            let synonym = |w: &str| SYNONYMS.iter().find(|(said, _)| *said == w);
            match synonym(&word).or_else(|| synonym(&stem(&word))) {
                Some((_, meant)) => (*meant).to_owned(),
                None => stem(&word),
            }
        })
        .collect()
}

/// A word without a plural's `s`.
fn stem(word: &str) -> String {
    match word.strip_suffix('s') {
        Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_owned(),
        _ => word.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolTags, parse};

    fn last_exchange(task: &str) -> (String, String) {
        let turns = example_turns(task, true, true);
        let n = turns.len();
        (turns[n - 2].content.clone(), turns[n - 1].content.clone())
    }

    #[test]
    fn the_exchanges_alternate_and_every_block_parses() {
        let tags = ToolTags::new(["bash", "python", "c"]);
        let round_trip = example_turns("anything", false, true);
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
            for value in fill::block_values(task) {
                assert!(
                    fill::stands_whole(block, &value),
                    "{task}: its block holds {value} whole, so it can be replaced"
                );
            }
        }
    }

    #[test]
    fn no_bank_block_reaches_outside_the_work_dir() {
        for (task, block) in BANK {
            for word in block.split_whitespace() {
                assert!(
                    (word.len() == 1 || !word.starts_with(['/', '~'])) && !word.contains(".."),
                    "{task}: {block} names a path outside"
                );
                for outside in ["curl", "wget", "sudo", "-r", "-rf"] {
                    assert_ne!(word, outside, "{task}: {block}");
                }
            }
        }
    }

    #[test]
    fn the_nearest_entry_is_chosen_with_the_task_s_file_names() {
        assert_eq!(
            last_exchange("print the last line of poem.txt"),
            (
                "show only the last line in poem.txt".to_owned(),
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
        assert_eq!(block, "```python\nprint(6 * 7)\n```", "the task's numbers");
        let (user, block) = last_exchange("show the last 2 lines of log.txt");
        assert_eq!(
            (user.as_str(), block.as_str()),
            (
                "from log.txt, print the last 2 lines",
                "```bash\ntail -n 2 log.txt\n```"
            ),
            "of `the last line` and `the last 3 lines`, the one naming a number"
        );
        let (_, block) = last_exchange("print the third line of story.txt");
        assert_eq!(block, "```bash\nawk 'NR == 3' story.txt\n```");
        let (_, block) = last_exchange("with python, print the sum of [4, 5, 6]");
        assert_eq!(block, "```python\nprint(sum([4, 5, 6]))\n```");
        let (_, block) = last_exchange("count the words in essay.txt");
        assert_eq!(block, "```bash\nwc -w < essay.txt\n```");
    }

    #[test]
    fn a_task_near_no_entry_gets_the_neutral_exchange() {
        let neutral = (NEUTRAL.0.to_owned(), NEUTRAL.1.to_owned());
        assert_eq!(last_exchange("explain monads to me"), neutral);
        assert_eq!(
            last_exchange(&"print the last line of poem.txt ".repeat(200)),
            neutral,
            "a long text is no one-line task"
        );
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
        let (_, block) = last_exchange("print the numbers 1 to 5 with python");
        assert!(
            block.contains("range(1, 5 + 1)"),
            "numbers are not what a task does: not near `compute 5 factorial`: {block}"
        );
        let turns = example_turns("print the last line of poem.txt", false, true);
        assert_eq!(
            turns[5].content, NEUTRAL.1,
            "nearest off: the fixed exchanges"
        );
        let turns = example_turns("show the last 2 lines of log.txt", true, false);
        assert_eq!(
            turns[5].content, "```bash\ntail -n 3 log.txt\n```",
            "fill off: the file names only"
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
}
