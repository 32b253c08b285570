//! Plain mode's progress lines on stderr: one line per event worth a line, each distinct error
//! once, a retried request's attempts on short lines, and `thinking…` after the built-in
//! engine's `loading …` (the order in which they happen).
//!
//! Pure: it turns events into lines; `headless` writes them. It must not print.

use crate::agent::{BlockRecord, Event, Status};

use super::{failure_word, plan, web};

/// Plain mode's progress on stderr. Each distinct error is shown once: a retried request's
/// attempts share one line each without repeating the error, and the error that ends the task
/// says how many times it was tried.
#[derive(Debug, Default)]
pub(super) struct Progress {
    /// The error being retried, and the last retry's number.
    retrying: Option<(String, u32)>,
    /// Errors already printed in full.
    shown: Vec<String>,
    /// The plan step running or run last, for a plan's answer.
    last_step: plan::LastStep,
    /// The built-in engine loads its model after the task's first `Status`: `thinking…` waits
    /// until the model is ready, so it follows `loading …` as it happens.
    thinking_after_loading: bool,
    /// The `thinking…` line held while the model is made ready.
    held_thinking: Option<String>,
}

impl Progress {
    /// Progress for a run whose model is seek's built-in engine (`built_in`) or a server's.
    pub(super) fn new(built_in: bool) -> Self {
        Self {
            thinking_after_loading: built_in,
            ..Self::default()
        }
    }

    /// The stderr line for `event`, if any (two lines when a held `thinking…` comes first).
    pub(super) fn line(&mut self, event: &Event) -> Option<String> {
        match event {
            Event::Status {
                status: Status::Thinking,
                round: 1,
                ..
            } if self.thinking_after_loading => {
                self.held_thinking = progress_line(event);
                return None;
            }
            Event::ModelPreparing { stage, .. }
                if matches!(stage.as_str(), "download" | "verify" | "load") =>
            {
                return progress_line(event);
            }
            // The model was never made ready: there was no thinking.
            Event::Error { .. } | Event::TurnFinished { .. } => self.held_thinking = None,
            _ => {}
        }
        let line = self.event_line(event);
        match (self.held_thinking.take(), line) {
            (Some(held), Some(line)) => Some(format!("{held}\n{line}")),
            (held, line) => held.or(line),
        }
    }

    /// The stderr line for `event`, if any, once a held `thinking…` is out of the way.
    fn event_line(&mut self, event: &Event) -> Option<String> {
        match event {
            Event::Retrying {
                attempt,
                delay_ms,
                reason,
            } => {
                let delay = *delay_ms as f64 / 1000.0;
                let same = self
                    .retrying
                    .as_ref()
                    .is_some_and(|(last, _)| last == reason);
                self.retrying = Some((reason.clone(), *attempt));
                Some(if same {
                    format!("seek: retrying ({attempt}) in {delay:.1} s")
                } else {
                    format!(
                        "seek: {}; retrying ({attempt}) in {delay:.1} s",
                        what_failed(reason)
                    )
                })
            }
            Event::Error { message } => {
                let tries = match self.retrying.take() {
                    Some((reason, retries)) if &reason == message => {
                        format!(" (tried {} times)", retries + 1)
                    }
                    _ => String::new(),
                };
                if self.has_shown(message) {
                    return None;
                }
                self.shown.push(message.clone());
                Some(format!("seek: error: {message}{tries}"))
            }
            // Said here with -p's flag; the task's ending message says the same, not again.
            Event::BlocksAgentCannotRun {
                agent,
                tools,
                can_run,
                ..
            } => {
                use crate::agent::foreign::{Foreign, ending_message, for_user};
                let foreign = Foreign {
                    tools: tools.clone(),
                    can_run: *can_run,
                };
                self.shown.push(ending_message(*agent, &foreign));
                let words = for_user(*agent, &foreign, |other| format!("`--agent {other}`"));
                Some(format!("seek: not run: {words}"))
            }
            // A reply streamed: the retried failure is over.
            Event::AnswerComplete { .. } => {
                self.retrying = None;
                progress_line(event)
            }
            Event::StepStarted { .. } => {
                self.last_step = plan::LastStep::default();
                plan::plan_line(event)
            }
            // A step's own events: its blocks kept for the answer, its lines indented.
            Event::Step { event: inner, .. } => {
                self.last_step.saw(inner);
                self.event_line(inner).map(|line| format!("  {line}"))
            }
            _ => plan::plan_line(event)
                .or_else(|| web::web_line(event))
                .or_else(|| progress_line(event)),
        }
    }

    /// The blocks of the last step's last round (a plan's answer expands them).
    pub(super) fn last_step_round(&self) -> Vec<&BlockRecord> {
        self.last_step.last_round()
    }

    pub(super) fn has_shown(&self, message: &str) -> bool {
        self.shown.iter().any(|m| m == message)
    }
}

/// What failed, without why: an error's text up to its first `: ` (`cannot reach the model
/// server at URL`), shown while it is retried; the whole text comes with the final error.
fn what_failed(reason: &str) -> &str {
    reason.split_once(": ").map_or(reason, |(what, _)| what)
}

