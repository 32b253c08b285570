//! AgenticSeek's real React front end (its production build) against `seek serve --no-token`,
//! in headless Chromium: the page comes up online, a typed query is answered, and the blocks
//! view shows the block seek ran, with no request refused on the way.
//!
//! Optional: it runs only when `SEEK_FRONTEND_BUILD` names the front end's `build/` dir
//! (`scripts/frontend-check` makes one); otherwise it says why and passes. The build has the
//! placeholder backend URL `PLACEHOLDER` baked in; the little static server here rewrites it in
//! the JavaScript it serves to seek's real address, so one build serves every port. The page is
//! loaded as `http://localhost:3000`, the origin seek allows by default (when that port is taken,
//! another one, allowed through `[serve] allowed_origins`).

mod support;

#[path = "support/fake_model.rs"]
mod fake_model;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use support::Sandbox;

/// The backend URL the build was made with (`REACT_APP_BACKEND_URL`).
const PLACEHOLDER: &str = "http://localhost:59999";

/// The port AgenticSeek's front end runs on, and the origin seek allows by default.
const FRONTEND_PORT: u16 = 3000;

/// What the block prints: computed by the shell, so the text only appears if the block ran.
const MARKER: &str = "fe-marker-4711";
const BLOCK: &str = "echo fe-marker-$((4700+11))";

/// The model's final answer, as the page should show it.
const ANSWER: &str = "The marker line was printed by the shell";

/// How long each stage may take before the test fails instead of hanging.
const START_BOUND: Duration = Duration::from_secs(60);
const PAGE_BOUND: Duration = Duration::from_secs(120);

