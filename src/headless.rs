//! `seek -p`: one task without the terminal UI. Progress on stderr, the final answer on stdout
//! with each block's result where its placeholder stands; or, with `--json`, every event as a
//! JSON line and a last `done` line.
//!
//! Everything printed passes `crate::terminal_safe`: plain text loses the escape sequences and
//! control characters the model or a block wrote (stdout and stderr alike); JSON stays exact, with
//! every control character escaped. A consumer of the agent's events like the TUI; it must not
//! reach into the agent's workings.

use std::borrow::Cow;
use std::io::Write;
use std::sync::Arc;

use serde_json::json;

use crate::agent::{self, BlockRecord, Command, Event, NotRun, Outcome};
use crate::cli::{Exit, Resume};
use crate::config::Config;
use crate::llm::ChatModel;
use crate::protocol::expand_placeholders;
use crate::session::Sessions;
use crate::terminal_safe::{json_line, terminal_safe};

mod plan;
mod progress;
mod web;

use progress::Progress;

/// What a headless run is given besides the configuration and the model.
pub struct Task {
    /// The user's own words (`Command::Submit`'s `prompt`).
    pub prompt: String,
    /// What stdin held, handed along as data (`Command::Submit`'s `context`).
    pub context: Option<String>,
    pub json: bool,
    /// Where sessions are kept (`None`: nothing is saved).
    pub sessions: Option<Sessions>,
    pub resume: Option<Resume>,
}

/// Runs the task to the end and returns the exit code.
pub async fn run(
    config: Arc<Config>,
    model: Arc<dyn ChatModel>,
    task: Task,
) -> std::io::Result<Exit> {
    let Task {
        prompt,
        context,
        json,
        sessions,
        resume,
    } = task;
    // Listen for Ctrl+C before the task starts, so an early interrupt is never lost.
    let mut interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    // SIGTERM (`timeout`, `kill`, a cancelled CI job) and SIGHUP (the terminal went away) end seek
    // cleanly instead of by the default action: the task is stopped, its processes killed, the
    // MCP servers ended and the session file synced.
    let mut terminations =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut handle = agent::spawn_with(Arc::clone(&config), model, sessions);
    if let Some(resume) = resume
        && let Some(exit) = resume_session(&mut handle, resume, json).await?
    {
        return Ok(exit);
    }
    let _ = handle.commands.send(Command::Submit {
        prompt,
        agent: None,
        context,
    });
    let mut interrupted = false;
    let mut progress = Progress::new(crate::local::is_local(&config));
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    let exit = loop {
        let event = tokio::select! {
            _ = terminations.recv() => {
                let _ = writeln!(stderr, "seek: terminated");
                let _ = handle.commands.send(Command::Shutdown);
                let _ = handle.task.await;
                return Ok(Exit::Interrupted);
            }
            _ = hangups.recv() => {
                let _ = handle.commands.send(Command::Shutdown);
                let _ = handle.task.await;
                return Ok(Exit::Interrupted);
            }
            _ = interrupts.recv() => {
                if interrupted {
                    // A second Ctrl+C: the user does not want to wait for a clean stop.
                    let _ = writeln!(stderr, "seek: interrupted");
                    return Ok(Exit::Interrupted);
                }
                interrupted = true;
                let _ = writeln!(stderr, "seek: stopping… (Ctrl+C again to quit at once)");
                let _ = handle.commands.send(Command::Stop);
                continue;
            }
            event = handle.events.recv() => event,
        };
        let Some(event) = event else {
            break Exit::TaskFailed;
        };
        if json {
            say_json(&mut stdout, &mut stderr, &crate::wire::event_json(&event))?;
        } else if let Some(line) = progress.line(&event) {
            say(&mut stderr, &line);
        }
        if let Event::TurnFinished { outcome, .. } = &event {
            if json {
                say_json(&mut stdout, &mut stderr, &done_line(&event))?;
            } else {
                print_answer(&mut stdout, &mut stderr, &event, &progress)?;
            }
            stdout.flush()?;
            break exit_for(*outcome, interrupted);
        }
    };
    let _ = handle.commands.send(Command::Shutdown);
    let _ = handle.task.await;
    Ok(exit)
}

