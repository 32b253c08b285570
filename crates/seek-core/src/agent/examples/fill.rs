//! Puts a task's own values into the bank entry nearest it, so that what a small model copies
//! from the example is about the task it was given: its file names, file extensions, numbers,
//! lists and ordinals (`print the second line of notes.txt` → `awk 'NR == 2' notes.txt` becomes
//! `print the third line of story.txt` → `awk 'NR == 3' story.txt`), then the single words or
//! quoted phrases in which the two tasks differ where the entry's block holds them as an
//! argument (`replace red with blue` → `replace cat with dog`, `'Good morning'` → `'buy bread'`).
//!
//! Pure text: it must not choose the entry (`super` does) nor run anything. A value that cannot be
//! placed safely is left as the entry has it: the example stays a right answer to its own task.

use super::STOP_WORDS;

/// Ordinal words and the numbers a block writes for them. `first` and `last` are not here: they
/// are what a task does (`head`, `tail`), not which line.
const ORDINALS: [(&str, &str); 9] = [
    ("second", "2"),
    ("third", "3"),
    ("fourth", "4"),
    ("fifth", "5"),
    ("sixth", "6"),
    ("seventh", "7"),
    ("eighth", "8"),
    ("ninth", "9"),
    ("tenth", "10"),
];

/// The kinds of value a task names, each substituted on its own: one kind's count may match
/// where another's does not.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    File,
    Extension,
    List,
    Number,
    Ordinal,
}

const KINDS: [Kind; 5] = [
    Kind::File,
    Kind::Extension,
    Kind::List,
    Kind::Number,
    Kind::Ordinal,
];

/// One value as a task writes it and as a block writes it (they differ only for ordinals).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Value {
    in_task: String,
    in_block: String,
}

/// The entry `(task, block)` with `task`'s values and differing words put in, or only its file
/// names unless `all_values` (`Adaptations::fill_values`, there to measure it).
pub(super) fn fill(
    entry_task: &str,
    entry_block: &str,
    task: &str,
    all_values: bool,
) -> (String, String) {
    let (mut user, mut block) = (entry_task.to_owned(), entry_block.to_owned());
    let kinds: &[Kind] = if all_values { &KINDS } else { &[Kind::File] };
    for &kind in kinds {
        let ours = values(kind, entry_task);
        let theirs = values(kind, task);
        // A value that could expand or end a command (a list `[$(…)]`) is never put in.
        let unsafe_value = theirs
            .iter()
            .any(|v| v.in_block.contains(EXPANDS) || v.in_task.contains('\u{1}'));
        if ours.is_empty() || ours.len() != theirs.len() || unsafe_value {
            continue;
        }
        // Through placeholders, so that swapping two values cannot replace one twice.
        for (i, value) in ours.iter().enumerate() {
            let mark = placeholder(kind, i);
            user = replace_whole(&user, &value.in_task, &mark);
            block = replace_whole(&block, &value.in_block, &mark);
        }
        for (i, value) in theirs.iter().enumerate() {
            let mark = placeholder(kind, i);
            user = user.replace(&mark, &value.in_task);
            block = block.replace(&mark, &value.in_block);
        }
    }
    if all_values {
        block = swap_differing_words(&user, &block, task);
    }
    (user, block)
}

/// Every value a text names, as a block writes it.
#[cfg(test)]
pub(super) fn block_values(text: &str) -> Vec<String> {
    KINDS
        .iter()
        .flat_map(|&kind| values(kind, text))
        .map(|v| v.in_block)
        .collect()
}

/// Whether `needle` stands whole somewhere in `text` (`whole_at`).
#[cfg(test)]
pub(super) fn stands_whole(text: &str, needle: &str) -> bool {
    whole_word_at(text, needle).is_some()
}

