//! `parse_plan` against AgenticSeek's planner parsing cases, its `test` provider's canned plan,
//! every tolerated mistake, the errors fed back to the model, and generated input (no panic).

use proptest::prelude::*;

use super::{PlanError, parse_plan};
use crate::wire::AgentName;

fn ids(plan: &super::ParsedPlan) -> Vec<&str> {
    plan.steps.iter().map(|s| s.id.as_str()).collect()
}

fn needs(plan: &super::ParsedPlan) -> Vec<Vec<&str>> {
    plan.steps
        .iter()
        .map(|s| s.need.iter().map(String::as_str).collect())
        .collect()
}

fn fenced(json: &str) -> String {
    format!("```json\n{json}\n```")
}

fn invalid(reply: &str) -> String {
    match parse_plan(reply, 1) {
        Err(PlanError::Invalid(text)) => text,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

// AgenticSeek's `test_planner_agent_parsing.py`.

#[test]
fn agenticseek_valid_json() {
    let reply = format!(
        "## Task 1: Search info\n{}",
        fenced(r#"{"plan": [{"agent": "web", "id": "1", "task": "Search info", "need": []}]}"#)
    );
    let plan = parse_plan(&reply, 1).expect("plan");
    assert_eq!(plan.steps.len(), 1);
    assert_eq!(plan.steps[0].agent, AgentName::Web);
    assert_eq!(plan.steps[0].title.as_deref(), Some("Task 1: Search info"));
    assert!(plan.notes.is_empty(), "{:?}", plan.notes);
}

#[test]
fn agenticseek_malformed_json_is_a_syntax_error() {
    let reply = fenced(r#"{"plan": [{"agent": "web", "id": "1" "task": "missing comma"}]}"#);
    assert!(matches!(parse_plan(&reply, 1), Err(PlanError::BadJson(_))));
}

#[test]
fn agenticseek_truncated_json_is_a_syntax_error() {
    let reply = fenced(r#"{"plan": [{"agent": "web", "id": "1", "task": "Search"#);
    assert!(matches!(parse_plan(&reply, 1), Err(PlanError::BadJson(_))));
    // Cut off with no closing fence at all, as a reply cut by max_tokens is.
    let cut = "```json\n{\"plan\": [{\"agent\": \"web\", \"id\": \"1\", \"task\": \"Search";
    assert!(matches!(parse_plan(cut, 1), Err(PlanError::BadJson(_))));
}

#[test]
fn agenticseek_no_blocks_is_no_plan() {
    assert_eq!(parse_plan("", 1), Err(PlanError::NoPlan));
    assert_eq!(
        parse_plan("I will do it step by step.", 1),
        Err(PlanError::NoPlan)
    );
}

#[test]
fn agenticseek_invalid_agent_is_named_with_the_valid_ones() {
    let text = invalid(&fenced(
        r#"{"plan": [{"agent": "unknown_agent", "id": "1", "task": "x", "need": []}]}"#,
    ));
    assert!(text.contains("\"unknown_agent\""), "{text}");
    for agent in ["coder", "file", "web", "casual"] {
        assert!(text.contains(agent), "{text}");
    }
}

#[test]
fn agenticseek_multiple_tasks_in_order() {
    let plan = parse_plan(
        &fenced(
            r#"{"plan": [{"agent": "web", "id": "1", "task": "Find the API", "need": []},
                         {"agent": "coder", "id": "2", "task": "Use it", "need": ["1"]}]}"#,
        ),
        1,
    )
    .expect("plan");
    assert_eq!(ids(&plan), ["1", "2"]);
    assert_eq!(plan.steps[1].agent, AgentName::Coder);
    assert_eq!(needs(&plan), [vec![], vec!["1"]]);
}

/// AgenticSeek's `test` provider's reply, exactly (its `need: null`, which crashes AgenticSeek).
const AGENTICSEEK_CANNED: &str = "\n\n\n```json\n{\n  \"plan\": [\n    {\n      \"agent\": \"Web\",\n      \"id\": \"1\",\n      \"need\": null,\n      \"task\": \"Conduct a comprehensive web search to identify at least five AI startups located in Osaka. Use reliable sources and websites such as Crunchbase, TechCrunch, or local Japanese business directories. Capture the company names, their websites, areas of expertise, and any other relevant details.\"\n    },\n    {\n      \"agent\": \"Web\",\n      \"id\": \"2\",\n      \"need\": null,\n      \"task\": \"Perform a similar search to find at least five AI startups in Tokyo. Again, use trusted sources like Crunchbase, TechCrunch, or Japanese business news websites. Gather the same details as for Osaka: company names, websites, areas of focus, and additional information.\"\n    },\n    {\n      \"agent\": \"File\",\n      \"id\": \"3\",\n      \"need\": [\"1\", \"2\"],\n      \"task\": \"Create a new text file named research_japan.txt in the user's home directory. Organize the data collected from both searches into this file, ensuring it is well-structured and formatted for readability. Include headers for Osaka and Tokyo sections, followed by the details of each startup found.\"\n    }\n  ]\n}\n```\n\n        ";

#[test]
fn agenticseek_canned_plan_with_null_needs() {
    let plan = parse_plan(AGENTICSEEK_CANNED, 1).expect("plan");
    let agents: Vec<_> = plan.steps.iter().map(|s| s.agent).collect();
    assert_eq!(agents, [AgentName::Web, AgentName::Web, AgentName::File]);
    assert_eq!(needs(&plan), [vec![], vec![], vec!["1", "2"]]);
    assert!(plan.steps[2].task.starts_with("Create a new text file"));
    assert!(plan.notes.is_empty(), "{:?}", plan.notes);
}

// Where the plan is.

#[test]
fn the_fence_tag_in_any_case_and_json5_are_read_with_prose_around() {
    for tag in ["json", "JSON", "Json", "json5", "jsonc"] {
        let reply = format!(
            "Sure! Here is my plan.\n```{tag}\n{{\"plan\": [{{\"agent\": \"coder\", \"id\": \"1\", \"need\": [], \"task\": \"t\"}}]}}\n```\nLet me know."
        );
        assert_eq!(parse_plan(&reply, 1).expect(tag).steps.len(), 1, "{tag}");
    }
}

#[test]
fn bare_json_and_an_untagged_fence_holding_a_plan_are_read() {
    let bare = r#"{"plan": [{"agent": "casual", "id": "1", "need": [], "task": "say hi"}]}"#;
    assert_eq!(parse_plan(bare, 1).expect("bare").steps.len(), 1);
    let in_prose = format!("I {{think}} this works: {bare} and that is all.");
    assert_eq!(parse_plan(&in_prose, 1).expect("in prose").steps.len(), 1);
    let untagged = format!("```\n{bare}\n```");
    assert_eq!(parse_plan(&untagged, 1).expect("untagged").steps.len(), 1);
}

#[test]
fn the_first_block_holding_a_plan_wins_over_other_json() {
    let reply = format!(
        "Data:\n{}\nPlan:\n{}",
        fenced(r#"{"city": "Osaka"}"#),
        fenced(r#"{"plan": [{"agent": "file", "id": "1", "need": [], "task": "list"}]}"#)
    );
    let plan = parse_plan(&reply, 1).expect("plan");
    assert_eq!(plan.steps[0].agent, AgentName::File);
}

#[test]
fn headings_become_titles_only_when_their_count_matches() {
    let json = r#"{"plan": [{"agent": "web", "id": "1", "need": [], "task": "a"},
                            {"agent": "coder", "id": "2", "need": ["1"], "task": "b"}]}"#;
    let reply = format!("## Task 1: Find it\n## Task 2: Build it\n{}", fenced(json));
    let plan = parse_plan(&reply, 1).expect("plan");
    assert_eq!(plan.steps[0].title.as_deref(), Some("Task 1: Find it"));
    assert_eq!(plan.steps[1].title.as_deref(), Some("Task 2: Build it"));
    let reply = format!("## Task 1: Find it\n{}", fenced(json));
    let plan = parse_plan(&reply, 1).expect("plan");
    assert!(plan.steps.iter().all(|s| s.title.is_none()));
    let reply = format!("1. Find it\n2. Build it\n{}", fenced(json));
    let plan = parse_plan(&reply, 1).expect("plan");
    assert_eq!(plan.steps[1].title.as_deref(), Some("2. Build it"));
}

// The shapes of need.

#[test]
fn need_in_every_shape() {
    let json = r#"{"plan": [
        {"agent": "web", "id": "1", "task": "a"},
        {"agent": "web", "id": "2", "need": null, "task": "b"},
        {"agent": "web", "id": "3", "need": "1", "task": "c"},
        {"agent": "web", "id": "4", "need": "1,2", "task": "d"},
        {"agent": "web", "id": "5", "need": "none", "task": "e"},
        {"agent": "web", "id": "6", "need": "", "task": "f"},
        {"agent": "web", "id": "7", "need": 3, "task": "g"},
        {"agent": "web", "id": "8", "need": [1, "2", " 3 "], "task": "h"},
        {"agent": "web", "id": "9", "need": "step 1 and task 2", "task": "i"},
        {"agent": "web", "id": "10", "need": ["1", "1"], "task": "j"}
    ]}"#;
    let plan = parse_plan(&fenced(json), 1).expect("plan");
    assert_eq!(
        needs(&plan),
        [
            vec![],
            vec![],
            vec!["1"],
            vec!["1", "2"],
            vec![],
            vec![],
            vec!["3"],
            vec!["1", "2", "3"],
            vec!["1", "2"],
            vec!["1"],
        ]
    );
    assert!(plan.notes.is_empty(), "{:?}", plan.notes);
}

#[test]
fn needs_of_no_earlier_step_itself_or_a_later_one_are_dropped_with_notes() {
    let json = r#"{"plan": [
        {"agent": "web", "id": "1", "need": ["1"], "task": "a"},
        {"agent": "coder", "id": "2", "need": ["3", "9", "1"], "task": "b"},
        {"agent": "file", "id": "3", "need": [{"x": 1}], "task": "c"}
    ]}"#;
    let plan = parse_plan(&fenced(json), 1).expect("plan");
    assert_eq!(needs(&plan), [vec![], vec!["1"], vec![]]);
    let notes = plan.notes.join("\n");
    assert!(notes.contains("step 1 needed itself"), "{notes}");
    assert!(
        notes.contains("step 2 needed a later step (\"3\")"),
        "{notes}"
    );
    assert!(notes.contains("\"9\", which is no earlier step"), "{notes}");
    assert!(
        notes.contains("step 3: a need that is not an id"),
        "{notes}"
    );
}

