//! Each block in a control group of its own: every process it starts, however it forks, detaches
//! or renames itself, is in the group, and the group is killed whole when the block ends. Where
//! the kernel offers the `pids` and `memory` controllers, the group also bounds how many
//! processes and how much memory the block may use.
//!
//! Owns finding the cgroup hierarchies seek may use (v2 for membership and `cgroup.kill`; v1
//! `pids`/`memory` where those controllers are only mounted as v1), creating and removing one
//! group per block (named `seek-<instance>-<n>` so a later seek can remove what a killed one left),
//! and the child's half (joining the groups, or `setrlimit` where no controller limits it). Every
//! step is best effort: where no group can be made, the process sweep in `reaper` still works. It
//! must not decide whether a block runs.

use std::io::Write as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Resource bounds for one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// Processes and threads at once (`pids.max`; `RLIMIT_NPROC` where no controller exists,
    /// which counts all of the user's processes and does not bind root).
    pub max_processes: Option<u64>,
    /// Bytes of memory (`memory.max`; `RLIMIT_DATA`, per process, where no controller exists).
    pub max_memory: Option<u64>,
}

/// One hierarchy seek can make groups in: the folder of seek's own group there.
#[derive(Debug, Clone)]
struct Hierarchy {
    dir: PathBuf,
    v2: bool,
    pids: bool,
    memory: bool,
}

/// Where blocks' groups go, found once.
#[derive(Debug, Default)]
struct Hierarchies {
    list: Vec<Hierarchy>,
}

impl Hierarchies {
    fn v2(&self) -> Option<&Hierarchy> {
        self.list.iter().find(|h| h.v2)
    }
    fn limits_processes(&self) -> bool {
        self.list.iter().any(|h| h.pids)
    }
    fn limits_memory(&self) -> bool {
        self.list.iter().any(|h| h.memory)
    }
}

/// Set once a group could not be made or joined: later blocks do not try again.
static DISABLED: AtomicBool = AtomicBool::new(false);

fn hierarchies() -> &'static Hierarchies {
    static FOUND: OnceLock<Hierarchies> = OnceLock::new();
    FOUND.get_or_init(|| {
        let (Ok(mountinfo), Ok(membership)) = (
            std::fs::read_to_string("/proc/self/mountinfo"),
            std::fs::read_to_string("/proc/self/cgroup"),
        ) else {
            return Hierarchies::default();
        };
        discover(&mountinfo, &membership, |dir| {
            std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default()
        })
    })
}

/// Finds the hierarchies from `/proc/self/mountinfo` and `/proc/self/cgroup`; `controllers_of`
/// reads which v2 controllers a group hands to its children.
fn discover(
    mountinfo: &str,
    membership: &str,
    controllers_of: impl Fn(&Path) -> String,
) -> Hierarchies {
    let mut list = Vec::new();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (Some(root), Some(mount_point), Some(fs_type), Some(options)) =
            (left.get(3), left.get(4), right.first(), right.get(2))
        else {
            continue;
        };
        let own_path = match *fs_type {
            "cgroup2" => membership
                .lines()
                .find_map(|l| l.strip_prefix("0::"))
                .map(str::to_owned),
            "cgroup" => {
                let wanted: Vec<&str> = options
                    .split(',')
                    .filter(|o| *o == "pids" || *o == "memory")
                    .collect();
                if wanted.is_empty() {
                    continue;
                }
                membership.lines().find_map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
                    names
                        .split(',')
                        .any(|n| wanted.contains(&n))
                        .then(|| path.to_owned())
                })
            }
            _ => continue,
        };
        let Some(own_path) = own_path else { continue };
        let Ok(relative) = Path::new(&own_path).strip_prefix(root) else {
            continue;
        };
        let mut dir = PathBuf::from(unescape_mount_field(mount_point));
        if !relative.as_os_str().is_empty() {
            dir.push(relative);
        }
        let hierarchy = if *fs_type == "cgroup2" {
            let controllers = controllers_of(&dir);
            let has = |name: &str| controllers.split_whitespace().any(|c| c == name);
            Hierarchy {
                pids: has("pids"),
                memory: has("memory"),
                dir,
                v2: true,
            }
        } else {
            Hierarchy {
                pids: options.split(',').any(|o| o == "pids"),
                memory: options.split(',').any(|o| o == "memory"),
                dir,
                v2: false,
            }
        };
        if !list.iter().any(|h: &Hierarchy| h.dir == hierarchy.dir) {
            list.push(hierarchy);
        }
    }
    Hierarchies { list }
}

/// Mount points in mountinfo escape space, tab, newline and backslash as octal.
fn unescape_mount_field(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let code: String = chars.by_ref().take(3).collect();
            if let Ok(byte) = u8::from_str_radix(&code, 8) {
                out.push(char::from(byte));
                continue;
            }
            out.push('\\');
            out.push_str(&code);
        } else {
            out.push(c);
        }
    }
    out
}

