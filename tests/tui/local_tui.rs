//! The built-in engine in the terminal UI, in a real pseudo-terminal: `/model` refuses a name
//! it cannot run and lists the catalog; a `.gguf` file named with `/model` is loaded off the UI
//! thread at the next task (the status line says so) and answers; Esc stops a reply.
//!
//! A model that cannot be fetched (a loopback mirror that has nothing) leaves the one in use
//! selected. The first test needs the real model file (see tests/local/local_engine.rs); without it
//! the test says so and passes. The second needs none.

use crate::file_server;
use crate::pty;
use crate::support;

use pty::{Tui, keys};
use support::Sandbox;

#[test]
fn model_names_are_checked_and_a_file_is_loaded_at_the_next_task() {
    let file = support::real_model();
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

/// Issue 39: after `/model qwen2.5-coder-1.5b` failed to download, every later task failed the
/// same way. The download now comes before the switch: when it fails, the model in use stays
/// selected, the error says what to do, and the status line blames no server (there is none).
/// The picker says what choosing a model costs. Needs no model file: nothing is generated.
#[test]
fn a_model_that_cannot_be_fetched_leaves_the_previous_one_selected() {
    let server = file_server::FileServer::start();
    let sb = Sandbox::new();
    sb.write_config(&format!(
        "[local]\nmirror = {:?}\noffline = true\n",
        server.url("nothing-here")
    ));
    let cache = sb.path("cache");
    let mut tui = Tui::start_with_env(
        &sb,
        &["--agent", "casual"],
        120,
        30,
        &[("SEEK_CACHE_DIR", &cache)],
    );
    tui.wait_for_text("smollm2-135m @ local");

    tui.type_text("/model qwen2.5-coder-1.5b");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("still using smollm2-135m");
    assert!(
        screen.contains("could not download qwen2.5-coder-1.5b"),
        "{screen}"
    );
    assert!(screen.contains("mirror = "), "what to do next: {screen}");
    assert!(screen.contains("smollm2-135m @ local"), "{screen}");
    assert!(!screen.contains("qwen2.5-coder-1.5b @ local"), "{screen}");
    assert!(!screen.contains("model server error"), "{screen}");
    assert!(screen.contains("ready"), "{screen}");

    // The picker shows each model's download size before choosing.
    tui.type_text("/model");
    tui.send(keys::ENTER);
    tui.wait_for_text("1.1 GB download · not downloaded");
    tui.send(keys::ESC);
    tui.wait_for("the picker to close", |s| !s.contains("1.1 GB download"));
    tui.send(keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
    assert!(
        !cache
            .join("models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
            .exists(),
        "nothing in place"
    );
}
