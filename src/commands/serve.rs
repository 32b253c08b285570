//! `seek serve`: AgenticSeek's HTTP API over the runtime (seek-serve), after the same checks as
//! `-p` (no one is there to approve a block).

use std::sync::Arc;

use seek_core::config::{Config, Env};
use seek_core::session::Sessions;
use seek_wire::wire::Exit;

use super::{masker, named_model, unattended};

/// `seek serve`: the same checks as `-p` (no one to ask for approval), then the server.
pub fn run(config: Config, env: &Env, args: &seek_serve::ServeArgs) -> anyhow::Result<Exit> {
    if let Err(exit) = unattended(&config, "seek serve") {
        return Ok(exit);
    }
    let model = match named_model(&config, env) {
        Ok(model) => model,
        Err(exit) => return Ok(exit),
    };
    let sessions = Sessions::for_config(&config, masker(&config, env), &model.describe());
    let env_token = env.get(seek_serve::setup::TOKEN_VAR);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let exit = runtime.block_on(seek_serve::run(
        Arc::new(config),
        model,
        Some(sessions),
        args,
        env_token,
    ))?;
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    Ok(exit)
}
