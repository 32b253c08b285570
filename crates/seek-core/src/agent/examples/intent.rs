//! What a task asks and what an example's block does, so that a small model (which copies the
//! example it is shown) is never shown one that does more than the task asks or its opposite:
//! the effect (read < create a file < change one in place < move, rename or delete; an example
//! must do as much as its task, no more and no less) and the polarity (lines that contain … or
//! that do not). A task is classified from its words (verbs,
//! phrases, negations); a block from its code (`rm`, `mv`, `>`, `>>`, `sed -i`, `open(…, 'w')`,
//! `os.remove`, `grep -v`, …), never from the words of its bank entry.
//!
//! Pure text: it must not choose, fill or run an example (`super` does). It errs towards a
//! stronger effect for a block and a weaker one for a task, so that a doubt refuses an example.

/// What running something does to the files, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Effect {
    /// Reads, shows, counts or searches; changes nothing.
    Read,
    /// Writes a file (new, or overwritten whole by `>`), makes a directory, copies.
    Create,
    /// Changes a file in place: edits, appends, truncates.
    Change,
    /// Moves, renames or deletes.
    Remove,
}

/// Whether what is picked is what matches or what does not (`grep` / `grep -v`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Polarity {
    Plain,
    Negated,
}

/// What a task asks, from its words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TaskIntent {
    pub effect: Effect,
    pub polarity: Polarity,
    /// The files it names that something else is made from (`a.txt` of `copy a.txt to b.txt`):
    /// no example may write onto them.
    pub sources: Vec<String>,
}

/// What a block does, from its code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct BlockIntent {
    pub effect: Effect,
    pub polarity: Polarity,
    /// The paths it writes, edits, moves or deletes, each with what it does to it.
    pub targets: Vec<(String, Effect)>,
}

/// Why an example is not shown to a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Its block does more than the task asks (`rm` for `count the .txt files`).
    Stronger,
    /// Its block does less than the task asks (`ls *.log` for `delete the .log files`): it is
    /// another task.
    Weaker,
    /// Its block picks the opposite lines (`grep -v` for `lines that contain`).
    Opposite,
    /// Its block writes onto a file the task only reads from.
    OntoSource,
}

/// Why `block` may not be shown to `task`, or `None` when it may.
pub(super) fn refusal(task: &TaskIntent, block: &BlockIntent) -> Option<Refusal> {
    if block.effect > task.effect {
        return Some(Refusal::Stronger);
    }
    if block.effect < task.effect {
        return Some(Refusal::Weaker);
    }
    if block.polarity != task.polarity {
        return Some(Refusal::Opposite);
    }
    let onto_source = block.targets.iter().any(|(path, effect)| {
        matches!(effect, Effect::Create | Effect::Change) && task.sources.contains(path)
    });
    onto_source.then_some(Refusal::OntoSource)
}

/// Verbs that move, rename or delete.
const REMOVE_VERBS: &[&str] = &[
    "delete", "remove", "rm", "erase", "move", "mv", "rename", "unlink", "rmdir", "discard",
    "destroy", "purge", "trash", "shred",
];

/// Verbs that change a file in place.
const CHANGE_VERBS: &[&str] = &[
    "replace",
    "substitute",
    "change",
    "edit",
    "modify",
    "update",
    "fix",
    "append",
    "prepend",
    "insert",
    "truncate",
    "clear",
    "overwrite",
    "wipe",
    "rewrite",
];

/// Verbs that write a file or make a directory.
const CREATE_VERBS: &[&str] = &[
    "create", "make", "write", "save", "touch", "mkdir", "generate", "store", "put", "copy", "cp",
];

/// Phrases that say the same as a verb of one of the lists.
const PHRASES: &[(&str, Effect)] = &[
    ("get rid of", Effect::Remove),
    ("throw away", Effect::Remove),
    ("clean up", Effect::Remove),
    ("in place", Effect::Change),
    ("and save", Effect::Change),
    ("save it", Effect::Change),
    ("save the file", Effect::Change),
    ("save the changes", Effect::Change),
];

