//! `seek models`: the models the configured server offers, one name a line (the built-in
//! engine's catalog and files are `local_models`).

use std::io::Write;

use seek_core::config::{Config, Env};
use seek_wire::terminal_safe::terminal_safe;
use seek_wire::wire::Exit;

use super::model_server_error;

/// Lists the server's models.
pub fn run(config: &Config, env: &Env) -> anyhow::Result<Exit> {
    let model = match seek_core::model_factory::connect(config, env) {
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
