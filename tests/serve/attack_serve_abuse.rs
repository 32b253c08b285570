//! An attacker's pass over `seek serve`'s resources and its one-task rule, through the real
//! binary: bodies past the cap (declared, chunked), a huge header, `/events` subscribers that
//! never read while the agent talks a lot, a crowd of concurrent `/query`s and `/stop`s, session
//! ids that are paths, queries full of NULs and escape sequences (what reaches seek's stderr and
//! log must be terminal-safe), and a block that tries to drive the server that runs it.
//!
//! The door (token, Host, Origin) is tested in `attack_serve.rs`.

use crate::fake_model;
use crate::procs;
use crate::serve_attack;

use std::io::Write;
use std::net::TcpStream;
use std::sync::mpsc;

use fake_model::{Gate, Reply};
use serde_json::json;
use serve_attack::{BOUND, Served, block, raw, read_answer, serve};

const ONE_MIB: usize = 1024 * 1024;

fn held(gate: &Gate) -> Reply {
    Reply::Held {
        answer: "done".into(),
        gate: gate.clone(),
    }
}

/// Starts a query on its own thread (the answer comes when the task ends).
fn query_in_background(served: &Served, body: serde_json::Value) -> mpsc::Receiver<u16> {
    let (tx, rx) = mpsc::channel();
    let addr = served.addr;
    let headers = served.client_headers();
    std::thread::spawn(move || {
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let answer =
            serve_attack::request(addr, "POST", "/query", &refs, body.to_string().as_bytes());
        let _ = tx.send(answer.status);
    });
    rx
}

#[test]
fn bodies_past_the_cap_are_refused_before_anything_runs() {
    let served = serve(vec![Reply::text("hello")], &[], &[]);
    let token = served.token.clone().expect("token");
    let head = |extra: &str| {
        format!(
            "POST /query HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n{extra}Connection: close\r\n\r\n",
            served.host()
        )
    };
    // Declared too large, and sent: refused, not buffered.
    let mut stream = TcpStream::connect(served.addr).expect("connect");
    stream.set_read_timeout(Some(BOUND)).expect("timeout");
    stream
        .write_all(head(&format!("Content-Length: {}\r\n", 2 * ONE_MIB)).as_bytes())
        .expect("head");
    let piece = vec![b'"'; 64 * 1024];
    for _ in 0..32 {
        if stream.write_all(&piece).is_err() {
            break; // The server answered and closed mid-body: what a cap should do.
        }
    }
    let declared = read_answer(&mut stream);
    assert_eq!(declared.status, 413, "{declared:?}");
    // Chunked, with no length announced: refused once the cap is passed, chunk by chunk.
    let mut stream = TcpStream::connect(served.addr).expect("connect");
    stream.set_read_timeout(Some(BOUND)).expect("timeout");
    stream
        .write_all(head("Transfer-Encoding: chunked\r\n").as_bytes())
        .expect("head");
    let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, "\"".repeat(64 * 1024));
    let mut sent = 0;
    while sent < 2 * ONE_MIB {
        if stream.write_all(chunk.as_bytes()).is_err() {
            break; // The server answered and closed mid-body: what a cap should do.
        }
        sent += 64 * 1024;
    }
    let chunked = read_answer(&mut stream);
    assert_eq!(chunked.status, 413, "{chunked:?}");
    assert!(chunked.json()["error"].is_string());
    assert_eq!(served.model_calls(), 0);
    assert!(!served.active());
    assert_eq!(served.get("/health").status, 200);
}

#[test]
fn a_huge_header_is_refused_and_the_server_lives_on() {
    let served = serve(vec![Reply::text("hello")], &[], &[]);
    let filler = "a".repeat(ONE_MIB);
    let answer = raw(
        served.addr,
        format!(
            "GET /health HTTP/1.1\r\nHost: {}\r\nX-Filler: {filler}\r\nConnection: close\r\n\r\n",
            served.host()
        )
        .as_bytes(),
    );
    assert!(matches!(answer.status, 0 | 400 | 431), "{answer:?}");
    let many: String = (0..10_000).map(|i| format!("X-H{i}: v\r\n")).collect();
    let answer = raw(
        served.addr,
        format!(
            "GET /health HTTP/1.1\r\nHost: {}\r\n{many}Connection: close\r\n\r\n",
            served.host()
        )
        .as_bytes(),
    );
    assert!(matches!(answer.status, 0 | 400 | 431), "{answer:?}");
    assert_eq!(served.get("/health").status, 200);
}