/// Words that turn what follows them around.
const NEGATIONS: &[&str] = &[
    "not",
    "never",
    "without",
    "except",
    "excluding",
    "exclude",
    "excludes",
    "no",
    "lacking",
    "omit",
    "omitting",
    "ignore",
    "ignoring",
];

/// Phrases that negate as one word does.
const NEGATING_PHRASES: &[&str] = &["other than", "apart from", "but not", "filter out"];

/// What a removal verb may act on inside a file: removing those changes the file, it does not
/// delete it (`remove the blank lines`).
const TEXT_PARTS: &[&str] = &[
    "line",
    "lines",
    "duplicate",
    "duplicates",
    "word",
    "words",
    "space",
    "spaces",
    "character",
    "characters",
    "comma",
    "commas",
    "blank",
    "empty",
    "letter",
    "letters",
    "text",
    "whitespace",
    "first",
    "last",
];

/// What `write` makes when it is code to run, not a file (`write a C program that prints Hi`).
const PROGRAMS: &[&str] = &["program", "script", "code", "function", "loop", "one-liner"];

/// Words that may stand between a negation and what it negates.
const FILLERS: &[&str] = &[
    "the", "a", "an", "any", "to", "be", "do", "does", "it", "them",
];

/// What a task asks, from its words.
pub(super) fn of_task(task: &str) -> TaskIntent {
    let lower = task
        .to_ascii_lowercase()
        .replace("n't", " not")
        .replace("dont", "do not");
    let mut spaced = format!(" {} ", words(&lower).join(" "));
    let mut effect = Effect::Read;
    for (phrase, means) in PHRASES {
        if spaced.contains(&format!(" {phrase} ")) {
            effect = effect.max(*means);
        }
    }
    let mut negated = false;
    for phrase in NEGATING_PHRASES {
        let padded = format!(" {phrase} ");
        if spaced.contains(&padded) {
            negated = true;
            spaced = spaced.replace(&padded, " not ");
        }
    }
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let names_file = !super::fill::file_names(task).is_empty();
    for (i, token) in tokens.iter().enumerate() {
        let after = following(&tokens, i);
        let said = if REMOVE_VERBS.contains(token) {
            // Removing lines or words from a file changes it.
            if after.first().is_some_and(|w| TEXT_PARTS.contains(w)) {
                Effect::Change
            } else {
                Effect::Remove
            }
        } else if CHANGE_VERBS.contains(token) || (*token == "add" && names_file) {
            Effect::Change
        } else if CREATE_VERBS.contains(token) {
            let code = *token == "write"
                && !names_file
                && after.iter().take(3).any(|w| PROGRAMS.contains(w));
            if code { Effect::Read } else { Effect::Create }
        } else if *token == "into" && after.first().is_some_and(|w| is_file_word(w)) {
            Effect::Create
        } else if NEGATIONS.contains(token) {
            // `do not delete`, `without changing`: a verb negated is not asked; `without
            // duplicates` is what unique lines are, not a filter turned around.
            let object = after.first().copied().unwrap_or_default();
            let verb_negated = is_effect_word(object);
            let dedup = object.starts_with("duplicat") || object.starts_with("repeat");
            if !verb_negated && !dedup {
                negated = true;
            }
            continue;
        } else {
            continue;
        };
        let cancelled = tokens[..i]
            .iter()
            .rev()
            .find(|w| !FILLERS.contains(w))
            .is_some_and(|w| NEGATIONS.contains(w));
        if !cancelled {
            effect = effect.max(said);
        }
    }
    TaskIntent {
        effect,
        polarity: if negated {
            Polarity::Negated
        } else {
            Polarity::Plain
        },
        sources: sources(task),
    }
}

/// A task's lower-case words, split on anything but letters, digits, `.`, `_`, `-` and `/`
/// (so that file names stay whole), without the dots that end a sentence.
fn words(lower: &str) -> Vec<&str> {
    lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')))
        .map(|w| w.trim_matches(['.', '-']))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The tokens after `i`, fillers skipped.
fn following<'t>(tokens: &[&'t str], i: usize) -> Vec<&'t str> {
    tokens[i + 1..]
        .iter()
        .copied()
        .filter(|w| !FILLERS.contains(w))
        .collect()
}

