//! Headless output is safe for a terminal, through the real binary and the fake model server:
//! escape sequences the model writes, a block prints or a server error carries (OSC 52 sets the
//! clipboard, OSC 2 the window title, `ESC[2J` clears the screen) never reach `seek -p`'s stdout
//! or stderr raw; `--json` carries them exactly, escaped.

use crate::support;

use crate::fake_model;

use fake_model::{FakeModel, Reply};
use support::{Sandbox, stderr, stdout};

/// What the model writes in its prose: the clipboard, the title and a screen clear.
const MODEL_ESCAPES: &str = "clip\x1b]52;c;bW9kZWw=\x07 title\x1b]2;model-title\x1b\\ clear\x1b[2J";

/// A python block printing the same three from its output, and a progress line.
const BLOCK: &str = "```python\nimport sys\nsys.stdout.write('out \\x1b]52;c;YmxvY2s=\\x07 \\x1b]2;block-title\\x1b\\\\ \\x1b[2J')\nprint('10%\\r100% done')\n```";

/// Bytes a terminal would act on: ESC, BEL, CR, and the C1 controls as UTF-8.
fn raw_controls(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect()
}

fn reply() -> Reply {
    Reply::text(format!("Before {MODEL_ESCAPES} after.\n{BLOCK}\n"))
}

#[test]
fn plain_output_shows_escape_sequences_without_obeying_them() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![reply()]);
    let out = sb
        .seek_at(&server.url(), &["-y", "-p", "show me"])
        .output()
        .expect("run seek");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(raw_controls(&out.stdout), Vec::<String>::new(), "stdout");
    assert_eq!(raw_controls(&out.stderr), Vec::<String>::new(), "stderr");
    let text = stdout(&out);
    // The text around the sequences stays, the sequences' payloads go, and the progress line's
    // carriage return shows both states instead of hiding the first.
    assert!(
        text.contains("Before clip title clear after."),
        "the model's prose: {text}"
    );
    assert!(
        !text.contains("bW9kZWw=") && !text.contains("model-title"),
        "{text}"
    );
    let (_, output) = text
        .split_once("[python ✓]\n")
        .unwrap_or_else(|| panic!("the block's result: {text}"));
    assert_eq!(output, "out   10%\n100% done\n", "the block's output");
}

#[test]
fn a_server_error_on_stderr_obeys_nothing() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::status(
        400,
        format!("bad request {MODEL_ESCAPES}"),
    )]);
    let out = sb
        .seek_at(&server.url(), &["-y", "-p", "show me"])
        .output()
        .expect("run seek");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(raw_controls(&out.stderr), Vec::<String>::new(), "stderr");
    assert_eq!(raw_controls(&out.stdout), Vec::<String>::new(), "stdout");
    let err = stderr(&out);
    assert!(err.contains("bad request clip title clear"), "{err}");
}

#[test]
fn json_output_carries_the_sequences_exactly_and_escaped() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![reply()]);
    let out = sb
        .seek_at(&server.url(), &["-y", "--json", "-p", "show me"])
        .output()
        .expect("run seek");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(raw_controls(&out.stdout), Vec::<String>::new(), "stdout");
    let text = stdout(&out);
    assert!(
        text.contains(r"\u001b]52;c;bW9kZWw=\u0007") && text.contains(r"\u001b[2J"),
        "the model's sequences, escaped: {text}"
    );
    assert!(
        text.contains(r"\u001b]52;c;YmxvY2s=\u0007") && text.contains(r"\u001b]2;block-title"),
        "the block's sequences, escaped: {text}"
    );
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    let answer = events
        .iter()
        .find(|e| e["type"] == "answer_complete")
        .and_then(|e| e["answer"].as_str())
        .unwrap_or_default();
    assert!(answer.contains(MODEL_ESCAPES), "exact: {answer:?}");
    let output = events
        .iter()
        .find(|e| e["type"] == "block_finished")
        .and_then(|e| e["output"].as_str())
        .unwrap_or_default();
    assert_eq!(
        output, "out \x1b]52;c;YmxvY2s=\x07 \x1b]2;block-title\x1b\\ \x1b[2J10%\r100% done\n",
        "exact"
    );
}
