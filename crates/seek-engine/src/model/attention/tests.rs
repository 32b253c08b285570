//! The attention arithmetic's tests: each vector loop against the portable one or the one-query
//! loop it must equal to the bit, and the rotary embedding.

use super::*;

/// `len` keys (`sin(0.37·i)·scale`) and values (`cos(0.11·i)`): a cache's rows for the tests.
fn cached_rows(len: usize, scale: f32) -> (Vec<f32>, Vec<f32>) {
    let keys = (0..len).map(|i| (i as f32 * 0.37).sin() * scale).collect();
    let values = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
    (keys, values)
}

#[test]
fn the_simd_loops_equal_the_portable_ones_up_to_rounding() {
    // Heads of 64 and 80 values (a strip and a rest), rows of 3 heads, 37 positions.
    for dim in [64, 80, 6] {
        let stride = 3 * dim;
        let keys: Vec<f32> = (0..37 * stride).map(|i| (i as f32 * 0.37).sin()).collect();
        let values: Vec<f32> = (0..37 * stride).map(|i| (i as f32 * 0.11).cos()).collect();
        let cache = Cached {
            keys: &keys,
            values: &values,
            stride,
            offset: dim,
        };
        let q: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.05).cos()).collect();
        let (fast, portable) = (Vectors::for_this_cpu(), Vectors::portable());
        let (mut a, mut b) = (vec![0f32; 37], vec![0f32; 37]);
        fast.scores(&q, &cache, 0.5, &mut a);
        portable.scores(&q, &cache, 0.5, &mut b);
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-4, "{dim}: {x} vs {y}");
        }
        let (mut x, mut y) = (vec![0f32; dim], vec![1f32; dim]);
        fast.weighted_sum(&a, &cache, &mut x);
        portable.weighted_sum(&a, &cache, &mut y);
        for (p, q) in x.iter().zip(&y) {
            assert!((p - q).abs() < 1e-4, "{dim}: {p} vs {q}");
        }
    }
}

/// The eight-wide `exp` is within 2 ulp of the exact value over attention's arguments
/// (−87 to 0, and a little above), keeps a NaN, and the sums it gives equal the portable
/// loop's up to rounding, for lengths with and without a tail.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_vector_exp_is_within_two_ulp() {
    use std::arch::x86_64::*;
    if !simd::available() {
        return;
    }
    let mut worst = 0f64;
    let mut x = -87.0f32;
    while x < 1.0 {
        let input = [
            x,
            x * 0.999,
            x + 1e-3,
            -x.abs() * 1e-3,
            0.0,
            -1e-30,
            x / 7.0,
            -0.5,
        ];
        let mut out = [0f32; 8];
        // SAFETY: `simd::available()` checked AVX2 and FMA; both arrays are eight f32.
        unsafe {
            _mm256_storeu_ps(
                out.as_mut_ptr(),
                simd::exp8(_mm256_loadu_ps(input.as_ptr())),
            )
        };
        for (i, o) in input.iter().zip(out) {
            let exact = f64::from(*i).exp();
            let ulp = f64::from(f32::EPSILON) * exact;
            worst = worst.max((f64::from(o) - exact).abs() / ulp);
        }
        x += 0.0137;
    }
    assert!(worst <= 2.0, "{worst} ulp");
    let mut nan = [f32::NAN; 8];
    // SAFETY: as above.
    unsafe { _mm256_storeu_ps(nan.as_mut_ptr(), simd::exp8(_mm256_loadu_ps(nan.as_ptr()))) };
    assert!(nan.iter().all(|v| v.is_nan()));
    for len in [1, 7, 8, 37, 200] {
        let scores: Vec<f32> = (0..len).map(|i| ((i * 37) % 23) as f32 * -0.7).collect();
        let (mut fast, mut portable) = (scores.clone(), scores);
        let (f, p) = (
            Vectors::for_this_cpu().exp_sum(&mut fast, 0.5),
            Vectors::portable().exp_sum(&mut portable, 0.5),
        );
        assert!((f - p).abs() <= 1e-6 * p, "{len}: {f} against {p}");
        for (a, b) in fast.iter().zip(&portable) {
            assert!((a - b).abs() <= 2.5e-7 * b, "{len}: {a} against {b}");
        }
    }
}