/// Whether a word says what a task does to files, which `refusal` judges from the task and
/// the block as a whole: a verb of effect or one of its forms (`deleting`, `changed`), or the
/// `place` of `in place`.
pub(super) fn names_effect(word: &str) -> bool {
    is_effect_word(word) || word == "place"
}

/// Whether a word is a verb of effect or one of its forms (`deleting`, `changed`).
fn is_effect_word(word: &str) -> bool {
    let stem = |verb: &str| verb.strip_suffix('e').unwrap_or(verb).to_owned();
    REMOVE_VERBS
        .iter()
        .chain(CHANGE_VERBS)
        .chain(CREATE_VERBS)
        .chain(&["add", "alter", "touch"])
        .any(|verb| word == *verb || (verb.len() > 3 && word.starts_with(&stem(verb))))
}

fn is_file_word(word: &str) -> bool {
    !super::fill::file_names(word).is_empty() || word == "file"
}

/// The files a task names that another file it names is made from: each followed, later, by
/// `to`, `into`, `as`, `named` or `called` and another file name (`copy a.txt to b.txt`,
/// `write the first line of a.txt into b.txt`).
fn sources(task: &str) -> Vec<String> {
    let lower = task.to_ascii_lowercase();
    let tokens = words(&lower);
    let mut found = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if !is_file_word(token) || *token == "file" {
            continue;
        }
        let rest = &tokens[i + 1..];
        let connector = rest
            .iter()
            .position(|w| matches!(*w, "to" | "into" | "as" | "named" | "called"));
        let later_file = connector.is_some_and(|at| {
            rest[at + 1..]
                .iter()
                .any(|w| *w != "file" && is_file_word(w))
        });
        if later_file && !found.iter().any(|f: &String| f == token) {
            // As the task writes it, for comparing with a block's paths.
            let name = super::fill::file_names(task)
                .into_iter()
                .find(|name| name.eq_ignore_ascii_case(token));
            found.push(name.unwrap_or_else(|| (*token).to_owned()));
        }
    }
    found
}

/// What a fenced block does, from its code. A block saved with `:path` writes that path.
pub(super) fn of_block(block: &str) -> BlockIntent {
    let mut lines = block.lines();
    // The fence line as the parser reads it: a suffix that is no path is no save.
    let info =
        crate::protocol::split_info(lines.next().unwrap_or_default().trim_start_matches('`'));
    let (tag, saved) = (info.tag, info.save_path);
    let code: Vec<&str> = lines.filter(|line| !line.starts_with("```")).collect();
    let mut intent = BlockIntent {
        effect: Effect::Read,
        polarity: Polarity::Plain,
        targets: Vec::new(),
    };
    if let Some(path) = saved.filter(|p| !p.is_empty()) {
        intent.targets.push((path.to_owned(), Effect::Create));
    }
    for line in code {
        match tag.trim() {
            "bash" | "sh" | "shell" => shell_line(line, &mut intent),
            _ => call_line(line, &mut intent),
        }
    }
    intent.effect = intent
        .targets
        .iter()
        .map(|(_, effect)| *effect)
        .fold(intent.effect, Effect::max);
    intent
}

/// A line with what is inside quotes blanked out (a quoted `>` redirects nothing), and the
/// quoted parts given back as words where they stand.
fn unquoted(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push(' ');
            }
            Some(_) => out.push(if c.is_whitespace() || "<>|;&".contains(c) {
                '_'
            } else {
                c
            }),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(' ');
            }
            None => out.push(c),
        }
    }
    out
}

