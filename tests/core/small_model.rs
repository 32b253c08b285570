//! What seek does for a small model, end to end: the real `seek -p --json` binary against the
//! fake model server. A model is small by `model_size` / `SEEK_MODEL_SIZE`, or under `auto` by
//! a size tag of at most 2B in its name; the sandbox's model, `fake-coder:7b`, is large, so every
//! other end-to-end test runs unchanged. Refusing code that already failed holds for every model.

use crate::support;

use crate::fake_model;

use std::process::{Command, Output};

use fake_model::{FakeModel, Reply};
use support::{Sandbox, stderr, stdout};

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

/// `seek -p --json PROMPT` at `server`, small model unless `size` says otherwise.
fn seek_json(sb: &Sandbox, server: &FakeModel, prompt: &str, size: &str) -> Command {
    let mut cmd = sb.seek_at(&server.url(), &["--json", "-p", prompt]);
    cmd.env("SEEK_MODEL_SIZE", size);
    cmd
}

/// Runs `seek_json` and checks it exited 0.
fn run_ok(sb: &Sandbox, server: &FakeModel, prompt: &str, size: &str) -> Output {
    let out = seek_json(sb, server, prompt, size)
        .output()
        .expect("run seek");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

fn events(out: &Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn of_type<'a>(events: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn a_small_models_reply_ends_where_its_block_closes() {
    let sb = Sandbox::new();
    let reply = format!(
        "Here it is.\n{}\nAnd now another one:\n{}\nI hope this helps! I hope this helps!",
        fence("bash", "echo first > first.txt"),
        fence("bash", "echo second > second.txt")
    );
    let server = FakeModel::start(vec![Reply::text(reply), Reply::text("Done: first.txt.")]);
    let out = run_ok(&sb, &server, "write first.txt", "small");
    assert!(sb.path("work/first.txt").exists());
    assert!(
        !sb.path("work/second.txt").exists(),
        "what came after the first block was never taken"
    );
    let all = events(&out);
    let complete = of_type(&all, "answer_complete");
    assert_eq!(complete[0]["finish"], "block", "{:?}", complete[0]);
    assert_eq!(complete[0]["blocks"], 1);
    // The next round's conversation holds the reply up to its block, nothing after it.
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2, "bash's output is read in another round");
    let history = requests[1].messages();
    let (role, said) = &history[history.len() - 2];
    assert_eq!(role, "assistant");
    assert_eq!(
        said,
        &format!("Here it is.\n{}\n", fence("bash", "echo first > first.txt"))
    );

    // A large model keeps its whole reply and both blocks run.
    let sb = Sandbox::new();
    let reply = format!(
        "{}\n{}\n",
        fence("bash", "echo first > first.txt"),
        fence("bash", "echo second > second.txt")
    );
    let server = FakeModel::start(vec![Reply::text(reply), Reply::text("Done.")]);
    let out = run_ok(&sb, &server, "write both", "large");
    assert!(sb.path("work/first.txt").exists() && sb.path("work/second.txt").exists());
    assert_eq!(
        of_type(&events(&out), "answer_complete")[0]["finish"],
        "stop"
    );
}

#[test]
fn code_that_already_failed_is_not_run_again_and_the_model_is_told_why() {
    let sb = Sandbox::new();
    // Each run leaves a mark, so the test sees how often the code really ran.
    let failing = fence(
        "python",
        "open('runs.txt', 'a').write('x')\nimport no_such_module_for_seek",
    );
    let server = FakeModel::start(vec![
        Reply::text(format!("Trying.\n{failing}\n")),
        Reply::text(format!("Trying again.\n{failing}\n")),
        Reply::text(format!("{}\n", fence("python", "print('fixed')"))),
    ]);
    // A large model: the rule is for every model.
    let out = run_ok(&sb, &server, "import it", "large");
    assert_eq!(
        std::fs::read_to_string(sb.path("work/runs.txt")).expect("ran once"),
        "x",
        "the repeated code did not run"
    );
    let events = events(&out);
    let finished = of_type(&events, "block_finished");
    assert_eq!(finished.len(), 3, "{finished:?}");
    assert!(finished[0]["not_run"].is_null(), "{:?}", finished[0]);
    assert_eq!(finished[1]["not_run"], "repeated", "{:?}", finished[1]);
    assert_eq!(finished[1]["success"], false);
    let told = server.chat_requests()[2].last_user_message();
    assert!(
        told.starts_with("[failure] ")
            && told.contains("same python code that already failed in round 1")
            && told.contains("ModuleNotFoundError: No module named 'no_such_module_for_seek'"),
        "{told}"
    );
    let done = of_type(&events, "done");
    assert_eq!(done[0]["outcome"], "done", "{:?}", done[0]);
}

