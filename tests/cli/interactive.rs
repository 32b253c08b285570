//! Blocks that wait for a person, end to end through the real binary and the fake model server:
//! interactive programs refused before anything runs, refusals typed on the wire (`not_run`),
//! and the idle timeout that ends a block that prints nothing and uses no CPU.

use crate::support;

use crate::fake_model;

use std::process::Output;
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use support::{Sandbox, run_within, stderr, stdout};

/// Longer than any of these runs takes when it works; a hang fails the test instead.
const BOUND: Duration = Duration::from_secs(60);

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

/// Runs one headless `--json` task whose first reply holds `block`.
fn run_block(sb: &Sandbox, tag: &str, block: &str) -> (Output, FakeModel) {
    let server = FakeModel::start(vec![
        Reply::text(format!("Trying.\n{}\n", fence(tag, block))),
        Reply::text("Understood."),
    ]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["-p", "do it", "--json"]),
        BOUND,
    );
    (out, server)
}

/// The `block_finished` events of a `--json` run.
fn finished_blocks(out: &Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "block_finished")
        .collect()
}

fn only_block(out: &Output) -> serde_json::Value {
    let blocks = finished_blocks(out);
    assert_eq!(blocks.len(), 1, "one block: {}", stdout(out));
    blocks.into_iter().next().unwrap_or_default()
}

/// What the model was told after its first reply.
fn feedback(server: &FakeModel) -> String {
    server.chat_requests()[1].last_user_message()
}

#[test]
fn a_bash_block_running_vim_is_refused_at_once_and_nothing_runs() {
    let sb = Sandbox::new();
    let started = Instant::now();
    let (out, server) = run_block(&sb, "bash", "touch ran.txt\nvim notes.txt");
    let elapsed = started.elapsed();
    // Its only block failed or was refused: the task gave up.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let block = only_block(&out);
    assert_eq!(block["not_run"], "interactive", "{block}");
    assert_eq!(block["success"], false);
    assert_eq!(block["timed_out"], false);
    assert!(
        block["duration_ms"].as_f64().unwrap_or(f64::MAX) < 1000.0,
        "{block}"
    );
    // The whole task (seek's start, two model rounds) ends well within the block timeout.
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert!(
        !sb.path("work/ran.txt").exists(),
        "nothing of the block ran"
    );
    let work = std::fs::read_dir(sb.path("work"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(work, 0, "no swap file or anything else was left");
    let told = feedback(&server);
    assert!(
        told.contains(
            "vim is interactive and cannot run here: write the file with a ```bash block using cat <<'EOF' > notes.txt"
        ),
        "{told}"
    );
    assert!(told.starts_with("[failure]"), "{told}");
}

#[test]
fn a_pipe_into_a_pager_and_a_bare_repl_are_refused_but_lookalikes_run() {
    let sb = Sandbox::new();
    let (out, server) = run_block(&sb, "bash", "ls -la | less");
    assert_eq!(only_block(&out)["not_run"], "interactive");
    assert!(feedback(&server).contains("Drop `| less`"));

    let (out, server) = run_block(&sb, "bash", "python3");
    assert_eq!(only_block(&out)["not_run"], "interactive");
    assert!(feedback(&server).contains("python3 with no script is interactive"));

    let lookalikes = "echo vim less\nvim --version > /dev/null || true\npython3 -c 'print(6 * 7)'\nprintf 'print(1)' | python3";
    let (out, _) = run_block(&sb, "bash", lookalikes);
    let block = only_block(&out);
    assert_eq!(block["success"], true, "{block}");
    assert!(block.get("not_run").is_none(), "{block}");
    assert!(
        block["output"].as_str().unwrap_or("").contains("42"),
        "{block}"
    );
}

#[test]
fn python_input_is_typed_as_interactive_with_agenticseeks_words() {
    let sb = Sandbox::new();
    let (out, server) = run_block(&sb, "python", "name = input('name: ')\nprint(name)");
    let block = only_block(&out);
    assert_eq!(block["not_run"], "interactive", "{block}");
    assert!(
        feedback(&server).contains("input() requires an interactive terminal"),
        "{}",
        feedback(&server)
    );
}

#[test]
fn a_safe_mode_refusal_is_typed_as_safe_mode() {
    let sb = Sandbox::new();
    sb.write_config("safe_mode = true\n");
    let (out, server) = run_block(&sb, "bash", "rm -rf build");
    let block = only_block(&out);
    assert_eq!(block["not_run"], "safe_mode", "{block}");
    assert!(
        feedback(&server).contains("Unsafe command: rm -rf build. Execution aborted."),
        "{}",
        feedback(&server)
    );
}

/// A sandbox whose bash blocks are ended after a second without output or CPU use.
fn quick_idle() -> Sandbox {
    let sb = Sandbox::new();
    sb.write_config("[tools.bash]\nidle_timeout_secs = 1\n");
    sb
}

#[test]
fn a_block_waiting_without_output_or_cpu_is_ended_as_stuck() {
    let sb = quick_idle();
    for waiting in ["sleep 1000", "sleep 1000 | cat"] {
        let started = Instant::now();
        let (out, server) = run_block(&sb, "bash", waiting);
        let block = only_block(&out);
        assert_eq!(block["success"], false, "{waiting}: {block}");
        assert_eq!(block["timed_out"], true, "{waiting}: {block}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{waiting}: ended by the idle timeout, not the block timeout"
        );
        let told = feedback(&server);
        assert!(
            told.contains("no output and no CPU use for 1 s: it was probably waiting for input"),
            "{waiting}: {told}"
        );
    }
}

#[test]
fn a_block_computing_silently_or_printing_slowly_is_not_ended() {
    let sb = quick_idle();
    // Busy for three idle periods without printing anything.
    let busy = "python3 -c 'import time\nt = time.time()\nwhile time.time() - t < 3: pass\nprint(\"computed\")'";
    let (out, _) = run_block(&sb, "bash", busy);
    let block = only_block(&out);
    assert_eq!(block["success"], true, "{block}");
    assert_eq!(block["output"], "computed\n");

    // Quiet for half the idle limit at a time, five times over.
    let slow = "for i in 1 2 3 4 5; do echo $i; sleep 0.5; done";
    let (out, _) = run_block(&sb, "bash", slow);
    let block = only_block(&out);
    assert_eq!(block["success"], true, "{block}");
    assert_eq!(block["output"], "1\n2\n3\n4\n5\n");
}