// Ids.

#[test]
fn ids_as_numbers_out_of_order_or_duplicated_are_renumbered_and_needs_follow() {
    let json = r#"{"plan": [
        {"agent": "web", "id": 10, "need": [], "task": "a"},
        {"agent": "web", "id": "3", "need": [], "task": "b"},
        {"agent": "coder", "id": "3", "need": ["10", "3"], "task": "c"},
        {"agent": "file", "id": "7", "need": ["3"], "task": "d"}
    ]}"#;
    let plan = parse_plan(&fenced(json), 1).expect("plan");
    assert_eq!(ids(&plan), ["1", "2", "3", "4"]);
    // The duplicated "3" means the first step that had it (now 2).
    assert_eq!(needs(&plan), [vec![], vec![], vec!["1", "2"], vec!["2"]]);
    let notes = plan.notes.join("\n");
    assert!(notes.contains("ids renumbered 1..4"), "{notes}");
    assert!(notes.contains("\"10\", \"3\", \"3\", \"7\""), "{notes}");
    assert!(
        notes.contains("id \"3\" was given to more than one step"),
        "{notes}"
    );
}

#[test]
fn ids_and_needs_written_as_step_names_meet() {
    let json = r##"{"plan": [{"agent": "web", "id": "step1", "need": [], "task": "a"},
                            {"agent": "web", "id": "Task 2", "need": ["step 1"], "task": "b"},
                            {"agent": "web", "id": "#3", "need": "task2, step1", "task": "c"}]}"##;
    let plan = parse_plan(&fenced(json), 1).expect("plan");
    assert_eq!(needs(&plan), [vec![], vec!["1"], vec!["2", "1"]]);
    assert!(plan.notes.is_empty(), "{:?}", plan.notes);
}

