//! The `seek` binary: parse the command line, resolve the configuration, dispatch to the
//! subcommand or mode (`seek::commands`, one line each).
//!
//! A thin edge over the library; errors become messages on stderr and exit codes here.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use seek::cli::{Cli, Command, Exit};
use seek::commands::{self, config_error};
use seek::config::{self, Config, Dirs, Env};

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
        Some(Command::Models) if seek::local::is_local(&config) => {
            commands::local_models::models(&config)
        }
        Some(Command::Models) => commands::models::run(&config, &env),
        Some(Command::Mcp { json }) => {
            if let Err(err) = config.ensure_work_dir() {
                return Ok(config_error(&err));
            }
            commands::mcp::servers(&config, *json)
        }
        Some(Command::Pull { name }) => commands::local_models::pull(&config, name, &cwd),
        Some(Command::Sessions { all, action }) => {
            commands::sessions::run(&config, *all, action.as_ref())
        }
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
            commands::serve::run(config, &env, &args)
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
                return commands::print::run(config, &env, prompt, cli);
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
            commands::interactive::run(config, &env, cli.resume(), initial_prompt)
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
