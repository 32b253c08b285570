//! The process's exit codes: a contract users and scripts rely on; every front end returns one.
//!
//! Owns the codes only; it must not decide when a task failed.

/// Process exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    Success = 0,
    /// The task failed or the agent gave up.
    TaskFailed = 1,
    /// Usage or configuration error.
    Usage = 2,
    /// The model server failed (unreachable, or an error after retries).
    ModelServer = 3,
    /// Interrupted (Ctrl+C / SIGINT).
    Interrupted = 130,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit as u8)
    }
}
