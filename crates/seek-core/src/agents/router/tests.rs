//! The router's unit tests: typical prompts per agent in several languages, the fallbacks
//! (unsure, very short), reasons, determinism.

use super::*;
use crate::agents::{Runs, spec};

fn assert_label(agent: AgentName, prompts: &[&str]) {
    for prompt in prompts {
        let got = classify(prompt);
        assert_eq!(got.agent, agent, "{prompt:?}: {got:?}");
    }
}

#[test]
fn casual_prompts() {
    assert_label(
        AgentName::Casual,
        &[
            "hello!",
            "thank you very much",
            "what is the capital of Peru?",
            "explain what recursion is",
            "merci",
            "¿quién pintó la Mona Lisa?",
            "你好吗",
            "ありがとうございます",
        ],
    );
}

#[test]
fn coder_prompts() {
    assert_label(
        AgentName::Coder,
        &[
            "write a python script that prints the primes below 100",
            "fix the failing test in parser.rs",
            "install requests with pip",
            "run the tests and fix them",
            "écris un script bash qui compte les lignes",
            "schreibe ein Programm, das Zahlen sortiert",
            "写一个排序的Python脚本",
        ],
    );
}

#[test]
fn file_prompts() {
    assert_label(
        AgentName::File,
        &[
            "list the files in my downloads folder",
            "rename notes.txt to old-notes.txt",
            "find all the pdf files in this directory",
            "how much disk space does this folder use",
            "déplace les fichiers pdf dans le dossier factures",
            "busca todos los archivos pdf",
            "このフォルダのファイルを一覧表示してください",
        ],
    );
}

#[test]
fn web_prompts() {
    assert_label(
        AgentName::Web,
        &[
            "search the web for the latest news on rust",
            "what's the weather in Berlin today",
            "what is the price of bitcoin today",
            "quel temps fait-il à Paris ?",
            "busca en internet noticias de hoy",
            "今天的新闻",
        ],
    );
}

#[test]
fn planner_prompts() {
    assert_label(
        AgentName::Planner,
        &[
            "search the web for the latest go release, then write a script that installs it",
            "research the best static site generators and write a report file",
            "build an app that manages recipes with a database and a web page",
            "cherche les prix en ligne puis écris un script qui les compare",
        ],
    );
}

#[test]
fn routing_is_deterministic() {
    for prompt in [
        "hi",
        "list the files",
        "write a report on the web then a script",
        "",
    ] {
        assert_eq!(route(prompt), route(prompt));
        assert_eq!(classify(prompt), classify(prompt));
    }
}

#[test]
fn very_short_prompts_go_to_casual() {
    for prompt in [
        "hi", "thanks", "ok", "hey!", "bonjour", "hola", "danke", "你好", "", "?", "hmm",
    ] {
        let routed = route(prompt);
        assert_eq!(routed.agent, AgentName::Casual, "{prompt:?}: {routed:?}");
    }
}

#[test]
fn web_prompts_go_to_the_web_agent() {
    let prompt = "search the web for the latest news on rust";
    let classification = classify(prompt);
    assert_eq!(classification.agent, AgentName::Web);
    let routed = route(prompt);
    assert_eq!(spec(AgentName::Web).runs, Runs::Web);
    assert_eq!(routed.agent, AgentName::Web);
    assert_eq!(routed.confidence, classification.confidence);
}

#[test]
fn a_web_task_without_a_search_engine_goes_to_the_coder_unless_it_names_a_page() {
    let prompt = "search the web for the latest news on rust";
    let routed = super::unless_web_cannot_search(route(prompt), false, prompt);
    assert_eq!(routed.agent, AgentName::Coder);
    assert!(routed.reason.contains("searxng_url"), "{}", routed.reason);
    let kept = super::unless_web_cannot_search(route(prompt), true, prompt);
    assert_eq!(kept.agent, AgentName::Web);
    let named = "search the web page https://example.org for the latest news";
    let routed = super::unless_web_cannot_search(route(named), false, named);
    assert_ne!(
        routed.reason,
        "web, but no search engine is configured ([web] searxng_url): coder"
    );
    let coder = route("write a python script that sorts a list");
    assert_eq!(
        super::unless_web_cannot_search(coder.clone(), false, "x"),
        coder
    );
}

#[test]
fn an_unsure_prompt_goes_to_the_coder_and_says_how_unsure() {
    // Headlines in German: web words the training set lacks, so no label stands out.
    let prompt = "suche die aktuellen Schlagzeilen";
    let classification = classify(prompt);
    assert!(
        classification.confidence < UNSURE_BELOW,
        "{classification:?}"
    );
    let routed = route(prompt);
    assert_eq!(routed.agent, AgentName::Coder);
    let expected = format!(
        "unsure ({} {:.2}): coder",
        classification.agent, classification.confidence
    );
    assert_eq!(routed.reason, expected);
}

#[test]
fn reasons_name_the_words_that_decided() {
    let routed = route("list the files in this folder");
    assert_eq!(routed.agent, AgentName::File);
    assert!(routed.reason.starts_with("words: "), "{routed:?}");
    assert!(
        routed.reason.contains("files") || routed.reason.contains("folder"),
        "{routed:?}"
    );

    let routed = route("find the news on the web, then write a script that saves them");
    assert_eq!(routed.agent, AgentName::Planner);
    assert!(routed.reason.starts_with("several steps: "), "{routed:?}");
    assert!(routed.reason.len() < 60, "{routed:?}");
}

#[test]
fn scores_are_probabilities_in_label_order() {
    let classification = classify("rename the photos");
    let labels: Vec<AgentName> = classification.scores.iter().map(|s| s.0).collect();
    assert_eq!(labels, data::LABELS);
    let sum: f64 = classification.scores.iter().map(|s| s.1).sum();
    assert!((sum - 1.0).abs() < 1e-9);
    let top = classification
        .scores
        .iter()
        .map(|s| s.1)
        .fold(0.0, f64::max);
    assert_eq!(top, classification.confidence);
}

#[test]
fn hostile_prompts_do_not_panic_and_reasons_hold_no_control_characters() {
    let long = "write ".repeat(10_000);
    let prompts = [
        "\u{1b}]0;pwned\u{7}list the \u{1b}[2Jfiles",
        "\0\0\0",
        "\u{202e}search the web",
        long.as_str(),
        "ééééé",
    ];
    for prompt in prompts {
        let routed = route(prompt);
        assert!(routed.confidence.is_finite());
        assert!(!routed.reason.chars().any(char::is_control), "{routed:?}");
        assert!(routed.reason.chars().count() < 80, "{routed:?}");
    }
}

#[test]
fn training_on_another_set_uses_it() {
    let set = "casual\tbanana\nfile\tcherry\n";
    assert_eq!(train_and_classify(set, "banana"), Ok(AgentName::Casual));
    assert_eq!(train_and_classify(set, "cherry"), Ok(AgentName::File));
    assert!(train_and_classify("nonsense", "x").is_err());
    assert_eq!(warm_up(), Ok(()));
}