#[test]
fn numeric_ids_in_order_need_no_note_and_missing_ids_are_numbered() {
    let json = r#"{"plan": [{"agent": "web", "id": 1, "need": [], "task": "a"},
                            {"agent": "web", "id": 2.0, "need": [1], "task": "b"}]}"#;
    let plan = parse_plan(&fenced(json), 1).expect("plan");
    assert!(plan.notes.is_empty(), "{:?}", plan.notes);
    assert_eq!(needs(&plan), [vec![], vec!["1"]]);
    let json = r#"{"plan": [{"agent": "web", "task": "a"}, {"agent": "web", "task": "b"}]}"#;
    let plan = parse_plan(&fenced(json), 1).expect("plan");
    assert_eq!(ids(&plan), ["1", "2"]);
    assert!(plan.notes[0].contains("none, none"), "{:?}", plan.notes);
}

#[test]
fn a_replan_numbers_from_first_id_and_keeps_needs_of_done_steps() {
    let json = r#"{"plan": [{"agent": "coder", "id": "3", "need": ["1", "2"], "task": "again"},
                            {"agent": "casual", "id": "4", "need": ["3"], "task": "report"}]}"#;
    let plan = parse_plan(&fenced(json), 3).expect("plan");
    assert_eq!(ids(&plan), ["3", "4"]);
    assert_eq!(needs(&plan), [vec!["1", "2"], vec!["3"]]);
    assert!(plan.notes.is_empty(), "{:?}", plan.notes);
    // A replan numbered from 1 is moved after the done steps.
    let json = r#"{"plan": [{"agent": "coder", "id": "1", "need": [], "task": "again"},
                            {"agent": "casual", "id": "2", "need": ["1"], "task": "report"}]}"#;
    let plan = parse_plan(&fenced(json), 3).expect("plan");
    assert_eq!(ids(&plan), ["3", "4"]);
    assert_eq!(needs(&plan), [vec![], vec!["3"]]);
}

