//! Every tool on real interpreters and compilers: AgenticSeek's interpreter cases (reference
//! §5.2) adapted to exit-status success, plus the cases seek fixes.

use std::path::Path;

use seek::config::{Origin, Sourced, ToolConfig};
use seek::protocol::{Block, ToolTags, parse};
use seek::tool_kind::ToolKind;
use seek::tools::Bash;
use seek::tools::{Compiled, FileFinder, Python, Tool, ToolContext, ToolOutcome, execute_block};

fn settings(tag: &'static str, timeout_secs: Option<u64>) -> ToolConfig {
    let kind = ToolKind::from_tag(tag).expect("a built-in tool's tag");
    let mut s = ToolConfig::defaults(kind);
    if let Some(secs) = timeout_secs {
        s.timeout_secs = Some(Sourced::new(secs, Origin::Default));
    }
    s
}

fn tool(tag: &'static str, timeout_secs: Option<u64>) -> Box<dyn Tool> {
    let s = settings(tag, timeout_secs);
    match tag {
        "bash" => Box::new(Bash::new(s)),
        "python" => Box::new(Python::new(s)),
        "c" => Box::new(Compiled::c(s)),
        "go" => Box::new(Compiled::go(s)),
        "java" => Box::new(Compiled::java(s)),
        _ => Box::new(FileFinder::new(s)),
    }
}

fn block(tag: &str, code: &str) -> Block {
    let text = format!("```{tag}\n{code}\n```\n");
    let mut parsed = parse(
        &text,
        &ToolTags::new([tag.split(':').next().unwrap_or(tag)]),
    );
    parsed.blocks.remove(0)
}

async fn run_in(dir: &Path, tag: &'static str, code: &str) -> ToolOutcome {
    run_with(dir, tool(tag, None).as_ref(), &block(tag, code), &[]).await
}

async fn run_with(dir: &Path, tool: &dyn Tool, block: &Block, saved: &[&str]) -> ToolOutcome {
    let mut ctx = ToolContext::new(dir);
    ctx.saved_this_reply = saved.iter().map(|s| (*s).to_owned()).collect();
    let mut streamed = String::new();
    let outcome = execute_block(tool, block, &ctx, &mut |chunk: &str| {
        streamed.push_str(chunk)
    })
    .await;
    let compiled = matches!(tool.kind(), ToolKind::C | ToolKind::Go | ToolKind::Java);
    assert_streamed_output_is_the_result(&streamed, &outcome, compiled);
    outcome
}

/// What a tool streamed is what its result reports: the result's output is the stream (for a
/// compiled language, the end of it: the compiler's own output streams first), or, when it was
/// cut in the middle, its head is in the stream and its tail ends it. A tool that refused before
/// running anything streamed nothing.
fn assert_streamed_output_is_the_result(streamed: &str, outcome: &ToolOutcome, compiled: bool) {
    if streamed.is_empty() {
        assert!(
            outcome.output.is_empty() || outcome.ending.is_none(),
            "a process printed {:?}, which was never streamed",
            outcome.output
        );
        return;
    }
    match cut_in_the_middle(&outcome.output) {
        Some((head, tail)) => {
            // The head gets a line ending if it had none.
            let head = head.strip_suffix('\n').unwrap_or(head);
            assert!(
                streamed.contains(head),
                "the head {head:?} was not streamed"
            );
            assert!(
                streamed.ends_with(tail),
                "the tail {tail:?} does not end the stream"
            );
        }
        None if compiled => assert!(
            streamed.ends_with(&outcome.output),
            "streamed {streamed:?}, but the result says {:?}",
            outcome.output
        ),
        None => assert_eq!(streamed, outcome.output, "streamed, and the result"),
    }
}

/// The head and tail of output cut in the middle (`[… N bytes of output omitted …]`).
fn cut_in_the_middle(output: &str) -> Option<(&str, &str)> {
    const END: &str = " bytes of output omitted …]\n";
    let start = output.find("[… ")?;
    let end = start + output[start..].find(END)? + END.len();
    Some((&output[..start], &output[end..]))
}

fn work_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

// §5.2 bash

#[tokio::test]
async fn bash_multiline_block_preserves_newlines() {
    let dir = work_dir();
    let out = run_in(dir.path(), "bash", "echo first\necho second").await;
    assert!(out.success);
    assert_eq!(out.output, "first\nsecond\n");
    assert_eq!(
        out.feedback,
        "[success] Execution success, code output:\nfirst\nsecond\n"
    );
}

