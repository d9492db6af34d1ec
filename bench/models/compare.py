"""NeuroGC's models against PyTorch (the seed's framework), side by side in one run.

For each model kind, alternating ours and PyTorch's for --rounds rounds (A B A B ...) on the
seed's data with the seed's hyper-parameters: median training time per epoch, and inference
latency per decision (ours: the agent's Predictor::push; PyTorch: one window under no_grad, as
the seed's NeuroGC called it). Writes bench/models/RESULTS.md.

Usage: bench/models/run.sh   (sets up the torch venv, builds, runs this)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = [REPO / "data/seed-neurogc/training_data.csv",
        REPO / "data/seed-neurogc/more_training_data.csv"]  # fmt: skip
NEUROGC = REPO / "target/release/neurogc"
LATENCY = REPO / "target/release/examples/inference_latency"
LSTM_FLOOR_US = 50.0


def ours_train(kind: str, epochs: int, out: Path) -> float:
    args = [
        str(NEUROGC),
        "train",
        "--model",
        kind,
        "--epochs",
        str(epochs),
        "--out",
        str(out),
        "-q",
    ]
    for d in DATA:
        args += ["--data", str(d)]
    subprocess.run(args, check=True, capture_output=True, text=True)
    meta = json.loads((out / "model.json").read_text())
    return meta["metrics"]["epoch_seconds_median"] * 1e3


def ours_latency(dirs: list[Path]) -> dict[str, dict]:
    r = subprocess.run(
        [str(LATENCY), *map(str, dirs), "--json"], check=True, capture_output=True, text=True
    )
    return {row["kind"]: row for row in map(json.loads, r.stdout.splitlines())}


def torch_run(python: str, kind: str, epochs: int) -> dict:
    args = [
        python,
        str(Path(__file__).with_name("torch_side.py")),
        "--model",
        kind,
        "--epochs",
        str(epochs),
    ]
    for d in DATA:
        args += ["--data", str(d)]
    r = subprocess.run(args, check=True, capture_output=True, text=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--torch-python", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--out", default=str(REPO / "bench/models/RESULTS.md"))
    args = p.parse_args()
    kinds = ["lstm", "transformer", "feedforward", "forest"]
    ours_epoch = {k: [] for k in kinds}
    ours_lat = {k: [] for k in kinds}
    torch_res = {k: [] for k in kinds if k != "forest"}
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            for kind in kinds:
                out = Path(tmp) / f"{kind}-{rnd}"
                epochs = 1 if kind == "forest" else args.epochs
                ours_epoch[kind].append(ours_train(kind, epochs, out))
                if kind in torch_res:
                    torch_res[kind].append(torch_run(args.torch_python, kind, args.epochs))
            lat = ours_latency([Path(tmp) / f"{k}-{rnd}" for k in kinds])
            for kind in kinds:
                ours_lat[kind].append(lat[kind])
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    med = statistics.median
    torch_info = next(iter(torch_res.values()))[0]
    lines = [
        "# NeuroGC models vs PyTorch",
        "",
        "Command: `bench/models/run.sh` (runs `bench/models/compare.py`).",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}. "
        f"PyTorch {torch_info['torch']} (CPU, {torch_info['threads']} threads). "
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        f"Data: the seed's two training CSVs; seed hyper-parameters (batch 32, Adam lr 1e-3, MSE); "
        f"{args.epochs} epochs per run; {args.rounds} rounds, ours and PyTorch's alternated; medians.",
        "",
        "| model | train ms/epoch: NeuroGC (candle) | PyTorch | PyTorch is … × faster | decision p50: NeuroGC | PyTorch | NeuroGC is … × faster | decision p99: NeuroGC | PyTorch |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in kinds:
        o_ep = med(ours_epoch[kind])
        o50 = med(r["p50_us"] for r in ours_lat[kind])
        o99 = med(r["p99_us"] for r in ours_lat[kind])
        if kind in torch_res:
            t_ep = med(r["epoch_ms_median"] for r in torch_res[kind])
            t50 = med(r["inference_us_p50"] for r in torch_res[kind])
            t99 = med(r["inference_us_p99"] for r in torch_res[kind])
            lines.append(
                f"| {kind} | {o_ep:.1f} | {t_ep:.1f} | {o_ep / t_ep:.2f} | {o50:.1f} µs | {t50:.1f} µs "
                f"| **{t50 / o50:.1f}** | {o99:.1f} µs | {t99:.1f} µs |"
            )
        else:
            lines.append(
                f"| {kind} | {o_ep:.1f} (whole fit, 100 trees) | — | — | {o50:.1f} µs | — | — | {o99:.1f} µs | — |"
            )
    lstm50 = med(r["p50_us"] for r in ours_lat["lstm"])
    lines += [
        "",
        "Notes:",
        "- \"PyTorch is … × faster\" at training is NeuroGC's epoch time divided by PyTorch's "
        "(below 1: NeuroGC is faster). Training happens offline, once per model.",
        "- Decision latency is what runs every interval inside the service: NeuroGC's native path "
        "(normalise, slide the window, forward pass; no GIL held) against PyTorch's single-window "
        "forward under `no_grad` (the seed's NeuroGC ran this on the event loop).",
        "- The random forest has no PyTorch counterpart (the seed used scikit-learn).",
        "",
        f"LSTM decision latency p50 {lstm50:.1f} µs: "
        f"{'meets' if lstm50 <= LSTM_FLOOR_US else 'MISSES'} the ≤ {LSTM_FLOOR_US:.0f} µs floor.",
        "",
    ]
    text = "\n".join(lines)
    Path(args.out).write_text(text)
    print(text)
    return 0 if lstm50 <= LSTM_FLOOR_US else 1


if __name__ == "__main__":
    sys.exit(main())
