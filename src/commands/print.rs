//! `seek -p TASK`: one task without the terminal UI, its events on stdout as text or JSON lines
//! (`headless` runs it); refused where blocks would wait for an approval no one can give.

use seek_core::config::{Config, Env};
use seek_core::session::Sessions;
use seek_wire::wire::Exit;

use super::{masker, named_model, unattended};
use crate::cli::{Cli, PrintPrompt};

/// Runs the task `prompt` headless, as `cli` asks (JSON, resume).
pub fn run(config: Config, env: &Env, prompt: PrintPrompt, cli: &Cli) -> anyhow::Result<Exit> {
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
    let task = crate::headless::Task {
        prompt: prompt.words,
        context: prompt.context,
        json: cli.json,
        sessions: Some(sessions),
        resume: cli.resume(),
    };
    let exit = runtime.block_on(crate::headless::run(
        std::sync::Arc::new(config),
        model,
        task,
    ))?;
    Ok(exit)
}
