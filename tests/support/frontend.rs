//! The machinery of `tests/serve/serve_frontend.rs`: the real `seek serve` binary (`SeekServe`), a
//! static server for AgenticSeek's front-end build that rewrites its placeholder backend URL to
//! seek's (`StaticServer`), and chromedriver with headless Chromium in a process group of its own
//! (`Driver`). Each is ended when dropped. Nothing here knows what a test checks on the page.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

// Declared beside `mod support;` in a test binary's root (its main.rs):
// `#[path = "../support/frontend.rs"] mod frontend;`.
use crate::support::Sandbox;

/// The backend URL the build was made with (`REACT_APP_BACKEND_URL`).
pub const PLACEHOLDER: &str = "http://localhost:59999";

/// The port AgenticSeek's front end runs on, and the origin seek allows by default.
pub const FRONTEND_PORT: u16 = 3000;

/// How long seek serve, chromedriver and Chromium may take to start before the test fails.
pub const START_BOUND: Duration = Duration::from_secs(60);

/// Whether a `static/js/main.*.js` of `build` contains the placeholder backend URL.
pub fn main_js_has_placeholder(build: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(build.join("static/js")) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        name.starts_with("main.")
            && name.ends_with(".js")
            && std::fs::read_to_string(e.path()).is_ok_and(|s| s.contains(PLACEHOLDER))
    })
}

/// 127.0.0.1:3000 if free, else any free port.
pub fn bind_frontend_port() -> (TcpListener, u16) {
    let listener = TcpListener::bind(("127.0.0.1", FRONTEND_PORT))
        .or_else(|_| TcpListener::bind(("127.0.0.1", 0)))
        .expect("a loopback port for the page");
    let port = listener.local_addr().expect("its address").port();
    (listener, port)
}

/// The real `seek serve` binary, killed when dropped.
pub struct SeekServe {
    child: Child,
    pub url: String,
    stderr: Arc<Mutex<String>>,
}

impl SeekServe {
    /// Starts `seek serve` on a free loopback port, with `--no-token` when `no_token`.
    pub fn start(sb: &Sandbox, model_url: &str, no_token: bool) -> Self {
        let mut cmd = sb.seek();
        cmd.args(["serve", "--host", "127.0.0.1", "--port", "0"])
            .args(no_token.then_some("--no-token"))
            .args(sb.model_args(model_url))
            .arg("--yes")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn seek serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let err_pipe = child.stderr.take().expect("stderr pipe");
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(err_pipe).lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap_or_else(|e| e.into_inner());
                text.push_str(&line);
                text.push('\n');
            }
        });
        let out_pipe = child.stdout.take().expect("stdout pipe");
        let (first, first_line) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(out_pipe).lines();
            let _ = first.send(lines.next());
            // The rest is drained so that seek never blocks on a full pipe.
            for line in lines.map_while(Result::ok) {
                eprintln!("seek serve stdout: {line}");
            }
        });
        let mut serve = Self {
            child,
            url: String::new(),
            stderr,
        };
        let line = match first_line.recv_timeout(START_BOUND) {
            Ok(Some(Ok(line))) => line,
            other => {
                let status = serve.child.try_wait();
                let err = serve.stop();
                panic!(
                    "seek serve printed no first line within {START_BOUND:?} ({other:?}, exit \
                     {status:?}); stderr:\n{err}"
                );
            }
        };
        let Some(url) = line.strip_prefix("listening on ") else {
            let err = serve.stop();
            panic!("seek serve's first line is {line:?}, not `listening on URL`; stderr:\n{err}");
        };
        serve.url = url.trim().to_owned();
        assert!(
            serve.url.starts_with("http://127.0.0.1:"),
            "seek serve listens on {}",
            serve.url
        );
        serve
    }

    /// Ends seek (SIGTERM, then SIGKILL if it lingers) and returns its stderr so far.
    pub fn stop(&mut self) -> String {
        if matches!(self.child.try_wait(), Ok(None)) {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid"));
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let signalled = Instant::now();
            let deadline = signalled + Duration::from_secs(10);
            // The poll's pace, not a synchronisation: the exit decides.
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            eprintln!("seek serve ended {:?} after SIGTERM", signalled.elapsed());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for SeekServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Serves the build dir: `/` is index.html; JavaScript has the placeholder backend URL
/// replaced by seek's. It lives as long as the test process (its threads are detached).
pub struct StaticServer {
    requests: Arc<Mutex<(usize, usize)>>,
}

impl StaticServer {
    pub fn start(listener: TcpListener, root: PathBuf, backend: String) -> Self {
        let requests = Arc::new(Mutex::new((0, 0)));
        let counts = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let root = root.clone();
                let backend = backend.clone();
                let counts = Arc::clone(&counts);
                std::thread::spawn(move || serve_one(stream, &root, &backend, &counts));
            }
        });
        Self { requests }
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    pub fn rewritten(&self) -> usize {
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).1
    }
}