/// What confines blocks' processes here, in words (for `seek config` and the docs).
pub fn describe() -> String {
    let found = hierarchies();
    if DISABLED.load(Ordering::Relaxed) || found.list.is_empty() {
        return "process sweep (no cgroup seek can use); limits: setrlimit".to_owned();
    }
    let kill = match found.v2() {
        Some(h) => format!("a cgroup per block under {} (cgroup.kill)", h.dir.display()),
        None => "a cgroup v1 group per block, swept".to_owned(),
    };
    let processes = if found.limits_processes() {
        "pids.max"
    } else {
        "RLIMIT_NPROC"
    };
    let memory = if found.limits_memory() {
        "memory limit of the group"
    } else {
        "RLIMIT_DATA"
    };
    format!("{kill}; limits: {processes}, {memory}")
}

/// This seek's instance name in group and temp-dir names (set once, before the first block).
static INSTANCE: OnceLock<String> = OnceLock::new();

/// Names this seek process; later groups are `seek-<instance>-<n>`.
pub(crate) fn set_instance(name: &str) {
    let _ = INSTANCE.set(name.to_owned());
}

fn instance() -> &'static str {
    INSTANCE.get_or_init(|| format!("p{}", std::process::id()))
}

/// One block's groups, made before it starts.
#[derive(Debug)]
pub struct BlockGroup {
    dirs: Vec<(PathBuf, bool)>,
    /// `cgroup.procs` of each group, opened for the child to write `0` (itself) into.
    joins: Vec<OwnedFd>,
    limits: Limits,
    rlimit_processes: bool,
    rlimit_memory: bool,
}

impl BlockGroup {
    /// Makes the groups for one block (none where no hierarchy is usable). Never fails: what
    /// cannot be made is left to the sweep and to `setrlimit`.
    pub fn create(limits: Limits) -> Self {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let found = hierarchies();
        let mut group = Self {
            dirs: Vec::new(),
            joins: Vec::new(),
            limits,
            rlimit_processes: true,
            rlimit_memory: true,
        };
        if DISABLED.load(Ordering::Relaxed) {
            return group;
        }
        let name = format!(
            "seek-{}-{}",
            instance(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        );
        for hierarchy in &found.list {
            let dir = hierarchy.dir.join(&name);
            if let Err(e) = std::fs::create_dir(&dir) {
                tracing::warn!("cannot make the block's cgroup {}: {e}", dir.display());
                if hierarchy.v2 {
                    DISABLED.store(true, Ordering::Relaxed);
                }
                continue;
            }
            group.dirs.push((dir.clone(), hierarchy.v2));
            if let Some(max) = limits.max_processes.filter(|_| hierarchy.pids)
                && write_file(&dir.join("pids.max"), &max.to_string()).is_ok()
            {
                group.rlimit_processes = false;
            }
            let memory_file = if hierarchy.v2 {
                "memory.max"
            } else {
                "memory.limit_in_bytes"
            };
            if let Some(max) = limits.max_memory.filter(|_| hierarchy.memory)
                && write_file(&dir.join(memory_file), &max.to_string()).is_ok()
            {
                group.rlimit_memory = false;
            }
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(dir.join("cgroup.procs"))
            {
                Ok(file) => group.joins.push(file.into()),
                Err(e) => tracing::warn!("cannot open {}/cgroup.procs: {e}", dir.display()),
            }
        }
        group
    }

    /// The child's half, after `fork` and before `exec`: joins the groups and sets the rlimits
    /// no controller enforces. Only raw system calls (no allocation in a forked child).
    pub fn apply_in_child(&self) {
        for fd in &self.joins {
            // SAFETY: write(2) of a two-byte static buffer to a descriptor this process owns.
            // Failure leaves the block to the sweep, which still finds it.
            unsafe {
                libc::write(fd.as_raw_fd(), b"0\n".as_ptr().cast(), 2);
            }
        }
        let set = |resource, value: u64| {
            let limit = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            // SAFETY: setrlimit(2) with a pointer to a live stack value.
            unsafe {
                libc::setrlimit(resource, &limit);
            }
        };
        if self.rlimit_processes
            && let Some(max) = self.limits.max_processes
        {
            set(libc::RLIMIT_NPROC, max.saturating_add(user_processes()));
        }
        if self.rlimit_memory
            && let Some(max) = self.limits.max_memory
        {
            set(libc::RLIMIT_DATA, max);
        }
    }

    /// Checks, after the spawn, that the block's main process is in its v2 group; where it is
    /// not, groups are turned off for later blocks (the sweep still works).
    pub fn confirm(&self, leader: i32) -> bool {
        let Some((dir, _)) = self.dirs.iter().find(|(_, v2)| *v2) else {
            return false;
        };
        let joined = std::fs::read_to_string(dir.join("cgroup.procs"))
            .is_ok_and(|procs| procs.lines().any(|l| l.trim() == leader.to_string()));
        if !joined {
            tracing::warn!(
                "a block could not join its cgroup {}: falling back to the process sweep",
                dir.display()
            );
            DISABLED.store(true, Ordering::Relaxed);
        }
        joined
    }

    /// Processes in the block's groups.
    pub fn members(&self) -> Vec<i32> {
        let mut pids = Vec::new();
        for (dir, _) in &self.dirs {
            pids.extend(read_pids(dir));
        }
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Kills every process of the group at once (v2 `cgroup.kill`; the kernel also kills what
    /// forks meanwhile). v1 groups are swept by the caller through `members`.
    pub fn kill(&self) {
        for (dir, v2) in &self.dirs {
            if *v2 {
                let _ = write_file(&dir.join("cgroup.kill"), "1");
            }
        }
    }

    /// The block's v2 group folder, where its `cpu.stat` is.
    pub(crate) fn v2_dir(&self) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|(_, v2)| *v2)
            .map(|(dir, _)| dir.as_path())
    }

    /// Whether the v2 group can kill (so no sweep round is needed for what is inside).
    pub fn kills(&self) -> bool {
        self.dirs.iter().any(|(_, v2)| *v2)
    }
}

impl Drop for BlockGroup {
    fn drop(&mut self) {
        self.joins.clear();
        for (dir, _) in &self.dirs {
            remove_group(dir);
        }
    }
}

/// Kills what is left in a group and removes it (waits at most a second for the processes).
fn remove_group(dir: &Path) {
    if std::fs::remove_dir(dir).is_ok() {
        return;
    }
    let _ = write_file(&dir.join("cgroup.kill"), "1");
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        for pid in read_pids(dir) {
            // SAFETY: kill(2) with plain integers.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        if std::fs::remove_dir(dir).is_ok() || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn read_pids(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn write_file(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// Removes the groups a seek instance left behind (it was killed before it could).
pub(crate) fn remove_stale(instance: &str) {
    let prefix = format!("seek-{instance}-");
    for hierarchy in &hierarchies().list {
        let Ok(entries) = std::fs::read_dir(&hierarchy.dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                remove_group(&entry.path());
            }
        }
    }
}

/// Processes and threads of this user when `prepare` counted them: `RLIMIT_NPROC` counts them
/// all, so the fallback limit is that many plus the block's allowance.
fn user_processes() -> u64 {
    USER_THREADS.load(Ordering::Relaxed)
}

/// Counts this user's threads (in seek, before the first block that needs it).
pub fn prepare(limits: &Limits) {
    static COUNTED: OnceLock<()> = OnceLock::new();
    if limits.max_processes.is_none() || hierarchies().limits_processes() {
        return;
    }
    COUNTED.get_or_init(|| {
        // SAFETY: getuid(2) cannot fail.
        let uid = unsafe { libc::getuid() }.to_string();
        let mut threads = 0u64;
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
                    continue;
                };
                let mine = status
                    .lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|l| l.split_whitespace().next())
                    == Some(uid.as_str());
                if mine {
                    threads += status
                        .lines()
                        .find_map(|l| l.strip_prefix("Threads:"))
                        .and_then(|n| n.trim().parse::<u64>().ok())
                        .unwrap_or(1);
                }
            }
        }
        USER_THREADS.store(threads, Ordering::Relaxed);
    });
}

