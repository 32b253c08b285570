//! Hostile plans against the planner's parser (issue 16 attack). Each test states what a bound
//! or a tolerance promises and fails while it does not hold.

use seek::agents::planner::{MAX_STEPS, PlanError, parse_plan};

fn fenced(json: &str) -> String {
    format!("```json\n{json}\n```")
}

/// A model that writes thousands of junk ids in one step's `need` gets one note per id: the
/// notes go whole into `Event::Plan`, the session file, `--json` and `seek -p`'s stderr (one
/// line each: `headless/plan.rs` prints every note).
#[test]
fn thousands_of_junk_needs_give_a_bounded_number_of_notes() {
    let junk: Vec<String> = (0..20_000).map(|n| format!("\"x{n}\"")).collect();
    let reply = fenced(&format!(
        r#"{{"plan": [{{"agent": "coder", "id": "1", "need": [{}], "task": "t"}}]}}"#,
        junk.join(",")
    ));
    let plan = parse_plan(&reply, 1).expect("a plan");
    let bytes: usize = plan.notes.iter().map(String::len).sum();
    assert!(
        plan.notes.len() <= 32 && bytes <= 16 * 1024,
        "{} notes, {bytes} bytes",
        plan.notes.len()
    );
}

/// The same through a `need` string (`"x1 x2 x3 …"`), which `split_ids` splits on spaces.
#[test]
fn a_need_string_of_thousands_of_words_gives_a_bounded_number_of_notes() {
    let words: Vec<String> = (0..20_000).map(|n| format!("w{n}")).collect();
    let reply = fenced(&format!(
        r#"{{"plan": [{{"agent": "coder", "id": "1", "need": "{}", "task": "t"}}]}}"#,
        words.join(" ")
    ));
    let plan = parse_plan(&reply, 1).expect("a plan");
    assert!(plan.notes.len() <= 32, "{} notes", plan.notes.len());
}

/// The schema bounds a task to 1000 chars; a free-text reply (a server that refused the schema)
/// has no bound: a 12-step plan of 200 KB tasks goes whole into every step's `StepStarted`, the
/// `Plan` and `Replanned` events, every replan request (each remaining task quoted in full) and
/// the session file.
#[test]
fn a_free_text_tasks_length_is_bounded_like_the_schemas() {
    let task = "do it ".repeat(40_000);
    let reply = fenced(&format!(
        r#"{{"plan": [{{"agent": "coder", "id": "1", "need": [], "task": "{task}"}}]}}"#
    ));
    let plan = parse_plan(&reply, 1).expect("a plan");
    let chars = plan.steps[0].task.chars().count();
    assert!(chars <= 4_000, "a task of {chars} chars was kept");
}

/// An id out of f64's range (`1e400`) makes serde_json refuse the document: the model must be
/// told that (a number out of range), not that the plan has no steps.
#[test]
fn an_out_of_range_numeric_id_is_reported_as_the_syntax_error_it_is() {
    let reply = fenced(
        r#"{"plan": [{"agent": "coder", "id": 1e400, "need": [], "task": "a"},
                     {"agent": "file", "id": -1, "need": [1e400], "task": "b"}]}"#,
    );
    match parse_plan(&reply, 1) {
        Err(PlanError::BadJson(message)) => assert!(message.contains("out of range"), "{message}"),
        other => panic!("expected the syntax error, got {other:?}"),
    }
}

/// Hostile but legal inputs must never panic.
#[test]
fn deep_nesting_huge_numbers_and_controls_do_not_panic() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let _ = parse_plan(&fenced(&deep), 1);
    let deep_obj = format!("{}1{}", r#"{"plan":"#.repeat(50_000), "}".repeat(50_000));
    let _ = parse_plan(&deep_obj, 1);
    for id in [
        "18446744073709551616",
        "-0",
        "1.5",
        "\"\u{0}\"",
        "\"\\u0000\"",
        "1e-400",
    ] {
        let reply = fenced(&format!(
            r#"{{"plan": [{{"agent": "CoDeR", "id": {id}, "need": [{id}, null, {{}}, [1]], "task": "\u001b]52;c;x\u0007 hi"}}]}}"#
        ));
        let _ = parse_plan(&reply, 1);
    }
}