#[tokio::test]
async fn bash_shebang_block_still_executes() {
    let dir = work_dir();
    let out = run_in(dir.path(), "bash", "#!/usr/bin/env bash\necho shebang_ok").await;
    assert_eq!(out.output, "shebang_ok\n");
}

#[tokio::test]
async fn bash_commands_run_in_work_dir() {
    let dir = work_dir();
    std::fs::write(dir.path().join("marker_file.txt"), "").expect("marker");
    let out = run_in(dir.path(), "bash", "ls").await;
    assert!(out.output.contains("marker_file.txt"));
}

#[tokio::test]
async fn bash_timeout_is_a_failure() {
    // AgenticSeek reported a timed-out bash command as a success.
    let dir = work_dir();
    let out = run_with(
        dir.path(),
        tool("bash", Some(1)).as_ref(),
        &block("bash", "echo before\nsleep 5"),
        &[],
    )
    .await;
    assert!(!out.success);
    assert!(out.timed_out());
    assert!(
        out.feedback
            .starts_with("[failure] Error in execution:\ntimed out after 1 s\nbefore\n"),
        "{}",
        out.feedback
    );
}

#[tokio::test]
async fn bash_failing_command_reports_its_exit_code() {
    let dir = work_dir();
    let out = run_in(dir.path(), "bash", "exit 3").await;
    assert!(!out.success);
    assert_eq!(out.exit_code(), Some(3));
    assert_eq!(
        out.feedback,
        "[failure] Error in execution:\nexit code 3\n(no output)\n"
    );
}

#[tokio::test]
async fn bash_is_real_bash() {
    let dir = work_dir();
    let out = run_in(
        dir.path(),
        "bash",
        "if [[ -n \"$BASH_VERSION\" ]]; then echo bash; fi",
    )
    .await;
    assert!(out.success, "{}", out.feedback);
    assert_eq!(out.output, "bash\n");
}

#[tokio::test]
async fn words_in_output_do_not_decide_success() {
    let dir = work_dir();
    let out = run_in(
        dir.path(),
        "bash",
        "echo \"file not found\"; echo 'Permission denied'",
    )
    .await;
    assert!(out.success);
    let out = run_in(
        dir.path(),
        "python",
        "print('Expected value 3')\nprint('Traceback: none')",
    )
    .await;
    assert!(out.success, "{}", out.feedback);
}

#[tokio::test]
async fn echo_good_is_not_skipped() {
    // AgenticSeek silently skipped any block with a word starting with "go" or "python".
    let dir = work_dir();
    let out = run_in(dir.path(), "bash", "echo good; echo python3").await;
    assert_eq!(out.output, "good\npython3\n");
}

#[tokio::test]
async fn reading_stdin_returns_at_once() {
    // `read` itself is refused as interactive (tests/cli/interactive.rs); a program reading the
    // block's stdin finds it empty and closed.
    let dir = work_dir();
    let out = run_in(dir.path(), "bash", "cat && echo no-input").await;
    assert!(out.success);
    assert_eq!(out.output, "no-input\n");
}

#[tokio::test]
async fn a_block_larger_than_an_argument_runs() {
    let dir = work_dir();
    let script: String =
        (0..40_000).map(|i| format!("x{i}=1\n")).collect::<String>() + "echo big-ok\n";
    assert!(script.len() > 200 * 1024);
    let out = run_in(dir.path(), "bash", &script).await;
    assert!(out.success, "{}", out.feedback);
    assert_eq!(out.output, "big-ok\n");
    let code: String = (0..20_000)
        .map(|i| format!("x{i} = {i}\n"))
        .collect::<String>()
        + "print(x19999)\nprint(__name__)\n";
    let out = run_in(dir.path(), "python", &code).await;
    assert!(out.success, "{}", out.feedback);
    assert_eq!(out.output, "19999\n__main__\n");
}

#[tokio::test]
async fn binary_output_does_not_crash() {
    let dir = work_dir();
    let out = run_in(dir.path(), "bash", r"printf '\x00\xff\xfe\x80end'").await;
    assert!(out.success);
    assert!(out.output.ends_with("end"));
    assert!(out.output.contains('\u{fffd}'));
}

// §5.2 python

#[tokio::test]
async fn python_output_has_no_stray_none() {
    let dir = work_dir();
    let out = run_in(dir.path(), "python", "print(\"hello\")").await;
    assert_eq!(out.output, "hello\n");
}