#[test]
fn a_coder_task_answered_in_prose_is_nudged_once_for_a_small_model() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text("12 factorial is 12 * 11 factorial."),
        Reply::text(format!(
            "{}\n",
            fence("python", "import math\nprint(math.factorial(12))")
        )),
    ]);
    let out = run_ok(&sb, &server, "compute 12 factorial with python", "small");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    let nudge = requests[1].last_user_message();
    assert!(
        nudge.contains("You did not run anything") && nudge.contains("```python code block"),
        "{nudge}"
    );
    let outputs: Vec<String> = of_type(&events(&out), "block_finished")
        .iter()
        .map(|e| e["output"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(outputs, ["479001600\n"]);

    // Once only: prose twice ends the task.
    let server = FakeModel::start(vec![
        Reply::text("It is a big number."),
        Reply::text("Still a big number."),
        Reply::text(fence("python", "print('never asked for')")),
    ]);
    run_ok(&sb, &server, "compute 12 factorial", "small");
    assert_eq!(server.chat_requests().len(), 2);

    // A large model's prose is its answer.
    let server = FakeModel::start(vec![Reply::text("12! = 479001600.")]);
    run_ok(&sb, &server, "compute 12 factorial", "large");
    assert_eq!(server.chat_requests().len(), 1);
}

#[test]
fn a_small_model_is_told_its_errors_last_lines_and_what_to_do() {
    let sb = Sandbox::new();
    let broken = "def f():\n    return y\n\nprint(f())";
    let server = FakeModel::start(vec![
        Reply::text(fence("python", broken)),
        Reply::text(fence("python", "print(1)")),
    ]);
    run_ok(&sb, &server, "print f", "small");
    let told = server.chat_requests()[1].last_user_message();
    let lines: Vec<&str> = told.lines().collect();
    assert_eq!(lines[0], "[failure] Error in execution:");
    assert_eq!(
        lines[lines.len() - 3],
        "NameError: name 'y' is not defined",
        "{told}"
    );
    assert_eq!(
        lines[lines.len() - 2],
        "The task: print f",
        "the task again"
    );
    assert_eq!(
        lines[lines.len() - 1],
        "Fix the code and send the whole corrected block again."
    );
    assert!(
        !told.contains("Traceback") && lines.len() == 6,
        "only the last three lines: {told}"
    );
}

#[test]
fn the_model_size_is_decided_by_the_name_and_shown_by_seek_config() {
    let sb = Sandbox::new();
    let show = |model: &str, size: Option<&str>| {
        let mut cmd = sb.seek();
        cmd.args(["config", "--provider", "llama.cpp", "--model", model]);
        if let Some(size) = size {
            cmd.env("SEEK_MODEL_SIZE", size);
        }
        let out = cmd.output().expect("seek config");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
            .lines()
            .find(|l| l.starts_with("model_size"))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    let small = show("smollm2-135m", None);
    assert!(
        small.contains("\"auto\"")
            && small.contains("adapted to a small model")
            && small.contains("135M parameters, from the name \"smollm2-135m\"")
            && small.contains("the parameter count the server reports"),
        "{small}"
    );
    let unknown = show("default", None);
    assert!(
        unknown.contains("not treated as a small model (size unknown, context window 8192)"),
        "{unknown}"
    );
    let large = show("qwen2.5-coder:7b", None);
    assert!(
        large.contains("\"auto\"") && large.contains("not treated as a small model"),
        "{large}"
    );
    let forced = show("qwen2.5-coder:7b", Some("small"));
    assert!(
        forced.contains("\"small\"")
            && forced.contains("SEEK_MODEL_SIZE")
            && forced.contains("adapted to a small model"),
        "{forced}"
    );

    let out = sb
        .seek()
        .args(["config"])
        .env("SEEK_MODEL_SIZE", "tiny")
        .output()
        .expect("seek config");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("model_size")
            && stderr(&out).contains("\"auto\", \"small\" or \"large\""),
        "{}",
        stderr(&out)
    );
    let out = sb
        .seek()
        .args(["config"])
        .env("SEEK_SMALL_MODEL_OFF", "nudge,bogus")
        .output()
        .expect("seek config");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("SEEK_SMALL_MODEL_OFF") && stderr(&out).contains("\"bogus\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn after_resending_failed_code_a_small_model_samples_warmer() {
    let sb = Sandbox::new();
    let failing = fence("python", "import no_such_module_for_seek");
    let server = FakeModel::start(vec![
        Reply::text(failing.clone()),
        Reply::text(failing.clone()),
        Reply::text(failing),
        Reply::text(fence("python", "print('fixed')")),
    ]);
    run_ok(&sb, &server, "import it", "small");
    let temperatures: Vec<serde_json::Value> = server
        .chat_requests()
        .iter()
        .map(|r| r.json()["temperature"].clone())
        .collect();
    assert_eq!(
        temperatures,
        [
            serde_json::Value::Null,
            serde_json::Value::Null,
            serde_json::json!(0.5),
            serde_json::json!(0.8)
        ],
        "the server's own sampling until a resend was refused, then warmer at each"
    );

    // A large model keeps the configured sampling.
    let failing = fence("python", "import no_such_module_for_seek");
    let server = FakeModel::start(vec![
        Reply::text(failing.clone()),
        Reply::text(failing),
        Reply::text(fence("python", "print('fixed')")),
    ]);
    run_ok(&sb, &server, "import it", "large");
    assert!(
        server
            .chat_requests()
            .iter()
            .all(|r| r.json()["temperature"].is_null())
    );
}

#[test]
fn a_small_model_resending_code_that_ran_ends_the_task() {
    let sb = Sandbox::new();
    let echo = fence("bash", "echo hello >> said.txt; echo hello");
    let server = FakeModel::start(vec![
        Reply::text(echo.clone()),
        Reply::text(echo.clone()),
        Reply::text(echo),
    ]);
    let out = run_ok(&sb, &server, "print hello with bash", "small");
    assert_eq!(server.chat_requests().len(), 2);
    assert_eq!(
        std::fs::read_to_string(sb.path("work/said.txt")).expect("ran"),
        "hello\n",
        "it ran once"
    );
    let all = events(&out);
    let done = of_type(&all, "done");
    assert_eq!(done[0]["outcome"], "done");
    assert!(
        done[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("already ran")),
        "{:?}",
        done[0]
    );
    assert_eq!(of_type(&all, "block_finished").len(), 1);

    // A large model reads bash output and may run the same command again (it ends by the
    // round cap here, the scripted replies being all the same).
    let sb = Sandbox::new();
    let echo = fence("bash", "echo hello >> said.txt");
    let server = FakeModel::start(vec![
        Reply::text(echo.clone()),
        Reply::text(echo),
        Reply::text("Done."),
    ]);
    run_ok(&sb, &server, "print hello with bash", "large");
    assert_eq!(
        std::fs::read_to_string(sb.path("work/said.txt")).expect("ran"),
        "hello\nhello\n"
    );
}

#[test]
fn a_block_of_only_comments_fails_and_says_so_for_every_model() {
    for size in ["small", "large"] {
        let sb = Sandbox::new();
        std::fs::create_dir_all(sb.path("work")).expect("work dir");
        std::fs::write(sb.path("work/junk.tmp"), "x").expect("setup");
        let server = FakeModel::start(vec![
            Reply::text(fence("bash", "#!/bin/bash\n# delete the file junk.tmp")),
            Reply::text(fence("bash", "rm junk.tmp")),
            Reply::text("Done: junk.tmp is deleted."),
        ]);
        let out = run_ok(&sb, &server, "delete junk.tmp with bash", size);
        assert!(
            !sb.path("work/junk.tmp").exists(),
            "{size}: the real command ran"
        );
        let all = events(&out);
        let finished = of_type(&all, "block_finished");
        assert_eq!(finished[0]["success"], false, "{size}: {:?}", finished[0]);
        assert_eq!(finished[1]["success"], true, "{size}");
        let told = server.chat_requests()[1].last_user_message();
        assert!(
            told.starts_with("[failure] ") && told.contains("holds no command, only comments"),
            "{size}: {told}"
        );
    }

    // A file of comments saved with `:path` is what was asked for: it runs and is saved.
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(fence("bash:notes.sh", "# to do: nothing yet")),
        Reply::text("Saved."),
    ]);
    run_ok(&sb, &server, "save a notes script", "large");
    assert_eq!(
        std::fs::read_to_string(sb.path("work/notes.sh")).expect("saved"),
        "# to do: nothing yet\n"
    );
}

