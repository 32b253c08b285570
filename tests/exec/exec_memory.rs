//! A block that prints a gigabyte finishes with bounded memory and truncated output. Its test
//! runs in a process of its own (`run_alone!`) so the process's peak memory belongs to it alone.

use std::time::Duration;

use crate::support;

use seek::exec::{RunRequest, run};
use tokio_util::sync::CancellationToken;

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[tokio::test]
async fn a_gigabyte_of_output_keeps_memory_bounded() {
    // Alone: the peak measured below must not include other tests' (see `run_alone!`).
    if support::run_alone!("a_gigabyte_of_output_keeps_memory_bounded", &[]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let before = peak_rss_kib();
    let request = RunRequest::new("bash", dir.path())
        .arg("-c")
        .arg("head -c 1073741824 /dev/zero | tr '\\0' 'x'; echo; echo the-end")
        .timeout(Duration::from_secs(600));
    let mut streamed: u64 = 0;
    let result = run(&request, &CancellationToken::new(), |chunk| {
        streamed += chunk.len() as u64
    })
    .await
    .expect("runs");
    assert!(result.success(), "{:?}", result.ending);
    assert_eq!(result.bytes_seen, (1 << 30) + 9);
    assert_eq!(streamed, result.bytes_seen, "every byte was streamed");
    assert!(result.truncated);
    assert!(result.output.len() <= 64 * 1024 + 100);
    assert!(result.output.ends_with("the-end\n"));
    let grown_mib = (peak_rss_kib() - before) / 1024;
    assert!(grown_mib < 32, "peak memory grew by {grown_mib} MiB");
}
