//! Confining a block's processes with the kernel: Landlock (writes only in the work dir, a
//! private temp dir and seek's cache dir; or only the temp dir in `read-only`; never seek's own
//! files, even inside the work dir; no signals to, and no abstract-socket connections with,
//! processes outside the block where the kernel has Landlock ABI 6), no privileges
//! (`no_new_privs`, every capability dropped, so even as root a block cannot set the clock, mount,
//! load modules or touch other users' files), and the socket guard (unix sockets only in those
//! folders or in `[exec] allow_sockets`; see `socket_guard`).
//!
//! Owns the policy and its two halves: what is built in seek (which may allocate) and the few
//! raw system calls made in the forked child before `exec` (which must not). Applied to the
//! child only, inherited by everything it starts. It must not decide whether a block runs.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::OnceLock;

use super::socket_guard::{self, AllowedSocket, SocketPolicy};
use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

/// The file access rights seek handles (ABI 5: files, directories, links, truncation and device
/// ioctls), degraded by the kernel's ABI.
const FS_ABI: ABI = ABI::V5;
/// The scopes seek requests (ABI 6: signals and abstract unix sockets stay inside the block).
const SCOPE_ABI: ABI = ABI::V6;

/// What blocks may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read everything, write the work dir, the private temp dir and seek's cache dir.
    WorkspaceWrite,
    /// Read everything, write only the private temp dir.
    ReadOnly,
    /// No confinement and no privilege dropping.
    Off,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WorkspaceWrite => "workspace-write",
            Self::ReadOnly => "read-only",
            Self::Off => "off",
        }
    }
}

/// The Landlock ABI the kernel offers (0: none), asked once.
pub(crate) fn landlock_abi() -> i32 {
    static ABI_SEEN: OnceLock<i32> = OnceLock::new();
    *ABI_SEEN.get_or_init(|| {
        // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the VERSION flag
        // only returns the ABI version (or -1); it reads no memory.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                1u32,
            )
        };
        i32::try_from(version).unwrap_or(0).max(0)
    })
}

/// Whether file confinement is available here.
pub fn supported() -> bool {
    landlock_abi() >= 1
}

/// Whether the kernel keeps a block's signals and abstract-socket connections inside it.
pub fn scoped() -> bool {
    landlock_abi() >= 6
}

/// What the kernel enforces here, in words (for `seek config` and the docs).
pub(crate) fn describe_enforcement() -> String {
    match landlock_abi() {
        0 => "Landlock unavailable: blocks run without privileges but unconfined".to_owned(),
        abi if abi < 6 => format!(
            "Landlock ABI {abi}: files confined; signals and abstract sockets not scoped (needs Linux 6.12)"
        ),
        abi => format!("Landlock ABI {abi}: files confined; signals and abstract sockets scoped"),
    }
}

/// A block's confinement.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub mode: SandboxMode,
    pub work_dir: PathBuf,
    /// Private to this seek process; blocks get it as `TMPDIR`.
    pub temp_dir: PathBuf,
    /// Where compilers and package managers keep caches (`GOCACHE`, pip's, `XDG_CACHE_HOME`).
    pub cache_dir: PathBuf,
    /// seek's own files and folders (config, data dir): never writable by blocks, even where they
    /// lie inside the work dir.
    pub protected: Vec<PathBuf>,
    /// Unix sockets outside those folders that blocks may connect to (`[exec] allow_sockets`).
    pub allow_sockets: Vec<AllowedSocket>,
}

impl Sandbox {
    /// A sandbox with nothing protected beyond the defaults.
    pub fn new(
        mode: SandboxMode,
        work_dir: impl Into<PathBuf>,
        temp_dir: impl Into<PathBuf>,
        cache_dir: impl Into<PathBuf>,
    ) -> Self {
        Self {
            mode,
            work_dir: work_dir.into(),
            temp_dir: temp_dir.into(),
            cache_dir: cache_dir.into(),
            protected: Vec::new(),
            allow_sockets: Vec::new(),
        }
    }

    /// Variables that point blocks' temp files and toolchain caches at writable places.
    pub(crate) fn child_env(&self) -> Vec<(OsString, OsString)> {
        let cache = |sub: &str| self.cache_dir.join(sub).into_os_string();
        vec![
            ("TMPDIR".into(), self.temp_dir.clone().into_os_string()),
            (
                "XDG_CACHE_HOME".into(),
                self.cache_dir.clone().into_os_string(),
            ),
            ("GOCACHE".into(), cache("go-build")),
            ("GOPATH".into(), cache("go")),
            ("GOMODCACHE".into(), cache("go/pkg/mod")),
            ("PIP_CACHE_DIR".into(), cache("pip")),
            ("npm_config_cache".into(), cache("npm")),
        ]
    }

    /// Folders blocks may write, created if missing.
    fn writable(&self) -> Vec<PathBuf> {
        match self.mode {
            SandboxMode::WorkspaceWrite => vec![
                self.work_dir.clone(),
                self.temp_dir.clone(),
                self.cache_dir.clone(),
            ],
            SandboxMode::ReadOnly => vec![self.temp_dir.clone()],
            SandboxMode::Off => Vec::new(),
        }
    }

