"""The agent's metrics as Prometheus scrapes them, read by prometheus_client's own parser: a
FastAPI app under uvicorn, Flask under gunicorn with two workers, and the collector in a
prometheus_client registry."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

import pytest

import neurogc
from conftest import free_port, http_get, wait_for

# `make setup` installs it (PY_DEPS); NeuroGC itself does not need it.
prometheus_parser = pytest.importorskip("prometheus_client.parser")
text_string_to_metric_families = prometheus_parser.text_string_to_metric_families


def scrape(url: str) -> tuple[str, dict]:
    """(Content-Type, families by name) of one scrape."""
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        return r.headers["Content-Type"], {
            f.name: f for f in text_string_to_metric_families(r.read().decode())
        }


def value(families: dict, family: str, sample: str | None = None, **labels: str) -> float:
    """The one sample of ``family`` named ``sample`` (default: the family's own name, or with
    ``_total`` for a counter) whose labels include ``labels``."""
    f = families[family]
    name = sample or (f.name + "_total" if f.type == "counter" else f.name)
    found = [
        s.value
        for s in f.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (family, name, labels, f.samples)
    return found[0]


def check_histogram(families: dict, name: str, **labels: str) -> tuple[float, float]:
    """Checks a histogram's shape (cumulative buckets ending at +Inf == _count); (count, sum)."""
    f = families[name]
    assert f.type == "histogram"
    buckets = [
        (float(s.labels["le"]), s.value)
        for s in f.samples
        if s.name == name + "_bucket" and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    bounds = [le for le, _ in buckets]
    assert bounds == sorted(bounds) and bounds[-1] == float("inf"), bounds
    counts = [n for _, n in buckets]
    assert counts == sorted(counts), f"buckets are not cumulative: {buckets}"
    count = value(families, name, name + "_count", **labels)
    assert counts[-1] == count
    return count, value(families, name, name + "_sum", **labels)


FASTAPI_APP = textwrap.dedent(
    """
    import os

    from fastapi import FastAPI

    import neurogc

    app = FastAPI()
    # A long interval: no sample is taken during the test, so what a scrape shows is read live.
    if os.environ["HOW"] == "install":
        assert neurogc.install(app, policy="threshold:5000", interval=600) is app
    else:
        app.add_middleware(neurogc.NeuroGCMiddleware, policy="threshold:5000", interval=600)


    @app.get("/x")  # a route added after the middleware: the app is still the app
    async def x():
        return {"ok": True}


    @app.get("/boom")
    async def boom():
        raise RuntimeError("boom")
    """
)


@pytest.mark.parametrize("how", ["install", "add_middleware"])
def test_metrics_is_prometheus_text_read_live(tmp_path, how):
    (tmp_path / "fastapi_app.py").write_text(FASTAPI_APP)
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "fastapi_app:app",
            "--port",
            str(port),
            "--log-level",
            "error",
            "--lifespan",
            "on",
        ],  # fmt: skip
        cwd=tmp_path,
        env={**os.environ, "HOW": how},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _up(base + "/x", proc), 30, "uvicorn")
        for _ in range(4):
            assert http_get(base + "/x")[0] == 200
        assert http_get(base + "/boom")[0] == 500
        content_type, families = scrape(base + "/metrics")
        assert content_type.startswith("text/plain; version=0.0.4")
        pid = str(proc.pid)
        # Every series carries the worker's pid.
        for f in families.values():
            for s in f.samples:
                assert s.labels.get("pid") == pid, s
        # No sample has been taken, yet the counters are current: read at the scrape.
        assert value(families, "neurogc_samples") == 0
        assert families["neurogc_requests"].type == "counter"
        assert value(families, "neurogc_requests") == 6  # /x (the one _up saw), 4 more, /boom
        assert value(families, "neurogc_request_errors") == 1
        count, total_s = check_histogram(families, "neurogc_request_duration_seconds")
        assert count == 6 and 0 < total_s < 6
        for generation in "012":
            check_histogram(families, "neurogc_gc_pause_seconds", generation=generation)
            assert families["neurogc_gc_uncollectable_objects"].type == "counter"
            value(families, "neurogc_gc_uncollectable_objects", generation=generation)
        assert value(families, "neurogc_info", policy="threshold:5000") == 1
        assert value(families, "neurogc_gc_threshold", generation="0") == 5000
        assert value(families, "process_resident_memory_bytes") > 10 << 20
        assert value(families, "process_cpu_seconds") > 0
        # No gauge over the last interval is left: quantiles cannot be aggregated.
        assert not any(s.labels.get("quantile") for f in families.values() for s in f.samples)
        # The JSON document, at /metrics.json and /metrics?format=json.
        for path in ("/metrics.json", "/metrics?format=json"):
            status, body = http_get(base + path)
            doc = json.loads(body)
            assert status == 200 and doc["totals"]["requests"] == 6, doc
            assert doc["agent"]["pid"] == proc.pid
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert err.count("Traceback") == 1 and "RuntimeError: boom" in err, err


