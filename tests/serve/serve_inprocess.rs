//! `seek::serve::Server` started in-process (no binary) on a 127.0.0.1:0 listener with a token:
//! one query end to end, and `Server::shutdown()` while a block runs returning with the block's
//! processes killed and the server no longer listening.

use crate::fake_model;
use crate::procs;
use crate::runtime;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use seek::config::Env;
use seek::serve::{Access, Server};
use serde_json::{Value, json};

const TOKEN: &str = "inprocess-test-token-0123456789";

/// The longest an awaited condition may take before the test fails instead of hanging.
const BOUND: Duration = Duration::from_secs(60);

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

async fn start(model: &FakeModel, dir: &std::path::Path) -> Server {
    let config = runtime::config(
        &model.url(),
        &dir.join("work"),
        &dir.join("data"),
        Some("auto"),
    );
    let chat = seek::model_factory::connect(&config, &Env::default()).expect("model");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    Server::start(
        Arc::clone(&config),
        chat,
        None,
        listener,
        Access::new(Some(TOKEN.into()), vec!["http://localhost:3000".into()]),
    )
    .expect("server starts")
}

async fn post_query(
    client: &reqwest::Client,
    server: std::net::SocketAddr,
    prompt: &str,
) -> reqwest::Result<(u16, Value)> {
    let response = client
        .post(format!("http://{server}/query"))
        .bearer_auth(TOKEN)
        .json(&json!({"query": prompt}))
        .send()
        .await?;
    let code = response.status().as_u16();
    let body = response.json().await?;
    Ok((code, body))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_query_runs_end_to_end_and_shutdown_kills_the_running_block() {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = format!("63{:08}", std::process::id());
    let model = FakeModel::start(vec![
        Reply::text(format!("Greeting.\n{}\n", fence("bash", "echo in-process"))),
        Reply::text("Greeted."),
        Reply::text(format!(
            "Waiting.\n{}\n",
            fence("bash", &format!("echo started; sleep {marker}"))
        )),
    ]);
    let server = start(&model, dir.path()).await;
    let addr = server.addr;
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    let client = seek::tls::client_builder()
        .timeout(BOUND)
        .build()
        .expect("client");

    let unauthorised = client
        .get(format!("http://{addr}/is_active"))
        .send()
        .await
        .expect("answered");
    assert_eq!(unauthorised.status(), 401, "the token is required");

    let (code, answered) = post_query(&client, addr, "greet me")
        .await
        .expect("answered");
    assert_eq!(code, 200, "{answered}");
    assert_eq!(answered["answer"], "Greeted.");
    assert_eq!(answered["success"], "True");
    assert_eq!(answered["agent_name"], "coder");
    let block = &answered["blocks"]["0"];
    assert_eq!(block["tool_type"], "bash");
    assert_eq!(block["block"], "echo in-process\n");
    assert!(
        block["output"]
            .as_str()
            .is_some_and(|o| o.contains("in-process")),
        "{block}"
    );

    let pending = tokio::spawn({
        let client = client.clone();
        async move { post_query(&client, addr, "wait a long time").await }
    });
    let deadline = Instant::now() + BOUND;
    while procs::processes_with(&marker, false).is_empty() {
        assert!(Instant::now() < deadline, "the block's sleep never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::timeout(BOUND, server.shutdown())
        .await
        .expect("shutdown returns");
    let left = procs::processes_with(&marker, false);
    assert!(left.is_empty(), "the block outlived shutdown: {left:?}");
    // The waiting client is not left hanging: it gets the stopped task's answer, or (as the
    // runtime ends with it) a 500 saying so, or loses its connection.
    let ended = tokio::time::timeout(BOUND, pending)
        .await
        .expect("the pending query ends")
        .expect("its task");
    if let Ok((code, body)) = ended {
        assert!(
            (code == 200 && body["status"] == "Stopped")
                || (code == 500 && body["error"].as_str().is_some_and(|e| e.contains("ended"))),
            "{code} {body}"
        );
    }
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "nothing listens after shutdown"
    );
}
