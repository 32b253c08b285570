//! The agent runtime: a task that takes commands and emits events, independent of any UI.
//!
//! Owns the conversation memory between tasks and the one running task (with its cancellation
//! token). The TUI and the headless mode are two consumers of the same events. It must not draw
//! anything or read the keyboard.

mod answer;
mod approval;
mod attach;
mod budget;
mod context;
mod cut;
mod events;
mod examples;
mod execute;
pub mod foreign;
mod memory;
mod models;
pub mod plan;
mod policy;
mod profile;
mod prompts;
mod repeats;
mod reply;
mod run;
mod seek_words;
mod shell;
mod size;
mod small;
mod switch;
mod task;
mod temp;
mod turn;
mod usage;
mod warm;
mod web;
mod window;

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use crate::wire::{
    AnswerFinish, ApprovalDecision, ApprovalId, Attachment, BlockRecord, Command, Event,
    ModelEntry, NotRun, Outcome, RoundUsage, SessionEntry, Status, TurnUsage,
};
pub use context::TurnContext;
pub use events::EventSink;
pub use memory::Memory;
pub use policy::{CLARIFICATION, Decision, RoundReport, decide};
pub use prompts::{
    PromptEnv, agent_tools, available_tools, may_call_mcp, on_path, resolve_agent, system_prompt,
};
pub use shell::USER_ROUND;
pub use task::Task;

use crate::config::{AgentName, Config};
use crate::exec::sandbox::{Sandbox, SandboxMode};
use crate::llm::ChatModel;
use crate::secrets::Masker;
use crate::session::{self, Sessions};
pub use approval::{AnswerError, ApprovalGate, SHOWN_ONLY};
use temp::PrivateTemp;

/// The front end's side of a running agent.
pub struct AgentHandle {
    pub commands: mpsc::UnboundedSender<Command>,
    pub events: mpsc::UnboundedReceiver<Event>,
    pub task: JoinHandle<()>,
}

/// Starts the agent runtime on the current tokio runtime, keeping no session file.
pub fn spawn(config: Arc<Config>, model: Arc<dyn ChatModel>) -> AgentHandle {
    spawn_with(config, model, None)
}

/// Starts the agent runtime; with `sessions`, every conversation is saved as it happens.
pub fn spawn_with(
    config: Arc<Config>,
    model: Arc<dyn ChatModel>,
    sessions: Option<Sessions>,
) -> AgentHandle {
    let (command_tx, command_rx) = mpsc::unbounded_channel();
    let (event_tx, event_rx) = mpsc::unbounded_channel();
    let approvals = ApprovalGate::new(config.safety.approval.value);
    let safety = &config.safety;
    let temp = PrivateTemp::start(&config.data_dir, &config.run_dir());
    let sandbox = (safety.sandbox.value != SandboxMode::Off).then(|| {
        Arc::new(Sandbox {
            allow_sockets: safety.allow_sockets.value.clone(),
            protected: config
                .own_files()
                .into_iter()
                .map(|(path, _)| path)
                .collect(),
            ..Sandbox::new(
                safety.sandbox.value,
                config.work_dir.value.clone(),
                temp.path(),
                config.data_dir.join("cache"),
            )
        })
    });
    // Secrets are masked in what the user's commands and files hand the model, as in sessions.
    let masker = sessions.as_ref().map_or_else(
        || {
            Arc::new(Masker::for_environment(
                crate::config::Env::from_process().iter(),
                &config.credential_vars(),
                &config.base_url.value,
            ))
        },
        |s| Arc::clone(&s.masker),
    );
    let env_remove = crate::secrets::withheld_names(
        std::env::vars_os(),
        &config.credential_vars(),
        &safety.pass_env.value,
    );
    let env_remove = Arc::new(env_remove);
    // Servers start now, in the background: the first task waits for them (bounded by their
    // start-up timeouts), the UI does not.
    let mcp = (!config.mcp.servers.is_empty()).then(|| {
        crate::mcp::Hub::start(
            config.mcp.servers.clone(),
            Arc::clone(&env_remove),
            &config.work_dir.value,
        )
    });
    let ctx = TurnContext {
        config,
        model,
        events: EventSink::new(event_tx),
        context_window: Arc::default(),
        sized: Arc::default(),
        approvals,
        sandbox,
        env_remove,
        mcp,
    };
    if let Some(hub) = ctx.mcp.clone() {
        tokio::spawn(mcp_startup_report(hub, ctx.events.clone()));
    }
    let task = tokio::spawn(run(ctx, sessions, masker, temp, command_rx));
    AgentHandle {
        commands: command_tx,
        events: event_rx,
        task,
    }
}

