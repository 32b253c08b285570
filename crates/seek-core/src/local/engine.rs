//! The engine thread: one loaded model, its KV cache and the tokens that cache holds, serving
//! one reply at a time.
//!
//! Owns turning a conversation into tokens, reusing what was read before (the agent resends the
//! whole conversation every round, and switches agents, each with its own system prompt: the
//! prefixes kept, `prefixes`, mean only what is new is computed; a session's are saved beside
//! it, `prefix_file`, and read back when it is resumed; while the engine is idle, other agents'
//! conversations are read ahead, `warm`), the token loop with its cancellation, and the engine's
//! counters. It must not download, resolve names or know about
//! the agent: requests come in as `ChatRequest`s and leave as the same `Delta` stream every
//! provider produces.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::LocalError;
use super::gguf::GgufFile;
use super::model::{KvCache, Transformer};
use super::prefix_file::{self, ModelIdentity};
use super::prefixes::{Prefix, Prefixes, Start};
use super::sampler::Sampling;
use super::template::ChatTemplate;
use super::tokenizer::Tokenizer;
use crate::llm::{ChatRequest, ChatStream, Delta, Finish, LlmError, Preparing, Usage};
use seek_engine::EngineError;

use decode::End;
pub use warm::{WarmHook, WarmStep};

mod decode;
mod warm;

/// New positions computed between two looks at the cancel token while reading a prompt.
const PREFILL_STEP: usize = 64;

/// How long the engine waits for the next request before saving what it read beside the
/// session (also saved when the engine is dropped, and when asked to settle).
const SAVE_WHEN_IDLE_FOR: Duration = Duration::from_secs(2);

/// What is known of the loaded model.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub path: PathBuf,
    pub architecture: String,
    /// The context window the file declares, in tokens.
    pub context_length: usize,
    pub file_bytes: u64,
    pub load_time: Duration,
    pub threads: usize,
}

/// The engine's counters: of the last reply, and since loading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Tokens of the last reply's prompt.
    pub prompt_tokens: usize,
    /// Of those, the ones already in the cache (not computed again).
    pub reused_tokens: usize,
    /// Of those, the ones computed.
    pub prefilled_tokens: usize,
    /// Tokens the last reply generated.
    pub generated_tokens: usize,
    /// Time to compute the prompt, and from then to the end, of the last reply.
    pub prefill_micros: u64,
    pub decode_micros: u64,
    pub replies: u64,
    pub total_prefilled: u64,
    pub total_reused: u64,
    /// Conversations whose read prompt is kept now (one per agent, typically).
    pub kept_prefixes: usize,
    /// Tokens read back from a session's saved prefixes (at resume), since loading.
    pub restored_tokens: u64,
    /// Bytes of the last save of the session's prefixes, and how long it took.
    pub saved_bytes: u64,
    pub save_micros: u64,
    /// Warm-ups asked for, those a request (or a newer warm-up) interrupted, and the tokens all
    /// of them read, since loading.
    pub warm_ups: u64,
    pub warm_ups_interrupted: u64,
    pub total_warmed: u64,
    /// Of the last warm-up: tokens read, conversations it left ready, and how long it took.
    pub warmed_tokens: usize,
    pub warmed_conversations: usize,
    pub warm_micros: u64,
}

/// How much of what was read the engine keeps (`[local] kept_prefixes`, `prefix_cache_mb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixLimits {
    /// Prefixes kept in memory, the one in use included.
    pub count: usize,
    /// Bytes they may take together in memory; also the most a session's saved file may take
    /// (0: keep only the one in use, save nothing).
    pub bytes: usize,
}

impl Default for PrefixLimits {
    fn default() -> Self {
        Self {
            count: 4,
            bytes: 1 << 30,
        }
    }
}

/// What the engine thread is asked to do, in order.
enum Work {
    Reply(Job),
    /// Answered once everything asked before is done, saving and warming included.
    Settle(std::sync::mpsc::Sender<()>),
    /// Conversations to read ahead while nothing else is asked (`warm`).
    Warm(warm::WarmJob),
}

