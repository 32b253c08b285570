//! The terminal UI: a ratatui screen over the same agent events the headless mode consumes.
//!
//! This module owns the event loop: keys, agent events, signals and the frame clock meet here.
//! Redraws are scheduled, never sprinkled: anything that changes the screen marks it dirty, and
//! one place draws at most once per frame interval, and not at all when nothing changed (or
//! moved: spinners tick ten times a second only while a task runs). It must not block: input is
//! read on its own thread, the agent runs as a task, and the user's editor runs on a blocking
//! thread while the loop keeps taking agent events (it neither draws nor reads keys meanwhile:
//! the editor has the terminal).

// The floors below, under the paths this crate has always used for them (`crate::agent`, …).
use seek_core::{
    agent, agents, config, exec, files, llm, local, log, mcp, protocol, secrets, session,
    terminal_safe, tool_kind, wire,
};

pub mod app;
pub mod clipboard;
pub mod complete;
pub(crate) mod composer;
pub mod editor;
pub mod help;
pub mod history;
pub mod input;
pub(crate) mod mcp_view;
pub mod notify;
pub mod overlay;
pub mod paste;
pub mod picker;
pub(crate) mod plan_pane;
pub mod popup;
pub mod render;
pub mod slash;
pub mod status;
pub mod terminal;
pub mod transcript;
pub(crate) mod web_pane;
pub(crate) mod workfiles;

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::Event as TermEvent;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::agent::Command;
use crate::config::Config;
use crate::llm::ChatModel;
use crate::wire::Exit;
use app::{App, Effect};
use history::History;
use render::screen;

/// The shortest time between two frames (60 per second at most).
pub(crate) const FRAME: Duration = Duration::from_micros(16_667);
/// How often the screen moves on its own while something animates.
pub(crate) const TICK: Duration = Duration::from_millis(100);
/// Agent events handled in one go before input gets a turn again.
const EVENT_BATCH: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("the terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// What the UI needs besides the configuration.
pub struct Options {
    /// `NO_COLOR` is set: no colours, only bold/italic/dim.
    pub no_color: bool,
    /// Where sessions are kept (`None`: nothing is saved).
    pub sessions: Option<crate::session::Sessions>,
    /// A saved session to continue at start.
    pub resume: Option<crate::session::Resume>,
    /// Masks every log line.
    pub masker: Arc<crate::secrets::Masker>,
    /// A task given on the command line (`seek "task"`): sent at start, as if typed.
    pub initial_prompt: Option<String>,
}

/// Why the loop ended.
enum Ending {
    Quit,
    Signal(&'static str),
    InputClosed(String),
}

/// Runs the interactive UI until the user quits. The transcript is printed to the normal screen
/// afterwards.
pub async fn run(
    config: Arc<Config>,
    model: Arc<dyn ChatModel>,
    options: Options,
) -> Result<Exit, TuiError> {
    let log_path = config.log_file();
    if let Err(e) = crate::log::open(&log_path, Arc::clone(&options.masker)) {
        // Before the screen is taken: the user can still read this.
        eprintln!("seek: cannot open the log {}: {e}", log_path.display());
    }
    tracing::info!("start: {}", model.describe());
    render::highlight::warm_up();
    let (history, problem) = History::load(config.history_file());
    if let Some(problem) = problem {
        tracing::warn!("{}", problem);
    }
    let mut app = App::new(
        config.agent.value,
        model.describe(),
        short_path(&config.work_dir.value),
        history,
    );
    app.sandbox = Some(render::header::SandboxBadge::new(
        config.safety.sandbox.value,
        crate::exec::sandbox::supported(),
    ));
    app.work_path.clone_from(&config.work_dir.value);
    app.status.built_in = crate::local::is_local(&config);
    app.approval = Some(config.safety.approval.value);
    app.notifier = notify::Notifier::new(config.tui.signal(), config.tui.notify_after());
    for warning in [config.safety.warning(), config.work_dir_warning()]
        .into_iter()
        .flatten()
    {
        app.transcript.error(format!("warning: {warning}"));
    }
    if let Some(warning) = config.safety.socket_warning() {
        app.transcript.error(format!("warning: {warning}"));
    }
    if let Some(notice) = config.work_dir_notice() {
        app.transcript.notice(notice);
    }
    if let Some(notice) = crate::local::first_use_notice(&config) {
        app.transcript.notice(notice);
    }
    if config
        .model
        .value
        .as_deref()
        .is_none_or(|m| m.trim().is_empty())
    {
        app.transcript.error(format!(
            "no model is set for {}: type /model NAME (`seek models` lists them), or start with --model NAME",
            config.provider.value.name
        ));
    }

    let (mut screen, guard) = terminal::enter()?;
    let mut handle = agent::spawn_with(config, model, options.sessions);
    if let Some(resume) = options.resume {
        let id = match resume {
            crate::session::Resume::Latest => None,
            crate::session::Resume::Id(id) => Some(id),
        };
        let _ = handle.commands.send(Command::Resume { id });
    }
    let (input, input_control) = input::spawn();
    if let Some(prompt) = options.initial_prompt {
        // As if typed: into the input box, then Enter (after any resume above, in order).
        app.paste(&prompt);
        let enter = crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Enter,
            crossterm::event::KeyModifiers::NONE,
        );
        let effects = app.key(enter, Instant::now());
        carry_out(
            effects,
            &mut app,
            &handle.commands,
            &input_control,
            &mut None,
        );
    }
    // A panic in the loop (a bug) still ends with the transcript printed: the panic hook has
    // given the terminal back; the panic goes on once the transcript is out.
    let looped = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(event_loop(
        &mut screen,
        &mut app,
        &mut handle.events,
        &handle.commands,
        (input, input_control),
        options.no_color,
    )))
    .await;
    let (result, panicked) = match looped {
        Ok(result) => (result, None),
        Err(payload) => (Ok(Ending::Quit), Some(payload)),
    };

    let _ = handle.commands.send(Command::Shutdown);
    // Shutting down stops a running task and kills its processes; bounded in case of a bug.
    let _ = tokio::time::timeout(Duration::from_secs(5), handle.task).await;
    // What the stopped task reported last belongs in the printed transcript.
    while let Ok(event) = handle.events.try_recv() {
        app.agent_event(&event, Instant::now());
    }
    let width = screen.size().map(|s| s.width).unwrap_or(80);
    drop(guard);

    let ending = result?;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(screen::plain_transcript(&app, width, Instant::now()).as_bytes());
    if app
        .session
        .as_ref()
        .is_some_and(app::session::SessionSeen::saved)
    {
        let _ = out.write_all(format!("{CONTINUE_HINT}\n").as_bytes());
    }
    let _ = out.flush();
    drop(out);
    if let Some(payload) = panicked {
        eprintln!(
            "seek: the UI stopped on an internal error (a bug; the message is above the \
             transcript and in the log)"
        );
        crate::files::flush(Duration::from_secs(2));
        std::panic::resume_unwind(payload);
    }
    let exit = match ending {
        Ending::Quit => Exit::Success,
        Ending::Signal(name) => {
            tracing::info!("ended by {name}");
            eprintln!("seek: ended by {name}");
            Exit::Interrupted
        }
        Ending::InputClosed(why) => {
            tracing::warn!("terminal input ended: {why}");
            eprintln!("seek: the terminal's input ended ({why})");
            Exit::TaskFailed
        }
    };
    // The history and the log are written off the UI thread; let them land before exiting.
    crate::files::flush(Duration::from_secs(2));
    Ok(exit)
}

