//! The planner in the terminal UI, end to end: the real binary in a pseudo-terminal against the
//! fake model server, read through a vt100 screen. `--agent planner` runs a two-step plan; the
//! plan pane ticks both steps, each step's own section shows its block, and only the task's own
//! end reads "done".

use crate::support;

use crate::fake_model;
use crate::pty;

use fake_model::{FakeModel, Reply};
use pty::{Tui, keys};
use support::Sandbox;

/// A planner reply as AgenticSeek's planner writes it: a heading per step, then the ```json
/// plan. Each step: (agent, id, need as JSON, task).
fn plan_reply(steps: &[(&str, &str, &str, &str)]) -> String {
    let headings: Vec<String> = steps
        .iter()
        .map(|(_, id, _, task)| format!("## Task {id}: {task}"))
        .collect();
    let items: Vec<String> = steps
        .iter()
        .map(|(agent, id, need, task)| {
            format!(r#"{{"agent": "{agent}", "id": "{id}", "need": {need}, "task": "{task}"}}"#)
        })
        .collect();
    format!(
        "{}\n\n```json\n{{\"plan\": [\n{}\n]}}\n```\n",
        headings.join("\n"),
        items.join(",\n")
    )
}

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

/// The plan pane's row of step `id`: `✓ 1  coder    write one.txt`.
fn step_row<'a>(screen: &'a str, id: &str, task: &str) -> Option<&'a str> {
    screen.lines().find(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        words.get(1) == Some(&id) && words.get(2) == Some(&"coder") && line.contains(task)
    })
}

#[test]
fn a_two_step_plan_ticks_both_steps_and_shows_each_steps_section() {
    let sb = Sandbox::new();
    // Python blocks: the coder is done after a python block that succeeds (a bash block's
    // output would be read by another round).
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("coder", "1", "[]", "write one.txt"),
            ("coder", "2", r#"["1"]"#, "print one.txt"),
        ])),
        Reply::text(format!(
            "Writing it.\n{}\n",
            fence("python", "open('one.txt', 'w').write('first step')")
        )),
        Reply::text(format!(
            "Printing it.\n{}\n",
            fence("python", "print(open('one.txt').read())")
        )),
    ]);
    let mut args = sb.model_args(&server.url());
    args.extend(["--agent".into(), "planner".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut tui = Tui::start(&sb, &args, 100, 40);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("write one.txt, then print it");
    tui.send(keys::ENTER);
    let screen = tui.wait_for("the task's end with both steps ticked", |s| {
        s.contains("✓ done")
            && step_row(s, "1", "write one.txt").is_some_and(|r| r.contains('✓'))
            && step_row(s, "2", "print one.txt").is_some_and(|r| r.contains('✓'))
    });
    assert!(screen.contains("plan · 2/2 done"), "{screen}");
    for header in [
        "✓ step 1 · coder: write one.txt",
        "✓ step 2 · coder: print one.txt",
    ] {
        assert!(screen.contains(header), "{header}: {screen}");
    }
    // Step 2's python block ran as its own pane, with its own output, not step 1's.
    assert!(screen.contains("first step"), "{screen}");
    assert_eq!(
        screen.matches("✓ python · exit 0").count(),
        2,
        "a pane per step: {screen}"
    );
    assert_eq!(
        screen.matches(" you ").count(),
        1,
        "a step's start is no prompt: {screen}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("work").join("one.txt"))
            .ok()
            .as_deref(),
        Some("first step")
    );
    tui.send(keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
}
