//! The built-in engine's failures as values, as seek meets them: the engine's own (loading,
//! tokenizing, running a file) and those of seek's side of it (names, downloads, the engine
//! thread). Each names the file, model or address involved and what to do about it.
//!
//! Owns the error type only; it must not decide policy (what to retry, what to fall back to).

use std::path::PathBuf;

use seek_engine::EngineError;

/// Why loading, tokenizing, running or downloading a local model failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The engine failed on the model file: unreadable, damaged, unsupported, too long a
    /// conversation.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A name that is neither a catalog entry nor a `.gguf` file.
    #[error("no model named {name:?}: use a catalog name ({catalog}) or the path of a .gguf file")]
    UnknownModel { name: String, catalog: String },
    /// Every download source failed; each failure is listed.
    #[error("could not download {name}: {failures}")]
    DownloadFailed { name: String, failures: String },
    /// A downloaded file's sha256 is not the catalog's (the file was deleted).
    #[error(
        "{name} from {source_url} has sha256 {found}, not the catalog's {expected}: the file was deleted"
    )]
    HashMismatch {
        name: String,
        source_url: String,
        expected: String,
        found: String,
    },
    /// The cache directory cannot be created or written.
    #[error(
        "cannot write the model cache {path}: {reason}; set [local] models_dir to a writable folder"
    )]
    CacheUnwritable { path: PathBuf, reason: String },
    /// The user stopped it (Esc, Ctrl+C); a partial download is kept and resumes next time.
    #[error("{what} was cancelled")]
    Cancelled { what: String },
    /// The engine thread is gone (a bug; the message is logged).
    #[error("the built-in engine stopped: {reason}")]
    EngineGone { reason: String },
}
