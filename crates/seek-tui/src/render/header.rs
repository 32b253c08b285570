//! The header row: seek, the agent, the model, the sandbox and approval badges and the work
//! dir. It shortens instead of dropping things: long labels become short badges, the provider
//! goes, the work dir loses its middle (`~/src/…/deep/project`), the model is cut and the
//! agent dropped; the work dir and the badges stay at every width.
//!
//! Owns the header's look at a given width. It must not read the environment or the
//! configuration (the caller gives the values; `config::abbreviate_home` shortens the work dir).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::text::{sanitize, width};
use crate::config::{AgentName, Approval};
use crate::exec::sandbox::SandboxMode;

/// How blocks are confined, as the header shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxBadge {
    /// The kernel confines blocks in this mode (or the mode is off).
    Mode(SandboxMode),
    /// A mode is set, but this kernel cannot confine blocks.
    Unavailable,
}

impl SandboxBadge {
    /// The badge for `mode` on a machine whose kernel can (`supported`) or cannot confine.
    pub fn new(mode: SandboxMode, supported: bool) -> Self {
        if mode == SandboxMode::Off || supported {
            Self::Mode(mode)
        } else {
            Self::Unavailable
        }
    }

    fn long(self) -> &'static str {
        match self {
            Self::Mode(SandboxMode::WorkspaceWrite) => "sandbox workspace-write",
            Self::Mode(SandboxMode::ReadOnly) => "sandbox read-only",
            Self::Mode(SandboxMode::Off) => "sandbox OFF",
            Self::Unavailable => "no sandbox here",
        }
    }

    fn short(self) -> &'static str {
        match self {
            Self::Mode(SandboxMode::WorkspaceWrite) => "ws-write",
            Self::Mode(SandboxMode::ReadOnly) => "read-only",
            Self::Mode(SandboxMode::Off) => "OFF",
            Self::Unavailable => "unconfined",
        }
    }

    fn style(self) -> Style {
        match self {
            Self::Mode(SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly) => {
                Style::new().fg(Color::Green)
            }
            Self::Mode(SandboxMode::Off) | Self::Unavailable => {
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
            }
        }
    }
}

