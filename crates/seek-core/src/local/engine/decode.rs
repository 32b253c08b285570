//! A reply's token loop: sampling, streaming each piece as it is decoded (whole UTF-8
//! characters, `<think>` split off, repetition cut), feeding each token back, and ending at the
//! model's end of turn, a limit, or the caller's stop.
//!
//! It must not read prompts (the engine does) nor keep prefixes (`prefixes`).

use super::{Job, LocalError, Worker};
use crate::llm::{Delta, FinishReason, RepetitionGuard};
use crate::local::sampler::{Sampler, Sampling};
use crate::local::utf8::Utf8Stream;
use crate::protocol::{ThinkDelta, ThinkSplitter};

/// How a reply's token loop ended.
pub(super) enum End {
    Finished(FinishReason),
    /// Stopped by the caller or the stream was dropped: nothing more is sent.
    Abandoned,
}

impl Worker {
    /// The token loop: samples, streams, and feeds each token back until the model ends its
    /// turn, a limit is reached, or the caller stops.
    pub(super) fn generate(
        &mut self,
        job: &Job,
        mut logits: Vec<f32>,
        sampling: Sampling,
        window: usize,
    ) -> Result<(End, usize), LocalError> {
        let mut sampler = Sampler::new(sampling);
        let mut text = Utf8Stream::default();
        let mut splitter = ThinkSplitter::default();
        let mut guard = RepetitionGuard::default();
        let max_tokens = usize::try_from(job.request.options.max_tokens).unwrap_or(usize::MAX);
        let mut generated = 0usize;
        loop {
            if job.cancel.is_cancelled() {
                return Ok((End::Abandoned, generated));
            }
            let token = sampler.next(&logits);
            if self.tokenizer.end_of_generation().contains(&token) {
                break;
            }
            generated += 1;
            let piece = text.push(self.tokenizer.token_bytes(token));
            for delta in splitter.push(&piece) {
                match send(job, delta, &mut guard) {
                    Sent::Ok => {}
                    Sent::Gone => return Ok((End::Abandoned, generated)),
                    Sent::Loop(r) => {
                        return Ok((End::Finished(FinishReason::Repetition(r)), generated));
                    }
                }
            }
            if generated >= max_tokens || self.working.cache.len() + 1 >= window {
                return self.flush(job, text, splitter, guard, FinishReason::Length, generated);
            }
            logits = self.model.forward(&[token], &mut self.working.cache)?;
            self.working.tokens.push(token);
        }
        self.flush(job, text, splitter, guard, FinishReason::Stop, generated)
    }

    /// Sends what the UTF-8 assembler and the think splitter still hold, then the reason.
    fn flush(
        &self,
        job: &Job,
        text: Utf8Stream,
        mut splitter: ThinkSplitter,
        mut guard: RepetitionGuard,
        reason: FinishReason,
        generated: usize,
    ) -> Result<(End, usize), LocalError> {
        let rest = text.finish();
        let mut deltas = splitter.push(&rest);
        deltas.extend(splitter.finish());
        for delta in deltas {
            match send(job, delta, &mut guard) {
                Sent::Ok => {}
                Sent::Gone => return Ok((End::Abandoned, generated)),
                Sent::Loop(r) => {
                    return Ok((End::Finished(FinishReason::Repetition(r)), generated));
                }
            }
        }
        Ok((End::Finished(reason), generated))
    }
}

enum Sent {
    Ok,
    Gone,
    Loop(crate::llm::Repetition),
}

fn send(job: &Job, delta: ThinkDelta, guard: &mut RepetitionGuard) -> Sent {
    let (delta, repetition) = match delta {
        ThinkDelta::Answer(text) if text.is_empty() => return Sent::Ok,
        ThinkDelta::Answer(text) => {
            let repetition = guard.push(&text);
            (Delta::Answer(text), repetition)
        }
        ThinkDelta::Reasoning(text) => (Delta::Reasoning(text), None),
        ThinkDelta::AnswerWasReasoning => (Delta::AnswerWasReasoning, None),
    };
    if job.tx.blocking_send(Ok(delta)).is_err() {
        return Sent::Gone;
    }
    match repetition {
        Some(r) => Sent::Loop(r),
        None => Sent::Ok,
    }
}
