//! Attacks on the MCP support through the real binary.

use crate::support;

use std::time::Duration;

use support::{Sandbox, run_within, stderr, stdout};

const BOUND: Duration = Duration::from_secs(60);

/// `seek config` and the transport field show the url with `token=***`: the query token is a
/// credential. The start-up failure text quotes reqwest's error, which carries the url with the
/// query whole, so the token reaches `seek mcp`'s output (text and --json) — and, through the
/// same failure text, the headless stderr, the TUI, the session file and the model's feedback
/// ("server `web` is not running: …").
#[test]
fn a_url_query_token_is_not_printed_in_a_start_up_failure() {
    let sb = Sandbox::new();
    // Port 9 (discard) on loopback: connection refused.
    sb.write_config(
        r#"
[mcp_servers.web]
url = "http://alice:pw-s3cret@127.0.0.1:9/mcp?token=qtok-s3cret"
startup_timeout_secs = 5
"#,
    );
    for json in [false, true] {
        let mut cmd = sb.seek();
        cmd.arg("mcp");
        if json {
            cmd.arg("--json");
        }
        let out = run_within(&mut cmd, BOUND);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(all.contains("web"), "{all}");
        assert!(!all.contains("pw-s3cret"), "password printed: {all}");
        assert!(!all.contains("qtok-s3cret"), "query token printed: {all}");
    }
}

use crate::fake_model;

/// `api_key_env` names a variable blocks never get, whatever its name; the variable an MCP
/// server's `bearer_token_env_var` names is not treated the same: unless its name happens to
/// look like a credential's, every block the model writes (and every stdio server) inherits the
/// bearer token.
#[test]
fn the_bearer_token_variable_is_kept_from_blocks() {
    use fake_model::{FakeModel, Reply};
    let sb = Sandbox::new();
    sb.write_config(
        r#"
[mcp_servers.remote]
url = "http://127.0.0.1:9/mcp"
bearer_token_env_var = "ACME_MCP"
startup_timeout_secs = 3
"#,
    );
    let server = FakeModel::start(vec![
        Reply::text("```bash\necho \"seen=[$ACME_MCP]\"\n```\n"),
        Reply::text("done"),
    ]);
    let mut cmd = sb.seek_at(&server.url(), &["--json", "-p", "print it"]);
    cmd.env("ACME_MCP", "tok-hunter2");
    let out = run_within(&mut cmd, Duration::from_secs(120));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(all.contains("seen=["), "the block did not run: {all}");
    assert!(
        !all.contains("seen=[tok-hunter2]"),
        "the block read the bearer token: {all}"
    );
}