/// Resumes a saved session before the task; `Some(exit)` when it cannot be resumed.
async fn resume_session(
    handle: &mut agent::AgentHandle,
    resume: Resume,
    json: bool,
) -> std::io::Result<Option<Exit>> {
    let id = match resume {
        Resume::Latest => None,
        Resume::Id(id) => Some(id),
    };
    let _ = handle.commands.send(Command::Resume { id });
    loop {
        match handle.events.recv().await {
            Some(Event::Resumed {
                id,
                turns,
                warnings,
                ..
            }) => {
                let mut stderr = std::io::stderr();
                for warning in &warnings {
                    say(&mut stderr, &format!("seek: warning: {warning}"));
                }
                if json {
                    let line =
                        json!({"type": "resumed", "id": id, "turns": turns, "warnings": warnings});
                    say_json(&mut std::io::stdout(), &mut stderr, &line)?;
                } else {
                    say(
                        &mut stderr,
                        &format!("seek: continuing session {id} ({turns} tasks)"),
                    );
                }
                return Ok(None);
            }
            Some(Event::Error { message }) => {
                say(&mut std::io::stderr(), &format!("seek: {message}"));
                return Ok(Some(Exit::Usage));
            }
            Some(_) => {}
            None => return Ok(Some(Exit::TaskFailed)),
        }
    }
}

/// The exit code for how the task ended; a Ctrl+C wins over the outcome.
fn exit_for(outcome: Outcome, interrupted: bool) -> Exit {
    if interrupted {
        return Exit::Interrupted;
    }
    match outcome {
        Outcome::Done => Exit::Success,
        Outcome::ModelError => Exit::ModelServer,
        Outcome::Stopped => Exit::Interrupted,
        Outcome::GaveUp | Outcome::RoundLimit | Outcome::NeedsClarification => Exit::TaskFailed,
    }
}

/// `--json`'s last line: the task's end with every block's result.
fn done_line(finished: &Event) -> serde_json::Value {
    let Event::TurnFinished {
        outcome,
        answer,
        reasoning,
        agent,
        rounds,
        blocks,
        message,
        usage,
        plan,
        ..
    } = finished
    else {
        return json!({"type": "done", "success": false});
    };
    json!({
        "type": "done",
        "success": outcome.success(),
        "outcome": outcome,
        "answer": answer,
        "reasoning": reasoning,
        "agent": agent,
        "rounds": rounds,
        "message": message,
        // The task's tokens (`null` when no reply reached seek).
        "usage": usage,
        // The planner's steps with their final status; null for other agents.
        "plan": plan,
        "blocks": blocks.iter().map(|b| json!({
            "tool_type": b.tool_type,
            "block": b.block,
            "feedback": b.feedback,
            "success": b.success,
            "exit_code": b.exit_code,
            "timed_out": b.timed_out,
            "skipped": b.skipped,
            "round": b.round,
        })).collect::<Vec<_>>(),
    })
}

/// Plain mode's end: the answer with the last round's blocks on stdout, and why the task did
/// not finish (if it did not) on stderr.
fn print_answer(
    stdout: &mut impl Write,
    stderr: &mut impl Write,
    finished: &Event,
    progress: &Progress,
) -> std::io::Result<()> {
    let Event::TurnFinished {
        outcome,
        answer,
        rounds,
        blocks,
        message,
        plan,
        ..
    } = finished
    else {
        return Ok(());
    };
    // A plan's answer is its last step's, whose placeholders name that step's last round.
    let last_round: Vec<&BlockRecord> = if plan.is_some() {
        progress.last_step_round()
    } else {
        blocks.iter().filter(|b| b.round == *rounds).collect()
    };
    let answer = render_answer(answer, &last_round);
    stdout.write_all(terminal_safe(&answer).as_bytes())?;
    if let Some(message) = message
        .as_ref()
        .filter(|m| *outcome != Outcome::Done && !progress.has_shown(m))
    {
        say(stderr, &format!("seek: {message}"));
    }
    Ok(())
}