/// The vector SiLU is the portable one up to the exp's rounding, and a value's result does
/// not depend on where it sits (a tail of fewer than eight goes through the same loop).
#[test]
fn the_vector_silu_equals_the_portable_one_and_ignores_its_place() {
    let values: Vec<f32> = (0..203).map(|i| (i as f32 - 100.0) * 0.37).collect();
    let (mut fast, mut portable) = (values.clone(), values.clone());
    Vectors::for_this_cpu().silu(&mut fast);
    Vectors::portable().silu(&mut portable);
    for (a, b) in fast.iter().zip(&portable) {
        assert!(
            (a - b).abs() <= 3e-7 * b.abs().max(1e-30),
            "{a} against {b}"
        );
    }
    for start in [0, 1, 5, 197] {
        let mut alone = values[start..].to_vec();
        Vectors::for_this_cpu().silu(&mut alone);
        assert_eq!(alone, fast[start..], "from {start}");
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn heads_of_64_score_exactly_as_any_other_size() {
    if !simd::available() {
        return;
    }
    let keys: Vec<f32> = (0..20 * 128).map(|i| (i as f32 * 0.37).sin()).collect();
    let cache = Cached {
        keys: &keys,
        values: &keys,
        stride: 128,
        offset: 64,
    };
    let q: Vec<f32> = (0..64).map(|i| (i as f32 * 0.05).cos()).collect();
    let (mut fast, mut general) = (vec![0f32; 20], vec![0f32; 20]);
    simd::scores(&q, &cache, 0.125, &mut fast);
    simd::scores_general(&q, &cache, 0.125, &mut general);
    assert_eq!(fast, general);
}

/// Heads read together at one position (a decode step's block) give each head's one-head
/// result to the bit: heads of 64 and 128 (the AVX-512 loops), 80 and 6 (one by one), one to
/// four heads and six, at several depths.
#[test]
fn heads_read_together_equal_each_head_alone_to_the_bit() {
    #[cfg(target_arch = "x86_64")]
    if !simd::wide_available() {
        eprintln!("the AVX-512 loops that share reads are not run: this CPU lacks AVX-512");
    }
    for vectors in [Vectors::for_this_cpu(), Vectors::portable()] {
        for dim in [64, 128, 80, 6] {
            let stride = 2 * dim;
            let positions = 77;
            let (keys, values) = cached_rows(positions * stride, 2.0);
            let cache = Cached {
                keys: &keys,
                values: &values,
                stride,
                offset: dim,
            };
            for heads in [1, 2, 3, MAX_HEADS, 6] {
                let queries: Vec<f32> = (0..heads * dim)
                    .map(|i| (i as f32 * 0.05).cos() - 0.2)
                    .collect();
                for position in [0, 1, 15, 16, 76] {
                    let mut together = vec![0f32; heads * dim];
                    let mut scores = Vec::new();
                    let one_position = Queries {
                        values: &queries,
                        dim,
                        positions: 1,
                        first_position: position,
                    };
                    attend_block(&vectors, &one_position, &cache, &mut scores, &mut together);
                    for (h, q) in queries.chunks_exact(dim).enumerate() {
                        let mut alone = vec![0f32; dim];
                        attend(&vectors, q, &cache, position, &mut scores, &mut alone);
                        assert_eq!(
                            together[h * dim..(h + 1) * dim],
                            alone[..],
                            "heads of {dim}, {heads} at once, head {h}, position {position}"
                        );
                    }
                }
            }
        }
    }
}

/// A block of positions gives each position's and head's one-head result to the bit:
/// heads of 64 and 128 (the AVX-512 block loops), 80 (position by position), blocks
/// starting at several depths, with whole and partial eights and sixteens of keys.
#[test]
fn a_block_of_positions_equals_each_position_alone_to_the_bit() {
    #[cfg(target_arch = "x86_64")]
    if !simd::wide_available() {
        eprintln!("the AVX-512 loops that share reads are not run: this CPU lacks AVX-512");
    }
    for vectors in [Vectors::for_this_cpu(), Vectors::portable()] {
        for dim in [64, 128, 80] {
            let stride = 3 * dim;
            let cached = 70;
            let (keys, values) = cached_rows(cached * stride, 2.5);
            let cache = Cached {
                keys: &keys,
                values: &values,
                stride,
                offset: 2 * dim,
            };
            for heads in [1, 3, 4] {
                for (first, positions) in [(0, 1), (0, 16), (5, 3), (7, 9), (40, 16), (53, 17)] {
                    let queries: Vec<f32> = (0..positions * heads * dim)
                        .map(|i| (i as f32 * 0.021).cos() - 0.1)
                        .collect();
                    let mut block = vec![0f32; queries.len()];
                    let mut scores = Vec::new();
                    let block_queries = Queries {
                        values: &queries,
                        dim,
                        positions,
                        first_position: first,
                    };
                    attend_block(&vectors, &block_queries, &cache, &mut scores, &mut block);
                    for (i, q) in queries.chunks_exact(dim).enumerate() {
                        let mut alone = vec![0f32; dim];
                        let position = first + i / heads;
                        attend(&vectors, q, &cache, position, &mut scores, &mut alone);
                        assert_eq!(
                            block[i * dim..(i + 1) * dim],
                            alone[..],
                            "heads of {dim}, {heads} heads, block at {first} of \
                             {positions}, query {i}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn attention_weights_the_values_by_the_softmax_of_the_scores() {
    // Two positions, head size 2, keys in a row of 4 at offset 2.
    let keys = [9.0, 9.0, 1.0, 0.0, 9.0, 9.0, 0.0, 1.0];
    let values = [9.0, 9.0, 10.0, 0.0, 9.0, 9.0, 0.0, 20.0];
    let cache = Cached {
        keys: &keys,
        values: &values,
        stride: 4,
        offset: 2,
    };
    let q = [2.0f32.sqrt() * 3.0, 0.0];
    let (mut scores, mut out) = (Vec::new(), [0f32; 2]);
    attend(&Vectors::portable(), &q, &cache, 1, &mut scores, &mut out);
    // Scores 3 and 0: weights e³/(e³+1) and 1/(e³+1).
    let w = 3f32.exp() / (3f32.exp() + 1.0);
    assert!((out[0] - 10.0 * w).abs() < 1e-4, "{out:?}");
    assert!((out[1] - 20.0 * (1.0 - w)).abs() < 1e-4, "{out:?}");
    // The first position sees only itself.
    attend(&Vectors::portable(), &q, &cache, 0, &mut scores, &mut out);
    assert_eq!(out, [10.0, 0.0]);
}

#[test]
fn rope_rotates_pairs_by_the_positions_angle() {
    let tables = RopeTables::new(&[1.0, 0.5], 3);
    let (cos, sin) = tables.at(2);
    assert_eq!((cos[0], sin[1]), (2f32.cos(), 1f32.sin()));
    let mut interleaved = [1.0, 0.0, 0.0, 1.0];
    Rope::Interleaved.apply(&mut interleaved, cos, sin);
    assert!((interleaved[0] - 2f32.cos()).abs() < 1e-6);
    assert!((interleaved[1] - 2f32.sin()).abs() < 1e-6);
    assert!((interleaved[2] + 1f32.sin()).abs() < 1e-6);
    let mut halves = [1.0, 0.0, 0.0, 1.0];
    Rope::Halves.apply(&mut halves, cos, sin);
    assert!((halves[0] - 2f32.cos()).abs() < 1e-6);
    assert!((halves[2] - 2f32.sin()).abs() < 1e-6);
    assert!((halves[1] + 1f32.sin()).abs() < 1e-6);
}
