//! Reading ahead while the user is idle, on the real SmolLM2-135M file: after a task, the
//! agent runtime hands the engine the start of each agent's next request, the engine reads them
//! when nothing else is asked, and the first switch to an agent never used in the session then
//! reads only the new message's tokens. A request that arrives while a warm-up reads is served
//! at once (the warm-up stops after the chunk it is on) and answers exactly as from nothing; a
//! warm-up's prefixes are not saved beside the session.
//!
//! The warm-up's progress is followed through its hook, never by waiting for time to pass.

use crate::local_prefixes::{answer, request};
use crate::support;

use std::sync::{Arc, Mutex};

use seek::agent::{Command, Event};
use seek::config::{AgentName, Config, Dirs, Env, Overrides};
use seek::llm::{ChatModel, ChatRequest, ChatStream, Delta, LlmError, Message, Role, WarmUp};
use seek::local::engine::{Engine, Stats, WarmStep, chat_messages};
use tokio_util::sync::CancellationToken;

/// The engine behind the `ChatModel` trait, as `provider = "local"` puts it, noting each
/// reply's request with the engine's counters as its stream ends.
#[derive(Clone)]
struct Recorded {
    engine: Arc<Engine>,
    replies: Arc<Mutex<Vec<(ChatRequest, Stats)>>>,
    warm_ups: Arc<Mutex<Vec<WarmUp>>>,
}

impl ChatModel for Recorded {
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let (stream, cancel) = ChatStream::new(rx, &cancel);
        let this = self.clone();
        tokio::spawn(async move {
            let mut inner = this.engine.reply(request.clone(), &cancel);
            while let Some(item) = inner.next().await {
                if matches!(item, Ok(Delta::Done(_))) {
                    // The counters of a reply are set before its end is sent.
                    let stats = this.engine.stats();
                    this.replies.lock().unwrap().push((request.clone(), stats));
                }
                if tx.send(item).await.is_err() {
                    return;
                }
            }
        });
        stream
    }

    fn list_models(&self) -> seek::BoxFuture<'_, Result<Vec<String>, LlmError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn describe(&self) -> String {
        "SmolLM2-135M @ local".into()
    }

    fn with_model(&self, _model: &str) -> Arc<dyn ChatModel> {
        Arc::new(self.clone())
    }

    fn continues_answer(&self) -> bool {
        true
    }

    fn context_window(&self) -> seek::BoxFuture<'_, Option<u64>> {
        let window = self.engine.info().context_length as u64;
        Box::pin(async move { Some(window) })
    }

    fn reads_ahead(&self) -> bool {
        true
    }

    fn warm_up(&self, warm: WarmUp) {
        self.warm_ups.lock().unwrap().push(warm.clone());
        self.engine.warm(warm);
    }
}

/// The built-in engine's configuration with greedy, short replies; a small model (its coder is
/// shown a worked example chosen for each task).
fn config(dir: &std::path::Path, warm: bool) -> Arc<Config> {
    let file = dir.join("config.toml");
    std::fs::write(
        &file,
        format!(
            "temperature = 0\nseed = 7\nmax_tokens = 12\nmodel_size = \"small\"\n\n[local]\nwarm_agents = {warm}\n"
        ),
    )
    .unwrap();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let overrides = Overrides {
        config: Some(file),
        provider: Some("local".into()),
        model: Some(support::real_model().display().to_string()),
        work_dir: Some(work.clone()),
        approval: Some("never".into()),
        agent: Some("casual".into()),
        ..Overrides::default()
    };
    let dirs = Dirs {
        default_config_file: None,
        data_dir: dir.join("data"),
    };
    let config = Config::resolve(&overrides, &Env::default(), &dirs, &work).expect("config");
    Arc::new(config)
}

async fn task(handle: &mut seek::agent::AgentHandle, prompt: &str, agent: AgentName) {
    handle
        .commands
        .send(Command::Submit {
            prompt: prompt.into(),
            agent: Some(agent),
            context: None,
        })
        .unwrap();
    while let Some(event) = handle.events.recv().await {
        if matches!(event, Event::TurnFinished { .. }) {
            return;
        }
    }
    panic!("the runtime stopped before the task finished");
}

/// The real file's tokenizer and chat template, to count what the engine reads.
struct Rendering {
    tokenizer: seek::local::tokenizer::Tokenizer,
    template: seek::local::template::ChatTemplate,
}

