"""Turns bench/dashboard/run.sh's runs (one load.json each) into RESULTS.md.

Each load.json is written by crates/neurogc-dashboard/web/tests/load.test.js. Over the runs: the
median of each run's figure with (min–max); then every run's own figures.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import provenance  # noqa: E402  (bench/provenance.py, beside this script's folder)

ap = argparse.ArgumentParser()
ap.add_argument("runs", nargs="+", help="load.json of each run, in run order")
provenance.add_arguments(ap)
ap.add_argument("--loadavg", required=True, help="the machine's load averages around the runs")
ap.add_argument("--busiest", required=True, help="the busiest processes around the runs")
a = ap.parse_args()

runs = [json.loads(Path(p).read_text()) for p in a.runs]

# (label, where in load.json, has a max): the rows of the docs' table.
PATHS = [
    ("ingest → WebSocket client (Node)", ("ws_client", "ingest_to_client_ms"), False),
    ("client's send → WebSocket client", ("ws_client", "sent_to_client_ms"), False),
    ("ingest → page (Chromium has it in the chart data)", ("page", "ingest_to_page_ms"), True),
    ("client's send → page", ("page", "sent_to_page_ms"), True),
    ("ingest → drawn on screen", ("page", "ingest_to_screen_ms"), True),
]


def delay(run, where, key):
    return run[where[0]][where[1]][key]


def num(v):
    """Milliseconds as the docs write them: one decimal below 10, whole above."""
    return f"{v:.1f}" if v < 10 else f"{v:,.0f}"


def spread(xs, f=num):
    """Median with (min–max) over the runs; one value when every run shows the same."""
    if f(min(xs)) == f(max(xs)):
        return f(statistics.median(xs))
    return f"{f(statistics.median(xs))} ({f(min(xs))}–{f(max(xs))})"


def count(v):
    return f"{v:,.0f}"


first = runs[0]
n = len(runs)
out = []
w = out.append
w("# `neurogc dashboard` under ingestion load — latest output of `bench/dashboard/run.sh`")
w("")
out.extend(provenance.lines(a, "the binary"))
w(
    "- What runs: `crates/neurogc-dashboard/web/tests/load.test.js` against the release binary "
    f"(`target/release/neurogc dashboard`): {first['servers']} servers × "
    f"{first['rate_per_server']} samples/s for {first['seconds']:g} s posted as "
    f"{first['samples']:,} single-sample POSTs (an open loop: one sample per server every "
    f"{1000 / first['rate_per_server']:g} ms, each stamped with its send time), the page open in "
    "headless Chromium and a plain WebSocket client (Node) watching. The test's assertions held "
    "in every run (every sample ingested, seen once by the client and in the page, no gaps). "
    + (
        f"{n} runs one after another; medians with (min–max) over the runs."
        if n > 1
        else "One run."
    )
)
w(f"- Machine load average (1, 5, 15 min) {a.loadavg}.")
w(f"- Processes above 5 % of a core (over one second) {a.busiest}.")
w("")
w("## Delay")
w("")
w("| from → to | p50 | p99 | max |")
w("|---|---|---|---|")
for label, where, has_max in PATHS:
    cells = [spread([delay(r, where, k) for r in runs]) + " ms" for k in ("p50", "p99")]
    cells.append(spread([delay(r, where, "max") for r in runs]) + " ms" if has_max else "")
    w(f"| {label} | {' | '.join(cells)} |")
w("")
w(
    f"Samples sent: {spread([r['samples'] for r in runs], count)} in "
    f"{spread([r['send_seconds'] for r in runs], lambda v: f'{v:.1f}')} s "
    f"(ticks late by more than 50 ms: {spread([r['late_ticks'] for r in runs], count)}); lost: "
    f"{spread([r['lost_ws_client'] for r in runs], count)} at the WebSocket client, "
    f"{spread([r['lost_page'] for r in runs], count)} in the page; "
    f"{spread([r['page']['redraws'] for r in runs], count)} redraws of "
    f"{spread([r['page']['mean_frame_ms'] for r in runs])} ms each on average (JavaScript and "
    f"the browser's paint) while the window filled to {first['samples']:,} rows."
)
w("")
w(
    '"Ingest" is the dashboard\'s receive time (`ingest_ms`), "send" the client\'s (`sent_ms`), '
    '"page" the moment the page\'s message handler has the sample in its chart data, "drawn on '
    "screen\" the end of the first redraw that includes it. All clocks are the same machine's."
)
w("")
w("## Runs")
w("")
w(
    "| run | "
    + " | ".join(
        f"{label.split(' (')[0]}: p50 / p99{' / max' if has_max else ''} ms"
        for label, _, has_max in PATHS
    )
    + " | sent in s | late ticks | lost (client, page) | redraws | mean frame ms |"
)
w("|---:|" + "---|" * len(PATHS) + "---:|---:|---|---:|---:|")
for i, r in enumerate(runs, 1):
    cells = []
    for _, where, has_max in PATHS:
        keys = ("p50", "p99", "max") if has_max else ("p50", "p99")
        cells.append(" / ".join(num(delay(r, where, k)) for k in keys))
    w(
        f"| {i} | {' | '.join(cells)} | {r['send_seconds']:.2f} | {r['late_ticks']} | "
        f"{r['lost_ws_client']}, {r['lost_page']} | {r['page']['redraws']} | "
        f"{num(r['page']['mean_frame_ms'])} |"
    )
print("\n".join(out))
