"""The GC workload suite's bundled workloads: the registry, `python -m neurogc.workloads list`, and
every workload served by `python -m neurogc.workloads serve` answering every task of its task file.

The servers start all at once (module fixture) so that the whole file stays within ~30 s."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import Workload, request, wait_for
from neurogc.workloads import MARKERS, WORKLOADS, UnknownWorkload, tasks_path

ORM_DEPS = all(importlib.util.find_spec(m) is not None for m in ("flask", "gunicorn"))


def workloads_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "neurogc.workloads", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _toml_value(text: str):
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_toml_value(x) for x in re.findall(r'"[^"]*"|[^,\s]+', text[1:-1])]
    if text.startswith(('"', "'")):
        return text[1:-1]
    return int(text)


def read_tasks(path: Path) -> dict:
    """The task file's tables. tomllib where there is one (3.11+); otherwise a reader of the flat
    subset these files use (tables, arrays of tables, strings, integers, arrays of strings)."""
    try:
        import tomllib
    except ImportError:
        doc: dict = {}
        table: dict = doc
        for raw in path.read_text().splitlines():
            line = re.sub(r"\s+#.*$", "", raw).strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[["):
                table = {}
                doc.setdefault(line.strip("[]"), []).append(table)
            elif line.startswith("["):
                table = doc.setdefault(line.strip("[]"), {})
            else:
                key, _, value = line.partition("=")
                table[key.strip()] = _toml_value(value)
        return doc
    with path.open("rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """Every workload (orm where flask and gunicorn are installed), started at once."""
    directory = tmp_path_factory.mktemp("workloads")
    names = [n for n, w in WORKLOADS.items() if w.kind != "wsgi" or ORM_DEPS]
    started = {name: Workload(name, directory) for name in names}
    try:
        deadline = time.monotonic() + 60
        for w in started.values():
            wait_for(w.up, max(deadline - time.monotonic(), 1), f"{w.name} on port {w.port}")
        yield started
    finally:
        for w in started.values():
            if w.process.poll() is None:
                w.stop()


def test_registry_is_complete_and_in_order():
    assert list(WORKLOADS) == [
        "seed",
        "large-heap",
        "growing-cache",
        "bursty",
        "churn",
        "cycle-leak",
        "orm",
    ]
    for name, w in WORKLOADS.items():
        assert w.name == name
        assert w.kind in ("asgi", "wsgi")
        assert w.expects and set(w.expects) <= set(MARKERS), w.expects
        assert w.story and "\n" not in w.story
        spec = importlib.util.find_spec(w.module)
        assert spec is not None, w.module
        assert tasks_path(name).is_file() and tasks_path(name).is_absolute()
    assert WORKLOADS["orm"].kind == "wsgi"


def test_tasks_path_of_an_unknown_workload_is_a_clear_error():
    with pytest.raises(UnknownWorkload, match="unknown workload 'nope'; known: seed, large-heap"):
        tasks_path("nope")


def test_list_json_matches_the_registry():
    out = workloads_cli("list", "--json")
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    assert [e["name"] for e in listed] == list(WORKLOADS)
    for e in listed:
        w = WORKLOADS[e["name"]]
        assert e == {
            "name": w.name,
            "kind": w.kind,
            "story": w.story,
            "expects": list(w.expects),
            "tasks": str(tasks_path(w.name)),
        }
        assert Path(e["tasks"]).is_absolute() and Path(e["tasks"]).is_file()
        assert read_tasks(Path(e["tasks"]))["task"]
    assert "bursts" in read_tasks(tasks_path("bursty"))


def test_list_prints_a_table():
    out = workloads_cli("list")
    assert out.returncode == 0, out.stderr
    for name in WORKLOADS:
        assert re.search(rf"^{re.escape(name)}\s+(asgi|wsgi)\s", out.stdout, re.M), out.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["serve", "nope", "--port", "1"], "unknown workload 'nope'; known: seed, large-heap,"),
        (["serve", "churn", "--port", "1", "--policy", "bogus"], 'invalid policy spec "bogus"'),
        (["serve", "churn", "--port", "1", "--set", "nodes=x"], "is not a number"),
        (["serve", "churn", "--port", "1", "--set", "heap=1"], "has no option 'heap'; known:"),
        (["serve", "churn", "--port", "1", "--set", "nodes=0"], "option nodes: must be >= 1"),
        (["serve", "churn", "--port", "1", "--interval", "0"], "--interval 0.0: must be"),
        (["serve", "churn", "--port", "1", "--csv", "/nonexistent/s.csv"], "does not exist"),
        (["serve", "orm", "--port", "1", "--set", "orders=0"], "option orders: must be >= 1"),
    ],
)
def test_bad_arguments_are_clear_errors(args, message):
    if args[1] == "orm" and not ORM_DEPS:
        pytest.skip("flask and gunicorn are not installed")
    out = workloads_cli(*args)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload_serves_every_task(servers, name):
    if name not in servers:
        pytest.skip("flask and gunicorn are not installed")
    w = servers[name]
    tasks = read_tasks(tasks_path(name))["task"]
    for task in tasks:
        for _ in range(3):
            status, body = request(w.url + task["path"], task.get("method", "GET"))
            assert 200 <= status < 300, (name, task, status, body[:300])
    assert request(w.url + "/health")[0] == 200
    err = w.stop()
    assert "Traceback" not in err, err
    # The agent ran in the serving process (the gunicorn worker for orm) and recorded collections.
    lines = w.gc_events.read_text().splitlines()
    assert lines[0].startswith("time,generation,pause_ms,collected,uncollectable,reason,"), lines[
        :2
    ]
    assert len(lines) > 1, f"{name}: no collection recorded"
    assert w.samples.read_text().startswith("time,cpu,mem,")


@pytest.mark.skipif(not ORM_DEPS, reason="flask and gunicorn are not installed")
def test_orm_worker_leaves_sigint_to_its_master_and_the_group_stops_at_once(tmp_path):
    # A SIGINT to the group reaches gunicorn's master and worker; the master then sends SIGQUIT,
    # and a worker handling both (one inside the other's handler) deadlocked gthread's pool
    # shutdown until SIGKILL. The worker ignores SIGINT and quits on the master's signal.
    w = Workload("orm", tmp_path)
    try:
        wait_for(w.up, 60, "orm")
        for _ in range(20):
            assert request(w.url + "/orders")[0] == 200
        master = w.process.pid
        workers = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        assert len(workers) == 1, workers
        ignored = int(
            next(
                line.split()[1]
                for line in Path(f"/proc/{workers[0]}/status").read_text().splitlines()
                if line.startswith("SigIgn:")
            ),
            16,
        )
        assert ignored & (1 << (signal.SIGINT - 1)), f"the worker handles SIGINT: {ignored:#x}"
        started = time.monotonic()
        os.killpg(master, signal.SIGINT)
        _, err = w.process.communicate(timeout=10)
        assert time.monotonic() - started < 5, err
        assert "Traceback" not in err, err
    finally:
        if w.process.poll() is None:
            os.killpg(w.process.pid, signal.SIGKILL)
            w.process.communicate()
    # The 20 requests are in the samples: the worker's agent wrote its rows before it went.
    with w.samples.open() as f:
        rows = list(csv.DictReader(f))
    assert sum(int(r["requests"] or 0) for r in rows) >= 20, rows


def test_no_agent_mode_serves_without_writing_samples(tmp_path):
    w = Workload("churn", tmp_path, "--no-agent")
    try:
        wait_for(w.up, 30, "churn without the agent")
        assert request(w.url + "/parse")[0] == 200
    finally:
        w.stop()
    assert not w.gc_events.exists() and not w.samples.exists()
