//! Completion in the input box: which part of the prompt is being completed (a `/` command, its
//! argument, or an `@path`), and the candidates for it from lists the app already holds.
//!
//! Pure: it owns the rules that read the prompt and filter the lists. It must not ask the agent
//! for lists, read the disk or draw; the app hands it what it has (`Sources`).

use std::ops::Range;

use crate::agent::{ModelEntry, SessionEntry};
use crate::config::AgentName;
use crate::slash::COMMANDS;

/// Candidates shown at most (the popup scrolls within them).
const MOST: usize = 200;

/// What is being completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A command name (`/mo`).
    Command,
    /// The argument of `/agent`, `/model` or `/resume`.
    Argument(&'static str),
    /// A file name after `@`.
    Path,
}

/// The part of the prompt a completion replaces, and what it completes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spot {
    pub target: Target,
    /// Bytes of the prompt the chosen candidate replaces.
    pub range: Range<usize>,
    /// What was typed there so far.
    pub query: String,
}

/// One candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// What replaces the spot's range.
    pub insert: String,
    /// What the list shows (raw: the popup makes it terminal-safe).
    pub label: String,
    pub detail: String,
    /// Whether choosing it finishes the spot (a file, a command without argument), or more
    /// completion follows (a directory, `/model `).
    pub complete: bool,
}

/// The lists completion draws from; `None` where the app has no list yet.
#[derive(Default)]
pub struct Sources<'a> {
    pub models: Option<&'a [ModelEntry]>,
    pub sessions: Option<&'a [SessionEntry]>,
    pub files: Option<&'a [String]>,
}

/// The commands whose argument is completed, and from which list.
const ARGUMENT_COMMANDS: [&str; 3] = ["/agent", "/model", "/resume"];

/// What the prompt `text`, with the cursor at byte `cursor`, is completing, if anything.
pub(crate) fn spot(text: &str, cursor: usize) -> Option<Spot> {
    let before = text.get(..cursor)?;
    // Commands: the whole prompt is one line starting with `/`, the cursor at its end.
    if text.starts_with('/') && !text.contains('\n') && cursor == text.len() {
        return match text.split_once(' ') {
            None => Some(Spot {
                target: Target::Command,
                range: 0..text.len(),
                query: text.to_owned(),
            }),
            Some((name, argument)) => {
                let name = ARGUMENT_COMMANDS.into_iter().find(|c| *c == name)?;
                let argument = argument.trim_start();
                if argument.contains(char::is_whitespace) {
                    return None;
                }
                Some(Spot {
                    target: Target::Argument(name),
                    range: text.len() - argument.len()..text.len(),
                    query: argument.to_owned(),
                })
            }
        };
    }
    // `@path`: the word the cursor ends, when it starts with `@`.
    let word_start = before.rfind(char::is_whitespace).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[word_start..];
    let query = word.strip_prefix('@')?;
    Some(Spot {
        target: Target::Path,
        range: word_start + 1..cursor,
        query: query.to_owned(),
    })
}

/// The candidates for `spot`, best first, at most `MOST`.
pub(crate) fn candidates(spot: &Spot, sources: &Sources<'_>) -> Vec<Candidate> {
    let query = spot.query.to_lowercase();
    let mut found: Vec<Candidate> = match &spot.target {
        Target::Command => COMMANDS
            .iter()
            .filter(|c| c.name.starts_with(&query))
            .map(|c| Candidate {
                insert: match c.argument {
                    Some(_) => format!("{} ", c.name),
                    None => c.name.to_owned(),
                },
                label: match c.argument {
                    Some(argument) => format!("{} {argument}", c.name),
                    None => c.name.to_owned(),
                },
                detail: c.about.to_owned(),
                complete: c.argument.is_none(),
            })
            .collect(),
        Target::Argument("/agent") => agents(&query),
        Target::Argument("/model") => sources
            .models
            .unwrap_or_default()
            .iter()
            .filter(|m| m.name.to_lowercase().contains(&query))
            .map(|m| Candidate {
                insert: m.name.clone(),
                label: m.name.clone(),
                detail: m.detail.clone(),
                complete: true,
            })
            .collect(),
        Target::Argument(_) => sources
            .sessions
            .unwrap_or_default()
            .iter()
            .filter(|s| {
                s.id.to_lowercase().starts_with(&query)
                    || s.first_prompt.to_lowercase().contains(&query)
            })
            .map(|s| Candidate {
                insert: s.id.clone(),
                label: s.id.clone(),
                detail: first_line(&s.first_prompt),
                complete: true,
            })
            .collect(),
        Target::Path => paths(sources.files.unwrap_or_default(), &query),
    };
    found.truncate(MOST);
    found
}

