"""Services of several processes: `neurogc run` and `neurogc collect --cmd` around real gunicorn
(forked workers) and uvicorn (spawned workers) with two workers each. Every process writes its own
samples and GC events (``samples.csv`` for the first, ``samples-<pid>.csv`` for each other), every
row names its process, and the report, the training set and the trainer read them all."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import free_port, http_get, wait_for

FLASK_APP = textwrap.dedent(
    """
    from flask import Flask

    import neurogc

    app = Flask(__name__)
    neurogc.install(app)


    class Node:
        def __init__(self):
            self.me = self


    @app.route("/")
    def root():
        [Node() for _ in range(3000)]  # cycles: the workers collect
        return "ok"
    """
)

STARLETTE_APP = textwrap.dedent(
    """
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    import neurogc


    class Node:
        def __init__(self):
            self.me = self


    async def root(request):
        [Node() for _ in range(3000)]
        return PlainTextResponse("ok")


    app = neurogc.install(Starlette(routes=[Route("/", root)]))
    """
)


def _children(pid: int) -> set[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return {int(p) for p in path.read_text().split()}
    except OSError:
        return set()


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def _serve(cmd: list[str], cwd: Path, port: int) -> tuple[subprocess.Popen, set[int]]:
    """Starts `cmd`, waits until it answers, loads it a little; returns it and its workers."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.communicate()[1]}")
        try:
            return http_get(f"http://127.0.0.1:{port}/", timeout=1)[0] == 200
        except OSError:
            return False

    wait_for(up, 60, f"{cmd[0]} on port {port}")
    # Both workers up (each is a child of the server process the command started).
    wait_for(lambda: len(_workers(proc.pid)) >= 2, 30, "two workers")
    workers = _workers(proc.pid)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        http_get(f"http://127.0.0.1:{port}/")
    time.sleep(0.6)  # a sample interval after the load
    return proc, workers


def _workers(server: int) -> set[int]:
    """The server's child processes that are Python workers (not a multiprocessing helper)."""
    out = set()
    for child in _children(server):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline:
            out.add(child)
    return out


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def _check_process_files(out: Path, server: int, workers: set[int]) -> None:
    """One samples file and one GC events file per process, each row naming its writer."""
    first = _rows(out / "samples.csv")
    assert {r["pid"] for r in first} == {str(server)}, "samples.csv is the first process' only"
    events = _rows(out / "gc-events.csv")
    assert {r["pid"] for r in events} <= {str(server)}
    for pid in workers:
        samples = _rows(out / f"samples-{pid}.csv")
        assert samples, f"worker {pid} wrote no samples"
        assert {r["pid"] for r in samples} == {str(pid)}
        # The workers served the requests and collected the cycles they made.
        assert sum(int(r["requests"] or 0) for r in samples) > 0 or len(workers) > 1
        assert sum(int(r["gc0_collections"]) for r in samples) > 0
        gc_rows = _rows(out / f"gc-events-{pid}.csv")
        assert gc_rows, f"worker {pid} wrote no GC events"
        assert {r["pid"] for r in gc_rows} == {str(pid)}
    served = sum(
        int(r["requests"] or 0) for pid in workers for r in _rows(out / f"samples-{pid}.csv")
    )
    assert served > 0


