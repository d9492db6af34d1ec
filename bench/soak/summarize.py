"""The soak's table: RSS against each policy's budget over the measured window of a bench run.

Usage: python bench/soak/summarize.py RUN_DIR (prints Markdown). Standard library only.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

MIB = 1024 * 1024
UNITS = {"": 1, "K": 1024, "M": MIB, "G": 1024 * MIB}


def budget_of(spec: str) -> int | None:
    """The `rss=SIZE` a spec names, in bytes (the agent's size grammar: K, M, G, optional B)."""
    m = re.search(r"\brss=(\d+(?:\.\d+)?)([KMG]?)i?B?\b", spec, re.IGNORECASE)
    return int(float(m.group(1)) * UNITS[m.group(2).upper()]) if m else None


def window(trial: Path, name: str) -> list[dict[str, str]]:
    """The rows of a trial's CSV inside its measured window."""
    info = json.loads((trial / "trial.json").read_text())
    start, end = info["measure_start"], info["measure_end"]
    with open(trial / name, newline="") as f:
        return [r for r in csv.DictReader(f) if start <= float(r["time"]) <= end]


def main(run: Path) -> None:
    info = json.loads((run / "run.json").read_text())
    specs = {p["label"]: p["spec"] for p in info["policies"]}
    verdicts: list[str] = []
    print(
        "| policy | budget MiB | RSS at start MiB | peak MiB | at end MiB | seconds above budget + 10 % | peak over budget | guard collections | full collections |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for trial in sorted((run / "trials").iterdir()):
        label = json.loads((trial / "trial.json").read_text())["label"]
        rows = window(trial, "samples.csv")
        rss = [int(r["rss_bytes"]) for r in rows if r["rss_bytes"]]
        if not rss:
            print(f"| {label} | no RSS samples in the window |||||||| ")
            continue
        events = window(trial, "gc-events.csv")
        guard = sum(e["trigger"] == "guard" for e in events)
        full = sum(e["generation"] == "2" for e in events)
        budget = budget_of(specs[label])
        if budget:
            bound = budget * 1.1
            above = sum(
                float(r["interval_s"] or 0)
                for r in rows
                if r["rss_bytes"] and int(r["rss_bytes"]) > bound
            )
            over = f"{(max(rss) / budget - 1) * 100:+.1f} %"
            cells = [f"{budget / MIB:.0f}", None, None, None, f"{above:.0f}", over]
            verdicts.append(
                f"- {label}: RSS {'stayed within' if max(rss) <= bound else 'went above'} its "
                f"budget + 10 % ({bound / MIB:.0f} MiB) for the whole window; "
                f"{guard} guard collections."
            )
        else:
            cells = ["none", None, None, None, "", ""]
        cells[1:4] = [f"{rss[0] / MIB:.0f}", f"{max(rss) / MIB:.0f}", f"{rss[-1] / MIB:.0f}"]
        print(f"| {label} | " + " | ".join(cells) + f" | {guard} | {full} |")
    seconds = info["duration_s"]
    print()
    print("\n".join(verdicts))
    print()
    print(
        f"Measured window: {seconds:.0f} s per policy, after a {info['warmup_s']:.0f} s warm-up; RSS from the agent's 1 s samples."
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize.py RUN_DIR")
    main(Path(sys.argv[1]))
