//! The `seek` binary: parse the command line, resolve the configuration, dispatch.
//!
//! A thin edge over the library; errors become messages on stderr and exit codes here.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use seek::cli::{Cli, Command, Exit, Resume, SessionsAction};
use seek::config::{self, Config, ConfigError, Dirs, Env};
use seek::llm::{self, LlmError};
use seek::model_factory;
use seek::secrets::Masker;
use seek::session::{self, Sessions};
use seek::terminal_safe::terminal_safe;

fn main() -> ExitCode {
    let cli = match Cli::parse_args(std::env::args_os()) {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help and version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
        }
    };
    match run(&cli) {
        Ok(exit) => exit.into(),
        Err(err) => {
            eprintln!("seek: {err:#}");
            Exit::Usage.into()
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<Exit> {
    let env = Env::from_process();
    let dirs = Dirs::from_env(&env);
    let cwd = std::env::current_dir()?;
    let mut config = match Config::resolve(&cli.overrides(), &env, &dirs, &cwd) {
        Ok(config) => config,
        Err(err) => return Ok(config_error(&err)),
    };
    match &cli.command {
        Some(Command::Config) => {
            let mut out = std::io::stdout().lock();
            out.write_all(config::render(&config, &env).as_bytes())?;
            Ok(Exit::Success)
        }
        Some(Command::Models) if seek::local::commands::is_local(&config) => {
            seek::local::commands::models(&config)
        }
        Some(Command::Models) => list_models(&config, &env),
        Some(Command::Mcp { json }) => {
            if let Err(err) = config.ensure_work_dir() {
                return Ok(config_error(&err));
            }
            mcp_servers(&config, *json)
        }
        Some(Command::Pull { name }) => seek::local::commands::pull(&config, name, &cwd),
        Some(Command::Sessions { all, action }) => sessions(&config, *all, action.as_ref()),
        Some(Command::Serve {
            host,
            port,
            no_token,
        }) => {
            if let Err(err) = config.ensure_work_dir() {
                return Ok(config_error(&err));
            }
            let args = seek::serve::ServeArgs {
                host: host.clone(),
                port: *port,
                no_token: *no_token,
            };
            serve(config, &env, &args)
        }
        None => {
            if let Err(err) = config.ensure_work_dir() {
                return Ok(config_error(&err));
            }
            if cli.print.is_some() {
                let prompt = match headless_prompt(cli) {
                    Ok(prompt) => prompt,
                    Err(err) => {
                        eprintln!("seek: cannot read stdin: {err}");
                        return Ok(Exit::Usage);
                    }
                };
                return headless(config, &env, prompt, cli);
            }
            if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
                let what = if cli.prompt.is_empty() {
                    "a task"
                } else {
                    "the task"
                };
                eprintln!(
                    "seek: no terminal here; run {what} headless with: seek -p \"your task\""
                );
                return Ok(Exit::Usage);
            }
            let task = cli.task();
            let initial_prompt = (!task.trim().is_empty()).then_some(task);
            interactive(config, &env, cli.resume(), initial_prompt)
        }
    }
}

/// The task of `seek -p`: what the command line gives and, when stdin is not a terminal, what
/// it holds (bounded: `cli::STDIN_LIMIT`), kept apart as context. A terminal is never read: it
/// would wait for typing.
fn headless_prompt(cli: &Cli) -> std::io::Result<seek::cli::PrintPrompt> {
    let given = cli.task();
    if std::io::stdin().is_terminal() {
        return Ok(seek::cli::prompt_with_stdin(&given, b"", false));
    }
    let mut piped = Vec::new();
    std::io::stdin()
        .lock()
        .take(seek::cli::STDIN_LIMIT as u64 + 1)
        .read_to_end(&mut piped)?;
    let cut = piped.len() > seek::cli::STDIN_LIMIT;
    piped.truncate(seek::cli::STDIN_LIMIT);
    if cut {
        eprintln!(
            "seek: stdin holds more than {} KiB: only its beginning is sent",
            seek::cli::STDIN_LIMIT / 1024
        );
    }
    Ok(seek::cli::prompt_with_stdin(&given, &piped, cut))
}

/// The checks of the modes with no one at the terminal (`-p`, `seek serve`, named by `mode`):
/// `approval = ask` refused, the safety and work-dir warnings said once.
fn unattended(config: &Config, mode: &str) -> Result<(), Exit> {
    if config.safety.approval.value == seek::config::Approval::Ask {
        eprintln!(
            "seek: approval is ask ({}), and {mode} has no one to ask: run with --yes (-y) to run blocks, or --approval never to only show them",
            config.safety.approval.origin
        );
        return Err(Exit::Usage);
    }
    for warning in [
        config.safety.warning(),
        config.work_dir_warning(),
        config.safety.socket_warning(),
    ]
    .into_iter()
    .flatten()
    {
        eprintln!("seek: warning: {warning}");
    }
    for notice in [
        config.work_dir_notice(),
        seek::local::first_use_notice(config),
    ]
    .into_iter()
    .flatten()
    {
        eprintln!("seek: {notice}");
    }
    Ok(())
}

/// The configured model's client; a mode with no one to pick a model needs one named.
fn named_model(config: &Config, env: &Env) -> Result<Arc<dyn llm::ChatModel>, Exit> {
    if config
        .model
        .value
        .as_deref()
        .is_none_or(|m| m.trim().is_empty())
    {
        let err = LlmError::NoModel {
            provider: config.provider.value.name.to_owned(),
        };
        eprintln!("seek: {err}");
        return Err(Exit::Usage);
    }
    model_factory::connect(config, env).map_err(|err| {
        eprintln!("seek: {err}");
        Exit::Usage
    })
}

fn headless(
    config: Config,
    env: &Env,
    prompt: seek::cli::PrintPrompt,
    cli: &Cli,
) -> anyhow::Result<Exit> {
    if let Err(exit) = unattended(&config, "-p") {
        return Ok(exit);
    }
    if prompt.is_empty() {
        eprintln!("seek: the prompt is empty: seek -p \"your task\"");
        return Ok(Exit::Usage);
    }
    let model = match named_model(&config, env) {
        Ok(model) => model,
        Err(exit) => return Ok(exit),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let sessions = Sessions::for_config(&config, masker(&config, env), &model.describe());
    let task = seek::headless::Task {
        prompt: prompt.words,
        context: prompt.context,
        json: cli.json,
        sessions: Some(sessions),
        resume: cli.resume(),
    };
    let exit = runtime.block_on(seek::headless::run(
        std::sync::Arc::new(config),
        model,
        task,
    ))?;
    Ok(exit)
}

/// `seek serve`: the same checks as `-p` (no one to ask for approval), then the server.
fn serve(config: Config, env: &Env, args: &seek::serve::ServeArgs) -> anyhow::Result<Exit> {
    if let Err(exit) = unattended(&config, "seek serve") {
        return Ok(exit);
    }
    let model = match named_model(&config, env) {
        Ok(model) => model,
        Err(exit) => return Ok(exit),
    };
    let sessions = Sessions::for_config(&config, masker(&config, env), &model.describe());
    let env_token = env.get(seek::serve::setup::TOKEN_VAR);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let exit = runtime.block_on(seek::serve::run(
        Arc::new(config),
        model,
        Some(sessions),
        args,
        env_token,
    ))?;
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    Ok(exit)
}

fn interactive(
    config: Config,
    env: &Env,
    resume: Option<Resume>,
    initial_prompt: Option<String>,
) -> anyhow::Result<Exit> {
    // No model yet is fine here: the UI says so and `/model NAME` sets one.
    let model = match model_factory::connect(&config, env) {
        Ok(model) => model,
        Err(err) => {
            eprintln!("seek: {err}");
            return Ok(Exit::Usage);
        }
    };
    let masker = masker(&config, env);
    let options = seek::tui::Options {
        no_color: env.get("NO_COLOR").is_some_and(|v| !v.is_empty()),
        sessions: Some(Sessions::for_config(
            &config,
            Arc::clone(&masker),
            &model.describe(),
        )),
        resume,
        masker,
        initial_prompt,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let exit = runtime.block_on(seek::tui::run(std::sync::Arc::new(config), model, options))?;
    // The input thread may still be blocked reading the terminal; do not wait for it.
    runtime.shutdown_background();
    Ok(exit)
}

/// The one masker for this process's session files and log: the secrets of `env` and of the
/// configured model server.
fn masker(config: &Config, env: &Env) -> Arc<Masker> {
    Arc::new(Masker::for_environment(
        env.iter(),
        &config.credential_vars(),
        &config.base_url.value,
    ))
}

/// `seek sessions`: list (this work dir's, or `--all`), `rm` or `prune`.
fn sessions(config: &Config, all: bool, action: Option<&SessionsAction>) -> anyhow::Result<Exit> {
    match action {
        None => list_sessions(config, all),
        Some(SessionsAction::Rm { ids }) => remove_sessions(config, ids),
        Some(SessionsAction::Prune {
            older_than,
            dry_run,
        }) => prune_sessions(config, *older_than, *dry_run),
    }
}

fn list_sessions(config: &Config, all: bool) -> anyhow::Result<Exit> {
    let listing = match session::list(&config.data_dir) {
        Ok(listing) => listing,
        Err(err) => {
            eprintln!("seek: {}", terminal_safe(&err.to_string()));
            return Ok(Exit::Usage);
        }
    };
    if let Some(warning) = listing.warning() {
        eprintln!("seek: warning: {}", terminal_safe(&warning));
    }
    // The work dir as a session's header has it: canonical (listing creates nothing).
    let work_dir = std::fs::canonicalize(&config.work_dir.value)
        .unwrap_or_else(|_| config.work_dir.value.clone())
        .display()
        .to_string();
    let sessions = if all {
        listing.sessions
    } else {
        listing.only_in(&work_dir).sessions
    };
    let mut out = std::io::stdout().lock();
    if sessions.is_empty() {
        let message = if all {
            format!(
                "no sessions yet in {}",
                session::dir(&config.data_dir).display()
            )
        } else {
            format!("no saved sessions in {work_dir} yet; `seek sessions --all` lists every one")
        };
        writeln!(out, "{}", terminal_safe(&message))?;
        return Ok(Exit::Success);
    }
    let home = config
        .home
        .as_ref()
        .and_then(|h| std::fs::canonicalize(h).ok());
    writeln!(out, "{}", session::Summary::TITLES)?;
    for s in sessions {
        // Prompts and folders come from the files: shown, never obeyed by the terminal.
        writeln!(out, "{}", terminal_safe(&s.line(home.as_deref())))?;
    }
    Ok(Exit::Success)
}

/// One removed session, as `rm` and `prune` say it.
fn removed_line(summary: &session::Summary) -> String {
    let prompt: String = summary
        .first_prompt
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(60)
        .collect();
    terminal_safe(&format!(
        "{}  {}  {prompt}",
        summary.id,
        seek::log::utc_minutes(summary.last_activity_ms)
    ))
    .into_owned()
}

fn remove_sessions(config: &Config, ids: &[String]) -> anyhow::Result<Exit> {
    let mut out = std::io::stdout().lock();
    let mut exit = Exit::Success;
    for id in ids {
        match session::remove(&config.data_dir, id) {
            Ok(removed) => writeln!(out, "removed {}", removed_line(&removed))?,
            Err(err) => {
                eprintln!("seek: {}", terminal_safe(&err.to_string()));
                exit = Exit::Usage;
            }
        }
    }
    Ok(exit)
}

fn prune_sessions(
    config: &Config,
    older_than: std::time::Duration,
    dry_run: bool,
) -> anyhow::Result<Exit> {
    let age_ms = u64::try_from(older_than.as_millis()).unwrap_or(u64::MAX);
    let cutoff = session::now_ms().saturating_sub(age_ms);
    let pruned = match session::prune(&config.data_dir, cutoff, dry_run) {
        Ok(pruned) => pruned,
        Err(err) => {
            eprintln!("seek: {}", terminal_safe(&err.to_string()));
            return Ok(Exit::Usage);
        }
    };
    let mut out = std::io::stdout().lock();
    let verb = if dry_run { "would remove" } else { "removed" };
    for removed in &pruned.removed {
        writeln!(out, "{verb} {}", removed_line(removed))?;
    }
    for (id, why) in &pruned.kept {
        eprintln!("seek: kept {}: {}", terminal_safe(id), terminal_safe(why));
    }
    let count = pruned.removed.len();
    let noun = if count == 1 { "session" } else { "sessions" };
    writeln!(
        out,
        "{verb} {count} {noun} last active more than {} ago",
        humane_age(older_than)
    )?;
    Ok(Exit::Success)
}

/// `30 days`, `12 hours`, `90 minutes`: the age as given.
fn humane_age(age: std::time::Duration) -> String {
    let minutes = age.as_secs() / 60;
    let (n, unit) = if minutes.is_multiple_of(1440) {
        (minutes / 1440, "day")
    } else if minutes.is_multiple_of(60) {
        (minutes / 60, "hour")
    } else {
        (minutes, "minute")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

fn list_models(config: &Config, env: &Env) -> anyhow::Result<Exit> {
    let model = match model_factory::connect(config, env) {
        Ok(model) => model,
        Err(err) => {
            eprintln!("seek: {err}");
            return Ok(Exit::Usage);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match runtime.block_on(model.list_models()) {
        Ok(names) => {
            let mut out = std::io::stdout().lock();
            // The names come from the server: shown, never obeyed by the terminal.
            for name in names {
                writeln!(out, "{}", terminal_safe(&name))?;
            }
            Ok(Exit::Success)
        }
        Err(err) => Ok(model_server_error(&err)),
    }
}

/// `seek mcp`: the configured MCP servers, started, listed and ended; Ctrl+C ends them too.
fn mcp_servers(config: &Config, json: bool) -> anyhow::Result<Exit> {
    // Servers inherit what blocks inherit: the environment without credentials.
    let env_remove = seek::secrets::withheld_names(
        std::env::vars_os(),
        &config.credential_vars(),
        &config.safety.pass_env.value,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Ctrl+C, SIGTERM and SIGHUP all end the servers before seek exits. The handlers are in
    // place before any server starts, so no signal takes the default action meanwhile.
    let listing = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let signals = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        );
        let interrupt = async move {
            let (Ok(mut int), Ok(mut term), Ok(mut hup)) = signals else {
                // Without signal handlers there is nothing to wait for.
                return std::future::pending::<()>().await;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
        };
        seek::mcp_command::run(config, env_remove, json, interrupt).await
    });
    std::io::stdout()
        .lock()
        .write_all(listing.stdout.as_bytes())?;
    eprint!("{}", listing.stderr);
    Ok(listing.exit)
}

fn model_server_error(err: &LlmError) -> Exit {
    // The message may quote the server's reply.
    eprintln!("seek: {}", terminal_safe(&err.to_string()));
    Exit::ModelServer
}

fn config_error(err: &ConfigError) -> Exit {
    eprintln!("seek: {err}");
    Exit::Usage
}