def _up(url: str, proc: subprocess.Popen) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"the server exited: {proc.communicate()[1]}")
    try:
        # A long timeout: a request given up on and sent again would be counted twice.
        return http_get(url, timeout=10)[0] == 200
    except OSError:
        return False


FLASK_APP = textwrap.dedent(
    """
    import time

    from flask import Flask

    import neurogc

    app = Flask(__name__)
    assert neurogc.install(app, interval=0.2) is app


    @app.route("/x")
    def x():
        return "ok"


    @app.route("/slow")
    def slow():
        time.sleep(0.1)
        return "ok"
    """
)


def test_gunicorn_workers_are_told_apart_by_pid(tmp_path):
    """Two workers answer scrapes in turn: each has its own series, and none goes backwards."""
    (tmp_path / "flask_app.py").write_text(FLASK_APP)
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-w",
            "2",
            "-b",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            "flask_app:app",
        ],  # fmt: skip
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    stop = threading.Event()

    def keep_one_worker_busy():
        while not stop.is_set():
            http_get(base + "/slow")

    busy = threading.Thread(target=keep_one_worker_busy)
    try:
        wait_for(lambda: _up(base + "/x", proc), 30, "gunicorn")
        busy.start()
        seen: dict[str, list[float]] = {}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (len(seen) < 2 or min(map(len, seen.values())) < 5):
            http_get(base + "/x")
            _, families = scrape(base + "/metrics")
            (sample,) = families["neurogc_requests"].samples
            seen.setdefault(sample.labels["pid"], []).append(sample.value)
        # The pids are this gunicorn's workers.
        parents = {pid: _parent(pid) for pid in seen}
        assert all(parent == proc.pid for parent in parents.values()), (proc.pid, parents)
    finally:
        stop.set()
        if busy.is_alive():
            busy.join()
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert len(seen) == 2, f"scrapes reached only {list(seen)}"
    for pid, values in seen.items():
        assert values == sorted(values), f"worker {pid}'s counter went backwards: {values}"
    assert "Traceback" not in err, err


def _parent(pid: str) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:"))


def test_collector_plugs_into_a_prometheus_client_registry(clean_gc):
    from prometheus_client import (
        REGISTRY,
        CollectorRegistry,
        GCCollector,
        PlatformCollector,
        ProcessCollector,
        generate_latest,
    )

    from neurogc.prometheus import NeuroGCCollector

    assert neurogc.NeuroGCCollector is NeuroGCCollector
    # What prometheus_client's default registry holds; auto_describe refuses duplicate names.
    registry = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    collector = NeuroGCCollector()
    registry.register(collector)
    assert "neurogc_" not in generate_latest(registry).decode(), "no agent, nothing reported"
    agent = neurogc.start("default", interval=600)
    REGISTRY.register(collector)  # beside the default process collector: no name twice
    try:
        gc.collect(2)
        families = {
            f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())
        }
        pid = str(os.getpid())
        # Read at the scrape: the collection above is in, though no sample has been taken.
        assert value(families, "neurogc_gc_collections", generation="2", pid=pid) >= 1
        check_histogram(families, "neurogc_gc_pause_seconds", generation="2", pid=pid)
        assert value(families, "neurogc_info", policy="default", pid=pid) == 1
        # process_* come from the registry's process collector, unlabelled, once.
        (rss,) = families["process_resident_memory_bytes"].samples
        assert "pid" not in rss.labels
        # No middleware: no request figures, rather than zeros.
        assert "neurogc_requests" not in families
    finally:
        REGISTRY.unregister(collector)
        agent.stop()
    # Stopped: the collector following the running agent reports nothing; one given an agent
    # reports that agent.
    assert "neurogc_" not in generate_latest(registry).decode()
    given = CollectorRegistry(auto_describe=True)
    given.register(NeuroGCCollector(agent))
    assert 'neurogc_info{pid="' in generate_latest(given).decode()
