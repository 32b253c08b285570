//! The `seek` binary: parse the command line, resolve the configuration, dispatch.
//!
//! A thin edge over the library; errors become messages on stderr and exit codes here.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use seek::cli::{Cli, Command, Exit, Resume};
use seek::config::{self, Config, ConfigError, Dirs, Env};
use seek::llm::{self, LlmError};
use seek::secrets::Masker;
use seek::session::{self, Sessions};
use seek::terminal_safe::terminal_safe;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
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
        Some(Command::Pull { name }) => seek::local::commands::pull(&config, name, &cwd),
        Some(Command::Sessions) => list_sessions(&config),
        None => {
            if let Err(err) = config.ensure_work_dir() {
                return Ok(config_error(&err));
            }
            if let Some(prompt) = &cli.print {
                return headless(config, &env, prompt.clone(), cli);
            }
            if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
                eprintln!(
                    "seek: no terminal here; run a task headless with: seek -p \"your task\""
                );
                return Ok(Exit::Usage);
            }
            interactive(config, &env, cli.resume())
        }
    }
}

fn headless(config: Config, env: &Env, prompt: String, cli: &Cli) -> anyhow::Result<Exit> {
    if config.safety.approval.value == seek::config::Approval::Ask {
        eprintln!(
            "seek: approval is ask ({}), and -p has no one to ask: run with --yes (-y) to run blocks, or --approval never to only show them",
            config.safety.approval.origin
        );
        return Ok(Exit::Usage);
    }
    for warning in [config.safety.warning(), config.work_dir_warning()]
        .into_iter()
        .flatten()
    {
        eprintln!("seek: warning: {warning}");
    }
    if let Some(warning) = config.safety.socket_warning() {
        eprintln!("seek: warning: {warning}");
    }
    if let Some(notice) = seek::local::first_use_notice(&config) {
        eprintln!("seek: {notice}");
    }
    if prompt.trim().is_empty() {
        eprintln!("seek: the prompt is empty: seek -p \"your task\"");
        return Ok(Exit::Usage);
    }
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
        return Ok(Exit::Usage);
    }
    let model = match llm::connect(&config, env) {
        Ok(model) => model,
        Err(err) => {
            eprintln!("seek: {err}");
            return Ok(Exit::Usage);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let sessions = Sessions::for_config(&config, masker(&config, env), &model.describe());
    let task = seek::headless::Task {
        prompt,
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

fn interactive(config: Config, env: &Env, resume: Option<Resume>) -> anyhow::Result<Exit> {
    // No model yet is fine here: the UI says so and `/model NAME` sets one.
    let model = match llm::connect(&config, env) {
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
        env,
        config.api_key_env.value.as_deref(),
        &config.base_url.value,
    ))
}

fn list_sessions(config: &Config) -> anyhow::Result<Exit> {
    let listing = match session::list(&config.data_dir) {
        Ok(listing) => listing,
        Err(err) => {
            eprintln!("seek: {err}");
            return Ok(Exit::Usage);
        }
    };
    if let Some(warning) = listing.warning() {
        eprintln!("seek: warning: {warning}");
    }
    let sessions = listing.sessions;
    let mut out = std::io::stdout().lock();
    if sessions.is_empty() {
        writeln!(
            out,
            "no sessions yet in {}",
            session::dir(&config.data_dir).display()
        )?;
        return Ok(Exit::Success);
    }
    writeln!(out, "{}", session::Summary::TITLES)?;
    for s in sessions {
        writeln!(out, "{}", s.line())?;
    }
    Ok(Exit::Success)
}

fn list_models(config: &Config, env: &Env) -> anyhow::Result<Exit> {
    let model = match llm::connect(config, env) {
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

fn model_server_error(err: &LlmError) -> Exit {
    // The message may quote the server's reply.
    eprintln!("seek: {}", terminal_safe(&err.to_string()));
    Exit::ModelServer
}

fn config_error(err: &ConfigError) -> Exit {
    eprintln!("seek: {err}");
    Exit::Usage
}
