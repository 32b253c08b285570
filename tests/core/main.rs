//! The agent itself, in-process and through the binary: its loop and runtime, the first hour of
//! use, final answers and small models, the planner and its plan schema, routing (and the
//! router's accuracy), the model client, the block protocol, tools, saves and the safety
//! prompts, with the attacks on the planner and on the user's own words.
//!
//! One test binary for these modules (each was a binary of its own); the helpers in
//! `tests/support/` are declared once here. Run one module with
//! `cargo test --test core router_accuracy::`, one test with
//! `cargo test --test core -- --exact router_accuracy::<name>`.

#[path = "../support/fake_model.rs"]
mod fake_model;
#[path = "../support/procs.rs"]
mod procs;
#[path = "../support/pty.rs"]
mod pty;
#[path = "../support/runtime.rs"]
mod runtime;
#[path = "../support/serve.rs"]
mod serve;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/web_site.rs"]
mod web_site;

mod agent_first_hour;
mod agent_loop;
mod agent_runtime;
mod attack_planner;
mod attack_planner_cli;
mod attack_planner_runtime;
mod attack_user_words;
mod final_answer;
mod llm;
mod plan_schema;
mod planner;
mod protocol_conformance;
mod protocol_properties;
mod router_accuracy;
mod routing;
mod safety;
mod saves;
mod small_model;
mod tools;