/// Once every MCP server started or failed: when one failed, the front ends are told which and
/// why (`McpServers`), so a broken server is not discovered by a failing block.
async fn mcp_startup_report(hub: Arc<crate::mcp::Hub>, events: EventSink) {
    hub.ready().await;
    let statuses = hub.statuses();
    if statuses
        .iter()
        .any(|s| matches!(s.state, crate::mcp::ServerState::Failed(_)))
    {
        // Not through the session file: it describes this run's servers, not the conversation.
        let _ = events.front.send(Event::McpServers {
            servers: statuses
                .iter()
                .map(crate::mcp::ServerStatus::to_wire)
                .collect(),
        });
    }
}

struct Running {
    task: JoinHandle<(Memory, Event)>,
    cancel: CancellationToken,
    work: Work,
}

/// What runs: a task of the model's, or a command the user typed (`!cmd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    Task,
    Shell,
}

/// The runtime's state between tasks.
struct Runtime {
    ctx: TurnContext,
    /// What system prompts are built from, read once at start.
    prompt_env: PromptEnv,
    sessions: Option<Sessions>,
    /// The agent tasks are given to (`auto`: the router picks each time).
    agent: AgentName,
    /// The agent whose system prompt the memory holds.
    prompt_agent: AgentName,
    memory: Option<Memory>,
    running: Option<Running>,
    turn: u64,
    /// The last task as it was sent (attachments read), for Retry.
    last_prompt: Option<(Task, AgentName)>,
    /// Masks secrets in what the user's commands and files hand the model.
    masker: Arc<Masker>,
    /// The user's commands (`!cmd`) so far in this session: the next one's index.
    shells: usize,
    /// The model in use, as named (`ModelList`'s `current`).
    model_name: String,
    /// A model being downloaded before the switch to it (`/model NAME`, built-in engine).
    fetching: Option<switch::Fetching>,
}

async fn run(
    ctx: TurnContext,
    sessions: Option<Sessions>,
    masker: Arc<Masker>,
    _temp: PrivateTemp,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let agent = ctx.config.agent.value;
    // Files, /proc and PATH are read here, once, off the async threads.
    let config = Arc::clone(&ctx.config);
    let prompt_env = tokio::task::spawn_blocking(move || PromptEnv::gather(&config))
        .await
        .unwrap_or_else(|e| {
            tracing::error!("reading the prompts' environment: {e}");
            PromptEnv::default()
        });
    let model_name = ctx.config.model.value.clone().unwrap_or_else(|| {
        if ctx.config.provider.value.wire == crate::config::Wire::InProcess {
            crate::config::providers::DEFAULT_LOCAL_MODEL.to_owned()
        } else {
            String::new()
        }
    });
    let mut rt = Runtime {
        memory: Some(new_memory(&ctx.config, &prompt_env, agent)),
        prompt_agent: resolve_agent(agent),
        masker,
        shells: 0,
        model_name,
        prompt_env,
        ctx,
        sessions,
        agent,
        running: None,
        turn: 0,
        last_prompt: None,
        fetching: None,
    };
    loop {
        tokio::select! {
            command = commands.recv() => {
                let Some(command) = command else {
                    rt.shutdown().await;
                    return;
                };
                if command == Command::Shutdown {
                    rt.shutdown().await;
                    return;
                }
                rt.command(command).await;
            }
            finished = async { rt.running.as_mut().map(|r| &mut r.task).expect("guarded by the select condition").await }, if rt.running.is_some() => {
                let work = rt.running.take().map_or(Work::Task, |r| r.work);
                rt.finished(work, finished).await;
            }
            fetched = async { rt.fetching.as_mut().map(|f| &mut f.task).expect("guarded by the select condition").await }, if rt.fetching.is_some() => {
                rt.fetched(fetched);
            }
        }
    }
}

