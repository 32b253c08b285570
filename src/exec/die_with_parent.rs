//! Long-lived helpers seek starts outside blocks (MCP servers, the web agent's browser driver)
//! get SIGKILL when seek dies, so a killed seek leaves none of them behind.
//!
//! It must not decide when those helpers end otherwise (their owners do).

/// Arranges for the child of `command` to get SIGKILL when seek dies (Linux). `what` names the
/// child in the error when seek died while it started.
pub fn die_with_parent(command: &mut tokio::process::Command, what: &'static str) {
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id();
        // SAFETY: the closure runs in the forked child before exec and makes only
        // async-signal-safe system calls (prctl, getppid); it allocates nothing on success, and
        // its error is built only when seek is already gone.
        unsafe {
            command.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)?;
                // seek may have died between the fork and the prctl: then no signal will come.
                if std::os::unix::process::parent_id() != parent {
                    return Err(std::io::Error::other(format!(
                        "seek exited while {what} started"
                    )));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (command, what);
}
