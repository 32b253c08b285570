//! An attacker's pass over `seek serve`'s one-task rule at its edges, through the real binary:
//! `/query`s that race the end of a task (each must be run, with its own answer, or refused as
//! busy — never a 5xx, never another task's answer).
//!
//! Deterministic in what it asserts: the fake model holds each first task's reply until the test
//! opens its gate, the racers are started and seen refused before it opens, and every loop is
//! bounded in count. Where the racers land around the end varies from run to run; what must hold
//! holds for every landing.

use crate::fake_model;
use crate::serve_attack;

use std::net::SocketAddr;
use std::sync::mpsc;

use fake_model::{Gate, Reply};
use serde_json::json;
use serve_attack::{Answer, BOUND, serve};

/// Rounds of "a held task ends while racers hammer `/query`".
const ROUNDS: usize = 60;
/// Clients racing the end of each task.
const RACERS: usize = 8;
/// The most requests one racer sends in a round before the test fails (each is answered at
/// once: a 429 while a task runs, or the racer's own task's answer).
const MAX_TRIES: usize = 20_000;

/// A `/query` with `body` as a local client with `headers` sends it.
fn query(addr: SocketAddr, headers: &[(String, String)], body: &serde_json::Value) -> Answer {
    let refs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    serve_attack::request(addr, "POST", "/query", &refs, body.to_string().as_bytes())
}

/// What one racer saw: every status, and the answer that was not a 429 (if any).
struct Raced {
    statuses: Vec<u16>,
    answer: Option<Answer>,
}

#[test]
fn queries_racing_the_end_of_a_task_are_run_or_busy_never_a_5xx() {
    let served = serve(vec![], &[], &[]);
    let mut statuses = Vec::new();
    for round in 0..ROUNDS {
        let gate = Gate::new();
        served.model.push(Reply::Held {
            answer: format!("held answer {round}"),
            gate: gate.clone(),
        });
        for _ in 0..RACERS {
            served.model.push(Reply::text("racer answer"));
        }
        let (first_tx, first) = mpsc::channel();
        {
            let (addr, headers) = (served.addr, served.client_headers());
            std::thread::spawn(move || {
                let _ = first_tx.send(query(
                    addr,
                    &headers,
                    &json!({"query": format!("held task {round}")}),
                ));
            });
        }
        served.model.wait_for_request();
        // Every racer is seen refused while the held task runs, then the gate opens: each
        // racer's loop spans the end of the task.
        let (refused_tx, refused) = mpsc::channel();
        let racers: Vec<_> = (0..RACERS)
            .map(|i| {
                let (addr, headers) = (served.addr, served.client_headers());
                let refused_tx = refused_tx.clone();
                std::thread::spawn(move || {
                    let body = json!({"query": format!("racer {round}.{i}")});
                    let mut raced = Raced {
                        statuses: Vec::new(),
                        answer: None,
                    };
                    for _ in 0..MAX_TRIES {
                        let answer = query(addr, &headers, &body);
                        raced.statuses.push(answer.status);
                        if raced.statuses.len() == 1 {
                            let _ = refused_tx.send(answer.clone());
                        }
                        if answer.status != 429 {
                            raced.answer = Some(answer);
                            break;
                        }
                    }
                    raced
                })
            })
            .collect();
        for _ in 0..RACERS {
            let first = refused.recv_timeout(BOUND).expect("a racer's first answer");
            assert_eq!(
                first.status, 429,
                "round {round}: a query while the held task runs is refused: {first:?}"
            );
        }
        gate.open();
        let first = first.recv_timeout(BOUND).expect("the held task's answer");
        assert_eq!(first.status, 200, "round {round}: {first:?}");
        let body = first.json();
        assert_eq!(
            body["answer"],
            format!("held answer {round}"),
            "round {round}: the held task's /query answers its own task: {body}"
        );
        assert_eq!(body["outcome"], "done", "{body}");
        for racer in racers {
            let raced = racer.join().expect("a racer");
            statuses.extend(raced.statuses.iter().copied());
            let answer = raced
                .answer
                .unwrap_or_else(|| panic!("round {round}: a racer was refused {MAX_TRIES} times"));
            assert_eq!(answer.status, 200, "round {round}: {answer:?}");
            let body = answer.json();
            assert_eq!(body["answer"], "racer answer", "round {round}: {body}");
            assert_eq!(body["done"], "true", "{body}");
            assert_eq!(body["outcome"], "done", "{body}");
        }
        assert!(!served.active(), "round {round}: nothing runs at its end");
        // The racers' requests reached the model: their arrivals are taken, so the next round's
        // wait is for its own held task.
        for _ in 0..RACERS {
            served.model.wait_for_request();
        }
    }
    assert!(
        statuses.iter().all(|s| matches!(s, 200 | 429)),
        "only run (200) or busy (429): {:?}",
        statuses
            .iter()
            .filter(|s| !matches!(s, 200 | 429))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        served.model_calls(),
        ROUNDS * (1 + RACERS),
        "every accepted query ran exactly once"
    );
    eprintln!(
        "{} queries raced the end of {} tasks",
        statuses.len(),
        ROUNDS * (1 + RACERS)
    );
}
