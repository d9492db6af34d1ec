"""Whether a server's place in the order it started in changed how long its collections took.

For each workload of a suite run: every policy in the order its server started (the turns came
in the same order), with its full collections in the measured turns and their median pause. Two
servers of one policy (`default` and `default-aa`) do the same work: a difference between their
pauses is the machine's, not the policy's.

    .venv/bin/python bench/suite/start_order.py bench/suite/run.tmp/<stamp>-suite
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from pathlib import Path


def first_intended(trial: Path) -> float | None:
    """The intended time of the trial's first measured request."""
    with open(trial / "requests.csv", newline="") as f:
        times = [float(row["intended"]) for row in csv.DictReader(f)]
    return min(times) if times else None


def full_pauses(trial: Path, since: float) -> list[float]:
    """Pauses (ms) of the full collections after `since`."""
    with open(trial / "gc-events.csv", newline="") as f:
        return [
            float(row["pause_ms"])
            for row in csv.DictReader(f)
            if row["generation"] == "2" and row["pause_ms"] and float(row["time"]) >= since
        ]


def workload_table(run: Path) -> list[str]:
    info = json.loads((run / "run.json").read_text())
    rows = []
    for ref in info["trials"]:
        trial = run / ref["dir"]
        t = json.loads((trial / "trial.json").read_text())
        start = first_intended(trial)
        if t.get("started") is None or start is None:
            continue
        rows.append((t["started"], t["label"], full_pauses(trial, start)))
    rows.sort()
    order = "shuffled" if info.get("shuffle") is not None else "as listed"
    primer = ", after a throwaway primer server" if info.get("primer") else ""
    out = [
        f"## {info['name']} (servers started {order}{primer})",
        "",
        "| # | policy | full collections | median pause ms |",
        "|---:|---|---:|---:|",
    ]
    medians: dict[str, tuple[int, float]] = {}
    for i, (_, label, pauses) in enumerate(rows, 1):
        median = f"{statistics.median(pauses):.1f}" if pauses else "-"
        out.append(f"| {i} | {label} | {len(pauses)} | {median} |")
        if pauses:
            medians[label] = (i, statistics.median(pauses))
    out.append("")
    # The same policy twice: the later-started one's pauses against the earlier one's.
    for label, (i, m) in medians.items():
        if f"{label}-aa" in medians:
            j, m_aa = medians[f"{label}-aa"]
            (first, mf), (second, ms) = sorted([(i, m), (j, m_aa)])
            out.append(
                f"`{label}` and `{label}-aa`: the one started #{second} paused "
                f"{ms / mf:.2f}× as long as the one started #{first} (median full collection).\n"
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", type=Path, help="a suite run's directory (<stamp>-suite)")
    args = parser.parse_args()
    suite = json.loads((args.suite / "suite.json").read_text())
    print(f"# Full collections by start order: {args.suite.name}\n")
    for w in suite["workloads"]:
        if w.get("run"):
            print("\n".join(workload_table(args.suite / w["run"])))


if __name__ == "__main__":
    main()
