"""Turns bench/load/run.sh's raw runs into RESULTS.md (medians, ranges, ratios, floors)."""

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import provenance  # noqa: E402  (bench/provenance.py, beside this script's folder)

ap = argparse.ArgumentParser()
ap.add_argument("runs")
provenance.add_arguments(ap)
ap.add_argument("--dur", type=float, required=True)
ap.add_argument("--seed-dur", type=float, required=True)
ap.add_argument("--conns", type=int, required=True)
ap.add_argument("--open-rate", type=float, required=True)
ap.add_argument(
    "--open-extra", required=True, help="dropped late_starts p50_ms p99_ms per open-loop run"
)
ap.add_argument("--loadavg", required=True, help="the machine's load averages around the run")
ap.add_argument("--busiest", help="the busiest processes around the run")
a = ap.parse_args()

runs = {}
for line in open(a.runs):
    name, kind, rep, n, wall, cpu, server_cpu = line.split()
    runs.setdefault(name, []).append(
        dict(rep=int(rep), n=int(n), wall=float(wall), cpu=float(cpu), server=float(server_cpu))
    )
reps = max(r["rep"] for rs in runs.values() for r in rs)


def med(xs):
    return statistics.median(xs)


def fmt_range(xs, f="{:,.0f}"):
    return f"{f.format(med(xs))} ({f.format(min(xs))}–{f.format(max(xs))})"


def per_cpu(name):
    return [r["n"] / r["cpu"] for r in runs[name]]


def ratio(a_name, b_name):
    """Per-repetition ratios of requests per CPU-second (paired by repetition)."""
    return [x / y for x, y in zip(per_cpu(a_name), per_cpu(b_name))]


label = {
    "neurogc": "neurogc load (closed loop, no wait)",
    "wrk": "wrk -t1",
    "locust": "Locust HttpUser (the seed's client)",
    "locust_fast": "Locust FastHttpUser",
    "neurogc_seed": "neurogc load",
    "locust_seed": "Locust HttpUser",
}

out = []
w = out.append
w("# `neurogc load` benchmark — latest output of `bench/load/run.sh`")
w("")
out.extend(provenance.lines(a, "the binaries"))
w(
    "- Server: `crates/neurogc-load/examples/bench_server.rs` (hyper, one thread) pinned to CPU 0; each load "
    "generator pinned to CPU 1, run one at a time, interleaved A B C D × "
    f"{reps} repetitions. Medians with (min–max) over the repetitions."
)
w(
    "- CPU = user + sys of the generator process from bash's `time`, start-up included for every tool."
)
w(
    f"- Machine load average (1, 5, 15 min) {a.loadavg}. Above ~1 other processes shared the CPUs: requests/s "
    "then drops for every tool alike, requests per CPU-second much less."
)
if a.busiest:
    w(f"- Processes above 5 % of a core (over one second) {a.busiest}.")
w("")
w(f"## Throughput: {a.conns} keep-alive connections, no think time, {a.dur:g} s, `GET /health`")
w("")
w(
    "| generator | requests/s | generator CPU-s | requests per CPU-second | server CPU (of one core) |"
)
w("|---|---:|---:|---:|---:|")
for name in ["neurogc", "wrk", "locust", "locust_fast"]:
    rs = runs[name]
    w(
        f"| {label[name]} | {fmt_range([r['n'] / a.dur for r in rs])} | "
        f"{fmt_range([r['cpu'] for r in rs], '{:.2f}')} | {fmt_range(per_cpu(name))} | "
        f"{fmt_range([100 * r['server'] / r['wall'] for r in rs], '{:.0f}')} % |"
    )
w("")
w("Requests per CPU-second, neurogc load relative to (per-repetition ratios, median (min–max)):")
w("")
floors = {"wrk": 0.5, "locust": 10.0, "locust_fast": None}
for other, floor in floors.items():
    rs = ratio("neurogc", other)
    verdict = ""
    if floor is not None:
        ok = min(rs) >= floor
        verdict = f" — floor ≥ {floor:g}×: **{'met' if ok else 'NOT MET'}**" + (
            "" if ok else " (see below)"
        )
    w(f"- {label[other]}: **{med(rs):.2f}×** ({min(rs):.2f}–{max(rs):.2f}){verdict}")


