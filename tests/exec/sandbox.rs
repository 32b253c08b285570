//! The sandbox with the real kernel: Landlock confines writes, privileges are dropped even as
//! root. (Credentials kept from children are tested through the binary in `safety.rs`, which
//! sets them on the child rather than in this multi-threaded test process.)
//!
//! These tests need Landlock. Where the kernel lacks it they fail, saying so, unless
//! `SEEK_TEST_NO_LANDLOCK=1` says the machine is known not to have it.

use std::path::Path;
use std::sync::Arc;

use seek::exec::sandbox::{Sandbox, SandboxMode, supported};
use seek::exec::{self, RunRequest};
use tokio_util::sync::CancellationToken;

fn landlock_required() -> bool {
    if supported() {
        return true;
    }
    assert!(
        std::env::var("SEEK_TEST_NO_LANDLOCK").is_ok_and(|v| v == "1"),
        "this kernel has no Landlock (needs Linux 5.13+ with landlock in the LSM list); set SEEK_TEST_NO_LANDLOCK=1 only on a machine known to lack it"
    );
    false
}

struct Place {
    _root: tempfile::TempDir,
    work: std::path::PathBuf,
    outside: std::path::PathBuf,
    sandbox: Sandbox,
}

fn place(mode: SandboxMode) -> Place {
    let root = tempfile::tempdir().expect("temp dir");
    let work = root.path().join("work");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&work).expect("work");
    std::fs::create_dir_all(&outside).expect("outside");
    let sandbox = Sandbox::new(
        mode,
        work.clone(),
        root.path().join("tmp"),
        root.path().join("cache"),
    );
    Place {
        _root: root,
        work,
        outside,
        sandbox,
    }
}

async fn bash(place: &Place, script: &str) -> (bool, String) {
    let mut request = RunRequest::new("bash", &place.work).args(["-c", script]);
    request.sandbox = Some(Arc::new(place.sandbox.clone()));
    let result = exec::run(&request, &CancellationToken::new(), |_| {})
        .await
        .expect("bash runs");
    (result.success(), result.output)
}

fn exists(path: &Path) -> bool {
    path.exists()
}

#[tokio::test]
async fn workspace_write_allows_the_work_dir_and_nothing_else() {
    if !landlock_required() {
        return;
    }
    let p = place(SandboxMode::WorkspaceWrite);
    let (ok, out) = bash(
        &p,
        "echo hi > inside.txt && mkdir d && mv inside.txt d/ && cat d/inside.txt",
    )
    .await;
    assert!(ok, "{out}");
    let target = p.outside.join("escaped.txt");
    let (ok, out) = bash(&p, &format!("echo x > {}", target.display())).await;
    assert!(!ok && out.contains("Permission denied"), "{out}");
    assert!(!exists(&target));
    // A grandchild through another shell is confined too.
    let (ok, _) = bash(
        &p,
        &format!(
            "sh -c 'python3 -c \"open(\\\"{}\\\", \\\"w\\\")\"'",
            target.display()
        ),
    )
    .await;
    assert!(!ok && !exists(&target));
    // /tmp outside the private temp dir, the home dir and /etc.
    for path in [
        "/tmp/seek-sandbox-escape",
        "/root/seek-sandbox-escape",
        "/etc/seek-sandbox-escape",
    ] {
        let (ok, _) = bash(&p, &format!("touch {path}")).await;
        assert!(!ok && !exists(Path::new(path)), "{path} was writable");
    }
    // The private temp dir and the devices programs need work.
    let (ok, out) = bash(
        &p,
        "t=$(mktemp) && echo y > \"$t\" && cat \"$t\" > /dev/null && echo ok > /dev/stdout",
    )
    .await;
    assert!(ok && out.contains("ok"), "{out}");
    // Reading the system still works.
    let (ok, out) = bash(&p, "head -1 /etc/passwd").await;
    assert!(ok && out.contains("root"), "{out}");
}

#[tokio::test]
async fn read_only_allows_only_the_temp_dir() {
    if !landlock_required() {
        return;
    }
    let p = place(SandboxMode::ReadOnly);
    let (ok, _) = bash(&p, "touch inside.txt").await;
    assert!(!ok && !exists(&p.work.join("inside.txt")));
    let (ok, out) = bash(&p, "echo y > \"$TMPDIR/x\" && cat \"$TMPDIR/x\"").await;
    assert!(ok && out.contains('y'), "{out}");
}

#[tokio::test]
async fn off_allows_writes_anywhere_seek_can() {
    let p = place(SandboxMode::Off);
    let target = p.outside.join("allowed.txt");
    let (ok, out) = bash(&p, &format!("echo x > {}", target.display())).await;
    assert!(ok, "{out}");
    assert!(exists(&target));
}

#[tokio::test]
async fn no_privileges_even_as_root() {
    let p = place(SandboxMode::WorkspaceWrite);
    let (_, out) = bash(
        &p,
        "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status",
    )
    .await;
    assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
    // Only root can (and needs to) empty the bounding set; others gain nothing under
    // no_new_privs anyway.
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        assert!(out.contains("CapBnd:\t0000000000000000"), "{out}");
    }
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    let (wall_before, steady_before) = (std::time::SystemTime::now(), std::time::Instant::now());
    let (ok, out) = bash(&p, "date -s '2023-01-01 00:00:00'").await;
    assert!(!ok, "setting the clock must fail: {out}");
    assert!(
        out.contains("Operation not permitted") || out.contains("cannot set date"),
        "{out}"
    );
    let (ok, out) = bash(&p, "mkdir -p m && mount -t tmpfs none m").await;
    assert!(!ok, "mounting must fail: {out}");
    // The clock is untouched: the wall clock moved on as much as the monotonic one did (give or
    // take what time synchronisation slews), whatever the date is.
    let wall = std::time::SystemTime::now()
        .duration_since(wall_before)
        .expect("the wall clock went back: it was changed");
    let steady = steady_before.elapsed();
    assert!(
        wall.abs_diff(steady) < std::time::Duration::from_secs(60),
        "the wall clock moved {wall:?} while {steady:?} passed: it was changed"
    );
}