struct Job {
    request: ChatRequest,
    cancel: CancellationToken,
    tx: mpsc::Sender<Result<Delta, LlmError>>,
}

/// A model loaded on its own thread.
pub struct Engine {
    jobs: std::sync::mpsc::Sender<Work>,
    info: ModelInfo,
    stats: Arc<Mutex<Stats>>,
}

struct Worker {
    model: Transformer,
    tokenizer: Tokenizer,
    template: ChatTemplate,
    /// The prefix being computed on (taken out of `prefixes` for a reply, then put back).
    working: Prefix<KvCache>,
    /// The other prefixes read.
    prefixes: Prefixes<KvCache>,
    limits: PrefixLimits,
    /// The session's prefix file last asked for, and the model file's identity (hashed while
    /// the model loads; again when a file is first asked for if that failed).
    prefix_file: Option<PathBuf>,
    identity: Option<ModelIdentity>,
    /// Prefixes were read since the last save to `prefix_file`.
    unsaved: bool,
    /// When the last reply ended (a warm-up saves once the engine has been idle as long as the
    /// save waits for).
    idle_since: Instant,
    stats: Arc<Mutex<Stats>>,
    path: PathBuf,
    seed_counter: u64,
}

impl Engine {
    /// Loads `path` and starts the engine thread with `threads` compute threads. Blocking.
    pub fn load(path: &Path, threads: usize) -> Result<Self, LocalError> {
        Self::load_with(path, threads, PrefixLimits::default())
    }

