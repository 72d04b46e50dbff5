//! Training a query adapter: a linear map `W` of query vectors, started at the identity, fitted
//! by Adam to an `InfoNCE` loss (each query against its masked source passage, its mined hard
//! negatives and the other queries' passages in its batch), with an L2 pull towards the
//! identity so that a small corpus cannot drag the model's geometry far.

use std::time::Instant;

use ckeep_index::dot;
use rayon::prelude::*;

use super::QueryAdapter;

/// One training query.
#[derive(Debug, Clone)]
pub struct Example {
    /// The query's vector (unit length).
    pub query: Vec<f32>,
    /// Its source passage's vector, the query's own text masked out (unit length).
    pub positive: Vec<f32>,
    /// Hard negatives: rows of the stored vectors that do not answer it.
    pub negatives: Vec<usize>,
}

/// How training runs; [`TrainOptions::default`] holds the defaults `ckeep adapt` uses.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// Softmax temperature of the cosine scores.
    pub temperature: f32,
    /// Adam's step size.
    pub learning_rate: f32,
    /// Queries per step.
    pub batch: usize,
    /// Weight of `‖W − I‖²`.
    pub l2: f32,
    /// Passes over the examples at most.
    pub epochs: usize,
    /// Training stops after the pass that ends past this time.
    pub deadline: Option<Instant>,
    /// Order of the examples in each pass.
    pub seed: u64,
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            temperature: 0.05,
            learning_rate: 2e-4,
            batch: 64,
            l2: 0.1,
            epochs: 8,
            deadline: None,
            seed: 42,
        }
    }
}

/// The trained map and the mean loss of each pass (the first measured before any step).
#[derive(Debug, Clone)]
pub struct Trained {
    /// The map.
    pub adapter: QueryAdapter,
    /// Mean `InfoNCE` loss over the examples: before training, then after each pass.
    pub losses: Vec<f64>,
}