async fn event_loop(
    screen: &mut terminal::Screen,
    app: &mut App,
    events: &mut mpsc::UnboundedReceiver<agent::Event>,
    commands: &mpsc::UnboundedSender<Command>,
    (mut input, input_control): (
        mpsc::UnboundedReceiver<std::io::Result<TermEvent>>,
        input::InputControl,
    ),
    no_color: bool,
) -> Result<Ending, TuiError> {
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut dirty = true;
    let mut editing: Option<Editing> = None;
    let mut last_frame = Instant::now() - FRAME;
    // A frame that took long spaces the next ones out, so drawing never takes more than about a
    // third of a core whatever the screen holds.
    let mut interval = FRAME;
    loop {
        if app.quit {
            return Ok(Ending::Quit);
        }
        let now = Instant::now();
        let due = if editing.is_some() {
            // The editor owns the screen.
            None
        } else if dirty {
            Some(last_frame + interval)
        } else if app.animating(now) {
            Some(last_frame + TICK)
        } else {
            None
        };
        tokio::select! {
            biased;
            () = sleep_until(due), if due.is_some() => {
                #[cfg(debug_assertions)]
                debug_panic(app);
                let now = Instant::now();
                screen.draw(|frame| screen::draw(frame, app, now, !no_color))?;
                last_frame = now;
                interval = FRAME.max(now.elapsed() * 3);
                dirty = false;
            }
            edited = editor_closed(&mut editing), if editing.is_some() => {
                let Some(Editing { id, .. }) = editing.take() else { continue };
                terminal::resume(screen)?;
                input_control.resume();
                let edited = edited.unwrap_or_else(|e| Err(format!("the editor stopped: {e}")));
                let effects = app.edited(id, edited, Instant::now());
                carry_out(effects, app, commands, &input_control, &mut editing);
                dirty = true;
            }
            // Keys typed before the editor took the terminal wait for it to close.
            read = input.recv(), if editing.is_none() => {
                let event = match read {
                    Some(Ok(event)) => event,
                    Some(Err(e)) => return Ok(Ending::InputClosed(e.to_string())),
                    None => return Ok(Ending::InputClosed("closed".into())),
                };
                let now = Instant::now();
                let effects = match event {
                    TermEvent::Key(key) => app.key(key, now),
                    TermEvent::Paste(text) => { app.paste(&text); Vec::new() }
                    TermEvent::Mouse(mouse) => { app.mouse(mouse, now); Vec::new() }
                    TermEvent::FocusGained => { app.focus_changed(true); Vec::new() }
                    TermEvent::FocusLost => { app.focus_changed(false); Vec::new() }
                    TermEvent::Resize(..) => Vec::new(),
                };
                carry_out(effects, app, commands, &input_control, &mut editing);
                dirty = true;
            }
            event = events.recv() => {
                let Some(event) = event else {
                    app.transcript.error(AGENT_GONE);
                    tracing::error!("the agent task ended");
                    // Keep the UI so the transcript can be read; quitting still works.
                    let (_, never) = mpsc::unbounded_channel();
                    *events = never;
                    dirty = true;
                    continue;
                };
                let now = Instant::now();
                log_event(&event);
                app.agent_event(&event, now);
                // Take what else has arrived before drawing: a fast stream costs one frame.
                for _ in 0..EVENT_BATCH {
                    match events.try_recv() {
                        Ok(event) => {
                            log_event(&event);
                            app.agent_event(&event, now);
                        }
                        Err(_) => break,
                    }
                }
                // Before the frame that shows the end: the user hears of it with what they see.
                if let Some(signal) = app.notifier.take() {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(signal.as_bytes());
                    let _ = out.flush();
                }
                // A task's end sends the next queued prompt.
                let effects = app.take_effects();
                carry_out(effects, app, commands, &input_control, &mut editing);
                dirty = true;
            }
            // A signal that comes while the editor runs is handled once it has closed and the
            // terminal is the UI's again.
            _ = sigterm.recv(), if editing.is_none() => return Ok(Ending::Signal("SIGTERM")),
            _ = sighup.recv(), if editing.is_none() => return Ok(Ending::Signal("SIGHUP")),
            _ = sigint.recv(), if editing.is_none() => return Ok(Ending::Signal("SIGINT")),
        }
    }
}

