//! The built-in engine's speed on a real GGUF file: decode and prefill tokens per second, the
//! second round's first-token latency with the conversation's prefix kept vs. recomputed, and
//! the process's peak memory. `scripts/bench-local.sh` runs it beside llama-server and prints
//! the comparison; alone: `SEEK_BENCH_GGUF=file.gguf cargo bench --bench local_engine`.
//! `SEEK_BENCH_SWITCHES=1` runs only the session part (follow-up, agent switches with and
//! without the idle-time warm-up, resume).
//!
//! Prints one `key value` line per measurement (the script reads them). Each number is the
//! best of `SEEK_BENCH_RUNS` runs (default 3): the machine is shared, and the best run is the
//! one least disturbed by others.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use seek::llm::{ChatRequest, Delta, GenerationOptions, Message, Role, WarmUp};
use seek::local::engine::{Engine, PrefixLimits};
use tokio_util::sync::CancellationToken;

/// The decode prompt (38 tokens with SmolLM2's template, as in the lead's llama.cpp runs).
const DECODE_PROMPT: &str = "Write a Python function that adds two numbers.";
/// Tokens generated for the decode measurement.
const DECODE_TOKENS: u64 = 64;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A prompt of roughly 500 tokens (536 with SmolLM2's template): varied prose, so the tokenizer does not compress it.
fn long_prompt() -> String {
    let sentences = [
        "The harbour town woke slowly, fishing boats knocking against the old stone pier.",
        "A baker on Mill Street pulled the first loaves from an oven older than the church.",
        "Children argued about whether the lighthouse keeper had ever really seen a whale.",
        "Rain came in from the west around noon and nobody seemed to mind it at all.",
        "The ferry schedule, pinned to a board outside the post office, was wrong again.",
        "Two retired sailors played chess every afternoon and never finished a single game.",
        "In autumn the market sold apples, smoked fish, wool socks and questionable honey.",
        "The schoolteacher kept a list of every ship that passed, with dates and weather.",
    ];
    let mut text = String::from("Summarise the following notes in three sentences.\n\n");
    for round in 0..3 {
        for (i, s) in sentences.iter().enumerate() {
            text.push_str(&format!("Note {}: {s} ", round * sentences.len() + i + 1));
        }
        text.push('\n');
    }
    text
}

/// A conversation sharing no prefix with the measured ones (its system message differs from
/// the template's default), so that the next reply computes its prompt from the start.
fn forget() -> ChatRequest {
    request(
        vec![
            Message::new(Role::System, "Reset."),
            Message::new(Role::User, "Hi"),
        ],
        1,
    )
}

fn request(messages: Vec<Message>, max_tokens: u64) -> ChatRequest {
    ChatRequest {
        messages,
        options: GenerationOptions {
            max_tokens,
            temperature: Some(0.0),
            top_p: None,
            seed: Some(1),
            context_window: 8192,
        },
        json_schema: None,
        prefix_file: None,
    }
}

/// Runs a reply to its end; returns its text and the time to the first answer text.
fn reply(
    runtime: &tokio::runtime::Runtime,
    engine: &Engine,
    request: ChatRequest,
) -> (String, Duration) {
    runtime.block_on(async {
        let started = Instant::now();
        let mut first = None;
        let mut text = String::new();
        let mut stream = engine.reply(request, &CancellationToken::new());
        while let Some(item) = stream.next().await {
            match item {
                Ok(Delta::Answer(piece)) => {
                    if first.is_none() && !piece.is_empty() {
                        first = Some(started.elapsed());
                    }
                    text.push_str(&piece);
                }
                Ok(_) => {}
                Err(e) => panic!("the reply failed: {e}"),
            }
        }
        (text, first.unwrap_or_else(|| started.elapsed()))
    })
}

/// A memory figure of this process from `/proc/self/status`, in bytes: `VmHWM` (the peak so
/// far) or `VmRSS` (now).
fn memory(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let path = match std::env::var_os("SEEK_BENCH_GGUF") {
        Some(p) => PathBuf::from(p),
        None => match std::env::var_os("HOME") {
            Some(home) => {
                PathBuf::from(home).join(".cache/seek-dev/SmolLM2-135M-Instruct.Q4_1.gguf")
            }
            None => {
                eprintln!("set SEEK_BENCH_GGUF to a .gguf file");
                return;
            }
        },
    };
    if !path.is_file() {
        eprintln!(
            "{} is not a file: set SEEK_BENCH_GGUF to a .gguf file",
            path.display()
        );
        return;
    }
    // The script gives llama-server the very same long prompt.
    if std::env::var_os("SEEK_BENCH_PRINT_PROMPT").is_some() {
        print!("{}", long_prompt());
        return;
    }
    let threads = env_usize("SEEK_BENCH_THREADS", 2);
    let runs = env_usize("SEEK_BENCH_RUNS", 3).max(1);
    // Per kernel, one thread (run with CANDLE_NUM_THREADS=1 so that candle's is one too).
    if std::env::var_os("SEEK_BENCH_KERNELS").is_some() {
        kernels(runs.max(5));
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    if std::env::var_os("SEEK_BENCH_SWITCHES").is_some() {
        println!("threads {threads}");
        switches(&runtime, &path, threads, runs);
        return;
    }
    let started = Instant::now();
    // One prefix kept: `forget` then really makes the next prompt computed from nothing.
    let one = PrefixLimits { count: 1, bytes: 0 };
    let engine = Engine::load_with(&path, threads, one).expect("the model loads");
    println!("load_ms {:.1}", started.elapsed().as_secs_f64() * 1e3);
    // Loading copies the tensors out of the file's mapping, which is dropped afterwards: the
    // peak is usually reached here, before any token.
    println!("load_peak_rss_bytes {}", memory("VmHWM:"));
    println!("loaded_rss_bytes {}", memory("VmRSS:"));
    println!("threads {threads}");
    println!("file_bytes {}", engine.info().file_bytes);

    // Decode: the short prompt, computed anew each run (an unrelated conversation in between).
    let mut decode = 0f64;
    let mut short_prefill = 0f64;
    let mut answer = String::new();
    for _ in 0..runs {
        let _ = reply(&runtime, &engine, forget());
        let (text, _) = reply(
            &runtime,
            &engine,
            request(vec![Message::new(Role::User, DECODE_PROMPT)], DECODE_TOKENS),
        );
        let stats = engine.stats();
        decode = decode.max(stats.generated_tokens as f64 / (stats.decode_micros as f64 / 1e6));
        short_prefill =
            short_prefill.max(stats.prefilled_tokens as f64 / (stats.prefill_micros as f64 / 1e6));
        answer = text;
    }
    let stats = engine.stats();
    println!("decode_tokens {}", stats.generated_tokens);
    println!("decode_tok_s {decode:.1}");
    println!("short_prompt_tokens {}", stats.prompt_tokens);
    println!("short_prefill_tok_s {short_prefill:.1}");
    println!("answer {answer:?}");

    // Prefill: the long prompt, all of it computed (a different conversation went before).
    let long = long_prompt();
    let mut prefill = 0f64;
    for _ in 0..runs {
        let _ = reply(&runtime, &engine, forget());
        let _ = reply(
            &runtime,
            &engine,
            request(vec![Message::new(Role::User, long.as_str())], 1),
        );
        let stats = engine.stats();
        prefill = prefill.max(stats.prefilled_tokens as f64 / (stats.prefill_micros as f64 / 1e6));
    }
    println!("prefill_tokens {}", engine.stats().prefilled_tokens);
    println!("prefill_tok_s {prefill:.1}");
    println!("peak_rss_bytes {}", memory("VmHWM:"));
    println!("generating_rss_bytes {}", memory("VmRSS:"));

    // Round 2 of a conversation: its prefix (the long prompt and the first answer) kept in the
    // cache, vs. the same conversation computed from nothing.
    let (first_answer, _) = reply(
        &runtime,
        &engine,
        request(vec![Message::new(Role::User, long.as_str())], 32),
    );
    let round_two = vec![
        Message::new(Role::User, long.as_str()),
        Message::new(Role::Assistant, first_answer.as_str()),
        Message::new(Role::User, "Now in one sentence."),
    ];
    let mut kept = Duration::MAX;
    let mut recomputed = Duration::MAX;
    for _ in 0..runs {
        // Round 1 again so that the cache holds exactly its conversation.
        let _ = reply(
            &runtime,
            &engine,
            request(vec![Message::new(Role::User, long.as_str())], 32),
        );
        let (_, first) = reply(&runtime, &engine, request(round_two.clone(), 1));
        kept = kept.min(first);
        let _ = reply(&runtime, &engine, forget());
        let (_, first) = reply(&runtime, &engine, request(round_two.clone(), 1));
        recomputed = recomputed.min(first);
    }
    println!("round2_prompt_tokens {}", engine.stats().prompt_tokens);
    println!("round2_kept_ms {:.1}", kept.as_secs_f64() * 1e3);
    println!("round2_recomputed_ms {:.1}", recomputed.as_secs_f64() * 1e3);
    drop(engine);
    switches(&runtime, &path, threads, runs);
}

/// An agent's system prompt of roughly 300 tokens: its role, then rules (the numbers make
/// each agent's differ from its first line on).
fn agent_prompt(agent: &str) -> String {
    let mut text = format!("You are the {agent} agent of a terminal assistant.\n");
    for rule in 0..14 {
        text.push_str(&format!(
            "Rule {rule} of the {agent} agent: answer with one fenced code block when a command is needed, explain briefly, and never invent file names.\n"
        ));
    }
    text
}

/// A session of about 2,000 tokens under `agent`'s prompt: tasks, replies and results.
fn session(agent: &str, turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::new(Role::System, agent_prompt(agent))];
    for i in 0..turns {
        messages.push(Message::new(
            Role::User,
            format!("Task {i}: count the lines of every Python file under src/module{i} and print the three longest with their sizes."),
        ));
        messages.push(Message::new(
            Role::Assistant,
            format!("```bash\nfind src/module{i} -name '*.py' -exec wc -l {{}} + | sort -n | tail -n 4\n```"),
        ));
        messages.push(Message::new(
            Role::User,
            format!("[success] 120 src/module{i}/a.py\n 340 src/module{i}/b.py\n 515 src/module{i}/c.py\n 975 total"),
        ));
        messages.push(Message::new(
            Role::Assistant,
            format!("The longest file in module {i} is c.py with 515 lines, then b.py (340) and a.py (120)."),
        ));
    }
    messages
}

fn asked(mut messages: Vec<Message>, task: &str) -> Vec<Message> {
    messages.push(Message::new(Role::User, task));
    messages
}

/// No conversation read twice: in a session of about 2,000 tokens, the first token after the
/// same agent's follow-up, after switching to another agent and back, after the first switch
/// to an agent never used, and after resuming the session in a new engine from its saved
/// prefixes; and the whole conversation read from nothing, for scale.
fn switches(
    runtime: &tokio::runtime::Runtime,
    path: &std::path::Path,
    threads: usize,
    runs: usize,
) {
    let turns = 10;
    let coder = session("coder", turns);
    let casual = session("casual", turns);
    let first = |m: Vec<Message>| request(m, 1);
    let (mut follow, mut back, mut new_agent, mut resumed, mut scratch) = (
        Duration::MAX,
        Duration::MAX,
        Duration::MAX,
        Duration::MAX,
        Duration::MAX,
    );
    let mut tokens = 0;
    let dir = std::env::temp_dir().join(format!("seek-bench-prefixes-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join("session.kv");
    let (mut saved_bytes, mut save_ms) = (0, 0.0);
    for run in 0..runs {
        let engine = Engine::load(path, threads).expect("the model loads");
        let with_file = |m: Vec<Message>| ChatRequest {
            prefix_file: Some(file.clone()),
            ..first(m)
        };
        let _ = std::fs::remove_file(&file);
        // The coder's session, read once.
        let _ = reply(runtime, &engine, with_file(coder.clone()));
        tokens = engine.settled_stats().prompt_tokens;
        let (_, t) = reply(
            runtime,
            &engine,
            with_file(asked(coder.clone(), "And module 0?")),
        );
        follow = follow.min(t);
        // The first switch to the casual agent: another system prompt, read whole.
        let (_, t) = reply(
            runtime,
            &engine,
            with_file(asked(casual.clone(), "Thanks!")),
        );
        new_agent = new_agent.min(t);
        // Back to the coder: its prefix was kept.
        let (_, t) = reply(
            runtime,
            &engine,
            with_file(asked(coder.clone(), "And module 1?")),
        );
        back = back.min(t);
        let stats = engine.settled_stats();
        saved_bytes = stats.saved_bytes;
        save_ms = stats.save_micros as f64 / 1e3;
        drop(engine);
        // `seek -c`: a new engine, the session's saved prefixes.
        let engine = Engine::load(path, threads).expect("the model loads");
        let (_, t) = reply(
            runtime,
            &engine,
            with_file(asked(coder.clone(), "And module 2?")),
        );
        resumed = resumed.min(t);
        if run == 0 {
            let fresh = Engine::load(path, threads).expect("the model loads");
            let (_, t) = reply(
                runtime,
                &fresh,
                first(asked(coder.clone(), "And module 2?")),
            );
            scratch = scratch.min(t);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let warm = warmed_switches(runtime, path, threads, runs, &coder, &casual);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("session_prompt_tokens {tokens}");
    println!("session_follow_up_first_token_ms {:.1}", ms(follow));
    println!("session_switch_back_first_token_ms {:.1}", ms(back));
    println!("session_resume_first_token_ms {:.1}", ms(resumed));
    println!("session_first_switch_first_token_ms {:.1}", ms(new_agent));
    println!("session_from_nothing_first_token_ms {:.1}", ms(scratch));
    println!("session_saved_bytes {saved_bytes}");
    println!("session_save_ms {save_ms:.1}");
    println!("session_warm_up_ms {:.1}", ms(warm.warm_up));
    println!("session_warmed_tokens {}", warm.warmed_tokens);
    println!(
        "session_warmed_follow_up_first_token_ms {:.1}",
        ms(warm.follow)
    );
    println!(
        "session_first_switch_warmed_first_token_ms {:.1}",
        ms(warm.switch)
    );
    println!(
        "session_first_switch_warmed_ratio {:.2}",
        warm.switch.as_secs_f64() / warm.follow.as_secs_f64()
    );
    println!(
        "session_first_switch_immediate_first_token_ms {:.1}",
        ms(warm.immediate)
    );
    println!(
        "session_first_switch_immediate_ratio {:.2}",
        warm.immediate.as_secs_f64() / warm.follow.as_secs_f64()
    );
}

/// The idle-time warm-up's measurements, each the best of the runs.
struct Warmed {
    /// The same agent's follow-up on the same engine, the reference.
    follow: Duration,
    /// From handing the engine the conversations to read until it has read them: the idle
    /// time the warm-up needs.
    warm_up: Duration,
    warmed_tokens: usize,
    /// The first switch to an agent never used, once the warm-up has ended.
    switch: Duration,
    /// The same switch asked at once after the warm-up was handed over (a user faster than it).
    immediate: Duration,
}

/// The first switch to an agent never used in the session, after the idle-time warm-up (as
/// the runtime hands it over once a task ends: the agent that answered first, then the
/// others), and when the user asks before it could read anything.
fn warmed_switches(
    runtime: &tokio::runtime::Runtime,
    path: &std::path::Path,
    threads: usize,
    runs: usize,
    coder: &[Message],
    casual: &[Message],
) -> Warmed {
    let first = |m: Vec<Message>| request(m, 1);
    let warm_up = || WarmUp {
        conversations: vec![coder.to_vec(), casual.to_vec()],
        prefix_file: None,
    };
    let mut best = Warmed {
        follow: Duration::MAX,
        warm_up: Duration::MAX,
        warmed_tokens: 0,
        switch: Duration::MAX,
        immediate: Duration::MAX,
    };
    for _ in 0..runs {
        let engine = Engine::load(path, threads).expect("the model loads");
        let _ = reply(runtime, &engine, first(coder.to_vec()));
        let (_, t) = reply(
            runtime,
            &engine,
            first(asked(coder.to_vec(), "And module 0?")),
        );
        best.follow = best.follow.min(t);
        let started = Instant::now();
        engine.warm(warm_up());
        let stats = engine.settled_stats();
        best.warm_up = best.warm_up.min(started.elapsed());
        best.warmed_tokens = stats.warmed_tokens;
        let (_, t) = reply(runtime, &engine, first(asked(casual.to_vec(), "Thanks!")));
        best.switch = best.switch.min(t);
        drop(engine);

        let engine = Engine::load(path, threads).expect("the model loads");
        let _ = reply(runtime, &engine, first(coder.to_vec()));
        let _ = reply(
            runtime,
            &engine,
            first(asked(coder.to_vec(), "And module 0?")),
        );
        engine.warm(warm_up());
        let (_, t) = reply(runtime, &engine, first(asked(casual.to_vec(), "Thanks!")));
        best.immediate = best.immediate.min(t);
    }
    best
}

/// Microseconds of the best of `runs` calls of `f`.
fn best_micros(runs: usize, mut f: impl FnMut()) -> f64 {
    (0..runs)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed().as_secs_f64() * 1e6
        })
        .fold(f64::INFINITY, f64::min)
}

/// Each kernel alone on one thread against candle's `QMatMul` on a 1536 × 1536 matrix (the
/// SmolLM2 FFN's width), for one activation row (decode) and 64 (prefill): `kernel` lines.
fn kernels(runs: usize) {
    use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
    use candle_core::{Device, Module, Tensor};
    use seek::local::kernels::Kernel;
    let (n, k) = (1536, 1536);
    let dense = Tensor::randn(0f32, 1.0, (n, k), &Device::Cpu).expect("random weights");
    for dtype in [
        GgmlDType::Q4_1,
        GgmlDType::Q8_0,
        GgmlDType::Q4K,
        GgmlDType::Q6K,
    ] {
        let weight = QTensor::quantize(&dense, dtype).expect("quantizes");
        let bytes = weight.data().expect("cpu bytes").into_owned();
        let candle = QMatMul::from_qtensor(weight).expect("a QMatMul");
        for seq in [1usize, 64] {
            let x = Tensor::randn(0f32, 1.0, (1, seq, k), &Device::Cpu).expect("random input");
            let candle_us = best_micros(runs, || {
                candle.forward(&x).expect("candle multiplies");
            });
            let input = x
                .flatten_all()
                .and_then(|t| t.to_vec1::<f32>())
                .expect("f32");
            let ours = |kernel: Kernel| {
                let act_bytes = kernel.activation_row_bytes(k);
                let weight_bytes = kernel.weight_row_bytes(k);
                let mut acts = vec![0u8; seq * act_bytes];
                let mut out = vec![0f32; n * seq];
                best_micros(runs, || {
                    for (row, q) in input.chunks_exact(k).zip(acts.chunks_exact_mut(act_bytes)) {
                        kernel.quantize(row, q);
                    }
                    if seq == 1 {
                        kernel.dots(k, &bytes, &acts, &mut out);
                    } else {
                        for (j, o) in out.chunks_exact_mut(seq).enumerate() {
                            let row = &bytes[j * weight_bytes..(j + 1) * weight_bytes];
                            kernel.dots(k, row, &acts, o);
                        }
                    }
                })
            };
            let scalar_us = ours(Kernel::scalar(dtype).expect("a scalar kernel"));
            let chosen = Kernel::ours(dtype).expect("a kernel");
            let chosen_us = ours(chosen);
            println!(
                "kernel {dtype:?} seq {seq} candle_us {candle_us:.0} scalar_us {scalar_us:.0} \
                 {}_us {chosen_us:.0}",
                if chosen.simd { "simd" } else { "scalar" }
            );
        }
    }
}
