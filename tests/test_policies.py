"""Each policy observably does what it says, against the real CPython collector."""

from __future__ import annotations

import csv
import gc
import json
import subprocess
import sys
import textwrap
import time

import neurogc
from conftest import vm_rss_bytes, wait_for


class Cyclic:
    def __init__(self, payload: object = None) -> None:
        self.me = self
        self.payload = payload


def make_garbage(n: int, payload_bytes: int = 0) -> None:
    for _ in range(n):
        Cyclic(bytearray(payload_bytes) if payload_bytes else None)


def test_default_changes_nothing(clean_gc):
    before = (gc.isenabled(), gc.get_threshold())
    agent = neurogc.start("default", interval=0.05)
    time.sleep(0.2)
    assert (gc.isenabled(), gc.get_threshold()) == before
    assert agent.totals()["policy_actions"] == 0


def test_threshold_sets_and_restores(clean_gc, tmp_path):
    original = gc.get_threshold()
    agent = neurogc.start("threshold:5000,20,30", interval=0.05, csv=tmp_path / "s.csv")
    assert gc.get_threshold() == (5000, 20, 30)
    wait_for(agent.snapshot, 5, "a sample")
    with (tmp_path / "s.csv").open() as f:
        sample = next(csv.DictReader(f))  # the start's action is in the first sample
    assert sample["policy"] == "threshold:5000,20,30"
    assert sample["policy_action"] == "set_threshold(5000, 20, 30)"
    agent.stop()
    assert gc.get_threshold() == original
    agent = neurogc.start("threshold:1234", interval=0.05)
    assert gc.get_threshold() == (1234,) + original[1:]


def test_default_leaves_the_applications_own_gc_settings_alone(clean_gc):
    original = (gc.isenabled(), gc.get_threshold())
    agent = neurogc.start("default", interval=0.05)
    try:
        # The application tunes its own collector while the agent observes.
        gc.set_threshold(4321, 7, 7)
        gc.disable()
        agent.stop()
        assert (gc.isenabled(), gc.get_threshold()) == (False, (4321, 7, 7))
    finally:
        gc.set_threshold(*original[1])
        gc.enable()


def test_stop_restores_only_what_the_policy_set_and_still_reads_so(clean_gc):
    original = gc.get_threshold()
    try:
        agent = neurogc.start("threshold:5000,20,30", interval=0.05)
        gc.set_threshold(6000, 20, 30)  # the application's own choice since
        agent.stop()
        assert gc.get_threshold() == (6000, 20, 30)
        # periodic turns automatic collection off, and back on at stop; the threshold it never
        # set stays as the application set it.
        gc.set_threshold(*original)
        agent = neurogc.start("periodic:60", interval=0.05)
        assert not gc.isenabled()
        gc.set_threshold(800, 10, 10)  # periodic never set a threshold: this one stays
        agent.stop()
        assert gc.isenabled() and gc.get_threshold() == (800, 10, 10)
    finally:
        gc.set_threshold(*original)


def test_periodic_turns_automatic_gc_off_and_collects_on_schedule(clean_gc, tmp_path):
    path = tmp_path / "periodic.csv"
    agent = neurogc.start("periodic:0.2", interval=0.1, csv=path)
    assert not gc.isenabled()
    stats0 = gc.get_stats()[2]["collections"]
    started = time.monotonic()
    # Until the fifth collection, not for a fixed time: on a loaded machine each one may come
    # late (a tick waits for the interpreter), and lateness adds up.
    while agent.totals()["policy_collections"] < 5 and time.monotonic() < started + 10:
        make_garbage(1000)  # garbage the automatic GC would have collected in gen0
        time.sleep(0.01)
    took = time.monotonic() - started
    full = gc.get_stats()[2]["collections"] - stats0
    agent.stop()
    assert gc.isenabled()
    totals = agent.totals()
    assert totals["policy_collections"] >= 5 and full >= 5, (totals, full)
    # Every 0.2 s: never early (the fifth at 1 s), and not skipping ahead or falling far behind.
    assert 0.95 <= took <= 2.5, took
    assert totals["gc0_collections"] == 0, "automatic gen0 collections ran while GC was off"
    reasons = {r["policy_reason"] for r in csv.DictReader(path.open())}
    assert "periodic: every 0.2s" in reasons
    assert any(r["gc_enabled"] == "False" for r in csv.DictReader(path.open()))


def recorded_actions(path) -> list[dict]:
    """The samples that carry an action. A sample holds the actions since the one before, so
    a snapshot shows one for a single interval: the file keeps them all."""
    with open(path) as f:
        return [r for r in csv.DictReader(f) if r["policy_action"]]


def test_freeze_after_warmup(clean_gc, tmp_path):
    keep = [Cyclic() for _ in range(20_000)]
    agent = neurogc.start("freeze:0.3", interval=0.1, csv=tmp_path / "s.csv")
    assert gc.get_freeze_count() == 0
    wait_for(lambda: gc.get_freeze_count() >= 20_000, 3, "the heap to be frozen")
    assert gc.isenabled(), "freeze keeps automatic GC on"
    agent.stop()
    (sample,) = [
        r for r in recorded_actions(tmp_path / "s.csv") if r["policy_action"] == "gc.freeze()"
    ]
    assert sample["policy_reason"] == "freeze: warm-up of 0.3s over"
    del keep


