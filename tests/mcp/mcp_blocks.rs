//! MCP servers and blocks side by side: a block's sweep (which takes processes re-parented to
//! seek after the block started for the block's own) never kills a server started meanwhile.

use crate::mcp_support as mcp;

use std::time::Duration;

use seek::exec::{self, RunRequest};
use seek::mcp::Hub;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_while_a_block_runs_survives_the_blocks_sweep() {
    let work = tempfile::tempdir().expect("tempdir");
    let flag = work.path().join("go-on");
    let mut block = RunRequest::new("bash", work.path());
    block.args = vec![
        "-c".into(),
        "echo waiting; while [ ! -e go-on ]; do sleep 0.01; done; echo done".into(),
    ];
    block.timeout = Duration::from_secs(120);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let running = tokio::spawn(async move {
        let mut started = Some(started_tx);
        exec::run(&block, &CancellationToken::new(), move |_| {
            if let Some(tx) = started.take() {
                let _ = tx.send(());
            }
        })
        .await
    });
    started_rx.await.expect("the block printed");
    // The server starts after the block: a child of seek the block's sweep could take.
    let hub = Hub::start(
        vec![mcp::stdio(
            "time",
            &mcp::python(),
            &["-m", "mcp_server_time", "--local-timezone", "UTC"],
        )],
        std::sync::Arc::default(),
        work.path(),
    );
    hub.ready().await;
    mcp::assert_ready(&hub, "time");
    std::fs::write(&flag, "").expect("flag");
    let result = running.await.expect("joined").expect("ran");
    assert!(result.output.contains("done"), "{}", result.output);
    let called = hub
        .call(
            "time",
            "get_current_time",
            serde_json::json!({"timezone": "UTC"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            &CancellationToken::new(),
        )
        .await;
    assert!(
        called.as_ref().is_ok_and(|out| !out.is_error),
        "the server outlived the block's sweep: {called:?} / {:?}",
        mcp::status(&hub, "time").state
    );
    hub.shutdown().await;
}
