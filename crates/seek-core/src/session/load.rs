//! Reading a session back: the records in order (a torn or foreign line is skipped with a
//! warning, never a failure), the model's memory rebuilt from its recorded changes, and the
//! events a transcript replays, with a task that was cut short by a kill closed as interrupted.
//!
//! Owns replay. It must not write.

use std::path::Path;

use super::SessionError;
use super::record::{MemoryOp, Record};
use crate::llm::{Message, Role};
use crate::wire::{AgentName, BlockRecord, Event, NotRun, Outcome};

/// The feedback of a block that was running when seek stopped (a kill, a crash).
const INTERRUPTED: &str = "[interrupted] seek stopped while this block ran";

/// What a session file holds.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub id: String,
    /// The events a transcript shows, each with its time (ms since the epoch).
    pub events: Vec<(u64, Event)>,
    /// The conversation after the system prompt, and where each task in it starts.
    pub messages: Vec<Message>,
    pub turn_starts: Vec<usize>,
    /// The agent of the last task (or of the header).
    pub agent: AgentName,
    /// The work dir in the header (`None` in files older than that field).
    pub work_dir: Option<String>,
    /// The highest task number seen.
    pub last_turn: u64,
    /// What was skipped, in words.
    pub warnings: Vec<String>,
}

impl Loaded {
    pub fn turns(&self) -> usize {
        self.events
            .iter()
            .filter(|(_, e)| matches!(e, Event::TurnStarted { .. }))
            .count()
    }
}

