//! The server's one agent runtime (the same `agent::spawn_with` the TUI and `-p` use) and the
//! pump that reads its events: into the board, out to `/events` subscribers, and to whoever
//! waits for a task to end or a session to be resumed.
//!
//! It owns the one-task-at-a-time rule. A task, once submitted, belongs to the agent, not to
//! the HTTP request: a client that goes away does not stop it (only `/stop` or shutdown do).
//! It must not shape HTTP responses.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::JoinHandle;

use super::board::Board;
use crate::agent::AgentHandle;
use crate::wire::{AgentName, Command, Event, event_json};

/// How many events a slow `/events` subscriber may fall behind before it is told it missed some.
const EVENT_BACKLOG: usize = 4096;

/// How long `/stop` waits for the task to end (its stream closed, its processes killed).
pub const STOP_WAIT: Duration = Duration::from_secs(10);

/// How long a session resume may take (reading its file).
const RESUME_WAIT: Duration = Duration::from_secs(30);

/// One event as `/events` sends it: its number in this server's life and its `--json` object.
#[derive(Debug)]
pub struct Published {
    pub seq: u64,
    pub kind: String,
    pub json: String,
}

/// Why a task could not be started.
#[derive(Debug)]
pub enum StartError {
    /// Another task runs (429).
    Busy,
    /// The session to continue could not be resumed (404), with the agent's words.
    Session(String),
    /// The agent runtime is gone (500).
    Gone,
}

/// A task to run.
pub struct Query {
    pub prompt: String,
    pub agent: Option<AgentName>,
    pub session: Option<String>,
}

/// The server's side of the agent.
pub struct Bridge {
    commands: tokio::sync::mpsc::UnboundedSender<Command>,
    board: Mutex<Board>,
    events: broadcast::Sender<Arc<Published>>,
    /// Counts the tasks that ended (and becomes `u64::MAX` when the runtime is gone).
    finished: watch::Sender<u64>,
    resumed: Mutex<Option<oneshot::Sender<Result<String, String>>>>,
    agent_task: Mutex<Option<JoinHandle<()>>>,
}

impl Bridge {
    /// Takes over a started agent runtime and starts pumping its events.
    pub fn start(handle: AgentHandle) -> Arc<Self> {
        let AgentHandle {
            commands,
            events,
            task,
        } = handle;
        let (publish, _) = broadcast::channel(EVENT_BACKLOG);
        let bridge = Arc::new(Self {
            commands,
            board: Mutex::new(Board::default()),
            events: publish,
            finished: watch::Sender::new(0),
            resumed: Mutex::new(None),
            agent_task: Mutex::new(Some(task)),
        });
        tokio::spawn(Arc::clone(&bridge).pump(events));
        bridge
    }

    /// The board, read or changed under its lock (held only for the call).
    pub fn board(&self) -> MutexGuard<'_, Board> {
        // A panic while holding the lock cannot leave the board half-written in a way that
        // matters more than refusing every later request would.
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new subscriber to the events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Published>> {
        self.events.subscribe()
    }

    /// Whether the agent runtime still runs.
    pub fn alive(&self) -> bool {
        *self.finished.borrow() != u64::MAX
    }

    /// Runs one task to its end. The work is done by a task of its own, so a caller that is
    /// dropped (a client that disconnected) leaves the task running.
    pub async fn run(self: &Arc<Self>, query: Query) -> Result<(), StartError> {
        if !self.alive() {
            return Err(StartError::Gone);
        }
        let before = *self.finished.borrow();
        if !self.board().begin() {
            return Err(StartError::Busy);
        }
        let bridge = Arc::clone(self);
        let detached = tokio::spawn(async move { bridge.submit_and_wait(query, before).await });
        detached.await.unwrap_or(Err(StartError::Gone))
    }

    async fn submit_and_wait(&self, query: Query, before: u64) -> Result<(), StartError> {
        let wanted = query
            .session
            .filter(|id| self.board().session() != Some(id.as_str()));
        if let Some(id) = wanted
            && let Err(why) = self.resume(id).await
        {
            self.board().abandon(&why);
            return Err(StartError::Session(why));
        }
        let mut finished = self.finished.subscribe();
        if self
            .commands
            .send(Command::Submit {
                prompt: query.prompt,
                agent: query.agent,
                context: None,
            })
            .is_err()
        {
            self.board().abandon("the agent runtime has ended");
            return Err(StartError::Gone);
        }
        let _ = finished.wait_for(|count| *count > before).await;
        // The task may have ended just before the runtime did (a shutdown): it still ended.
        if self.board().outcome().is_some() {
            Ok(())
        } else {
            Err(StartError::Gone)
        }
    }

    async fn resume(&self, id: String) -> Result<String, String> {
        let (tx, rx) = oneshot::channel();
        *self.resumed.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        if self
            .commands
            .send(Command::Resume { id: Some(id) })
            .is_err()
        {
            return Err("the agent runtime has ended".into());
        }
        match tokio::time::timeout(RESUME_WAIT, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err("the agent runtime has ended".into()),
            Err(_) => Err("resuming the session took too long".into()),
        }
    }

    /// Stops the running task now and waits (bounded) until it has ended: its model stream
    /// closed and its processes killed. Nothing running: nothing to do.
    pub async fn stop(&self) {
        let before = *self.finished.borrow();
        if !self.board().running() {
            return;
        }
        let mut finished = self.finished.subscribe();
        let _ = self.commands.send(Command::Stop);
        let _ = tokio::time::timeout(STOP_WAIT, finished.wait_for(|count| *count > before)).await;
    }

    /// Stops whatever runs and ends the agent runtime (its processes killed, the session file
    /// closed), waiting for it.
    pub async fn shutdown(&self) {
        let _ = self.commands.send(Command::Shutdown);
        let task = self
            .agent_task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    async fn pump(self: Arc<Self>, mut events: tokio::sync::mpsc::UnboundedReceiver<Event>) {
        let mut seq = 0u64;
        while let Some(event) = events.recv().await {
            seq += 1;
            self.publish(seq, &event);
            self.board().apply(&event);
            match &event {
                Event::TurnFinished { .. } => self.finished.send_modify(|count| *count += 1),
                Event::Resumed { id, .. } => self.answer_resume(Ok(id.clone())),
                Event::Error { message } => self.answer_resume(Err(message.clone())),
                _ => {}
            }
        }
        // The runtime ended: no task will finish; wake everyone who waits.
        self.board().abandon("the agent runtime has ended");
        self.answer_resume(Err("the agent runtime has ended".into()));
        self.finished.send_replace(u64::MAX);
    }

    fn publish(&self, seq: u64, event: &Event) {
        if self.events.receiver_count() == 0 {
            return;
        }
        let json = event_json(event);
        let kind = json
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("event")
            .to_owned();
        let json = crate::terminal_safe::json_line(&json).unwrap_or_else(|e| {
            serde_json::json!({"type": "error", "message": format!("an event could not be written: {e}")})
                .to_string()
        });
        let _ = self.events.send(Arc::new(Published { seq, kind, json }));
    }

    fn answer_resume(&self, result: Result<String, String>) {
        let waiter = self
            .resumed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(waiter) = waiter {
            let _ = waiter.send(result);
        }
    }
}