/// One line of a shell block: its redirections and its commands.
fn shell_line(line: &str, intent: &mut BlockIntent) {
    let line = unquoted(line.split(" #").next().unwrap_or_default());
    // Every redirection onto a path writes it (`2> err.txt` too); `>&2` and `/dev/null` do not.
    let mut rest = line.as_str();
    while let Some(at) = rest.find('>') {
        let after = &rest[at + 1..];
        let (effect, after) = match after.strip_prefix('>') {
            Some(after) => (Effect::Change, after),
            None => (Effect::Create, after),
        };
        let target: String = after
            .trim_start()
            .chars()
            .take_while(|c| !c.is_whitespace() && !"|;&<>()".contains(*c))
            .collect();
        if !target.is_empty() && !after.starts_with('&') && target != "/dev/null" {
            intent.targets.push((target, effect));
        }
        rest = after;
    }
    for command in line.split(['|', ';', '&', '\n']) {
        let command = command.split(['>', '<']).next().unwrap_or_default();
        shell_command(command.split_whitespace().collect(), intent);
    }
}

/// One command of a shell line.
fn shell_command(words: Vec<&str>, intent: &mut BlockIntent) {
    let words: Vec<&str> = words
        .into_iter()
        .skip_while(|w| w.contains('=') || matches!(*w, "sudo" | "xargs" | "env" | "command"))
        .collect();
    let Some((&name, args)) = words.split_first() else {
        return;
    };
    let operands: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect();
    // Flags end at `--`: what follows is an operand (`grep -- -v a.txt`).
    let flags = || {
        args.iter()
            .take_while(|a| **a != "--")
            .filter(|a| a.starts_with('-') && !a.starts_with("--"))
    };
    let mut all = |effect: Effect| {
        for operand in &operands {
            intent.targets.push(((*operand).to_owned(), effect));
        }
        intent.effect = intent.effect.max(effect);
    };
    match name.rsplit('/').next().unwrap_or(name) {
        "rm" | "rmdir" | "unlink" | "shred" | "mv" => all(Effect::Remove),
        "touch" | "mkdir" => all(Effect::Create),
        "truncate" | "chmod" | "chown" | "ln" | "dd" => all(Effect::Change),
        "tee" => {
            let append = flags().any(|f| f.contains('a')) || args.contains(&"--append");
            all(if append {
                Effect::Change
            } else {
                Effect::Create
            });
        }
        "cp" | "install" | "rsync" => {
            if let Some(last) = operands.last() {
                intent.targets.push(((*last).to_owned(), Effect::Create));
            }
            intent.effect = intent.effect.max(Effect::Create);
        }
        "sed" | "perl" | "ruby" => {
            let in_place = args.iter().any(|a| {
                a.starts_with("--in-place")
                    || (!a.starts_with("--") && a.starts_with('-') && a.contains('i'))
            });
            if in_place {
                if let Some(last) = operands.last() {
                    intent.targets.push(((*last).to_owned(), Effect::Change));
                }
                intent.effect = intent.effect.max(Effect::Change);
            }
        }
        "find"
            if args
                .iter()
                .any(|a| matches!(*a, "-delete" | "rm" | "-exec")) =>
        {
            intent.effect = Effect::Remove;
        }
        "grep" | "egrep" | "fgrep" | "rg" => {
            let inverted = flags().any(|f| f.contains('v')) || args.contains(&"--invert-match");
            if inverted {
                intent.polarity = Polarity::Negated;
            }
        }
        "awk" if args.iter().any(|a| a.starts_with('!')) => {
            intent.polarity = Polarity::Negated;
        }
        _ => {}
    }
}

/// Calls that move, rename or delete a path, in python and C.
const REMOVE_CALLS: &[&str] = &[
    "os.remove(",
    "os.unlink(",
    ".unlink(",
    "os.rmdir(",
    ".rmdir(",
    "shutil.rmtree(",
    "shutil.move(",
    "os.rename(",
    "os.replace(",
    ".rename(",
    "remove(",
    "unlink(",
    "rename(",
];

/// Calls that write a path.
const CREATE_CALLS: &[&str] = &[
    ".write_text(",
    ".write_bytes(",
    "shutil.copy",
    "os.mkdir(",
    "os.makedirs(",
    ".mkdir(",
];

