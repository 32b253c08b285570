//! Choosing the next token from the logits: greedy at temperature 0, otherwise llama.cpp's
//! usual chain (top-k, top-p, min-p, temperature) with a seeded generator, so a given seed
//! always gives the same reply.
//!
//! Owns sampling and its random numbers only; it must not know about tokens' text.

use crate::model::argmax;

/// The sampling settings of one reply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: usize,
    pub min_p: f32,
    pub seed: u64,
}

/// What is used when the configuration sets nothing: llama.cpp's server defaults, so a model
/// behaves here as it does behind llama.cpp or Ollama.
pub const DEFAULT_TEMPERATURE: f32 = 0.8;
pub const DEFAULT_TOP_P: f32 = 0.95;
const DEFAULT_TOP_K: usize = 40;
const DEFAULT_MIN_P: f32 = 0.05;

impl Sampling {
    /// From the request's options; `seed` is used when the request has none.
    pub fn from_options(
        temperature: Option<f64>,
        top_p: Option<f64>,
        seed: Option<i64>,
        fallback_seed: u64,
    ) -> Self {
        Self {
            temperature: temperature.map_or(DEFAULT_TEMPERATURE, |t| t as f32),
            top_p: top_p.map_or(DEFAULT_TOP_P, |p| p as f32),
            top_k: DEFAULT_TOP_K,
            min_p: DEFAULT_MIN_P,
            seed: seed.map_or(fallback_seed, |s| s as u64),
        }
    }

    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            top_p: 1.0,
            top_k: 0,
            min_p: 0.0,
            seed: 0,
        }
    }
}

/// Draws tokens under one `Sampling`.
pub struct Sampler {
    sampling: Sampling,
    rng: SplitMix64,
    candidates: Vec<(u32, f32)>,
}

impl Sampler {
    pub fn new(sampling: Sampling) -> Self {
        Self {
            rng: SplitMix64(sampling.seed),
            sampling,
            candidates: Vec::new(),
        }
    }

    pub fn next(&mut self, logits: &[f32]) -> u32 {
        let s = self.sampling;
        if s.temperature <= 0.0 || !s.temperature.is_finite() {
            return argmax(logits);
        }
        let c = &mut self.candidates;
        c.clear();
        c.extend(
            logits
                .iter()
                .enumerate()
                .filter(|(_, l)| l.is_finite())
                .map(|(i, l)| (i as u32, *l)),
        );
        if c.is_empty() {
            return argmax(logits);
        }
        let by_logit = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1);
        if s.top_k > 0 && s.top_k < c.len() {
            c.select_nth_unstable_by(s.top_k - 1, by_logit);
            c.truncate(s.top_k);
        }
        c.sort_unstable_by(by_logit);
        // Probabilities at temperature 1 for top-p and min-p, as llama.cpp orders its chain.
        let max = c[0].1;
        let mut total = 0.0f32;
        for (_, l) in c.iter_mut() {
            *l = (*l - max).exp();
            total += *l;
        }
        for (_, p) in c.iter_mut() {
            *p /= total;
        }
        if s.top_p < 1.0 {
            let mut cumulative = 0.0;
            let mut keep = c.len();
            for (i, (_, p)) in c.iter().enumerate() {
                cumulative += p;
                if cumulative >= s.top_p {
                    keep = i + 1;
                    break;
                }
            }
            c.truncate(keep.max(1));
        }
        if s.min_p > 0.0 {
            let floor = c[0].1 * s.min_p;
            let keep = c.iter().take_while(|(_, p)| *p >= floor).count();
            c.truncate(keep.max(1));
        }
        // Temperature reshapes what is left: p^(1/T), renormalised.
        let mut total = 0.0f32;
        for (_, p) in c.iter_mut() {
            *p = p.powf(1.0 / s.temperature);
            total += *p;
        }
        let mut draw = self.rng.unit() * total;
        for (id, p) in c.iter() {
            if draw < *p {
                return *id;
            }
            draw -= p;
        }
        c[c.len() - 1].0
    }
}

/// A small, fast, seedable generator (Steele, Lea and Flood's SplitMix64): sampling needs
/// repeatable draws, not cryptographic ones.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A float in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperature_zero_is_the_largest_logit() {
        let mut s = Sampler::new(Sampling::greedy());
        assert_eq!(s.next(&[0.1, 3.0, -1.0, 2.9]), 1);
    }

    #[test]
    fn the_same_seed_draws_the_same_tokens_and_another_seed_may_not() {
        let logits: Vec<f32> = (0..100).map(|i| ((i * 37) % 11) as f32 * 0.3).collect();
        let draw = |seed| {
            let mut s = Sampler::new(Sampling::from_options(Some(1.0), Some(1.0), Some(seed), 0));
            (0..50).map(|_| s.next(&logits)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn only_the_top_k_can_be_drawn() {
        let mut logits = vec![0.0f32; 1000];
        logits[5] = 10.0;
        logits[9] = 9.5;
        let mut s = Sampler::new(Sampling::from_options(Some(1.5), Some(1.0), Some(1), 0));
        for _ in 0..200 {
            let t = s.next(&logits);
            assert!(t == 5 || t == 9, "{t}");
        }
    }

    #[test]
    fn non_finite_logits_are_never_drawn() {
        let logits = [f32::NAN, 1.0, f32::NEG_INFINITY, 0.5];
        let mut s = Sampler::new(Sampling::from_options(Some(1.0), Some(1.0), Some(3), 0));
        for _ in 0..100 {
            let t = s.next(&logits);
            assert!(t == 1 || t == 3, "{t}");
        }
    }
}