#[test]
fn a_small_models_short_loop_ends_its_reply_and_a_large_models_passes() {
    let looping = format!("Renamed.\n{}", "The answer is 5.\n\n".repeat(30));
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(looping.clone()),
        Reply::text(fence("bash", "echo renamed")),
        Reply::text("Done."),
    ]);
    let out = run_ok(&sb, &server, "rename a.txt to b.txt", "small");
    let all = events(&out);
    let complete = of_type(&all, "answer_complete");
    // How much of it arrived first depends on how the stream's pieces were joined; that the
    // reply is a loop does not (the strict guard's bounds are unit-tested in llm::repetition).
    assert_eq!(complete[0]["finish"], "repetition", "{:?}", complete[0]);
    let told = server.chat_requests()[1].last_user_message();
    assert!(told.contains("kept repeating"), "{told}");

    // A large model's guard waits for 800 bytes of it: this reply passes whole.
    let server = FakeModel::start(vec![Reply::text(looping.clone())]);
    let out = run_ok(&sb, &server, "rename a.txt to b.txt", "large");
    let all = events(&out);
    let complete = of_type(&all, "answer_complete");
    assert_eq!(complete[0]["finish"], "stop", "{:?}", complete[0]);
    assert_eq!(complete[0]["answer"], looping.as_str());
}

