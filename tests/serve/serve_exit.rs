//! `seek serve` ends promptly on SIGTERM when idle, whatever its idle connections hold: a
//! kept-alive connection that was answered, one that sent nothing, one that sent half a request
//! head (it held the server for the whole 5 s drain), and an `/events` stream. The time from the
//! signal to the exit is measured against a deadline; nothing sleeps to synchronise.

use crate::fake_model;
use crate::serve;
use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use serve::ServeProcess;
use support::Sandbox;

/// The deadline for an idle server's exit. It exits in about 5–30 ms on 2 busy cores (debug
/// build); the bound leaves room for a loaded machine and still fails the 1.5 s and 5 s waits.
const EXIT_BOUND: Duration = Duration::from_millis(500);

fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(serve::BOUND))
        .expect("a read timeout");
    stream
}

#[test]
fn an_idle_server_exits_promptly_on_sigterm_whatever_its_connections_hold() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![Reply::text("hello")]);
    let served = ServeProcess::start(&sandbox, &model.url(), &["--no-token"], &[]);
    let host = format!("Host: 127.0.0.1:{}\r\n", served.port);

    // Answered once, kept alive.
    let kept = connect(served.port);
    (&kept)
        .write_all(format!("GET /health HTTP/1.1\r\n{host}\r\n").as_bytes())
        .expect("send");
    let answer = serve::read_response(&mut BufReader::new(&kept));
    assert_eq!(answer.status, 200, "{answer:?}");
    // Connected, nothing sent.
    let _silent = connect(served.port);
    // Half a request head.
    let half = connect(served.port);
    (&half)
        .write_all(format!("GET /health HTTP/1.1\r\n{host}").as_bytes())
        .expect("send");
    // An `/events` stream, open: its head is read once the server has answered it.
    let events = connect(served.port);
    (&events)
        .write_all(format!("GET /events HTTP/1.1\r\n{host}\r\n").as_bytes())
        .expect("send");
    let mut events_reader = BufReader::new(&events);
    let mut status_line = String::new();
    events_reader.read_line(&mut status_line).expect("read");
    assert!(status_line.starts_with("HTTP/1.1 200"), "{status_line}");
    // One more request that is answered, so the half head has certainly arrived before it.
    let health = served.get("/health");
    assert_eq!(health.status, 200, "{health:?}");

    let signalled = Instant::now();
    let ended = served.sigterm_and_wait();
    let took = signalled.elapsed();
    eprintln!("seek serve ended {took:?} after SIGTERM");
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert!(
        took < EXIT_BOUND,
        "an idle server took {took:?} to exit on SIGTERM (bound {EXIT_BOUND:?}); stderr:\n{}",
        ended.stderr
    );
    assert!(
        model.chat_requests().is_empty(),
        "nothing ran: the server was idle"
    );
}