#[test]
fn agenticseek_frontend_answers_through_seek_serve() {
    let Some(build) = std::env::var_os("SEEK_FRONTEND_BUILD") else {
        eprintln!(
            "SEEK_FRONTEND_BUILD is not set (run scripts/frontend-check to build AgenticSeek's \
             front end and run this test): skipped"
        );
        return;
    };
    let build = PathBuf::from(build);
    assert!(
        build.join("index.html").is_file(),
        "SEEK_FRONTEND_BUILD={} has no index.html: not a front-end build dir",
        build.display()
    );
    assert!(
        main_js_has_placeholder(&build),
        "no build/static/js/main.*.js of {} contains {PLACEHOLDER}: build it with \
         REACT_APP_BACKEND_URL={PLACEHOLDER}",
        build.display()
    );
    let started = Instant::now();

    let sb = Sandbox::new();
    let model = FakeModel::start(vec![
        Reply::text(format!("I'll print the marker.\n```bash\n{BLOCK}\n```\n")),
        Reply::text(format!("{ANSWER}.")),
    ]);

    // The page's server first: its port decides the origin seek must allow.
    let (listener, port) = bind_frontend_port();
    let origin = format!("http://localhost:{port}");
    if port != FRONTEND_PORT {
        eprintln!("port {FRONTEND_PORT} is taken: the page is served on {port}, allowed in config");
        sb.write_config(&format!("[serve]\nallowed_origins = [\"{origin}\"]\n"));
    }

    let mut seek = SeekServe::start(&sb, &model.url());
    eprintln!(
        "seek serve: {} (started in {:?})",
        seek.url,
        started.elapsed()
    );
    let backend = seek.url.clone();
    let served = StaticServer::start(listener, build.clone(), backend.clone());

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let outcome = runtime.block_on(drive_page(&origin));
    let stderr = seek.stop();
    eprintln!("seek serve's stderr:\n{stderr}");
    eprintln!(
        "static server: {} requests, {} rewritten to {backend}",
        served.count(),
        served.rewritten()
    );
    let page = match outcome {
        Ok(page) => page,
        Err(failure) => panic!("{failure}\nseek serve's stderr:\n{stderr}"),
    };
    eprintln!("the page's requests: {}", page["log"]);

    let refused = refused(&page);
    assert!(
        refused.is_empty(),
        "requests refused or blocked (status 0 is a CORS refusal or a dropped connection): \
         {refused:?}\nseek serve's stderr:\n{stderr}"
    );
    let queries = page["log"]
        .as_array()
        .map(|log| {
            log.iter()
                .filter(|r| r["req"].as_str().is_some_and(|s| s.contains("/query")))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(queries, 1, "one POST /query was made: {}", page["log"]);
    assert!(
        !stderr.to_lowercase().contains("refus"),
        "seek serve refused something:\n{stderr}"
    );
    assert!(
        model.chat_requests().len() >= 2,
        "the model was asked for the block and for the answer"
    );
    eprintln!("the whole check took {:?}", started.elapsed());
}

/// The page's requests that were refused: 401 or 403, or status 0 (the browser's CORS check
/// failed, or the connection was dropped).
fn refused(state: &Value) -> Vec<Value> {
    state["log"]
        .as_array()
        .map(|log| {
            log.iter()
                .filter(|r| matches!(r["status"].as_u64(), Some(0 | 401 | 403)))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a `static/js/main.*.js` of `build` contains the placeholder backend URL.
fn main_js_has_placeholder(build: &Path) -> bool {
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
fn bind_frontend_port() -> (TcpListener, u16) {
    let listener = TcpListener::bind(("127.0.0.1", FRONTEND_PORT))
        .or_else(|_| TcpListener::bind(("127.0.0.1", 0)))
        .expect("a loopback port for the page");
    let port = listener.local_addr().expect("its address").port();
    (listener, port)
}

/// The real `seek serve` binary, killed when dropped.
struct SeekServe {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl SeekServe {
    fn start(sb: &Sandbox, model_url: &str) -> Self {
        let mut cmd = sb.seek();
        cmd.args(["serve", "--no-token", "--host", "127.0.0.1", "--port", "0"])
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
    fn stop(&mut self) -> String {
        if matches!(self.child.try_wait(), Ok(None)) {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid"));
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
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
struct StaticServer {
    requests: Arc<Mutex<(usize, usize)>>,
}

impl StaticServer {
    fn start(listener: TcpListener, root: PathBuf, backend: String) -> Self {
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

    fn count(&self) -> usize {
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    fn rewritten(&self) -> usize {
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
struct Driver {
    child: Child,
    port: u16,
    profile: tempfile::TempDir,
}

impl Driver {
    fn start() -> Self {
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

    fn capabilities(&self) -> serde_json::Map<String, Value> {
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
    }
}

/// The port in "ChromeDriver was started successfully on port 40077.".
fn driver_port(line: &str) -> Option<u16> {
    let rest = line.split("started successfully on port ").nth(1)?;
    rest.trim().trim_end_matches('.').parse().ok()
}

/// Records every XMLHttpRequest's end (axios uses them in a browser): method, URL, status.
const XHR_LOG: &str = r#"
if (!window.__seekLog) {
  window.__seekLog = [];
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    this.__seekReq = method + " " + url;
    return open.apply(this, arguments);
  };
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function () {
    this.addEventListener("loadend", () =>
      window.__seekLog.push({ req: this.__seekReq, status: this.status }));
    return send.apply(this, arguments);
  };
}
return true;
"#;

/// The page's state, read in one round trip.
const PAGE_STATE: &str = r#"
const texts = (sel) => Array.from(document.querySelectorAll(sel)).map((e) => e.innerText);
return {
  online: !!document.querySelector(".status-indicator.online"),
  user: texts(".user-message .message-content"),
  agent: texts(".agent-message .message-content"),
  blocks: texts(".blocks .block pre"),
  feedback: texts(".blocks .block .block-feedback"),
  success: texts(".blocks .block .block-success"),
  errors: texts(".error-message, .content .error"),
  log: window.__seekLog || [],
};
"#;

/// Loads the page, asks the query, and waits until the answer and the block are shown. Returns
/// the page's last state.
async fn drive_page(origin: &str) -> Result<Value, String> {
    let driver = Driver::start();
    let mut builder = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
    builder.capabilities(driver.capabilities());
    let client = tokio::time::timeout(
        START_BOUND,
        builder.connect(&format!("http://127.0.0.1:{}", driver.port)),
    )
    .await
    .map_err(|_| "chromium did not start within the bound".to_owned())?
    .map_err(|e| format!("chromium did not start: {e}"))?;
    let outcome = use_page(&client, origin).await;
    let _ = client.close().await;
    drop(driver);
    outcome
}

async fn use_page(client: &Client, origin: &str) -> Result<Value, String> {
    let fail = |what: &str, e: fantoccini::error::CmdError| format!("{what}: {e}");
    client
        .goto(&format!("{origin}/"))
        .await
        .map_err(|e| fail("load the page", e))?;
    client
        .execute(XHR_LOG, vec![])
        .await
        .map_err(|e| fail("install the request log", e))?;

    // The health check runs every 3 s: the page says "Online" once one got through CORS.
    let state = wait_for(client, "the page shows the backend online", |s| {
        s["online"] == true
    })
    .await?;
    eprintln!("online: {state}");

    let input = client
        .find(Locator::Css(".input-form input[type=text]"))
        .await
        .map_err(|e| fail("find the query input", e))?;
    input
        .send_keys("print the marker with the shell")
        .await
        .map_err(|e| fail("type the query", e))?;
    client
        .find(Locator::Css(".input-form button[type=submit]"))
        .await
        .map_err(|e| fail("find the send button", e))?
        .click()
        .await
        .map_err(|e| fail("click send", e))?;
    let asked = Instant::now();

    let state = wait_for(client, "the answer and the block are shown", |s| {
        let has = |key: &str, text: &str| {
            s[key].as_array().is_some_and(|v| {
                v.iter()
                    .any(|t| t.as_str().is_some_and(|t| t.contains(text)))
            })
        };
        has("agent", ANSWER) && has("blocks", BLOCK) && has("feedback", MARKER)
    })
    .await?;
    eprintln!("answered in {:?}: {state}", asked.elapsed());
    let errors = state["errors"].as_array().map_or(0, Vec::len);
    if errors > 0 {
        return Err(format!("the page shows errors: {}", state["errors"]));
    }
    if state["success"].as_array().map_or(0, Vec::len) == 0 {
        return Err(format!("the block is not shown as a success: {state}"));
    }
    if !state["user"]
        .as_array()
        .is_some_and(|v| v.iter().any(|t| t == "print the marker with the shell"))
    {
        return Err(format!("the user's message is not shown: {state}"));
    }
    Ok(state)
}

/// Polls the page's state until `done` holds; fails with the last state after `PAGE_BOUND`, or
/// at once when a request was refused or the page shows an error.
async fn wait_for(
    client: &Client,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Result<Value, String> {
    let deadline = Instant::now() + PAGE_BOUND;
    loop {
        let state = client
            .execute(PAGE_STATE, vec![])
            .await
            .map_err(|e| format!("read the page's state: {e}"))?;
        if done(&state) {
            return Ok(state);
        }
        if !refused(&state).is_empty() {
            return Err(format!(
                "waiting until {what}, a request was refused: {state}"
            ));
        }
        if state["errors"].as_array().is_some_and(|v| !v.is_empty()) {
            return Err(format!(
                "waiting until {what}, the page shows errors: {state}"
            ));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{what}: not within {PAGE_BOUND:?}; the page: {state}"
            ));
        }
        // The poll's pace, not a synchronisation: the condition above decides.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