#[test]
fn of_many_concurrent_queries_exactly_one_runs() {
    let gate = Gate::new();
    let served = serve(vec![held(&gate), Reply::text("again")], &[], &[]);
    const CROWD: usize = 16;
    let (tx, rx) = mpsc::channel();
    let start = std::sync::Arc::new(std::sync::Barrier::new(CROWD));
    for i in 0..CROWD {
        let (tx, start) = (tx.clone(), std::sync::Arc::clone(&start));
        let addr = served.addr;
        let headers = served.client_headers();
        std::thread::spawn(move || {
            let refs: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let body = json!({"query": format!("task {i}")}).to_string();
            start.wait();
            let answer = serve_attack::request(addr, "POST", "/query", &refs, body.as_bytes());
            let _ = tx.send(answer.status);
        });
    }
    // While the one task is held, every other answer is 429 and comes at once.
    let refused: Vec<u16> = (1..CROWD)
        .map(|_| rx.recv_timeout(BOUND).expect("an answer"))
        .collect();
    assert!(refused.iter().all(|s| *s == 429), "{refused:?}");
    assert!(served.active());
    gate.open();
    assert_eq!(rx.recv_timeout(BOUND).expect("the task's answer"), 200);
    assert_eq!(
        served.model_calls(),
        1,
        "more than one task reached the model"
    );
    // The rule is per task, not forever.
    assert_eq!(served.query(&json!({"query": "again"})).status, 200);
}

#[test]
fn a_storm_of_stops_ends_the_task_once_and_the_next_query_works() {
    let gate = Gate::new();
    let served = serve(vec![held(&gate), Reply::text("second answer")], &[], &[]);
    let running = query_in_background(&served, json!({"query": "first"}));
    served.model.wait_for_request();
    let stops: Vec<_> = (0..32)
        .map(|i| {
            let addr = served.addr;
            let headers = served.client_headers();
            std::thread::spawn(move || {
                let refs: Vec<(&str, &str)> = headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let method = if i % 2 == 0 { "GET" } else { "POST" };
                serve_attack::request(addr, method, "/stop", &refs, b"")
            })
        })
        .collect();
    for stop in stops {
        let answer = stop.join().expect("a stop");
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.json(), json!({"status": "stopped"}));
    }
    assert_eq!(running.recv_timeout(BOUND).expect("the task ended"), 200);
    assert!(!served.active());
    let latest = served.get("/latest_answer").json();
    assert_eq!(latest["done"], "true", "{latest}");
    let next = served.query(&json!({"query": "second"}));
    assert_eq!(next.status, 200, "{next:?}");
    assert!(next.body.contains("second answer"), "{next:?}");
    gate.open();
}

#[test]
fn session_ids_that_are_paths_resume_nothing() {
    let served = serve(vec![Reply::text("hello")], &[], &[]);
    let outside = served.sandbox.path("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    for id in [
        "../../etc".to_owned(),
        "/etc/passwd".to_owned(),
        "..".to_owned(),
        ".".to_owned(),
        "../outside".to_owned(),
        outside.display().to_string(),
        "%2e%2e%2f".to_owned(),
        "a\u{0}b".to_owned(),
        "\u{1b}]0;x\u{7}".to_owned(),
        "x".repeat(100_000),
    ] {
        let answer = served.query(&json!({"query": "hello", "session": id}));
        assert!(
            matches!(answer.status, 400 | 404),
            "session {:?}: {answer:?}",
            id.chars().take(40).collect::<String>()
        );
        assert!(answer.json()["error"].is_string());
        assert!(!served.active(), "a refused resume left the task running");
    }
    assert_eq!(
        served.model_calls(),
        0,
        "a refused resume reached the model"
    );
    assert_eq!(std::fs::read_dir(&outside).expect("ls").count(), 0);
    // The refusals left the server usable.
    assert_eq!(served.query(&json!({"query": "hello"})).status, 200);
}

/// What a query, the model's answer or a block's output hold reaches only the JSON answers, where
/// control characters are escaped: never seek serve's stderr nor its log raw.
#[test]
fn nuls_and_escape_sequences_never_reach_the_terminal_or_the_log_raw() {
    let nasty = "\u{0}\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[31m\u{9b}31m\u{1b}P+q\u{1b}\\\r\u{8}";
    let served = serve(
        vec![
            block("printf 'out\\033]0;pwned\\007\\033[2J\\000\\233x\\n'; exit 3"),
            Reply::text(format!("answer {nasty}")),
        ],
        &[],
        &[],
    );
    // 1 MiB of raw NULs is not JSON.
    let mut zeros = vec![0u8; ONE_MIB - 1];
    zeros[0] = b'{';
    let answer = served.send("POST", "/query", &[], &zeros);
    assert_eq!(answer.status, 400, "{answer:?}");
    // An agent name made of escapes is refused with the name escaped.
    let answer = served.query(&json!({"query": "hi", "agent": nasty}));
    assert_eq!(answer.status, 400, "{answer:?}");
    assert!(!has_raw_c0(&answer.body), "{:?}", answer.body);
    // A query of NULs and escapes runs: its answer is JSON with every control escaped.
    // Long, but within the fake model's context window (a longer one is a model error).
    let long = nasty.repeat(100);
    let answer = served.query(&json!({"query": format!("run it {long}")}));
    assert_eq!(answer.status, 200, "{answer:?}");
    // JSON escapes C0 controls; C1 ones (U+0080–U+009F) pass as UTF-8, which terminals that
    // read UTF-8 do not obey: a known limit, said in docs/safety.md.
    assert!(!has_raw_c0(&answer.body), "{:?}", answer.body);
    let latest = served.get("/latest_answer");
    assert!(!has_raw_c0(&latest.body), "{:?}", latest.body);
    let files = served.data_files();
    let stderr = served.stop();
    assert!(!has_raw_controls(&stderr), "stderr: {stderr:?}");
    for (path, text) in files.iter().filter(|(p, _)| p.ends_with(".log")) {
        assert!(!has_raw_controls(text), "{path}: {text:?}");
    }
}

