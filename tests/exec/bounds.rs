//! What one reply and one output may cost, through the real binary and the fake model server:
//! outputs whose first line is huge still fit a small context window; hostile streams (an endless
//! line, endless tokens, keep-alives for ever, a slow drip, a cut mid-line) end with a clear error
//! and bounded memory; a reply with 100,000 blocks runs a bounded number of them.

use crate::support;

use crate::fake_model;
use crate::measure;

use std::process::Command;
use std::time::Duration;

use fake_model::{FakeModel, Reply};
use measure::Measured;
use support::Sandbox;

/// Peak resident memory the seek process may reach under any of the hostile streams below. Its
/// own baseline (runtime, HTTP client, TLS roots) is about 20 MiB in a debug build; the line
/// limit adds at most twice `stream_max_line_mib` (the buffer and the decoded line) while a
/// reply is bounded by `max_tokens`.
///
/// The number `wait4` gives is not seek's alone: `Command` spawns with `posix_spawn` (a vfork),
/// and Linux carries the spawning mm's high-water mark into the child's `ru_maxrss` at exec, so
/// the test process's own peak (its fake servers build multi-MiB replies, in parallel tests) sets
/// a floor. That floor rose past 48 MiB (65.5 MiB for a 0.03 s run that cannot reach it itself;
/// the same run outside the tests peaks at 31 MiB). Until the measure spawns through a small
/// trampoline, the bound is 96 MiB: an unbounded buffer under these streams (100,000 blocks,
/// an endless line, endless tokens) still passes it by far.
const HOSTILE_STREAM_PEAK_RSS: u64 = 96 << 20;

/// The context window the fake server reports for the long-output tests: the coder's system
/// prompt takes about 700 tokens of it, and the budget is three quarters of the window.
const SMALL_WINDOW: u64 = 1536;

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

fn seek(sb: &Sandbox, server: &FakeModel, extra: &[&str]) -> Command {
    sb.seek_at(&server.url(), extra)
}

fn messages(request: &fake_model::Logged) -> Vec<(String, String)> {
    request.json()["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// seek's own estimate (budget.rs): a third of the bytes, plus four per message.
fn estimated_tokens(request: &fake_model::Logged) -> u64 {
    messages(request)
        .iter()
        .map(|(_, c)| (c.len() as u64).div_ceil(3) + 4)
        .sum()
}

fn measured(cmd: &mut Command) -> Measured {
    let run = measure::measured(cmd);
    eprintln!(
        "exit {:?}, peak RSS {:.1} MiB, {} bytes of stdout, {:.2} s; {}",
        run.code,
        run.peak_mib(),
        run.stdout.len(),
        run.elapsed.as_secs_f64(),
        run.stderr.lines().last().unwrap_or_default()
    );
    run
}

fn assert_peak_bounded(run: &Measured) {
    assert!(
        run.peak_rss < HOSTILE_STREAM_PEAK_RSS,
        "peak RSS {:.1} MiB ≥ {} MiB",
        run.peak_mib(),
        HOSTILE_STREAM_PEAK_RSS >> 20
    );
}

#[test]
fn outputs_with_a_huge_first_line_are_shortened_to_fit_a_small_window() {
    let outputs = [
        (
            "a progress bar redrawn 3,000 times",
            "for i in $(seq 1 3000); do printf '\\rprogress %d/3000' \"$i\"; done; echo",
        ),
        (
            "minified JSON",
            "printf '{\"items\":['; for i in $(seq 1 5000); do printf '{\"id\":%d,\"name\":\"item %d\"},' \"$i\" \"$i\"; done; printf '{}]}\\n'",
        ),
        (
            "100,000 x then 20,000 lines",
            "head -c 100000 /dev/zero | tr '\\0' x; seq 1 20000",
        ),
    ];
    for (what, code) in outputs {
        let sb = Sandbox::new();
        let reply = format!("Running it.\n{}\n", fence("bash", code));
        let server = FakeModel::start(vec![Reply::text(reply.clone()), Reply::text("Done.")]);
        server.set_context_length(SMALL_WINDOW);
        let run = measured(seek(&sb, &server, &["-p", "run it", "--json"]).arg("-y"));
        assert_eq!(run.code, Some(0), "{what}: {}", run.stderr);
        let requests = server.chat_requests();
        assert_eq!(requests.len(), 2, "{what}");
        let budget = SMALL_WINDOW - SMALL_WINDOW / 4;
        let sent = messages(&requests[1]);
        assert!(
            estimated_tokens(&requests[1]) <= budget,
            "{what}: {} tokens > {budget}",
            estimated_tokens(&requests[1])
        );
        let n = sent.len();
        assert_eq!(
            sent[n - 3].1,
            "run it",
            "{what}: the task's prompt is whole"
        );
        assert_eq!(sent[n - 2].1, reply, "{what}: the reply is whole");
        let feedback = &sent[n - 1].1;
        assert!(
            feedback.starts_with("[success] Execution success, code output:\n"),
            "{what}: {feedback}"
        );
        assert!(
            feedback.contains("left out to fit the context window"),
            "{what}: the feedback says it was shortened: {feedback}"
        );
        let context_trimmed = run
            .events()
            .into_iter()
            .any(|e| e["type"] == "context_trimmed");
        assert!(context_trimmed, "{what}: the trimming is reported");
    }
}

#[test]
fn an_endless_line_is_refused_at_the_line_limit() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::EndlessLine { limit: 300 << 20 }]);
    let run = measured(&mut seek(&sb, &server, &["-p", "hi"]));
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stderr.contains("sent a line longer than 4 MiB"),
        "{}",
        run.stderr
    );
    assert_peak_bounded(&run);
    server.wait_for_hangup();
}

