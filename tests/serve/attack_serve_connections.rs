//! An attacker's pass over `seek serve`'s connection places and request heads, through the real
//! binary on loopback: clients without the token that poll `/health` over kept-alive connections
//! or connect and send nothing must not keep a token holder out (they are answered once and
//! closed, or closed to make room), a token holder's own connection keeps its place, and a
//! request head is capped at exactly 64 KiB.
//!
//! Bounded: at most `PLACES + 64` connections at once, all on loopback, every read with a
//! timeout that only turns a hang into a failure.

use crate::serve_attack;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serve_attack::{Answer, BOUND, Served, raw, read_answer, serve};

/// The server's connection places (`listen::MAX_CONNECTIONS`).
const PLACES: usize = 512;
/// The largest request head served (docs/api.md).
const HEAD_LIMIT: usize = 64 * 1024;

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(BOUND)).expect("timeout");
    stream
}

/// `GET path` on a kept-alive connection (no `Connection: close`), with `auth` if given.
fn get_on(stream: &mut TcpStream, host: &str, path: &str, auth: Option<&str>) -> Answer {
    let auth = auth.map_or_else(String::new, |token| {
        format!("Authorization: Bearer {token}\r\n")
    });
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}\r\n").as_bytes())
        .expect("send");
    read_answer(stream)
}

/// Blocks until the server closes `stream` (bounded by its read timeout).
fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// Whether the server still holds `stream` open after `wait` with nothing to say.
fn still_open(stream: &mut TcpStream, wait: Duration) -> bool {
    stream.set_read_timeout(Some(wait)).expect("timeout");
    let mut byte = [0u8; 1];
    let open = matches!(
        stream.read(&mut byte),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
    );
    stream.set_read_timeout(Some(BOUND)).expect("timeout");
    open
}

fn token(served: &Served) -> String {
    served.token.clone().expect("a generated token")
}

#[test]
fn without_the_token_a_connection_is_answered_once_then_closed() {
    let served = serve(vec![], &[], &[]);
    let (host, token) = (served.host(), token(&served));
    // Open `/health`, no token: answered, and closed after the answer.
    let mut polling = connect(served.addr);
    let answer = get_on(&mut polling, &host, "/health", None);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.header("connection"), Some("close"), "{answer:?}");
    assert!(closed_by_server(&mut polling));
    // A refusal too; a wrong token is no token.
    for auth in [None, Some("wrong-token-wrong-token")] {
        let mut refused = connect(served.addr);
        let answer = get_on(&mut refused, &host, "/is_active", auth);
        assert_eq!(answer.status, 401, "{answer:?}");
        assert_eq!(answer.header("connection"), Some("close"), "{answer:?}");
        assert!(closed_by_server(&mut refused));
    }
    // Showing the token on any request, `/health` included, keeps the connection.
    let mut holder = connect(served.addr);
    let first = get_on(&mut holder, &host, "/health", Some(&token));
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.header("connection"), None, "{first:?}");
    let second = get_on(&mut holder, &host, "/is_active", Some(&token));
    assert_eq!(second.status, 200, "{second:?}");
    // Once shown, later requests on it need not repeat it to keep the place (they are still
    // refused without it where the token is required).
    let third = get_on(&mut holder, &host, "/health", None);
    assert_eq!(third.status, 200, "{third:?}");
    assert_eq!(third.header("connection"), None, "{third:?}");
    let fourth = get_on(&mut holder, &host, "/is_active", None);
    assert_eq!(fourth.status, 401, "{fourth:?}");
}