// Agents.

#[test]
fn agent_names_in_any_case_and_aliases_are_read() {
    for (name, agent) in [
        ("Coder", AgentName::Coder),
        ("FILE", AgentName::File),
        ("files", AgentName::File),
        ("code", AgentName::Coder),
        ("talk", AgentName::Casual),
        (" Web ", AgentName::Web),
    ] {
        let json = format!(r#"{{"plan": [{{"agent": "{name}", "id": "1", "task": "t"}}]}}"#);
        assert_eq!(
            parse_plan(&fenced(&json), 1).expect(name).steps[0].agent,
            agent
        );
    }
}

#[test]
fn auto_and_planner_cannot_do_a_step() {
    for name in ["auto", "Planner", "planification"] {
        let json = format!(r#"{{"plan": [{{"agent": "{name}", "id": "1", "task": "t"}}]}}"#);
        let text = invalid(&fenced(&json));
        assert!(text.contains("cannot do a step"), "{text}");
    }
    let text = invalid(&fenced(r#"{"plan": [{"id": "1", "task": "t"}]}"#));
    assert!(text.contains("step 1 has no agent"), "{text}");
}

// Syntax small models get wrong.

#[test]
fn trailing_commas_comments_single_and_smart_quotes_are_tolerated() {
    let reply = "```json\n{\n  // the plan\n  'plan': [\n    {'agent': 'coder', 'id': '1', 'need': [], 'task': 'print \"hi\" // twice',}, /* done */\n  ],\n}\n```";
    let plan = parse_plan(reply, 1).expect("plan");
    assert_eq!(plan.steps[0].task, "print \"hi\" // twice");
    let smart =
        "```json\n{“plan”: [{“agent”: “casual”, “id”: “1”, “need”: [], “task”: “greet”}]}\n```";
    assert_eq!(parse_plan(smart, 1).expect("smart").steps[0].task, "greet");
}

#[test]
fn a_top_level_array_and_other_keys_in_any_case_are_plans() {
    let step = r#"{"agent": "file", "id": "1", "need": [], "task": "t"}"#;
    for json in [
        format!("[{step}]"),
        format!(r#"{{"Plan": [{step}]}}"#),
        format!(r#"{{"PLAN": [{step}]}}"#),
        format!(r#"{{"steps": [{step}]}}"#),
        format!(r#"{{"tasks": [{step}]}}"#),
        format!(r#"{{"plan": {{"steps": [{step}]}}}}"#),
    ] {
        assert_eq!(
            parse_plan(&fenced(&json), 1).expect(&json).steps.len(),
            1,
            "{json}"
        );
    }
}

#[test]
fn field_names_in_any_case_and_needs_are_read() {
    let json = r#"{"plan": [{"Agent": "web", "ID": "1", "Task": "a"},
                            {"AGENT": "coder", "id": "2", "needs": ["1"], "TASK": "b"}]}"#;
    let plan = parse_plan(&fenced(json), 1).expect("plan");
    assert_eq!(needs(&plan), [vec![], vec!["1"]]);
}

// Errors the model is told.

#[test]
fn an_empty_plan_a_missing_task_and_too_many_steps_say_what_is_wrong() {
    assert_eq!(
        parse_plan(&fenced(r#"{"plan": []}"#), 1),
        Err(PlanError::Empty)
    );
    assert!(PlanError::Empty.to_string().contains("at least one step"));
    let text = invalid(&fenced(
        r#"{"plan": [{"agent": "web", "id": "1", "task": "  "}]}"#,
    ));
    assert!(text.contains("step 1 has no task"), "{text}");
    let text = invalid(&fenced(r#"{"plan": [{"agent": "web", "id": "1"}]}"#));
    assert!(text.contains("has no task"), "{text}");
    let many: Vec<String> = (1..=13)
        .map(|n| format!(r#"{{"agent": "web", "id": "{n}", "task": "t{n}"}}"#))
        .collect();
    let text = invalid(&fenced(&format!(r#"{{"plan": [{}]}}"#, many.join(","))));
    assert!(text.contains("13 steps") && text.contains("12"), "{text}");
    let text = invalid(&fenced(r#"{"plan": ["just do it"]}"#));
    assert!(text.contains("not an object"), "{text}");
}

#[test]
fn a_long_agent_name_is_quoted_short() {
    let name = "x".repeat(10_000);
    let json = format!(r#"{{"plan": [{{"agent": "{name}", "id": "1", "task": "t"}}]}}"#);
    let text = invalid(&fenced(&json));
    assert!(text.len() < 300, "{}", text.len());
}

// Robustness.

const PIECES: &[&str] = &[
    "```json\n",
    "```\n",
    "```JSON5\n",
    "{",
    "}",
    "[",
    "]",
    "\"plan\"",
    "'plan'",
    "“plan”",
    ":",
    ",",
    "\"",
    "'",
    "“",
    "”",
    "‘",
    "’",
    "//",
    "/*",
    "*/",
    "\\",
    "\n",
    " ",
    "\"agent\"",
    "\"coder\"",
    "\"web\"",
    "\"need\"",
    "null",
    "None",
    "1",
    "\"1\"",
    "-3",
    "1e999",
    "\"task\"",
    "\"id\"",
    "## Task 1: x\n",
    "2. y\n",
    "é",
    "\u{0}",
    "\t",
    "true",
    "steps",
    "[{",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn no_input_panics(text in "\\PC{0,300}", first_id in 0usize..20) {
        let _ = parse_plan(&text, first_id);
    }

    #[test]
    fn no_plan_like_input_panics(
        pieces in proptest::collection::vec(proptest::sample::select(PIECES), 0..80),
        first_id in 0usize..20,
    ) {
        let text: String = pieces.concat();
        if let Ok(plan) = parse_plan(&text, first_id) {
            // Whatever parsed keeps the plan's promises.
            prop_assert!(!plan.steps.is_empty() && plan.steps.len() <= crate::agents::planner::MAX_STEPS);
            for (n, step) in plan.steps.iter().enumerate() {
                prop_assert_eq!(&step.id, &(first_id + n).to_string());
                prop_assert!(!matches!(step.agent, AgentName::Auto | AgentName::Planner));
                prop_assert!(!step.task.trim().is_empty());
                for need in &step.need {
                    let need: usize = need.parse().map_err(|_| TestCaseError::fail("need not a number"))?;
                    prop_assert!(need < first_id + n);
                }
            }
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!(
        "```json\n{}{}\n```",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(parse_plan(&deep, 1).is_err());
    let deep_objects = format!(
        "{}\"plan\": 1{}",
        "{\"a\":".repeat(50_000),
        "}".repeat(50_000)
    );
    assert!(parse_plan(&deep_objects, 1).is_err());
}

#[test]
#[ignore = "a measurement, run by hand"]
fn measure_parse_time() {
    let typical = format!(
        "## Task 1: a\n## Task 2: b\n## Task 3: c\n{}",
        fenced(
            r#"{"plan": [{"agent": "web", "id": "1", "need": [], "task": "Find a free weather API that needs no key."},
            {"agent": "coder", "id": "2", "need": ["1"], "task": "Write weather.py that prints the weather."},
            {"agent": "casual", "id": "3", "need": ["1", "2"], "task": "Explain how to run it."}]}"#
        )
    );
    let prose = format!(
        "{} no plan here {}",
        "{ ".repeat(50),
        "word ' ".repeat(150_000)
    );
    for (name, text) in [
        ("typical", typical.as_str()),
        ("1 MB of prose with braces", prose.as_str()),
    ] {
        let runs = if text.len() > 10_000 { 5 } else { 2000 };
        let start = std::time::Instant::now();
        for _ in 0..runs {
            let _ = std::hint::black_box(parse_plan(text, 1));
        }
        eprintln!("{name}: {:?} per parse", start.elapsed() / runs);
    }
}
