//! A straight line `y = a + b·x` through the most recent points (all `x, y ≥ 0`), both
//! coefficients at least 0: what the scheduler fits where a cost has a fixed part and a part
//! that grows (a pause against the work since the last collection, the CPU time against the
//! request rate).

use std::collections::VecDeque;

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Line {
    points: VecDeque<(f64, f64)>,
}

impl Line {
    /// Points kept: the most recent ones say what the service does now.
    const KEEP: usize = 16;

    pub(crate) fn add(&mut self, x: f64, y: f64) {
        if self.points.len() == Self::KEEP {
            self.points.pop_front();
        }
        self.points.push_back((x, y));
    }

    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }

    pub(crate) fn xs(&self) -> impl Iterator<Item = f64> + '_ {
        self.points.iter().map(|p| p.0)
    }

    /// The last `n` points (fewer where fewer exist), oldest first.
    pub(crate) fn recent(&self, n: usize) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.points
            .iter()
            .skip(self.points.len().saturating_sub(n))
            .copied()
    }

    pub(crate) fn ys(&self) -> impl Iterator<Item = f64> + '_ {
        self.points.iter().map(|p| p.1)
    }

    /// How far apart the points' `x` lie, as the ratio of the second largest to the second
    /// smallest (one stray point does not make a range), once four points exist. Sorted on the
    /// stack: the scheduler asks at every tick.
    pub(crate) fn spread(&self) -> Option<f64> {
        let n = self.points.len();
        if n < 4 {
            return None;
        }
        let mut xs = [0.0; Self::KEEP];
        for (slot, x) in xs.iter_mut().zip(self.xs()) {
            *slot = x;
        }
        let xs = &mut xs[..n];
        xs.sort_by(f64::total_cmp);
        Some(xs[n - 2] / xs[1])
    }

    /// `(a, b)` by least squares, or `None` without a point. Where every `x` is the same, all
    /// of `y` is taken as growth (`a` = 0); a negative intercept is clamped to 0 and the slope
    /// refitted through the origin; a negative slope is 0 (the mean is all fixed).
    pub(crate) fn fit(&self) -> Option<(f64, f64)> {
        if self.points.is_empty() {
            return None;
        }
        let n = self.points.len() as f64;
        let (sx, sy) = self
            .points
            .iter()
            .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
        let (mx, my) = (sx / n, sy / n);
        let sxx: f64 = self.points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
        let sxy: f64 = self.points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
        if sxx < 1e-9 * n {
            return Some((0.0, my / mx.max(1e-9)));
        }
        let b = (sxy / sxx).max(0.0);
        if my - b * mx >= 0.0 {
            return Some((my - b * mx, b));
        }
        let sxy0: f64 = self.points.iter().map(|(x, y)| x * y).sum();
        let sxx0: f64 = self.points.iter().map(|(x, _)| x * x).sum();
        Some((0.0, sxy0 / sxx0))
    }

    /// `y / x` over all the points (`Σy / Σx`): the line through the origin where the points'
    /// `x` are too close together to tell a fixed part from a growing one.
    pub(crate) fn ratio(&self) -> Option<f64> {
        let (sx, sy) = self
            .points
            .iter()
            .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
        (sx > 0.0).then(|| sy / sx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(points: &[(f64, f64)]) -> Line {
        let mut l = Line::default();
        for &(x, y) in points {
            l.add(x, y);
        }
        l
    }

    #[test]
    fn fits_a_fixed_part_and_a_slope() {
        let (a, b) = line(&[(1.0, 12.0), (2.0, 14.0), (4.0, 18.0)])
            .fit()
            .expect("fit");
        assert!((a - 10.0).abs() < 1e-9 && (b - 2.0).abs() < 1e-9, "{a} {b}");
    }

    #[test]
    fn one_x_is_all_growth_and_a_negative_intercept_goes_through_the_origin() {
        assert_eq!(line(&[(2.0, 6.0), (2.0, 6.0)]).fit(), Some((0.0, 3.0)));
        // Least squares: a = -2, b = 4; through the origin: Σxy/Σxx = (2 + 12 + 30) / (1 + 4 + 9).
        let (a, b) = line(&[(1.0, 2.0), (2.0, 6.0), (3.0, 10.0)])
            .fit()
            .expect("fit");
        assert_eq!(a, 0.0);
        assert!((b - 44.0 / 14.0).abs() < 1e-9, "{b}");
        // Falling: no growth, all fixed.
        assert_eq!(line(&[(1.0, 5.0), (3.0, 3.0)]).fit(), Some((4.0, 0.0)));
    }

    #[test]
    fn keeps_the_most_recent_points() {
        let mut l = Line::default();
        for i in 0..40 {
            l.add(f64::from(i), 1.0);
        }
        assert_eq!(l.len(), Line::KEEP);
        assert_eq!(l.xs().next(), Some(24.0));
        assert_eq!(l.ratio(), Some(16.0 / (24..40).sum::<i32>() as f64));
        assert_eq!(l.spread(), Some(38.0 / 25.0));
        assert_eq!(line(&[(1.0, 0.0), (2.0, 0.0), (9.0, 0.0)]).spread(), None);
        // The stray points at each end do not count.
        let stray = line(&[(1.0, 0.0), (2.0, 0.0), (3.0, 0.0), (99.0, 0.0)]);
        assert_eq!(stray.spread(), Some(3.0 / 2.0));
        assert_eq!(Line::default().fit(), None);
        assert_eq!(Line::default().ratio(), None);
    }
}