/// The attack as reported: every place taken by kept-alive `/health` pollers without the token.
#[test]
fn keep_alive_pollers_without_the_token_hold_no_place() {
    let served = serve(vec![], &[], &[]);
    let host = served.host();
    let mut pollers: Vec<TcpStream> = (0..PLACES).map(|_| connect(served.addr)).collect();
    let request = format!("GET /health HTTP/1.1\r\nHost: {host}\r\n\r\n");
    for poller in &mut pollers {
        poller.write_all(request.as_bytes()).expect("send");
    }
    for (i, poller) in pollers.iter_mut().enumerate() {
        let answer = read_answer(poller);
        assert_eq!(answer.status, 200, "poller {i}: {answer:?}");
        assert_eq!(
            answer.header("connection"),
            Some("close"),
            "poller {i}: {answer:?}"
        );
        assert!(closed_by_server(poller), "poller {i} keeps its place");
    }
    // Far sooner than the 30 s an idle connection may otherwise stay.
    let started = Instant::now();
    let answer = served.get("/is_active");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the token holder waited {:?}",
        started.elapsed()
    );
}

#[test]
fn silent_connections_give_way_to_a_token_holder_who_keeps_his_place() {
    let served = serve(vec![], &[], &[]);
    let (host, token) = (served.host(), token(&served));
    // A token holder's kept-alive connection, authenticated before the flood.
    let mut keeper = connect(served.addr);
    let answer = get_on(&mut keeper, &host, "/is_active", Some(&token));
    assert_eq!(answer.status, 200, "{answer:?}");
    // More silent connections than there are places.
    const EXTRA: usize = 64;
    let mut silent: Vec<TcpStream> = (0..PLACES + EXTRA).map(|_| connect(served.addr)).collect();
    // A new token holder is served: a silent connection gave up its place.
    let started = Instant::now();
    let answer = served.get("/is_active");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the token holder waited {:?}",
        started.elapsed()
    );
    // The kept-alive one kept its place.
    let again = get_on(&mut keeper, &host, "/is_active", Some(&token));
    assert_eq!(again.status, 200, "{again:?}");
    // Places: the keeper's, and `PLACES - 1` silent ones; every connection after them (the
    // last `EXTRA + 1` silent ones and the new token holder) closed the oldest silent one.
    let evicted = EXTRA + 2;
    for (i, stream) in silent.iter_mut().take(evicted).enumerate() {
        assert!(
            closed_by_server(stream),
            "silent connection {i} kept its place"
        );
    }
    let newest = silent.last_mut().expect("silent connections");
    assert!(
        still_open(newest, Duration::from_millis(300)),
        "the newest silent connection was closed though no one needed its place"
    );
    // A silent connection that speaks up with the token is served.
    let answer = get_on(newest, &host, "/is_active", Some(&token));
    assert_eq!(answer.status, 200, "{answer:?}");
}

/// `GET /health` with `Connection: close` whose head (request line, headers, blank line) is
/// exactly `size` bytes.
fn head_of(host: &str, size: usize) -> Vec<u8> {
    let start = format!("GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nX-Pad: ");
    let end = "\r\n\r\n";
    let pad = size
        .checked_sub(start.len() + end.len())
        .expect("a head this small cannot be built");
    let head = format!("{start}{}{end}", "a".repeat(pad));
    assert_eq!(head.len(), size);
    head.into_bytes()
}

#[test]
fn request_heads_are_capped_at_exactly_64_kib() {
    let served = serve(vec![], &[], &[]);
    let host = served.host();
    let at_limit = raw(served.addr, &head_of(&host, HEAD_LIMIT));
    assert_eq!(at_limit.status, 200, "a head of exactly 64 KiB is served");
    for size in [HEAD_LIMIT + 1, HEAD_LIMIT + 4096, 100 * 1024] {
        let answer = raw(served.addr, &head_of(&host, size));
        // 431, or closed when the refusal meets bytes the client is still sending.
        assert!(
            matches!(answer.status, 431 | 0),
            "a head of {size} bytes: {answer:?}"
        );
    }
    // The same, sent a piece at a time.
    let mut stream = connect(served.addr);
    for piece in head_of(&host, 100 * 1024).chunks(4096) {
        if stream.write_all(piece).is_err() {
            break; // Refused and closed mid-head: what a cap should do.
        }
    }
    let answer = read_answer(&mut stream);
    assert!(matches!(answer.status, 431 | 0), "{answer:?}");
    assert_eq!(served.get("/health").status, 200);
}
