//! The safety settings: the sandbox mode, the approval policy, the optional command blocklist,
//! which withheld variables (credentials, session handles: `crate::secrets`) blocks may still see,
//! which unix sockets outside the sandbox they may reach, and their resource limits.
//!
//! Owns their keys, flags, variables and defaults. The default approval depends on whether
//! blocks are really confined here: `auto` under a working sandbox, `ask` otherwise.

use super::file::FileConfig;
use super::{ConfigError, Origin, Resolver, Sourced, invalid};
use crate::exec::sandbox::{self, SandboxMode};
use crate::exec::socket_guard::{self, AllowedSocket};

pub use crate::wire::Approval;

#[derive(Debug, Clone)]
pub struct Safety {
    pub sandbox: Sourced<SandboxMode>,
    pub approval: Sourced<Approval>,
    /// The shell-parsing command blocklist (a guard rail, not a sandbox).
    pub safe_mode: Sourced<bool>,
    /// Variables blocks see although `crate::secrets` withholds them (exact names).
    pub pass_env: Sourced<Vec<String>>,
    /// Processes and threads one block may run at once (0: no limit).
    pub max_processes: Sourced<u64>,
    /// Memory one block may use, in MiB (0: no limit).
    pub max_memory_mb: Sourced<u64>,
    /// Unix sockets outside the sandbox's folders that blocks may connect to.
    pub allow_sockets: Sourced<Vec<AllowedSocket>>,
}

/// Default processes and threads per block: room for parallel builds and JVMs, not a fork bomb.
pub const DEFAULT_MAX_PROCESSES: u64 = 1024;
/// Default memory per block: 4 GiB, or half the machine's memory where that is less.
pub fn default_max_memory_mb() -> u64 {
    // SAFETY: sysconf(3) with plain constants.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let total_mb = u64::try_from(pages)
        .ok()
        .zip(u64::try_from(page_size).ok())
        .map(|(p, s)| p.saturating_mul(s) >> 20)
        .filter(|&mb| mb > 0);
    total_mb.map_or(4096, |mb| (mb / 2).clamp(256, 4096))
}

impl Safety {
    /// The resource limits of one block.
    pub fn limits(&self) -> crate::exec::cgroup::Limits {
        let nonzero = |n: u64| (n > 0).then_some(n);
        crate::exec::cgroup::Limits {
            max_processes: nonzero(self.max_processes.value),
            max_memory: nonzero(self.max_memory_mb.value).map(|mb| mb.saturating_mul(1 << 20)),
        }
    }
}

impl Safety {
    /// What to say once at start-up when blocks are not confined as configured.
    pub fn warning(&self) -> Option<String> {
        (self.sandbox.value != SandboxMode::Off && !confines(self.sandbox.value)).then(|| {
            format!(
                "this kernel has no Landlock: blocks cannot be confined to the work dir (they still run without administrator rights); approval is {} — see docs/safety.md",
                self.approval.value
            )
        })
    }

    /// What to say once at start-up when blocks' sockets are not supervised as configured.
    pub fn socket_warning(&self) -> Option<String> {
        if self.sandbox.value == SandboxMode::Off {
            return None;
        }
        socket_guard::support().warning()
    }
}

/// Whether blocks are confined by the kernel in `mode` here.
fn confines(mode: SandboxMode) -> bool {
    mode != SandboxMode::Off && sandbox::supported()
}

pub(super) fn resolve(r: &Resolver<'_>, cfg: Option<&FileConfig>) -> Result<Safety, ConfigError> {
    let sandbox = match r.pick_string(
        r.overrides.sandbox.as_deref(),
        "--sandbox",
        "SEEK_SANDBOX",
        cfg.and_then(|c| c.sandbox.as_ref()),
    ) {
        Some(s) => {
            let mode = s
                .value
                .parse::<SandboxMode>()
                .map_err(|expected| invalid(&s, "sandbox", &expected))?;
            Sourced::new(mode, s.origin)
        }
        None => Sourced::new(SandboxMode::WorkspaceWrite, Origin::Default),
    };
    let approval = match r.pick_string(
        r.overrides.approval.as_deref(),
        "--approval",
        "SEEK_APPROVAL",
        cfg.and_then(|c| c.approval.as_ref()),
    ) {
        Some(s) => {
            let approval = s
                .value
                .parse::<Approval>()
                .map_err(|expected| invalid(&s, "approval", &expected))?;
            Sourced::new(approval, s.origin)
        }
        // Unconfined blocks are shown before they run.
        None if confines(sandbox.value) => Sourced::new(Approval::Auto, Origin::Default),
        None => Sourced::new(Approval::Ask, Origin::Default),
    };
    let safe_mode = r
        .file_value(cfg.and_then(|c| c.safe_mode.as_ref()))
        .unwrap_or_else(|| Sourced::new(false, Origin::Default));
    let pass_env = r
        .file_value(cfg.and_then(|c| c.exec.pass_env.as_ref()))
        .unwrap_or_else(|| Sourced::new(Vec::new(), Origin::Default));
    let max_processes = r.number(
        cfg.and_then(|c| c.exec.max_processes.as_ref()),
        "exec.max_processes",
        0..=1_000_000,
        DEFAULT_MAX_PROCESSES,
    )?;
    let max_memory_mb = r.number(
        cfg.and_then(|c| c.exec.max_memory_mb.as_ref()),
        "exec.max_memory_mb",
        0..=(1 << 30),
        default_max_memory_mb(),
    )?;
    let allow_sockets = match r.file_value(cfg.and_then(|c| c.exec.allow_sockets.as_ref())) {
        Some(entries) => {
            let parsed = entries
                .value
                .iter()
                .map(|entry| {
                    entry.parse::<AllowedSocket>().map_err(|expected| {
                        let one = Sourced::new(entry.clone(), entries.origin.clone());
                        invalid(&one, "exec.allow_sockets", &expected)
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Sourced::new(parsed, entries.origin)
        }
        None => Sourced::new(Vec::new(), Origin::Default),
    };
    Ok(Safety {
        sandbox,
        approval,
        safe_mode,
        pass_env,
        max_processes,
        max_memory_mb,
        allow_sockets,
    })
}
