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

use crate::agent::{self, BlockRecord, Command, Event, Outcome, Status};
use crate::cli::{Exit, Resume};
use crate::config::Config;
use crate::llm::ChatModel;
use crate::protocol::expand_placeholders;
use crate::session::Sessions;
use crate::terminal_safe::{json_line, terminal_safe};

/// What a headless run is given besides the configuration and the model.
pub struct Task {
    pub prompt: String,
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
        json,
        sessions,
        resume,
    } = task;
    // Listen for Ctrl+C before the task starts, so an early interrupt is never lost.
    let mut interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut handle = agent::spawn_with(Arc::clone(&config), model, sessions);
    if let Some(resume) = resume {
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
                    for warning in &warnings {
                        say(&mut std::io::stderr(), &format!("seek: warning: {warning}"));
                    }
                    if json {
                        let line = json!({"type": "resumed", "id": id, "turns": turns, "warnings": warnings});
                        say_json(&mut std::io::stdout(), &line)?;
                    } else {
                        say(
                            &mut std::io::stderr(),
                            &format!("seek: continuing session {id} ({turns} tasks)"),
                        );
                    }
                    break;
                }
                Some(Event::Error { message }) => {
                    say(&mut std::io::stderr(), &format!("seek: {message}"));
                    return Ok(Exit::Usage);
                }
                Some(_) => {}
                None => return Ok(Exit::TaskFailed),
            }
        }
    }
    let _ = handle.commands.send(Command::Submit {
        prompt,
        agent: None,
    });
    let mut interrupted = false;
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    let exit = loop {
        let event = tokio::select! {
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
            say_json(&mut stdout, &event)?;
        } else {
            progress(&mut stderr, &event);
        }
        if let Event::TurnFinished {
            outcome,
            answer,
            reasoning,
            agent,
            rounds,
            blocks,
            message,
            ..
        } = &event
        {
            if json {
                let done = json!({
                    "type": "done",
                    "success": outcome.success(),
                    "outcome": outcome,
                    "answer": answer,
                    "reasoning": reasoning,
                    "agent": agent,
                    "rounds": rounds,
                    "message": message,
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
                });
                say_json(&mut stdout, &done)?;
            } else {
                let last_round: Vec<&BlockRecord> =
                    blocks.iter().filter(|b| b.round == *rounds).collect();
                let answer = render_answer(answer, &last_round);
                stdout.write_all(terminal_safe(&answer).as_bytes())?;
                if let Some(message) = message.as_ref().filter(|_| *outcome != Outcome::Done) {
                    say(&mut stderr, &format!("seek: {message}"));
                }
            }
            stdout.flush()?;
            break if interrupted {
                Exit::Interrupted
            } else {
                match outcome {
                    Outcome::Done => Exit::Success,
                    Outcome::ModelError => Exit::ModelServer,
                    Outcome::Stopped => Exit::Interrupted,
                    Outcome::GaveUp | Outcome::RoundLimit | Outcome::NeedsClarification => {
                        Exit::TaskFailed
                    }
                }
            };
        }
    };
    let _ = handle.commands.send(Command::Shutdown);
    let _ = handle.task.await;
    Ok(exit)
}

/// The answer with each `block:N` replaced by the block's code and its result.
pub fn render_answer(answer: &str, blocks: &[&BlockRecord]) -> String {
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
    if block.stopped {
        "stopped".into()
    } else if block.timed_out {
        "timed out".into()
    } else {
        block
            .exit_code
            .map_or_else(|| "failed".into(), |c| format!("exit {c}"))
    }
}

/// Writes one line of plain text to stderr, made terminal-safe (a failing stderr is ignored:
/// there is nowhere left to say so).
fn say(err: &mut impl Write, line: &str) {
    let _ = writeln!(err, "{}", terminal_safe(line));
}

/// Writes `value` as one JSON line with every control character escaped.
fn say_json(out: &mut impl Write, value: &impl serde::Serialize) -> std::io::Result<()> {
    let line = json_line(value).map_err(std::io::Error::other)?;
    writeln!(out, "{line}")
}

fn progress(err: &mut impl Write, event: &Event) {
    if let Some(line) = progress_line(event) {
        say(err, &line);
    }
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
        Event::Retrying {
            attempt,
            delay_ms,
            reason,
        } => {
            format!(
                "seek: {reason}; retrying ({attempt}) in {:.1} s",
                *delay_ms as f64 / 1000.0
            )
        }
        Event::Error { message } => format!("seek: error: {message}"),
        _ => return None,
    })
}