    /// Builds what the child applies (in seek, before forking). Done for every block, not once:
    /// Landlock rules hold the folders' inodes, so a work dir removed and made again between
    /// blocks must be opened again (the whole step costs about 0.2 ms).
    pub(crate) fn prepare(&self) -> std::io::Result<Prepared> {
        if self.mode == SandboxMode::Off {
            return Ok(Prepared {
                confine: false,
                ruleset: None,
                sockets: None,
                supervisor: None,
            });
        }
        for dir in self.writable() {
            std::fs::create_dir_all(&dir)?;
        }
        let ruleset = if supported() {
            Some(self.ruleset()?)
        } else {
            None
        };
        let (sockets, supervisor) = socket_guard::prepare(self.socket_policy())?;
        Ok(Prepared {
            confine: true,
            ruleset,
            sockets,
            supervisor,
        })
    }

    /// Blocks may reach sockets in the folders they may write (where they could have made them
    /// anyway) and in the work dir, plus the allow list.
    fn socket_policy(&self) -> SocketPolicy {
        let mut roots = self.writable();
        if !roots.contains(&self.work_dir) {
            roots.push(self.work_dir.clone());
        }
        SocketPolicy::new(roots, &self.allow_sockets)
    }

    fn ruleset(&self) -> std::io::Result<OwnedFd> {
        let devices = ["/dev/null", "/dev/zero", "/dev/full"];
        let sandbox_error =
            |e: landlock::RulesetError| std::io::Error::other(format!("the sandbox: {e}"));
        let grants = super::carve::writable_beneath(&self.writable(), &self.protected)?;
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(FS_ABI))
            .and_then(|r| r.scope(Scope::from_all(SCOPE_ABI)))
            .and_then(|r| r.create())
            .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(FS_ABI))))
            .and_then(|r| {
                r.add_rules(grants.into_iter().map(|grant| {
                    let access = if grant.is_dir {
                        AccessFs::from_all(FS_ABI)
                    } else {
                        AccessFs::from_file(FS_ABI)
                    };
                    Ok::<_, landlock::RulesetError>(PathBeneath::new(grant.handle, access))
                }))
            })
            .map_err(sandbox_error)?
            .add_rules(path_beneath_rules(devices, AccessFs::from_file(FS_ABI)))
            .map_err(sandbox_error)?;
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or_else(|| std::io::Error::other("the sandbox: Landlock is not available"))
    }
}

/// The child's half: applied after `fork`, before `exec`.
pub(crate) struct Prepared {
    confine: bool,
    ruleset: Option<OwnedFd>,
    sockets: Option<socket_guard::ChildHalf>,
    /// Taken by the runner before the spawn and started after it.
    supervisor: Option<socket_guard::ParentHalf>,
}

/// `_LINUX_CAPABILITY_VERSION_3`.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

impl Prepared {
    /// The seek side of the socket guard, to start once the child runs (`None`: nothing to
    /// supervise).
    pub(crate) fn take_socket_supervisor(&mut self) -> Option<socket_guard::ParentHalf> {
        self.supervisor.take()
    }

    /// Drops every privilege, enters the Landlock domain, then installs the socket filter. Only
    /// raw system calls: this runs in the forked child of a multi-threaded process, where
    /// allocating could deadlock.
    pub(crate) fn apply_in_child(&self) -> std::io::Result<()> {
        if !self.confine {
            return Ok(());
        }
        drop_privileges_in_child()?;
        if let Some(fd) = &self.ruleset {
            restrict_self_in_child(fd)?;
        }
        // Last, so that the only calls made under the filter before `exec` are the listener's
        // hand-over, and the listener lives in the child as briefly as possible. (Needs
        // `no_new_privs`, set above.)
        if let Some(sockets) = &self.sockets {
            sockets.apply_in_child()?;
        }
        Ok(())
    }
}

fn check_call(result: libc::c_long) -> std::io::Result<()> {
    if result < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The child's half of dropping privileges, after `fork` and before `exec`: `no_new_privs`, the
/// capability bounding set emptied, ambient and effective/permitted/inheritable capabilities
/// cleared (even as root). Only raw system calls: no allocation in a forked child.
pub(crate) fn drop_privileges_in_child() -> std::io::Result<()> {
    // SAFETY: prctl and capset with plain integer arguments and pointers to live stack values.
    unsafe {
        check_call(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).into())?;
        // Without CAP_SETPCAP (not root) there is nothing to drop: errors are expected.
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let mut header = CapHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        check_call(libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        ))
    }
}

/// Enters the Landlock domain of `ruleset` (in the child; `no_new_privs` must be set first).
pub(crate) fn restrict_self_in_child(ruleset: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: landlock_restrict_self with a ruleset fd this process owns and no flags.
    check_call(unsafe {
        libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32)
    })
}
