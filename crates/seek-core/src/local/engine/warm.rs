//! The warm-up: while the engine is idle, it reads ahead the conversations the next request may
//! start with (the agents the router may pick next, each under its own system prompt), so that
//! the first switch to one of them reads only the new message.
//!
//! Owns when a warm-up runs and stops: it starts only when nothing else is queued, looks at the
//! queue between two chunks of `PREFILL_STEP` tokens, and gives way to any request (a reply,
//! or a newer warm-up) at once, keeping what it has read so far as a prefix; a request to
//! settle waits for it. It reads within the prefixes' bounds without evicting the prefix of the
//! reply that just ended (`Prefixes::pin_newest`), and stops at the first conversation that
//! does not fit. It must not decide which conversations to read (the agent does: it renders
//! them with the very code its requests are rendered with) nor sample anything.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Instant;

use super::{PREFILL_STEP, SAVE_WHEN_IDLE_FOR, Work, Worker, chat_messages};
use crate::local::LocalError;

/// How far a warm-up is: after each chunk read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmStep {
    /// Which conversation (its index in the warm-up's list).
    pub conversation: usize,
    /// Its tokens now in a prefix, and its length.
    pub done: usize,
    pub total: usize,
}

/// Called on the engine thread after each chunk a warm-up reads.
pub type WarmHook = Box<dyn FnMut(WarmStep) + Send>;

pub(super) struct WarmJob {
    pub conversations: Vec<Vec<crate::llm::Message>>,
    pub prefix_file: Option<PathBuf>,
    pub hook: Option<WarmHook>,
}

/// What the engine thread does after a warm-up.
pub(super) enum After {
    /// Waits for the next request.
    Idle,
    /// Serves this one, taken off the queue while warming.
    Work(Work),
    /// Stops: the engine was dropped.
    Gone,
}

/// Why reading a conversation stopped early.
enum Stop {
    Interrupted(Work),
    Gone,
}

impl Worker {
    /// Runs a warm-up: the conversations in order, each continuing the kept prefix that shares
    /// the most with it, until all are read, the bounds are reached, or something is asked.
    /// Computes on `pool`, chunk by chunk (the queue is read between two, on this thread).
    pub(super) fn warm(
        &mut self,
        mut job: WarmJob,
        incoming: &Receiver<Work>,
        pool: &rayon::ThreadPool,
    ) -> After {
        let started = Instant::now();
        let mut settles = Vec::new();
        {
            let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            stats.warm_ups += 1;
            stats.warmed_tokens = 0;
            stats.warmed_conversations = 0;
        }
        self.prefixes.pin_newest();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.warm_all(&mut job, incoming, pool, &mut settles)
        }));
        self.prefixes.unpin_all();
        let after = match outcome {
            Ok(Ok(None)) => After::Idle,
            Ok(Ok(Some(Stop::Interrupted(work)))) => {
                let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
                stats.warm_ups_interrupted += 1;
                After::Work(work)
            }
            Ok(Ok(Some(Stop::Gone))) => After::Gone,
            Ok(Err(error)) => {
                // Nothing was asked of this warm-up: a failure is only logged, and the next
                // request meets the same conversation and says what is wrong.
                tracing::info!("engine: warm-up stopped: {error}");
                After::Idle
            }
            Err(_) => {
                tracing::error!(
                    "engine: the warm-up failed (an internal error); the next request starts afresh"
                );
                self.working = self.empty_prefix();
                self.prefixes.clear();
                After::Idle
            }
        };
        {
            let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            stats.warm_micros = started.elapsed().as_micros() as u64;
            stats.kept_prefixes = self.prefixes.len();
        }
        // Settling means every request asked before is done; the warm-up was.
        for done in settles {
            self.save_prefixes();
            let _ = done.send(());
        }
        after
    }

    fn warm_all(
        &mut self,
        job: &mut WarmJob,
        incoming: &Receiver<Work>,
        pool: &rayon::ThreadPool,
        settles: &mut Vec<std::sync::mpsc::Sender<()>>,
    ) -> Result<Option<Stop>, LocalError> {
        let window = self.model.shape().context_length;
        let per_token = {
            let (layers, heads, dim) = self.model.cache_dims();
            layers * heads * dim * 2 * size_of::<f32>()
        };
        for (index, messages) in job.conversations.iter().enumerate() {
            if let Some(stop) = self.look_at_queue(incoming, settles) {
                return Ok(Some(stop));
            }
            // The conversation closed, with no turn opened after it: the next request renders
            // the same text and then the new message (templates render a conversation
            // message by message, so the one is the start of the other).
            let text = self.template.render(&chat_messages(messages), false)?;
            let ids = self.tokenizer.encode(&text, true, true);
            if ids.is_empty() || ids.len() + 1 >= window {
                continue;
            }
            if index == 0 {
                // A resumed session's saved prefix is read back now, not at its first request.
                self.restore_prefixes(job.prefix_file.as_deref(), &ids);
            }
            if !self.prefixes.fits_warmed(ids.len() * per_token) {
                break;
            }
            let empty = self.model.new_cache();
            let Some(start) = self.prefixes.start_warm(&ids, || empty) else {
                self.count_warmed();
                continue;
            };
            let mut prefix = start.prefix;
            let mut stop = None;
            for step in ids[start.reused..].chunks(PREFILL_STEP) {
                if let Some(found) = self.look_at_queue(incoming, settles) {
                    stop = Some(found);
                    break;
                }
                let model = &self.model;
                pool.install(|| model.forward(step, &mut prefix.cache))?;
                prefix.tokens.extend_from_slice(step);
                {
                    let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
                    stats.warmed_tokens += step.len();
                    stats.total_warmed += step.len() as u64;
                }
                if let Some(hook) = job.hook.as_mut() {
                    hook(WarmStep {
                        conversation: index,
                        done: prefix.tokens.len(),
                        total: ids.len(),
                    });
                }
            }
            // What was read is kept even when interrupted: the request that interrupted may
            // well be this very conversation's next one.
            let whole = stop.is_none();
            let kept = self.prefixes.keep_warmed(prefix, start.was_pinned);
            if let Some(stop) = stop {
                return Ok(Some(stop));
            }
            if !kept {
                break;
            }
            if whole {
                self.count_warmed();
            }
        }
        Ok(None)
    }

    /// One more conversation is ready for its next request.
    fn count_warmed(&self) {
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.warmed_conversations += 1;
    }

    /// Between two chunks: a request waiting stops the warm-up (a request to settle is held
    /// until it ends); the session's prefixes are saved when the engine has been idle as long
    /// as a save waits for.
    fn look_at_queue(
        &mut self,
        incoming: &Receiver<Work>,
        settles: &mut Vec<std::sync::mpsc::Sender<()>>,
    ) -> Option<Stop> {
        loop {
            match incoming.try_recv() {
                Ok(Work::Settle(done)) => settles.push(done),
                Ok(work) => return Some(Stop::Interrupted(work)),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return Some(Stop::Gone),
            }
        }
        if self.unsaved && self.idle_since.elapsed() >= SAVE_WHEN_IDLE_FOR {
            self.save_prefixes();
        }
        None
    }
}
