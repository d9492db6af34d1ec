"""How well a scheduler predicted its own pauses: measured against predicted, per policy.

For each workload of a suite run and each policy whose collections carry a predicted pause
(gc-events `predicted_ms`): the collections of the unfrozen part it ran (`due` and `quiet`, over
the server's whole life, all its processes), the median of measured / predicted, and the share
that took more than 1.5× the pause predicted. A quiet window is judged for the pause predicted,
so a collection that took much longer than that ran into arrivals it was not judged for.

    .venv/bin/python bench/suite/pause_calibration.py bench/suite/run.tmp/<stamp>-suite
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from pathlib import Path

OVER = 1.5
TRIGGERS = ("due", "quiet")


def ratios(trial: Path, trigger: str) -> list[float]:
    """measured / predicted pause of the trial's collections with this trigger, in every process
    of the service (a worker's own events are in gc-events-PID.csv); none where a failed trial
    left no events."""
    out = []
    for events in sorted(trial.glob("gc-events*.csv")):
        with open(events, newline="") as f:
            out += [
                float(r["pause_ms"]) / float(r["predicted_ms"])
                for r in csv.DictReader(f)
                if r["trigger"] == trigger and r["predicted_ms"] and float(r["predicted_ms"]) > 0
            ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite_dir", type=Path)
    args = ap.parse_args()
    print(
        f"| workload | policy | trigger | collections | measured / predicted (median) "
        f"| over {OVER}× predicted |"
    )
    print("|---|---|---|---:|---:|---:|")
    # The suite's and each workload run's own records say which trial is which policy's.
    suite = json.loads((args.suite_dir / "suite.json").read_text())
    for w in suite["workloads"]:
        if not w.get("run"):
            continue
        run = args.suite_dir / w["run"]
        info = json.loads((run / "run.json").read_text())
        workload = info["name"]
        by_policy: dict[str, dict[str, list[float]]] = {}
        for ref in info["trials"]:
            for trigger in TRIGGERS:
                by_policy.setdefault(ref["label"], {}).setdefault(trigger, []).extend(
                    ratios(run / ref["dir"], trigger)
                )
        for label, per_trigger in by_policy.items():
            for trigger, rs in per_trigger.items():
                if not rs:
                    continue
                over = sum(r > OVER for r in rs)
                print(
                    f"| {workload} | {label} | {trigger} | {len(rs)} "
                    f"| {statistics.median(rs):.2f}× | {over} ({100 * over / len(rs):.0f} %) |"
                )


if __name__ == "__main__":
    main()