#[tokio::test]
async fn python_exception_reports_failure() {
    let dir = work_dir();
    let out = run_in(dir.path(), "python", "raise ValueError(\"boom\")").await;
    assert!(!out.success);
    assert!(
        out.feedback
            .starts_with("[failure] Error in execution:\nexit code 1\n"),
        "{}",
        out.feedback
    );
    assert!(
        out.feedback.contains("Traceback") && out.feedback.contains("ValueError: boom"),
        "{}",
        out.feedback
    );
}

#[tokio::test]
async fn python_timeout_kills_an_infinite_loop() {
    let dir = work_dir();
    let out = run_with(
        dir.path(),
        tool("python", Some(1)).as_ref(),
        &block("python", "while True:\n    pass"),
        &[],
    )
    .await;
    assert!(!out.success);
    assert!(out.feedback.contains("timed out after 1 s"));
}

#[tokio::test]
async fn python_code_runs_in_work_dir_and_imports_from_it() {
    let dir = work_dir();
    let real = std::fs::canonicalize(dir.path()).expect("canonical");
    let out = run_in(
        dir.path(),
        "python",
        "import os; print(os.path.realpath(os.getcwd()))",
    )
    .await;
    assert_eq!(out.output.trim(), real.display().to_string());
    std::fs::write(dir.path().join("helper.py"), "VALUE = 42\n").expect("module");
    let out = run_in(dir.path(), "python", "import helper; print(helper.VALUE)").await;
    assert_eq!(out.output, "42\n", "{}", out.feedback);
}

#[tokio::test]
async fn python_stderr_of_a_successful_run_is_kept() {
    // AgenticSeek dropped it.
    let dir = work_dir();
    let out = run_in(
        dir.path(),
        "python",
        "import sys\nprint('out')\nprint('warn', file=sys.stderr)",
    )
    .await;
    assert!(out.success);
    assert_eq!(out.output, "out\nwarn\n");
}

#[tokio::test]
async fn python_interactive_code_is_refused_with_an_actionable_message() {
    let dir = work_dir();
    for (code, feature) in [
        ("import curses\n\ncurses.wrapper(lambda s: None)", "curses"),
        ("from curses import wrapper", "curses"),
        ("name = input(\"your name: \")\nprint(name)", "input()"),
    ] {
        let out = run_in(dir.path(), "python", code).await;
        assert!(!out.success);
        assert!(
            out.feedback.contains("terminal") && out.feedback.contains(feature),
            "{}",
            out.feedback
        );
        assert!(!out.feedback.contains("Traceback"));
        assert_eq!(out.ending, None, "nothing ran");
    }
    let code = "class Reader:\n    def input(self, value):\n        return value\nprint(Reader().input(\"ok\"))";
    let out = run_in(dir.path(), "python", code).await;
    assert_eq!(out.output, "ok\n");
}

// compiled languages

#[tokio::test]
async fn c_compiles_runs_in_the_work_dir_and_links_libm() {
    let dir = work_dir();
    std::fs::write(dir.path().join("input.txt"), "from the work dir\n").expect("input");
    let code = "#include <stdio.h>\n#include <math.h>\nint main(void) {\n  char line[64];\n  FILE *f = fopen(\"input.txt\", \"r\");\n  if (!f) return 2;\n  fgets(line, sizeof line, f);\n  printf(\"%s%.1f\\n\", line, sqrt(16.0));\n  return 0;\n}";
    let out = run_in(dir.path(), "c", code).await;
    assert!(out.success, "{}", out.feedback);
    assert_eq!(out.output, "from the work dir\n4.0\n");
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("ls").count(),
        1,
        "no build files in the work dir"
    );
}

#[tokio::test]
async fn c_compile_errors_are_failures_with_the_compiler_message() {
    let dir = work_dir();
    let out = run_in(
        dir.path(),
        "c",
        "int main(void) { return undefined_thing; }",
    )
    .await;
    assert!(!out.success);
    assert!(
        out.feedback.contains("compilation failed (exit code 1)"),
        "{}",
        out.feedback
    );
    assert!(out.feedback.contains("undefined_thing"), "{}", out.feedback);
}

#[tokio::test]
async fn go_compiles_and_runs_in_the_work_dir() {
    let dir = work_dir();
    let code = "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\twd, _ := os.Getwd()\n\tfmt.Println(\"go ok\", wd)\n}";
    let mut settings = settings("go", None);
    settings.compile_timeout_secs = Some(Sourced::new(600, Origin::Default));
    let out = run_with(dir.path(), &Compiled::go(settings), &block("go", code), &[]).await;
    assert!(out.success, "{}", out.feedback);
    let real = std::fs::canonicalize(dir.path()).expect("canonical");
    assert_eq!(out.output, format!("go ok {}\n", real.display()));
    let out = run_in(
        dir.path(),
        "go",
        "package main\n\nfunc main() {\n\tfmt.Println(\"no import\")\n}",
    )
    .await;
    assert!(!out.success);
    assert!(
        out.feedback.contains("compilation failed") && out.feedback.contains("undefined: fmt"),
        "{}",
        out.feedback
    );
}

