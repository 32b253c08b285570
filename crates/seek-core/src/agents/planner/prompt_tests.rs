//! The planner's texts: AgenticSeek's step prompt, a step's bounded result, the replan request,
//! and the planner's own prompt file.

use proptest::prelude::*;

use super::*;
use crate::wire::AgentName;

fn record(tool: &str, feedback: &str, success: bool) -> BlockRecord {
    BlockRecord {
        round: 1,
        index: 0,
        tool_type: tool.into(),
        block: "print(1)".into(),
        save_path: None,
        feedback: feedback.into(),
        success,
        exit_code: Some(i32::from(!success)),
        timed_out: false,
        stopped: false,
        skipped: false,
        duration_ms: 1.0,
        output: "raw output".into(),
        not_run: None,
    }
}

fn step(id: &str, agent: AgentName, task: &str, status: StepStatus) -> PlanStep {
    PlanStep {
        id: id.into(),
        agent,
        task: task.into(),
        need: Vec::new(),
        title: None,
        status,
    }
}

#[test]
fn the_step_prompt_has_agenticseeks_shape() {
    assert_eq!(
        step_prompt("list files", &[]),
        "You are given informations from your AI friends work:\nNo needed informations.\nYour task is:\nlist files"
    );
    let prompt = step_prompt(
        "use it",
        &[
            ("1".into(), "found X".into()),
            ("2".into(), "built Y".into()),
        ],
    );
    assert_eq!(
        prompt,
        "You are given informations from your AI friends work:\n\t- According to agent 1:\nfound X\n\n\t- According to agent 2:\nbuilt Y\n\nYour task is:\nuse it"
    );
}

#[test]
fn a_step_result_is_the_answer_the_blocks_and_the_verdict() {
    let result = step_result(
        "  Done: hello.py prints hi.  ",
        &[record("python", "[success] hi", true)],
        true,
    );
    assert_eq!(
        result,
        "Done: hello.py prints hi.\n\n[python] [success] hi\nAgent succeeded with task."
    );
    let result = step_result("", &[record("bash", "", false)], false);
    assert_eq!(
        result,
        "[bash] raw output\nAgent failed with task (Error detected)."
    );
    assert_eq!(
        step_result("", &[], false),
        "Agent failed with task (Error detected)."
    );
}

#[test]
fn a_long_result_keeps_head_and_tail_of_each_part_within_the_bound() {
    let answer = format!("ANSWER-START {} ANSWER-END", "a".repeat(20_000));
    let feedback = format!("[failure] OUT-START {} OUT-END", "é".repeat(20_000));
    let result = step_result(&answer, &[record("python", &feedback, false)], false);
    assert!(result.len() <= STEP_RESULT_BYTES, "{}", result.len());
    for kept in [
        "ANSWER-START",
        "ANSWER-END",
        "OUT-START",
        "OUT-END",
        "bytes left out",
    ] {
        assert!(result.contains(kept), "{kept} missing");
    }
    assert!(result.ends_with("Agent failed with task (Error detected)."));
}

#[test]
fn many_blocks_keep_the_last_ones_and_say_how_many_were_left_out() {
    let blocks: Vec<BlockRecord> = (0..100)
        .map(|n| {
            record(
                "bash",
                &format!("[success] block {n} {}", "x".repeat(500)),
                true,
            )
        })
        .collect();
    let result = step_result("answer", &blocks, true);
    assert!(result.len() <= STEP_RESULT_BYTES, "{}", result.len());
    assert!(result.contains("block 99"));
    assert!(!result.contains("block 0 "));
    assert!(result.contains("earlier blocks left out"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_step_result_never_passes_its_bound(
        answer in "\\PC{0,3000}",
        outputs in proptest::collection::vec("\\PC{0,2000}", 0..24),
        success: bool,
    ) {
        let blocks: Vec<BlockRecord> = outputs.iter().map(|o| record("python", o, success)).collect();
        let result = step_result(&answer, &blocks, success);
        prop_assert!(result.len() <= STEP_RESULT_BYTES, "{}", result.len());
    }
}

#[test]
fn the_replan_asks_for_the_remaining_steps_numbered_after_the_failed_one() {
    let plan = [
        step("1", AgentName::Web, "find the API", StepStatus::Done),
        step(
            "2",
            AgentName::Coder,
            "write the script",
            StepStatus::Failed,
        ),
        step("3", AgentName::Casual, "explain it", StepStatus::Pending),
    ];
    let prompt = replan_prompt_with_results(
        "a weather script",
        &plan,
        &plan[1],
        "Traceback: ModuleNotFoundError: requests",
        &[("1".into(), "\nUse https://api.example/weather\nmore".into())],
    );
    assert!(prompt.starts_with("Your goal is: a weather script\n"));
    assert!(
        prompt
            .contains("- 1 (web, done): find the API\n  result: Use https://api.example/weather\n")
    );
    assert!(prompt.contains("Step 2 (coder) failed: write the script\nIts result:\nTraceback"));
    assert!(prompt.contains("planned after it:\n- 3 (casual): explain it"));
    assert!(prompt.contains("Number the new steps from \"3\""));
    assert!(prompt.contains("```json"));
    let plain = replan_prompt("a weather script", &plan, &plan[1], "boom");
    assert!(
        plain.contains("- 1 (web, done): find the API\nStep 2"),
        "{plain}"
    );
}

#[test]
fn a_failed_last_step_says_nothing_was_left() {
    let plan = [step("1", AgentName::Coder, "do it", StepStatus::Failed)];
    let prompt = replan_prompt("goal", &plan, &plan[0], "boom");
    assert!(prompt.contains("The steps run so far:\n(none)\n"));
    assert!(prompt.contains("(none: it was the last step)"));
    assert!(prompt.contains("from \"2\""));
}

#[test]
fn the_planner_prompt_teaches_the_format_the_parser_reads() {
    let text = crate::agents::planner::SPEC.prompt.text;
    for needed in [
        "coder",
        "file",
        "web",
        "casual",
        "{work_dir}",
        "At most 12 steps",
        "## Task 1",
    ] {
        assert!(
            text.contains(needed),
            "{needed} missing from the planner prompt"
        );
    }
    // The prompt's own example is a plan the parser reads without a correction.
    let plan = crate::agents::planner::parse_plan(text, 1).expect("the example parses");
    assert_eq!(plan.steps.len(), 3);
    assert!(plan.notes.is_empty(), "{:?}", plan.notes);
    assert_eq!(plan.steps[2].need, ["1", "2"]);
    assert_eq!(
        plan.steps[0].title.as_deref(),
        Some("Task 1: Find the weather API")
    );
    assert!(
        text.len() < 2500,
        "small models read it: {} bytes",
        text.len()
    );
}