/// `parse_plan` is public and takes any first id; near the top of usize the renumbering
/// (`first_id + n`) overflows. Unreachable from the runner (first ids stay <= 13) -- low.
#[test]
fn a_first_id_near_usize_max_does_not_panic() {
    let reply = fenced(
        r#"{"plan": [{"agent": "coder", "id": "1", "task": "a"}, {"agent": "coder", "id": "2", "need": "1", "task": "b"}]}"#,
    );
    let _ = parse_plan(&reply, usize::MAX);
    let _ = parse_plan(&reply, usize::MAX - 1);
}

/// The cap: a plan of MAX_STEPS + 1 is refused, and the error says so.
#[test]
fn a_plan_over_the_cap_is_refused() {
    let items: Vec<String> = (1..=MAX_STEPS + 1)
        .map(|n| format!(r#"{{"agent": "coder", "id": "{n}", "task": "t{n}"}}"#))
        .collect();
    let reply = fenced(&format!(r#"{{"plan": [{}]}}"#, items.join(",")));
    assert!(matches!(parse_plan(&reply, 1), Err(PlanError::Invalid(_))));
}

/// A plan with one syntax error (a missing comma in step 2, common with small models) whose
/// step 1 has `"need": []`: the bare-JSON fallback reaches that empty `[]`, reads it as a plan
/// list of no steps, and the model is told "the plan has no steps" instead of the syntax error.
/// Its retry then fixes the wrong thing.
#[test]
fn a_syntax_error_is_reported_as_such_not_as_an_empty_plan() {
    let reply = fenced(
        r#"{"plan": [
  {"agent": "coder", "id": "1", "need": [], "task": "a"},
  {"agent": "coder", "id": "2" "need": ["1"], "task": "b"}
]}"#,
    );
    match parse_plan(&reply, 1) {
        Err(PlanError::BadJson(_)) => {}
        other => panic!("expected the JSON error, got {other:?}"),
    }
}

/// A session file cut while a plan's step ran a block (seek killed): on resume a top-level
/// task's running block is closed as interrupted (`session/load.rs::for_replay`), but a step's
/// block is nested in `Event::Step` and is not seen, so its pane is never closed with its
/// `[interrupted]` record.
#[test]
fn a_plan_cut_mid_step_closes_the_steps_running_block_on_resume() {
    use seek::session::Record;
    use seek::wire::{AgentName, Event, PlanStep, StepStatus};
    let dir = tempfile::tempdir().expect("tempdir");
    let id = "29991231-235959-abcd";
    let path = dir.path().join(format!("{id}.jsonl"));
    let step = PlanStep {
        id: "1".into(),
        agent: AgentName::Coder,
        task: "sleep".into(),
        need: Vec::new(),
        title: None,
        status: StepStatus::Pending,
    };
    let ev = |at_ms, event| Record::Event { at_ms, event };
    let records = [
        Record::Header {
            version: seek::session::VERSION,
            id: id.into(),
            created_ms: 1,
            work_dir: "/tmp".into(),
            model: "m".into(),
            agent: AgentName::Planner,
        },
        ev(
            2,
            Event::TurnStarted {
                turn: 1,
                prompt: "goal".into(),
                agent: AgentName::Planner,
            },
        ),
        ev(
            3,
            Event::Plan {
                steps: vec![step.clone()],
                notes: Vec::new(),
            },
        ),
        ev(
            4,
            Event::StepStarted {
                id: "1".into(),
                agent: AgentName::Coder,
                task: "sleep".into(),
            },
        ),
        ev(
            5,
            Event::Step {
                step: "1".into(),
                event: Box::new(Event::TurnStarted {
                    turn: 1,
                    prompt: "sleep".into(),
                    agent: AgentName::Coder,
                }),
            },
        ),
        ev(
            6,
            Event::Step {
                step: "1".into(),
                event: Box::new(Event::BlockStarted {
                    round: 1,
                    index: 0,
                    tool: "bash".into(),
                    code: "sleep 100".into(),
                    save_path: None,
                }),
            },
        ),
    ];
    let text: String = records
        .iter()
        .map(|r| format!("{}\n", serde_json::to_string(r).expect("json")))
        .collect();
    std::fs::write(&path, text).expect("write");
    let loaded = seek::session::load(&path, id).expect("load");
    let closed = loaded.events.iter().any(|(_, e)| match e {
        Event::Step { step, event } => {
            step == "1"
                && matches!(event.as_ref(), Event::BlockFinished { record } if record.stopped)
        }
        _ => false,
    });
    assert!(
        closed,
        "the step's block stays running: {:#?}",
        loaded.events
    );
}
