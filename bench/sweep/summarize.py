"""The sweeps' table: per bundled loop, every configuration's medians and the learned policy
against issue 15's bar.

Usage: python bench/sweep/summarize.py DIR (prints Markdown; DIR holds one folder per loop, each
a `neurogc sweep` output with its summary.json). Standard library only.

The bar, per loop: the learned policy's step p99 at most 1.05 x the best fixed configuration's,
its mean step time at most default's, its peak RSS at most 1.10 x default's. Each is checked on the
medians over rounds; the intervals are shown beside them. The best fixed configuration is the one
with the lowest p99 among those whose peak RSS stays within the memory bound the learned policy is
held to (1.10 x default's), as the workload suite picks its best fixed policy; a faster one beyond
the bound is named, with the learned policy's p99 and memory against it. Beside each bar, the
same ratio round by round (the median of the per-round ratios, its interval, the paired test's
p and whether the difference is significant), from summary.json's `learned_against`: the best
fixed configuration is the lowest of several noisy medians, so a point estimate over the limit
may be noise. Where the sweep ran with `--aa` (default run twice each round, the copy under its
own name), the copy's ratios to default round by round are the A/A row under the bars: how far two
identical configurations land apart on the machine that day. The copy is never the best fixed one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MIB = 1024 * 1024
RSS_BOUND = 1.10  # peak RSS against default's, for the learned policy and the best fixed one
BARS = (  # (what, metric key, compared with, largest ratio allowed)
    ("p99 vs best fixed", "p99_ms", "best fixed", 1.05),
    ("mean vs default", "mean_ms", "default", 1.00),
    ("peak RSS vs default", "peak_rss_bytes", "default", RSS_BOUND),
)


def fmt(key: str, v: float) -> str:
    if key == "peak_rss_bytes":
        return f"{v / MIB:.0f} MiB"
    if key == "gc_share":
        return f"{v * 100:.1f} %"
    return f"{v:.2f} ms" if v < 100 else f"{v:.0f} ms"


def cell(key: str, m: dict) -> str:
    return f"{fmt(key, m['estimate'])} [{fmt(key, m['lower'])}, {fmt(key, m['upper'])}]"


def paired(m: dict) -> str:
    """A round-by-round comparison of summary.json as a table cell."""
    r, p = m["ratio"], m["p"]
    sig = "significant" if m["significant"] else "n.s."
    p_text = "" if p is None else (", p < 0.001" if p < 0.001 else f", p {p:.3f}")
    return f"{r['estimate']:.3f} [{r['lower']:.3f}, {r['upper']:.3f}]{p_text}, {sig}"


def round_by_round(summary: dict, against: str, key: str) -> str:
    """The learned policy against `against` on `key`, paired by round, as a table cell."""
    for pair in summary.get("learned_against", []):
        if pair["learned"] == "learned" and pair["against"] == against and key in pair["metrics"]:
            return paired(pair["metrics"][key])
    return "–"


def loop_section(name: str, summary: dict) -> tuple[list[str], list[bool]]:
    configs = {c["name"]: c["medians"] for c in summary["configs"]}
    out = [f"## {name}", ""]
    out.append(f"Recommended by the sweep: `{summary['best']}`. Full report: [{name}/README.md]"
               f"({name}/README.md).")  # fmt: skip
    out += ["", "| configuration | step mean | step p99 | step max | GC share | peak RSS |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for c, m in configs.items():
        keys = ("mean_ms", "p99_ms", "max_ms", "gc_share", "peak_rss_bytes")
        out.append(
            f"| `{c}` | " + " | ".join(cell(k, m[k]) if k in m else "–" for k in keys) + " |"
        )
    learned = configs.get("learned")
    aa = summary.get("aa")
    copy = aa["name"] if aa else None
    fixed = {c: m for c, m in configs.items() if c not in ("learned", copy) and "p99_ms" in m}
    if learned is None or "default" not in configs or not fixed:
        out += ["", "The bar needs `learned`, `default` and a fixed configuration: not checked."]
        return out, []

    def p99(c: str) -> float:
        return fixed[c]["p99_ms"]["estimate"]

    def rss_to_default(m: dict) -> float | None:
        rss, ref = m.get("peak_rss_bytes"), configs["default"].get("peak_rss_bytes")
        return rss["estimate"] / ref["estimate"] if rss and ref else None

    fastest = min(fixed, key=p99)
    within = [c for c in fixed if (rss_to_default(fixed[c]) or 0.0) <= RSS_BOUND]
    best_fixed = min(within, key=p99) if within else fastest
    out += ["", f"The learned policy against the bar (best fixed by p99 within {RSS_BOUND:.2f}× "
            f"the default's peak RSS: `{best_fixed}`):", ""]  # fmt: skip
    out += ["| bar | learned | against | ratio | allowed | | round by round |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    passed = []
    for what, key, against, limit in BARS:
        ref_name = best_fixed if against == "best fixed" else "default"
        ref = configs[ref_name]
        if key not in learned or key not in ref:
            out.append(f"| {what} | – | – | – | ≤ {limit:.2f} | not measured | – |")
            continue
        ratio = learned[key]["estimate"] / ref[key]["estimate"]
        ok = ratio <= limit
        passed.append(ok)
        verdict = "met" if ok else f"missed by {(ratio / limit - 1) * 100:.1f} %"
        out.append(f"| {what} | {fmt(key, learned[key]['estimate'])} | "
                   f"{fmt(key, ref[key]['estimate'])} | {ratio:.3f} | ≤ {limit:.2f} | {verdict} | "
                   f"{round_by_round(summary, ref_name, key)} |")  # fmt: skip
    if aa:
        cells = [paired(aa["metrics"][k]) if k in aa["metrics"] else "–" for _, k, _, _ in BARS]
        out += ["", f"A/A, `{copy}` against `{aa['against']}` round by round (the same "
                "configuration twice: the machine's noise on each bar's metric): "
                + "; ".join(f"{what.split(' vs ')[0]} {c}" for (what, *_), c in zip(BARS, cells))]  # fmt: skip
    if fastest != best_fixed and "p99_ms" in learned:
        rss = rss_to_default(fixed[fastest])
        out += ["", f"Fastest regardless of memory: `{fastest}`, p99 {fmt('p99_ms', p99(fastest))} "
                f"at {rss:.2f}× the default's peak RSS; the learned policy's p99 is "
                f"{learned['p99_ms']['estimate'] / p99(fastest):.3f}× its."]  # fmt: skip
    return out, passed


def main(root: Path) -> None:
    sections, verdicts = [], {}
    for summary_path in sorted(root.glob("*/summary.json")):
        name = summary_path.parent.name
        lines, passed = loop_section(name, json.loads(summary_path.read_text()))
        sections.append(lines)
        verdicts[name] = passed
    print("| loop | bars met |")
    print("|---|---|")
    for name, passed in verdicts.items():
        print(f"| {name} | {sum(passed)} of {len(passed)} |")
    print()
    print(
        "Medians over rounds, 95 % bootstrap intervals in brackets; a step's time includes the\n"
        "collection the policy ran at its end. Each bar is checked on the medians; beside it, the\n"
        "same ratio round by round (median of the per-round ratios [95 % interval], the paired\n"
        "t-test's p on log ratios; significant: p < 0.05 and the interval excludes 1). Each\n"
        "loop's README has the other paired comparisons and the step-time chart."
    )
    for lines in sections:
        print()
        print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize.py DIR")
    main(Path(sys.argv[1]))