    /// [`Engine::load`], keeping what was read within `limits`.
    pub fn load_with(
        path: &Path,
        threads: usize,
        limits: PrefixLimits,
    ) -> Result<Self, LocalError> {
        let started = Instant::now();
        let threads = threads.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("seek-engine-{i}"))
            .build()
            .map_err(|e| LocalError::EngineGone {
                reason: format!("cannot start {threads} compute threads: {e}"),
            })?;
        let file = GgufFile::open(path)?;
        // The file's identity (which saved prefixes must match) is hashed beside the load:
        // otherwise a resumed session's first reply waited for it (8 ms for 8 MiB).
        // A thread that cannot be started leaves it to the first prefix file, as a failure to
        // hash does (computed again then, and its failure logged).
        let (model, identity) = std::thread::scope(|scope| {
            let identity = std::thread::Builder::new()
                .spawn_scoped(scope, || ModelIdentity::of(path))
                .ok();
            let model = pool.install(|| Transformer::load(&file));
            (model, identity.and_then(|thread| thread.join().ok()?.ok()))
        });
        let model = model?;
        let tokenizer = Tokenizer::from_gguf(file.content(), path)?;
        let template = ChatTemplate::from_gguf(file.content(), path, &tokenizer)?;
        if tokenizer.vocab_size() > model.vocab_size() {
            return Err(LocalError::from(EngineError::Incomplete {
                path: path.to_owned(),
                what: format!(
                    "an embedding row for each of the tokenizer's {} tokens (it has {})",
                    tokenizer.vocab_size(),
                    model.vocab_size()
                ),
            }));
        }
        let info = ModelInfo {
            path: path.to_owned(),
            architecture: model.shape().architecture.clone(),
            context_length: model.shape().context_length,
            file_bytes: file.len() as u64,
            load_time: started.elapsed(),
            threads,
        };
        // The weights now live in candle's storage; the mapping is no longer needed.
        drop(file);
        let stats = Arc::new(Mutex::new(Stats::default()));
        let mut worker = Worker {
            working: Prefix::read(Vec::new(), model.new_cache()),
            prefixes: Prefixes::new(limits.count, limits.bytes),
            limits,
            prefix_file: None,
            identity,
            unsaved: false,
            idle_since: Instant::now(),
            model,
            tokenizer,
            template,
            stats: Arc::clone(&stats),
            path: path.to_owned(),
            seed_counter: 0,
        };
        let (jobs, incoming) = std::sync::mpsc::channel::<Work>();
        std::thread::Builder::new()
            .name("seek-engine".into())
            .spawn(move || {
                // Ends when the Engine (the sender) is dropped. What was read is saved once
                // the engine has been idle a while, not after every reply: the agent's next
                // round usually follows within a second, and must not wait for the write.
                // A warm-up that takes a request off the queue hands it back here.
                let mut next: Option<Work> = None;
                loop {
                    let work = if let Some(work) = next.take() {
                        work
                    } else if worker.unsaved {
                        match incoming.recv_timeout(SAVE_WHEN_IDLE_FOR) {
                            Ok(work) => work,
                            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                                worker.save_prefixes();
                                continue;
                            }
                            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                                worker.save_prefixes();
                                break;
                            }
                        }
                    } else {
                        match incoming.recv() {
                            Ok(work) => work,
                            Err(_) => break,
                        }
                    };
                    match work {
                        Work::Reply(job) => {
                            pool.install(|| worker.reply(job));
                            worker.idle_since = Instant::now();
                        }
                        Work::Settle(done) => {
                            worker.save_prefixes();
                            let _ = done.send(());
                        }
                        Work::Warm(job) => match worker.warm(job, &incoming, &pool) {
                            warm::After::Idle => {}
                            warm::After::Work(work) => next = Some(work),
                            warm::After::Gone => {
                                worker.save_prefixes();
                                break;
                            }
                        },
                    }
                }
            })
            .map_err(|e| LocalError::EngineGone {
                reason: format!("cannot start the engine thread: {e}"),
            })?;
        Ok(Self { jobs, info, stats })
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    pub fn stats(&self) -> Stats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The counters once the engine has done everything asked so far (a reply's stream ends
    /// before its prefixes are put away and saved). Blocking.
    pub fn settled_stats(&self) -> Stats {
        let (done, wait) = std::sync::mpsc::channel();
        if self.jobs.send(Work::Settle(done)).is_ok() {
            let _ = wait.recv();
        }
        self.stats()
    }

    /// Reads ahead `warm.conversations` (see `warm`), once every request asked before is
    /// served; a request asked later interrupts it. Returns at once.
    pub fn warm(&self, warm: crate::llm::WarmUp) {
        self.warm_observed(warm, None);
    }

    /// [`Engine::warm`], calling `hook` on the engine thread after each chunk it reads (tests
    /// and benches learn from it that the warm-up is under way, and may hold it there).
    pub fn warm_observed(&self, warm: crate::llm::WarmUp, hook: Option<WarmHook>) {
        let job = warm::WarmJob {
            conversations: warm.conversations,
            prefix_file: warm.prefix_file,
            hook,
        };
        let _ = self.jobs.send(Work::Warm(job));
    }

    /// Starts a reply; it streams as every provider's does. Replies are served in order.
    pub fn reply(&self, request: ChatRequest, cancel: &CancellationToken) -> ChatStream {
        let (tx, rx) = mpsc::channel(256);
        let (stream, cancel) = ChatStream::new(rx, cancel);
        let job = Job {
            request,
            cancel,
            tx: tx.clone(),
        };
        if self.jobs.send(Work::Reply(job)).is_err() {
            let _ = tx.try_send(Err(LlmError::Engine {
                message: "the built-in engine's thread is gone (a bug; see the log)".into(),
            }));
        }
        stream
    }
}

impl Worker {
    fn fail(&self, error: LocalError) -> LlmError {
        match error {
            LocalError::Engine(EngineError::ContextExceeded { tokens, window, .. }) => {
                LlmError::ContextExceeded {
                    url: self.path.display().to_string(),
                    window: window as u64,
                    message: format!("the conversation is {tokens} tokens"),
                }
            }
            other => LlmError::Engine {
                message: other.to_string(),
            },
        }
    }

