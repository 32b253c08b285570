//! `seek serve`'s `/screenshot`: after the web agent read a page with a real headless Chromium,
//! the page as the browser drew it is served as a PNG (also at AgenticSeek's
//! `/screenshots/updated_screen.png`, which its front end polls); before any page, and for any
//! other file name, it is AgenticSeek's 404. The screenshots folder goes with the server.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them).

use crate::fake_model;
use crate::procs;
use crate::serve;
use crate::support;
use crate::web_site;

use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use serve::ServeProcess;
use support::Sandbox;
use web_site::WebSite;

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

#[test]
fn the_latest_page_the_browser_read_is_served_as_a_png() {
    let site = WebSite::start();
    let article = site.url("/article.html");
    let model = FakeModel::start(vec![
        Reply::text("Note: the article was read.\nREQUEST_EXIT"),
        Reply::text("The article was read."),
    ]);
    let sb = Sandbox::new();
    let tmp = sb.path("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let tmp = tmp.to_string_lossy().into_owned();
    sb.write_config(&format!(
        "[web]\nsearxng_url = \"{}\"\nbrowser = \"chromium\"\nallow_private = true\ntimeout_secs = 60\n",
        site.base()
    ));
    let served = ServeProcess::start(
        &sb,
        &model.url(),
        &["--no-token", "--agent", "web"],
        &[("TMPDIR", tmp.as_str())],
    );

    let before = served.get("/screenshot");
    assert_eq!(before.status, 404);
    assert_eq!(
        before.json(),
        serde_json::json!({"error": "No screenshot available"})
    );

    let answered = served.post_json(
        "/query",
        &serde_json::json!({"query": format!("read {article}"), "tts_enabled": false}).to_string(),
    );
    assert_eq!(answered.status, 200, "{}", answered.body);

    for path in [
        "/screenshot",
        "/screenshots/updated_screen.png?timestamp=1796170000000",
    ] {
        let shot = served.get(path);
        assert_eq!(shot.status, 200, "{path}");
        assert_eq!(shot.header("content-type"), Some("image/png"), "{path}");
        assert!(shot.bytes.starts_with(PNG_SIGNATURE), "{path}: a PNG");
        assert!(shot.bytes.len() > 1000, "{path}: a drawn page");
    }
    for path in [
        "/screenshots/other.png",
        "/screenshots/..%2f..%2fetc%2fpasswd",
        "/screenshots/.updated_screen.png.partial",
    ] {
        assert_eq!(served.get(path).status, 404, "{path}");
    }

    let ended = served.sigterm_and_wait();
    assert!(
        ended.status.success(),
        "seek serve ends cleanly on SIGTERM: {ended:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<_> = std::fs::read_dir(&tmp)
            .expect("tmp")
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("seek-screenshots-")
            })
            .collect();
        if left.is_empty() && procs::processes_with(&tmp, false).is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the screenshots folder and the browser go with the server: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
