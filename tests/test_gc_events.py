"""The GC events CSV: one row per collection, its reason, header once, flushed, fork and exit."""

from __future__ import annotations

import csv
import gc
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import neurogc
from conftest import run_python, wait_for

HEADER = "time,generation,pause_ms,collected,uncollectable,reason,in_flight,trigger,predicted_ms,predicted_freed,pid,why"


class Cyclic:
    def __init__(self) -> None:
        self.me = self


def read_rows(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Recorder:
    """A second gc callback: what CPython reported, and from which thread."""

    def __init__(self) -> None:
        self.main = threading.get_ident()
        self.events: list[tuple[int, int, int, str]] = []

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "stop":
            reason = "runtime" if threading.get_ident() == self.main else "policy"
            self.events.append(
                (info["generation"], info["collected"], info["uncollectable"], reason)
            )


def test_one_row_per_collection_with_its_reason(tmp_path, gc_disabled):
    path = tmp_path / "run" / "gc-events.csv"
    recorder = Recorder()
    gc.callbacks.append(recorder)
    try:
        before = time.time()
        agent = neurogc.start("periodic:0.2", interval=0.1, gc_events_csv=path)
        assert agent.gc_events_csv_path == str(path)
        assert agent.csv_path is None
        for generation in (0, 1, 2, 0):
            junk = [Cyclic() for _ in range(1000)]
            del junk
            # gc.collect() returns at once, collecting nothing and calling no callback, where
            # it lands inside one of the policy's collections (in a callback of it, which can
            # give the interpreter to this thread): then it is asked again.
            seen = len(recorder.events)
            gc.collect(generation)
            while not any(e[3] == "runtime" for e in recorder.events[seen:]):
                time.sleep(0.01)
                gc.collect(generation)
            time.sleep(0.15)
        wait_for(lambda: agent.totals()["policy_collections"] >= 2, 5, "policy collections")
        agent.stop()
        after = time.time()
    finally:
        gc.callbacks.remove(recorder)
    rows = read_rows(path)
    assert path.read_text().splitlines()[0] == HEADER
    got = [
        (int(r["generation"]), int(r["collected"]), int(r["uncollectable"]), r["reason"])
        for r in rows
    ]
    assert got == recorder.events
    reasons = [r["reason"] for r in rows]
    assert reasons.count("runtime") == 4 and reasons.count("policy") >= 2, reasons
    assert all(r["generation"] == "2" for r in rows if r["reason"] == "policy")
    # Why each ran: the timer's for the policy's, nothing for CPython's; no middleware counts
    # requests here, so in-flight is unknown (empty), never a made-up zero.
    assert {r["trigger"] for r in rows} == {"timer", ""}, rows
    assert all((r["trigger"] == "timer") == (r["reason"] == "policy") for r in rows), rows
    assert all(r["in_flight"] == "" and r["predicted_ms"] == "" for r in rows), rows
    assert {r["pid"] for r in rows} == {str(os.getpid())}
    assert [int(r["collected"]) for r in rows if r["reason"] == "runtime"][0] >= 1000
    times = [float(r["time"]) for r in rows]
    assert times == sorted(times) and before <= times[0] and times[-1] <= after
    for r in rows:
        whole, _, decimals = r["pause_ms"].partition(".")
        assert whole.isdigit() and len(decimals) == 3, r  # microsecond precision
    assert max(float(r["pause_ms"]) for r in rows) > 0
    # The samples' counts agree with the rows.
    totals = agent.totals()
    assert sum(totals[f"gc{g}_collections"] for g in range(3)) == len(rows)
    assert totals["policy_collections"] == reasons.count("policy")
    assert totals["gc_events_dropped"] == 0


def test_rows_are_flushed_while_running_and_header_written_once(tmp_path, gc_disabled):
    path = tmp_path / "gc-events.csv"
    agent = neurogc.start(interval=0.05, gc_events_csv=path)
    gc.collect(2)
    # Readable while the agent runs: each sample's batch is flushed.
    wait_for(lambda: any(r["generation"] == "2" for r in read_rows(path)), 5, "a flushed row")
    agent.stop()
    first = len(read_rows(path))
    agent = neurogc.start(interval=0.05, gc_events_csv=path)
    gc.collect(2)
    agent.stop()
    lines = path.read_text().splitlines()
    assert lines.count(HEADER) == 1 and lines[0] == HEADER
    assert len(read_rows(path)) >= first + 1


def test_last_partial_interval_is_written_at_stop(tmp_path, gc_disabled):
    path = tmp_path / "gc-events.csv"
    agent = neurogc.start(interval=60, gc_events_csv=path)
    for _ in range(3):
        gc.collect(1)
    assert read_rows(path) == []
    agent.stop()
    assert sum(r["generation"] == "1" for r in read_rows(path)) == 3


def test_rows_are_written_at_interpreter_exit(tmp_path):
    path = tmp_path / "gc-events.csv"
    r = run_python(
        "import gc, neurogc\n"
        "gc.disable()\n"
        f"neurogc.start(interval=60, gc_events_csv={str(path)!r})\n"
        "gc.collect(2); gc.collect(2)\n"
    )
    assert r.returncode == 0, r.stderr
    assert sum(row["generation"] == "2" for row in read_rows(path)) == 2


def test_fork_child_writes_its_own_pid_suffixed_file(tmp_path):
    path = tmp_path / "gc-events.csv"
    r = run_python(
        textwrap.dedent(
            f"""
            import gc, json, os, time, neurogc
            gc.disable()
            a = neurogc.start(interval=0.05, gc_events_csv={str(path)!r})
            gc.collect(2)
            child = os.fork()
            if child == 0:
                for _ in range(3):
                    gc.collect(1)
                ok = a.gc_events_csv_path.endswith(f"gc-events-{{os.getpid()}}.csv")
                a.stop()
                os._exit(0 if ok else 3)
            _, status = os.waitpid(child, 0)
            a.stop()
            print(json.dumps({{"status": status, "child": child}}))
            """
        ),
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == 0, "the child's agent did not report its own events CSV"
    child_rows = read_rows(tmp_path / f"gc-events-{out['child']}.csv")
    assert [row["generation"] for row in child_rows] == ["1", "1", "1"]
    parent_rows = read_rows(path)
    assert [row["generation"] for row in parent_rows] == ["2"]


def test_a_full_window_drops_events_visibly(tmp_path, clean_gc, caplog):
    path = tmp_path / "gc-events.csv"
    agent = neurogc.start(interval=60, gc_events_csv=path)
    extra = 25
    with caplog.at_level(logging.WARNING, logger="neurogc"):
        for _ in range(10_000 + extra):
            gc.collect(0)
        agent.stop()
    rows = read_rows(path)
    totals = agent.totals()
    assert len(rows) == 10_000
    assert totals["gc_events_dropped"] >= extra
    assert totals["gc0_collections"] == len(rows) + totals["gc_events_dropped"]
    assert any("missing from the GC events CSV" in m for m in caplog.messages), caplog.messages
    text = agent.prometheus()
    assert "neurogc_gc_events_dropped_total" in text
    # No middleware: requests were not measured, so no request counter reads 0.
    assert "neurogc_requests_total" not in text and "in_flight_requests" not in text


def test_bad_events_csv_arguments(tmp_path, clean_gc):
    same = tmp_path / "both.csv"
    with pytest.raises(ValueError, match="different files"):
        neurogc.start(csv=same, gc_events_csv=same)
    (tmp_path / "taken.csv").write_text("a,b\n1,2\n")
    with pytest.raises(OSError, match="GC events CSV.*taken.csv.*different header"):
        neurogc.start(gc_events_csv=tmp_path / "taken.csv")
    assert (tmp_path / "taken.csv").read_text() == "a,b\n1,2\n"
    assert neurogc.current() is None


def test_environment_variable_starts_the_events_csv(tmp_path):
    path = tmp_path / "env-events.csv"
    r = run_python(
        "import gc; from neurogc._agent import _start_from_environment\n"
        "a = _start_from_environment(); gc.collect(2); print(a.gc_events_csv_path); a.stop()\n",
        env={"NEUROGC_POLICY": "default", "NEUROGC_GC_EVENTS_CSV": str(path)},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(path)
    assert any(row["generation"] == "2" for row in read_rows(path))


def test_demo_writes_gc_events(tmp_path, demo_server):
    path = tmp_path / "demo-events.csv"
    server = demo_server(
        "--policy", "periodic:0.3", "--interval", "0.1", "--gc-events-csv", str(path)
    )
    for _ in range(5):
        assert server.get("/memory-heavy")[0] == 200
    rows = wait_for(
        lambda: (rows := read_rows(path)) and any(r["reason"] == "policy" for r in rows) and rows,
        10,
        "policy collections in the demo's events CSV",
    )
    assert {r["generation"] for r in rows if r["reason"] == "policy"} == {"2"}
    server.stop()


STOPPED_COLLECTION = """
import gc, sys, time
import neurogc

class Node:
    __slots__ = ("me",)

    def __init__(self):
        self.me = self

heap = [Node() for _ in range(3_000_000)]
agent = neurogc.start("default", interval=0.1, gc_events_csv=sys.argv[1])
print("collecting", flush=True)
sys.stdin.readline()
t = time.perf_counter()
gc.collect()
print(f"wall {(time.perf_counter() - t) * 1e3:.1f}", flush=True)
agent.stop()
"""


def test_a_stop_of_the_process_during_a_full_collection_is_not_its_pause(tmp_path):
    """SIGSTOP in the middle of a full collection (the suite stops every server between its
    turns): the row holds the collection's own time, not the seconds the process was stopped."""
    path = tmp_path / "gc-events.csv"
    proc = subprocess.Popen(
        [sys.executable, "-c", STOPPED_COLLECTION, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "collecting"
        proc.stdin.write("\n")
        proc.stdin.flush()
        # 3 M objects take a few hundred ms to scan: stopped 30 ms in, for 1.5 s.
        time.sleep(0.03)
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(1.5)
        os.kill(proc.pid, signal.SIGCONT)
        wall = float(proc.stdout.readline().split()[1])
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
    pauses = [float(r["pause_ms"]) for r in read_rows(path) if r["generation"] == "2"]
    # The caller waited through the stop; the collection itself took well under it.
    assert wall >= 1400, wall
    assert pauses and 0 < max(pauses) < 1200, (pauses, wall)
