"""The table of bench/suite/option_ab.sh: per workload, the p99 of `neurogc` and of `neurogc` with
one option (each the p99 of all its requests over the rounds, with the suite's 95 % bootstrap
interval), against the GC-off bound, from each workload run's scoreboard.json.

    python bench/suite/option_ab.py RUNS_DIR LABEL SPEC
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def cell(workload: dict, label: str) -> dict:
    (c,) = [c for c in workload["cells"] if c["label"] == label]
    return c


def p99(c: dict) -> str:
    p = c["p99_ms"]
    return f"{p['median']:.2f} ({p['lower']:.2f}–{p['upper']:.2f})"


def main() -> None:
    runs, label, spec = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    suites = [json.loads(b.read_text()) for b in sorted(runs.glob("*/suite.json"))]
    rounds = "/".join(sorted({f"{s['rounds']} rounds of {s['turn_s']:g} s" for s in suites}))
    print(f"`{label}` = `{spec}`. p99 ms of all requests over {rounds} (95 % interval);")
    print("the ratio is the option's p99 over `neurogc`'s (below 1: the option is faster).")
    print("Intervals that overlap say the difference is within this run's noise.")
    print()
    print(f"| workload | req/s | gc-off (bound) | neurogc | {label} | {label} / neurogc |")
    print("|---|---:|---:|---:|---:|---:|")
    ratios = []
    for board in sorted(runs.glob("*/scoreboard.json")):
        for w in json.loads(board.read_text())["workloads"]:
            base, option = cell(w, "neurogc"), cell(w, label)
            ratio = option["p99_ms"]["median"] / base["p99_ms"]["median"]
            ratios.append(ratio)
            rate = json.loads((board.parent / "suite.json").read_text()).get("rate")
            print(
                f"| {w['name']} | {rate if rate is not None else '?'} | {p99(cell(w, 'gc-off'))}"
                f" | {p99(base)} | {p99(option)} | {ratio:.2f}× |"
            )
    ratios.sort()
    print()
    print(f"Median ratio {ratios[len(ratios) // 2]:.2f}× over {len(ratios)} workloads.")


if __name__ == "__main__":
    main()
