//! seek's own overhead per round of the agent loop: total turn time minus model time (an
//! instant in-process model) minus process time (the block's measured duration).
//! Run with `cargo bench --bench agent_round`; numbers in docs/benchmarks.md.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use seek::agent::{self, Command, Event};
use seek::config::{Config, Dirs, Env, Overrides};
use seek::llm::{ChatModel, ChatRequest, ChatStream, Delta, Finish, FinishReason, LlmError};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Answers instantly: a bash block, then a final answer, alternately.
struct InstantModel {
    calls: AtomicUsize,
}

impl ChatModel for InstantModel {
    fn stream(&self, _request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        let text = if call.is_multiple_of(2) {
            "Checking.\n```bash\ntrue\n```\n"
        } else {
            "All done."
        };
        let (tx, rx) = mpsc::channel(4);
        let _ = tx.try_send(Ok(Delta::Answer(text.to_owned())));
        let _ = tx.try_send(Ok(Delta::Done(Finish {
            reason: FinishReason::Stop,
            usage: None,
        })));
        ChatStream::new(rx, &cancel).0
    }

    fn list_models(&self) -> seek::BoxFuture<'_, Result<Vec<String>, LlmError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn describe(&self) -> String {
        "instant".into()
    }

    fn with_model(&self, _model: &str) -> Arc<dyn ChatModel> {
        unimplemented!("the benchmark never switches models")
    }
}

/// Streams one piece of a reply, then either a long-running block or nothing more (the
/// stream stays open until it is cancelled), so Stop has something to interrupt.
struct EndlessModel {
    long_block: bool,
}

impl ChatModel for EndlessModel {
    fn stream(&self, _request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let (tx, rx) = mpsc::channel(4);
        let (stream, producer_cancel) = ChatStream::new(rx, &cancel);
        if self.long_block {
            let _ = tx.try_send(Ok(Delta::Answer(
                "Waiting.\n```bash\necho started; sleep 1000\n```\n".to_owned(),
            )));
            let _ = tx.try_send(Ok(Delta::Done(Finish {
                reason: FinishReason::Stop,
                usage: None,
            })));
        } else {
            let _ = tx.try_send(Ok(Delta::Answer("Let me think".to_owned())));
            // Keep the sender alive until the stream is cancelled, like a server that stalls.
            tokio::spawn(async move {
                producer_cancel.cancelled().await;
                drop(tx);
            });
        }
        stream
    }

    fn list_models(&self) -> seek::BoxFuture<'_, Result<Vec<String>, LlmError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn describe(&self) -> String {
        "endless".into()
    }

    fn with_model(&self, _model: &str) -> Arc<dyn ChatModel> {
        unimplemented!("the benchmark never switches models")
    }
}

/// Time from `Stop` to `turn_finished`, stopping once the turn is in the state `ready` accepts.
fn stop_latency(
    runtime: &tokio::runtime::Runtime,
    config: &Arc<Config>,
    long_block: bool,
) -> Duration {
    let model = Arc::new(EndlessModel { long_block });
    let mut handle = runtime.block_on(async { agent::spawn(Arc::clone(config), model) });
    let _ = handle.commands.send(Command::Submit {
        prompt: "wait".into(),
        agent: None,
        context: None,
    });
    let latency = runtime.block_on(async {
        let mut stopped_at = None;
        while let Some(event) = handle.events.recv().await {
            let ready = match &event {
                Event::BlockOutput { text, .. } => long_block && text.contains("started"),
                Event::AnswerDelta { .. } => !long_block,
                Event::TurnFinished { .. } => {
                    return stopped_at.map_or(Duration::ZERO, |t: Instant| t.elapsed());
                }
                _ => false,
            };
            if ready && stopped_at.is_none() {
                stopped_at = Some(Instant::now());
                let _ = handle.commands.send(Command::Stop);
            }
        }
        Duration::ZERO
    });
    let _ = handle.commands.send(Command::Shutdown);
    let _ = runtime.block_on(handle.task);
    latency
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let work = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let overrides = Overrides {
        work_dir: Some(work.path().to_owned()),
        ..Overrides::default()
    };
    let dirs = Dirs {
        default_config_file: None,
        data_dir: work.path().join("data"),
    };
    let config = Config::resolve(&overrides, &Env::default(), &dirs, work.path())
        .unwrap_or_else(|e| panic!("config: {e}"));
    let config = Arc::new(config);

    let mut group = c.benchmark_group("agent");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("overhead_per_round", |b| {
        b.iter_custom(|iters| {
            let mut overhead = Duration::ZERO;
            for _ in 0..iters {
                // A fresh agent per task, so the conversation does not grow across iterations
                // (bounding it is the context budget's job, measured elsewhere).
                let model = Arc::new(InstantModel {
                    calls: AtomicUsize::new(0),
                });
                let mut handle =
                    runtime.block_on(async { agent::spawn(Arc::clone(&config), model) });
                let started = Instant::now();
                let _ = handle.commands.send(Command::Submit {
                    prompt: "check".into(),
                    agent: None,
                    context: None,
                });
                let (rounds, process_ms) = runtime.block_on(async {
                    let mut process_ms = 0.0;
                    while let Some(event) = handle.events.recv().await {
                        match event {
                            Event::BlockFinished { record } => process_ms += record.duration_ms,
                            Event::TurnFinished { rounds, .. } => return (rounds, process_ms),
                            _ => {}
                        }
                    }
                    (1, process_ms)
                });
                let total = started.elapsed();
                let own = total.saturating_sub(Duration::from_secs_f64(process_ms / 1000.0));
                overhead += own / rounds.max(1);
                let _ = handle.commands.send(Command::Shutdown);
                let _ = runtime.block_on(handle.task);
            }
            overhead.max(Duration::from_nanos(iters))
        })
    });
    for (name, long_block) in [("stop_while_streaming", false), ("stop_during_block", true)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| stop_latency(&runtime, &config, long_block))
                    .sum::<Duration>()
                    .max(Duration::from_nanos(iters))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