    /// The model's file name, for progress lines.
    fn name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    fn empty_prefix(&self) -> Prefix<KvCache> {
        Prefix::read(Vec::new(), self.model.new_cache())
    }

    /// Puts the prefix computed on back among the kept ones (what a stopped or failed reply
    /// read is kept too: every position in the cache is whole).
    fn keep_working(&mut self) {
        let empty = self.empty_prefix();
        let mut working = std::mem::replace(&mut self.working, empty);
        let whole = working.cache.len().min(working.tokens.len());
        working.tokens.truncate(whole);
        working.cache.truncate(whole);
        // A reply read from it: saved beside the session from now on, even if a warm-up made it.
        working.warmed = false;
        if !working.tokens.is_empty() {
            self.prefixes.keep(working);
        }
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.kept_prefixes = self.prefixes.len();
    }

    /// The model file's identity, computed once (`None` if the file cannot be read now).
    fn identity(&mut self) -> Option<ModelIdentity> {
        if self.identity.is_none() {
            match ModelIdentity::of(&self.path) {
                Ok(identity) => self.identity = Some(identity),
                Err(e) => tracing::warn!(
                    "engine: cannot identify {} for its saved prefixes: {e}",
                    self.path.display()
                ),
            }
        }
        self.identity
    }

    /// The first time a session's prefix file is named, reads back the saved prefix that the
    /// conversation `ids` continues (a resumed session's), when it was computed with this very
    /// model file.
    fn restore_prefixes(&mut self, file: Option<&Path>, ids: &[u32]) {
        if file == self.prefix_file.as_deref() {
            return;
        }
        // Another session now: the last one's prefixes go to its own file first.
        self.save_prefixes();
        self.prefix_file = file.map(Path::to_owned);
        let Some(path) = file.filter(|p| p.exists()) else {
            return;
        };
        let Some(identity) = self.identity() else {
            return;
        };
        let dims = self.model.cache_dims();
        match prefix_file::load(path, identity, dims, self.limits.bytes, ids) {
            Ok(Some(prefix)) => {
                let tokens = prefix.tokens.len();
                self.prefixes.keep_oldest(prefix);
                let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
                stats.restored_tokens += tokens as u64;
                stats.kept_prefixes = self.prefixes.len();
                tracing::info!(
                    "engine: read back {tokens} tokens of a prefix from {}",
                    path.display()
                );
            }
            Ok(None) => {}
            Err(e) => tracing::info!("engine: not using saved prefixes: {e}"),
        }
    }

    /// Writes the kept prefixes beside the session, when a reply named the file and something
    /// was read since the last save.
    fn save_prefixes(&mut self) {
        let Some(path) = self.prefix_file.clone().filter(|_| self.unsaved) else {
            return;
        };
        self.unsaved = false;
        let Some(identity) = self.identity() else {
            return;
        };
        let started = Instant::now();
        // A warm-up's prefixes are not saved: read back, they would take the place of the
        // ones a reply used, and a warm-up after the resume reads them again anyway.
        let used = self.prefixes.iter().filter(|p| !p.warmed);
        match prefix_file::save(&path, identity, used, self.limits.bytes) {
            Ok(bytes) => {
                let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
                stats.saved_bytes = bytes as u64;
                stats.save_micros = started.elapsed().as_micros() as u64;
            }
            Err(e) => tracing::warn!("engine: saving the session's prefixes failed: {e}"),
        }
    }

