//! The safety settings: the sandbox mode, the approval policy, the optional command blocklist,
//! which withheld variables (credentials, session handles: `crate::secrets`) blocks may still see,
//! which unix sockets outside the sandbox they may reach, and their resource limits.
//!
//! Owns their value types, their defaults and the approval's (the keys, flags and variables, and
//! `Safety` they land in, are the settings table's, which names this file). The default approval
//! depends on whether blocks are really confined here: `auto` under a working sandbox, `ask`
//! otherwise.

use super::setting::{Bounds, Choice, Refusal, Value, choice_value, toml_list};
use super::{Origin, Sourced};

pub use crate::exec::cgroup::Limits;
pub use crate::exec::sandbox::SandboxMode;
pub use crate::exec::socket_guard::AllowedSocket;
pub use crate::wire::Approval;

impl Choice for SandboxMode {
    fn word(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for Approval {
    fn word(self) -> &'static str {
        self.as_str()
    }
}

choice_value!(SandboxMode, Approval);

/// `allow_sockets = ["/run/x.sock", "@name"]`; a refusal quotes the entry refused.
impl Value for Vec<AllowedSocket> {
    type File = Vec<String>;
    fn from_file(raw: &Vec<String>, _: Bounds) -> Result<Self, Refusal> {
        raw.iter()
            .map(|entry| {
                entry.parse::<AllowedSocket>().map_err(|expected| Refusal {
                    expected,
                    part: Some(format!("{entry:?}")),
                })
            })
            .collect()
    }
    fn from_text(text: &str, bounds: Bounds) -> Result<Self, Refusal> {
        Self::from_file(&Vec::<String>::from_text(text, bounds)?, bounds)
    }
    fn to_toml(&self) -> String {
        let entries: Vec<String> = self.iter().map(ToString::to_string).collect();
        toml_list(entries.iter().map(String::as_str))
    }
}

/// Default processes and threads per block: room for parallel builds and JVMs, not a fork bomb.
pub(crate) const DEFAULT_MAX_PROCESSES: u64 = 1024;
/// Default memory per block: 4 GiB, or half the machine's memory where that is less.
pub(crate) fn default_max_memory_mb() -> u64 {
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

/// Whether blocks are confined by the kernel in `mode` here.
pub(super) fn confines(mode: SandboxMode) -> bool {
    mode != SandboxMode::Off && crate::exec::sandbox::supported()
}

/// The approval policy: as given, else `auto` under a working sandbox and `ask` otherwise.
pub(super) fn approval(
    given: Option<Sourced<Approval>>,
    sandbox: SandboxMode,
) -> Sourced<Approval> {
    match given {
        Some(approval) => approval,
        // Unconfined blocks are shown before they run.
        None if confines(sandbox) => Sourced::new(Approval::Auto, Origin::Default),
        None => Sourced::new(Approval::Ask, Origin::Default),
    }
}
