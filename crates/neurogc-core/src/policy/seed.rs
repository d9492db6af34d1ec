//! `neurogc-seed:DIR[,threshold=T]`: the seed's NeuroGC, exactly. Every interval the newest sample
//! goes into the model's window; when the output exceeds the threshold, a full collection runs.
//! Automatic GC stays as it is (so the model can only add collections, as in the seed).

use std::path::Path;

use neurogc_model::{FeatureVector, Model, Predictor, FEATURES, N_FEATURES};

use super::{collect_full, Action, Decision, GcControl, GcError, Observation, Policy, Trigger};
use crate::sample::Sample;

pub struct SeedPolicy {
    spec: String,
    predictor: Predictor,
    threshold: f32,
    last: Option<Decision>,
}

impl SeedPolicy {
    /// Loads the model; the error names the file and the problem.
    pub fn load(spec: String, dir: &Path, threshold: Option<f32>) -> Result<SeedPolicy, String> {
        let model = Model::load(dir).map_err(|e| e.to_string())?;
        let threshold = threshold.unwrap_or(model.meta.threshold);
        Ok(SeedPolicy {
            spec,
            predictor: model.predictor(),
            threshold,
            last: None,
        })
    }

    pub fn threshold(&self) -> f32 {
        self.threshold
    }
}

/// The model's inputs from a sample. An unmeasured value becomes the training mean (0 after
/// normalisation): the least informative value, rather than a made-up zero.
pub fn features(sample: &Sample, model: &Model) -> FeatureVector {
    let values = [
        sample.cpu,
        sample.mem,
        sample.disk_read,
        sample.disk_write,
        sample.net_sent,
        sample.net_recv,
        sample.rps,
        sample.p95,
        sample.p99,
        Some(if sample.gc_triggered { 1.0 } else { 0.0 }),
    ];
    debug_assert_eq!(values.len(), FEATURES.len());
    let mut x = [0f32; N_FEATURES];
    for (f, v) in values.iter().enumerate() {
        x[f] = v.map_or(model.meta.normalization.mean[f], |v| v as f32);
    }
    x
}

impl Policy for SeedPolicy {
    fn spec(&self) -> &str {
        &self.spec
    }

    fn start(&mut self, _: &mut dyn GcControl, _: &Observation) -> Result<Vec<Action>, GcError> {
        Ok(vec![])
    }

    fn observe(&mut self, sample: &Sample) {
        let x = features(sample, self.predictor.model());
        // None while the window is still filling.
        self.last = self.predictor.push(x).map(|output| Decision {
            output: output as f64,
            fired: output > self.threshold,
        });
    }

    fn tick(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        // Act only at sample ticks, on the decision `observe` made for this sample.
        match (obs.sample, self.last) {
            (
                Some(_),
                Some(Decision {
                    output,
                    fired: true,
                }),
            ) => {
                let reason = format!("model output {output:.3} > threshold {:.3}", self.threshold);
                Ok(vec![collect_full(gc, Trigger::Model, reason)?])
            }
            _ => Ok(vec![]),
        }
    }

    fn last_decision(&self) -> Option<Decision> {
        self.last
    }
}
