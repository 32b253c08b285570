//! Confining a long-lived helper seek starts outside blocks (the web agent's browser) with the
//! kernel, as blocks are: no privileges (`no_new_privs`, every capability dropped, even as
//! root); with Landlock, writes only beneath the helper's own folders (and `/dev/null`-like
//! devices), TCP connections only to the ports it is given and no TCP listening socket (ABI 4),
//! and signals and abstract unix sockets kept inside the helper (ABI 6).
//!
//! Owns the rules (built in seek, where allocating is fine) and the child's half (raw system
//! calls after `fork`). It must not decide what a helper may write or reach (its owner passes the
//! folders and ports).

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

use super::sandbox::{drop_privileges_in_child, landlock_abi, restrict_self_in_child};

const FS_ABI: ABI = ABI::V5;
const NET_ABI: ABI = ABI::V4;
const SCOPE_ABI: ABI = ABI::V6;

/// What a helper may touch.
#[derive(Debug, Clone, Default)]
pub(crate) struct JailRules {
    /// Folders it may write beneath (created if missing).
    pub writable: Vec<PathBuf>,
    /// TCP ports it may connect to (on any address); none may be listened on.
    pub connect_ports: Vec<u16>,
}

/// A jail built in seek, applied in the helper's child before `exec`.
#[derive(Debug)]
pub(crate) struct Jail {
    ruleset: Option<OwnedFd>,
}

/// What the kernel here enforces for a helper, in words (for `seek config` and the browser's
/// start line).
pub fn describe() -> String {
    match landlock_abi() {
        0 => "no privileges; Landlock unavailable, so writes and connections are not confined"
            .to_owned(),
        abi if abi < 4 => format!(
            "no privileges; Landlock ABI {abi}: writes confined, TCP connections not (needs Linux 6.7)"
        ),
        abi if abi < 6 => format!(
            "no privileges; Landlock ABI {abi}: writes and TCP confined, signals not scoped (needs Linux 6.12)"
        ),
        abi => format!(
            "no privileges; Landlock ABI {abi}: writes, TCP connections, signals and abstract sockets confined"
        ),
    }
}

impl Jail {
    /// Builds the rules (the folders are created first: Landlock holds them open).
    pub fn new(rules: &JailRules) -> std::io::Result<Self> {
        for dir in &rules.writable {
            std::fs::create_dir_all(dir)?;
        }
        if landlock_abi() < 1 {
            return Ok(Self { ruleset: None });
        }
        let error = |e: landlock::RulesetError| std::io::Error::other(format!("the jail: {e}"));
        let devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/urandom"];
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(FS_ABI))
            .map_err(error)?;
        if landlock_abi() >= 4 {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(NET_ABI))
                .map_err(error)?;
        }
        let created = ruleset
            .scope(Scope::from_all(SCOPE_ABI))
            .and_then(|r| r.create())
            .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(FS_ABI))))
            .and_then(|r| {
                r.add_rules(path_beneath_rules(
                    &rules.writable,
                    AccessFs::from_all(FS_ABI),
                ))
            })
            .and_then(|r| r.add_rules(path_beneath_rules(devices, AccessFs::from_file(FS_ABI))))
            .map_err(error)?;
        let created = if landlock_abi() >= 4 {
            created
                .add_rules(
                    rules
                        .connect_ports
                        .iter()
                        .map(|port| Ok(NetPort::new(*port, AccessNet::ConnectTcp))),
                )
                .map_err(error)?
        } else {
            created
        };
        let fd: Option<OwnedFd> = created.into();
        Ok(Self { ruleset: fd })
    }

    /// The child's half, after `fork` and before `exec`: privileges dropped, then the Landlock
    /// domain entered. Only raw system calls.
    pub fn apply_in_child(&self) -> std::io::Result<()> {
        drop_privileges_in_child()?;
        if let Some(fd) = &self.ruleset {
            restrict_self_in_child(fd)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// Runs `script` with bash under a jail of `rules`; whether it succeeded.
    fn jailed(rules: &JailRules, script: &str) -> bool {
        let jail = Jail::new(rules).expect("the jail builds");
        let mut command = std::process::Command::new("bash");
        command.arg("-c").arg(script);
        // SAFETY: the closure only makes the raw system calls of `apply_in_child`.
        unsafe {
            command.pre_exec(move || jail.apply_in_child());
        }
        command.status().expect("bash runs").success()
    }

    #[test]
    fn a_jailed_helper_writes_only_its_folders_and_connects_only_to_its_ports() {
        if landlock_abi() < 4 {
            assert!(
                std::env::var_os("SEEK_TEST_NO_LANDLOCK").is_some(),
                "this kernel lacks Landlock ABI 4 (Linux 6.7); set SEEK_TEST_NO_LANDLOCK=1 on such a machine"
            );
            return;
        }
        let inside = tempfile::tempdir().expect("a temp dir");
        let outside = tempfile::tempdir().expect("a temp dir");
        let allowed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let other = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = |l: &std::net::TcpListener| l.local_addr().expect("addr").port();
        let rules = JailRules {
            writable: vec![inside.path().to_path_buf()],
            connect_ports: vec![port(&allowed)],
        };
        let write = |dir: &std::path::Path| format!("echo x > '{}/f'", dir.display());
        assert!(jailed(&rules, &write(inside.path())));
        assert!(!jailed(&rules, &write(outside.path())));
        assert!(!outside.path().join("f").exists());
        let connect = |p: u16| format!("exec 3<>/dev/tcp/127.0.0.1/{p}");
        assert!(jailed(&rules, &connect(port(&allowed))));
        assert!(!jailed(&rules, &connect(port(&other))));
        // No privileges either.
        assert!(jailed(
            &rules,
            "grep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status && grep -q '^CapEff:[[:space:]]*0000000000000000' /proc/self/status"
        ));
    }
}
