//! Microseconds per matrix product of our kernels (on the file's blocks, and on the weights
//! repacked into tiles where the CPU has those kernels) against candle's `QMatMul`, per weight
//! type, for one activation row (decode) and 64 (prefill), at SmolLM2's and Qwen2.5-1.5B's
//! shapes.
//!
//! Owns only the measuring; the kernels are `seek_engine::kernels`, the layer that splits the
//! work is `seek_engine::linear`. Run with `cargo bench -p seek-engine --bench kernels`;
//! `RAYON_NUM_THREADS=1` makes both sides single-threaded (candle's pool reads it too),
//! `KERNEL_BENCH_TYPES=Q5_0,Q4K` and `KERNEL_BENCH_SHAPES=1536x1536` narrow the run.
//! Each figure is the best of several timed batches (the machine may be shared).

use std::sync::Arc;
use std::time::{Duration, Instant};

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use seek_engine::kernels::Kernel;
use seek_engine::linear::Linear;

const TYPES: [GgmlDType; 8] = [
    GgmlDType::Q4_0,
    GgmlDType::Q4_1,
    GgmlDType::Q5_0,
    GgmlDType::Q5_1,
    GgmlDType::Q8_0,
    GgmlDType::Q4K,
    GgmlDType::Q5K,
    GgmlDType::Q6K,
];

/// `(n, k)`: outputs × inputs.
const SHAPES: [(usize, usize); 4] = [(576, 576), (1536, 1536), (8960, 1536), (1536, 8960)];

const ROWS: [usize; 2] = [1, 64];

fn values(count: usize, seed: u64) -> Vec<f32> {
    let mut state = seed | 1;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

/// The best time of one call of each of `calls`, over rounds lasting about `budget` in all;
/// each round times a batch of every call in turn, so that a change of the machine's load
/// falls on all of them alike.
fn best_of(budget: Duration, calls: &mut [Box<dyn FnMut() + '_>]) -> Vec<Duration> {
    let per_batch: Vec<u32> = calls
        .iter_mut()
        .map(|f| {
            f();
            let start = Instant::now();
            f();
            let once = start.elapsed().max(Duration::from_micros(1));
            let share = budget.as_secs_f64() / 12.0 / calls_len_hint();
            ((share / once.as_secs_f64()) as u32).max(1)
        })
        .collect();
    let mut best = vec![Duration::MAX; calls.len()];
    for _ in 0..12 {
        for ((f, count), best) in calls.iter_mut().zip(&per_batch).zip(&mut best) {
            let start = Instant::now();
            for _ in 0..*count {
                f();
            }
            *best = (*best).min(start.elapsed() / *count);
        }
    }
    best
}

/// The number of candidates a round shares its budget with (candle and up to four of ours).
fn calls_len_hint() -> f64 {
    5.0
}

fn listed(variable: &str, name: &str) -> bool {
    std::env::var(variable)
        .map(|list| list.split(',').any(|item| item.eq_ignore_ascii_case(name)))
        .unwrap_or(true)
}

fn main() -> candle_core::Result<()> {
    let budget = Duration::from_millis(
        std::env::var("KERNEL_BENCH_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .unwrap_or(400),
    );
    println!(
        "threads {}; µs per matmul (best of batches); (candle / ours)",
        rayon::current_num_threads()
    );
    for dtype in TYPES {
        if Kernel::ours(dtype).is_none() {
            continue;
        };
        if !listed("KERNEL_BENCH_TYPES", &format!("{dtype:?}")) {
            continue;
        }
        for (n, k) in SHAPES {
            if !listed("KERNEL_BENCH_SHAPES", &format!("{n}x{k}")) {
                continue;
            }
            let dense = Tensor::from_vec(values(n * k, 7), (n, k), &Device::Cpu)?;
            let weight = Arc::new(QTensor::quantize(&dense, dtype)?);
            let mut candidates = vec![(
                "candle".to_string(),
                Linear::with_kernel(weight.clone(), None)?,
            )];
            for kernel in Kernel::variants(dtype) {
                candidates.push((
                    kernel.isa.to_string(),
                    Linear::with_kernel(weight.clone(), Some(kernel))?,
                ));
            }
            // The weights repacked into tiles, as the engine loads them on this CPU.
            if let Some(packed) = Linear::packed(&weight)? {
                candidates.push(("packed".to_string(), packed));
            }
            for rows in ROWS {
                let x = Tensor::from_vec(values(rows * k, 11), (1, rows, k), &Device::Cpu)?;
                let mut calls: Vec<Box<dyn FnMut()>> = candidates
                    .iter()
                    .map(|(_, linear)| {
                        let x = &x;
                        Box::new(move || {
                            std::hint::black_box(linear.forward(x).map(|y| y.dims().len())).ok();
                        }) as Box<dyn FnMut()>
                    })
                    .collect();
                let times = best_of(budget, &mut calls);
                let mut line = format!("{:<5} {n:>4}x{k:<4} rows {rows:>2}:", format!("{dtype:?}"));
                let candle = times[0].as_secs_f64() * 1e6;
                for ((name, _), time) in candidates.iter().zip(&times) {
                    let micros = time.as_secs_f64() * 1e6;
                    if name == "candle" {
                        line += &format!("  candle {micros:>9.1}");
                    } else {
                        line += &format!("  {name} {micros:>9.1} ({:.2}×)", candle / micros);
                    }
                }
                println!("{line}");
            }
        }
    }
    Ok(())
}