/// Fits a map of `dim`-dimensional queries to `examples`, whose negatives index the rows of
/// `rows` (`dim` values each). `progress(pass, loss)` after each pass.
pub fn train(
    dim: usize,
    examples: &[Example],
    rows: &[f32],
    opts: &TrainOptions,
    progress: &mut dyn FnMut(usize, f64),
) -> Trained {
    let mut adapter = QueryAdapter::identity(dim);
    let mut losses = vec![mean_loss(&adapter, examples, rows, opts)];
    let mut adam = Adam::new(dim * dim, opts.learning_rate);
    let mut order: Vec<usize> = (0..examples.len()).collect();
    let mut rng = opts.seed;
    for pass in 1..=opts.epochs {
        shuffle(&mut order, &mut rng);
        for batch in order.chunks(opts.batch.max(1)) {
            let mut grad = batch_gradient(&adapter, examples, batch, rows, opts).1;
            let scale = 1.0 / batch.len() as f32;
            for (i, g) in grad.iter_mut().enumerate() {
                let identity = if i % (dim + 1) == 0 { 1.0 } else { 0.0 };
                *g = *g * scale + opts.l2 * (adapter.weight()[i] - identity);
            }
            adam.step(adapter.weight_mut(), &grad);
        }
        let loss = mean_loss(&adapter, examples, rows, opts);
        losses.push(loss);
        progress(pass, loss);
        if opts.deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    Trained { adapter, losses }
}

/// The mean `InfoNCE` loss of `adapter` over `examples`, in batches as training sees them.
pub fn mean_loss(
    adapter: &QueryAdapter,
    examples: &[Example],
    rows: &[f32],
    opts: &TrainOptions,
) -> f64 {
    let order: Vec<usize> = (0..examples.len()).collect();
    let total: f64 = order
        .chunks(opts.batch.max(1))
        .map(|batch| batch_gradient(adapter, examples, batch, rows, opts).0)
        .sum();
    total / examples.len().max(1) as f64
}

/// The summed loss of `batch` and its gradient with respect to the weights (`dim × dim`).
fn batch_gradient(
    adapter: &QueryAdapter,
    examples: &[Example],
    batch: &[usize],
    rows: &[f32],
    opts: &TrainOptions,
) -> (f64, Vec<f32>) {
    let dim = adapter.dim();
    // Each query's loss and the gradient with respect to its mapped vector `u = W q`.
    let each: Vec<(f64, Vec<f32>)> = batch
        .par_iter()
        .map(|&i| {
            let ex = &examples[i];
            let u = adapter.map(&ex.query);
            let norm = dot(&u, &u).sqrt().max(1e-12);
            let v: Vec<f32> = u.iter().map(|x| x / norm).collect();
            // The candidates: the positive first, its negatives, the batch's other positives.
            let mut candidates: Vec<&[f32]> = vec![&ex.positive];
            candidates.extend(ex.negatives.iter().map(|&r| &rows[r * dim..(r + 1) * dim]));
            candidates
                .extend(batch.iter().filter(|&&j| j != i).map(|&j| &examples[j].positive[..]));
            let logits: Vec<f32> =
                candidates.iter().map(|c| dot(&v, c) / opts.temperature).collect();
            let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let exp: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
            let sum: f32 = exp.iter().sum();
            let loss = f64::from(sum.ln() + max - logits[0]);
            // dL/dv = Σ (p_c − [c = positive]) c / τ; then through the normalisation.
            let mut gv = vec![0.0f32; dim];
            for (k, (c, e)) in candidates.iter().zip(&exp).enumerate() {
                let p = (e / sum - if k == 0 { 1.0 } else { 0.0 }) / opts.temperature;
                for (g, x) in gv.iter_mut().zip(c.iter()) {
                    *g += p * x;
                }
            }
            let along = dot(&gv, &v);
            let gu: Vec<f32> = gv.iter().zip(&v).map(|(g, vv)| (g - along * vv) / norm).collect();
            (loss, gu)
        })
        .collect();
    let loss = each.iter().map(|e| e.0).sum();
    // dL/dW = Σ_i gu_i q_iᵀ, a row at a time.
    let mut grad = vec![0.0f32; dim * dim];
    grad.par_chunks_exact_mut(dim).enumerate().for_each(|(r, row)| {
        for (&i, (_, gu)) in batch.iter().zip(&each) {
            let g = gu[r];
            for (w, q) in row.iter_mut().zip(&examples[i].query) {
                *w += g * q;
            }
        }
    });
    (loss, grad)
}

/// Adam (Kingma & Ba 2015) with the usual moments.
struct Adam {
    m: Vec<f32>,
    v: Vec<f32>,
    t: i32,
    rate: f32,
}

impl Adam {
    fn new(n: usize, rate: f32) -> Self {
        Self { m: vec![0.0; n], v: vec![0.0; n], t: 0, rate }
    }

    fn step(&mut self, weights: &mut [f32], grad: &[f32]) {
        const B1: f32 = 0.9;
        const B2: f32 = 0.999;
        self.t += 1;
        let c1 = 1.0 - B1.powi(self.t);
        let c2 = 1.0 - B2.powi(self.t);
        for (((w, g), m), v) in weights.iter_mut().zip(grad).zip(&mut self.m).zip(&mut self.v) {
            *m = B1 * *m + (1.0 - B1) * g;
            *v = B2 * *v + (1.0 - B2) * g * g;
            *w -= self.rate * (*m / c1) / ((*v / c2).sqrt() + 1e-8);
        }
    }
}

/// Fisher–Yates, from the state `rng` of a `SplitMix64` generator (Steele, Lea & Flood 2014).
fn shuffle(order: &mut [usize], rng: &mut u64) {
    for i in (1..order.len()).rev() {
        let j = (splitmix(rng) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
}

/// The next number of a `SplitMix64` generator whose state is `state`.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let n = dot(&v, &v).sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    /// Queries whose passages sit in a rotated direction: the identity ranks them badly, a
    /// trained map learns the rotation, and the loss falls pass by pass.
    #[test]
    fn training_lowers_the_loss_and_the_gradient_is_right() {
        let dim = 4;
        let mut rng = 7u64;
        let mut draw = || (splitmix(&mut rng) % 1000) as f32 / 1000.0 - 0.5;
        let examples: Vec<Example> = (0..40)
            .map(|_| {
                let q: Vec<f32> = (0..dim).map(|_| draw()).collect();
                let p = vec![q[1], -q[0], q[3], -q[2]];
                Example { query: unit(q), positive: unit(p), negatives: vec![] }
            })
            .collect();
        let opts = TrainOptions {
            learning_rate: 0.02,
            l2: 0.0,
            epochs: 30,
            batch: 8,
            ..Default::default()
        };
        let trained = train(dim, &examples, &[], &opts, &mut |_, _| {});
        assert!(
            trained.losses.last().unwrap() < &(trained.losses[0] * 0.5),
            "{:?}",
            trained.losses
        );
        // The analytic gradient against a finite difference of one weight.
        let a =
            QueryAdapter::new(dim, (0..16).map(|i| if i % 5 == 0 { 1.0 } else { 0.1 }).collect())
                .unwrap();
        let batch: Vec<usize> = (0..8).collect();
        let (l0, grad) = batch_gradient(&a, &examples, &batch, &[], &opts);
        let mut b = a.clone();
        b.weight_mut()[6] += 1e-3;
        let (l1, _) = batch_gradient(&b, &examples, &batch, &[], &opts);
        let numeric = (l1 - l0) / 1e-3;
        assert!(
            (numeric - f64::from(grad[6])).abs() < 0.05 * numeric.abs().max(1.0),
            "{numeric} {}",
            grad[6]
        );
    }
}