#[test]
fn endless_tokens_are_stopped_past_max_tokens() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::EndlessTokens { limit: 50_000_000 }]);
    let run = measured(&mut seek(&sb, &server, &["-p", "hi"]));
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stderr.contains("the reply passed max_tokens (4096)") && run.stderr.contains("stopped"),
        "{}",
        run.stderr
    );
    assert_peak_bounded(&run);
    server.wait_for_hangup();
}

#[test]
fn keep_alive_comments_do_not_hold_the_idle_timer() {
    let sb = Sandbox::new();
    sb.write_config("stream_idle_timeout_secs = 1\n");
    let server = FakeModel::start(vec![Reply::KeepAlive {
        answer: "Let me think".into(),
        every: Duration::from_millis(20),
    }]);
    let run = measured(&mut seek(&sb, &server, &["-p", "hi"]));
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stderr.contains("sent no content for 1 s"),
        "{}",
        run.stderr
    );
    assert_peak_bounded(&run);
    server.wait_for_hangup();
}

#[test]
fn a_reply_that_never_ends_meets_the_reply_deadline() {
    let sb = Sandbox::new();
    sb.write_config("stream_idle_timeout_secs = 1\nreply_timeout_secs = 2\n");
    let server = FakeModel::start(vec![Reply::Drip {
        every: Duration::from_millis(20),
    }]);
    let run = measured(&mut seek(&sb, &server, &["-p", "hi"]));
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stderr.contains("the reply took longer than 2 s"),
        "{}",
        run.stderr
    );
    assert!(
        run.elapsed < Duration::from_secs(30),
        "{:?}: the deadline held",
        run.elapsed
    );
    server.wait_for_hangup();
}

#[test]
fn a_stream_cut_mid_line_is_a_broken_connection() {
    for provider in ["llama.cpp", "ollama"] {
        let sb = Sandbox::new();
        let server = FakeModel::start(vec![Reply::CutMidLine {
            answer: "The first half".into(),
        }]);
        let mut cmd = sb.seek();
        cmd.args([
            "--provider",
            provider,
            "--base-url",
            &server.url(),
            "--model",
            "m",
            "-p",
            "hi",
        ]);
        let run = measured(&mut cmd);
        assert_eq!(run.code, Some(3), "{provider}: {}", run.stderr);
        assert!(
            run.stderr.contains("broke before the reply finished")
                && run.stderr.contains("in the middle of a line"),
            "{provider}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("cannot read"), "{provider}");
    }
}

#[test]
fn a_reply_with_100_000_blocks_runs_a_bounded_number_of_them() {
    let sb = Sandbox::new();
    // A server allowed to send this much: the bound under test is the blocks', not max_tokens'.
    sb.write_config("max_tokens = 1000000\n");
    let blocks = 100_000;
    let reply: String = (0..blocks)
        .map(|i| format!("```bash\n: {i}\n```\n"))
        .collect();
    let server = FakeModel::start(vec![Reply::text(reply), Reply::text("Done.")]);
    let run = measured(seek(&sb, &server, &["-p", "flood", "--json"]).arg("-y"));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let events = run.events();
    let finished = events
        .iter()
        .filter(|e| e["type"] == "block_finished")
        .count();
    assert_eq!(
        finished, 16,
        "only the first 16 blocks ran and were recorded"
    );
    let complete = events
        .iter()
        .find(|e| e["type"] == "answer_complete")
        .expect("answer_complete");
    assert_eq!(complete["blocks"], 16);
    let not_run = events
        .iter()
        .find(|e| e["type"] == "blocks_not_run")
        .expect("blocks_not_run");
    assert_eq!(not_run["count"], blocks - 16);
    assert_eq!(not_run["limit"], 16);
    let feedback = messages(&server.chat_requests()[1])
        .pop()
        .map(|(_, c)| c)
        .unwrap_or_default();
    assert!(
        feedback.contains("99984 more blocks") && feedback.contains("were not run"),
        "{feedback}"
    );
    assert!(
        feedback.len() < 16 * 1024,
        "the feedback is bounded: {} bytes",
        feedback.len()
    );
    assert_peak_bounded(&run);
    // The reply itself is 1.4 MB and appears in the deltas, `answer_complete`, `turn_finished`
    // and `done`; nothing more may be multiplied by the number of blocks.
    assert!(
        run.stdout.len() < 12 << 20,
        "--json wrote {} bytes",
        run.stdout.len()
    );
}
