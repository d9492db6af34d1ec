//! Number, interval, percentage and date formatting for the Markdown.

use neurogc_stats::ConfidenceInterval;

use crate::aggregate::{Cell, Mark};
use crate::metric::Metric;

/// A number with sensible precision: 3 significant digits for small values, no exponent.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "n/a".into()
        } else {
            "∞".into()
        };
    }
    let a = x.abs();
    let s = if a == 0.0 {
        "0".to_string()
    } else if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        let magnitude = a.log10().floor() as i32;
        let decimals = (2 - magnitude).clamp(0, 9) as usize;
        format!("{x:.decimals$}")
    };
    s.replace('-', "−")
}

/// A metric's value: counts without decimals when whole.
pub fn value(m: Metric, x: f64) -> String {
    if m.is_count() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        num(x)
    }
}

/// `median [lower–upper]`, or just the median when the interval is a point.
pub fn ci(m: Metric, c: &ConfidenceInterval) -> String {
    if c.lower == c.upper {
        value(m, c.estimate)
    } else {
        format!(
            "{} [{}–{}]",
            value(m, c.estimate),
            value(m, c.lower),
            value(m, c.upper)
        )
    }
}

/// `+23.7 %` / `−5.1 %` from a fraction.
pub fn pct(fraction: f64) -> String {
    let p = fraction * 100.0;
    let s = if p.abs() >= 100.0 {
        format!("{p:+.0} %")
    } else {
        format!("{p:+.1} %")
    };
    s.replace('-', "−")
}

/// A fraction as an unsigned percentage, `3.4 %`.
pub fn pct_abs(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p >= 10.0 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// `p 0.003`, `p < 0.001`.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else if p < 0.01 {
        format!("p {p:.3}")
    } else {
        format!("p {p:.2}")
    }
}

/// The Δ cell: mark, relative change (or absolute, from a zero baseline), p and why unmarked.
pub fn delta(m: Metric, cell: &Cell) -> String {
    let c = &cell.comparison;
    let change = match c.relative_change() {
        Some(0.0) => "same".to_string(),
        Some(r) => pct(r),
        None => {
            let d = c.difference.estimate;
            let s = value(m, d.abs());
            if d >= 0.0 {
                format!("+{s}")
            } else {
                format!("−{s}")
            }
        }
    };
    let mut why = Vec::new();
    match c.p_value() {
        Some(p) => why.push(p_value(p)),
        None => why.push("no test: 1 trial".into()),
    }
    match cell.mark {
        Mark::WithinNoise if c.relative_change() != Some(0.0) => why.push("within noise".into()),
        Mark::NotSignificant if c.p_value().is_some() => why.push("n.s.".into()),
        Mark::NoFloor => why.push("no floor".into()),
        _ => {}
    }
    format!("{} {change} ({})", cell.mark.symbol(), why.join(", "))
}

/// The noise-floor cell: `±3.4 %`, or `—`.
pub fn floor(f: Option<neurogc_stats::NoiseFloor>) -> String {
    f.map_or_else(|| "—".into(), |f| format!("±{}", pct_abs(f.relative())))
}

/// Seconds, shortly: `12 s`, `1.5 s`, `2 min`.
pub fn seconds(s: f64) -> String {
    if s >= 120.0 && s % 60.0 == 0.0 {
        format!("{:.0} min", s / 60.0)
    } else if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// Bytes as GiB/MiB.
pub fn bytes(b: f64) -> String {
    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
    if b >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else {
        format!("{:.0} MiB", b / (1024.0 * 1024.0))
    }
}

pub use neurogc_units::{utc_iso as iso, utc_text as utc};

/// Escapes a value for a Markdown table cell.
pub fn cell_text(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(4.4312), "4.43");
        assert_eq!(num(0.012345), "0.0123");
        assert_eq!(num(123.45), "123.5");
        assert_eq!(num(9903865.3), "9903865");
        assert_eq!(num(-2.5), "−2.50");
        assert_eq!(value(Metric::GcEvents, 585.0), "585");
        assert_eq!(value(Metric::GcEvents, 584.5), "584.5");
        assert_eq!(pct(-0.237), "−23.7 %");
        assert_eq!(pct(0.05), "+5.0 %");
        assert_eq!(pct(2.5), "+250 %");
        assert_eq!(p_value(0.0004), "p < 0.001");
        assert_eq!(p_value(0.0031), "p 0.003");
        assert_eq!(p_value(0.41), "p 0.41");
        assert_eq!(utc(1_795_334_686.7), "2026-11-22 08:04:46 UTC");
        assert_eq!(iso(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(seconds(60.0), "60 s");
        assert_eq!(seconds(120.0), "2 min");
        assert_eq!(seconds(0.5), "0.5 s");
    }
}
