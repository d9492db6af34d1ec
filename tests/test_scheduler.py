"""The `neurogc` scheduler against the real CPython collector: it takes the old generation over,
freezes the warm heap, collects what it owns, costs next to nothing, and on a large heap beats the
default collector's p99."""

from __future__ import annotations

import csv
import gc
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time

import pytest

import neurogc
from conftest import REPO, Workload, request, vm_rss_bytes, wait_for


class Node:
    def __init__(self) -> None:
        self.me = self
        self.payload = [0] * 8


def test_it_holds_full_collections_back_and_freezes_the_warm_heap(clean_gc, tmp_path):
    keep = [Node() for _ in range(20_000)]
    t0, t1, t2 = gc.get_threshold()
    path = tmp_path / "samples.csv"
    agent = neurogc.start("neurogc,warmup=0.3", interval=0.05, csv=path)
    assert gc.get_threshold() == (t0, t1, t2), "CPython's own rule through the warm-up"
    assert gc.isenabled()
    wait_for(lambda: gc.get_freeze_count() >= 20_000, 5, "the warm heap to be frozen")
    assert gc.get_threshold() == (t0, t1, 2**31 - 1), "young automatic, full ones held back"
    agent.stop()
    actions = [r["policy_action"] for r in csv.DictReader(path.open())]
    assert actions[0] == f"set_threshold({t0}, {t1}, {t2})", actions
    assert any(a.endswith("gc.freeze()") for a in actions), actions
    del keep


def test_it_collects_the_old_generation_it_owns(clean_gc, tmp_path):
    path = tmp_path / "samples.csv"
    events = tmp_path / "gc-events.csv"
    agent = neurogc.start("neurogc,warmup=0.2", interval=0.05, csv=path, gc_events_csv=events)
    wait_for(lambda: gc.get_freeze_count() > 0, 5, "the freeze")
    before = agent.totals()["policy_collections"]
    full_before = gc.get_stats()[2]["collections"]
    # Garbage that lives long enough to reach the old generation, then dies there.
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        batch = [Node() for _ in range(5_000)]
        for _ in range(30):
            [Node() for _ in range(1_000)]  # young churn: the batch is promoted
        del batch
        time.sleep(0.01)
    wait_for(lambda: agent.totals()["policy_collections"] > before, 5, "a full collection")
    assert gc.get_stats()[2]["collections"] > full_before
    agent.stop()
    rows = [r for r in csv.DictReader(path.open()) if r["policy_action"].startswith("collect(2)")]
    assert rows, "the collections are in the samples"
    for r in rows:
        # Each says why now, what it predicted, and what it measured.
        assert "predicted pause" in r["policy_reason"], r
        assert " ms" in r["policy_action"], r
    # And in the GC events: the freeze first, then the reasons of the old-generation collections,
    # each with the pause it predicted.
    ours = [r for r in csv.DictReader(events.open()) if r["reason"] == "policy"]
    assert ours[0]["trigger"] == "freeze", ours[0]
    assert {r["trigger"] for r in ours[1:]} <= {"due", "quiet", "growth", "stale", "guard"}, ours
    assert len(ours) >= 2 and all(float(r["predicted_ms"]) > 0 for r in ours), ours
    # Each row says why in words, whatever else its sample's interval held: its need and the
    # moment it ran, as the action's reason in the samples begins.
    assert ours[0]["why"].startswith("warm-up of 0.2 s over"), ours[0]
    assert all("; " in r["why"] for r in ours), ours
    for r in rows:
        assert any(r["policy_reason"].startswith(e["why"]) for e in ours), (r, ours)


def test_a_bad_spec_names_the_problem():
    for spec, message in [
        ("neurogc,quiet=2", "quiet"),
        ("neurogc,speed=1", 'unknown option "speed"'),
        ("neurogc,young=lots", "must be auto, off or a threshold0"),
        ("neurogc:a,b", "at most one model directory"),
    ]:
        with pytest.raises(ValueError, match=message):
            neurogc.validate_policy(spec)


def test_its_own_cost_stays_under_one_percent_of_a_core(tmp_path):
    """Decisions every 50-200 ms when idle, without the interpreter: the agent's thread spends
    next to no CPU (its own on-CPU time, measured between 1 s and 5 s after start, after the
    freeze; bench/agent_overhead.py measures it idle and serving)."""
    script = tmp_path / "idle.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, time, neurogc
            keep = [[i] for i in range(200_000)]
            neurogc.start("neurogc,warmup=0.2", interval=1.0)
            def cpu():
                # The sampler thread's on-CPU ns (not the process's: not the sleeping caller's).
                for tid in os.listdir("/proc/self/task"):
                    with open(f"/proc/self/task/{tid}/comm") as f:
                        if f.read().strip() == "neurogc-sampler":
                            with open(f"/proc/self/task/{tid}/schedstat") as s:
                                return int(s.read().split()[0]) / 1e9
            time.sleep(1.0)
            a = cpu()
            time.sleep(4.0)
            print(cpu() - a)
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    used = float(out.stdout.strip())
    assert used < 0.04, f"{used:.3f} s of CPU in 4 s idle (over 1 % of a core)"


def within_a_turn(event: dict, start: float, end: float, turn_s: float) -> bool:
    """Whether a collection in gc-events.csv ran within one of the measurement's turns. Servers
    taking turns are stopped (SIGSTOP) between them, and a collection the stop catches lasts until
    the server's next turn on the wall clock (a bare clone's run: 4,011 ms for a quiet collection
    begun 12 ms after its turn ended, the load gone to the other server), though no request waits
    for it."""
    began = float(event["time"])  # its start
    ended = began + float(event["pause_ms"]) / 1e3
    switches = (start + turn_s * k for k in range(int((end - start) / turn_s) + 2))
    return began >= start and not any(began - 0.05 <= s <= ended + 0.05 for s in switches)


