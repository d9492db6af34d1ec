//! Against SciPy/NumPy reference values (`bench/stats/golden.py` →
//! `tests/fixtures/golden.json`): 1e-9 relative everywhere.

use neurogc_stats as stats;
use serde_json::Value;

const REL: f64 = 1e-9;

fn golden() -> Value {
    let text = include_str!("../fixtures/golden.json");
    serde_json::from_str(text).expect("golden.json parses")
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// |got − want| ≤ rel·|want| + abs.
#[track_caller]
fn close(got: f64, want: f64, rel: f64, abs: f64, what: &str) {
    assert!(
        (got - want).abs() <= rel * want.abs() + abs,
        "{what}: got {got:e}, want {want:e} (rel err {:e})",
        ((got - want) / want).abs()
    );
}

fn cases<'a>(g: &'a Value, key: &str) -> &'a Vec<Value> {
    let v = g[key].as_array().unwrap_or_else(|| panic!("{key}"));
    assert!(!v.is_empty(), "{key} has cases");
    v
}

#[test]
fn ln_gamma_matches_scipy() {
    let g = golden();
    for c in cases(&g, "ln_gamma") {
        let x = f(c, "x");
        // Γ(1) = Γ(2) = 1: ln Γ is 0 there, so also allow a tiny absolute error.
        close(
            stats::ln_gamma(x).unwrap(),
            f(c, "value"),
            REL,
            1e-14,
            &format!("lnΓ({x})"),
        );
    }
}

#[test]
fn incomplete_beta_matches_scipy() {
    let g = golden();
    for c in cases(&g, "beta_inc") {
        let (a, b, x) = (f(c, "a"), f(c, "b"), f(c, "x"));
        let got = stats::regularized_incomplete_beta(a, b, x).unwrap();
        close(got, f(c, "value"), REL, 0.0, &format!("I_{x}({a}, {b})"));
    }
}

#[test]
fn student_t_matches_scipy() {
    let g = golden();
    let all = cases(&g, "t");
    for c in all {
        let (t, df) = (f(c, "t"), f(c, "df"));
        let what = format!("t={t} df={df}");
        // Tails below 1e-300 may underflow differently; everything above is relative.
        close(
            stats::student_t_cdf(t, df).unwrap(),
            f(c, "cdf"),
            REL,
            1e-300,
            &what,
        );
        close(
            stats::student_t_sf(t, df).unwrap(),
            f(c, "sf"),
            REL,
            1e-300,
            &what,
        );
        let p = stats::student_t_two_sided_p(t, df).unwrap();
        let want = 2.0 * f(c, "cdf").min(f(c, "sf"));
        close(p, want.min(1.0), REL, 1e-300, &format!("p {what}"));
    }
    // The grid includes non-integer df and far tails.
    assert!(all.iter().any(|c| f(c, "df").fract() != 0.0));
    assert!(all.iter().any(|c| f(c, "sf") > 0.0 && f(c, "sf") < 1e-20));
}

#[test]
fn welch_matches_scipy() {
    let g = golden();
    for c in cases(&g, "welch") {
        let name = c["name"].as_str().unwrap();
        let (a, b) = (floats(&c["a"]), floats(&c["b"]));
        let w = stats::welch_t_test(&a, &b).unwrap();
        close(w.t, f(c, "t"), REL, 0.0, &format!("{name}: t"));
        close(w.df, f(c, "df"), REL, 0.0, &format!("{name}: df"));
        close(w.p, f(c, "p"), REL, 0.0, &format!("{name}: p"));
        assert_eq!((w.n_a, w.n_b), (a.len(), b.len()));
    }
}

#[test]
fn descriptive_matches_numpy() {
    let g = golden();
    for c in cases(&g, "descriptive") {
        let name = c["name"].as_str().unwrap();
        let xs = floats(&c["xs"]);
        close(
            stats::mean(&xs).unwrap(),
            f(c, "mean"),
            REL,
            0.0,
            &format!("{name}: mean"),
        );
        close(
            stats::median(&xs).unwrap(),
            f(c, "median"),
            REL,
            0.0,
            &format!("{name}: median"),
        );
        assert_eq!(stats::min(&xs).unwrap(), f(c, "min"), "{name}: min");
        assert_eq!(stats::max(&xs).unwrap(), f(c, "max"), "{name}: max");
        match c["std"].as_f64() {
            Some(sd) => close(
                stats::std_dev(&xs).unwrap(),
                sd,
                REL,
                0.0,
                &format!("{name}: std"),
            ),
            None => assert!(stats::std_dev(&xs).is_err(), "{name}: std of one value"),
        }
        let pcs = c["percentiles"].as_array().unwrap();
        let qs: Vec<f64> = pcs.iter().map(|p| f(p, "q")).collect();
        let all = stats::percentiles(&xs, &qs).unwrap();
        for (p, got) in pcs.iter().zip(all) {
            let q = f(p, "q");
            let want = f(p, "value");
            close(got, want, REL, 0.0, &format!("{name}: p{q}"));
            close(
                stats::percentile(&xs, q).unwrap(),
                want,
                REL,
                0.0,
                &format!("{name}: p{q}"),
            );
        }
    }
}