/// Printed after the transcript on exit when a session was saved.
pub(crate) const CONTINUE_HINT: &str = "continue with: seek -c";

/// What the user reads if the agent task is gone (a bug).
const AGENT_GONE: &str =
    "the agent stopped working (an internal error): restart seek; details in the log";

/// The user's editor, running on a blocking thread, and the question its result answers.
struct Editing {
    id: agent::ApprovalId,
    task: tokio::task::JoinHandle<Result<String, String>>,
}

/// The editor's result, once it has closed; never, when no editor runs.
async fn editor_closed(
    editing: &mut Option<Editing>,
) -> Result<Result<String, String>, tokio::task::JoinError> {
    match editing {
        Some(editing) => (&mut editing.task).await,
        None => std::future::pending().await,
    }
}

/// Does what an update asked for: commands to the agent, file writes, the editor.
fn carry_out(
    effects: Vec<Effect>,
    app: &mut App,
    commands: &mpsc::UnboundedSender<Command>,
    input_control: &input::InputControl,
    editing: &mut Option<Editing>,
) {
    for effect in effects {
        match effect {
            Effect::Send(command) => {
                if commands.send(command).is_err() {
                    app.transcript.error(AGENT_GONE);
                }
            }
            Effect::Write(write) => crate::files::in_background(write),
            Effect::Clipboard(text) => {
                // Between frames: the sequence does not land inside one.
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(clipboard::osc52(&text).as_bytes());
                let _ = out.flush();
            }
            Effect::Edit { id, tool, code } => {
                if editing.is_some() {
                    continue;
                }
                let input_control = input_control.clone();
                // Waiting for the reader to stop, giving the terminal back and the editor's run
                // all block: a thread of their own. The loop takes the terminal back after.
                let task = tokio::task::spawn_blocking(move || {
                    // The editor gets the terminal and every key until it exits.
                    input_control.pause();
                    terminal::restore();
                    editor::edit(crate::tool_kind::ToolKind::from_tag(&tool), &code)
                });
                *editing = Some(Editing { id, task });
            }
        }
    }
}

/// Debug builds only, for the test that a panic still gives the terminal back and prints the
/// transcript: the frame after the prompt box reads `SEEK_DEBUG_PANIC_ON`'s value panics.
/// Release builds have no such variable.
#[cfg(debug_assertions)]
fn debug_panic(app: &App) {
    static TRIGGER: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let trigger = TRIGGER.get_or_init(|| {
        std::env::var("SEEK_DEBUG_PANIC_ON")
            .ok()
            .filter(|t| !t.is_empty())
    });
    if trigger.as_deref() == Some(app.composer.text()) {
        panic!("SEEK_DEBUG_PANIC_ON: a panic asked for by a test");
    }
}

async fn sleep_until(due: Option<Instant>) {
    if let Some(due) = due {
        tokio::time::sleep_until(due.into()).await;
    }
}

fn log_event(event: &agent::Event) {
    match event {
        agent::Event::Error { message } => tracing::error!("{}", message),
        agent::Event::TurnFinished { turn, outcome, .. } => {
            tracing::info!("task {turn} ended: {outcome:?}")
        }
        _ => {}
    }
}

/// The work dir with the home directory shown as `~` (the work dir is canonical: so is home).
fn short_path(path: &std::path::Path) -> String {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let home = home.map(|h| std::fs::canonicalize(&h).unwrap_or(h));
    crate::config::abbreviate_home(path, home.as_deref())
}