def test_guard_fires_on_young_generation_budget(clean_gc, tmp_path):
    agent = neurogc.start(
        "periodic:600,young=20000,check=0.05", interval=0.1, csv=tmp_path / "s.csv"
    )
    gc_before = agent.totals()["policy_collections"]
    make_garbage(30_000)
    wait_for(lambda: agent.totals()["policy_collections"] > gc_before, 3, "the guard to fire")
    assert gc.get_count()[0] < 20_000
    agent.stop()
    reasons = [r["policy_reason"] for r in recorded_actions(tmp_path / "s.csv")]
    assert any("young generation" in r and "budget 20000" in r for r in reasons), reasons


GUARD_BUDGET = textwrap.dedent(
    """
    import json, os, time
    import neurogc

    class Cyclic:
        def __init__(self, payload):
            self.me, self.payload = self, payload

    def rss():
        for line in open(f"/proc/{os.getpid()}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

    budget = rss() + (64 << 20)
    agent = neurogc.start(f"periodic:600,rss={budget},young=100000000{CHECK}", interval=0.1)
    peak = 0
    for _ in range(ROUNDS):
        for _ in range(16):
            Cyclic(bytearray(64 << 10))
        time.sleep(SLEEP)  # 1 MiB each
        peak = max(peak, rss())
    deadline = time.time() + 3
    while agent.totals()["policy_collections"] == 0 and time.time() < deadline:
        time.sleep(0.05)
    print(json.dumps({"budget": budget, "peak": peak,
                      "collections": agent.totals()["policy_collections"]}))
    """
)


def guard_budget_run(check: str, sleep: float, rounds: int) -> dict:
    """In a fresh interpreter: RSS is the whole process's, and what the other tests of this
    process left in its allocator moved it by tens of MiB (seen once on 3.13)."""
    code = (
        GUARD_BUDGET.replace("{CHECK}", check)
        .replace("SLEEP", repr(sleep))
        .replace("ROUNDS", str(rounds))
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    r = json.loads(out.stdout)
    assert r["collections"] >= 2, r
    return r


def test_guard_keeps_its_rss_budget():
    """A budget is a budget: ~300 MiB of cyclic garbage with 64 KiB payloads over ~3 s, and RSS
    stays within the budget + 10 % (a guard that re-armed above each firing let it climb 25 %
    per firing)."""
    r = guard_budget_run(",check=0.05", 0.01, 300)
    assert r["peak"] <= r["budget"] * 1.1, (
        f"RSS peaked {(r['peak'] - r['budget']) >> 20} MiB above its budget of "
        f"{r['budget'] >> 20} MiB"
    )


def test_guard_keeps_up_with_fast_garbage_at_its_default_check():
    """~600 MiB/s of garbage (1 MiB per ms), the default check: RSS is read every 50 ms without
    the interpreter, and a collection that brought RSS back under the budget is not paced (nor
    is the allocator's free memory taken for live memory), so RSS overshoots by about what
    arrives in 50 ms. Before: RSS read every 250 ms and every collection paced to 5 % of the
    time; a 100 MiB budget peaked at 445 MiB."""
    r = guard_budget_run("", 0.001, 2000)
    assert r["peak"] <= r["budget"] + (64 << 20), (
        f"RSS peaked {(r['peak'] - r['budget']) >> 20} MiB above its budget of "
        f"{r['budget'] >> 20} MiB"
    )


def vm_rss_bytes_self() -> int:
    import os

    return vm_rss_bytes(os.getpid())


def test_live_memory_above_the_budget_is_logged_as_a_warning():
    """Live memory the guard cannot free is said loudly, once, on the service's log (it was
    recorded only as an action that the collection after it hid in the sample)."""
    code = textwrap.dedent(
        """
        import logging, time
        import neurogc
        logging.basicConfig(level=logging.WARNING)
        live = [bytearray(1 << 20) for _ in range(150)]
        agent = neurogc.start("periodic:600,rss=100M", interval=0.1)
        time.sleep(1.0)
        print(agent.snapshot()["policy_action"])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    warnings = [line for line in out.stderr.splitlines() if "over budget" in line]
    assert len(warnings) == 1, out.stderr
    assert "WARNING:neurogc:" in warnings[0] and "budget 100 MiB" in warnings[0], warnings


def test_gc_off_says_at_start_that_nothing_bounds_memory():
    """`gc-off` is the bound a benchmark measures against: the collector off with no guard. Run
    by mistake in a service, it says so on the service's log at start."""
    code = "import logging, neurogc; logging.basicConfig(); neurogc.start('gc-off').stop()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    assert "WARNING:neurogc:gc.disable(): gc-off: a measuring bound with no memory guard" in (
        out.stderr
    ), out.stderr
