"""The sweeps' table: per bundled loop, every configuration's medians and the learned policy
against issue 15's bar.

Usage: python bench/sweep/summarize.py DIR (prints Markdown; DIR holds one folder per loop, each
a `neurogc sweep` output with its summary.json). Standard library only.

The bar, per loop: the learned policy's step p99 at most 1.05 x the best fixed configuration's
(the lowest p99 among the others), its mean step time at most default's, its peak RSS at most
1.10 x default's. Each is checked on the medians over rounds; the intervals are shown beside them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MIB = 1024 * 1024
BARS = (  # (what, metric key, compared with, largest ratio allowed)
    ("p99 vs best fixed", "p99_ms", "best fixed", 1.05),
    ("mean vs default", "mean_ms", "default", 1.00),
    ("peak RSS vs default", "peak_rss_bytes", "default", 1.10),
)


def fmt(key: str, v: float) -> str:
    if key == "peak_rss_bytes":
        return f"{v / MIB:.0f} MiB"
    if key == "gc_share":
        return f"{v * 100:.1f} %"
    return f"{v:.2f} ms" if v < 100 else f"{v:.0f} ms"


def cell(key: str, m: dict) -> str:
    return f"{fmt(key, m['estimate'])} [{fmt(key, m['lower'])}, {fmt(key, m['upper'])}]"


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
    fixed = {c: m for c, m in configs.items() if c != "learned" and "p99_ms" in m}
    if learned is None or "default" not in configs or not fixed:
        out += ["", "The bar needs `learned`, `default` and a fixed configuration: not checked."]
        return out, []
    best_fixed = min(fixed, key=lambda c: fixed[c]["p99_ms"]["estimate"])
    out += ["", f"The learned policy against the bar (best fixed by p99: `{best_fixed}`):", ""]
    out += ["| bar | learned | against | ratio | allowed | |", "|---|---|---|---|---|---|"]
    passed = []
    for what, key, against, limit in BARS:
        ref = fixed[best_fixed] if against == "best fixed" else configs["default"]
        if key not in learned or key not in ref:
            out.append(f"| {what} | – | – | – | ≤ {limit:.2f} | not measured |")
            continue
        ratio = learned[key]["estimate"] / ref[key]["estimate"]
        ok = ratio <= limit
        passed.append(ok)
        verdict = "met" if ok else f"missed by {(ratio / limit - 1) * 100:.1f} %"
        out.append(f"| {what} | {fmt(key, learned[key]['estimate'])} | "
                   f"{fmt(key, ref[key]['estimate'])} | {ratio:.3f} | ≤ {limit:.2f} | {verdict} |")  # fmt: skip
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
    print("Medians over rounds, 95 % bootstrap intervals in brackets; a step's time includes the")
    print("collection the policy ran at its end. Each loop's README has the paired comparisons")
    print("(round by round, with significance) and the step-time chart.")
    for lines in sections:
        print()
        print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize.py DIR")
    main(Path(sys.argv[1]))