#[test]
fn a_small_model_is_asked_for_short_replies_after_worked_examples() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(fence("bash", "echo hi")),
        Reply::text("Done: it printed hi."),
    ]);
    run_ok(&sb, &server, "print hi with bash", "small");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let max_tokens = request.json()["max_tokens"].as_u64().unwrap_or(u64::MAX);
        assert!(max_tokens <= 256, "{max_tokens}");
        let messages = request.messages();
        assert_eq!(messages[0].0, "system");
        assert_eq!(messages[1].1, "print the numbers 7 to 9 with python");
        assert!(
            messages[2]
                .1
                .starts_with("```python\nfor n in range(7, 10):"),
            "a worked exchange follows the system prompt: {}",
            messages[2].1
        );
        let examples = messages
            .iter()
            .filter(|(_, said)| said.contains("cat draft.txt"));
        assert_eq!(
            examples.count(),
            1,
            "sent once, never kept in the conversation"
        );
    }
    assert_eq!(requests[0].last_user_message(), "print hi with bash");

    // A large model gets neither.
    let server = FakeModel::start(echo_hi());
    run_ok(&sb, &server, "say hi", "large");
    let request = &server.chat_requests()[0];
    assert!(request.json()["max_tokens"].as_u64().unwrap_or(u64::MAX) > 512);
    assert!(
        !request
            .messages()
            .iter()
            .any(|(_, said)| said.contains("draft.txt"))
    );
    assert_eq!(request.messages().len(), 2);
}

#[test]
fn a_small_model_is_shown_the_worked_example_nearest_its_task_with_its_files() {
    let sb = Sandbox::new();
    let task = "print the last line of poem.txt";
    let server = FakeModel::start(vec![
        Reply::text(fence("bash", "echo violets")),
        Reply::text("Done: violets."),
    ]);
    run_ok(&sb, &server, task, "small");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let messages = request.messages();
        assert_eq!(messages[1].1, "print the numbers 7 to 9 with python");
        assert_eq!(
            messages[5],
            (
                "user".to_owned(),
                "show only the last line in poem.txt".to_owned()
            )
        );
        assert_eq!(
            messages[6],
            (
                "assistant".to_owned(),
                "```bash\ntail -n 1 poem.txt\n```".to_owned()
            ),
            "the bank's nearest task, its file name replaced by the task's"
        );
        assert_ne!(
            messages.last().map(|m| m.0.as_str()),
            Some("assistant"),
            "an HTTP server is never sent a started answer to continue"
        );
    }

    // Turned off, the last example is the fixed one.
    let server = FakeModel::start(vec![Reply::text("Done.")]);
    let out = seek_json(&sb, &server, task, "small")
        .env("SEEK_SMALL_MODEL_OFF", "nearest,nudge")
        .output()
        .expect("run seek");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let messages = server.chat_requests()[0].messages();
    assert_eq!(messages[6].1, "```bash\ncat draft.txt\n```");
}

