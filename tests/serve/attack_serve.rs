//! An attacker's pass over `seek serve`'s door, through the real binary: requests that try to get
//! past the token (odd `Authorization` headers, path and method tricks, absolute-form targets),
//! past `--no-token`'s loopback `Host` and `Origin` rules (DNS rebinding, `Origin: null`, look-
//! alike origins, a cross-site form post or image), and the token's own secrecy (never in the log,
//! the session file, stderr, an error, or a block's environment). Every refusal is checked where
//! it matters: nothing reached the model and no block ran.
//!
//! Resource abuse and blocks that call the API are in `attack_serve_abuse.rs`.

use crate::fake_model;
use crate::serve_attack;

use fake_model::{Gate, Reply};
use serde_json::json;
use serve_attack::{BOUND, block, raw, request, serve};

const QUERY: &[u8] = br#"{"query": "say hello"}"#;

/// Every status that means "not served" for a request that must not run anything.
fn refused(status: u16) -> bool {
    matches!(status, 400 | 401 | 403 | 404 | 405 | 413 | 431 | 0)
}

#[test]
fn authorization_header_tricks_never_reach_the_model() {
    let served = serve(vec![Reply::text("hello")], &[], &[]);
    let token = served.token.clone().expect("a generated token");
    let host = served.host();
    let tricks: Vec<Vec<u8>> = vec![
        format!("Bearer  {token}").into_bytes(),
        format!("Bearer\t{token}").into_bytes(),
        format!("bearer {token}").into_bytes(),
        format!("BEARER {token}").into_bytes(),
        format!("Bearer {token}x").into_bytes(),
        format!("Bearer {}", &token[..token.len() - 1]).into_bytes(),
        format!("Bearer {}", token.to_uppercase()).into_bytes(),
        format!("Basic {token}").into_bytes(),
        token.clone().into_bytes(),
        b"Bearer ".to_vec(),
        b"Bearer".to_vec(),
        [format!("Bearer {token}").as_bytes(), b"\x00"].concat(),
        [format!("Bearer {token}").as_bytes(), b"\xff\xfe"].concat(),
        [b"Bearer \xc3".as_slice(), token.as_bytes()].concat(),
    ];
    for trick in &tricks {
        let mut bytes =
            format!("POST /query HTTP/1.1\r\nHost: {host}\r\nAuthorization: ").into_bytes();
        bytes.extend_from_slice(trick);
        bytes.extend_from_slice(
            format!(
                "\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                QUERY.len()
            )
            .as_bytes(),
        );
        bytes.extend_from_slice(QUERY);
        let answer = raw(served.addr, &bytes);
        assert!(
            refused(answer.status),
            "Authorization {:?} was let in: {answer:?}",
            String::from_utf8_lossy(trick)
        );
        assert!(
            !answer.body.contains(&token),
            "the token is echoed: {answer:?}"
        );
    }
    // Trailing blanks are HTTP's optional whitespace, not part of the value: the same token.
    // A wrong token first and the right one second: the first is the one read.
    let doubled = request(
        served.addr,
        "POST",
        "/query",
        &[
            ("Host", &host),
            ("Authorization", "Bearer wrong-wrong-wrong-wrong"),
            ("Authorization", &format!("Bearer {token}")),
        ],
        QUERY,
    );
    assert_eq!(doubled.status, 401, "{doubled:?}");
    assert_eq!(
        served.model_calls(),
        0,
        "a refused request reached the model"
    );
    // The door does open for the right token: the refusals above were not an accident.
    assert_eq!(served.get("/is_active").status, 200);
}

#[test]
fn path_and_method_tricks_open_nothing_but_health() {
    let served = serve(vec![Reply::text("hello")], &[], &[]);
    let host = served.host();
    let with_host = [
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
    ];
    for (method, target) in [
        ("POST", "/health/../query"),
        ("POST", "/health/%2e%2e/query"),
        ("POST", "//query"),
        ("POST", "/query/"),
        ("POST", "/QUERY"),
        ("POST", "/%71uery"),
        ("POST", "/query?/health"),
        ("POST", "/query#/health"),
        ("POST", "/health;/query"),
        ("POST", "http://evil.example/query"),
        ("POST", "http://localhost/query"),
        ("POST", "*"),
        ("GET", "/HEALTH"),
        ("GET", "/health/"),
        ("GET", "/latest_answer"),
        ("HEAD", "/latest_answer"),
        ("HEAD", "/stop"),
        ("GET", "/stop"),
        ("POST", "/stop"),
        ("GET", "/events"),
        ("GET", "/sessions"),
        ("GET", "/is_active"),
        ("OPTIONS", "/query"),
        ("OPTIONS", "/stop"),
        ("PUT", "/query"),
        ("DELETE", "/query"),
        ("POST", "/health"),
        ("TRACE", "/query"),
    ] {
        let answer = request(served.addr, method, target, &with_host, QUERY);
        assert!(
            refused(answer.status),
            "{method} {target} without a token: {answer:?}"
        );
    }
    // `/health` and its query string are the one open door, and it runs nothing.
    for target in ["/health", "/health?x=1"] {
        let answer = request(served.addr, "GET", target, &with_host, b"");
        assert_eq!(answer.status, 200, "{target}: {answer:?}");
    }
    // A preflight skips the token but never reaches a handler, even with a body.
    let preflight = request(
        served.addr,
        "OPTIONS",
        "/query",
        &[
            ("Host", &host),
            ("Origin", "http://localhost:3000"),
            ("Access-Control-Request-Method", "POST"),
        ],
        QUERY,
    );
    assert_eq!(preflight.status, 204, "{preflight:?}");
    // HTTP/1.0 without Host and without a token.
    let old = raw(
        served.addr,
        b"POST /query HTTP/1.0\r\nContent-Length: 23\r\n\r\n{\"query\": \"say hello\"}",
    );
    assert!(refused(old.status), "{old:?}");
    assert_eq!(served.model_calls(), 0, "a request without the token ran");
    assert!(!served.active());
}

