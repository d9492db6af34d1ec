//! The `neurogc-seed` policy with a model trained here: it fires where the seed's target is high
//! and stays quiet where it is low (the seed's own model, at its defaults, never fired at all).

use crate::common::*;
use neurogc_core::policy::{GcControl, GcError, Intent, Observation, PolicySpec, Trigger};
use neurogc_core::sample::Sample;
use neurogc_train::windows::{Labeller, SeedTarget};

/// Counts collections; the real CPython collector is exercised by the Python end-to-end tests.
#[derive(Default)]
struct CountingGc {
    collections: usize,
}

impl GcControl for CountingGc {
    fn collect(&mut self, _generation: u8, intent: Intent) -> Result<u64, GcError> {
        assert_eq!(
            intent.trigger,
            Trigger::Model,
            "the seed's policy collects for its model"
        );
        self.collections += 1;
        Ok(0)
    }
    fn is_enabled(&mut self) -> Result<bool, GcError> {
        Ok(true)
    }
    fn set_enabled(&mut self, _: bool) -> Result<(), GcError> {
        Ok(())
    }
    fn threshold(&mut self) -> Result<[u64; 3], GcError> {
        Ok([700, 10, 10])
    }
    fn set_threshold(&mut self, _: [u64; 3]) -> Result<(), GcError> {
        Ok(())
    }
    fn freeze(&mut self) -> Result<(), GcError> {
        Ok(())
    }
    fn unfreeze(&mut self) -> Result<(), GcError> {
        Ok(())
    }
}

#[test]
fn a_trained_model_fires_where_the_target_is_high() {
    let (_scratch, out) = tmp_dir("seed-policy");
    let mut c = config(lstm(32), 10, 60, out.clone());
    c.threshold = 0.55;
    let report = fit(&c);
    assert!(report.meta.metrics.val_loss.unwrap() < 0.01);

    let spec = format!("neurogc-seed:{}", out.display());
    let mut policy = spec.parse::<PolicySpec>().unwrap().build(&spec).unwrap();
    let mut gc = CountingGc::default();
    let rows = seed_series().remove(1).rows;
    let (mut agree, mut fired, mut decided) = (0, 0, 0);
    for (i, r) in rows.iter().enumerate() {
        let sample = Sample {
            cpu: Some(r[0] as f64),
            mem: Some(r[1] as f64),
            disk_read: Some(r[2] as f64),
            disk_write: Some(r[3] as f64),
            net_sent: Some(r[4] as f64),
            net_recv: Some(r[5] as f64),
            rps: Some(r[6] as f64),
            p95: Some(r[7] as f64),
            p99: Some(r[8] as f64),
            gc_triggered: r[9] > 0.5,
            ..Sample::default()
        };
        policy.observe(&sample);
        let obs = Observation {
            sample: Some(&sample),
            ..Observation::default()
        };
        let actions = policy.tick(&mut gc, &obs).unwrap();
        let Some(decision) = policy.last_decision() else {
            assert!(i < 9, "the window is full after 10 samples");
            continue;
        };
        decided += 1;
        assert_eq!(decision.fired, !actions.is_empty());
        fired += usize::from(decision.fired);
        let high = SeedTarget
            .label(&rows, i)
            .expect("the seed data is complete")
            > 0.55;
        agree += usize::from(high == decision.fired);
    }
    assert_eq!(decided, rows.len() - 9);
    assert_eq!(gc.collections, fired);
    assert!(fired > 0 && fired < decided, "fired {fired} of {decided}");
    assert!(
        agree as f64 >= 0.85 * decided as f64,
        "agrees with the target on {agree} of {decided}"
    );
}
