"""The agent's Python API, in process: samples, CSV, GC timing, validation, containment."""

from __future__ import annotations

import csv
import gc
import time

import pytest

import neurogc
from conftest import wait_for

SEED_COLUMNS = [
    "time", "cpu", "mem", "disk_read", "disk_write", "net_sent",
    "net_recv", "rps", "p95", "p99", "gc_triggered",
]  # fmt: skip


class Cyclic:
    def __init__(self) -> None:
        self.me = self


def serve_requests(agent: neurogc.Agent, n: int) -> list[int]:
    """Drives ``n`` requests through the real ASGI middleware; returns the status codes."""
    import asyncio

    statuses: list[int] = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"served"})

    wrapped = neurogc.NeuroGCMiddleware(app, agent=agent)
    scope = {"type": "http", "method": "GET", "path": "/", "raw_path": b"/", "headers": []}

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def run():
        for _ in range(n):
            await wrapped(scope, receive, send)

    asyncio.run(run())
    return statuses


def wait_sample(agent: neurogc.Agent, condition=lambda s: True, timeout: float = 5.0) -> dict:
    return wait_for(
        lambda: (s := agent.snapshot()) is not None and condition(s) and s, timeout, "a sample"
    )


def test_columns_start_with_the_seed_schema():
    cols = neurogc.columns()
    assert cols[:11] == SEED_COLUMNS
    for extended in ["rss_bytes", "gc0_pause_ms_max", "gc2_collected", "gc_count0", "in_flight",
                     "policy", "policy_action", "policy_reason"]:  # fmt: skip
        assert extended in cols


def test_snapshot_and_csv(tmp_path, clean_gc):
    path = tmp_path / "sub" / "samples.csv"
    agent = neurogc.start(interval=0.1, csv=path)
    assert agent.csv_path == str(path)
    sample = wait_sample(agent, lambda s: s["rss_bytes"])
    assert sample["policy"] == "default"
    assert sample["pid"] > 0 and sample["cpu"] is not None and 0 < sample["mem"] < 100
    time.sleep(0.35)
    agent.stop()
    rows = list(csv.DictReader(path.open()))
    assert len(rows) >= 3
    assert list(rows[0].keys()) == neurogc.columns()
    assert rows[-1]["gc_triggered"] in ("True", "False")
    # Samples are one interval apart.
    gaps = [float(b["time"]) - float(a["time"]) for a, b in zip(rows, rows[1:-1])]
    assert all(0.05 < g < 0.5 for g in gaps), gaps


def test_gc_pauses_are_recorded_per_generation(clean_gc):
    agent = neurogc.start(interval=0.2)
    junk = [Cyclic() for _ in range(50_000)]
    del junk
    gc.collect(1)
    gc.collect(2)
    sample = wait_sample(agent, lambda s: s["gc_triggered"])
    totals = agent.totals()
    assert totals["gc1_collections"] >= 1
    assert totals["gc2_collections"] >= 1
    collected = sum(totals[f"gc{g}_collected"] for g in range(3))
    assert collected >= 50_000, totals
    assert totals["gc2_pause_ms_max"] > 0.0
    # The sample carries the interval's figures with the same meaning.
    assert sample["gc2_collections"] >= 1 or sample["gc1_collections"] >= 1
    assert totals["policy_collections"] == 0, "app collections are not the policy's"


def test_bad_specs_and_arguments_are_clear_errors(tmp_path, clean_gc):
    with pytest.raises(ValueError, match=r'invalid policy spec "thresold:1".*unknown policy'):
        neurogc.start(policy="thresold:1")
    with pytest.raises(ValueError, match=r"threshold takes 1 to 3 integers"):
        neurogc.start(policy="threshold:1,2,3,4")
    with pytest.raises(ValueError, match="interval"):
        neurogc.start(interval=0)
    with pytest.raises(ValueError, match=r'"half a second" is not a duration'):
        neurogc.start(interval="half a second")
    (tmp_path / "taken.csv").write_text("a,b\n1,2\n")
    with pytest.raises(OSError, match="taken.csv.*different header"):
        neurogc.start(csv=tmp_path / "taken.csv")
    assert (tmp_path / "taken.csv").read_text() == "a,b\n1,2\n"
    assert neurogc.current() is None


def test_one_agent_per_process(clean_gc):
    agent = neurogc.start(interval=0.5)
    with pytest.raises(RuntimeError, match="already running"):
        neurogc.start()
    assert neurogc.current() is agent
    agent.stop()
    agent.stop()  # idempotent
    assert not agent.running and neurogc.current() is None
    neurogc.start(interval=0.5).stop()


def test_the_interval_takes_the_duration_grammar(clean_gc):
    for given, seconds in (("500ms", 0.5), ("2s", 2.0), ("0.25", 0.25), (1, 1.0)):
        agent = neurogc.start(interval=given)
        try:
            assert agent.interval == seconds, given
        finally:
            agent.stop()


def test_sampler_panic_disables_agent_and_restores_gc(clean_gc, caplog):
    agent = neurogc.start(policy="periodic:30", interval=0.05)
    assert not gc.isenabled()
    agent._native._inject_fault("sampler_panic")
    wait_for(lambda: not agent.running, 5, "the agent to turn itself off")
    assert "injected sampler fault" in agent.failure
    wait_for(gc.isenabled, 5, "automatic GC to be restored")
    # The service keeps serving through the middleware; the agent's calls are no-ops now.
    assert serve_requests(agent, 200) == [200] * 200
    gc.collect()
    assert agent.snapshot() is None or agent.snapshot()["policy"] == "periodic:30"
    agent.stop()


def test_request_path_panic_never_raises(clean_gc):
    agent = neurogc.start(interval=0.05)
    agent._native._inject_fault("request_panic")
    assert serve_requests(agent, 50) == [200] * 50  # the panic inside never reaches the app
    assert "injected request fault" in agent.failure
    wait_for(lambda: not agent.running, 5, "the agent to turn itself off")


def test_unreadable_proc_gives_empty_values_not_errors(tmp_path, clean_gc):
    path = tmp_path / "samples.csv"
    agent = neurogc.start(interval=0.05, csv=path, _proc_root=str(tmp_path / "no-proc"))
    assert serve_requests(agent, 100) == [200] * 100
    # Two samples after the requests: the interval they ended in is closed (the latest sample
    # alone may already be the next, empty one's: read them all from the CSV).
    served_by = agent.totals()["samples"]
    wait_for(lambda: agent.totals()["samples"] >= served_by + 2, 5, "two more samples")
    assert agent.running
    agent.stop()
    rows = list(csv.DictReader(path.open()))
    served = [r for r in rows if r["requests"] not in ("", "0")]
    assert served, rows
    assert all(float(r["rps"]) > 0 for r in served), "requests are still measured"
    for r in rows:
        assert r["cpu"] == r["mem"] == r["rss_bytes"] == r["disk_read"] == "", r


def test_unknown_fault_kind_is_rejected(clean_gc):
    agent = neurogc.start(interval=0.5)
    with pytest.raises(ValueError, match="unknown fault"):
        agent._native._inject_fault("meteor")
