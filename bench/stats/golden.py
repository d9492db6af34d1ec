#!/usr/bin/env python3
"""Reference values for `crates/neurogc-stats`, computed with SciPy and NumPy.

Writes `crates/neurogc-stats/tests/fixtures/golden.json`, which the crate's golden tests
(`crates/neurogc-stats/tests/golden.rs`) compare against: Welch's t-test
(`scipy.stats.ttest_ind(equal_var=False)`), the Student-t CDF and survival function for integer
and non-integer degrees of freedom, `scipy.special.gammaln` / `betainc`, and NumPy's descriptive
statistics (`percentile` with its default linear method, `median`, `mean`, `std(ddof=1)`).

Every input is written next to its expected value, so the JSON is self-contained; rerun this
script only when adding cases:

    python3 -m venv /tmp/stats-venv && /tmp/stats-venv/bin/pip install scipy numpy
    /tmp/stats-venv/bin/python bench/stats/golden.py
"""

import json
import pathlib
import warnings

import numpy as np
import scipy
import scipy.special
import scipy.stats

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates" / "neurogc-stats" / "tests" / "fixtures" / "golden.json"


def floats(xs):
    return [float(x) for x in xs]


def welch_cases(rng):
    cases = [
        ("close means", [10.1, 11.3, 9.8, 10.7, 10.4], [12.0, 12.9, 11.7, 12.4, 13.1]),
        (
            "p99 default vs frozen",
            [0.300, 0.310, 0.295, 0.320, 0.305],
            [0.038, 0.041, 0.037, 0.040, 0.039],
        ),
        ("unequal n and spread", [1.0, 4.0, 2.5], [2.1, 2.2, 2.0, 2.4, 2.3, 2.2, 2.1, 2.25]),
        ("nearly identical", [5.01, 4.98, 5.03, 4.99, 5.00], [5.00, 5.02, 4.96, 5.01, 4.99]),
        ("two runs each", [100.0, 104.0], [90.0, 97.0]),
        ("one side constant", [5.0, 5.0, 5.0, 5.0], [4.9, 5.2, 5.1, 5.3]),
        ("negative values", [-3.2, -1.1, -2.7, -0.4, -2.0, -1.6], [0.3, -0.8, 1.1, 0.0, -0.2]),
    ]
    cases.append(
        (
            "normal n=30 vs n=45",
            floats(rng.normal(50.0, 4.0, 30)),
            floats(rng.normal(52.0, 9.0, 45)),
        )
    )
    cases.append(("tiny p", floats(rng.normal(0.0, 1.0, 50)), floats(rng.normal(10.0, 1.5, 50))))
    cases.append(
        (
            "large n, small effect",
            floats(rng.normal(1.0, 0.2, 400)),
            floats(rng.normal(1.02, 0.25, 300)),
        )
    )
    out = []
    for name, a, b in cases:
        res = scipy.stats.ttest_ind(a, b, equal_var=False)
        va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
        df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
        out.append(
            {
                "name": name,
                "a": floats(a),
                "b": floats(b),
                "t": float(res.statistic),
                "df": float(getattr(res, "df", df)),
                "p": float(res.pvalue),
            }
        )
    return out


def t_cases():
    ts = [-40.0, -8.0, -3.2, -1.96, -0.5, 0.0, 0.25, 1.0, 2.1, 4.5, 12.0, 60.0]
    dfs = [0.7, 1.0, 1.5, 2.0, 3.3, 4.0, 7.25, 10.0, 29.9, 100.0, 512.5, 1.0e4]
    return [
        {
            "t": t,
            "df": df,
            "cdf": float(scipy.stats.t.cdf(t, df)),
            "sf": float(scipy.stats.t.sf(t, df)),
        }
        for df in dfs
        for t in ts
    ]


def ln_gamma_cases():
    xs = [1e-3, 0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.7, 10.0, 25.5, 100.0, 1234.5, 1e5]
    return [{"x": x, "value": float(scipy.special.gammaln(x))} for x in xs]


def beta_inc_cases():
    abx = [
        (0.5, 0.5, 0.3),
        (2.0, 3.0, 0.4),
        (10.0, 0.5, 0.9),
        (0.7, 2.2, 0.01),
        (50.0, 50.0, 0.5),
        (200.5, 0.5, 0.99),
        (1.0, 1.0, 0.77),
        (5.0, 0.5, 0.999999),
        (3.5, 7.25, 0.2),
        (0.5, 40.0, 0.05),
    ]
    return [
        {"a": a, "b": b, "x": x, "value": float(scipy.special.betainc(a, b, x))} for a, b, x in abx
    ]


def descriptive_cases(rng):
    qs = [0.0, 0.1, 1.0, 5.0, 10.0, 25.0, 33.3, 50.0, 66.7, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0]
    samples = [
        ("single", [3.0]),
        ("pair", [1.0, 2.0]),
        ("odd with duplicates", [4.0, 1.0, 4.0, 2.0, 9.0, 4.0, 7.0]),
        ("negative and positive", [-5.5, 3.25, 0.0, -1.0, 12.0, 7.5]),
        ("uniform n=10", floats(rng.uniform(0.0, 1.0, 10))),
        ("lognormal n=101", floats(rng.lognormal(3.0, 1.0, 101))),
        ("latencies n=1000", floats(rng.gamma(2.0, 0.01, 1000))),
    ]
    out = []
    for name, xs in samples:
        arr = np.asarray(xs)
        out.append(
            {
                "name": name,
                "xs": floats(xs),
                "mean": float(np.mean(arr)),
                "median": float(np.median(arr)),
                "std": float(np.std(arr, ddof=1)) if len(xs) > 1 else None,
                "min": float(np.min(arr)),
                "max": float(np.max(arr)),
                "percentiles": [{"q": q, "value": float(np.percentile(arr, q))} for q in qs],
            }
        )
    return out


def main():
    # The "one side constant" case makes SciPy warn about its moment calculation; its result is
    # still exact (the constant side's variance is 0), and the case is there on purpose.
    warnings.filterwarnings("ignore", message="Precision loss occurred in moment calculation")
    rng = np.random.default_rng(20240605)
    golden = {
        "generator": "bench/stats/golden.py",
        "versions": {"scipy": scipy.__version__, "numpy": np.__version__},
        "ln_gamma": ln_gamma_cases(),
        "beta_inc": beta_inc_cases(),
        "t": t_cases(),
        "welch": welch_cases(rng),
        "descriptive": descriptive_cases(rng),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
