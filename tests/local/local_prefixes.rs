//! No conversation read twice, on the real SmolLM2-135M file: an agent switch (another system
//! prompt) keeps the first agent's prefix, so switching back reads only what came since; the
//! prefix a resumed session continues is read back from beside it by a new engine, and a
//! damaged or foreign file is ignored. Replies computed on a kept, copied or restored prefix
//! equal those computed from nothing.

use crate::support;

use seek::llm::{ChatRequest, GenerationOptions, Message, Role};
use seek::local::engine::{Engine, PrefixLimits};
use tokio_util::sync::CancellationToken;

fn engine() -> Engine {
    Engine::load(&support::real_model(), 2).expect("the real model loads")
}

/// A greedy request of 12 tokens (also `local_warm`'s).
pub(crate) fn request(messages: &[Message], prefix_file: Option<&std::path::Path>) -> ChatRequest {
    ChatRequest {
        messages: messages.to_vec(),
        options: GenerationOptions {
            max_tokens: 12,
            temperature: Some(0.0),
            top_p: None,
            seed: Some(1),
            context_window: 8192,
        },
        json_schema: None,
        prefix_file: prefix_file.map(ToOwned::to_owned),
    }
}

fn reply(engine: &Engine, request: ChatRequest) -> String {
    answer(engine.reply(request, &CancellationToken::new()))
}

/// A reply's answer, its stream read to the end on a runtime of its own (also `local_warm`'s).
pub(crate) fn answer(stream: seek::llm::ChatStream) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        stream
            .collect()
            .await
            .unwrap_or_else(|(e, _)| panic!("the reply failed: {e}"))
            .answer
    })
}

/// A conversation of a few hundred tokens under `system`.
fn conversation(system: &str, turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::new(Role::System, system)];
    for i in 0..turns {
        messages.push(Message::new(
            Role::User,
            format!(
                "Step {i}: list the files in the folder number {i} and count the lines of each."
            ),
        ));
        messages.push(Message::new(
            Role::Assistant,
            format!("```bash\nfor f in folder{i}/*; do wc -l \"$f\"; done\n```"),
        ));
    }
    messages.push(Message::new(Role::User, "Now say which file is longest."));
    messages
}

const CODER: &str = "You are the coder agent. Answer with one bash block.";
const CASUAL: &str = "You are the casual agent. Answer in one short sentence.";

#[test]
fn switching_agents_and_back_reads_only_what_came_since() {
    let engine = engine();
    let coder = conversation(CODER, 6);
    let first = reply(&engine, request(&coder, None));
    let coder_tokens = engine.settled_stats().prompt_tokens;
    // The casual agent: another system prompt, so nothing past the template's first tokens is
    // shared; it is read whole, and the coder's prefix is kept.
    let casual = conversation(CASUAL, 6);
    reply(&engine, request(&casual, None));
    assert!(
        engine.settled_stats().reused_tokens < 10,
        "{:?}",
        engine.settled_stats()
    );
    assert_eq!(engine.settled_stats().kept_prefixes, 2);
    // Back to the coder with one more turn: only the new turn is read.
    let mut more = coder[..coder.len() - 1].to_vec();
    more.push(Message::new(Role::User, "Now say which file is longest."));
    more.push(Message::new(Role::Assistant, first.clone()));
    more.push(Message::new(Role::User, "And the shortest?"));
    let continued = reply(&engine, request(&more, None));
    let stats = engine.settled_stats();
    assert!(
        stats.reused_tokens >= coder_tokens,
        "reused {} of the coder's {coder_tokens} tokens: {stats:?}",
        stats.reused_tokens
    );
    assert!(stats.prefilled_tokens < 40, "{stats:?}");
    // The same reply as from nothing.
    assert_eq!(continued, reply(&self::engine(), request(&more, None)));
}

#[test]
fn a_resumed_session_reads_its_saved_prefixes_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("session.kv");
    let coder = conversation(CODER, 6);
    let casual = conversation(CASUAL, 3);
    let (answer, saved) = {
        let engine = engine();
        reply(&engine, request(&casual, Some(&file)));
        let answer = reply(&engine, request(&coder, Some(&file)));
        (answer, engine.settled_stats())
    };
    assert!(saved.saved_bytes > 0, "{saved:?}");
    assert_eq!(
        std::fs::metadata(&file)
            .expect("the prefixes are saved")
            .len(),
        saved.saved_bytes
    );
    // A new process resumes the session: its first reply reads only the new turn.
    let mut resumed = coder.clone();
    resumed.push(Message::new(Role::Assistant, answer));
    resumed.push(Message::new(Role::User, "And the shortest?"));
    let engine = engine();
    let continued = reply(&engine, request(&resumed, Some(&file)));
    let stats = engine.settled_stats();
    assert!(
        stats.restored_tokens >= saved.prompt_tokens as u64,
        "{stats:?}"
    );
    assert!(stats.reused_tokens >= saved.prompt_tokens, "{stats:?}");
    assert!(stats.prefilled_tokens < 40, "{stats:?}");
    assert_eq!(continued, reply(&self::engine(), request(&resumed, None)));
    // Only the prefix the resumed conversation continues was read back, not the casual
    // agent's: resuming reads one conversation's cache.
    let restored = engine.settled_stats().restored_tokens;
    reply(&engine, request(&casual, Some(&file)));
    assert_eq!(engine.settled_stats().restored_tokens, restored);
}

#[test]
fn a_damaged_prefix_file_is_ignored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("session.kv");
    let coder = conversation(CODER, 2);
    let expected = {
        let engine = engine();
        let expected = reply(&engine, request(&coder, Some(&file)));
        assert!(engine.settled_stats().saved_bytes > 0);
        expected
    };
    let mut bytes = std::fs::read(&file).expect("saved");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&file, &bytes).expect("damaged");
    let engine = engine();
    assert_eq!(reply(&engine, request(&coder, Some(&file))), expected);
    assert_eq!(engine.settled_stats().restored_tokens, 0);
    assert_eq!(engine.settled_stats().reused_tokens, 0);
    // The next save replaces it with a good one.
    let again = self::engine();
    reply(&again, request(&coder, Some(&file)));
    assert!(
        again.settled_stats().restored_tokens > 0,
        "{:?}",
        again.settled_stats()
    );
}

#[test]
fn the_limits_bound_what_is_kept_and_saved() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("session.kv");
    let limits = PrefixLimits { count: 1, bytes: 0 };
    let engine = Engine::load_with(&support::real_model(), 2, limits).expect("loads");
    reply(&engine, request(&conversation(CODER, 1), Some(&file)));
    reply(&engine, request(&conversation(CASUAL, 1), Some(&file)));
    assert_eq!(engine.settled_stats().kept_prefixes, 1);
    assert!(!file.exists(), "0 bytes: nothing saved");
}

#[test]
fn an_idle_engine_saves_by_itself_and_not_after_every_reply() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("session.kv");
    let engine = engine();
    reply(&engine, request(&conversation(CODER, 1), Some(&file)));
    // The reply has ended; the save waits for the engine to be idle (2 s), so the file appears
    // only later. Watched, not slept on: the deadline only bounds a failure.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    assert!(!file.exists(), "saved at once");
    while engine.stats().saved_bytes == 0 {
        assert!(std::time::Instant::now() < deadline, "never saved");
        std::thread::park_timeout(std::time::Duration::from_millis(10));
    }
    // The counter is set once the file is in place.
    assert!(file.exists());
}
