//! Syntax highlighting of code with syntect, in the terminal's own ANSI palette (so it suits any
//! theme and `NO_COLOR` can drop it).
//!
//! Owns the syntax set (loaded once, off the first frame's path: `warm_up` starts loading it on
//! a thread at launch) and the mapping from scopes to colours. It must not wrap or lay out text.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};

use crate::tool_kind::ToolKind;

/// Past these sizes code is shown plain: highlighting must never make the screen lag.
const MAX_HIGHLIGHTED_BYTES: usize = 256 * 1024;
const MAX_HIGHLIGHTED_LINE: usize = 2_000;

static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
static PALETTE: OnceLock<Vec<(Scope, Style)>> = OnceLock::new();

/// Starts loading the syntax definitions on a background thread, so the first highlighted block
/// does not wait for them (and the first frame never does).
pub fn warm_up() {
    std::thread::spawn(|| {
        syntaxes();
        palette();
    });
}

fn syntaxes() -> &'static SyntaxSet {
    SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Scope prefixes and their colours, most specific first.
fn palette() -> &'static [(Scope, Style)] {
    PALETTE.get_or_init(|| {
        let table: [(&str, Style); 14] = [
            ("comment", Style::new().fg(Color::DarkGray)),
            ("string", Style::new().fg(Color::Green)),
            ("constant.character.escape", Style::new().fg(Color::Cyan)),
            ("constant", Style::new().fg(Color::Cyan)),
            ("entity.name.function", Style::new().fg(Color::Blue)),
            ("support.function", Style::new().fg(Color::Blue)),
            ("variable.function", Style::new().fg(Color::Blue)),
            ("entity.name", Style::new().fg(Color::Yellow)),
            ("support.type", Style::new().fg(Color::Yellow)),
            ("support.class", Style::new().fg(Color::Yellow)),
            ("storage.type", Style::new().fg(Color::Yellow)),
            ("storage", Style::new().fg(Color::Magenta)),
            ("keyword", Style::new().fg(Color::Magenta)),
            ("markup.heading", Style::new().add_modifier(Modifier::BOLD)),
        ];
        table
            .into_iter()
            .filter_map(|(name, style)| Scope::new(name).ok().map(|s| (s, style)))
            .collect()
    })
}

fn find_syntax(language: &str) -> Option<&'static SyntaxReference> {
    let set = syntaxes();
    let lower = language.to_ascii_lowercase();
    let token = match lower.as_str() {
        "" | "text" | "txt" | "plain" | "output" | "console" => return None,
        "zsh" => "bash",
        "js" | "javascript" | "jsx" => "js",
        // A tool's aliases (`py`, `sh`, `golang`, …) name its language.
        other => ToolKind::from_word(other).map_or(other, |kind| kind.tag()),
    };
    set.find_syntax_by_token(token)
}

/// Splits `code` into lines of coloured spans. Unknown languages, huge blocks and lines a
/// highlighter could choke on come back plain.
pub(crate) fn highlight(code: &str, language: &str) -> Vec<Vec<Span<'static>>> {
    let plain = || {
        code.lines()
            .map(|l| vec![Span::raw(l.to_owned())])
            .collect()
    };
    if code.len() > MAX_HIGHLIGHTED_BYTES || code.lines().any(|l| l.len() > MAX_HIGHLIGHTED_LINE) {
        return plain();
    }
    let Some(syntax) = find_syntax(language) else {
        return plain();
    };
    let set = syntaxes();
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut out = Vec::new();
    for line in code.split_inclusive('\n') {
        let Ok(ops) = state.parse_line(line, set) else {
            return plain();
        };
        let text = line.strip_suffix('\n').unwrap_or(line);
        let mut spans = Vec::new();
        let mut at = 0;
        for (offset, op) in ops {
            let offset = offset.min(text.len());
            if offset > at {
                spans.push(Span::styled(text[at..offset].to_owned(), style_of(&stack)));
                at = offset;
            }
            if stack.apply(&op).is_err() {
                return plain();
            }
        }
        if at < text.len() {
            spans.push(Span::styled(text[at..].to_owned(), style_of(&stack)));
        }
        out.push(spans);
    }
    out
}

fn style_of(stack: &ScopeStack) -> Style {
    for scope in stack.as_slice().iter().rev() {
        for (prefix, style) in palette() {
            if prefix.is_prefix_of(*scope) {
                return *style;
            }
        }
    }
    Style::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_gets_colours_and_keeps_its_text() {
        let code = "def f(x):\n    return \"hi\"  # note\n";
        let lines = highlight(code, "python");
        assert_eq!(lines.len(), 2);
        let text: Vec<String> = lines
            .iter()
            .map(|l| l.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(text, ["def f(x):", "    return \"hi\"  # note"]);
        let style_of = |needle: &str| {
            lines
                .iter()
                .flatten()
                .find(|s| s.content.contains(needle))
                .map(|s| s.style)
        };
        assert_eq!(style_of("def"), Some(Style::new().fg(Color::Yellow)));
        assert_eq!(style_of("hi"), Some(Style::new().fg(Color::Green)));
        assert_eq!(style_of("note"), Some(Style::new().fg(Color::DarkGray)));
    }

    #[test]
    fn unknown_languages_and_huge_lines_are_plain() {
        assert_eq!(
            highlight("a b\n", "nonsense-lang"),
            vec![vec![Span::raw("a b")]]
        );
        let long = "x".repeat(MAX_HIGHLIGHTED_LINE + 1);
        assert_eq!(highlight(&long, "python"), vec![vec![Span::raw(long)]]);
    }
}