pub fn load(path: &Path, id: &str) -> Result<Loaded, SessionError> {
    let bytes = std::fs::read(path).map_err(|source| SessionError::Io {
        path: path.to_owned(),
        source,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let mut loaded = Loaded {
        id: id.to_owned(),
        events: Vec::new(),
        messages: Vec::new(),
        turn_starts: Vec::new(),
        agent: AgentName::Auto,
        work_dir: None,
        last_turn: 0,
        warnings: Vec::new(),
    };
    let mut header_seen = false;
    let lines: Vec<&str> = text.lines().collect();
    let line_count = lines.len();
    for (n, parsed) in parse_all(&lines).into_iter().enumerate() {
        let record = match parsed {
            Some(Ok(record)) => record,
            None => continue,
            Some(Err(())) => {
                let last = n + 1 == line_count;
                loaded.warnings.push(if last && !bytes.ends_with(b"\n") {
                    format!(
                        "{}: the last line was cut short (seek was stopped while writing it); skipped",
                        path.display()
                    )
                } else {
                    format!("{}:{}: not a session record; skipped", path.display(), n + 1)
                });
                continue;
            }
        };
        match record {
            Record::Header {
                agent,
                version,
                work_dir,
                ..
            } => {
                header_seen = true;
                loaded.agent = agent;
                loaded.work_dir = Some(work_dir).filter(|w| !w.is_empty());
                if version > super::record::VERSION {
                    loaded.warnings.push(format!(
                        "{}: written by a newer seek (format {version}); what this one does not know is skipped",
                        path.display()
                    ));
                }
            }
            Record::Event { at_ms, event } => {
                if let Event::TurnStarted { turn, agent, .. } = &event {
                    loaded.last_turn = loaded.last_turn.max(*turn);
                    loaded.agent = *agent;
                }
                loaded.events.push((at_ms, event));
            }
            Record::Memory { op, .. } => apply(&mut loaded, op),
        }
    }
    if !header_seen {
        return Err(SessionError::NotASession(path.to_owned()));
    }
    loaded.events = for_replay(std::mem::take(&mut loaded.events));
    Ok(loaded)
}

/// Parses every line (`None` for blank ones), spread over the machine's cores: long sessions are
/// mostly JSON decoding.
fn parse_all(lines: &[&str]) -> Vec<Option<Result<Record, ()>>> {
    let parse = |line: &&str| {
        (!line.trim().is_empty()).then(|| serde_json::from_str::<Record>(line).map_err(|_| ()))
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    if threads < 2 || lines.len() < 1_000 {
        return lines.iter().map(parse).collect();
    }
    let chunk = lines.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = lines
            .chunks(chunk)
            .map(|part| {
                let worker = scope.spawn(move || part.iter().map(parse).collect::<Vec<_>>());
                (part.len(), worker)
            })
            .collect();
        workers
            .into_iter()
            // A worker only parses; if one panicked (a bug) its lines count as unreadable.
            .flat_map(|(len, w)| w.join().unwrap_or_else(|_| vec![Some(Err(())); len]))
            .collect()
    })
}

fn apply(loaded: &mut Loaded, op: MemoryOp) {
    match op {
        MemoryOp::BeginTurn { content } => {
            loaded.turn_starts.push(loaded.messages.len());
            loaded.messages.push(Message::new(Role::User, content));
        }
        MemoryOp::Push { role, content } => loaded.messages.push(Message::new(role, content)),
        MemoryOp::ForgetLastTurn => {
            if let Some(start) = loaded.turn_starts.pop() {
                loaded.messages.truncate(start);
            }
        }
        MemoryOp::Clear => {
            loaded.messages.clear();
            loaded.turn_starts.clear();
        }
    }
}

/// A block that started and had not finished, as far as the records go.
struct Running {
    step: Option<String>,
    round: u32,
    index: usize,
    tool: String,
    code: String,
    save_path: Option<String>,
    started: u64,
}

/// `event`, nested under `step` when it belongs to one.
fn in_step(step: Option<String>, event: Event) -> Event {
    match step {
        Some(step) => Event::Step {
            step,
            event: Box::new(event),
        },
        None => event,
    }
}

/// Puts back what the stream showed live (the reasoning before an answer) and closes a task the
/// file ends in the middle of: its unfinished blocks as stopped, the task as interrupted.
fn for_replay(recorded: Vec<(u64, Event)>) -> Vec<(u64, Event)> {
    let mut out = Vec::with_capacity(recorded.len() + 4);
    let mut open_turn: Option<(u64, AgentName)> = None;
    let mut running: Vec<Running> = Vec::new();
    let mut last_ms = 0;
    for (at, event) in recorded {
        last_ms = at;
        // A plan step's events are its sub-agent's own, nested: they are read the same way and
        // what is put back for them is nested under the same step.
        let (step, inner) = match &event {
            Event::Step { step, event } => (Some(step.clone()), event.as_ref()),
            other => (None, other),
        };
        match inner {
            Event::TurnStarted { turn, agent, .. } if step.is_none() => {
                open_turn = Some((*turn, *agent));
            }
            Event::TurnFinished { .. } if step.is_none() => {
                open_turn = None;
                running.clear();
            }
            Event::TurnFinished { .. } => running.retain(|r| r.step != step),
            Event::AnswerComplete {
                reasoning: Some(reasoning),
                ..
            } => out.push((
                at,
                in_step(
                    step.clone(),
                    Event::ReasoningDelta {
                        text: reasoning.clone(),
                    },
                ),
            )),
            Event::BlockStarted {
                round,
                index,
                tool,
                code,
                save_path,
            } => running.push(Running {
                step: step.clone(),
                round: *round,
                index: *index,
                tool: tool.clone(),
                code: code.clone(),
                save_path: save_path.clone(),
                started: at,
            }),
            Event::BlockFinished { record } => {
                running
                    .retain(|r| (&r.step, r.round, r.index) != (&step, record.round, record.index));
            }
            _ => {}
        }
        out.push((at, event));
    }
    // A block still running when the records end was cut short by seek's end, inside a task or
    // not (the user's own `!cmd`, round 0, runs outside tasks).
    for block in running {
        let finished = Event::BlockFinished {
            record: BlockRecord {
                round: block.round,
                index: block.index,
                tool_type: block.tool,
                block: block.code,
                save_path: block.save_path,
                feedback: INTERRUPTED.to_owned(),
                success: false,
                exit_code: None,
                timed_out: false,
                stopped: true,
                skipped: false,
                duration_ms: last_ms.saturating_sub(block.started) as f64,
                output: String::new(),
                not_run: Some(NotRun::Interrupted),
            },
        };
        out.push((last_ms, in_step(block.step, finished)));
    }
    if let Some((turn, agent)) = open_turn {
        out.push((
            last_ms,
            Event::TurnFinished {
                usage: None,
                turn,
                outcome: Outcome::Stopped,
                answer: String::new(),
                reasoning: None,
                agent,
                rounds: 0,
                blocks: Vec::new(),
                message: Some("interrupted: seek stopped during this task".into()),
                plan: None,
                web: None,
            },
        ));
    }
    out
}
