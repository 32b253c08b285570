//! The router's labelled examples: lines `agent<TAB>prompt` (`assets/router/*.tsv`), blank
//! lines and `#` comments skipped.
//!
//! Parsing only; it must not read files (the training set is compiled in, and the held-apart
//! set is read by its test).

use thiserror::Error;

use crate::wire::AgentName;

/// The agents the router picks among, in a fixed order (the classifier's label order: ties go
/// to the earlier one).
pub const LABELS: [AgentName; 5] = [
    AgentName::Casual,
    AgentName::Coder,
    AgentName::File,
    AgentName::Web,
    AgentName::Planner,
];

/// One labelled prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    pub agent: AgentName,
    pub prompt: String,
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum DataError {
    #[error("line {line}: expected `agent<TAB>prompt`")]
    NoTab { line: usize },
    #[error("line {line}: {label:?} is not one of casual, coder, file, web, planner")]
    UnknownLabel { line: usize, label: String },
    #[error("line {line}: the prompt is empty")]
    EmptyPrompt { line: usize },
}

/// The examples in `text`, in file order.
pub fn parse(text: &str) -> Result<Vec<Example>, DataError> {
    let mut examples = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        let (label, prompt) = raw.split_once('\t').ok_or(DataError::NoTab { line })?;
        let agent = label_of(label.trim()).ok_or_else(|| DataError::UnknownLabel {
            line,
            label: label.to_owned(),
        })?;
        let prompt = prompt.trim();
        if prompt.is_empty() {
            return Err(DataError::EmptyPrompt { line });
        }
        examples.push(Example {
            agent,
            prompt: prompt.to_owned(),
        });
    }
    Ok(examples)
}

/// The label spelled exactly as the wire spells it (no aliases: the data must be unambiguous).
pub(crate) fn label_of(name: &str) -> Option<AgentName> {
    LABELS.into_iter().find(|agent| agent.as_str() == name)
}

/// The position of `agent` in `LABELS`.
pub fn index_of(agent: AgentName) -> Option<usize> {
    LABELS.iter().position(|&a| a == agent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_comments_and_blanks() {
        let text = "# a comment\n\ncasual\thello there\ncoder\t  run the tests  \n";
        assert_eq!(
            parse(text),
            Ok(vec![
                Example {
                    agent: AgentName::Casual,
                    prompt: "hello there".into()
                },
                Example {
                    agent: AgentName::Coder,
                    prompt: "run the tests".into()
                },
            ])
        );
    }

    #[test]
    fn bad_lines_say_where() {
        assert_eq!(parse("casual hello"), Err(DataError::NoTab { line: 1 }));
        assert_eq!(
            parse("\nauto\thello"),
            Err(DataError::UnknownLabel {
                line: 2,
                label: "auto".into()
            })
        );
        assert_eq!(parse("web\t  "), Err(DataError::EmptyPrompt { line: 1 }));
    }

    #[test]
    fn the_shipped_sets_parse_and_cover_every_label() {
        for (name, text) in [
            (
                "train",
                include_str!("../../../../../assets/router/train.tsv"),
            ),
            (
                "heldout",
                include_str!("../../../../../assets/router/heldout.tsv"),
            ),
        ] {
            let examples = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            for label in LABELS {
                assert!(
                    examples.iter().any(|e| e.agent == label),
                    "{name} has no {label}"
                );
            }
        }
    }
}
