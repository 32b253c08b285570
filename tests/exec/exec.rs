//! The process runner on real processes: exit status, ordering, timeouts, cancellation, process
//! trees, closed stdin, binary output.

use crate::procs;

use std::time::Duration;

use seek::exec::{Ending, ExecError, RunRequest, run};
use tokio_util::sync::CancellationToken;

fn bash(script: &str, dir: &std::path::Path) -> RunRequest {
    RunRequest::new("bash", dir)
        .arg("-c")
        .arg(script)
        .timeout(Duration::from_secs(30))
}

async fn run_collect(request: &RunRequest) -> (seek::exec::RunResult, String) {
    let mut streamed = String::new();
    let result = run(request, &CancellationToken::new(), |chunk| {
        streamed.push_str(chunk)
    })
    .await
    .expect("runs");
    (result, streamed)
}

#[tokio::test]
async fn exit_status_decides_success() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ok, _) = run_collect(&bash("echo 'file not found: none'", dir.path())).await;
    assert!(ok.success(), "a word in the output is not a failure");
    assert_eq!(ok.output, "file not found: none\n");
    let (failed, _) = run_collect(&bash("echo partial; exit 3", dir.path())).await;
    assert_eq!(failed.ending, Ending::Exited { code: 3 });
    assert_eq!(failed.failure_reason().as_deref(), Some("exit code 3"));
    assert_eq!(failed.output, "partial\n");
}

#[tokio::test]
async fn stdout_and_stderr_arrive_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (result, streamed) = run_collect(&bash(
        "echo one; echo two >&2; echo three; echo four >&2",
        dir.path(),
    ))
    .await;
    assert_eq!(result.output, "one\ntwo\nthree\nfour\n");
    assert_eq!(
        streamed, result.output,
        "streamed chunks add up to the output"
    );
}

#[tokio::test]
async fn runs_in_the_given_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = std::fs::canonicalize(dir.path()).expect("canonical");
    let (result, _) = run_collect(&bash("pwd -P", dir.path())).await;
    assert_eq!(result.output.trim(), real.display().to_string());
}

#[tokio::test]
async fn stdin_is_closed_so_read_returns_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let request =
        bash("read x; echo \"read returned $?\"", dir.path()).timeout(Duration::from_secs(60));
    let (result, _) = run_collect(&request).await;
    assert_eq!(result.ending, Ending::Exited { code: 0 }, "not timed out");
    assert_eq!(result.output, "read returned 1\n");
}

#[tokio::test]
async fn timeout_kills_the_whole_tree_and_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = "917263";
    let script = format!(
        "sleep {marker}1 & \
         (sleep {marker}2 &) ; \
         setsid sleep {marker}3 & \
         env -i setsid bash -c 'sleep {marker}4 & sleep {marker}5' & \
         nohup sleep {marker}6 >/dev/null 2>&1 & \
         echo started; sleep {marker}7"
    );
    let request = bash(&script, dir.path()).timeout(Duration::from_secs(1));
    let (result, _) = run_collect(&request).await;
    assert_eq!(result.ending, Ending::TimedOut { after_secs: 1 });
    assert_eq!(
        result.failure_reason().as_deref(),
        Some("timed out after 1 s")
    );
    assert!(result.output.contains("started"));
    let left = procs::processes_with(marker, true);
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[tokio::test]
async fn background_jobs_do_not_outlive_a_successful_block() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = "829354";
    let (result, _) = run_collect(&bash(&format!("sleep {marker} & echo done"), dir.path())).await;
    assert!(result.success());
    assert_eq!(result.output, "done\n");
    assert!(procs::processes_with(marker, true).is_empty());
}

#[tokio::test]
async fn cancellation_stops_the_block() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = "736451";
    let cancel = CancellationToken::new();
    let request = bash(&format!("echo ready; sleep {marker}"), dir.path());
    let trigger = cancel.clone();
    // Cancel as soon as the block has printed, so the test does not depend on timing.
    let result = run(&request, &cancel, move |chunk| {
        if chunk.contains("ready") {
            trigger.cancel();
        }
    })
    .await
    .expect("runs");
    assert_eq!(result.ending, Ending::Stopped);
    assert_eq!(
        result.failure_reason().as_deref(),
        Some("stopped by the user")
    );
    assert!(procs::processes_with(marker, true).is_empty());
}

#[tokio::test]
async fn a_killed_process_reports_its_signal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (result, _) = run_collect(&bash("kill -SEGV $$", dir.path())).await;
    assert_eq!(result.ending, Ending::Signaled { signal: 11 });
    assert_eq!(
        result.failure_reason().as_deref(),
        Some("killed by signal 11 (SIGSEGV)")
    );
}

#[tokio::test]
async fn binary_output_is_shown_lossily() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (result, streamed) = run_collect(&bash(r"printf 'a\xff\xfe\x00b\n'", dir.path())).await;
    assert!(result.success());
    assert_eq!(result.output, "a\u{fffd}\u{fffd}\0b\n");
    assert_eq!(streamed, result.output);
    assert_eq!(result.bytes_seen, 6);
}

#[tokio::test]
async fn large_output_is_truncated_in_the_middle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let request = bash("seq 1 200000", dir.path()).output_limit(4096);
    let (result, _) = run_collect(&request).await;
    assert!(result.success());
    assert!(result.truncated);
    assert!(result.output.starts_with("1\n2\n3\n"));
    assert!(result.output.ends_with("199999\n200000\n"));
    assert!(result.output.contains("bytes of output omitted"));
    assert!(result.output.len() < 4200);
    assert_eq!(
        result.bytes_seen,
        (1..=200_000)
            .map(|n: u32| n.to_string().len() as u64 + 1)
            .sum::<u64>()
    );
}

#[tokio::test]
async fn a_missing_program_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let request = RunRequest::new("seek-no-such-program", dir.path());
    let err = run(&request, &CancellationToken::new(), |_| {})
        .await
        .expect_err("missing");
    assert!(matches!(err, ExecError::NotFound { .. }));
    assert_eq!(
        err.to_string(),
        "`seek-no-such-program` was not found on PATH"
    );
}

#[tokio::test]
async fn a_missing_work_dir_is_an_error_not_a_crash() {
    let request = RunRequest::new("true", "/nonexistent/seek-work-dir");
    let err = run(&request, &CancellationToken::new(), |_| {})
        .await
        .expect_err("no dir");
    assert!(err.to_string().contains("/nonexistent/seek-work-dir"));
}
