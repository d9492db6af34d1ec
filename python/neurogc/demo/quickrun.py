"""``make demo`` until the full pipeline lands: the demo app with the agent under a short load
from ``neurogc load``, then the samples it recorded.

    python -m neurogc.demo.quickrun [--policy P] [--users 20] [--run-time 15s] [--port 8001]
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

COLUMNS = [
    ("t", 6), ("cpu%", 6), ("mem%", 6), ("rss MB", 7), ("rps", 6), ("p95 ms", 7), ("p99 ms", 7),
    ("gc0", 5), ("gc1", 4), ("gc2", 4), ("max pause ms", 13), ("policy action", 0),
]  # fmt: skip


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"demo: the app exited with code {proc.returncode} before serving")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"demo: the app did not answer on {url} within {timeout:.0f} s")


def _row(sample: dict, t0: float) -> list[str]:
    def num(key: str, scale: float = 1.0, fmt: str = "{:.1f}") -> str:
        value = sample.get(key) or ""
        return fmt.format(float(value) * scale) if value != "" else "-"

    pauses = [float(sample[f"gc{g}_pause_ms_max"] or 0) for g in range(3)]
    return [
        f"{float(sample['time']) - t0:.0f}",
        num("cpu"),
        num("mem", fmt="{:.2f}"),
        num("rss_bytes", 1 / 2**20, "{:.0f}"),
        num("rps"),
        num("p95"),
        num("p99"),
        sample["gc0_collections"],
        sample["gc1_collections"],
        sample["gc2_collections"],
        f"{max(pauses):.2f}",
        sample["policy_action"],
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m neurogc.demo.quickrun", description=__doc__)
    p.add_argument("--policy", default="default")
    p.add_argument("--users", type=int, default=20)
    p.add_argument("--spawn-rate", type=float, default=10)
    p.add_argument("--run-time", default="15s")
    p.add_argument("--port", type=int, default=8001)
    p.add_argument("--out", default=None, help="samples CSV (default runs/demo-<time>/samples.csv)")
    args = p.parse_args(argv)

    load_bin = shutil.which("neurogc")
    if load_bin is None:
        print("demo: the neurogc command is not on PATH (run `make setup`)", file=sys.stderr)
        return 2
    out = Path(args.out or f"runs/demo-{time.strftime('%Y%m%d-%H%M%S')}/samples.csv")
    out.parent.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{args.port}"
    app = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "neurogc.demo",
            "--port",
            str(args.port),
            "--policy",
            args.policy,
            "--csv",
            str(out),
        ],  # fmt: skip
    )
    try:
        _wait_healthy(url, app)
        print(f"demo: app with NeuroGC (policy {args.policy}) on {url}; samples -> {out}")
        print(f"demo: neurogc load -u {args.users} -r {args.spawn_rate} -t {args.run_time}\n")
        load = subprocess.run(
            [
                load_bin,
                "load",
                "--host",
                url,
                "--users",
                str(args.users),
                "--spawn-rate",
                str(args.spawn_rate),
                "--run-time",
                args.run_time,
                "--headless",
            ],  # fmt: skip
        )
        if load.returncode != 0:
            print(f"demo: neurogc load failed (exit {load.returncode})", file=sys.stderr)
            return load.returncode
    finally:
        if app.poll() is None:
            app.send_signal(signal.SIGINT)
            try:
                app.wait(timeout=20)
            except subprocess.TimeoutExpired:
                app.kill()
    rows = list(csv.DictReader(out.open()))
    if not rows:
        print(f"demo: no samples were recorded in {out}", file=sys.stderr)
        return 1
    t0 = float(rows[0]["time"])
    print(f"\nSamples recorded by the agent ({len(rows)} rows, one per second, from {out}):\n")
    print(" ".join(name.rjust(width) for name, width in COLUMNS))
    for sample in rows:
        cells = _row(sample, t0)
        print(" ".join(c.rjust(w) for c, (_, w) in zip(cells, COLUMNS)))
    print(f"\nAll {len(rows[0])} columns: {os.path.abspath(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
