"""`neurogc run`: the agent injected into an unmodified program."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from conftest import get_json, wait_for


def neurogc(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["neurogc", *args], capture_output=True, text=True, timeout=60, **kw)


def test_run_injects_the_agent_into_a_plain_script(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(
        "import gc, time\n"
        "class C:\n    def __init__(self): self.me = self\n"
        "for _ in range(30):\n    [C() for _ in range(5000)]\n    time.sleep(0.02)\n"
        "print(gc.get_threshold())\n"
    )
    out = tmp_path / "out" / "samples.csv"
    r = neurogc("run", "--policy", "threshold:900,11,12", "--interval", "0.1", "--csv", str(out),
                "--", sys.executable, str(script))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "(900, 11, 12)"
    rows = list(csv.DictReader(out.open()))
    assert len(rows) >= 4
    assert all(row["policy"] == "threshold:900,11,12" for row in rows)
    # Without a middleware nothing measures requests: those cells are empty, never a made-up 0;
    # process and GC metrics are there.
    assert sum(int(row["gc0_collections"]) for row in rows) > 0
    assert all(row["rss_bytes"] for row in rows)
    for column in ("rps", "p95", "p99", "net_sent", "net_recv", "requests", "p50"):
        assert all(row[column] == "" for row in rows), column


def test_run_exit_code_and_signals_belong_to_the_program():
    r = neurogc("run", "--", sys.executable, "-c", "import sys; sys.exit(7)")
    assert r.returncode == 7


def test_run_rejects_bad_input_before_starting_anything():
    r = neurogc("run", "--policy", "periodic:x", "--", sys.executable, "-c", "print('ran')")
    assert r.returncode == 2
    assert 'invalid policy spec "periodic:x"' in r.stderr and "ran" not in r.stdout
    r = neurogc("run", "--", "/nonexistent/program")
    assert r.returncode == 2 and "/nonexistent/program" in r.stderr
    r = neurogc("run", "--interval", "0", "--", sys.executable, "-c", "1")
    assert r.returncode == 2 and "--interval" in r.stderr


def test_run_keeps_the_programs_own_sitecustomize(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import builtins; builtins.MARK = 'theirs'\n")
    r = neurogc(
        "run", "--", sys.executable, "-c", "import neurogc; print(MARK, neurogc.current().policy)",
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["theirs", "default"]


def test_operator_policy_wins_over_the_apps_default(tmp_path):
    from conftest import free_port

    port = free_port()
    proc = subprocess.Popen(
        [
            "neurogc",
            "run",
            "--policy",
            "freeze:0.1",
            "--interval",
            "0.2",
            "--",
            sys.executable,
            "-m",
            "neurogc.demo",
            "--port",
            str(port),
        ],  # fmt: skip
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def metrics():
            try:
                return get_json(f"http://127.0.0.1:{port}/metrics.json")
            except OSError:
                return None

        m = wait_for(lambda: (m := metrics()) and "policy" in m and m, 30, "demo metrics")
        assert m["policy"] == "freeze:0.1"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "ignoring 'default' from the middleware" in err


def test_run_writes_gc_events_to_an_absolute_path(tmp_path):
    # Relative paths are made absolute before the program starts: it may change directory.
    script = tmp_path / "collects.py"
    script.write_text("import gc, os\nos.chdir('/')\ngc.collect(2)\ngc.collect(2)\n")
    r = neurogc("run", "--policy", "default", "--interval", "0.05", "--csv", "out/s.csv",
                "--gc-events-csv", "out/gc-events.csv", "--", sys.executable, str(script),
                cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader((tmp_path / "out" / "gc-events.csv").open()))
    assert sum(row["generation"] == "2" and row["reason"] == "runtime" for row in rows) >= 2
    assert (tmp_path / "out" / "s.csv").exists()
    r = neurogc("run", "--csv", "x.csv", "--gc-events-csv", "x.csv", "--", sys.executable, "-c", "1",
                cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2 and "different files" in r.stderr


def test_a_planted_bootstrap_folder_is_never_used(tmp_path):
    """Under the temporary directory anyone may create the folder `neurogc run` would use and put
    a sitecustomize.py in it: a folder others can write into (or that another user owns) is
    refused and a fresh private one used, so the planted file never runs."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    version = subprocess.run(
        ["neurogc", "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    marker = tmp_path / "planted-ran"
    planted = tmpdir / f"neurogc-bootstrap-{os.getuid()}-{version}"
    # Its own folder that others could only read (an older version's): made private and used.
    planted.mkdir(mode=0o755)
    os.chmod(planted, 0o755)
    r = neurogc(
        "run", "--", sys.executable, "-c", "import neurogc; print(neurogc.current().policy)",
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )  # fmt: skip
    assert r.returncode == 0 and r.stdout.split() == ["default"], r.stderr
    assert planted.stat().st_mode & 0o777 == 0o700, oct(planted.stat().st_mode)
    for owner_is_someone_else in (False, True):
        if owner_is_someone_else and os.geteuid() != 0:
            continue  # only root can give a folder away
        (planted / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
        if owner_is_someone_else:
            os.chmod(planted, 0o755)
            os.chown(planted, 65534, 65534)
        else:
            os.chmod(planted, 0o777)
        planted_text = (planted / "sitecustomize.py").read_text()
        r = neurogc(
            "run", "--", sys.executable, "-c",
            "import neurogc, sitecustomize; print(neurogc.current().policy, sitecustomize.__file__)",
            env={**os.environ, "TMPDIR": str(tmpdir)},
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        policy, used = r.stdout.split()
        assert policy == "default", r.stdout
        assert not marker.exists(), "the planted sitecustomize.py ran"
        # Not merely overwritten (root could write into the other user's folder, and its owner
        # could swap the file back before Python reads it): the folder is not used at all.
        assert Path(used).parent != planted, used
        assert (planted / "sitecustomize.py").read_text() == planted_text
        if owner_is_someone_else:
            os.chown(planted, os.getuid(), os.getgid())
    # It ran from folders of its own making, its user's alone.
    made = [d for d in tmpdir.iterdir() if d.name.startswith(planted.name + "-")]
    assert made, list(tmpdir.iterdir())
    for d in made:
        assert d.stat().st_uid == os.getuid() and d.stat().st_mode & 0o077 == 0, oct(
            d.stat().st_mode
        )
