//! `seek -p`: one task without the terminal UI. Progress on stderr, the final answer on stdout
//! with each block's result where its placeholder stands; or, with `--json`, every event as a
//! JSON line and a last `done` line.
//!
//! A consumer of the agent's events like the TUI; it must not reach into the agent's workings.

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
                        eprintln!("seek: warning: {warning}");
                    }
                    if json {
                        let line = json!({"type": "resumed", "id": id, "turns": turns, "warnings": warnings});
                        println!("{line}");
                    } else {
                        eprintln!("seek: continuing session {id} ({turns} tasks)");
                    }
                    break;
                }
                Some(Event::Error { message }) => {
                    eprintln!("seek: {message}");
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
            writeln!(
                stdout,
                "{}",
                serde_json::to_string(&event).unwrap_or_default()
            )?;
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
                writeln!(stdout, "{done}")?;
            } else {
                let last_round: Vec<&BlockRecord> =
                    blocks.iter().filter(|b| b.round == *rounds).collect();
                write!(stdout, "{}", render_answer(answer, &last_round))?;
                if let Some(message) = message.as_ref().filter(|_| *outcome != Outcome::Done) {
                    let _ = writeln!(stderr, "seek: {message}");
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

fn progress(err: &mut impl Write, event: &Event) {
    let _ = match event {
        Event::Status {
            status: Status::Thinking,
            round,
            ..
        } if *round == 1 => writeln!(err, "seek: thinking…"),
        Event::Status {
            status: Status::Thinking,
            round,
            ..
        } => writeln!(err, "seek: round {round}…"),
        Event::Status {
            status: Status::Correcting,
            attempt,
            max_attempts,
            ..
        } => {
            writeln!(
                err,
                "seek: correcting (attempt {}/{max_attempts})…",
                attempt + 1
            )
        }
        Event::BlockStarted { tool, index, .. } => {
            writeln!(err, "seek: running {tool} block {index}…")
        }
        Event::SessionStarted { id, .. } => writeln!(err, "seek: session {id}"),
        Event::ContextTrimmed {
            shortened, dropped, ..
        } => writeln!(
            err,
            "seek: context trimmed to fit the model's window ({shortened} outputs shortened, {dropped} older messages left out)"
        ),
        Event::BlocksNotRun { count, limit, .. } => writeln!(
            err,
            "seek: {count} more blocks in the reply were not run (at most {limit} per reply)"
        ),
        Event::BlockFinished { record } if record.skipped => writeln!(
            err,
            "  - {} block {}: not run",
            record.tool_type, record.index
        ),
        Event::BlockFinished { record } => {
            let mark = if record.success {
                "✓".to_owned()
            } else {
                format!("✗ {}", failure_word(record))
            };
            writeln!(
                err,
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
            writeln!(
                err,
                "seek: {reason}; retrying ({attempt}) in {:.1} s",
                *delay_ms as f64 / 1000.0
            )
        }
        Event::Error { message } => writeln!(err, "seek: error: {message}"),
        _ => Ok(()),
    };
}
