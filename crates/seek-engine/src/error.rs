//! The engine's failures as values: each names the file involved and what to do about it.
//!
//! Owns the error type only; it must not decide policy (what to retry, what to fall back to).

use std::path::PathBuf;

/// Why loading, tokenizing, templating or running a GGUF model failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The file could not be opened or read.
    #[error("cannot read the model file {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    /// The file is not a GGUF file, or its header or tensor table is damaged.
    #[error("{path} is not a usable GGUF model file: {reason}")]
    NotGguf { path: PathBuf, reason: String },
    /// The GGUF file's architecture is one the engine does not run.
    #[error(
        "{path} holds a model of architecture {found:?}, which the built-in engine does not run (it runs: {supported}); use a model server for it (--provider ollama, llama.cpp, …)"
    )]
    UnsupportedArchitecture {
        path: PathBuf,
        found: String,
        supported: String,
    },
    /// A metadata key or tensor the architecture needs is missing or has the wrong type.
    #[error("{path} lacks what its architecture needs: {what}")]
    Incomplete { path: PathBuf, what: String },
    /// The tokenizer in the file cannot be built or used.
    #[error("the tokenizer of {path} cannot be used: {reason}")]
    Tokenizer { path: PathBuf, reason: String },
    /// The chat template in the file cannot be parsed or rendered.
    #[error("the chat template of {path} failed: {reason}")]
    Template { path: PathBuf, reason: String },
    /// The chat template in the file went past a bound seek renders templates within.
    #[error(
        "the chat template of {path} exceeded seek's bound of {limit} (a model file's template is untrusted, so seek bounds its memory, nesting and steps); use a different model file, or a model server for this one (--provider ollama, llama.cpp, …)"
    )]
    TemplateLimit { path: PathBuf, limit: String },
    /// The tensor arithmetic failed (a bug or a damaged file).
    #[error("the model {path} failed while computing: {reason}")]
    Compute { path: PathBuf, reason: String },
    /// The conversation does not fit the model's context window.
    #[error(
        "the conversation ({tokens} tokens) does not fit {path}'s context window ({window} tokens): start a new session or use a model with a larger window"
    )]
    ContextExceeded {
        path: PathBuf,
        tokens: usize,
        window: usize,
    },
    /// Saved key/value cache bytes that are damaged, truncated or for another model.
    #[error("the saved key/value cache cannot be used: {reason}")]
    CacheBytes { reason: String },
}