/// The places in `value_counts` of the kinds that are data rather than a file: numbers, lists
/// and ordinals.
pub(super) fn value_kinds_beyond_files() -> Vec<usize> {
    KINDS
        .iter()
        .enumerate()
        .filter(|(_, kind)| matches!(kind, Kind::Number | Kind::List | Kind::Ordinal))
        .map(|(i, _)| i)
        .collect()
}

/// How many values of each kind a text names, for the nearness of two tasks.
pub(super) fn value_counts(text: &str) -> [usize; 5] {
    KINDS.map(|kind| values(kind, text).len())
}

/// A mark that no task or block holds and that holds no digit (numbers are matched whole).
fn placeholder(kind: Kind, i: usize) -> String {
    let index = char::from(b'a' + u8::try_from(i % 26).unwrap_or(0));
    format!("\u{1}{kind:?}{index}\u{1}")
}

/// The values of `kind` that `text` names, in order, each once.
fn values(kind: Kind, text: &str) -> Vec<Value> {
    let found: Vec<Value> = match kind {
        Kind::File => file_names(text).into_iter().map(same).collect(),
        Kind::Extension => words(text)
            .filter_map(|w| {
                let ext = w.trim_start_matches('*');
                (ext.len() > 1 && ext.starts_with('.') && is_extension(&ext[1..]))
                    .then(|| same(ext.to_owned()))
            })
            .collect(),
        Kind::List => lists(text).into_iter().map(same).collect(),
        Kind::Number => numbers(&without_lists(text))
            .into_iter()
            .map(same)
            .collect(),
        Kind::Ordinal => words(text)
            .filter_map(|w| {
                let lower = w.to_ascii_lowercase();
                ORDINALS
                    .iter()
                    .find(|(word, _)| *word == lower)
                    .map(|(_, n)| Value {
                        in_task: w.to_owned(),
                        in_block: (*n).to_owned(),
                    })
            })
            .collect(),
    };
    let mut once: Vec<Value> = Vec::new();
    for value in found {
        if !once.contains(&value) {
            once.push(value);
        }
    }
    once
}

/// Whether a word of a task is (part of) a value that is not a file name or a number, which
/// say what the task is done to, not what is done: an extension, a list, an ordinal.
pub(super) fn is_value_word(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    let bare = lower.trim_end_matches([',', '.', '?', '!', ';', ':']);
    let ext = bare.trim_start_matches('*');
    (ext.len() > 1 && ext.starts_with('.') && is_extension(&ext[1..]))
        || word.contains(['[', ']'])
        || ORDINALS.iter().any(|(ordinal, _)| *ordinal == bare)
}

fn same(text: String) -> Value {
    Value {
        in_block: text.clone(),
        in_task: text,
    }
}

/// A text's whitespace-separated words, without the punctuation around them.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
        .map(|w| w.trim_end_matches([',', '?', '!', ';', ':']))
        .map(|w| w.strip_suffix('.').unwrap_or(w))
        .filter(|w| !w.is_empty())
}

fn is_extension(ext: &str) -> bool {
    (1..=5).contains(&ext.len())
        && ext.starts_with(|c: char| c.is_ascii_alphabetic())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
}

/// The file names a text names, in order: `name.ext` with an extension of one to five
/// letters or digits, a letter first (`poem.txt`, `greet.py`, not `3.5`), each once.
pub(super) fn file_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let word = word.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        let Some((stem, ext)) = word.rsplit_once('.') else {
            continue;
        };
        let stem_ok = !stem.is_empty()
            && stem
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
        if stem_ok && is_extension(ext) && !names.iter().any(|n| n == word) {
            names.push(word.to_owned());
        }
    }
    names
}

/// The bracketed lists a text names (`[4, 5, 6]`), as written.
fn lists(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(len) = rest[open..].find(']') else {
            break;
        };
        let list = &rest[open..=open + len];
        if !list[1..].contains('[') {
            found.push(list.to_owned());
        }
        rest = &rest[open + len + 1..];
    }
    found
}

