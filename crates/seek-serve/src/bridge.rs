//! The server's one agent runtime (the same `agent::spawn_with` the TUI and `-p` use) and the
//! pump that reads its events: into the board, out to `/events` subscribers, and to whoever
//! waits for a task to end or a session to be resumed.
//!
//! It owns the one-task-at-a-time rule. A task, once submitted, belongs to the agent, not to
//! the HTTP request: a client that goes away does not stop it (only `/stop` or shutdown do).
//! It must not shape HTTP responses.
//!
//! Races at a task's end are closed by the board's lock: a task's end is applied, and its
//! ending handed to the one `/query` waiting for it, in the same hold of the lock that frees the
//! board, so a `/query` arriving at that moment is either refused (`Busy`) or begins a task of
//! its own, and the first caller still gets its own task's answer. Commands that depend on what
//! runs (submit, stop) are sent under the lock too, so they reach the agent in the order the
//! board saw them.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::JoinHandle;

use super::board::{Board, Ending, Stage};
use crate::agent::AgentHandle;
use crate::wire::{AgentName, Command, Event, event_json};

/// How many events a slow `/events` subscriber may fall behind before it is told it missed some.
const EVENT_BACKLOG: usize = 4096;

/// How long `/stop` waits for the task to end (its stream closed, its processes killed).
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(10);

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

/// Tells the board, when dropped, that a `/stop` has its answer.
struct StopAnswered<'a>(&'a Bridge);

impl Drop for StopAnswered<'_> {
    fn drop(&mut self) {
        self.0.board().stop_answered();
    }
}

/// The server's side of the agent.
pub struct Bridge {
    commands: tokio::sync::mpsc::UnboundedSender<Command>,
    board: Mutex<Board>,
    events: broadcast::Sender<Arc<Published>>,
    /// The number of the last task that ended (`Board::begin`'s), changed under the board's
    /// lock; `u64::MAX` once the runtime is gone.
    ended: watch::Sender<u64>,
    /// Who waits for which task's ending: at most one, as one task runs at a time. Taken under
    /// the board's lock (board first, then this).
    waiter: Mutex<Option<(u64, oneshot::Sender<Ending>)>>,
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
            ended: watch::Sender::new(0),
            waiter: Mutex::new(None),
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
        *self.ended.borrow() != u64::MAX
    }

    /// Runs one task to its end and returns how it ended. The work is done by a task of its
    /// own, so a caller that is dropped (a client that disconnected) leaves the task running.
    pub async fn run(self: &Arc<Self>, query: Query) -> Result<Ending, StartError> {
        let (tx, rx) = oneshot::channel();
        let ticket = {
            let mut board = self.board();
            // Checked under the lock the pump marks the runtime gone under: no task begins
            // after the last ending was handed out.
            if !self.alive() {
                return Err(StartError::Gone);
            }
            let Some(ticket) = board.begin() else {
                return Err(StartError::Busy);
            };
            *self.waiter() = Some((ticket, tx));
            ticket
        };
        let bridge = Arc::clone(self);
        let detached = tokio::spawn(async move { bridge.submit_and_wait(query, ticket, rx).await });
        detached.await.unwrap_or(Err(StartError::Gone))
    }

    async fn submit_and_wait(
        &self,
        query: Query,
        ticket: u64,
        ending: oneshot::Receiver<Ending>,
    ) -> Result<Ending, StartError> {
        let wanted = query
            .session
            .filter(|id| self.board().session() != Some(id.as_str()));
        if let Some(id) = wanted
            && let Err(why) = self.resume(id).await
        {
            self.abandon(ticket, &why);
            return Err(StartError::Session(why));
        }
        {
            let mut board = self.board();
            let submitted = self.commands.send(Command::Submit {
                prompt: query.prompt,
                agent: query.agent,
                context: None,
            });
            if submitted.is_err() {
                drop(board);
                self.abandon(ticket, "the agent runtime has ended");
                return Err(StartError::Gone);
            }
            // A `/stop` that came while the task was on its way stops it now that it is there.
            if board.running_task() == Some((ticket, Stage::StopAsked)) {
                let _ = self.commands.send(Command::Stop);
            }
            board.set_stage(ticket, Stage::Submitted);
        }
        // The pump hands over the ending, or drops the sender when the runtime ends first.
        ending.await.map_err(|_| StartError::Gone)
    }

    /// Frees the board of task `ticket`, which will not reach the agent, and its waiter.
    fn abandon(&self, ticket: u64, why: &str) {
        let mut board = self.board();
        if board
            .running_task()
            .is_some_and(|(running, _)| running == ticket)
        {
            board.abandon(why);
            self.ended.send_replace(ticket);
        }
        let mut waiter = self.waiter();
        if waiter
            .as_ref()
            .is_some_and(|(waiting, _)| *waiting == ticket)
        {
            waiter.take();
        }
    }

    fn waiter(&self) -> MutexGuard<'_, Option<(u64, oneshot::Sender<Ending>)>> {
        // Only `Option::take` and assignments run under it: a panic cannot leave it torn.
        self.waiter.lock().unwrap_or_else(PoisonError::into_inner)
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
        let ticket = {
            let mut board = self.board();
            let Some((ticket, stage)) = board.running_task() else {
                return;
            };
            match stage {
                // Sent under the lock: no later task can have been submitted yet, so the stop
                // reaches this task, or nothing if it has just ended.
                Stage::Submitted => {
                    let _ = self.commands.send(Command::Stop);
                }
                // Not at the agent yet: it is stopped as soon as it is.
                Stage::Begun | Stage::StopAsked => board.set_stage(ticket, Stage::StopAsked),
            }
            // The board holds back its "stopped" answer until this stop is answered.
            board.stop_waiting();
            ticket
        };
        // Released however the wait ends, also when the client goes away mid-wait.
        let _answered = StopAnswered(self);
        let mut ended = self.ended.subscribe();
        let _ = tokio::time::timeout(STOP_WAIT, ended.wait_for(|last| *last >= ticket)).await;
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
            {
                let mut board = self.board();
                if let Some(ending) = board.apply(&event) {
                    // In the same hold of the lock that freed the board: the next task cannot
                    // begin before this one's caller has its answer.
                    self.ended.send_replace(ending.ticket);
                    self.hand_over(ending);
                }
            }
            match &event {
                Event::Resumed { id, .. } => self.answer_resume(Ok(id.clone())),
                Event::Error { message } => self.answer_resume(Err(message.clone())),
                _ => {}
            }
        }
        // The runtime ended: no task will end; wake everyone who waits.
        {
            let mut board = self.board();
            board.abandon("the agent runtime has ended");
            // Dropping the sender tells the waiter the runtime is gone.
            self.waiter().take();
            self.ended.send_replace(u64::MAX);
        }
        self.answer_resume(Err("the agent runtime has ended".into()));
    }

    /// Gives `ending` to the `/query` waiting for that task (none when it was not the API's).
    fn hand_over(&self, ending: Ending) {
        let mut waiter = self.waiter();
        if waiter
            .as_ref()
            .is_some_and(|(ticket, _)| *ticket == ending.ticket)
            && let Some((_, sender)) = waiter.take()
        {
            // A waiter that went away (its `/query` task ended) needs nothing.
            let _ = sender.send(ending);
        }
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