static USER_THREADS: AtomicU64 = AtomicU64::new(0);

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
25 1 0:23 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
30 25 0:28 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
31 25 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
32 25 0:30 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 25 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const MEMBERSHIP: &str = "\
8:pids:/
4:memory:/box/42
1:cpu:/
0::/user.slice/u.scope
";

    #[test]
    fn finds_v2_and_the_v1_controllers_it_lacks() {
        let found = discover(MOUNTINFO, MEMBERSHIP, |_| "hugetlb".to_owned());
        let dirs: Vec<(String, bool, bool, bool)> = found
            .list
            .iter()
            .map(|h| (h.dir.display().to_string(), h.v2, h.pids, h.memory))
            .collect();
        assert_eq!(
            dirs,
            vec![
                ("/sys/fs/cgroup/pids".into(), false, true, false),
                ("/sys/fs/cgroup/memory/box/42".into(), false, false, true),
                (
                    "/sys/fs/cgroup/unified/user.slice/u.scope".into(),
                    true,
                    false,
                    false
                ),
            ]
        );
    }

    #[test]
    fn v2_controllers_come_from_subtree_control() {
        let found = discover(
            "33 25 0:31 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            "0::/a\n",
            |dir| {
                assert_eq!(dir, Path::new("/sys/fs/cgroup/a"));
                "cpu memory pids".to_owned()
            },
        );
        assert!(found.limits_processes() && found.limits_memory());
    }

    #[test]
    fn a_group_outside_the_mounted_root_is_skipped() {
        let found = discover(
            "33 25 0:31 /inner /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            "0::/other\n",
            |_| String::new(),
        );
        assert!(found.list.is_empty());
    }

    #[test]
    fn mount_points_are_unescaped() {
        assert_eq!(unescape_mount_field(r"/a\040b"), "/a b");
    }
}
