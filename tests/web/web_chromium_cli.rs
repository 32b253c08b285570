//! The web agent with a real headless Chromium, through the binary: a page whose text JavaScript
//! writes is read (the `http` engine cannot see it), and no browser or driver process is left
//! after the task — neither when it ends nor when seek is stopped during a page load.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them). Each run gets its
//! own TMPDIR, so the browser's temporary profile path marks its processes in `/proc`.

use crate::fake_model;
use crate::procs;
use crate::support;
use crate::web_site;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use support::{Sandbox, run_within, stderr, stdout};
use web_site::WebSite;

const BOUND: Duration = Duration::from_secs(180);

/// One browser at a time: two Chromiums starting together on 2 cores make both slow.
static ONE_BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn setup(site: &WebSite) -> (Sandbox, String) {
    let sb = Sandbox::new();
    let tmp = sb.path("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    sb.write_config(&format!(
        "[web]\nsearxng_url = \"{}\"\nbrowser = \"chromium\"\nallow_private = true\ntimeout_secs = 60\n",
        site.base()
    ));
    let marker = tmp.to_string_lossy().into_owned();
    (sb, marker)
}

/// Polls `check` until it holds or `bound` passes (the condition is outside this process: a
/// process leaving `/proc`).
fn wait_until(bound: Duration, what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + bound;
    while !check() {
        assert!(Instant::now() < deadline, "waited {bound:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn chromium_reads_text_written_by_javascript_and_leaves_no_process() {
    let _one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let site = WebSite::start();
    let js = site.url("/js.html");
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Note: the secret number is {}.\nREQUEST_EXIT",
            web_site::JS_TEXT
        )),
        Reply::text(format!("The number is {}.", web_site::JS_TEXT)),
    ]);
    let (sb, marker) = setup(&site);
    let out = run_within(
        sb.seek_at(
            &server.url(),
            &["--agent", "web", "--json", "-p", &format!("read {js}")],
        )
        .env("TMPDIR", &marker),
        BOUND,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let started = lines
        .iter()
        .find(|l| l["type"] == "browser_started")
        .expect("the browser started");
    assert_eq!(started["engine"], "chromium", "{started}");
    let page = lines
        .iter()
        .find(|l| l["type"] == "page_read")
        .expect("the page was read");
    assert!(
        page["text"]
            .as_str()
            .is_some_and(|t| t.contains(web_site::JS_TEXT)),
        "{page}"
    );
    let asked = server.chat_requests()[0].last_user_message();
    assert!(asked.contains(web_site::JS_TEXT), "{asked}");
    wait_until(Duration::from_secs(10), "no browser process left", || {
        procs::processes_with(&marker, false).is_empty()
    });
}

#[test]
fn stopping_seek_during_a_page_load_kills_the_browser() {
    let _one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let site = Arc::new(WebSite::start());
    let slow = site.url("/slow.html");
    let server = FakeModel::start(vec![]);
    let (sb, marker) = setup(&site);
    let child = sb
        .seek_at(
            &server.url(),
            &["--agent", "web", "--json", "-p", &format!("read {slow}")],
        )
        .env("TMPDIR", &marker)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn seek");
    site.wait_for("/slow.html");
    assert!(
        !procs::processes_with(&marker, false).is_empty(),
        "the browser runs while the page loads"
    );
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let out = ended
        .recv_timeout(BOUND)
        .expect("seek ends on SIGTERM")
        .expect("its output");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    wait_until(Duration::from_secs(10), "no browser process left", || {
        procs::processes_with(&marker, false).is_empty()
    });
    // Nothing of the browser is left on disk: its profile, and the temp dirs Chromium makes
    // (pointed inside the profile), are gone once seek has ended.
    let left: Vec<String> = std::fs::read_dir(&marker)
        .expect("the temp dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("seek-chromium-") || name.starts_with("org.chromium."))
        .collect();
    assert_eq!(left, Vec::<String>::new());
    site.open_slow_page();
}

/// The browser's processes' environment (each `NAME=value`), from `/proc`.
fn environ_of(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

#[test]
fn killing_seek_mid_page_leaves_no_browser_and_the_next_start_removes_its_profile() {
    let _one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let site = Arc::new(WebSite::start());
    let slow = site.url("/slow.html");
    let server = FakeModel::start(vec![]);
    let (sb, marker) = setup(&site);
    let canary = "sk-canary-7f3a9c2e11d04b5b";
    let mut child = sb
        .seek_at(
            &server.url(),
            &["--agent", "web", "--json", "-p", &format!("read {slow}")],
        )
        .env("TMPDIR", &marker)
        .env("OPENAI_API_KEY", canary)
        .env("SEEK_TEST_CANARY_TOKEN", canary)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn seek");
    site.wait_for("/slow.html");
    let browser = procs::processes_with(&marker, false);
    assert!(!browser.is_empty(), "the browser runs while the page loads");
    // The browser inherits none of seek's credentials.
    for (pid, _) in &browser {
        let environ = environ_of(*pid);
        assert!(
            !environ.iter().any(|v| v.contains(canary)),
            "pid {pid} has a credential in its environment"
        );
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    // The parent-death signal takes the browser down with seek.
    wait_until(Duration::from_secs(5), "no browser process left", || {
        procs::processes_with(&marker, false).is_empty()
    });
    let left: Vec<_> = std::fs::read_dir(&marker)
        .expect("the temp dir")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("seek-chromium-")
        })
        .map(|e| e.path())
        .collect();
    assert_eq!(
        left.len(),
        1,
        "the killed seek could not remove its profile: {left:?}"
    );
    site.open_slow_page();

    // The next seek that starts a browser removes what the killed one left.
    let article = site.url("/article.html");
    let server = FakeModel::start(vec![
        Reply::text("Note: quokkas.\nREQUEST_EXIT"),
        Reply::text("Quokkas."),
    ]);
    let out = run_within(
        sb.seek_at(
            &server.url(),
            &["--agent", "web", "--json", "-p", &format!("read {article}")],
        )
        .env("TMPDIR", &marker),
        BOUND,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!left[0].exists(), "the stale profile was removed");
}
