//! MCP results through the real binary and real servers, as the model gets them back: a tool
//! whose result carries `structuredContent` beside the same text yields that content once
//! (server-everything's `get-structured-content`; server-filesystem's `read_text_file` of a
//! 21 KB file, which gives the file as text and again as `{"content": …}`), and an argument the
//! tool's schema does not list, where the schema lets others through, is sent with a note.
//!
//! The servers are the ones `.ci/run` installs: `@modelcontextprotocol/server-everything` and
//! `@modelcontextprotocol/server-filesystem` (npm, stdio). `SEEK_TEST_MCP_EVERYTHING` and
//! `SEEK_TEST_MCP_FILESYSTEM` name them when they are not on PATH.

use crate::fake_model;
use crate::support;

use std::time::Duration;

use fake_model::{FakeModel, Reply};
use support::{Sandbox, run_within, stderr};

const BOUND: Duration = Duration::from_secs(120);

fn everything() -> String {
    std::env::var("SEEK_TEST_MCP_EVERYTHING").unwrap_or_else(|_| "mcp-server-everything".into())
}

fn filesystem() -> String {
    std::env::var("SEEK_TEST_MCP_FILESYSTEM").unwrap_or_else(|_| "mcp-server-filesystem".into())
}

fn everything_server() -> String {
    format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\nstartup_timeout_secs = 60\n",
        everything()
    )
}

/// Runs `seek -p` with `config`, the model answering `block` then a closing line, and returns
/// the feedback the model got for the block (the second request's last user message).
fn feedback_of(sb: &Sandbox, config: &str, block: &str) -> String {
    sb.write_config(config);
    let server = FakeModel::start(vec![
        Reply::text(format!("Calling it.\n```mcp\n{block}\n```\n")),
        Reply::text("Done."),
    ]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["-p", "use the tool"]),
        BOUND,
    );
    let requests = server.chat_requests();
    assert_eq!(
        requests.len(),
        2,
        "the block ran and its feedback went back (exit {:?}); stderr:\n{}",
        out.status.code(),
        stderr(&out)
    );
    requests[1].last_user_message()
}

#[test]
fn server_everythings_structured_content_reaches_the_model_once() {
    let sb = Sandbox::new();
    let feedback = feedback_of(
        &sb,
        &everything_server(),
        "everything.get-structured-content\nlocation: Chicago",
    );
    assert!(feedback.starts_with("[success]"), "{feedback}");
    for key in ["\"temperature\"", "\"conditions\"", "\"humidity\""] {
        assert_eq!(feedback.matches(key).count(), 1, "{key} once: {feedback}");
    }
}

#[test]
fn a_21_kb_file_read_through_server_filesystem_is_fed_back_once() {
    let sb = Sandbox::new();
    let shared = sb.path("shared");
    std::fs::create_dir_all(&shared).expect("a dir for the server");
    // 21 KB of numbered lines: each line's text appears once in the file.
    let file: String = (0..355)
        .map(|i| format!("line {i:04}: the quick brown fox jumps over the lazy dog, {i}\n"))
        .collect();
    assert!((20_000..22_000).contains(&file.len()), "{}", file.len());
    std::fs::write(shared.join("notes.txt"), &file).expect("write the file");
    let config = format!(
        "[mcp_servers.fs]\ncommand = {:?}\nargs = [{:?}]\nstartup_timeout_secs = 60\n",
        filesystem(),
        shared.display().to_string()
    );
    let path = shared.join("notes.txt");
    let feedback = feedback_of(
        &sb,
        &config,
        &format!("fs.read_text_file\npath: {}", path.display()),
    );
    assert!(feedback.starts_with("[success]"), "{:.300}", feedback);
    // The feedback is cut to the model's share of the window (head and tail); the structure,
    // had it been appended, would be its tail.
    assert!(!feedback.contains("{\"content\""), "{feedback}");
    assert_eq!(
        feedback.matches("line 0000: the quick brown fox").count(),
        1,
        "the file's head once: {feedback}"
    );
    let last_line = file.lines().last().expect("a last line");
    assert!(
        feedback.trim_end().ends_with(last_line),
        "the file's own end closes the feedback: {} bytes of feedback for {} bytes of file",
        feedback.len(),
        file.len()
    );
}

#[test]
fn an_argument_the_schema_does_not_list_is_sent_with_a_note() {
    let sb = Sandbox::new();
    // `echo`'s schema lists `message` and says nothing of others: JSON Schema lets them through.
    let feedback = feedback_of(
        &sb,
        &everything_server(),
        "everything.echo\nmessage: hello there\nmesage: typo",
    );
    assert!(feedback.starts_with("[success]"), "{feedback}");
    assert!(
        feedback.contains("Echo: hello there"),
        "it was called: {feedback}"
    );
    // `message` is given, so no other name is suggested.
    assert!(
        feedback.contains("(note: `mesage` is not one of the tool's arguments; sent as given"),
        "{feedback}"
    );
}