fn approval_style(approval: Approval) -> Style {
    match approval {
        Approval::Auto => dim(),
        Approval::Ask | Approval::Never => Style::new().fg(Color::Yellow),
    }
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// `path` in at most `max` columns: its first component, an ellipsis and as many of its last
/// components as fit (`~/src/…/deep/project`), else the end of its last one.
pub(crate) fn shorten_path(path: &str, max: usize) -> String {
    if width(path) <= max {
        return path.to_owned();
    }
    let parts: Vec<&str> = path.split('/').collect();
    // An absolute path keeps its first directory: `/srv/…/project`.
    let head_len = if parts.first().is_some_and(|p| p.is_empty()) {
        2
    } else {
        1
    };
    if parts.len() > head_len + 1 {
        let head = parts[..head_len].join("/");
        for kept in (1..parts.len() - head_len).rev() {
            let shown = format!("{head}/…/{}", parts[parts.len() - kept..].join("/"));
            if width(&shown) <= max {
                return shown;
            }
        }
    }
    let last = parts.last().copied().unwrap_or_default();
    let shown = format!("…/{last}");
    if width(&shown) <= max {
        return shown;
    }
    cut_start(last, max)
}

/// The end of `text` in at most `max` columns, an ellipsis first.
fn cut_start(text: &str, max: usize) -> String {
    if max == 0 {
        return String::new();
    }
    let mut kept: Vec<char> = Vec::new();
    let mut used = 1;
    for c in text.chars().rev() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w > max {
            break;
        }
        used += w;
        kept.push(c);
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
}

/// The start of `text` in at most `max` columns, an ellipsis last.
fn cut_end(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 1;
    for c in text.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// What the header shows.
pub struct HeaderParts<'a> {
    pub agent: AgentName,
    /// `model @ provider` (a server address after it is dropped).
    pub model: &'a str,
    pub sandbox: Option<SandboxBadge>,
    pub approval: Option<Approval>,
    /// The work dir, home as `~`.
    pub work_dir: &'a str,
}

/// The narrowest the work dir gets before the model and the agent give way.
const WORK_DIR_FLOOR: usize = 20;
/// The narrowest the model gets before it is dropped.
const MODEL_FLOOR: usize = 12;

/// One way to lay the header out, from the richest to the poorest.
struct Shape {
    long_labels: bool,
    provider: bool,
    agent: bool,
    model_max: Option<usize>,
    work_dir_floor: usize,
}

/// The header's left and right parts at `columns`.
pub fn header(parts: &HeaderParts<'_>, columns: usize) -> (Line<'static>, Line<'static>) {
    let model = sanitize(model_and_provider(parts.model)).into_owned();
    let work_dir = sanitize(parts.work_dir).replace('\n', " ");
    let shape = |provider, agent, model_max, work_dir_floor| Shape {
        long_labels: false,
        provider,
        agent,
        model_max,
        work_dir_floor,
    };
    let shapes = [
        Shape {
            long_labels: true,
            ..shape(true, true, None, usize::MAX)
        },
        shape(true, true, None, usize::MAX),
        shape(false, true, None, WORK_DIR_FLOOR),
        shape(false, false, None, WORK_DIR_FLOOR),
        shape(false, false, Some(MODEL_FLOOR), WORK_DIR_FLOOR - 4),
        shape(false, false, Some(0), 1),
    ];
    let mut laid = (Line::default(), Line::default());
    for shape in &shapes {
        let (left, right_without_dir) = lay(parts, &model, shape);
        let fixed = left.width() + right_without_dir.width() + 3;
        let room = columns.saturating_sub(fixed);
        let fits_dir = width(&work_dir) <= room || room >= shape.work_dir_floor;
        let mut right = right_without_dir;
        right.push_span(Span::styled(shorten_path(&work_dir, room.max(1)), dim()));
        right.push_span(Span::raw(" "));
        laid = (left, right);
        if fits_dir && room > 0 {
            break;
        }
    }
    laid
}

/// The left part and the right part without the work dir, for `shape`.
fn lay(parts: &HeaderParts<'_>, model: &str, shape: &Shape) -> (Line<'static>, Line<'static>) {
    let mut left = vec![Span::styled(
        " seek",
        Style::new().add_modifier(Modifier::BOLD),
    )];
    if shape.agent {
        left.push(Span::styled(format!(" · {}", parts.agent), dim()));
    }
    let model = if shape.provider {
        model
    } else {
        model.split_once(" @ ").map_or(model, |(name, _)| name)
    };
    let model = match shape.model_max {
        Some(max) => cut_end(model, max),
        None => model.to_owned(),
    };
    if !model.is_empty() {
        left.push(Span::styled(" · ", dim()));
        left.push(Span::raw(model));
    }
    let mut right = Vec::new();
    let separator = || Span::styled(" · ", dim());
    if let Some(sandbox) = parts.sandbox {
        let label = if shape.long_labels {
            sandbox.long()
        } else {
            sandbox.short()
        };
        right.push(Span::styled(label, sandbox.style()));
        right.push(separator());
    }
    if let Some(approval) = parts.approval {
        let label = if shape.long_labels {
            format!("approval {approval}")
        } else {
            approval.to_string()
        };
        right.push(Span::styled(label, approval_style(approval)));
        right.push(separator());
    }
    if shape.long_labels {
        right.push(Span::styled("workspace ", dim()));
    }
    (Line::from(left), Line::from(right))
}

/// `model @ provider` without the server address (which `/model` shows).
fn model_and_provider(description: &str) -> &str {
    match description.rsplit_once(' ') {
        Some((head, url)) if url.contains("://") => head,
        _ => description,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_long_path_loses_its_middle_first_then_its_start() {
        let path = "~/src/clients/acme/deep/project";
        assert_eq!(shorten_path(path, 80), path);
        assert_eq!(shorten_path(path, 20), "~/…/deep/project");
        assert_eq!(shorten_path(path, 14), "~/…/project");
        assert_eq!(shorten_path(path, 10), "…/project");
        assert_eq!(shorten_path(path, 5), "…ject");
        assert_eq!(
            shorten_path("/srv/data/a/b/project", 17),
            "/srv/…/b/project"
        );
        assert_eq!(shorten_path("x", 0), "");
    }

    #[test]
    fn home_is_a_tilde() {
        let home = Path::new("/home/u");
        assert_eq!(
            crate::config::abbreviate_home(Path::new("/home/u"), Some(home)),
            "~"
        );
        assert_eq!(
            crate::config::abbreviate_home(Path::new("/home/u/p"), Some(home)),
            "~/p"
        );
        assert_eq!(
            crate::config::abbreviate_home(Path::new("/home/uv"), Some(home)),
            "/home/uv"
        );
        assert_eq!(
            crate::config::abbreviate_home(Path::new("/srv"), None),
            "/srv"
        );
    }

    #[test]
    fn the_work_dir_and_the_badges_stay_at_every_width() {
        let parts = HeaderParts {
            agent: AgentName::Coder,
            model: "qwen2.5-coder:7b @ ollama http://127.0.0.1:11434",
            sandbox: Some(SandboxBadge::Mode(SandboxMode::Off)),
            approval: Some(Approval::Ask),
            work_dir: "~/src/clients/acme/deep/project",
        };
        for columns in 20..=220 {
            let (left, right) = header(&parts, columns);
            let text: String = right.spans.iter().map(|s| s.content.as_ref()).collect();
            assert!(text.contains("OFF"), "{columns}: {text}");
            assert!(text.contains("ask"), "{columns}: {text}");
            if columns >= 30 {
                assert!(text.contains("project"), "{columns}: {text}");
            }
            if columns >= 40 {
                assert!(
                    left.width() + right.width() + 2 <= columns,
                    "{columns}: both parts fit"
                );
            }
        }
    }
}

#[cfg(test)]
#[path = "hostile_tests.rs"]
mod hostile_tests;