/// The stderr line an event gets in plain mode, if any.
fn progress_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::Status {
            status: Status::Thinking,
            round,
            ..
        } if *round == 1 => "seek: thinking…".to_owned(),
        Event::Status {
            status: Status::Thinking,
            round,
            ..
        } => format!("seek: round {round}…"),
        Event::Status {
            status: Status::Correcting,
            attempt,
            max_attempts,
            ..
        } => {
            format!("seek: correcting (attempt {}/{max_attempts})…", attempt + 1)
        }
        Event::BlockStarted { tool, index, .. } => {
            format!("seek: running {tool} block {index}…")
        }
        Event::SessionStarted { id, .. } => format!("seek: session {id}"),
        // Plain words; the classifier's evidence is in `--json`'s `reason`.
        Event::Routed { route } => format!(
            "seek: → {}",
            crate::terminal_safe::terminal_safe(&route.summary())
        ),
        Event::ContextTrimmed {
            shortened, dropped, ..
        } => format!(
            "seek: context trimmed to fit the model's window ({shortened} outputs shortened, {dropped} older messages left out)"
        ),
        Event::BlocksNotRun { count, limit, .. } => {
            format!(
                "seek: {count} more blocks in the reply were not run (at most {limit} per reply)"
            )
        }
        Event::BlockFinished { record } if record.skipped => {
            format!("  - {} block {}: not run", record.tool_type, record.index)
        }
        Event::BlockFinished { record } => {
            let mark = if record.success {
                "✓".to_owned()
            } else {
                format!("✗ {}", failure_word(record))
            };
            format!(
                "  {mark} {} · {:.2} s",
                record.tool_type,
                record.duration_ms / 1000.0
            )
        }
        Event::ModelPreparing { message, .. } => format!("seek: {message}"),
        Event::ModelSize {
            small: true,
            reason,
            ..
        } => format!(
            "seek: adapted to a small model ({})",
            crate::terminal_safe::terminal_safe(reason)
        ),
        Event::McpServers { servers } => {
            let broken: Vec<String> = servers
                .iter()
                .filter_map(|server| {
                    let why = server.error.as_deref()?;
                    Some(format!(
                        "seek: MCP server `{}` {}: {} (`seek mcp` shows every server)",
                        crate::terminal_safe::escape_invisible(&server.name),
                        match server.state {
                            crate::wire::McpState::Exited => "exited",
                            _ => "failed to start",
                        },
                        crate::terminal_safe::escape_invisible(
                            &why.replace(['\r', '\n', '\t'], " ")
                        )
                    ))
                })
                .collect();
            if broken.is_empty() {
                return None;
            }
            broken.join("\n")
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routers_choice_is_one_clean_progress_line() {
        let routed = Event::Routed {
            route: crate::wire::Route {
                agent: crate::wire::AgentName::File,
                confidence: 0.3,
                reason: "words: rename".into(),
                why: "asks \u{1b}]0;pwned\u{7}about files".into(),
            },
        };
        let line = progress_line(&routed).expect("a line");
        assert!(line.starts_with("seek: → file (asks "), "{line}");
        assert!(line.ends_with("about files · 0.30)"), "{line}");
        assert!(
            !line.contains('\u{1b}') && !line.contains('\u{7}'),
            "{line:?}"
        );
    }

    #[test]
    fn a_retried_error_is_shown_once_with_its_tries() {
        let reason = "cannot reach the model server at http://h:1/v1: reset — is it running?";
        let retrying = |attempt| Event::Retrying {
            attempt,
            delay_ms: 500,
            reason: reason.into(),
        };
        let mut progress = Progress::default();
        let lines: Vec<Option<String>> = [
            retrying(1),
            retrying(2),
            Event::Error {
                message: reason.into(),
            },
            Event::Error {
                message: reason.into(),
            },
        ]
        .iter()
        .map(|e| progress.line(e))
        .collect();
        assert_eq!(
            lines,
            [
                Some(
                    "seek: cannot reach the model server at http://h:1/v1; retrying (1) in 0.5 s"
                        .into()
                ),
                Some("seek: retrying (2) in 0.5 s".into()),
                Some(format!("seek: error: {reason} (tried 3 times)")),
                None,
            ]
        );
        assert!(
            progress.has_shown(reason),
            "the end's message is not repeated"
        );
        let other = progress.line(&Event::Error {
            message: "another".into(),
        });
        assert_eq!(other.as_deref(), Some("seek: error: another"));
    }

    #[test]
    fn with_the_built_in_engine_loading_comes_before_thinking() {
        let thinking = Event::Status {
            status: Status::Thinking,
            round: 1,
            attempt: 0,
            max_attempts: 3,
        };
        let load = Event::ModelPreparing {
            stage: "load".into(),
            model: "smollm2-135m".into(),
            done_bytes: 0,
            total_bytes: None,
            message: "loading smollm2-135m".into(),
        };
        let first_token = Event::AnswerDelta { text: "Hi".into() };
        let mut built_in = Progress::new(true);
        let lines: Vec<String> = [&thinking, &load, &first_token]
            .into_iter()
            .filter_map(|e| built_in.line(e))
            .collect();
        assert_eq!(lines, ["seek: loading smollm2-135m", "seek: thinking…"]);
        // A server: `thinking…` at once (its wait is the model's).
        let mut server = Progress::new(false);
        let lines: Vec<String> = [&thinking, &first_token]
            .into_iter()
            .filter_map(|e| server.line(e))
            .collect();
        assert_eq!(lines, ["seek: thinking…"]);
        // The engine never got ready: no thinking is claimed.
        let mut failed = Progress::new(true);
        assert_eq!(failed.line(&thinking), None);
        let error = Event::Error {
            message: "could not download".into(),
        };
        assert_eq!(
            failed.line(&error).as_deref(),
            Some("seek: error: could not download")
        );
    }
}
