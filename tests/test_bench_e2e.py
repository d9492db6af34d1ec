"""collect → train → bench → report, end to end: the real `neurogc` binary starts the real demo
app with the real agent and drives it with the real load generator. Short durations."""

from __future__ import annotations

import csv
import json
import os
import signal
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from conftest import REPO, free_port, get_json, processes_mentioning, wait_for

NEUROGC = REPO / "target" / "release" / "neurogc"
SEED_TABLE_ROWS = [
    "Avg CPU",
    "Avg Memory",
    "Avg Disk Read",
    "Avg Disk Write",
    "Avg Net Sent",
    "Avg Net Recv",
    "P95",
    "P99",
    "Avg RPS",
    "GC Events",
]


def neurogc(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(NEUROGC), *args], capture_output=True, text=True, timeout=timeout, **kw
    )


def only_run(runs: Path) -> Path:
    dirs = [d for d in runs.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def csv_rows(path: Path) -> list[list[str]]:
    lines = path.read_text().splitlines()
    return [line.split(",") for line in lines[1:] if line != lines[0]]


def line_count(path: Path) -> int:
    """Complete lines in a file being written (0 before it exists)."""
    try:
        return path.read_text().count("\n")
    except FileNotFoundError:
        return 0


def png_decodes(path: Path) -> tuple[int, int]:
    """Decodes a PNG far enough to trust it: every chunk's CRC, IHDR, and the inflated image data
    has exactly one filter byte plus one row of pixels per line."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG signature"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"{path}: bad CRC in {kind!r}"
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
        if kind == b"IEND":
            break
    assert header is not None, f"{path}: no IHDR"
    width, height, depth, color = header[:4]
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    row = 1 + (width * channels * depth + 7) // 8
    assert len(zlib.decompress(idat)) == row * height, f"{path}: image data size"
    return width, height


def table_row(readme: str, name: str) -> list[str]:
    for line in readme.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells and cells[0].strip("*") == name:
            return cells
    raise AssertionError(f"no table row {name!r} in the report")


@pytest.fixture(scope="module")
def dashboard():
    """A dashboard already running before the pipeline's collect, which streams into it."""
    port = free_port()
    dash = subprocess.Popen(
        [str(NEUROGC), "dashboard", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: _up(port), 20, "dashboard")
        yield port
    finally:
        dash.terminate()
        dash.wait(10)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, dashboard) -> dict:
    """One collect → train → bench run shared by the tests that read its results. The collect
    streams its samples into the running `dashboard`; the bench streams nowhere."""
    root = tmp_path_factory.mktemp("pipeline")
    runs = root / "runs"
    data = root / "data" / "x.csv"
    collect = neurogc(
        "collect", "--users", "8", "--spawn-rate", "8", "--run-time", "4s",
        "--warmup", "500ms", "--interval", "0.25", "--out", str(data), "--runs-dir", str(runs),
        "--dashboard-port", str(dashboard),
    )  # fmt: skip
    assert collect.returncode == 0, collect.stderr
    model = root / "model"
    train = neurogc(
        "train", "--data", str(data), "--model", "lstm", "--epochs", "3", "--quiet",
        "--out", str(model),
    )  # fmt: skip
    assert train.returncode == 0, train.stderr
    bench_runs = root / "bench-runs"
    bench = neurogc(
        "bench", "--policy", "default", "--policy", f"neurogc-seed:{model}",
        "--mode", "sequential", "--repeat", "2", "--rate", "24", "--duration", "2s",
        "--warmup", "500ms", "--interval", "0.25", "--runs-dir", str(bench_runs), "--no-dashboard",
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr
    return {
        "collect": collect,
        "data": data,
        "collect_run": only_run(runs),
        "bench": bench,
        "run": only_run(bench_runs),
        "dashboard_port": dashboard,
    }


def test_collect_writes_the_training_set_and_says_where(pipeline):
    data: Path = pipeline["data"]
    assert str(data) in pipeline["collect"].stdout
    rows = csv_rows(data)
    # 4 s at 0.25 s: about 16 samples of the measured window, none of the warm-up.
    assert 10 <= len(rows) <= 20, len(rows)
    run = pipeline["collect_run"]
    info = json.loads((run / "run.json").read_text())
    assert info["kind"] == "collect" and info["status"] == "complete"
    assert info["load"]["mode"] == "closed" and info["load"]["users"] == 8
    trial = json.loads((run / info["trials"][0]["dir"] / "trial.json").read_text())
    times = [float(r[0]) for r in rows]
    assert min(times) >= trial["measure_start"] and max(times) <= trial["measure_end"] + 1e-3
    assert sum(float(r[7]) for r in rows) > 0, "rps column: the load reached the app"


def test_bench_records_every_trial_interleaved(pipeline):
    run: Path = pipeline["run"]
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "complete" and info["mode"] == "sequential"
    labels = [t["label"] for t in info["trials"]]
    assert labels == ["default", "neurogc-seed", "default", "neurogc-seed"]
    assert info["policies"][1]["model"]["architecture"]["kind"] == "lstm"
    if len(os.sched_getaffinity(0)) >= 2:
        assert info["pinning"] is not None
    for t in info["trials"]:
        d = run / t["dir"]
        trial = json.loads((d / "trial.json").read_text())
        assert trial["status"] == "complete", trial
        assert trial["measure_end"] - trial["measure_start"] == pytest.approx(2, abs=0.75)
        # 2 s at 24 req/s: 48 requests; 2 s at 0.25 s: 8 samples.
        assert trial["load_summary"]["requests"] > 30
        assert len(csv_rows(d / "samples.csv")) >= 8
        assert (d / "gc-events.csv").read_text().startswith("time,generation,pause_ms")
        assert (d / "latency.hlog").stat().st_size > 0
        seconds = [json.loads(x) for x in (d / "load.jsonl").read_text().splitlines()]
        assert seconds[-1]["type"] == "summary" and len(seconds) > 6
        assert not (pid_alive(trial["pid"])), "server stopped"
        log = (d / "server.log").read_text()
        assert "Traceback" not in log, "stopped by a SIGINT to its group, quietly: " + log


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_report_fills_every_row_and_draws_charts(pipeline):
    run: Path = pipeline["run"]
    readme_path = run / "README.md"
    assert str(readme_path) in pipeline["bench"].stdout
    readme = readme_path.read_text()
    for name in SEED_TABLE_ROWS:
        cells = table_row(readme, name)
        assert len(cells) >= 3 and all(c and c != "n/a" for c in cells[1:3]), (name, cells)
    assert "neurogc-seed:" in readme and " than default" in readme  # hyperfine-style summary
    assert "noise floor" in readme.lower()
    charts = sorted((run / "charts").glob("*.png"))
    assert len(charts) >= 4, charts
    for chart in charts:
        w, h = png_decodes(chart)
        assert w >= 300 and h >= 200
        assert f"charts/{chart.name}" in readme


def test_report_command_rewrites_the_report(pipeline, tmp_path):
    run: Path = pipeline["run"]
    out = neurogc("report", str(run))
    assert out.returncode == 0, out.stderr
    cmp = neurogc("report", "--compare", str(run), str(run))
    assert cmp.returncode == 0, cmp.stderr
    assert "neurogc-seed" in cmp.stdout and "p" in cmp.stdout


def test_side_by_side_splits_the_load_per_server(tmp_path):
    runs = tmp_path / "runs"
    out = neurogc(
        "bench", "--policy", "default", "--policy", "threshold:5000", "--mode", "side-by-side",
        "--repeat", "1", "--rate", "20", "--duration", "2s", "--warmup", "500ms",
        "--runs-dir", str(runs), "--no-dashboard", "--no-report",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run = only_run(runs)
    info = json.loads((run / "run.json").read_text())
    assert info["mode"] == "side-by-side"
    trials = [json.loads((run / t["dir"] / "trial.json").read_text()) for t in info["trials"]]
    assert len(trials) == 2
    assert trials[0]["measure_start"] == trials[1]["measure_start"]
    for t, ref in zip(trials, info["trials"]):
        rows = [json.loads(x) for x in (run / ref["dir"] / "load.jsonl").read_text().splitlines()]
        hosts = {r["host"] for r in rows if r["type"] == "second"}
        assert hosts == {f"http://127.0.0.1:{t['port']}"}, hosts
        assert rows[-1]["type"] == "summary" and rows[-1]["requests"] > 20
        assert (run / ref["dir"] / "latency.hlog").exists()


@pytest.mark.slow
def test_alternating_gives_each_server_its_turns_on_one_core(tmp_path):
    runs = tmp_path / "runs"
    out = neurogc(
        "bench", "--policy", "default", "--policy", "default", "--mode", "alternating",
        "--slice", "1s", "--repeat", "2", "--rate", "20", "--duration", "3s", "--warmup", "500ms",
        "--runs-dir", str(runs), "--no-dashboard",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run = only_run(runs)
    info = json.loads((run / "run.json").read_text())
    assert info["mode"] == "alternating" and info["load"]["alternate_s"] == 1.0
    if info["pinning"]:  # both servers on the same CPU, the load generator on another
        assert len(info["pinning"]["server_cpus"]) == 1
        assert info["pinning"]["server_cpus"] != info["pinning"]["load_cpus"]
    first_loaded = {}
    for ref in info["trials"]:
        trial = json.loads((run / ref["dir"] / "trial.json").read_text())
        assert trial["status"] == "complete"
        # Each server had 3 s of load in 1-s turns: the trial's window is twice that.
        assert 5.5 < trial["measure_end"] - trial["measure_start"] < 7.5
        rows = [json.loads(x) for x in (run / ref["dir"] / "load.jsonl").read_text().splitlines()]
        summary = rows[-1]
        assert summary["type"] == "summary" and summary["alternate_s"] == 1.0
        assert 57 <= summary["requests"] <= 63, summary["requests"]  # 3 s at 20 req/s
        assert summary["achieved_rate"] == pytest.approx(20, rel=0.05)
        seconds = [r["requests"] for r in rows if r["type"] == "second" and r["task"] == "all"]
        assert sum(1 for n in seconds if n == 0) >= 2, seconds  # its idle turns (3 of 1 s)
        # Every request of this server, in its turns only, in the trial's window.
        requests = list(csv.DictReader((run / ref["dir"] / "requests.csv").open()))
        assert len(requests) == summary["requests"]
        assert {r["status"] for r in requests} == {"200"}
        for r in requests:
            assert trial["measure_start"] <= float(r["intended"]) <= float(r["done"])
            assert float(r["done"]) <= trial["measure_end"] + 1
        first_loaded.setdefault(trial["repetition"], {})[ref["label"]] = seconds[0] > 0
    # Who goes first rotates with the repetition.
    assert first_loaded[1] != first_loaded[2], first_loaded
    # The report's RPS is over each server's turns, not halved by the idle ones.
    rps = table_row((run / "README.md").read_text(), "Avg RPS")
    assert float(rps[3].split()[0]) == pytest.approx(20, rel=0.05), rps
    assert "took turns" in (run / "README.md").read_text()


@pytest.mark.slow
def test_rate_auto_finds_a_sustainable_rate_and_runs_below_it(tmp_path):
    runs = tmp_path / "runs"
    out = neurogc(
        "bench", "--policy", "default", "--rate", "auto", "--rate-start", "40",
        "--probe-time", "1s", "--repeat", "1", "--duration", "1s", "--warmup", "500ms",
        "--runs-dir", str(runs), "--no-dashboard", "--no-report",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run = only_run(runs)
    info = json.loads((run / "run.json").read_text())
    search = json.loads((run / "rate-search.json").read_text())
    probes = search["policies"][0]["probes"]
    assert probes[0]["sustained"] and any(not p["sustained"] for p in probes), probes
    assert info["load"]["rate_source"] == "auto"
    assert info["load"]["rate"] == pytest.approx(0.6 * search["sustainable_rps"], rel=0.06)
    assert "rate auto" in out.stderr


def test_bench_streams_into_a_running_dashboard(pipeline):
    # The pipeline's collect ran with --dashboard-port of a dashboard already running there.
    port = pipeline["dashboard_port"]
    rows = csv_rows(pipeline["collect_run"] / "trials" / "01-default-r1" / "samples.csv")
    history = get_json(f"http://127.0.0.1:{port}/api/history?server=default")
    assert len(history["samples"]) == len(rows) > 0
    # The dashboard keeps times to the microsecond.
    assert {round(s["time"], 4) for s in history["samples"]} == {
        round(float(r[0]), 4) for r in rows
    }


def test_dashboard_flag_starts_one_for_the_run(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [str(NEUROGC), "collect", "--users", "4", "--run-time", "2s", "--warmup", "500ms",
         "--interval", "0.25", "--runs-dir", str(tmp_path), "--dashboard",
         "--dashboard-port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        status = wait_for(lambda: _servers(port), 40, "samples in the run's own dashboard")
        assert "default" in status
    finally:
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"http://127.0.0.1:{port}" in err


def _up(port: int) -> bool:
    try:
        get_json(f"http://127.0.0.1:{port}/api/status")
        return True
    except (OSError, AssertionError):
        return False


def _servers(port: int) -> list[str]:
    try:
        history = get_json(f"http://127.0.0.1:{port}/api/history")
    except (OSError, AssertionError):
        return []
    return [s["server"] for s in history["samples"]]


def test_interrupted_bench_stops_everything_and_keeps_what_it_measured(tmp_path):
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [str(NEUROGC), "bench", "--policy", "default", "--policy", "threshold:3000",
         "--mode", "sequential",
         "--repeat", "3", "--rate", "10", "--duration", "60s", "--warmup", "500ms",
         "--interval", "0.25", "--runs-dir", str(runs), "--no-dashboard"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def measuring() -> Path | None:
        for t in runs.glob("*/trials/*/trial.json"):
            try:
                info = json.loads(t.read_text())
            except ValueError:
                continue
            if info["status"] == "measuring":
                return t
        return None

    trial_json = wait_for(measuring, 60, "the first measurement")
    measuring_since = time.monotonic()

    def measured_a_while() -> bool:
        # At least 2 s into the measurement, with samples and per-second load rows on disk.
        return (
            time.monotonic() - measuring_since >= 2
            and line_count(trial_json.parent / "samples.csv") >= 5  # header + 4 samples
            and line_count(trial_json.parent / "load.jsonl") >= 3
        )

    wait_for(measured_a_while, 30, "2 s of samples and load rows")
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 20
    assert proc.returncode == 130, err
    run = trial_json.parent.parent.parent
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "interrupted"
    trial = json.loads(trial_json.read_text())
    assert trial["status"] == "interrupted"
    assert 2 <= trial["measure_end"] - trial["measure_start"] < 15
    seconds = (trial_json.parent / "load.jsonl").read_text().splitlines()
    assert len(seconds) >= 3 and json.loads(seconds[-1])["interrupted"] is True
    assert len(csv_rows(trial_json.parent / "samples.csv")) >= 4
    assert not pid_alive(trial["pid"])
    assert processes_mentioning(str(run)) == []
    assert processes_mentioning(f"127.0.0.1:{trial['port']}") == []


def test_kill_9_leaves_no_process_behind(tmp_path):
    """`kill -9` of `neurogc collect --cmd` (no chance to clean up): the service it started under
    `sh -c`, a grandchild the parent-death signal never reaches, dies with it."""
    token = tmp_path / "served"
    token.mkdir()
    tasks = tmp_path / "tasks.toml"
    tasks.write_text('[[task]]\npath = "/"\n')
    proc = subprocess.Popen(
        [str(NEUROGC), "collect", "--cmd", f"{sys.executable} -m http.server {{port}} --directory {token}",
         "--tasks", str(tasks), "--rate", "5", "--duration", "60s",
         "--warmup", "0s", "--runs-dir", str(tmp_path / "runs"), "--no-dashboard"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for(
        lambda: any("http.server" in p for p in processes_mentioning(str(token))), 30, "the service"
    )
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    wait_for(lambda: not processes_mentioning(str(token)), 10, "the service to die with collect")
    # Its run.json still says "running": the next report sees that its process is gone.
    run = only_run(tmp_path / "runs")
    assert json.loads((run / "run.json").read_text())["status"] == "running"
    out = neurogc("report", str(run), timeout=60)
    assert out.returncode == 0, out.stderr
    report = (run / "README.md").read_text()
    assert "interrupted" in report and "is gone" in report, report[:2000]


def test_cmd_service_gets_the_agent_and_its_samples_are_recorded(tmp_path):
    """`--cmd` runs the user's own command (here Python's http.server, which knows nothing of
    NeuroGC) with the agent injected as `neurogc run` does: the trial records its samples and
    collections, from the service's process, under the policy asked for."""
    served = tmp_path / "served"
    served.mkdir()
    tasks = tmp_path / "tasks.toml"
    tasks.write_text('[[task]]\npath = "/"\n')
    out = neurogc(
        "collect", "--cmd", f"{sys.executable} -m http.server {{port}} --directory {served}",
        "--policy", "threshold:500", "--tasks", str(tasks), "--rate", "20", "--duration", "3s",
        "--warmup", "0s", "--runs-dir", str(tmp_path / "runs"), "--no-dashboard", timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    trial = next((only_run(tmp_path / "runs") / "trials").iterdir())
    info = json.loads((trial / "trial.json").read_text())
    header = (trial / "samples.csv").read_text().splitlines()[0].split(",")
    rows = csv_rows(trial / "samples.csv")
    assert len(rows) >= 2, rows
    # One process sampled: the service (under `sh -c`, so not always the pid the trial started).
    assert len({r[header.index("pid")] for r in rows}) == 1, rows
    assert {r[header.index("policy")] for r in rows} == {"threshold:500"}
    assert int(info["load_summary"]["requests"]) > 0
    assert (trial / "gc-events.csv").read_text().startswith("time,generation,pause_ms")


def test_cmd_without_tasks_loads_get_slash_and_says_so(tmp_path):
    """`--cmd` without `--tasks` or `--path` loads `GET /` of the user's service (not the demo's
    endpoints, which it does not have), says so, and the progress line counts failures and shows
    the whole run's ETA."""
    served = tmp_path / "served"
    served.mkdir()
    out = neurogc(
        "collect", "--cmd", f"{sys.executable} -m http.server {{port}} --directory {served}",
        "--rate", "20", "--duration", "3s", "--warmup", "0s", "--runs-dir", str(tmp_path / "runs"),
        "--no-dashboard", timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "loading GET / only" in out.stderr, out.stderr
    run = only_run(tmp_path / "runs")
    assert json.loads((run / "run.json").read_text())["status"] == "complete"
    assert (run / "tasks.toml").read_text() == '[[task]]\npath = "/"\n\n'
    trial = next((run / "trials").iterdir())
    summary = json.loads((trial / "trial.json").read_text())["load_summary"]
    assert summary["requests"] > 0 and summary["failures"] == 0, summary
    assert "0 failed" in out.stderr and "run ETA" in out.stderr, out.stderr


@pytest.mark.parametrize("command", ["collect", "bench"])
def test_a_run_whose_requests_fail_is_marked_failed(tmp_path, command):
    """A measurement whose requests mostly failed (here every one a 404: `--path` names what the
    service does not serve) is a failed run, with the reason in run.json and a non-zero exit,
    and the progress line shows the failures as they come."""
    served = tmp_path / "served"
    served.mkdir()
    bench = ["--policy", "default", "--repeat", "1", "--no-report"] if command == "bench" else []
    out = neurogc(
        command, *bench, "--cmd", f"{sys.executable} -m http.server {{port}} --directory {served}",
        "--path", "/missing", "--path", "/also-missing", "--rate", "20", "--duration", "2s",
        "--warmup", "0s", "--runs-dir", str(tmp_path / "runs"), "--no-dashboard", timeout=60,
    )  # fmt: skip
    assert out.returncode not in (0, 130), (out.returncode, out.stderr)
    assert "loading GET /missing, GET /also-missing" in out.stderr, out.stderr
    assert "failed (100.0 %)" in out.stderr, out.stderr
    run = only_run(tmp_path / "runs")
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "failed", info
    assert "requests failed (100.0 %" in info["error"] and "http_404" in info["error"], info
    assert "--path or --tasks" in info["error"], info
    trial = json.loads(next((run / "trials").iterdir()).joinpath("trial.json").read_text())
    assert trial["status"] == "failed" and "http_404" in trial["error"], trial
    assert "http_404" in out.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--policy", "bogus-policy"], "bogus-policy"),
        (["--policy", "neurogc-seed:/no/such/model"], "/no/such/model"),
        (
            ["--policy", "default", "--cmd", "sleep 60 # {port}", "--startup-timeout", "1s"],
            "did not answer",
        ),  # fmt: skip
        (["--policy", "default", "--cmd", "exit 3 # {port}"], "exited"),
        (["--policy", "default", "--cmd", "uvicorn app:app"], "{port}"),
        (["--policy", "default", "--rate", "fast"], "--rate"),
        (["--policy", "default", "--mode", "alternating", "--users", "3"], "--mode alternating"),
        (["--policy", "default", "--primer"], "--primer"),
        (["--policy", "default", "--mode", "sequential", "--shuffle", "7"], "--shuffle"),
    ],
)
def test_bad_input_is_a_clear_error_within_seconds(tmp_path, args, message):
    rate = [] if {"--rate", "--users"} & set(args) else ["--rate", "5"]
    started = time.monotonic()
    out = neurogc(
        "bench", *args, *rate, "--duration", "2s", "--runs-dir", str(tmp_path), "--no-dashboard",
        timeout=30,
    )  # fmt: skip
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert message in out.stderr, out.stderr
    assert "error" in out.stderr
    assert time.monotonic() - started < 10
    assert processes_mentioning(str(tmp_path)) == []


@pytest.mark.slow
def test_demo_runs_the_three_phases_and_ends_with_the_report(tmp_path):
    port = free_port()
    out = neurogc(
        "demo", "--collect-time", "4s", "--interval", "0.25", "--bench-time", "2s",
        "--warmup", "500ms", "--repeat", "2", "--epochs", "2", "--probe-time", "1s",
        "--rate-start", "80", "--runs-dir", str(tmp_path), "--dashboard-port", str(port),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    runs = sorted(d.name for d in tmp_path.iterdir())  # timestamped names: collect came first
    assert [r.split("-", 2)[2] for r in runs] == ["demo-collect", "demo-bench"], runs
    collect = tmp_path / runs[0]
    assert (collect / "model" / "model.json").exists()
    bench = tmp_path / runs[1]
    info = json.loads((bench / "run.json").read_text())
    assert info["status"] == "complete" and info["load"]["rate_source"] == "auto"
    assert [p["label"] for p in info["policies"]] == ["default", "neurogc-seed"]
    assert len(info["trials"]) == 4
    last = out.stdout.strip().splitlines()
    assert any(str(bench / "README.md") in line for line in last[-3:]), last
    assert any(f"http://127.0.0.1:{port}" in line for line in last[-3:]), last
    # --probe-time and --rate-start reach the rate search.
    search = json.loads((bench / "rate-search.json").read_text())
    assert (search["probe_s"], search["start_rps"]) == (1.0, 80.0), search


# A service's helper that leaves the process group: `setsid -w` (the service in a session of its
# own, under a waiting `setsid`), or a double fork to a daemon in a new session that ignores SIGTERM.
DAEMONIZE = """
import os, signal, sys
port, marker = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", marker])
    os._exit(0)
os.execv(sys.executable, [sys.executable, "-m", "http.server", port, "--directory", marker])
"""


@pytest.mark.parametrize("escape", ["setsid", "daemon"])
def test_kill_9_leaves_no_escaped_descendant_behind(tmp_path, escape):
    """`kill -9` of `neurogc collect --cmd` whose service has a descendant in a session of its own
    (out of the process group, re-parented away from the service): it dies with collect too."""
    token = tmp_path / "served"
    token.mkdir()
    tasks = tmp_path / "tasks.toml"
    tasks.write_text('[[task]]\npath = "/"\n')
    if escape == "setsid":
        cmd = f"setsid -w {sys.executable} -m http.server {{port}} --directory {token}"
    else:
        script = tmp_path / "daemonize.py"
        script.write_text(DAEMONIZE)
        cmd = f"{sys.executable} {script} {{port}} {token}"
    proc = subprocess.Popen(
        [str(NEUROGC), "collect", "--cmd", cmd,
         "--tasks", str(tasks), "--rate", "5", "--duration", "60s",
         "--warmup", "0s", "--runs-dir", str(tmp_path / "runs"), "--no-dashboard"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:

        def started() -> bool:
            found = processes_mentioning(str(token))
            escaped = "time.sleep" if escape == "daemon" else "http.server"
            return any("http.server" in p for p in found) and any(escaped in p for p in found)

        wait_for(started, 30, "the service and its escaped descendant")
        time.sleep(1.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        wait_for(lambda: not processes_mentioning(str(token)), 10, "every descendant to die")
    finally:
        proc.kill()
        for p in processes_mentioning(str(token)):  # a failed run leaves nothing behind either
            os.kill(int(p.split(":")[0]), signal.SIGKILL)