impl Runtime {
    fn error(&self, message: impl Into<String>) {
        self.ctx.events.emit(Event::Error {
            message: message.into(),
        });
    }

    async fn shutdown(&mut self) {
        if let Some(fetching) = self.fetching.take() {
            // What arrived is kept; the next `/model` resumes it.
            fetching.cancel.cancel();
        }
        if let Some(r) = self.running.take() {
            r.cancel.cancel();
            // The stopped task's last events still reach the front end and the session file.
            if let Ok((_, event)) = r.task.await {
                self.ctx.events.emit(event);
            }
        }
        if let Some(hub) = &self.ctx.mcp {
            hub.shutdown().await;
        }
        self.sync_session().await;
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::Shutdown => {}
            Command::Stop => {
                if let Some(r) = &self.running {
                    r.cancel.cancel();
                }
                if let Some(fetching) = &self.fetching {
                    fetching.cancel.cancel();
                }
            }
            Command::Submit {
                prompt,
                agent,
                context,
            } => {
                if let Some(busy) = self.busy("stop it first (Esc)") {
                    return self.error(busy);
                }
                // `auto` stays the mode; the router picks this task's agent.
                let mode = agent.unwrap_or(self.agent);
                self.agent = mode;
                self.ensure_session(mode).await;
                // Only the user's own words name files to attach; the context is data.
                let mut task = attach::task(&self.ctx, &self.masker, prompt, context).await;
                let chosen = if mode == AgentName::Auto {
                    // Off the async threads: the first call trains the classifier (~10 ms).
                    let prompt = task.prompt.clone();
                    // The web agent opens first only the links the user wrote.
                    let words = task.user_words.clone();
                    let search_ready = self.ctx.config.web.searxng_url.value.is_some();
                    let route = tokio::task::spawn_blocking(move || {
                        let route = crate::agents::router::route(&prompt);
                        crate::agents::router::unless_web_cannot_search(route, search_ready, &words)
                    })
                    .await
                    .unwrap_or_else(|e| crate::wire::Route {
                        agent: AgentName::Coder,
                        confidence: 0.0,
                        reason: format!("the router failed ({e}): coder"),
                        why: "the router failed; the coder can do the most".into(),
                    });
                    let agent = route.agent;
                    task.route = Some(route);
                    agent
                } else {
                    mode
                };
                let Some(mem) = self.memory.take() else {
                    return;
                };
                self.turn += 1;
                self.last_prompt = Some((task.clone(), chosen));
                self.running = Some(self.start(mem, task, chosen));
            }
            Command::Shell { command } => self.shell(command).await,
            Command::ListMcp => {
                let servers = self.ctx.mcp.as_ref().map_or_else(Vec::new, |hub| {
                    hub.statuses()
                        .iter()
                        .map(crate::mcp::ServerStatus::to_wire)
                        .collect()
                });
                // A listing, not part of the conversation: the session file does not keep it.
                let _ = self.ctx.events.front.send(Event::McpServers { servers });
            }
            Command::ListModels => models::answer(
                &self.ctx.config,
                &self.ctx.model,
                self.model_name.clone(),
                &self.ctx.events,
            ),
            Command::Retry => {
                if let Some(busy) = self.busy("stop it before retrying") {
                    return self.error(busy);
                }
                let Some(mut mem) = self.memory.take() else {
                    return;
                };
                match (mem.forget_last_turn(), self.last_prompt.clone()) {
                    (Some(_), Some((prompt, prompt_agent))) => {
                        self.turn += 1;
                        self.running = Some(self.start(mem, prompt, prompt_agent));
                    }
                    _ => {
                        self.memory = Some(mem);
                        self.error("there is no task to retry");
                    }
                }
            }
            Command::SetModel { model } => self.set_model(&model),
            Command::Clear => {
                if self.running.is_some() {
                    self.error("a task is running: stop it before clearing (Esc)");
                    return;
                }
                if let Some(mem) = &mut self.memory {
                    mem.clear();
                }
                self.last_prompt = None;
                self.ctx.events.emit(Event::Cleared);
            }
            Command::NewSession => {
                if self.running.is_some() {
                    self.error("a task is running: stop it before starting a new session (Esc)");
                    return;
                }
                self.sync_session().await;
                self.ctx.events.session = None;
                self.memory = Some(new_memory(
                    &self.ctx.config,
                    &self.prompt_env,
                    self.prompt_agent,
                ));
                self.last_prompt = None;
                self.turn = 0;
                self.shells = 0;
                self.ctx.events.emit(Event::Cleared);
            }
            Command::Resume { id } => self.resume(id).await,
            Command::Approve { id, decision } => {
                if let Err(e) = self.ctx.approvals.answer(id, decision) {
                    self.error(e.to_string());
                }
            }
            Command::ListSessions => {
                let Some(sessions) = self.sessions.clone() else {
                    self.error("sessions are not kept in this mode");
                    return;
                };
                let home = self.ctx.config.home.clone();
                // This work dir's sessions: the ones `/resume` can sensibly continue here.
                let listed = tokio::task::spawn_blocking(move || {
                    let home = home.and_then(|h| std::fs::canonicalize(h).ok());
                    session::list(&sessions.data_dir)
                        .map(|listing| session_list(listing, &sessions.work_dir, home.as_deref()))
                })
                .await;
                match listed {
                    Ok(Ok(event)) => self.ctx.events.emit(event),
                    Ok(Err(e)) => self.error(e.to_string()),
                    Err(e) => self.error(format!("listing sessions failed: {e}")),
                }
            }
        }
    }

    /// Opens a session file for the conversation if it has none yet (at its first task, so
    /// opening seek and leaving leaves no empty session behind). The file is made off the
    /// runtime: it is created, locked and linked on the disk.
    async fn ensure_session(&mut self, agent: AgentName) {
        if self.ctx.events.session.is_some() {
            return;
        }
        let Some(sessions) = self.sessions.clone() else {
            return;
        };
        // Written once the model first answers: a start that never reached it leaves no file.
        match tokio::task::spawn_blocking(move || sessions.begin(agent)).await {
            Ok(Ok(file)) => {
                let file = Arc::new(file);
                if let Some(mem) = &mut self.memory {
                    mem.journal_to(Arc::clone(&file));
                }
                let (id, path) = (file.id().to_owned(), file.path().display().to_string());
                self.ctx.events.session = Some(file);
                self.ctx.events.emit(Event::SessionStarted { id, path });
            }
            Ok(Err(e)) => self.error(format!("{e}: this session is not being saved")),
            Err(e) => self.error(format!(
                "creating the session file failed ({e}): this session is not being saved"
            )),
        }
    }

    async fn resume(&mut self, id: Option<String>) {
        if self.running.is_some() {
            self.error("a task is running: stop it before resuming another session (Esc)");
            return;
        }
        let Some(sessions) = self.sessions.clone() else {
            self.error("sessions are not kept in this mode");
            return;
        };
        let current = self.ctx.events.session.clone();
        let opened =
            tokio::task::spawn_blocking(move || sessions.reopen(id.as_deref(), current.as_deref()))
                .await;
        let (loaded, file) = match opened {
            Ok(Ok(opened)) => opened,
            Ok(Err(e)) => return self.error(e.to_string()),
            Err(e) => return self.error(format!("resuming failed: {e}")),
        };
        self.sync_session().await;
        let file = Arc::new(file);
        // Under `auto` the router goes on picking; a chosen agent becomes the session's.
        if self.agent != AgentName::Auto {
            self.agent = loaded.agent;
        }
        self.prompt_agent = resolve_agent(loaded.agent);
        let mut memory = Memory::restore(
            prompt_for(&self.ctx.config, &self.prompt_env, self.prompt_agent),
            loaded.messages.clone(),
            loaded.turn_starts.clone(),
        );
        memory.journal_to(Arc::clone(&file));
        self.memory = Some(memory);
        self.ctx.events.session = Some(file);
        self.warm_up();
        self.turn = loaded.last_turn;
        self.shells = shell::commands_in(&loaded.events);
        self.last_prompt = None;
        self.ctx.events.emit(Event::Resumed {
            id: loaded.id.clone(),
            turns: loaded.turns(),
            warnings: loaded.warnings.clone(),
            replay: loaded.events,
        });
    }

    async fn finished(
        &mut self,
        work: Work,
        finished: Result<(Memory, Event), tokio::task::JoinError>,
    ) {
        let event = match finished {
            Ok((mem, event)) => {
                self.memory = Some(mem);
                // Idle from now on: the model reads ahead what the next task may start with.
                self.warm_up();
                event
            }
            Err(error) if work == Work::Shell => {
                self.memory = Some(self.fresh_memory());
                return self.error(format!(
                    "internal error, the command was abandoned: {error}"
                ));
            }
            // The turn panicked (a bug): say so and keep going with a fresh memory.
            Err(error) => {
                self.memory = Some(self.fresh_memory());
                let message = format!("internal error, the task was abandoned: {error}");
                self.error(message.clone());
                Event::TurnFinished {
                    usage: None,
                    plan: None,
                    web: None,
                    turn: self.turn,
                    outcome: Outcome::GaveUp,
                    answer: String::new(),
                    reasoning: None,
                    agent: self.agent,
                    rounds: 0,
                    blocks: Vec::new(),
                    message: Some(message),
                }
            }
        };
        self.ctx.events.emit(event);
        self.sync_session().await;
    }

    /// A new memory after a task panicked (a bug), journaled as a clear.
    fn fresh_memory(&self) -> Memory {
        let mut memory = new_memory(&self.ctx.config, &self.prompt_env, self.prompt_agent);
        if let Some(file) = &self.ctx.events.session {
            memory.journal_to(Arc::clone(file));
            file.record_memory(session::MemoryOp::Clear);
        }
        memory
    }

    /// Starts task number `self.turn` with `agent` (never `auto`: routed already), its system
    /// prompt in `memory`.
    fn start(&mut self, mut memory: Memory, task: Task, agent: AgentName) -> Running {
        if self.prompt_agent != agent {
            self.prompt_agent = agent;
            memory.set_system_prompt(prompt_for(&self.ctx.config, &self.prompt_env, agent));
        }
        let cancel = CancellationToken::new();
        let turn_cancel = cancel.clone();
        let mut ctx = self.ctx.clone();
        let turn = self.turn;
        let prompt_env = self.prompt_env.clone();
        let model_name = self.model_name.clone();
        let task = tokio::spawn(async move {
            // The prompts list the MCP tools of the servers ready now (a server that died since
            // the last task is no longer offered); the first task waits for them to start.
            let prompt_env = match &ctx.mcp {
                Some(hub) => {
                    tokio::select! {
                        () = hub.ready() => {}
                        () = turn_cancel.cancelled() => {}
                    }
                    let env = prompt_env.with_mcp_tools(&ctx.config, hub);
                    memory.set_system_prompt(prompt_for(&ctx.config, &env, agent));
                    env
                }
                None => prompt_env,
            };
            // The model's size decides the prompt and the loop: the server is asked once per
            // model; Stop is heard while it is asked (the task then ends at once).
            let sized = tokio::select! {
                () = turn_cancel.cancelled() => None,
                config = size::sized(&ctx, &model_name) => Some(config),
            };
            if let Some(config) = sized {
                // The memory's prompt was written before the size was known.
                let prompt_changes = config.small_model() != ctx.config.small_model();
                ctx.config = config;
                if prompt_changes {
                    memory.set_system_prompt(prompt_for(&ctx.config, &prompt_env, agent));
                }
            }
            let prompts = plan::Prompts::new(&ctx.config, &prompt_env);
            let event =
                run::run_task(&ctx, &prompts, &mut memory, turn, task, agent, turn_cancel).await;
            (memory, event)
        });
        Running {
            task,
            cancel,
            work: Work::Task,
        }
    }

    /// Why a new task or command cannot start now (`None`: it can); `then` says what to do.
    fn busy(&self, then: &str) -> Option<String> {
        self.running.as_ref().map(|r| match r.work {
            Work::Task => format!("a task is running: {then}"),
            Work::Shell => format!("a command is running: {then}"),
        })
    }

    /// Runs the user's own command (`!cmd`), unless something runs already.
    async fn shell(&mut self, command: String) {
        if let Some(busy) = self.busy("wait for it or stop it (Esc) first") {
            return self.error(busy);
        }
        if command.trim().is_empty() {
            return self.error("which command? !COMMAND runs it in the work dir");
        }
        self.ensure_session(self.agent).await;
        let Some(memory) = self.memory.take() else {
            return;
        };
        let index = self.shells;
        self.shells += 1;
        let (task, cancel) = shell::spawn(&self.ctx, memory, index, command, &self.masker);
        self.running = Some(Running {
            task,
            cancel,
            work: Work::Shell,
        });
    }

    /// fsync at each task's end, off the runtime; a session that cannot be written is reported
    /// once.
    async fn sync_session(&self) {
        let Some(file) = self.ctx.events.session.clone() else {
            return;
        };
        let synced = tokio::task::spawn_blocking(move || {
            file.sync();
            file.take_failure()
        })
        .await;
        match synced {
            Ok(None) => {}
            Ok(Some(failure)) => self.error(failure),
            Err(e) => self.error(format!("syncing the session file failed: {e}")),
        }
    }
}

/// The `SessionList` answer: the sessions of `work_dir`, most recently active first, as lines
/// (at most 20) and as entries for a picker (at most 50).
fn session_list(
    listing: session::Listing,
    work_dir: &str,
    home: Option<&std::path::Path>,
) -> Event {
    let listing = listing.only_in(work_dir);
    let mut lines = if listing.sessions.is_empty() {
        vec![format!(
            "no saved sessions in {work_dir} yet; `seek sessions --all` lists every one"
        )]
    } else {
        let mut lines = vec![session::Summary::TITLES.to_owned()];
        lines.extend(listing.sessions.iter().take(20).map(|s| s.line(home)));
        lines
    };
    lines.extend(listing.warning());
    Event::SessionList {
        lines,
        sessions: listing
            .sessions
            .iter()
            .take(50)
            .map(session::Summary::entry)
            .collect(),
    }
}

pub(crate) fn prompt_for(config: &Config, env: &PromptEnv, agent: AgentName) -> String {
    let agent = resolve_agent(agent);
    let tools = available_tools(agent, config, env);
    system_prompt(agent, config, &tools, env)
}

fn new_memory(config: &Config, env: &PromptEnv, agent: AgentName) -> Memory {
    Memory::new(prompt_for(config, env, agent))
}
