//! The router's accuracy on the held-apart set (`assets/router/heldout.tsv`, written apart from
//! the training set): printed per agent and overall, and failing below the goal (90 % overall,
//! 75 % for any agent). Also checks the two sets share no prompt, and the time per prompt.
//!
//! Run with `cargo test --test core router_accuracy:: -- --nocapture` to see the table.

use std::collections::BTreeSet;

use seek::agents::router::data::{self, Example, LABELS};
use seek::agents::router::{self, UNSURE_BELOW};

const OVERALL_GOAL: f64 = 0.90;
const PER_AGENT_GOAL: f64 = 0.75;

fn set(name: &str) -> Vec<Example> {
    let path = format!("{}/assets/router/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    data::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn heldout_accuracy_meets_the_goal() {
    let heldout = set("heldout.tsv");
    assert!(
        heldout.len() >= 150,
        "only {} held-apart prompts",
        heldout.len()
    );
    router::warm_up().expect("the training set parses");

    let mut right = [0usize; LABELS.len()];
    let mut total = [0usize; LABELS.len()];
    let mut unsure_right = 0;
    let mut unsure_wrong = 0;
    let mut misses = Vec::new();
    for example in &heldout {
        let label = LABELS.iter().position(|&a| a == example.agent).unwrap();
        let got = router::classify(&example.prompt);
        total[label] += 1;
        let correct = got.agent == example.agent;
        if correct {
            right[label] += 1;
        } else {
            misses.push(format!(
                "  {} -> {} {:.2}: {}",
                example.agent, got.agent, got.confidence, example.prompt
            ));
        }
        if got.confidence < UNSURE_BELOW {
            if correct {
                unsure_right += 1;
            } else {
                unsure_wrong += 1;
            }
        }
    }

    println!("router accuracy on {} held-apart prompts:", heldout.len());
    let mut failing = Vec::new();
    for (i, agent) in LABELS.iter().enumerate() {
        let accuracy = right[i] as f64 / total[i] as f64;
        println!(
            "  {agent:<8} {:>3}/{:<3} {:5.1} %",
            right[i],
            total[i],
            accuracy * 100.0
        );
        if accuracy < PER_AGENT_GOAL {
            failing.push(format!("{agent} {:.1} %", accuracy * 100.0));
        }
    }
    let overall = right.iter().sum::<usize>() as f64 / heldout.len() as f64;
    println!("  overall  {:5.1} %", overall * 100.0);
    println!(
        "  below the unsure threshold {UNSURE_BELOW}: {unsure_wrong} wrong, {unsure_right} right"
    );
    println!("misses:\n{}", misses.join("\n"));

    assert!(
        overall >= OVERALL_GOAL,
        "overall {:.1} % < {:.0} %",
        overall * 100.0,
        OVERALL_GOAL * 100.0
    );
    assert!(failing.is_empty(), "below {PER_AGENT_GOAL}: {failing:?}");
}

#[test]
fn no_prompt_is_in_both_sets() {
    let normal = |e: &Example| e.prompt.to_lowercase();
    let train: BTreeSet<String> = set("train.tsv").iter().map(normal).collect();
    assert!(train.len() >= 600, "only {} training prompts", train.len());
    let shared: Vec<String> = set("heldout.tsv")
        .iter()
        .map(normal)
        .filter(|p| train.contains(p))
        .collect();
    assert!(shared.is_empty(), "in both sets: {shared:?}");
}

// Time per prompt and training time are measured in benches/router.rs (speed is never asserted
// in a test: a loaded machine would make it fail for nothing).

#[test]
fn training_on_the_shipped_set_gives_a_working_classifier() {
    let text = include_str!("../../assets/router/train.tsv");
    let label = router::train_and_classify(text, "list the files in this folder");
    assert_eq!(label, Ok(seek::wire::AgentName::File));
}
