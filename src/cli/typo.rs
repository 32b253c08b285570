//! A lone word that is a subcommand mistyped (`seek sesions`): which subcommand it was meant to
//! be, so that it is refused with "did you mean" instead of sent to the model as a task.
//!
//! Pure: it decides nothing about the run; `Cli::parse_args` refuses the word.

use clap::CommandFactory;

use super::Cli;

/// The subcommand `word` looks like a typo of, if any.
///
/// Only a lone word of letters (no spaces, digits or punctuation: those are tasks) counts, at
/// most 2 edits (a swap of two neighbouring letters is one) from a subcommand, and at most 1 from
/// the short ones (`mcp`, `pull`) so that short words stay tasks. The word itself never is
/// a subcommand (clap took those).
pub fn subcommand_typo(word: &str) -> Option<&'static str> {
    let lower = word.to_lowercase();
    if lower.chars().count() < 3 || !lower.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let cli = Cli::command();
    cli.get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| sub.get_name())
        .filter(|&name| name != "help")
        .map(|name| (edit_distance(&lower, name), name))
        .filter(|&(d, name)| word != name && d <= if name.len() <= 4 { 1 } else { 2 })
        .min_by_key(|&(d, _)| d)
        .and_then(|(_, name)| SUBCOMMANDS.iter().copied().find(|&n| n == name))
}

/// Every subcommand's name, as typed.
pub(super) const SUBCOMMANDS: [&str; 6] = ["config", "models", "mcp", "pull", "serve", "sessions"];

/// Edits (insert, delete, replace, swap of neighbours) from `a` to `b`: optimal string alignment.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::parse_args(std::iter::once("seek").chain(args.iter().copied()))
    }

    #[test]
    fn a_mistyped_subcommand_is_not_a_task() {
        for (typo, meant) in [
            ("sesions", "sessions"),
            ("sessoins", "sessions"),
            ("confg", "config"),
            ("Config", "config"),
            ("modles", "models"),
            ("serv", "serve"),
            ("pul", "pull"),
            ("mpc", "mcp"),
        ] {
            assert_eq!(subcommand_typo(typo), Some(meant), "{typo}");
            let err = parse(&[typo]).expect_err(typo);
            assert_eq!(err.exit_code(), 2);
            assert!(
                err.to_string()
                    .contains(&format!("did you mean `seek {meant}`?")),
                "{err}"
            );
        }
        // Tasks stay tasks: other words, short words, sentences, -p.
        for task in [
            "hello", "hi", "ls", "push", "server2", "fix it", "serve.py", "models?", "test",
        ] {
            assert_eq!(subcommand_typo(task), None, "{task}");
        }
        assert!(parse(&["hello"]).is_ok());
        assert!(parse(&["list", "sesions"]).is_ok(), "two words are a task");
        assert!(parse(&["-p", "sesions"]).is_ok(), "-p says it is a task");
        // The list of names is the parser's.
        let names: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|s| s.get_name().to_owned())
            .filter(|n| n != "help")
            .collect();
        assert_eq!(names, SUBCOMMANDS);
    }
}
