//! The built-in engine in the terminal UI, in a real pseudo-terminal: `/model` refuses a name
//! it cannot run and lists the catalog; a `.gguf` file named with `/model` is loaded off the UI
//! thread at the next task (the status line says so) and answers; Esc stops a reply.
//!
//! Needs the real model file (see tests/local_engine.rs); without it the test says so and
//! passes.

#[path = "support/pty.rs"]
mod pty;
mod support;

use pty::{Tui, keys};
use support::Sandbox;

#[test]
fn model_names_are_checked_and_a_file_is_loaded_at_the_next_task() {
    let Some(file) = support::real_model() else {
        return;
    };
    let sb = Sandbox::new();
    // Nothing configured: the built-in engine, and a models dir of the sandbox's own.
    let cache = sb.path("cache");
    let mut tui = Tui::start_with_env(
        &sb,
        &["--agent", "casual", "--approval", "never"],
        120,
        30,
        &[("SEEK_CACHE_DIR", &cache)],
    );
    tui.wait_for_text("smollm2-135m @ local");
    tui.wait_for_text("no model server is configured");

    tui.type_text("/model gpt-17");
    tui.send(keys::ENTER);
    tui.wait_for_text("no model named \"gpt-17\"");
    tui.wait_for_text("qwen2.5-coder-1.5b");

    tui.type_text(&format!("/model {}", file.display()));
    tui.send(keys::ENTER);
    tui.wait_for_text("@ local");
    tui.type_text("Say hello in one short sentence.");
    tui.send(keys::ENTER);
    // Loading is reported, then the reply streams and the task ends.
    tui.wait_for("the task to end", |s| {
        s.contains("✓ done") || s.contains("✗")
    });
    let screen = tui.screen();
    assert!(!screen.contains("panicked"), "{screen}");

    // Esc stops a reply that is streaming.
    tui.type_text("Write a very long story about a cat, with ten chapters.");
    tui.send(keys::ENTER);
    tui.wait_for_text("Thinking");
    tui.send(keys::ESC);
    tui.wait_for_text("■ stopped");
    tui.send(keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
    // Nothing was downloaded: the file was used where it is.
    assert!(
        !cache
            .join("models/SmolLM2-135M-Instruct.Q4_1.gguf")
            .exists()
    );
}