@pytest.mark.slow
def test_on_a_large_heap_it_beats_the_default_p99(tmp_path):
    runs = tmp_path / "runs"
    # 12 turns of 4 s each: CPython's 25 % rule runs a full collection every ~1,250 requests here
    # (the catalogue's quarter in promoted traces), and the auto rate follows the machine's speed;
    # at 66 req/s, on a slow day, 6 turns (1,584 requests) held one or none, which a turn switch
    # can cut off (CI at 81a1423: none to compare with). 12 hold two or more down to ~55 req/s.
    out = subprocess.run(
        [
            str(REPO / "target" / "release" / "neurogc"), "bench", "--workload", "large-heap",
            "--policy", "default", "--policy", "neurogc", "--mode", "turns", "--slice", "4s",
            "--duration", "48s", "--warmup", "6s", "--repeat", "1", "--rate", "auto",
            "--probe-time", "3s", "--runs-dir", str(runs), "--no-dashboard",
        ],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (run,) = list(runs.iterdir())
    turns, pooled, typical = {}, {}, {}
    for t in json.loads((run / "run.json").read_text())["trials"]:
        info = json.loads((run / t["dir"] / "trial.json").read_text())
        # The median full collection: CPython's under default; neurogc's own after its freeze.
        # (Not the longest: the pause is wall time, and one preempted by the machine can read
        # up to the stop limit, 250 ms, longer.)
        typical[t["label"]] = statistics.median(
            float(e["pause_ms"])
            for e in csv.DictReader((run / t["dir"] / "gc-events.csv").open())
            if e["generation"] == "2"
            and e["reason"] == ("runtime" if t["label"] == "default" else "policy")
            and e["trigger"] != "freeze"
            and within_a_turn(e, info["measure_start"], info["measure_end"], 4.0)
        )
        lines = [json.loads(x) for x in (run / t["dir"] / "load.jsonl").read_text().splitlines()]
        turns[t["label"]] = [x["p99_ms"] for x in lines if x["type"] == "turn"]
        # The p99 of all the server's requests, over all its turns: what its users saw. (The
        # default's full collections come every other 4 s turn, so a per-turn median hides them.)
        (total,) = [r for r in lines[-1]["rows"] if r["task"] == "all"]
        pooled[t["label"]] = total["p99_ms"]
    assert len(turns["neurogc"]) == len(turns["default"]) == 12
    # Frozen, the catalogue is never scanned again: neurogc's own collections after the freeze
    # pause a fraction of the default's full ones (20-110 ms against 450-610 ms here)...
    assert typical["neurogc"] * 2 < typical["default"], (typical, turns)
    # ... and what its users saw is better. (Not by a fixed factor: its collections of the live
    # request traces, 85 k objects, every few dozen requests, cost 20-70 ms each and queue the
    # requests behind them on a slow machine: 0.48-0.60 of the default's pooled p99 in CI and here;
    # the suite measures it over five rounds.)
    assert pooled["neurogc"] < pooled["default"], (pooled, turns)


@pytest.mark.slow
def test_on_cycle_leak_the_guard_keeps_its_budget_where_a_freeze_does_not(tmp_path):
    """The cycle-leak workload: documents frozen at warm-up are retired as uploads replace them,
    and only an unfrozen collection frees them. Both servers get the same uploads; under
    `freeze` RSS climbs by every retired frozen document, under `neurogc,rss=BUDGET` RSS stays
    within the budget + 10 %: the frozen heap is unfrozen and collected, by the guard or, where
    the memory in use passes the staleness limit first, by a stale re-freeze (which of the two
    comes first is a matter of timing: repeated runs have seen each)."""
    budget = 300 << 20
    options = ["--set", "documents=500", "--set", "payload=262144"]  # ~125 MiB of payloads
    servers = {
        "freeze": Workload("cycle-leak", tmp_path / "freeze", "--policy", "freeze:1", *options),
        "neurogc": Workload(
            "cycle-leak", tmp_path / "neurogc", "--policy",
            f"neurogc,warmup=1s,rss={budget}", *options,
        ),
    }  # fmt: skip
    try:
        for w in servers.values():
            wait_for(w.up, 60, f"cycle-leak on port {w.port}")
        time.sleep(2.5)  # both frozen
        peak = dict.fromkeys(servers, 0)
        # 1,000 uploads each, 50 a second (12.5 MiB/s of payloads: a service's pace, not a
        # flood the guard's once-a-second turns could not follow): every document frozen at
        # warm-up is retired twice over.
        started = time.monotonic()
        for i in range(1000):
            time.sleep(max(0.0, started + i / 50 - time.monotonic()))
            for name, w in servers.items():
                assert request(w.url + "/upload", method="POST")[0] == 200
                if i % 25 == 0:
                    peak[name] = max(peak[name], vm_rss_bytes(w.process.pid))
        time.sleep(1.0)  # the guard's last turn
        for name, w in servers.items():
            peak[name] = max(peak[name], vm_rss_bytes(w.process.pid))
    finally:
        for w in servers.values():
            w.stop()
    mib = {k: v >> 20 for k, v in peak.items()}
    assert peak["freeze"] > budget * 1.1, f"the workload did not outgrow the budget: {mib} MiB"
    assert peak["neurogc"] <= budget * 1.1, f"RSS above the budget + 10 %: {mib} MiB"
    events = (tmp_path / "neurogc" / "cycle-leak-gc-events.csv").read_text()
    assert ",guard," in events or ",stale," in events, "the frozen heap was never unfrozen"
