//! A tiny seeded PRNG (SplitMix64), shared by the load generator (task picks, waits, Poisson gaps)
//! and the trainer (initialisation, shuffles, dropout masks, bootstrap samples). Both need
//! reproducible, fast, good-enough randomness — not cryptography — so no `rand` dependency, and
//! `--seed` repeats a run bit for bit.

/// SplitMix64 (Steele, Lea, Flood 2014): passes BigCrush, one add and three xor-shift-multiplies.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// An independent stream for sub-component `index` (a user, a scheduler) of a seeded run.
    pub fn derive(seed: u64, index: u64) -> Self {
        let mut base = Rng(seed ^ index.wrapping_mul(0xA24B_AED4_963E_E407));
        Rng(base.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, 1) with 24 bits of precision.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }

    /// Uniform in [-bound, bound).
    pub fn symmetric(&mut self, bound: f32) -> f32 {
        (self.next_f32() * 2.0 - 1.0) * bound
    }

    /// Uniform in [0, n) (Lemire's multiply-shift; the bias is below 2^-40 for any n we use).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform index in [0, n).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// Fisher–Yates.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.index(i + 1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_mean_and_range() {
        let mut r = Rng::new(7);
        let n = 200_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x));
            sum += x;
        }
        // Standard error of the mean is 1/sqrt(12 n) ≈ 0.00065; allow 5 sigma.
        assert!(
            (sum / n as f64 - 0.5).abs() < 0.0033,
            "mean {}",
            sum / n as f64
        );
    }

    #[test]
    fn derived_streams_differ_and_repeat() {
        let a: Vec<u64> = (0..4).map(|_| Rng::derive(1, 0).next_u64()).collect();
        assert!(a.iter().all(|&x| x == a[0]));
        assert_ne!(Rng::derive(1, 0).next_u64(), Rng::derive(1, 1).next_u64());
        assert_ne!(Rng::derive(1, 0).next_u64(), Rng::derive(2, 0).next_u64());
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::new(3);
        let mut seen = [0u32; 5];
        for _ in 0..10_000 {
            seen[r.below(5) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 1_800), "{seen:?}");
    }
}