def share(r, key):
    """A run's CPU (server's or generator's) as a share of one core."""
    return r[key] / r["wall"]


def reps_where(names, cond):
    return sorted({r["rep"] for n in names for r in runs[n] if cond(r)})


def rep_list(reps):
    if len(reps) == 1:
        return f"repetition {reps[0]}"
    return "repetitions " + ", ".join(map(str, reps[:-1])) + f" and {reps[-1]}"


varied = [
    n
    for n in ("neurogc", "wrk")
    if max(r["n"] for r in runs[n]) > 1.3 * min(r["n"] for r in runs[n])
]
if varied:
    server = [100 * share(r, "server") for n in varied for r in runs[n]]
    gen = [100 * share(r, "cpu") for n in varied for r in runs[n]]
    spread = max(max(per_cpu(n)) / min(per_cpu(n)) - 1 for n in varied)
    starved = reps_where(varied, lambda r: share(r, "server") < 0.9 and share(r, "cpu") < 0.9)
    w("")
    w(
        "Note: requests/s of "
        + " and ".join(varied)
        + f" varied a lot between repetitions (server {min(server):.0f}–{max(server):.0f} % of its "
        f"core, generator {min(gen):.0f}–{max(gen):.0f} %)."
        + (
            f" In {rep_list(starved)} server and generator both used well under a full core: "
            "other processes were sharing the 2 CPUs (see the load average above)."
            if starved
            else ""
        )
        + " Requests per CPU-second, the figure the floors are about, varied by at most "
        f"{100 * spread:.0f} % between repetitions."
    )
saturated = reps_where(("neurogc", "wrk"), lambda r: share(r, "server") > 0.9)
if saturated:
    w("")
    w(
        f"Note: in {rep_list(saturated)} the one-thread server was saturated (>90 % of its core), "
        "so requests/s there is the server's limit, not the generator's; requests per CPU-second "
        "still compares what each generator spends per request."
    )
w("")
rs = runs["neurogc_open"]
w(
    f"Open loop, `neurogc load --rate {a.open_rate:,.0f}` for {a.dur:g} s: "
    f"{fmt_range([r['n'] / a.dur for r in rs])} requests/s achieved, generator CPU "
    f"{fmt_range([100 * r['cpu'] / r['wall'] for r in rs], '{:.0f}')} % of one core, "
    f"{fmt_range([r['n'] / r['cpu'] for r in rs])} requests per CPU-second."
)
extra = [[float(x) for x in line.split()] for line in open(a.open_extra) if line.strip()]
w(
    f"Dropped at the in-flight cap: {fmt_range([e[0] for e in extra])}; late starts (> 10 ms): "
    f"{fmt_range([e[1] for e in extra])}; latency from the intended send time p50 "
    f"{fmt_range([e[2] for e in extra], '{:.2f}')} ms, p99 {fmt_range([e[3] for e in extra], '{:.2f}')} ms."
)
w("")
w(
    f"## The seed's load: 100 users, spawn 10/s, wait 0.1–0.5 s, {a.seed_dur:g} s (10 s of it ramp-up)"
)
w("")
w("| generator | requests/s | generator CPU-s | generator CPU (% of one core) |")
w("|---|---:|---:|---:|")
for name in ["neurogc_seed", "locust_seed"]:
    rs = runs[name]
    w(
        f"| {label[name]} | {fmt_range([r['n'] / a.seed_dur for r in rs], '{:,.1f}')} | "
        f"{fmt_range([r['cpu'] for r in rs], '{:.2f}')} | "
        f"{fmt_range([100 * r['cpu'] / r['wall'] for r in rs], '{:.1f}')} % |"
    )
w("")
w("## Raw runs")
w("")
w("| run | rep | requests | wall s | generator CPU-s | server CPU-s |")
w("|---|---:|---:|---:|---:|---:|")
for name, rs in runs.items():
    for r in rs:
        w(
            f"| {name} | {r['rep']} | {r['n']} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['server']:.2f} |"
        )
print("\n".join(out))