impl Rendering {
    fn load() -> Self {
        use seek::local::{gguf::GgufFile, template::ChatTemplate, tokenizer::Tokenizer};
        let path = support::real_model();
        let file = GgufFile::open(&path).unwrap();
        let tokenizer = Tokenizer::from_gguf(file.content(), &path).unwrap();
        let template = ChatTemplate::from_gguf(file.content(), &path, &tokenizer).unwrap();
        Self {
            tokenizer,
            template,
        }
    }

    /// `messages` rendered as a start the conversation continues (no turn opened): what a
    /// warm-up reads for them.
    fn start(&self, messages: &[Message]) -> Vec<u32> {
        let start = self
            .template
            .render(&chat_messages(messages), false)
            .unwrap();
        self.tokenizer.encode(&start, true, true)
    }

    /// The whole request, with the turn it opens.
    fn whole(&self, messages: &[Message]) -> Vec<u32> {
        let whole = self.template.prompt(&chat_messages(messages)).unwrap();
        self.tokenizer.encode(&whole, true, true)
    }
}

/// The tokens the engine reads for `messages`: the whole request, and its start (all but the
/// new message, closed), as the engine renders each.
fn tokens(rendering: &Rendering, messages: &[Message]) -> (Vec<u32>, Vec<u32>) {
    (
        rendering.whole(messages),
        rendering.start(&messages[..messages.len() - 1]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_warm_up_a_first_switch_reads_only_the_new_message() {
    let dir = tempfile::tempdir().unwrap();
    let rendering = Rendering::load();
    let engine = Arc::new(Engine::load(&support::real_model(), 2).expect("the real model loads"));
    let model = Recorded {
        engine: Arc::clone(&engine),
        replies: Arc::default(),
        warm_ups: Arc::default(),
    };
    let mut handle = seek::agent::spawn(config(dir.path(), true), Arc::new(model.clone()));
    task(&mut handle, "Hello! What can you do?", AgentName::Casual).await;
    // Handed over before the task's end is told: the casual agent's own start first, then the
    // agents never used, the coder first (a small model's coder too: its worked example for
    // the next task goes after this start).
    let warm = model
        .warm_ups
        .lock()
        .unwrap()
        .last()
        .cloned()
        .expect("a warm-up");
    let firsts: Vec<&str> = warm
        .conversations
        .iter()
        .map(|c| c[0].content.as_str())
        .collect();
    assert_eq!(
        warm.conversations.len(),
        4,
        "casual, coder, file, planner: {firsts:?}"
    );
    let stats = tokio::task::block_in_place(|| engine.settled_stats());
    assert_eq!(stats.warm_ups, 1);
    assert_eq!(stats.warmed_conversations, 4, "{stats:?}");
    assert!(stats.warmed_tokens > 300, "{stats:?}");

    // The coder, with the worked example chosen for this task: only the example, the task and
    // the turn opened after them are read.
    task(
        &mut handle,
        "Count the lines of notes.txt.",
        AgentName::Coder,
    )
    .await;
    let replies = model.replies.lock().unwrap().clone();
    let (request, stats) = &replies[1];
    let coder_start = &warm.conversations[1];
    assert_eq!(request.messages[..coder_start.len()], coder_start[..]);
    assert!(
        request.messages.len() > coder_start.len() + 2,
        "a worked example before the task"
    );
    assert_eq!(
        stats.reused_tokens,
        rendering.start(coder_start).len(),
        "{stats:?}"
    );
    assert_eq!(
        stats.prefilled_tokens,
        stats.prompt_tokens - stats.reused_tokens
    );
    assert!(stats.reused_tokens > 300, "{stats:?}");

    // After that task, read ahead again: the first switch to the file agent.
    tokio::task::block_in_place(|| engine.settled_stats());
    let before = model.replies.lock().unwrap().len();
    task(
        &mut handle,
        "List the files in this folder.",
        AgentName::File,
    )
    .await;
    let replies = model.replies.lock().unwrap().clone();
    // Its first reply (a block's feedback may bring more).
    let (request, stats) = &replies[before];
    let (whole, start) = tokens(&rendering, &request.messages);
    assert!(
        whole.starts_with(&start),
        "the request's start is its own prefix"
    );
    assert_eq!(stats.prompt_tokens, whole.len());
    assert_eq!(stats.reused_tokens, start.len(), "{stats:?}");
    // The new message and the turn opened after it: a few tokens of a conversation of hundreds.
    assert_eq!(stats.prefilled_tokens, whole.len() - start.len());
    assert!(stats.prefilled_tokens < 30, "{stats:?}");
    handle.commands.send(Command::Shutdown).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_agents_off_reads_nothing_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::load(&support::real_model(), 2).expect("the real model loads"));
    let model = Recorded {
        engine: Arc::clone(&engine),
        replies: Arc::default(),
        warm_ups: Arc::default(),
    };
    let mut handle = seek::agent::spawn(config(dir.path(), false), Arc::new(model.clone()));
    task(&mut handle, "Hello! What can you do?", AgentName::Casual).await;
    assert!(model.warm_ups.lock().unwrap().is_empty());
    let stats = tokio::task::block_in_place(|| engine.settled_stats());
    assert_eq!((stats.warm_ups, stats.total_warmed), (0, 0));
    handle.commands.send(Command::Shutdown).unwrap();
}

/// A conversation of about 400 tokens under `system` (several chunks to read).
fn history(system: &str) -> Vec<Message> {
    let mut messages = vec![Message::new(Role::System, system)];
    for i in 0..8 {
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
    messages
}

fn asked(mut messages: Vec<Message>, text: &str) -> Vec<Message> {
    messages.push(Message::new(Role::User, text));
    messages
}

const CODER: &str = "You are the coder agent. Answer with one bash block.";
const CASUAL: &str = "You are the casual agent. Answer in one short sentence.";

#[test]
fn a_request_during_a_warm_up_is_served_after_one_chunk_and_answers_as_from_nothing() {
    let engine = Engine::load(&support::real_model(), 2).expect("the real model loads");
    let coder = history(CODER);
    answer(engine.reply(
        request(&asked(coder, "Which is longest?"), None),
        &CancellationToken::new(),
    ));
    let casual = history(CASUAL);
    // The hook holds the engine thread after the first chunk until the request is queued.
    let (steps, seen) = std::sync::mpsc::channel::<WarmStep>();
    let (release, held) = std::sync::mpsc::channel::<()>();
    let mut first = true;
    let hook = move |step: WarmStep| {
        let _ = steps.send(step);
        if std::mem::take(&mut first) {
            let _ = held.recv();
        }
    };
    engine.warm_observed(
        WarmUp {
            conversations: vec![casual.clone()],
            prefix_file: None,
        },
        Some(Box::new(hook)),
    );
    let step = seen.recv().expect("the warm-up reads");
    assert_eq!(step.conversation, 0);
    assert!(step.total > 3 * 64, "several chunks to read: {step:?}");
    let question = asked(casual, "Thanks, and the shortest?");
    let reply = engine.reply(request(&question, None), &CancellationToken::new());
    release.send(()).unwrap();
    let got = answer(reply);
    let stats = engine.settled_stats();
    assert_eq!(stats.warm_ups_interrupted, 1, "{stats:?}");
    assert_eq!(
        stats.warmed_tokens, 64,
        "not one chunk after the request came"
    );
    assert!(seen.try_recv().is_err(), "no step after the first");
    // What it read is kept: the reply continued from it.
    assert_eq!(stats.reused_tokens, step.done, "{stats:?}");
    let fresh = Engine::load(&support::real_model(), 2).expect("the real model loads");
    let expected = answer(fresh.reply(request(&question, None), &CancellationToken::new()));
    assert_eq!(got, expected);
}

#[test]
fn a_warm_up_s_prefixes_are_not_saved_beside_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.kv");
    let engine = Engine::load(&support::real_model(), 2).expect("the real model loads");
    let coder = history(CODER);
    let casual = history(CASUAL);
    answer(engine.reply(
        request(&asked(coder.clone(), "Which is longest?"), Some(&file)),
        &CancellationToken::new(),
    ));
    engine.warm(WarmUp {
        conversations: vec![casual.clone()],
        prefix_file: Some(file.clone()),
    });
    assert_eq!(engine.settled_stats().warmed_conversations, 1, "read whole");
    // The coder's next reply after the warm-up: what is saved then is the coder's alone.
    answer(engine.reply(
        request(&asked(coder, "And the shortest?"), Some(&file)),
        &CancellationToken::new(),
    ));
    let stats = engine.settled_stats();
    assert_eq!(
        stats.kept_prefixes, 2,
        "the coder's and the warmed casual one: {stats:?}"
    );
    assert!(stats.saved_bytes > 0);
    drop(engine);
    let resumed = Engine::load(&support::real_model(), 2).expect("the real model loads");
    answer(resumed.reply(
        request(&asked(casual, "Thanks!"), Some(&file)),
        &CancellationToken::new(),
    ));
    let stats = resumed.settled_stats();
    assert!(
        stats.reused_tokens < 10,
        "the casual agent's warmed prefix was not saved: {stats:?}"
    );
}
