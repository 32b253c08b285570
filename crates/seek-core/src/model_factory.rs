//! Which chat model the configuration names: the built-in engine's provider (`local`) for the
//! in-process wire, the HTTP client (`llm`) otherwise. It lives above both so that neither
//! knows the other; it must not hold more than that choice.

use std::sync::Arc;

use crate::config::{Config, Env, Wire, providers::DEFAULT_LOCAL_MODEL};
use crate::llm::{ChatModel, LlmError, connect_http};
use crate::local::provider::{LocalChatModel, LocalOptions};

/// Builds the configured provider: the built-in engine for `local`, an HTTP client otherwise.
pub fn connect(config: &Config, env: &Env) -> Result<Arc<dyn ChatModel>, LlmError> {
    if config.provider.value.wire == Wire::InProcess {
        let model = config
            .model
            .value
            .clone()
            .unwrap_or_else(|| DEFAULT_LOCAL_MODEL.to_owned());
        return Ok(Arc::new(LocalChatModel::new(
            model,
            LocalOptions::from_config(config),
        )));
    }
    Ok(Arc::new(connect_http(config, env)?))
}
