"""How much memory `neurogc train` takes for a large data set: a synthetic sample CSV in the
agent's own columns (46, about 300 bytes a row) of the given size, trained with `--epochs N`, its
peak RSS (the child's max resident set) and wall time, printed as Markdown.

Usage: python bench/models/train_memory.py [--mb 1024] [--epochs 1] [--neurogc target/release/neurogc]
         > bench/models/TRAIN-MEMORY.md
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from neurogc import _native

TEXT = {"policy": "neurogc", "policy_action": "", "policy_reason": "", "server": ""}


def write_csv(path: Path, megabytes: float) -> int:
    """Rows of plausible values until the file reaches `megabytes`; returns the row count."""
    columns = _native.columns()
    rnd = random.Random(1)
    rows = 0
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        t = 1.7e9
        while f.tell() < megabytes * 1024 * 1024:
            row = []
            for c in columns:
                if c == "time":
                    row.append(f"{t:.3f}")
                elif c in TEXT:
                    row.append(TEXT[c])
                elif c in ("gc_triggered", "gc_enabled", "model_fired"):
                    row.append("True" if rnd.random() < 0.3 else "False")
                else:
                    row.append(f"{rnd.random() * 100:.3f}")
            w.writerow(row)
            rows += 1
            t += 1.0
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=1024)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--model", default="feedforward")
    ap.add_argument("--neurogc", default="target/release/neurogc")
    a = ap.parse_args()
    commit = subprocess.run(
        ["git", "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "samples.csv"
        rows = write_csv(data, a.mb)
        size = data.stat().st_size
        started = time.monotonic()
        out = subprocess.run(
            [
                a.neurogc,
                "train",
                "--data",
                str(data),
                "--model",
                a.model,
                "--epochs",
                str(a.epochs),
                "--out",
                os.path.join(tmp, "model"),
            ],
            capture_output=True,
            text=True,
        )
        took = time.monotonic() - started
        if out.returncode != 0:
            sys.exit(f"neurogc train failed:\n{out.stderr}")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print("# `neurogc train` on a large data set: peak memory\n")
    print(
        f"- Command: `python bench/models/train_memory.py --mb {a.mb:g} --epochs {a.epochs}"
        f" --model {a.model}`; commit {commit or '?'}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(
        f"- Data: one CSV of {size / 2**20:,.0f} MiB, {rows:,} rows of the agent's "
        f"{len(_native.columns())} columns"
    )
    print(
        f"- `neurogc train --model {a.model} --epochs {a.epochs}`: peak RSS "
        f"**{peak / 2**20:,.0f} MiB** ({peak / size:.2f} × the file), {took:.0f} s"
    )


if __name__ == "__main__":
    main()
