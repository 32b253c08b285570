//! The `seek` binary's subcommands and modes, one file each (`seek sessions`, `seek models`,
//! `seek pull`, `seek mcp`, `seek serve`, `-p`, the terminal UI); `main.rs` dispatches to each
//! with one line. Also what several of them share: the checks of the unattended modes, the
//! model client, the masker, and how an error becomes a message and an exit code.
//!
//! Owns what these commands print and their exit codes; the work itself is the library's.

pub mod interactive;
pub mod local_models;
pub mod mcp;
pub mod models;
pub mod print;
pub mod serve;
pub mod sessions;

use std::sync::Arc;

use seek_core::config::{Config, ConfigError, Env};
use seek_core::llm::{self, LlmError};
use seek_core::secrets::Masker;
use seek_wire::terminal_safe::terminal_safe;
use seek_wire::wire::Exit;

/// The checks of the modes with no one at the terminal (`-p`, `seek serve`, named by `mode`):
/// `approval = ask` refused, the safety and work-dir warnings said once.
pub(crate) fn unattended(config: &Config, mode: &str) -> Result<(), Exit> {
    if config.safety.approval.value == seek_core::config::Approval::Ask {
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
        seek_core::local::first_use_notice(config),
    ]
    .into_iter()
    .flatten()
    {
        eprintln!("seek: {notice}");
    }
    Ok(())
}

/// The configured model's client; a mode with no one to pick a model needs one named.
pub(crate) fn named_model(config: &Config, env: &Env) -> Result<Arc<dyn llm::ChatModel>, Exit> {
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
    seek_core::model_factory::connect(config, env).map_err(|err| {
        eprintln!("seek: {err}");
        Exit::Usage
    })
}

/// The one masker for this process's session files and log: the secrets of `env` and of the
/// configured model server.
pub fn masker(config: &Config, env: &Env) -> Arc<Masker> {
    Arc::new(Masker::for_environment(
        env.iter(),
        &config.credential_vars(),
        &config.base_url.value,
    ))
}

pub(crate) fn model_server_error(err: &LlmError) -> Exit {
    // The message may quote the server's reply.
    eprintln!("seek: {}", terminal_safe(&err.to_string()));
    Exit::ModelServer
}

pub fn config_error(err: &ConfigError) -> Exit {
    eprintln!("seek: {err}");
    Exit::Usage
}
