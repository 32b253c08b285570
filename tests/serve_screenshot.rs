//! `seek serve`'s `/screenshot`: after the web agent read a page with a real headless Chromium,
//! the page as the browser drew it is served as a PNG (also at AgenticSeek's
//! `/screenshots/updated_screen.png`, which its front end polls); before any page, and for any
//! other file name, it is AgenticSeek's 404. The screenshots folder goes with the server.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them).

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/procs.rs"]
mod procs;
mod support;
#[path = "support/web_site.rs"]
mod web_site;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use support::Sandbox;
use web_site::WebSite;

/// A whole response: status, headers (lower-case names), body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request on its own connection (`Connection: close`), read to its end.
fn request(port: u16, method: &str, path: &str, body: &str) -> Response {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(240)))
        .expect("timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a header end");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Response {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

/// `seek serve --no-token` on a free port; returns the child and the port from its first line.
fn serve(sb: &Sandbox, model_url: &str, tmp: &str) -> (Child, u16) {
    let mut child = sb
        .seek_at(
            model_url,
            &[
                "serve",
                "--no-token",
                "--port",
                "0",
                "--agent",
                "web",
                "--yes",
            ],
        )
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn seek serve");
    let stdout = child.stdout.take().expect("stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("the first line");
    let port = first
        .trim()
        .strip_prefix("listening on http://127.0.0.1:")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not the listening line: {first:?}"));
    (child, port)
}

fn terminate(child: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = child.wait().expect("wait");
    assert!(
        status.success(),
        "seek serve ends cleanly on SIGTERM: {status}"
    );
}

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
    let (mut child, port) = serve(&sb, &model.url(), &tmp);

    let before = request(port, "GET", "/screenshot", "");
    assert_eq!(before.status, 404);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&before.body).expect("json"),
        serde_json::json!({"error": "No screenshot available"})
    );

    let answered = request(
        port,
        "POST",
        "/query",
        &serde_json::json!({"query": format!("read {article}"), "tts_enabled": false}).to_string(),
    );
    assert_eq!(
        answered.status,
        200,
        "{}",
        String::from_utf8_lossy(&answered.body)
    );

    for path in [
        "/screenshot",
        "/screenshots/updated_screen.png?timestamp=1796170000000",
    ] {
        let shot = request(port, "GET", path, "");
        assert_eq!(shot.status, 200, "{path}");
        assert_eq!(shot.header("content-type"), Some("image/png"), "{path}");
        assert!(shot.body.starts_with(PNG_SIGNATURE), "{path}: a PNG");
        assert!(shot.body.len() > 1000, "{path}: a drawn page");
    }
    for path in [
        "/screenshots/other.png",
        "/screenshots/..%2f..%2fetc%2fpasswd",
        "/screenshots/.updated_screen.png.partial",
    ] {
        assert_eq!(request(port, "GET", path, "").status, 404, "{path}");
    }

    terminate(&mut child);
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