fn without_lists(text: &str) -> String {
    lists(text)
        .iter()
        .fold(text.to_owned(), |t, list| t.replace(list.as_str(), " "))
}

/// The numbers a text names as numbers (`6`, `2.5`), not the digits of a file name or a word.
fn numbers(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        if at + 1 < bytes.len() && bytes[at] == b'.' && bytes[at + 1].is_ascii_digit() {
            at += 1;
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
        }
        let number = &text[start..at];
        if whole_at(text, start, at) {
            found.push(number.to_owned());
        }
    }
    found
}

/// Whether `text[start..end]` stands alone: no letter, digit, `_` or `.` joined to it on either
/// side (a `.` at the end of a sentence does not join: `… 5.`).
fn whole_at(text: &str, start: usize, end: usize) -> bool {
    let joins = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let before = text[..start].chars().next_back();
    let mut after = text[end..].chars();
    let next = after.next();
    let next_next = after.next();
    let before_ok = !before.is_some_and(|c| joins(c) || c == '.');
    let after_ok = match next {
        Some('.') => !next_next.is_some_and(joins),
        Some(c) => !joins(c),
        None => true,
    };
    before_ok && after_ok
}

/// `text` with every whole occurrence of `needle` (`whole_at`) replaced by `with`.
fn replace_whole(text: &str, needle: &str, with: &str) -> String {
    if needle.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(found) = text[from..].find(needle) {
        let start = from + found;
        let end = start + needle.len();
        out.push_str(&text[from..start]);
        if whole_at(text, start, end) {
            out.push_str(with);
        } else {
            out.push_str(needle);
        }
        from = end;
    }
    out.push_str(&text[from..]);
    out
}

/// Characters a value put into a block may not hold: they could expand or end a command.
const EXPANDS: &[char] = &['$', '`', '\\', '\n', ';', '|', '&', '<', '>', '{', '}'];

/// Characters a phrase put into a block may not hold: they would end its quotes or expand.
const UNSAFE: &[char] = &[
    '\'', '"', '`', '$', '\\', '\n', '{', '}', ';', '|', '&', '<', '>',
];

/// The block with each phrase in which the two tasks differ put in, where the block holds the
/// entry's phrase as an argument: inside quotes (as many words, or up to 6 where the phrase ends
/// the task, its free text), or as a word of the same count that is neither a command (a line's
/// first word) nor a call (`print(`).
fn swap_differing_words(entry_task: &str, block: &str, task: &str) -> String {
    let ours: Vec<&str> = words(entry_task).collect();
    let theirs: Vec<&str> = words(task).collect();
    let mut swaps: Vec<(String, String)> = Vec::new();
    let runs = differing(&ours, &theirs);
    let last_run = runs.len().saturating_sub(1);
    for (n, (e, t)) in runs.into_iter().enumerate() {
        // The task's last words are its free text (`… prints Bye bye`, `containing buy bread`).
        let ends_task = n == last_run && t.last() == theirs.last();
        // A one-letter value takes the task's word as it stands, though it is a stop word
        // (`the letter s` / `the letter a appears`).
        let letter = matches!(e.as_slice(), [one] if one.len() == 1);
        let t = match (letter, t.first()) {
            (true, Some(first)) => vec![*first],
            _ => trim_stop_words(t),
        };
        let e = trim_stop_words(e);
        if e.is_empty() || t.is_empty() || t.len() > 6 {
            continue;
        }
        let phrase = e.join(" ");
        if phrase.contains('\u{1}') {
            continue;
        }
        let Some(at) = whole_word_at(block, &phrase) else {
            continue;
        };
        let taken = if letter && t[0].len() != 1 {
            continue;
        } else if inside_quotes(block, at) {
            // A quoted value takes the task's free text whole, else its last words, as many as
            // it has (`with red replaced` / `with every tea replaced`: `tea`).
            if e.len() == t.len() || ends_task {
                t.as_slice()
            } else {
                &t[t.len().saturating_sub(e.len())..]
            }
        } else if e.len() == t.len() && t.len() <= 3 && is_argument(block, at, &phrase) {
            t.as_slice()
        } else {
            continue;
        };
        let new = span(task, taken);
        // Numbers and lists are put in by kind (`values`), never as words.
        let numeric = phrase.chars().all(|c| c.is_ascii_digit() || c == '.');
        if new.contains(UNSAFE) || new.contains(['\u{1}', '[', ']']) || numeric {
            continue;
        }
        swaps.push((phrase, new));
    }
    // Through placeholders, as values are: `red`→`blue`, `blue`→`green` must not chain.
    let mut block = block.to_owned();
    for (i, (phrase, _)) in swaps.iter().enumerate() {
        block = replace_whole(&block, phrase, &format!("\u{1}W{i}\u{1}"));
    }
    for (i, (_, new)) in swaps.iter().enumerate() {
        block = block.replace(&format!("\u{1}W{i}\u{1}"), new);
    }
    block
}

