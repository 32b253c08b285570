//! `seek` at a terminal: the terminal UI (seek-tui), with the model if one is set (the UI says
//! when none is, and `/model NAME` sets one).

use std::sync::Arc;

use seek_core::config::{Config, Env};
use seek_core::session::Sessions;
use seek_wire::wire::Exit;

use super::masker;
use crate::cli::Resume;

/// Runs the terminal UI until the user quits.
pub fn run(
    config: Config,
    env: &Env,
    resume: Option<Resume>,
    initial_prompt: Option<String>,
) -> anyhow::Result<Exit> {
    // No model yet is fine here: the UI says so and `/model NAME` sets one.
    let model = match seek_core::model_factory::connect(&config, env) {
        Ok(model) => model,
        Err(err) => {
            eprintln!("seek: {err}");
            return Ok(Exit::Usage);
        }
    };
    let masker = masker(&config, env);
    let options = seek_tui::Options {
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
    let exit = runtime.block_on(seek_tui::run(Arc::new(config), model, options))?;
    // The input thread may still be blocked reading the terminal; do not wait for it.
    runtime.shutdown_background();
    Ok(exit)
}