/// One line of a python or C block: the calls that touch files, and `not in` / `!=`.
fn call_line(line: &str, intent: &mut BlockIntent) {
    let code = line.split('#').next().unwrap_or_default();
    if REMOVE_CALLS.iter().any(|call| code.contains(call)) {
        intent.effect = Effect::Remove;
    }
    if CREATE_CALLS.iter().any(|call| code.contains(call)) {
        intent.effect = intent.effect.max(Effect::Create);
    }
    for opener in ["open(", "fopen("] {
        let mut rest = code;
        while let Some(at) = rest.find(opener) {
            rest = &rest[at + opener.len()..];
            let args = rest.split(')').next().unwrap_or_default();
            let mut parts = args.split(',');
            let path = parts.next().unwrap_or_default().trim();
            let mode = parts.next().unwrap_or_default();
            let mode = mode.trim().trim_start_matches("mode=");
            let mode = mode.trim_matches(['\'', '"']);
            let effect = if mode.contains('a') || mode.contains('+') {
                Effect::Change
            } else if mode.contains('w') || mode.contains('x') {
                Effect::Create
            } else {
                continue;
            };
            intent
                .targets
                .push((path.trim_matches(['\'', '"']).to_owned(), effect));
        }
    }
    if code.contains(" not in ") || code.contains("!=") {
        intent.polarity = Polarity::Negated;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(task: &str) -> Effect {
        of_task(task).effect
    }

    fn block(code: &str) -> BlockIntent {
        of_block(&format!("```bash\n{code}\n```"))
    }

    #[test]
    fn a_task_s_effect_is_its_strongest_verb_not_negated() {
        assert_eq!(
            effect("count the lines in all the .txt files here"),
            Effect::Read
        );
        assert_eq!(effect("print the even numbers from 2 to 20"), Effect::Read);
        assert_eq!(effect("write a C program that prints Hi"), Effect::Read);
        assert_eq!(effect("create hello.txt containing hi"), Effect::Create);
        assert_eq!(
            effect("print the numbers 1 to 3 into out.txt"),
            Effect::Create
        );
        assert_eq!(effect("add the line done to todo.txt"), Effect::Change);
        assert_eq!(effect("add 2 and 3 with python"), Effect::Read);
        assert_eq!(
            effect("replace cat with dog in a.txt and save it"),
            Effect::Change
        );
        assert_eq!(effect("print a.txt with cat replaced by dog"), Effect::Read);
        assert_eq!(effect("remove the blank lines of a.txt"), Effect::Change);
        assert_eq!(effect("delete the file junk.tmp"), Effect::Remove);
        assert_eq!(effect("get rid of junk.tmp"), Effect::Remove);
        assert_eq!(effect("rename old.txt to new.txt"), Effect::Remove);
        assert_eq!(
            effect("list the files but don't delete anything"),
            Effect::Read
        );
        assert_eq!(effect("show a.txt without changing it"), Effect::Read);
    }

    #[test]
    fn a_task_s_polarity_comes_from_its_negations() {
        let polarity = |task| of_task(task).polarity;
        assert_eq!(
            polarity("show the lines that contain WARNING"),
            Polarity::Plain
        );
        assert_eq!(polarity("show only lines with ERROR"), Polarity::Plain);
        assert_eq!(
            polarity("print the lines that do not contain x"),
            Polarity::Negated
        );
        assert_eq!(
            polarity("print the lines that don't contain x"),
            Polarity::Negated
        );
        assert_eq!(polarity("show the lines without ERROR"), Polarity::Negated);
        assert_eq!(polarity("list every file except a.txt"), Polarity::Negated);
        assert_eq!(polarity("lines other than comments"), Polarity::Negated);
        assert_eq!(
            polarity("print the lines without duplicates"),
            Polarity::Plain
        );
        assert_eq!(polarity("show a.txt but do not edit it"), Polarity::Plain);
    }

    #[test]
    fn a_task_s_sources_are_the_files_others_are_made_from() {
        assert_eq!(of_task("copy a.txt to b.txt").sources, ["a.txt"]);
        assert_eq!(
            of_task("write the first line of Notes.txt into first.txt").sources,
            ["Notes.txt"]
        );
        assert!(of_task("print a.txt and b.txt").sources.is_empty());
        assert!(
            of_task("move a.txt into the folder docs")
                .sources
                .is_empty()
        );
    }

    #[test]
    fn a_block_s_effect_comes_from_its_code() {
        assert_eq!(block("cat a.txt | grep x").effect, Effect::Read);
        assert_eq!(block("echo 'a > b'").effect, Effect::Read, "a quoted >");
        assert_eq!(block("ls 2>/dev/null").effect, Effect::Read);
        assert_eq!(block("seq 2 20 > notes.txt").effect, Effect::Create);
        assert_eq!(
            block("seq 2 20 > notes.txt").targets,
            [("notes.txt".to_owned(), Effect::Create)]
        );
        assert_eq!(block("echo hi >> a.txt").effect, Effect::Change);
        assert_eq!(block("echo hi>>a.txt").targets[0].1, Effect::Change);
        assert_eq!(block("sed -i 's/a/b/' a.txt").effect, Effect::Change);
        assert_eq!(block("sed 's/a/b/' a.txt").effect, Effect::Read);
        assert_eq!(block(": | tee a.txt").effect, Effect::Create);
        assert_eq!(block("truncate -s 0 a.txt").effect, Effect::Change);
        assert_eq!(block("rm -f *.txt").effect, Effect::Remove);
        assert_eq!(block("ls | xargs rm").effect, Effect::Remove);
        assert_eq!(block("mv a.txt b.txt").effect, Effect::Remove);
        assert_eq!(block("find . -name '*.tmp' -delete").effect, Effect::Remove);
        assert_eq!(
            block("mkdir -p docs && cp a.txt docs/").effect,
            Effect::Create
        );
        let python = |code: &str| of_block(&format!("```python\n{code}\n```"));
        assert_eq!(python("print(open('a.txt').read())").effect, Effect::Read);
        assert_eq!(
            python("open('a.txt', 'w').write('x')").effect,
            Effect::Create
        );
        assert_eq!(
            python("open('a.txt', mode='a').write('x')").effect,
            Effect::Change
        );
        assert_eq!(
            python("import os\nos.remove('a.txt')").effect,
            Effect::Remove
        );
        assert_eq!(
            of_block("```python:hello.py\nprint('hi')\n```").targets,
            [("hello.py".to_owned(), Effect::Create)]
        );
        let c = of_block("```c\nFILE *f = fopen(\"a.txt\", \"w\");\n```");
        assert_eq!(c.effect, Effect::Create);
    }

    #[test]
    fn a_block_s_polarity_comes_from_its_code() {
        assert_eq!(block("grep -v x a.txt").polarity, Polarity::Negated);
        assert_eq!(block("grep -cv x a.txt").polarity, Polarity::Negated);
        assert_eq!(block("grep -c x a.txt").polarity, Polarity::Plain);
        assert_eq!(block("grep -- -v a.txt").polarity, Polarity::Plain);
        let python = of_block("```python\nprint([w for w in ws if 'a' not in w])\n```");
        assert_eq!(python.polarity, Polarity::Negated);
    }

    #[test]
    fn an_example_stronger_opposite_or_onto_a_source_is_refused() {
        let task = of_task("count the lines of a.txt");
        assert_eq!(refusal(&task, &block("wc -l < a.txt")), None);
        assert_eq!(refusal(&task, &block("rm a.txt")), Some(Refusal::Stronger));
        let task = of_task("show the lines of a.txt that contain x");
        assert_eq!(
            refusal(&task, &block("grep -v x a.txt")),
            Some(Refusal::Opposite)
        );
        let task = of_task("copy a.txt to b.txt");
        assert_eq!(refusal(&task, &block("cp a.txt b.txt")), None);
        assert_eq!(
            refusal(&task, &block("echo hi > a.txt")),
            Some(Refusal::OntoSource)
        );
    }
}