    fn reply(&mut self, job: Job) {
        // A panic in the arithmetic is a bug, but it must cost one reply, not the session: the
        // cache is dropped (it may be half written) and the thread serves the next request.
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.try_reply(&job)));
        if outcome.is_ok() {
            self.keep_working();
            self.unsaved = self.prefix_file.is_some();
        }
        let error = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(error)) => self.fail(error),
            Err(panic) => {
                self.working = self.empty_prefix();
                self.prefixes.clear();
                let what = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("no message");
                LlmError::Engine {
                    message: format!(
                        "the built-in engine failed on {} (an internal error: {what}); the next request starts afresh",
                        self.path.display()
                    ),
                }
            }
        };
        tracing::error!("engine: {error}");
        let _ = job.tx.blocking_send(Err(error));
    }

    fn try_reply(&mut self, job: &Job) -> Result<(), LocalError> {
        let request = &job.request;
        let prompt = self.template.prompt(&chat_messages(&request.messages))?;
        let ids = self.tokenizer.encode(&prompt, true, true);
        if ids.is_empty() {
            return Err(LocalError::from(EngineError::Tokenizer {
                path: self.path.clone(),
                reason: "the conversation became no tokens at all".into(),
            }));
        }
        let window = self.model.shape().context_length;
        if ids.len() >= window {
            return Err(LocalError::from(EngineError::ContextExceeded {
                path: self.path.clone(),
                tokens: ids.len(),
                window,
            }));
        }
        self.restore_prefixes(request.prefix_file.as_deref(), &ids);
        let started = Instant::now();
        // At least the last prompt token is computed: its logits choose the first reply token.
        let empty = self.model.new_cache();
        let Start { prefix, reused, .. } = self.prefixes.start(&ids, || empty);
        self.working = prefix;
        let mut logits = None;
        let new = ids.len() - reused;
        let mut done = 0usize;
        for step in ids[reused..].chunks(PREFILL_STEP) {
            if job.cancel.is_cancelled() {
                return Ok(());
            }
            // A long prompt takes seconds on a CPU: say how far it is (never blocking on it).
            if new > PREFILL_STEP {
                let _ = job.tx.try_send(Ok(Delta::Preparing(Preparing {
                    stage: "prompt",
                    model: self.name(),
                    done_bytes: done as u64,
                    total_bytes: Some(new as u64),
                    message: format!("reading the conversation: {done} of {new} new tokens"),
                })));
            }
            logits = Some(self.model.forward(step, &mut self.working.cache)?);
            self.working.tokens.extend_from_slice(step);
            done += step.len();
        }
        let Some(logits) = logits else {
            return Ok(());
        };
        let prefilled = ids.len() - reused;
        let prefill_time = started.elapsed();
        self.seed_counter += 1;
        let fallback_seed = seed_from_clock() ^ self.seed_counter;
        let options = &request.options;
        let sampling = Sampling::from_options(
            options.temperature,
            options.top_p,
            options.seed,
            fallback_seed,
        );
        let decode_started = Instant::now();
        let (end, generated) = self.generate(job, logits, sampling, window)?;
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.prompt_tokens = ids.len();
        stats.reused_tokens = reused;
        stats.prefilled_tokens = prefilled;
        stats.generated_tokens = generated;
        stats.prefill_micros = prefill_time.as_micros() as u64;
        stats.decode_micros = decode_started.elapsed().as_micros() as u64;
        stats.replies += 1;
        stats.total_prefilled += prefilled as u64;
        stats.total_reused += reused as u64;
        drop(stats);
        if let End::Finished(reason) = end {
            let usage = Usage {
                prompt_tokens: Some(ids.len() as u64),
                completion_tokens: Some(generated as u64),
            };
            let _ = job.tx.blocking_send(Ok(Delta::Done(Finish {
                reason,
                usage: Some(usage),
            })));
        }
        Ok(())
    }
}

fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The conversation as the engine's chat template reads it (public for the tests that count
/// the tokens the engine reads).
pub fn chat_messages(messages: &[crate::llm::Message]) -> Vec<seek_engine::chat::Message> {
    use seek_engine::chat::{Message, Role};
    messages
        .iter()
        .map(|m| {
            let role = match m.role {
                crate::llm::Role::System => Role::System,
                crate::llm::Role::User => Role::User,
                crate::llm::Role::Assistant => Role::Assistant,
            };
            Message::new(role, m.content.clone())
        })
        .collect()
}
