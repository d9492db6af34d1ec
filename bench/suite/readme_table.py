"""The README's scoreboard table, from a suite's scoreboard.json (bench/suite/scoreboard.json).

    .venv/bin/python bench/suite/readme_table.py [bench/suite/scoreboard.json]

Per workload: its best fixed policy and that policy's p99; `default`, the three ways of the
scheduler and the GC-off bound as ratios to it (p99 of all requests, paired by round); `neurogc`
against the bound; `neurogc`'s peak RSS against the default's; the run's A/A pairs (one policy
under two labels, or a `neurogc` whose model adds nothing beside `neurogc`) with the ratio of
their p99s. "(n.s.)" marks a ratio whose interval or the design's A/A floor leaves it undecided.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

COLUMNS = ["default", "neurogc", "neurogc-own", "neurogc-loo"]


def ratio(value: float) -> str:
    """A ratio as the scoreboard prints it: two decimals, whole numbers from 10×."""
    return f"{value:.0f}×" if value >= 10 else f"{value:.2f}×"


def judged(r: dict | None) -> str:
    if r is None:
        return "–"
    return ratio(r["estimate"]) + ("" if r["significant"] else " (n.s.)")


def row(w: dict) -> str:
    cells = {c["label"]: c for c in w["cells"]}
    best = w["best_fixed"]
    out = [w["name"], f"`{best}`", f"{cells[best]['p99_ms']['median']:.1f} ms"]
    for label in COLUMNS:
        cell = cells.get(label)
        out.append("★" if label == best else judged(cell and cell["to_best"]))
    bound = cells.get(w["bound"]) if w.get("bound") else None
    out.append(judged(bound and bound["to_best"]))
    ours = cells.get("neurogc")
    out.append(judged(ours and ours["to_bound"]))
    rss = ours and ours.get("rss_to_default")
    out.append("–" if rss is None else f"{rss:.2f}×")
    pairs = [
        f"`{c['label']}` / `{c['same_policy_as']}` {ratio(r['estimate'])} "
        f"({r['lower']:.2f}–{r['upper']:.2f})"
        for c in w["cells"]
        if c.get("same_policy_as") and (r := c.get("to_same"))
    ]
    out.append("; ".join(pairs) or "–")
    return "| " + " | ".join(out) + " |"


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/suite/scoreboard.json")
    board = json.loads(path.read_text())
    print(
        "| workload | best fixed | its p99 | `default` | `neurogc` | `neurogc-own` | "
        "`neurogc-loo` | GC-off bound | `neurogc` / GC-off | `neurogc` peak RSS / `default`'s | "
        "A/A pairs: one policy twice, p99 ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for w in board["workloads"]:
        print(row(w))


if __name__ == "__main__":
    main()