#[tokio::test]
async fn java_runs_a_public_class_of_any_name_in_the_work_dir() {
    let dir = work_dir();
    std::fs::write(dir.path().join("data.txt"), "java reads this\n").expect("data");
    let code = "import java.nio.file.*;\n\npublic class Hello {\n    public static void main(String[] args) throws Exception {\n        System.out.print(Files.readString(Path.of(\"data.txt\")));\n    }\n}";
    let out = run_in(dir.path(), "java", code).await;
    assert!(out.success, "{}", out.feedback);
    assert_eq!(out.output, "java reads this\n");
    let out = run_in(
        dir.path(),
        "java",
        "public class Broken { void f() { int x = \"s\"; } }",
    )
    .await;
    assert!(!out.success);
    assert!(
        out.feedback.contains("compilation failed") && out.feedback.contains("incompatible types"),
        "{}",
        out.feedback
    );
}

#[tokio::test]
async fn a_missing_compiler_names_the_package_to_install() {
    let dir = work_dir();
    let mut settings = settings("go", None);
    settings.command = Some(Sourced::new("seek-missing-go".into(), Origin::Default));
    let out = run_with(
        dir.path(),
        &Compiled::go(settings),
        &block("go", "package main"),
        &[],
    )
    .await;
    assert!(!out.success);
    assert!(
        out.feedback.contains("`seek-missing-go` is not installed")
            && out.feedback.contains("apt-get install golang-go"),
        "{}",
        out.feedback
    );
}

// saving

#[tokio::test]
async fn a_block_with_a_path_is_saved_after_it_ran() {
    let dir = work_dir();
    let out = run_with(
        dir.path(),
        tool("python", None).as_ref(),
        &block("python:pkg/hello.py", "print('hi')"),
        &[],
    )
    .await;
    assert!(out.success);
    assert!(
        out.feedback.ends_with("(saved to pkg/hello.py)"),
        "{}",
        out.feedback
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("pkg/hello.py")).expect("saved"),
        "print('hi')\n"
    );
}

#[tokio::test]
async fn a_failed_block_is_not_saved() {
    let dir = work_dir();
    let out = run_with(
        dir.path(),
        tool("python", None).as_ref(),
        &block("python:bad.py", "raise SystemExit(2)"),
        &[],
    )
    .await;
    assert!(!out.success);
    assert!(!dir.path().join("bad.py").exists());
}

#[tokio::test]
async fn escaping_save_paths_are_refused() {
    let dir = work_dir();
    let outside = work_dir();
    let escape = format!("python:{}/evil.py", outside.path().display());
    for tag in [escape.as_str(), "python:../evil.py"] {
        let out = run_with(
            dir.path(),
            tool("python", None).as_ref(),
            &block(tag, "print(1)"),
            &[],
        )
        .await;
        assert!(!out.success, "{tag}");
        assert!(
            out.feedback.contains("the code ran, but was not saved"),
            "{}",
            out.feedback
        );
    }
    assert_eq!(std::fs::read_dir(outside.path()).expect("ls").count(), 0);
}

#[tokio::test]
async fn bash_rerun_of_a_saved_file_is_skipped_explicitly() {
    let dir = work_dir();
    let out = run_with(
        dir.path(),
        tool("bash", None).as_ref(),
        &block("bash", "python3 hello.py"),
        &["hello.py"],
    )
    .await;
    assert!(out.success);
    assert_eq!(out.ending, None, "nothing ran");
    assert!(
        out.feedback.contains("skipped: `python3 hello.py`")
            && out.feedback.contains("allow_rerun"),
        "{}",
        out.feedback
    );
    let mut settings = settings("bash", None);
    settings.allow_rerun = Some(Sourced::new(true, Origin::Default));
    std::fs::write(dir.path().join("hello.py"), "print('again')\n").expect("file");
    let out = run_with(
        dir.path(),
        &Bash::new(settings),
        &block("bash", "python3 hello.py"),
        &["hello.py"],
    )
    .await;
    assert_eq!(out.output, "again\n");
}