/// The answer with each `block:N` replaced by the block's code and its result.
pub(crate) fn render_answer(answer: &str, blocks: &[&BlockRecord]) -> String {
    let text = expand_placeholders(answer, |index| {
        let block = blocks.iter().find(|b| b.index == index)?;
        let status = if block.skipped {
            "not run".to_owned()
        } else if block.success {
            "✓".to_owned()
        } else {
            format!("✗ {}", failure_word(block))
        };
        let path = block
            .save_path
            .as_deref()
            .map(|p| format!(":{p}"))
            .unwrap_or_default();
        let mut out = format!(
            "```{}{path}\n{}```\n[{} {status}]\n{}",
            block.tool_type, block.block, block.tool_type, block.output
        );
        // The placeholder's own line ending follows the expansion.
        if out.ends_with('\n') {
            out.pop();
        }
        Some(Cow::Owned(out))
    });
    let mut text = text.into_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn failure_word(block: &BlockRecord) -> String {
    if let Some(why) = block.not_run.and_then(refusal_word) {
        why.into()
    } else if block.stopped {
        "stopped".into()
    } else if block.timed_out {
        "timed out".into()
    } else {
        block
            .exit_code
            .map_or_else(|| "failed".into(), |c| format!("exit {c}"))
    }
}

/// How a refused block is named (the same words as the terminal UI's).
fn refusal_word(why: NotRun) -> Option<&'static str> {
    match why {
        NotRun::Interactive => Some("refused: interactive input"),
        NotRun::SafeMode => Some("refused by safe mode"),
        _ => None,
    }
}

/// Writes one line of plain text to stderr, made terminal-safe (a failing stderr is ignored:
/// there is nowhere left to say so).
fn say(err: &mut impl Write, line: &str) {
    let _ = writeln!(err, "{}", terminal_safe(line));
}

/// Writes `value` as one JSON line with every control character escaped. A value that cannot
/// be encoded becomes an `error` line (and a message on stderr), never an empty or partial
/// line; only a failing stdout is an error.
fn say_json(
    out: &mut impl Write,
    err: &mut impl Write,
    value: &impl serde::Serialize,
) -> std::io::Result<()> {
    let line = match json_line(value) {
        Ok(line) => line,
        Err(e) => {
            let message = format!("an event could not be written as JSON: {e}");
            tracing::error!("{}", message);
            say(err, &format!("seek: {message}"));
            json_line(&json!({"type": "error", "message": message})).unwrap_or_else(|_| {
                r#"{"type":"error","message":"an event could not be written as JSON"}"#.to_owned()
            })
        }
    };
    writeln!(out, "{line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serialising it fails: JSON object keys must be strings.
    fn unencodable() -> std::collections::BTreeMap<(u8, u8), u8> {
        std::collections::BTreeMap::from([((1, 2), 3)])
    }

    #[test]
    fn a_value_that_cannot_be_encoded_becomes_an_error_line_and_a_message() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        say_json(&mut out, &mut err, &unencodable()).expect("stdout works");
        let out = String::from_utf8(out).expect("utf-8");
        assert_eq!(out.lines().count(), 1, "one line: {out:?}");
        let line: serde_json::Value = serde_json::from_str(out.trim_end()).expect("valid JSON");
        assert_eq!(line["type"], "error");
        let message = line["message"].as_str().expect("a message");
        assert!(
            message.starts_with("an event could not be written as JSON: "),
            "{message}"
        );
        let err = String::from_utf8(err).expect("utf-8");
        assert!(
            err.starts_with("seek: an event could not be written as JSON"),
            "{err}"
        );
    }

    #[test]
    fn an_encodable_value_is_one_exact_line() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let event = Event::Error {
            message: "x\u{1b}y".into(),
        };
        say_json(&mut out, &mut err, &event).expect("stdout works");
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            format!("{}\n", json_line(&event).expect("encodable"))
        );
        assert!(err.is_empty());
    }

    #[test]
    fn a_ctrl_c_wins_over_the_outcome() {
        assert_eq!(exit_for(Outcome::Done, true), Exit::Interrupted);
        assert_eq!(exit_for(Outcome::Done, false), Exit::Success);
        assert_eq!(exit_for(Outcome::ModelError, false), Exit::ModelServer);
        assert_eq!(exit_for(Outcome::Stopped, false), Exit::Interrupted);
        assert_eq!(exit_for(Outcome::GaveUp, false), Exit::TaskFailed);
    }
}
