//! A file server on loopback for download tests: files by path, HTTP Range requests honoured
//! (or ignored on purpose), and faults a real network has: a connection cut half way, a
//! transfer that stalls, a reply held until the test lets it go. Every request is logged.
//!
//! Plain threads and blocking sockets, like `fake_model.rs`. Nothing here sleeps to wait for
//! the client: a stalled transfer waits until the client hangs up, a held one until the test
//! opens its gate; the bound on those waits only turns a hung test into a failure.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long a wait may last before the test fails instead of hanging the suite.
pub const FAILURE_BOUND: Duration = Duration::from_secs(120);

/// How a file is served.
#[derive(Debug, Clone)]
pub enum Serve {
    /// Whole or from the requested byte (206 with `Content-Range`).
    Normally,
    /// Always the whole file with 200, whatever range is asked.
    IgnoringRange,
    /// Announces the whole (remaining) length, sends the file up to byte `at`, then closes.
    CutAt(usize),
    /// Sends the file up to byte `at`, then nothing until the client hangs up.
    StallAt(usize),
    /// Sends the headers, then waits for the gate before sending the file normally.
    Held(Gate),
}

/// Holds a `Serve::Held` reply until the test opens it.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn open(&self) {
        let (open, changed) = &*self.0;
        *open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        changed.notify_all();
    }

    fn wait(&self) {
        let (open, changed) = &*self.0;
        let guard = open.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, timeout) = changed
            .wait_timeout_while(guard, FAILURE_BOUND, |open| !*open)
            .unwrap_or_else(|e| e.into_inner());
        assert!(*guard && !timeout.timed_out(), "the gate was never opened");
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// The `Range` header, if any.
    pub range: Option<String>,
    /// The status answered.
    pub status: u16,
}

struct Route {
    body: Arc<Vec<u8>>,
    serve: Serve,
}

#[derive(Default)]
struct State {
    routes: HashMap<String, Route>,
    log: Vec<Request>,
}

/// The running server; its thread ends with the test process.
pub struct FileServer {
    pub port: u16,
    state: Arc<Mutex<State>>,
    arrivals: Mutex<mpsc::Receiver<String>>,
    hangups: Mutex<mpsc::Receiver<()>>,
}

impl FileServer {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(State::default()));
        let (arrival_tx, arrival_rx) = mpsc::channel();
        let (hangup_tx, hangup_rx) = mpsc::channel();
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let state = Arc::clone(&shared);
                let arrival = arrival_tx.clone();
                let hangup = hangup_tx.clone();
                std::thread::spawn(move || serve(stream, &state, &arrival, &hangup));
            }
        });
        Self {
            port,
            state,
            arrivals: Mutex::new(arrival_rx),
            hangups: Mutex::new(hangup_rx),
        }
    }

    /// `http://127.0.0.1:PORT/DIR/` (a mirror URL).
    pub fn url(&self, dir: &str) -> String {
        format!("http://127.0.0.1:{}/{dir}/", self.port)
    }

    /// Serves `body` at `path` (`/dir/name`) the way `serve` says, replacing what was there.
    pub fn put(&self, path: &str, body: Arc<Vec<u8>>, serve: Serve) {
        self.lock()
            .routes
            .insert(path.to_owned(), Route { body, serve });
    }

    /// Changes how `path` is served from now on.
    pub fn serve(&self, path: &str, serve: Serve) {
        if let Some(route) = self.lock().routes.get_mut(path) {
            route.serve = serve;
        }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.lock().log.clone()
    }

    /// The requests for `path`.
    pub fn requests_for(&self, path: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// Blocks until a request for some path has arrived and returns the path.
    pub fn wait_for_request(&self) -> String {
        let rx = self.arrivals.lock().unwrap_or_else(|e| e.into_inner());
        rx.recv_timeout(FAILURE_BOUND)
            .expect("a request arrives within the failure bound")
    }

    /// Blocks until a client hung up on a stalled transfer.
    pub fn wait_for_hangup(&self) {
        let rx = self.hangups.lock().unwrap_or_else(|e| e.into_inner());
        rx.recv_timeout(FAILURE_BOUND)
            .expect("the client hangs up within the failure bound");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The request line's method and path, and the `Range` header.
fn read_request(stream: &TcpStream) -> Option<(String, String, Option<String>)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut range = None;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("range")
        {
            range = Some(value.trim().to_owned());
        }
    }
    Some((method, path, range))
}

/// `bytes=N-` as N.
fn range_start(range: Option<&str>) -> Option<usize> {
    range?
        .strip_prefix("bytes=")?
        .strip_suffix('-')?
        .parse()
        .ok()
}

fn serve(
    mut stream: TcpStream,
    state: &Mutex<State>,
    arrival: &mpsc::Sender<String>,
    hangup: &mpsc::Sender<()>,
) {
    let Some((method, path, range)) = read_request(&stream) else {
        return;
    };
    let route = {
        let state = state.lock().unwrap_or_else(|e| e.into_inner());
        state
            .routes
            .get(&path)
            .map(|r| (Arc::clone(&r.body), r.serve.clone()))
    };
    let log = |status: u16| {
        state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .log
            .push(Request {
                method: method.clone(),
                path: path.clone(),
                range: range.clone(),
                status,
            });
        let _ = arrival.send(path.clone());
    };
    let Some((body, how)) = route else {
        log(404);
        let _ = write!(
            stream,
            "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found"
        );
        return;
    };
    let len = body.len();
    let start = match how {
        Serve::IgnoringRange => 0,
        _ => range_start(range.as_deref()).unwrap_or(0),
    };
    if start >= len && start > 0 {
        log(416);
        let _ = write!(
            stream,
            "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{len}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        return;
    }
    let status = if start > 0 { 206 } else { 200 };
    log(status);
    let mut head = if status == 206 {
        format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {start}-{}/{len}\r\n",
            len - 1
        )
    } else {
        "HTTP/1.1 200 OK\r\n".to_owned()
    };
    head.push_str(&format!(
        "Content-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        len - start
    ));
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    let _ = stream.flush();
    let end = match &how {
        Serve::CutAt(at) | Serve::StallAt(at) => (*at).clamp(start, len),
        Serve::Held(gate) => {
            gate.wait();
            len
        }
        _ => len,
    };
    for chunk in body[start..end].chunks(64 * 1024) {
        if stream.write_all(chunk).is_err() {
            return;
        }
    }
    let _ = stream.flush();
    if let Serve::StallAt(_) = how {
        // Nothing more until the client closes its end: read returns 0 (or fails).
        let mut sink = [0u8; 64];
        while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
        let _ = hangup.send(());
    }
    let _ = stream.shutdown(Shutdown::Both);
}