#[tokio::test]
async fn an_unclosed_block_is_not_run() {
    let dir = work_dir();
    let parsed = parse("```bash\ntouch made-it\n", &ToolTags::new(["bash"]));
    let out = run_with(
        dir.path(),
        tool("bash", None).as_ref(),
        &parsed.blocks[0],
        &[],
    )
    .await;
    assert!(!out.success);
    assert!(out.feedback.contains("was not closed"));
    assert!(!dir.path().join("made-it").exists());
}

// file_finder

#[tokio::test]
async fn file_finder_finds_and_reads() {
    let dir = work_dir();
    std::fs::create_dir_all(dir.path().join("deep/er")).expect("dirs");
    std::fs::create_dir_all(dir.path().join(".git")).expect("git");
    std::fs::write(
        dir.path().join("deep/er/notes.org"),
        "Error: this text must not fail the read\n",
    )
    .expect("notes");
    std::fs::write(dir.path().join("notes.org.bak"), "old").expect("bak");
    std::fs::write(dir.path().join(".git/notes.org"), "hidden").expect("git file");
    for name in ["x.old", "y.avif", "main.asm", "lib.a"] {
        std::fs::write(dir.path().join(name), "x").expect("file");
    }

    let out = run_in(dir.path(), "file_finder", "name=notes.org").await;
    assert!(out.success, "{}", out.feedback);
    let lines: Vec<&str> = out.output.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.output);
    assert!(
        lines[0].starts_with("File: notes.org, found at") && lines[0].contains("deep/er/notes.org"),
        "exact name first"
    );
    assert!(lines[1].contains("notes.org.bak"));

    let out = run_in(dir.path(), "file_finder", "action=read\nname=notes.org").await;
    assert!(out.success, "{}", out.feedback);
    assert!(
        out.output
            .contains("Error: this text must not fail the read")
    );

    let out = run_with(
        dir.path(),
        tool("file_finder", None).as_ref(),
        &block("file_finder:read", "notes.org"),
        &[],
    )
    .await;
    assert!(
        out.success && out.output.contains("Content of"),
        "{}",
        out.output
    );

    for name in ["x.old", "y.avif", "main.asm", "lib.a"] {
        let out = run_in(dir.path(), "file_finder", &format!("name={name}")).await;
        assert!(
            out.success,
            "{name} is found (AgenticSeek excluded it): {}",
            out.feedback
        );
    }
}

#[tokio::test]
async fn file_finder_reports_every_name_and_missing_ones() {
    let dir = work_dir();
    std::fs::write(dir.path().join("a.txt"), "a").expect("a");
    let out = run_in(dir.path(), "file_finder", "name=nothing-here\nname=a.txt").await;
    assert!(!out.success);
    assert!(out.output.contains("File: nothing-here - not found"));
    assert!(
        out.output.contains("File: a.txt, found at"),
        "results accumulate: {}",
        out.output
    );
}

#[tokio::test]
async fn file_finder_caps_reads_and_spots_binaries() {
    let dir = work_dir();
    std::fs::write(dir.path().join("big.txt"), "line\n".repeat(100_000)).expect("big");
    std::fs::write(dir.path().join("blob.bin"), [0u8, 1, 2, 255, 0, 7]).expect("blob");
    let out = run_in(dir.path(), "file_finder", "action=read\nname=big.txt").await;
    assert!(out.success);
    assert!(
        out.output
            .contains("[truncated: showing the first 65536 of 500000 bytes]"),
        "{}",
        &out.output[out.output.len() - 200..]
    );
    assert!(out.output.len() < 70_000);
    let out = run_in(dir.path(), "file_finder", "action=read\nname=blob.bin").await;
    assert!(!out.success);
    assert!(
        out.output.contains("binary file (6 bytes); not shown"),
        "{}",
        out.output
    );
}

#[tokio::test]
async fn file_finder_never_leaves_the_work_dir() {
    let dir = work_dir();
    let outside = work_dir();
    std::fs::write(outside.path().join("secret.txt"), "top secret").expect("secret");
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("secret.txt"),
    )
    .expect("link");
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linked-dir")).expect("dir link");
    let out = run_in(dir.path(), "file_finder", "action=read\nname=secret.txt").await;
    assert!(!out.success);
    assert!(
        out.output.contains("is a symbolic link to")
            && out.output.contains("Not read: it is a symbolic link"),
        "{}",
        out.output
    );
    assert!(!out.output.contains("top secret"));
    assert!(
        !out.output.contains("linked-dir"),
        "a linked folder is not searched: {}",
        out.output
    );
}
