//! The built-in model engine (`provider = "local"`): GGUF models run in this process, with no
//! model server.
//!
//! Owns loading GGUF files, their tokenizer and chat template, the transformer, the engine
//! thread that keeps the KV cache between rounds, the catalog of models by name and their
//! downloads. It must not know about tools, the agent loop or the terminal: it is one more
//! `ChatModel` behind the same trait as the HTTP providers.

pub mod advice;
pub mod catalog;
pub mod download;
pub mod engine;
pub mod error;
pub mod fetch;
pub(crate) mod prefix_file;
pub(crate) mod prefixes;
pub mod provider;

pub use error::LocalError;
// The engine's parts, under the paths seek has always used for them.
pub use seek_engine::{gguf, kernels, linear, model, sampler, template, tokenizer, utf8};

/// What to tell a user whom seek put on the built-in engine because nothing else was set up,
/// the first time (while the default model is not downloaded yet): which model, and how to pick
/// a bigger one or a server. `None` once the model is here, or when anything was configured.
pub fn first_use_notice(config: &crate::config::Config) -> Option<String> {
    use crate::config::{Origin, Wire};
    if config.provider.value.wire != Wire::InProcess || config.provider.origin != Origin::Default {
        return None;
    }
    let name = config.model.value.as_deref()?;
    let entry = catalog::find(name)?;
    let settings = download::DownloadSettings::from(&config.local);
    if matches!(
        download::on_disk(entry, &settings),
        download::OnDisk::Ready(_) | download::OnDisk::Unverified(_)
    ) {
        return None;
    }
    Some(format!(
        "no model server is configured, so seek runs {name} itself ({:.0} MB, downloaded once into {}). It is small and fast, not clever: for better answers use /model qwen2.5-coder-1.5b (or --model qwen2.5-coder-7b), or a server: --provider ollama --model qwen2.5-coder:7b",
        entry.size as f64 / 1e6,
        settings.models_dir.display()
    ))
}

/// Whether the configured provider is the built-in engine.
pub fn is_local(config: &crate::config::Config) -> bool {
    config.provider.value.name == "local"
}