fn serve_one(stream: TcpStream, root: &Path, backend: &str, counts: &Mutex<(usize, usize)>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    // The headers are read and ignored; requests for files have no body.
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => break,
            Ok(_) if header.trim().is_empty() => break,
            Ok(_) => {}
        }
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("/");
    let path = target.split(['?', '#']).next().unwrap_or("/");
    let rel = if path == "/" {
        "index.html"
    } else {
        path.trim_start_matches('/')
    };
    let file = (!rel.split('/').any(|c| c == ".." || c.is_empty()))
        .then(|| root.join(rel))
        .filter(|f| f.is_file());
    let mut stream = &stream;
    let (status, kind, mut body) = match (method, file) {
        ("GET" | "HEAD", Some(file)) => {
            let mut body = Vec::new();
            let _ = std::fs::File::open(&file).and_then(|mut f| f.read_to_end(&mut body));
            ("200 OK", content_type(&file), body)
        }
        _ => ("404 Not Found", "text/plain", b"not found\n".to_vec()),
    };
    let mut rewritten = false;
    if kind.starts_with("application/javascript")
        && let Ok(text) = std::str::from_utf8(&body)
        && text.contains(PLACEHOLDER)
    {
        body = text.replace(PLACEHOLDER, backend).into_bytes();
        rewritten = true;
    }
    {
        let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
        c.0 += 1;
        c.1 += usize::from(rewritten);
    }
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: \
         no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    if method != "HEAD" {
        let _ = stream.write_all(&body);
    }
    let _ = stream.flush();
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" => "application/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "svg" => "image/svg+xml",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// chromedriver in a process group of its own (Chromium and its helpers join it), the whole
/// group killed when dropped.
pub struct Driver {
    child: Child,
    pub port: u16,
    profile: tempfile::TempDir,
}

impl Driver {
    pub fn start() -> Self {
        use std::os::unix::process::CommandExt;
        let profile = tempfile::Builder::new()
            .prefix("seek-fe-chromium-")
            .tempdir()
            .expect("a profile dir");
        let mut child = Command::new("chromedriver")
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("chromedriver starts (apt install chromium chromium-driver)");
        // A group of its own: no sweep of a block run in this process may take it.
        crate::support::hold_apart(child.id());
        let out = child.stdout.take().expect("stdout pipe");
        let (port_tx, port_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if !sent && let Some(port) = driver_port(&line) {
                    let _ = port_tx.send(port);
                    sent = true;
                }
            }
        });
        let mut driver = Self {
            child,
            port: 0,
            profile,
        };
        driver.port = port_rx
            .recv_timeout(Duration::from_secs(15))
            .expect("chromedriver names its port within 15 s");
        driver
    }

    pub fn capabilities(&self) -> serde_json::Map<String, Value> {
        // SAFETY: geteuid(2) cannot fail and touches no memory of ours.
        let as_root = unsafe { libc::geteuid() } == 0;
        let mut args = vec![
            "--headless=new".to_owned(),
            format!("--user-data-dir={}", self.profile.path().display()),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--no-first-run".to_owned(),
            "--no-default-browser-check".to_owned(),
            "--disable-extensions".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-sync".to_owned(),
            "--window-size=1280,1024".to_owned(),
        ];
        if as_root {
            args.push("--no-sandbox".to_owned());
        }
        let caps = json!({
            "browserName": "chrome",
            "unhandledPromptBehavior": "dismiss",
            "timeouts": {"pageLoad": 60_000, "script": 30_000, "implicit": 0},
            "goog:chromeOptions": {"args": args},
        });
        match caps {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let group = nix::unistd::Pid::from_raw(-pid);
            let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
        }
        let _ = self.child.wait();
        crate::support::release(self.child.id());
    }
}

/// The port in "ChromeDriver was started successfully on port 40077.".
fn driver_port(line: &str) -> Option<u16> {
    let rest = line.split("started successfully on port ").nth(1)?;
    rest.trim().trim_end_matches('.').parse().ok()
}