@pytest.mark.parametrize("server", ["gunicorn", "uvicorn"])
def test_run_gives_every_worker_its_own_files(tmp_path, server):
    """gunicorn forks its workers, uvicorn spawns fresh interpreters: either way each process of
    the service writes its own samples and GC events, named by pid, with a pid on every row."""
    port = free_port()
    if server == "gunicorn":
        (tmp_path / "app.py").write_text(FLASK_APP)
        serve = [sys.executable, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{port}", "app:app"]
    else:
        (tmp_path / "app.py").write_text(STARLETTE_APP)
        serve = [sys.executable, "-m", "uvicorn", "app:app", "--workers", "2",
                 "--port", str(port), "--log-level", "warning"]  # fmt: skip
    out = tmp_path / "out"
    cmd = ["neurogc", "run", "--interval", "0.2",
           "--csv", str(out / "samples.csv"), "--gc-events-csv", str(out / "gc-events.csv"),
           "--", *serve]  # fmt: skip
    proc, workers = _serve(cmd, tmp_path, port)
    err = _stop(proc)
    assert "Traceback" not in err, err
    assert len(workers) == 2, workers
    _check_process_files(out, proc.pid, workers)
    # Nothing else was written: the files are the processes' own (uvicorn's spawn also starts a
    # multiprocessing resource tracker, a Python process of the service with its own files).
    names = {p.name for p in out.iterdir()}
    for pid in workers:
        assert {f"samples-{pid}.csv", f"gc-events-{pid}.csv"} <= names


def test_collect_with_gunicorn_workers_reads_every_process(tmp_path):
    """`collect --cmd` of a two-worker gunicorn: the run holds every process' files, the
    training set has all their rows (the master's and both workers'), the report is the whole
    service's with a row per process, and the trainer makes windows within each process."""
    (tmp_path / "app.py").write_text(FLASK_APP)
    r = subprocess.run(
        ["neurogc", "collect", "--cmd",
         f"{sys.executable} -m gunicorn -w 2 -b 127.0.0.1:{{port}} app:app",
         "--rate", "40", "--warmup", "2s", "--duration", "6s", "--interval", "0.5",
         "--no-pin", "--runs-dir", str(tmp_path / "runs"), "--name", "workers"],
        cwd=tmp_path, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    (run,) = (tmp_path / "runs").iterdir()
    (trial,) = (run / "trials").iterdir()
    server_pid = json.loads((trial / "trial.json").read_text())["pid"]
    worker_files = sorted(trial.glob("samples-*.csv"))
    assert len(worker_files) == 2, sorted(p.name for p in trial.iterdir())
    assert len(list(trial.glob("gc-events-*.csv"))) == 2

    data = _rows(run / "data.csv")
    by_pid: dict[str, list[dict[str, str]]] = {}
    for row in data:
        by_pid.setdefault(row["pid"], []).append(row)
    assert len(by_pid) == 3, list(by_pid)
    workers = set(by_pid) - {_rows(trial / "samples.csv")[0]["pid"]}
    assert sum(float(r["requests"] or 0) for w in workers for r in by_pid[w]) > 0
    # The command's first process is gunicorn's master (started through a shell or not).
    assert str(server_pid) in by_pid or _rows(trial / "samples.csv")[0]["pid"] in by_pid

    rep = subprocess.run(
        ["neurogc", "report", str(run)], capture_output=True, text=True, timeout=120
    )
    assert rep.returncode == 0, rep.stdout + rep.stderr
    md = (run / "README.md").read_text()
    assert "## Processes" in md, md
    section = md[md.index("## Processes") :]
    for pid in by_pid:
        assert f"| {pid} |" in section, (pid, section)

    model = tmp_path / "model"
    t = subprocess.run(
        ["neurogc", "train", "--data", str(run / "data.csv"), "--epochs", "1",
         "--window", "3", "--out", str(model), "--quiet"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert t.returncode == 0, t.stdout + t.stderr


HEAP_APP = textwrap.dedent(
    """
    from flask import Flask

    # A heap whose full collection takes tens of ms, built in each worker.
    HEAP = [[{} for _ in range(10)] for _ in range(30000)]

    app = Flask(__name__)


    @app.route("/")
    def root():
        return "ok"
    """
)


def _full_collections(out: Path) -> dict[str, list[tuple[float, float]]]:
    """Each process' policy-run full collections as (start, end) in Unix seconds."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for path in out.glob("gc-events*.csv"):
        for r in _rows(path):
            if r["generation"] == "2" and r["reason"] == "policy":
                start = float(r["time"])
                spans.setdefault(r["pid"], []).append((start, start + float(r["pause_ms"]) / 1e3))
    return spans


def _overlaps(spans: dict[str, list[tuple[float, float]]]) -> int:
    flat = sorted((a, b, pid) for pid, s in spans.items() for a, b in s)
    count = 0
    for i, (_, b, pid) in enumerate(flat):
        for c, _, other in flat[i + 1 :]:
            if c >= b:
                break
            count += other != pid
    return count


def _staggered_run(tmp_path: Path, spec: str) -> tuple[dict[str, list[tuple[float, float]]], str]:
    tmp_path.mkdir()
    (tmp_path / "app.py").write_text(HEAP_APP)
    port = free_port()
    out = tmp_path / "out"
    cmd = ["neurogc", "run", "--policy", spec, "--interval", "0.2",
           "--csv", str(out / "samples.csv"), "--gc-events-csv", str(out / "gc-events.csv"),
           "--", sys.executable, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{port}",
           "app:app"]  # fmt: skip
    proc, workers = _serve(cmd, tmp_path, port)
    time.sleep(4)
    err = _stop(proc)
    assert "Traceback" not in err, err
    spans = _full_collections(out)
    for pid in workers:
        assert len(spans.get(str(pid), [])) >= 4, (pid, {p: len(s) for p, s in spans.items()})
    reasons = [r["policy_reason"] for p in out.glob("samples*.csv") for r in _rows(p)]
    return spans, "\n".join(reasons)


def test_staggered_workers_never_collect_at_the_same_moment(tmp_path):
    """`periodic:40ms,stagger=on` under gunicorn -w 2: the master and both workers ask for a full
    collection every 40 ms, the workers' taking 10 to 40 ms: more collecting than there is time,
    so unstaggered some must overlap (the control shows they do). Staggered, no two processes'
    full collections overlap, and the postponements are said in the samples."""
    spans, reasons = _staggered_run(tmp_path / "on", "periodic:40ms,stagger=on")
    assert _overlaps(spans) == 0, spans
    # A sample shows its interval's last action: the wait, or the collection run after it.
    assert "stagger: timer collection postponed" in reasons or (
        "the timer collection waits for it" in reasons
    ), reasons[:2000]
    control, _ = _staggered_run(tmp_path / "off", "periodic:40ms")
    assert _overlaps(control) > 0, control


PREFORK = textwrap.dedent(
    """
    import gc, json, os, sys
    import neurogc

    neurogc.start(policy="freeze:30s", interval=0.5)
    heap = [[i] for i in range(50_000)]  # what a preloaded app builds before it forks
    garbage = [[] for _ in range(1000)]
    for g in garbage:
        g.append(g)  # cycles: collected before the freeze, not frozen
    del garbage, g
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, json.dumps({"child_frozen": gc.get_freeze_count()}).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = json.loads(os.read(r, 1000))
    print(json.dumps({**child, "parent_frozen": gc.get_freeze_count()}))
    """
)


@pytest.mark.parametrize("recipe", ["1", "0"])
def test_freeze_policy_freezes_in_the_parent_right_before_fork(tmp_path, recipe):
    env = {**os.environ, "NEUROGC_PREFORK_FREEZE": recipe}
    out = subprocess.run([sys.executable, "-c", PREFORK], env=env, capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    counts = json.loads(out.stdout)
    if recipe == "1":
        # The fork came long before the policy's 30 s warm-up: the heap was frozen for it, and
        # the child inherits it frozen (its collections never traverse it).
        assert counts["child_frozen"] >= 50_000, counts
        assert counts["parent_frozen"] >= 50_000, counts
    else:
        assert counts["child_frozen"] < 2000 and counts["parent_frozen"] < 2000, counts