/// C0 control characters other than a line end or a tab.
fn has_raw_c0(text: &str) -> bool {
    text.chars()
        .any(|c| c < ' ' && c != '\n' && c != '\t' || c == '\u{7f}')
}

/// Control characters other than a line end or a tab, C1 included.
fn has_raw_controls(text: &str) -> bool {
    text.chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c))
}

#[test]
fn subscribers_that_never_read_do_not_stall_the_agent() {
    // 300 KB in 5-character pieces: 60 000 events, far past both the per-subscriber backlog and
    // what a socket buffers.
    let long = "word ".repeat(60_000);
    // The long answer may take a second round; spare replies keep that from being a failure.
    let served = serve(
        vec![
            Reply::text(long),
            Reply::text("after"),
            Reply::text("after"),
        ],
        &[],
        &[],
    );
    let token = served.token.clone().expect("token");
    let mut idle = Vec::new();
    for _ in 0..200 {
        let mut stream = TcpStream::connect(served.addr).expect("connect");
        stream
            .write_all(
                format!(
                    "GET /events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\r\n",
                    served.host()
                )
                .as_bytes(),
            )
            .expect("subscribe");
        idle.push(stream); // Never read.
    }
    let rss_before = rss_kib(served.pid());
    let answer = served.query(&json!({"query": "talk a lot"}));
    assert_eq!(
        answer.status, 200,
        "the agent stalled behind its subscribers: {answer:?}"
    );
    assert!(served.get("/health").status == 200);
    assert!(!served.active());
    let rss_after = rss_kib(served.pid());
    eprintln!(
        "rss with 200 idle subscribers: {rss_before} KiB before, {rss_after} KiB after 60 000 events"
    );
    assert!(
        rss_after < rss_before + 512 * 1024,
        "memory grew by {} KiB for 200 idle subscribers",
        rss_after - rss_before
    );
    drop(idle);
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// Under `--no-token` a block can reach the API over loopback TCP like any local program. The
/// one-task rule makes its nested `/query` a 429 (no recursion, no self-approval through the
/// API), and a process it leaves behind to query later is killed with the block.
#[test]
fn a_block_cannot_drive_the_server_that_runs_it() {
    let served = serve(vec![], &["--no-token"], &[]);
    let url = format!("http://{}", served.addr);
    let marker = format!("lurker-{}", served.addr.port());
    served.model.push(block(&format!(
        "curl -s -o /dev/null -w 'nested:%{{http_code}}\\n' -H 'Content-Type: application/json' -d '{{\"query\":\"nested run\"}}' {url}/query\n\
         curl -s -o /dev/null -w 'active:%{{http_code}}\\n' {url}/is_active\n\
         setsid sh -c 'echo {marker} >/dev/null; while curl -s {url}/is_active | grep -q true; do :; done; curl -s -d \"{{\\\"query\\\":\\\"later run\\\"}}\" {url}/query' >/dev/null 2>&1 &\n\
         echo planted"
    )));
    served.model.push(Reply::text("Done."));
    let answer = served.query(&json!({"query": "try to call yourself"}));
    assert_eq!(answer.status, 200, "{answer:?}");
    let requests = served.model.chat_requests();
    let feedback: Vec<String> = requests
        .iter()
        .map(fake_model::Logged::last_user_message)
        .collect();
    let feedback = feedback.join("\n");
    assert!(feedback.contains("nested:429"), "{feedback}");
    assert!(feedback.contains("planted"), "{feedback}");
    assert!(
        procs::processes_with(&marker, false).is_empty(),
        "a process the block left behind survives it"
    );
    assert!(
        // The block's source is in the history; a task of its own would be a last user message.
        requests.iter().all(|r| {
            let asked = r.last_user_message();
            !asked.contains("nested run") && !asked.contains("later run")
        }),
        "a block's own query reached the model: {feedback}"
    );
    assert_eq!(
        requests.len(),
        2,
        "one task: the block's round and the answer"
    );
}