#[test]
fn the_example_a_small_model_is_shown_holds_the_task_s_own_values() {
    let sb = Sandbox::new();
    for (task, example) in [
        (
            "show the last 2 lines of log.txt",
            "```bash\ntail -n 2 log.txt\n```",
        ),
        (
            "create todo.txt with call mom in it",
            "```bash\necho 'call mom' > todo.txt\n```",
        ),
        (
            "with python, print the sum of [4, 5, 6]",
            "```python\nprint(sum([4, 5, 6]))\n```",
        ),
        (
            "create notes.txt with $(touch pwned) in it",
            "```bash\necho 'Good morning' > notes.txt\n```",
        ),
    ] {
        let server = FakeModel::start(vec![Reply::text("Done.")]);
        let out = seek_json(&sb, &server, task, "small")
            .env("SEEK_SMALL_MODEL_OFF", "nudge")
            .output()
            .expect("run seek");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let messages = server.chat_requests()[0].messages();
        assert_eq!(messages[6].1, example, "{task}");
    }
}

#[test]
fn a_small_model_is_never_shown_an_example_that_does_more_than_its_task_or_the_opposite() {
    let sb = Sandbox::new();
    for (task, refused) in [
        (
            "count the total number of lines in all the .txt files here",
            "rm ",
        ),
        ("print the even numbers from 2 to 20", ">"),
        ("print the current year", "pwd"),
        (
            "show only the lines of server.log that contain WARNING",
            "grep -v",
        ),
    ] {
        let server = FakeModel::start(vec![Reply::text("Done.")]);
        let out = seek_json(&sb, &server, task, "small")
            .env("SEEK_SMALL_MODEL_OFF", "nudge")
            .output()
            .expect("run seek");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let messages = server.chat_requests()[0].messages();
        assert_eq!(messages[7].1, task);
        assert!(
            messages[6].1.starts_with("```") && !messages[6].1.contains(refused),
            "{task}: {}",
            messages[6].1
        );
    }
}

#[test]
fn a_small_model_s_block_runs_at_most_twenty_seconds() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(fence("bash", "echo started; sleep 40; echo late")),
        Reply::text("Done."),
    ]);
    let started = std::time::Instant::now();
    // The task ends unsolved (its only block failed): exit 3, as for any failed task.
    let out = seek_json(&sb, &server, "wait a while", "small")
        .output()
        .expect("run seek");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let finished = events(&out)
        .into_iter()
        .find(|e| e["type"] == "block_finished")
        .expect("the block finished");
    let said = format!("{}\n{}", finished["output"], finished["feedback"]);
    assert!(said.contains("timed out after 20 s"), "{said}");
    assert!(said.contains("started") && !said.contains("late"), "{said}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(40),
        "the sleep was cut short"
    );
}

