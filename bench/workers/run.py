"""Several workers of one service: what freezing before fork saves them, and what staggering
their full collections does to the service's p99.

    python bench/workers/run.py prefork [--rounds 2] [--duration 20s] [--rate 150]
    python bench/workers/run.py stagger [--rounds 2] [--duration 20s] [--rate 150]
    (make bench-workers runs both)

Serves bench/workers/app.py (a 200k-record heap built at import) with
`gunicorn --preload -w 2` under `neurogc run`, variants interleaved, rotated per round:

- prefork: `default` (CPython as it comes); `freeze, no recipe` (the freeze policy with
  NEUROGC_PREFORK_FREEZE=0: each worker collects and freezes the heap it inherited, after the
  policy's warm-up: what the agent did before); `freeze, pre-fork` (the freeze policy as it is:
  the master collects and freezes right before it forks, the recipe of CPython's gc.freeze()
  documentation).
- stagger: `periodic:2s` (each worker a full collection every 2 s, the two started together)
  and `periodic:2s,stagger=on` (the same, the workers taking turns).

Each run: the service starts, waits 4 s (past the freeze policy's 3 s warm-up), `neurogc load`
sends an open-loop `--rate` to `/` for `--duration`, then every process's memory is read from
/proc/PID/smaps_rollup (PSS: its share of the pages, shared ones divided among their users; USS:
the pages only it has) and the full collections each worker ran are read from its gc-events
file, with how many overlapped another worker's. Writes bench/workers/<experiment>.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NEUROGC = os.environ.get("NEUROGC", str(REPO / "target/release/neurogc"))
PYTHON = os.environ.get("PYTHON", str(REPO / ".venv/bin/python"))
EXPERIMENTS = {  # experiment -> ((label, policy, NEUROGC_PREFORK_FREEZE), ...)
    "prefork": (
        ("default", "default", "1"),
        ("freeze, no recipe", "freeze:3s", "0"),
        ("freeze, pre-fork", "freeze:3s", "1"),
    ),
    "stagger": (
        ("periodic:2s", "periodic:2s", "1"),
        ("periodic:2s,stagger=on", "periodic:2s,stagger=on", "1"),
    ),
}
MIB = 1 << 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def smaps(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        out[key] = int(value.split()[0]) * 1024
    return out


def children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def gunicorn_master(root: int) -> int:
    """The gunicorn master under `neurogc run` (itself, or its child)."""
    for pid in [root, *children(root)]:
        if b"gunicorn" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    raise RuntimeError(f"no gunicorn process under pid {root}")


def full_collections(directory: Path) -> dict[int, list[tuple[float, float]]]:
    """The full collections each process ran, (start, end) in Unix seconds, by pid."""
    out: dict[int, list[tuple[float, float]]] = {}
    for path in directory.glob("gc-events*.csv"):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["generation"] == "2":
                    start = float(row["time"])
                    span = (start, start + float(row["pause_ms"]) / 1e3)
                    out.setdefault(int(row["pid"]), []).append(span)
    return out


def overlapping(spans: dict[int, list[tuple[float, float]]], pids: list[int]) -> int:
    """Full collections of these processes that overlap one of another of them."""
    flat = sorted((a, b, pid) for pid in pids for a, b in spans.get(pid, []))
    hit = set()
    for i, (_, b, pid) in enumerate(flat):
        for j in range(i + 1, len(flat)):
            if flat[j][0] >= b:
                break
            if flat[j][2] != pid:
                hit.update((i, j))
    return len(hit)


def one_run(label: str, policy: str, prefork: str, args, directory: Path) -> dict:
    directory.mkdir(parents=True)
    port = free_port()
    env = dict(os.environ, NEUROGC_PREFORK_FREEZE=prefork, PYTHONPATH=str(HERE))
    cmd = [NEUROGC, "run", "--policy", policy, "--csv", str(directory / "samples.csv"),
           "--gc-events-csv", str(directory / "gc-events.csv"), "--",
           PYTHON, "-m", "gunicorn", "--preload", "-w", "2", "-b", f"127.0.0.1:{port}",
           "--log-level", "warning", "app:app"]  # fmt: skip
    service = subprocess.Popen(cmd, env=env, cwd=HERE, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=1).read()
                break
            except OSError:
                if time.time() > deadline or service.poll() is not None:
                    raise RuntimeError(f"{label}: the service did not answer on {url}") from None
                time.sleep(0.2)
        master = gunicorn_master(service.pid)
        time.sleep(4)  # past the freeze policy's 3 s warm-up in the workers
        load_json = directory / "load.jsonl"
        subprocess.run([NEUROGC, "load", "--host", url.rstrip("/"), "--tasks",
                        str(HERE / "tasks.toml"), "--rate", str(args.rate), "--run-time",
                        args.duration, "--quiet", "--json-out", str(load_json)],
                       check=True)  # fmt: skip
        workers = children(master)
        memory = {pid: smaps(pid) for pid in [master, *workers]}
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(timeout=30)
    summary = json.loads(load_json.read_text().splitlines()[-1])
    total = next(r for r in summary["rows"] if r["task"] == "all")
    fulls = full_collections(directory)
    pauses = {p: [(end - start) * 1e3 for start, end in fulls.get(p, [])] for p in workers}
    worker_mem = [memory[p] for p in workers]
    return {
        "label": label,
        "p99_ms": total["p99_ms"],
        "p50_ms": total["p50_ms"],
        "requests": total["requests"],
        "failures": total["failures"],
        "pss_total": sum(m["Pss"] for m in memory.values()),
        "pss_workers": [m["Pss"] for m in worker_mem],
        "uss_workers": [m["Private_Clean"] + m["Private_Dirty"] for m in worker_mem],
        "rss_workers": [m["Rss"] for m in worker_mem],
        "worker_full_collections": [len(v) for v in pauses.values()],
        "worker_longest_full_ms": max((max(v) for v in pauses.values() if v), default=0.0),
        "worker_full_overlapping": overlapping(fulls, workers),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment", choices=sorted(EXPERIMENTS))
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--duration", default="20s")
    p.add_argument("--rate", type=float, default=150)
    args = p.parse_args()
    variants = EXPERIMENTS[args.experiment]
    out = HERE / "run" / args.experiment
    if out.exists():
        subprocess.run(["rm", "-rf", str(out)], check=True)
    results: list[dict] = []
    for r in range(args.rounds):
        k = r % len(variants)
        for i, (label, policy, prefork) in enumerate(variants[k:] + variants[:k]):
            slug = label.replace(", ", "-").replace(" ", "-").replace(":", "").replace(",", "-")
            res = one_run(label, policy, prefork, args, out / f"r{r + 1}-{i + 1}-{slug}")
            res["round"] = r + 1
            results.append(res)
            print(f"round {r + 1} {label:24s} p99 {res['p99_ms']:7.2f} ms  PSS total "
                  f"{res['pss_total'] / MIB:6.1f} MiB  worker USS "
                  f"{[round(u / MIB, 1) for u in res['uss_workers']]} MiB  worker full "
                  f"collections {res['worker_full_collections']}, overlapping "
                  f"{res['worker_full_overlapping']}", flush=True)  # fmt: skip
    (out / "results.json").write_text(json.dumps(results, indent=1))
    write_results(results, args, variants)


def per_worker(runs: list[dict], key: str) -> float:
    """The median of a per-worker figure over every worker of every run."""
    return statistics.median([v for r in runs for v in r[key]])


TITLES = {
    "prefork": "Pre-fork freeze: gunicorn --preload -w 2, a 200k-record heap built at import",
    "stagger": "Staggered full collections: gunicorn --preload -w 2 under periodic:2s",
}


def write_results(results: list[dict], args, variants) -> None:
    med = statistics.median
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=REPO).stdout.strip()  # fmt: skip
    command = (f"python bench/workers/run.py {args.experiment} --rounds {args.rounds} "
               f"--duration {args.duration} --rate {args.rate:g}")  # fmt: skip
    lines = [
        "<!-- written by bench/workers/run.py; do not edit -->",
        "",
        f"# {TITLES[args.experiment]}",
        "",
        f"- Command: `{command}` (`make bench-workers`) · commit {commit} · "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "- Each run: the service under `neurogc run`, 4 s to settle (past the freeze policy's 3 s "
        f"warm-up), then `neurogc load --rate {args.rate:g}` (open loop) for {args.duration} on "
        "`/`; memory read from `/proc/PID/smaps_rollup` at the end of the load; variants "
        "interleaved, rotated per round.",
        "",
        "Medians over rounds (per worker: the median over both workers and all rounds).",
        "",
        "| variant | p99 | p50 | PSS, all 3 processes | PSS per worker | USS per worker "
        "| full collections per worker | longest in a worker | overlapping |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    by: dict[str, list[dict]] = {}
    for r in results:
        by.setdefault(r["label"], []).append(r)
    for label, _, _ in variants:
        rs = by[label]
        lines.append(
            f"| {label} | {med(r['p99_ms'] for r in rs):.2f} ms | "
            f"{med(r['p50_ms'] for r in rs):.2f} ms | "
            f"{med(r['pss_total'] for r in rs) / MIB:.1f} MiB | "
            f"{per_worker(rs, 'pss_workers') / MIB:.1f} MiB | "
            f"{per_worker(rs, 'uss_workers') / MIB:.1f} MiB | "
            f"{per_worker(rs, 'worker_full_collections'):g} | "
            f"{med(r['worker_longest_full_ms'] for r in rs):.1f} ms | "
            f"{med(r['worker_full_overlapping'] for r in rs):g} |"
        )

    def ratio(key: str, a: list[dict], b: list[dict]) -> float:
        if key == "uss_workers":
            return per_worker(a, key) / per_worker(b, key)
        return med(r[key] for r in a) / med(r[key] for r in b)

    first, last = by[variants[0][0]], by[variants[-1][0]]
    lines += [""]
    if args.experiment == "prefork":
        base = by["freeze, no recipe"]
        lines.append(
            f"The recipe against the freeze policy without it: USS per worker "
            f"{ratio('uss_workers', last, base):.2f}×, PSS of the service "
            f"{ratio('pss_total', last, base):.2f}×, p99 {ratio('p99_ms', last, base):.2f}×. "
            f"Against `default`: USS per worker {ratio('uss_workers', last, first):.2f}×, PSS "
            f"{ratio('pss_total', last, first):.2f}×, p99 {ratio('p99_ms', last, first):.2f}×."
        )
    else:
        lines.append(
            f"Staggered against not: p99 {ratio('p99_ms', last, first):.2f}×, p50 "
            f"{ratio('p50_ms', last, first):.2f}×; full collections overlapping another "
            f"worker's: {med(r['worker_full_overlapping'] for r in last):g} against "
            f"{med(r['worker_full_overlapping'] for r in first):g} (median per run)."
        )
    lines += [
        "",
        f"Every run: [run/{args.experiment}/results.json](run/{args.experiment}/results.json) "
        "(failures, requests, per-process figures). The raw samples stay local.",
    ]
    path = HERE / f"{args.experiment}.md"
    path.write_text("\n".join(lines) + "\n")
    print(path.relative_to(REPO))


if __name__ == "__main__":
    sys.exit(main())
