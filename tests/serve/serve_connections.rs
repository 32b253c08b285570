//! `seek serve`'s connection limits, in process with short limits: a client that sends nothing,
//! half a request, or stays idle after an answer is disconnected after the header-read timeout;
//! no more than the connection cap are served at once, and the next is served as soon as one
//! closes; shutdown ends open connections.

use crate::fake_model;
use crate::runtime;
use crate::serve;

use std::io::{BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use fake_model::FakeModel;
use seek::serve::listen::Limits;
use seek::serve::{Access, Server};

/// A bound on every wait: reached only when the server misbehaves.
const BOUND: Duration = Duration::from_secs(20);

struct Running {
    server: Server,
    _model: FakeModel,
    _dirs: tempfile::TempDir,
}

async fn start(limits: Limits) -> Running {
    let model = FakeModel::start(vec![]);
    let dirs = tempfile::tempdir().expect("temp");
    let work = dirs.path().join("work");
    std::fs::create_dir_all(&work).expect("work");
    let config = runtime::config(&model.url(), &work, &dirs.path().join("data"), Some("auto"));
    let model_client =
        seek::model_factory::connect(&config, &seek::config::Env::default()).expect("model client");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let server = Server::start_with(
        config,
        model_client,
        None,
        listener,
        Access::new(None, vec![]),
        limits,
    )
    .expect("server");
    Running {
        server,
        _model: model,
        _dirs: dirs,
    }
}

fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(BOUND)).expect("timeout");
    stream
}

fn health_request(port: u16) -> String {
    format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n")
}

/// Reads one response to a keep-alive request and returns its body.
fn read_body(stream: &mut TcpStream) -> String {
    serve::read_response(&mut BufReader::new(stream)).body
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

fn short_timeout() -> Limits {
    Limits {
        max_connections: 64,
        header_read_timeout: Duration::from_millis(300),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_half_sent_and_idle_connections_are_closed() {
    let running = start(short_timeout()).await;
    let port = running.server.addr.port();
    tokio::task::spawn_blocking(move || {
        let mut silent = connect(port);
        assert!(closed_by_server(&mut silent), "a silent client is cut off");

        let mut half = connect(port);
        half.write_all(b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .expect("send");
        assert!(
            closed_by_server(&mut half),
            "half a request head is cut off"
        );

        let mut idle = connect(port);
        idle.write_all(health_request(port).as_bytes())
            .expect("send");
        assert!(read_body(&mut idle).contains("healthy"));
        assert!(
            closed_by_server(&mut idle),
            "an idle kept-alive connection is cut off"
        );
    })
    .await
    .expect("client");
    running.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_than_the_cap_are_served_and_the_next_waits_its_turn() {
    let running = start(Limits {
        max_connections: 2,
        header_read_timeout: Duration::from_secs(60),
    })
    .await;
    let port = running.server.addr.port();
    tokio::task::spawn_blocking(move || {
        let mut first = connect(port);
        first
            .write_all(health_request(port).as_bytes())
            .expect("send");
        assert!(read_body(&mut first).contains("healthy"));
        let mut second = connect(port);
        second
            .write_all(health_request(port).as_bytes())
            .expect("send");
        assert!(read_body(&mut second).contains("healthy"));

        // Both are held open: the third is accepted by the kernel but not served.
        let mut third = connect(port);
        third
            .write_all(health_request(port).as_bytes())
            .expect("send");
        third
            .set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        let mut byte = [0u8; 1];
        let early = third.read(&mut byte);
        assert!(
            matches!(&early, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
            "a connection over the cap is not served while the others are open: {early:?}"
        );

        drop(first);
        third.set_read_timeout(Some(BOUND)).expect("timeout");
        assert!(
            read_body(&mut third).contains("healthy"),
            "served once a place is free"
        );
        drop(second);
    })
    .await
    .expect("client");
    running.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_open_connections() {
    let running = start(Limits {
        max_connections: 8,
        header_read_timeout: Duration::from_secs(60),
    })
    .await;
    let port = running.server.addr.port();
    let mut open = tokio::task::spawn_blocking(move || {
        let mut stream = connect(port);
        stream
            .write_all(health_request(port).as_bytes())
            .expect("send");
        assert!(read_body(&mut stream).contains("healthy"));
        stream
    })
    .await
    .expect("client");
    tokio::time::timeout(BOUND, running.server.shutdown())
        .await
        .expect("shutdown is bounded");
    let closed = tokio::task::spawn_blocking(move || closed_by_server(&mut open))
        .await
        .expect("client");
    assert!(closed, "the kept-alive connection was closed at shutdown");
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens after shutdown"
    );
}