/// `seek -p --json PROMPT` at `server` through `provider`, the model named `model`, its size
/// left to `auto`. Exits 0.
fn run_named(sb: &Sandbox, server: &FakeModel, provider: &str, model: &str) -> Output {
    let work = sb.path("work");
    let out = sb
        .seek()
        .args([
            "--provider",
            provider,
            "--base-url",
            &server.url(),
            "--model",
            model,
        ])
        .arg("--work-dir")
        .arg(&work)
        .args(["--json", "-p", "print hi with bash"])
        .env("SEEK_MODEL_SIZE", "auto")
        .output()
        .expect("run seek");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

/// Whether the task's request got the small-model adaptations: replies capped at 256 tokens
/// and worked examples after the system prompt.
fn adapted(server: &FakeModel) -> bool {
    let request = &server.chat_requests()[0];
    let body = request.json();
    // OpenAI's `max_tokens`, Ollama's `options.num_predict`.
    let cap = body["max_tokens"]
        .as_u64()
        .or_else(|| body["options"]["num_predict"].as_u64());
    let capped = cap.unwrap_or(u64::MAX) <= 256;
    let examples = request
        .messages()
        .iter()
        .any(|(_, said)| said.contains("cat draft.txt"));
    assert_eq!(capped, examples, "both adaptations or neither");
    capped
}

/// The `model_size` event of the run: once, before the task starts.
fn size_event(out: &Output) -> serde_json::Value {
    let all = events(out);
    let sizes = of_type(&all, "model_size");
    assert_eq!(sizes.len(), 1, "{all:?}");
    let at = |kind: &str| all.iter().position(|e| e["type"] == kind);
    assert!(at("model_size") < at("turn_started"), "{all:?}");
    sizes[0].clone()
}

/// A task done in one bash block, then its answer.
fn echo_hi() -> Vec<Reply> {
    vec![
        Reply::text(fence("bash", "echo hi")),
        Reply::text("Done: it printed hi."),
    ]
}

#[test]
fn a_model_named_default_is_small_when_llama_server_reports_135m_parameters() {
    let sb = Sandbox::new();
    let server = FakeModel::start(echo_hi());
    server.set_parameters(134_515_008);
    let out = run_named(&sb, &server, "llama.cpp", "default");
    assert!(
        adapted(&server),
        "a 135M model gets the small-model prompt and cap"
    );
    let size = size_event(&out);
    assert_eq!(size["small"], true);
    assert_eq!(size["parameters"], 134_515_008u64);
    assert_eq!(
        size["reason"], "135M parameters, from llama-server /v1/models",
        "{size}"
    );

    // The same name on a server reporting 7B is large; so is a name that says otherwise.
    for model in ["default", "tiny-135m"] {
        let server = FakeModel::start(echo_hi());
        server.set_parameters(7_615_616_512);
        let out = run_named(&sb, &server, "llama.cpp", model);
        assert!(!adapted(&server), "{model}: a 7.6B model is not adapted to");
        let size = size_event(&out);
        assert_eq!(size["small"], false, "{model}");
        assert_eq!(
            size["reason"], "7.6B parameters, from llama-server /v1/models",
            "{model}"
        );
    }
}

#[test]
fn ollama_s_parameter_size_decides_for_a_model_without_a_size_in_its_name() {
    let sb = Sandbox::new();
    let server = FakeModel::start(echo_hi());
    server.set_parameters(134_515_008);
    let out = run_named(&sb, &server, "ollama", "my-model");
    assert!(adapted(&server));
    let size = size_event(&out);
    assert_eq!(size["small"], true);
    assert_eq!(size["reason"], "135M parameters, from Ollama /api/show");
    let shown = server
        .all_requests()
        .into_iter()
        .find(|r| r.path == "/api/show")
        .expect("the model was shown");
    assert_eq!(shown.json()["model"], "my-model");
}

#[test]
fn a_server_that_does_not_say_leaves_the_name_to_decide() {
    let sb = Sandbox::new();
    for (model, small) in [("tiny-135m", true), ("default", false)] {
        let server = FakeModel::start(echo_hi());
        server.refuse_model_info();
        let out = run_named(&sb, &server, "llama.cpp", model);
        assert_eq!(adapted(&server), small, "{model}");
        let size = size_event(&out);
        assert_eq!(size["small"], small, "{model}");
        let want = if small {
            "135M parameters, from the name \"tiny-135m\"".to_owned()
        } else {
            "size unknown, context window 8192".to_owned()
        };
        assert_eq!(size["reason"], want.as_str(), "{model}");
    }
    // `model_size` set decides, whatever the server says.
    let server = FakeModel::start(echo_hi());
    server.set_parameters(7_615_616_512);
    let out = seek_json(&sb, &server, "print hi with bash", "small")
        .output()
        .expect("run seek");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(adapted(&server));
    assert_eq!(size_event(&out)["reason"], "model_size = \"small\"");
}

/// A reply of `completion_tokens` holding a python block never closed (a 135M model's list
/// that runs on), reported with that usage.
fn unclosed_reply(completion_tokens: u64) -> Reply {
    Reply::Paced {
        answer: "```python\n# 1. 1\n# 2. 3\n# 3. 5\n".into(),
        every: std::time::Duration::ZERO,
        prompt_tokens: 100,
        completion_tokens,
    }
}

#[test]
fn a_small_model_s_task_gives_up_once_it_has_written_its_token_budget_without_a_working_block() {
    let sb = Sandbox::new();
    let server = FakeModel::start((0..5).map(|_| unclosed_reply(300)).collect());
    let out = seek_json(&sb, &server, "how many primes are below 1000", "small")
        .output()
        .expect("run seek");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3, "768 tokens: 300 + 300 + what is left");
    let caps: Vec<u64> = requests
        .iter()
        .map(|r| r.json()["max_tokens"].as_u64().unwrap_or(u64::MAX))
        .collect();
    assert_eq!(caps, [256, 256, 168], "the last reply gets what is left");
    let events = events(&out);
    let done = of_type(&events, "done");
    assert_eq!(done[0]["outcome"], "gave_up");
    let message = done[0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("768 tokens"), "{message}");

    // A large model gets its five attempts, each at the configured cap.
    let server = FakeModel::start((0..5).map(|_| unclosed_reply(300)).collect());
    let out = seek_json(&sb, &server, "how many primes are below 1000", "large")
        .output()
        .expect("run seek");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(server.chat_requests().len(), 5);
}
