//! Starting Chromium: a browser whose first DevTools answer is lost is asked again rather than
//! waited on until the start bound.

use seek::config::{BrowserChoice, WebSettings};
use seek::web::UrlPolicy;
use seek::web::read::{ChromiumReader, PageReader};
use std::sync::Arc;
fn settings() -> WebSettings {
    let mut settings = WebSettings::default();
    settings.browser.value = BrowserChoice::Chromium;
    settings.timeout_secs.value = 30;
    settings
}

/// A first answer that never comes (seen about one start in ten before the control pipes were
/// placed last in the child) must not hold the start for 30 s. A stand-in that reads its first
/// command and never answers it, and answers everything after it, is started: the reader asks
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_that_swallows_its_first_command_is_asked_again() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let script = dir.path().join("chromium");
    std::fs::write(
        &script,
        r#"#!/usr/bin/env python3
import json, os
commands = os.fdopen(3, "rb", buffering=0)
answers = os.fdopen(4, "wb", buffering=0)
results = {
    "Browser.getVersion": {"product": "HeadlessChrome/999.0.1.2"},
    "Target.createTarget": {"targetId": "tab"},
    "Target.attachToTarget": {"sessionId": "session"},
    "Page.getFrameTree": {"frameTree": {"frame": {"id": "frame"}}},
}
pending, swallowed = b"", False
while True:
    chunk = commands.read(65536)
    if not chunk:
        break
    pending += chunk
    while b"\0" in pending:
        message, pending = pending.split(b"\0", 1)
        command = json.loads(message)
        if not swallowed:
            swallowed = True
            continue
        answer = {"id": command["id"], "result": results.get(command["method"], {})}
        answers.write(json.dumps(answer).encode() + b"\0")
"#,
    )
    .expect("write the stand-in");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let mut reader =
        ChromiumReader::start_with(&script, &settings(), Arc::new(UrlPolicy::new(true)), &[])
            .await
            .expect("the stand-in starts once asked again");
    assert_eq!(reader.version(), "999.0.1.2");
    reader.close().await;
}