/// The text of `task` from the first of `words` to the last, as written (`debug: true`, not
/// `debug true`); `words` are slices of `task` (`words`).
fn span(task: &str, words: &[&str]) -> String {
    let offset = |word: &str| (word.as_ptr() as usize).checked_sub(task.as_ptr() as usize);
    match (words.first(), words.last()) {
        (Some(first), Some(last)) => match (offset(first), offset(last)) {
            (Some(start), Some(end)) if start <= end && end + last.len() <= task.len() => {
                task[start..end + last.len()].to_owned()
            }
            _ => words.join(" "),
        },
        _ => String::new(),
    }
}

/// The pairs of runs in which `a` and `b` differ, aligned on their longest common subsequence of
/// words (case-insensitive).
fn differing<'t>(a: &[&'t str], b: &[&'t str]) -> Vec<(Vec<&'t str>, Vec<&'t str>)> {
    let eq = |x: &str, y: &str| x.eq_ignore_ascii_case(y);
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if eq(a[i], b[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut pairs = Vec::new();
    let (mut run_a, mut run_b) = (Vec::new(), Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && eq(a[i], b[j]) {
            if !run_a.is_empty() || !run_b.is_empty() {
                pairs.push((std::mem::take(&mut run_a), std::mem::take(&mut run_b)));
            }
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            run_b.push(b[j]);
            j += 1;
        } else {
            run_a.push(a[i]);
            i += 1;
        }
    }
    if !run_a.is_empty() || !run_b.is_empty() {
        pairs.push((run_a, run_b));
    }
    pairs
}

/// Words that introduce a task's free text rather than belong to it.
const INTRODUCERS: &[&str] = &[
    "containing",
    "contains",
    "text",
    "saying",
    "reads",
    "content",
    "line",
    "word",
];

/// A run without the words at its ends that say nothing of a value (`called docs` → `docs`).
fn trim_stop_words(run: Vec<&str>) -> Vec<&str> {
    let stop = |w: &&str| {
        let lower = w.to_ascii_lowercase();
        STOP_WORDS.contains(&lower.as_str()) || INTRODUCERS.contains(&lower.as_str())
    };
    let start = run.iter().position(|w| !stop(w)).unwrap_or(run.len());
    let end = run.iter().rposition(|w| !stop(w)).map_or(start, |e| e + 1);
    run[start..end.max(start)].to_vec()
}

/// Where `phrase` first stands whole in `text`.
fn whole_word_at(text: &str, phrase: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(phrase) {
        let start = from + found;
        if whole_at(text, start, start + phrase.len()) {
            return Some(start);
        }
        from = start + phrase.len();
    }
    None
}

/// Whether the byte `at` of `text` lies inside a quoted string of its line.
fn inside_quotes(text: &str, at: usize) -> bool {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let before = &text[line_start..at];
    before.matches('\'').count() % 2 == 1 || before.matches('"').count() % 2 == 1
}

/// Whether `phrase` at `at` is an argument: not its line's first word, not called as a function.
fn is_argument(text: &str, at: usize, phrase: &str) -> bool {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let first_word = text[line_start..at].trim().is_empty();
    let called = text[at + phrase.len()..].starts_with('(');
    !first_word && !called
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_each_kind_are_found_in_order_and_once() {
        let text = "copy a.txt to b.txt, then cat a.txt.";
        assert_eq!(file_names(text), ["a.txt", "b.txt"]);
        assert_eq!(file_names("save greet.py"), ["greet.py"]);
        assert!(file_names("it costs 3.5 dollars... e.g. this").len() <= 1);
        let in_task = |kind, text| -> Vec<String> {
            values(kind, text).into_iter().map(|v| v.in_task).collect()
        };
        assert_eq!(
            in_task(Kind::Number, "print 6 times 9.5 in data2.txt, 12."),
            ["6", "9.5", "12"]
        );
        assert_eq!(
            in_task(Kind::List, "sum [4, 5, 6] and [1]"),
            ["[4, 5, 6]", "[1]"]
        );
        assert!(
            in_task(Kind::Number, "sum [4, 5, 6]").is_empty(),
            "a list's numbers are the list's"
        );
        assert_eq!(in_task(Kind::Extension, "delete the *.log files"), [".log"]);
        assert_eq!(in_task(Kind::Extension, "list the .py files"), [".py"]);
        assert_eq!(values(Kind::Ordinal, "the Third line")[0].in_block, "3");
        assert!(values(Kind::Ordinal, "the first line").is_empty());
    }

    #[test]
    fn a_task_s_values_replace_the_entry_s_in_its_text_and_block() {
        assert_eq!(
            fill(
                "print the second line of notes.txt",
                "```bash\nawk 'NR == 2' notes.txt\n```",
                "print the fifth line of story.txt",
                true,
            ),
            (
                "print the fifth line of story.txt".to_owned(),
                "```bash\nawk 'NR == 5' story.txt\n```".to_owned()
            )
        );
        let (_, block) = fill(
            "print the numbers 2 to 4 with python",
            "```python\nfor n in range(2, 4 + 1):\n    print(n)\n```",
            "print the numbers 3 to 12 with python",
            true,
        );
        assert_eq!(
            block,
            "```python\nfor n in range(3, 12 + 1):\n    print(n)\n```"
        );
        let (_, block) = fill(
            "print the sum of [1, 2] with python",
            "```python\nprint(sum([1, 2]))\n```",
            "print the sum of [4, 5, 6] with python",
            true,
        );
        assert_eq!(block, "```python\nprint(sum([4, 5, 6]))\n```");
        let (_, block) = fill(
            "rename notes.txt to todo.md",
            "```bash\nmv notes.txt todo.md\n```",
            "rename b.txt to a.txt",
            true,
        );
        assert_eq!(block, "```bash\nmv b.txt a.txt\n```", "names swap cleanly");
        let (_, block) = fill(
            "delete all .log files here",
            "```bash\nrm -f *.log\n```",
            "delete all .tmp files here",
            true,
        );
        assert_eq!(block, "```bash\nrm -f *.tmp\n```");
    }

    #[test]
    fn values_are_left_alone_when_the_counts_differ() {
        let (_, block) = fill(
            "print the result of 6 times 9 with python",
            "```python\nprint(6 * 9)\n```",
            "print 1 plus 2 plus 3",
            true,
        );
        assert_eq!(block, "```python\nprint(6 * 9)\n```");
    }

    #[test]
    fn differing_words_go_where_the_block_holds_them_as_arguments() {
        let (_, block) = fill(
            "replace red with blue in notes.txt and save it",
            "```bash\nsed -i 's/red/blue/g' notes.txt\n```",
            "replace cat with dog in pets.txt and save it",
            true,
        );
        assert_eq!(block, "```bash\nsed -i 's/cat/dog/g' pets.txt\n```");
        let (_, block) = fill(
            "create notes.txt containing Good morning",
            "```bash\necho 'Good morning' > notes.txt\n```",
            "create todo.txt containing buy bread",
            true,
        );
        assert_eq!(block, "```bash\necho 'buy bread' > todo.txt\n```");
        let (_, block) = fill(
            "make a directory called docs",
            "```bash\nmkdir -p docs\n```",
            "make the directory out/logs with bash",
            true,
        );
        assert_eq!(block, "```bash\nmkdir -p out/logs\n```");
        let (_, block) = fill(
            "write a C program that prints Hi",
            "```c\nint main(void) {\n    printf(\"Hi\\n\");\n}\n```",
            "write a C program that prints Bye bye",
            true,
        );
        assert!(block.contains("printf(\"Bye bye\\n\")"), "{block}");
        let (_, block) = fill(
            "create notes.txt containing Good morning",
            "```bash\necho 'Good morning' > notes.txt\n```",
            "create greeting.txt with the text hi there",
            true,
        );
        assert_eq!(block, "```bash\necho 'hi there' > greeting.txt\n```");
        let (_, block) = fill(
            "with python, count the letter s in the word mississippi",
            "```python\nprint('mississippi'.count('s'))\n```",
            "count how many times the letter a appears in the word banana using python",
            true,
        );
        assert_eq!(
            block, "```python\nprint('banana'.count('a'))\n```",
            "a one-letter value takes one letter"
        );
        let (_, block) = fill(
            "print notes.txt with red replaced by blue",
            "```bash\nsed 's/red/blue/g' notes.txt\n```",
            "print menu.txt with every tea replaced by coffee",
            true,
        );
        assert_eq!(
            block, "```bash\nsed 's/tea/coffee/g' menu.txt\n```",
            "a quoted word inside the task takes as many of its last words"
        );
        let (_, block) = fill(
            "create notes.txt containing Good morning",
            "```bash\necho 'Good morning' > notes.txt\n```",
            "create config.yaml with the line debug: true",
            true,
        );
        assert_eq!(
            block, "```bash\necho 'debug: true' > config.yaml\n```",
            "free text is taken as the task writes it"
        );
    }

    #[test]
    fn commands_calls_and_unsafe_text_are_never_swapped_in() {
        let (_, block) = fill(
            "print the word apple backwards with python",
            "```python\nprint('apple'[::-1])\n```",
            "echo the word apple backwards with python",
            true,
        );
        assert_eq!(
            block, "```python\nprint('apple'[::-1])\n```",
            "print( is a call"
        );
        let (_, block) = fill(
            "create notes.txt containing Good morning",
            "```bash\necho 'Good morning' > notes.txt\n```",
            "create notes.txt containing it's $(rm -rf ~)",
            true,
        );
        assert_eq!(
            block, "```bash\necho 'Good morning' > notes.txt\n```",
            "a quote or an expansion would run the task's text"
        );
        let (_, block) = fill(
            "print the sum of [1, 2, 3] with python",
            "```python\nprint(sum([1, 2, 3]))\n```",
            "print the sum of [$(touch pwned)] with python",
            true,
        );
        assert_eq!(block, "```python\nprint(sum([1, 2, 3]))\n```", "nor a list");
        let (_, block) = fill(
            "list the files here",
            "```bash\nls\n```",
            "rm the files here",
            true,
        );
        assert_eq!(block, "```bash\nls\n```", "a command word stays");
    }

    #[test]
    fn runs_are_aligned_on_the_words_the_tasks_share() {
        let a = ["replace", "red", "with", "blue"];
        let b = ["replace", "cat", "with", "dog", "please"];
        assert_eq!(
            differing(&a, &b),
            vec![
                (vec!["red"], vec!["cat"]),
                (vec!["blue"], vec!["dog", "please"])
            ]
        );
        assert!(differing(&a, &a).is_empty());
    }
}
