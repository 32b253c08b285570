//! The runtime's private temp dir (blocks' `TMPDIR`): made at start, removed at the end, after
//! cleaning what a killed seek left behind; a folder in the data dir when the system temp dir
//! refuses.
//!
//! It must not decide where blocks run (the work dir) or what they may write (the sandbox).

/// A temp dir private to this runtime (blocks' `TMPDIR`), removed when it ends; first, what a
/// killed seek left behind is cleaned up.
pub(super) enum PrivateTemp {
    Made(crate::exec::instance::Instance),
    /// The system temp dir refused (full, read-only): a folder in the data dir, made on first use.
    Fallback(std::path::PathBuf),
}

impl PrivateTemp {
    pub(super) fn start(data_dir: &std::path::Path, run_dir: &std::path::Path) -> Self {
        use crate::exec::instance::{Instance, clean_stale};
        clean_stale(run_dir);
        match Instance::start(&std::env::temp_dir(), Some(run_dir)) {
            Ok(instance) => Self::Made(instance),
            Err(e) => {
                tracing::warn!("{e}");
                Self::Fallback(data_dir.join("tmp"))
            }
        }
    }

    pub(super) fn path(&self) -> std::path::PathBuf {
        match self {
            Self::Made(instance) => instance.temp_dir().to_owned(),
            Self::Fallback(path) => path.clone(),
        }
    }
}