/// `auto` and the registry's agents whose name or one of whose other names starts with `query`,
/// each with what it does.
fn agents(query: &str) -> Vec<Candidate> {
    let mut found = Vec::new();
    if AgentName::Auto.as_str().starts_with(query) {
        found.push(Candidate {
            insert: AgentName::Auto.as_str().to_owned(),
            label: AgentName::Auto.as_str().to_owned(),
            detail: crate::agents::AUTO_DESCRIPTION.to_owned(),
            complete: true,
        });
    }
    for spec in crate::agents::REGISTRY {
        let name = spec.name.as_str();
        let alias = spec.aliases.iter().find(|a| a.starts_with(query));
        if !name.starts_with(query) && alias.is_none() {
            continue;
        }
        let label = match alias {
            Some(alias) if !name.starts_with(query) => format!("{name} ({alias})"),
            _ => name.to_owned(),
        };
        found.push(Candidate {
            insert: name.to_owned(),
            label,
            detail: spec.description.to_owned(),
            complete: true,
        });
    }
    found
}

/// Files whose relative path contains `query`: those starting with it first, then the
/// shallower, then by name.
fn paths(files: &[String], query: &str) -> Vec<Candidate> {
    let mut matching: Vec<&String> = files
        .iter()
        .filter(|f| f.to_lowercase().contains(query))
        .collect();
    matching.sort_by_key(|f| {
        let lower = f.to_lowercase();
        let name_starts = lower
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .is_some_and(|n| n.starts_with(query));
        (
            !(lower.starts_with(query) || name_starts),
            f.matches('/').count(),
            (*f).clone(),
        )
    });
    matching
        .into_iter()
        .map(|f| Candidate {
            insert: f.clone(),
            label: f.clone(),
            detail: String::new(),
            complete: !f.ends_with('/'),
        })
        .collect()
}

/// The first line of `text`, at most 60 characters.
pub fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut short: String = line.chars().take(60).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spot_is_a_command_its_argument_or_an_at_path() {
        assert_eq!(spot("/mo", 3).map(|s| s.target), Some(Target::Command));
        let argument = spot("/model qw", 9).expect("an argument");
        assert_eq!(argument.target, Target::Argument("/model"));
        assert_eq!((argument.range, argument.query.as_str()), (7..9, "qw"));
        assert_eq!(spot("/help me", 8), None, "/help takes no argument");
        assert_eq!(spot("/model a b", 10), None);
        assert_eq!(spot(" /model", 7), None, "only at the prompt's start");
        let path = spot("look at @src/ma", 15).expect("a path");
        assert_eq!((path.range, path.query.as_str()), (9..15, "src/ma"));
        assert_eq!(
            spot("mail me@home", 12),
            None,
            "an @ inside a word is not a path"
        );
        assert_eq!(
            spot("é @", "é @".len()).map(|s| s.query),
            Some(String::new())
        );
        assert_eq!(spot("plain words", 11), None);
        assert_eq!(spot("x", 5), None, "a cursor past the end is no spot");
    }

    #[test]
    fn candidates_filter_each_list() {
        let names: Vec<String> = candidates(&spot("/re", 3).expect("spot"), &Sources::default())
            .into_iter()
            .map(|c| c.insert)
            .collect();
        assert_eq!(names, ["/resume ", "/retry"]);
        let agents = candidates(&spot("/agent c", 8).expect("spot"), &Sources::default());
        let names: Vec<&str> = agents.iter().map(|c| c.insert.as_str()).collect();
        assert_eq!(
            names,
            ["coder", "casual"],
            "registry order, aliases too (chat)"
        );
        assert!(agents.iter().all(|c| !c.detail.is_empty()), "described");
        let by_alias = candidates(&spot("/agent tal", 10).expect("spot"), &Sources::default());
        assert_eq!(by_alias.len(), 1);
        assert_eq!(
            (by_alias[0].insert.as_str(), by_alias[0].label.as_str()),
            ("casual", "casual (talk)")
        );
        let all = candidates(&spot("/agent ", 7).expect("spot"), &Sources::default());
        assert_eq!(
            all.len(),
            crate::agents::REGISTRY.len() + 1,
            "every agent and auto"
        );
        assert_eq!(all[0].insert, "auto");
        let models = [
            ModelEntry {
                name: "qwen2.5-coder:7b".into(),
                detail: String::new(),
            },
            ModelEntry {
                name: "llama3".into(),
                detail: String::new(),
            },
        ];
        let sources = Sources {
            models: Some(&models),
            ..Sources::default()
        };
        let found = candidates(&spot("/model CODER", 12).expect("spot"), &sources);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].insert, "qwen2.5-coder:7b");
        let files = ["README.md", "src/", "src/main.rs", "docs/readme-old.md"].map(String::from);
        let sources = Sources {
            files: Some(&files),
            ..Sources::default()
        };
        let found: Vec<String> = candidates(&spot("@read", 5).expect("spot"), &sources)
            .into_iter()
            .map(|c| c.insert)
            .collect();
        assert_eq!(found, ["README.md", "docs/readme-old.md"]);
        let dir = candidates(&spot("@sr", 3).expect("spot"), &sources);
        assert!(!dir[0].complete, "a directory continues");
    }
}