#[test]
fn no_token_mode_refuses_every_host_that_is_not_loopback() {
    let served = serve(vec![Reply::text("hello")], &["--no-token"], &[]);
    assert_eq!(served.token, None);
    let port = served.addr.port();
    let hosts = [
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        format!("127.0.0.1.:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        format!("[::ffff:7f00:1]:{port}"),
        format!("2130706433:{port}"),
        format!("0x7f000001:{port}"),
        format!("0177.0.0.1:{port}"),
        format!("127.1:{port}"),
        format!("0.0.0.0:{port}"),
        format!("0:{port}"),
        format!("[::]:{port}"),
        format!("localhost:{port}@evil.example"),
        format!("evil.example#@localhost:{port}"),
        format!("localhost :{port}"),
        format!("local\thost:{port}"),
        "localhost:".to_owned(),
        "localhost:99999999".to_owned(),
        String::new(),
    ];
    for host in &hosts {
        let answer = request(
            served.addr,
            "POST",
            "/query",
            &[("Host", host), ("Content-Type", "application/json")],
            QUERY,
        );
        assert!(
            matches!(answer.status, 400 | 403),
            "Host {host:?} was served: {answer:?}"
        );
    }
    // A forged Host cannot hide behind an absolute-form target, a second Host, or HTTP/1.0.
    let absolute = request(
        served.addr,
        "POST",
        &format!("http://localhost:{port}/query"),
        &[("Host", &format!("evil.example:{port}"))],
        QUERY,
    );
    assert!(matches!(absolute.status, 400 | 403), "{absolute:?}");
    let twice = request(
        served.addr,
        "POST",
        "/query",
        &[
            ("Host", &format!("evil.example:{port}")),
            ("Host", &format!("localhost:{port}")),
        ],
        QUERY,
    );
    assert!(matches!(twice.status, 400 | 403), "{twice:?}");
    let old = raw(
        served.addr,
        b"POST /query HTTP/1.0\r\nContent-Length: 23\r\n\r\n{\"query\": \"say hello\"}",
    );
    assert!(matches!(old.status, 400 | 403), "{old:?}");
    assert_eq!(served.model_calls(), 0, "a foreign Host reached the model");
    // The loopback names are served.
    for host in [
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ] {
        let answer = request(served.addr, "GET", "/is_active", &[("Host", &host)], b"");
        assert_eq!(answer.status, 200, "{host}: {answer:?}");
    }
}

#[test]
fn no_token_mode_refuses_foreign_and_lookalike_origins_before_anything_runs() {
    let served = serve(vec![Reply::text("hello")], &["--no-token"], &[]);
    let host = served.host();
    for origin in [
        "null",
        "http://evil.example",
        "http://localhost:3001",
        "http://localhost",
        "https://localhost:3000",
        "http://localhost:3000.evil.example",
        "http://localhost:3000@evil.example",
        "http://evil.example/http://localhost:3000",
        "http://127.0.0.1:3000",
        "file://",
        "http://localhost:3000, http://evil.example",
        "",
    ] {
        // A simple cross-origin POST (`text/plain`: no preflight) is the one a foreign page can
        // send blind; it must be refused, not run with its answer merely unreadable.
        let answer = request(
            served.addr,
            "POST",
            "/query",
            &[
                ("Host", &host),
                ("Origin", origin),
                ("Content-Type", "text/plain;charset=UTF-8"),
            ],
            QUERY,
        );
        assert_eq!(answer.status, 403, "Origin {origin:?}: {answer:?}");
        assert!(
            answer.header("access-control-allow-origin").is_none(),
            "CORS granted to {origin:?}: {answer:?}"
        );
    }
    assert_eq!(
        served.model_calls(),
        0,
        "a foreign page's post reached the model"
    );
    assert!(!served.active());
    // Spellings of the allowed origin mean the same origin and are served; CORS names it.
    for origin in [
        "http://localhost:3000",
        "http://LOCALHOST:3000",
        "http://localhost:3000/",
    ] {
        let answer = request(
            served.addr,
            "GET",
            "/is_active",
            &[("Host", &host), ("Origin", origin)],
            b"",
        );
        assert_eq!(answer.status, 200, "{origin}: {answer:?}");
        assert!(answer.header("access-control-allow-origin").is_some());
    }
}

/// A foreign page needs no script to send a GET: `<img src="http://127.0.0.1:7777/stop">` or a
/// link. Browsers send no `Origin` with such a request, but they do send `Sec-Fetch-Site`.
#[test]
fn a_foreign_pages_image_or_link_cannot_stop_the_task() {
    let gate = Gate::new();
    let served = serve(
        vec![Reply::Held {
            answer: "done".into(),
            gate: gate.clone(),
        }],
        &["--no-token"],
        &[],
    );
    let addr = served.addr;
    let host = served.host();
    let running =
        std::thread::spawn(move || request(addr, "POST", "/query", &[("Host", &host)], QUERY));
    served.model.wait_for_request();
    assert!(served.active());
    for (site, dest, mode) in [
        ("cross-site", "image", "no-cors"),
        ("cross-site", "document", "navigate"),
        ("same-site", "image", "no-cors"),
        ("cross-site", "script", "no-cors"),
    ] {
        let answer = request(
            served.addr,
            "GET",
            "/stop",
            &[
                ("Host", &served.host()),
                ("Sec-Fetch-Site", site),
                ("Sec-Fetch-Dest", dest),
                ("Sec-Fetch-Mode", mode),
            ],
            b"",
        );
        assert_eq!(answer.status, 403, "{site} {dest}: {answer:?}");
        assert!(served.active(), "a {site} {dest} stopped the task");
    }
    // The front end's own stop (cross-origin XHR: it carries its Origin) and a user's typed URL
    // (`Sec-Fetch-Site: none`) still work.
    let typed = request(
        served.addr,
        "GET",
        "/latest_answer",
        &[("Host", &served.host()), ("Sec-Fetch-Site", "none")],
        b"",
    );
    assert_eq!(typed.status, 200, "{typed:?}");
    let front_end = request(
        served.addr,
        "GET",
        "/stop",
        &[
            ("Host", &served.host()),
            ("Origin", "http://localhost:3000"),
            ("Sec-Fetch-Site", "same-site"),
            ("Sec-Fetch-Mode", "cors"),
        ],
        b"",
    );
    gate.open();
    assert_eq!(front_end.status, 200, "{front_end:?}");
    let ended = running.join().expect("the query's thread");
    assert_eq!(ended.status, 200, "{ended:?}");
    assert!(!served.active());
}

/// `SEEK_API_TOKEN` is a credential like any other: a block's environment lacks it, and neither
/// the block's output, the session file, the log nor stderr ever shows it.
#[test]
fn the_token_never_reaches_a_block_the_log_or_stderr() {
    let token = "t0k-3n5-ABCDEF0123456789-zzz";
    let served = serve(
        vec![
            block("env; echo env-listed"),
            // Another process's environment, read through /proc: seek's own holds the token.
            block(
                "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\" 2>/dev/null; done | grep -c '^SEEK_API_TOKEN=' || true; echo proc-walked",
            ),
            Reply::text("Done."),
        ],
        &[],
        &[("SEEK_API_TOKEN", token)],
    );
    assert_eq!(served.token.as_deref(), Some(token));
    let answer = served.query(&json!({"query": "show me the environment"}));
    assert_eq!(answer.status, 200, "{answer:?}");
    let outputs: Vec<String> = served
        .model
        .chat_requests()
        .iter()
        .map(fake_model::Logged::last_user_message)
        .collect();
    let all = outputs.join("\n");
    assert!(all.contains("env-listed"), "the env block ran: {all}");
    // No environment a block can read through /proc (seek's own holds the token) shows it.
    let walked = all
        .lines()
        .take_while(|l| !l.contains("proc-walked"))
        .last()
        .unwrap_or_default();
    assert_eq!(
        walked.trim(),
        "0",
        "a block read SEEK_API_TOKEN from another process's environment: {all}"
    );
    assert!(!all.contains(token), "a block saw the token: {all}");
    assert!(
        !all.contains("SEEK_API_TOKEN="),
        "a block's environment has SEEK_API_TOKEN: {all}"
    );
    // Wrong tokens are not echoed either (they may be a mistyped real one).
    let wrong = serve_attack::request(
        served.addr,
        "GET",
        "/is_active",
        &[
            ("Host", &served.host()),
            ("Authorization", "Bearer mistyped-secret-1234"),
        ],
        b"",
    );
    assert_eq!(wrong.status, 401);
    assert!(!wrong.body.contains("mistyped-secret-1234"), "{wrong:?}");
    let files = served.data_files();
    assert!(!files.is_empty(), "the log or a session file was written");
    let stderr = served.stop();
    for (path, text) in served_files_and(&files, &stderr) {
        assert!(!text.contains(token), "{path} holds the token");
    }
    let _ = BOUND;
}

fn served_files_and<'a>(
    files: &'a [(String, String)],
    stderr: &'a str,
) -> impl Iterator<Item = (&'a str, &'a str)> {
    files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .chain(std::iter::once(("stderr", stderr)))
}
