//! The router's classifier: multinomial logistic regression (softmax) over hashed features,
//! trained by plain stochastic gradient descent in a fixed order, so the same examples always
//! give the same weights, bit for bit.
//!
//! Pure arithmetic; it must not read files, know the prompt's text or word reasons.

use super::data::{Example, LABELS, index_of};
use super::features::{BUCKETS, Features, extract};

const CLASSES: usize = LABELS.len();

/// Passes over the training set. Measured on the held-apart set: 6 to 30 passes and first
/// steps of 1 to 10 all land within three prompts of each other; more passes only cost time.
const EPOCHS: u32 = 10;

/// The first pass's step; later passes take smaller ones (`RATE / (1 + epoch / 2)`), so the
/// last passes settle rather than swing on the last examples seen.
const RATE: f32 = 4.0;

/// A trained classifier.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// `BUCKETS × CLASSES`, bucket-major: a prompt's buckets are read together.
    weights: Vec<f32>,
    bias: [f32; CLASSES],
}

impl Model {
    /// Trains on `examples`. The visiting order is a fixed pseudo-random permutation of the
    /// examples per pass (the file groups them by label, and SGD on grouped data forgets the
    /// earlier groups), derived from the example's position, never from a random source.
    pub fn train(examples: &[Example]) -> Model {
        let mut model = Model {
            weights: vec![0.0; BUCKETS * CLASSES],
            bias: [0.0; CLASSES],
        };
        let labelled: Vec<(Features, usize)> = examples
            .iter()
            .filter_map(|e| Some((extract(&e.prompt), index_of(e.agent)?)))
            .collect();
        let mut order: Vec<usize> = (0..labelled.len()).collect();
        for epoch in 0..EPOCHS {
            order.sort_by_key(|&i| mix(u64::from(epoch) << 32 | i as u64));
            let rate = RATE / (1.0 + epoch as f32 / 2.0);
            for &i in &order {
                let (features, label) = &labelled[i];
                model.step(features, *label, rate);
            }
        }
        model
    }

    /// One gradient step of the log loss on one example.
    fn step(&mut self, features: &Features, label: usize, rate: f32) {
        let probabilities = softmax(self.logits(features));
        for (class, p) in probabilities.iter().enumerate() {
            let target = if class == label { 1.0 } else { 0.0 };
            let gradient = (*p as f32 - target) * rate;
            self.bias[class] -= gradient * 0.1;
            for &bucket in &features.buckets {
                self.weights[bucket as usize * CLASSES + class] -= gradient * features.scale;
            }
        }
    }

    /// The raw score of each label (in `LABELS` order).
    pub(crate) fn logits(&self, features: &Features) -> [f64; CLASSES] {
        let mut logits = self.bias.map(f64::from);
        for &bucket in &features.buckets {
            for (class, logit) in logits.iter_mut().enumerate() {
                *logit += f64::from(self.weight(bucket, class) * features.scale);
            }
        }
        logits
    }

    /// The probability of each label (in `LABELS` order), summing to 1.
    pub(crate) fn probabilities(&self, features: &Features) -> [f64; CLASSES] {
        softmax(self.logits(features))
    }

    /// How much `bucket` pushes towards `class` rather than towards the other labels on
    /// average: what a reason names.
    pub(crate) fn lean(&self, bucket: u32, class: usize) -> f32 {
        let own = self.weight(bucket, class);
        let others: f32 = (0..CLASSES)
            .filter(|&c| c != class)
            .map(|c| self.weight(bucket, c))
            .sum();
        own - others / (CLASSES - 1) as f32
    }

    fn weight(&self, bucket: u32, class: usize) -> f32 {
        // Buckets come from `extract`, always below BUCKETS; a stray one reads as no weight.
        self.weights
            .get(bucket as usize * CLASSES + class)
            .copied()
            .unwrap_or(0.0)
    }
}

/// The index of the highest of `values`; the first one on a tie.
pub(crate) fn argmax(values: &[f64; CLASSES]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = i;
        }
    }
    best
}

fn softmax(logits: [f64; CLASSES]) -> [f64; CLASSES] {
    let top = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps = logits.map(|l| (l - top).exp());
    let sum: f64 = exps.iter().sum();
    exps.map(|e| e / sum)
}

/// A fixed 64-bit mixer (splitmix64's finaliser): a pseudo-random but reproducible order.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::router::data::parse;
    use crate::wire::AgentName;

    fn toy() -> Vec<Example> {
        parse(
            "casual\thello friend\ncasual\tthanks a lot\ncoder\twrite a python script\n\
             coder\tfix the bug in main.rs\nfile\tlist the files here\nfile\tmove the photos\n\
             web\tsearch the web for news\nweb\tweather today online\n\
             planner\tsearch the web then write a script\nplanner\tresearch it and make a report",
        )
        .unwrap()
    }

    #[test]
    fn training_twice_gives_identical_weights() {
        let examples = parse(include_str!("../../../../../assets/router/train.tsv")).unwrap();
        let first = Model::train(&examples);
        let second = Model::train(&examples);
        assert!(first == second, "two trainings differ");
        assert!(first.weights.iter().any(|w| *w != 0.0));
    }

    #[test]
    fn it_learns_the_toy_set() {
        let model = Model::train(&toy());
        for example in toy() {
            let probabilities = model.probabilities(&extract(&example.prompt));
            assert_eq!(
                LABELS[argmax(&probabilities)],
                example.agent,
                "{}",
                example.prompt
            );
            let sum: f64 = probabilities.iter().sum();
            assert!((sum - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn no_features_means_the_bias_alone_and_no_panic() {
        let model = Model::train(&toy());
        let probabilities = model.probabilities(&extract(""));
        assert!(probabilities.iter().all(|p| p.is_finite() && *p > 0.0));
        assert_eq!(model.lean(u32::MAX, 0), 0.0);
    }

    #[test]
    fn argmax_takes_the_first_of_a_tie() {
        assert_eq!(argmax(&[0.2, 0.3, 0.3, 0.1, 0.1]), 1);
        assert_eq!(LABELS[argmax(&[0.2; 5])], AgentName::Casual);
    }
}
