"""The agent never takes the host down: fork, exit, threads, failures."""

from __future__ import annotations

import csv
import json
import textwrap

from conftest import run_python


def test_sampler_restarts_in_fork_child(tmp_path):
    path = tmp_path / "samples.csv"
    r = run_python(
        textwrap.dedent(
            f"""
            import json, os, time, neurogc
            a = neurogc.start(interval=0.05, csv={str(path)!r})
            time.sleep(0.15)
            child = os.fork()
            if child == 0:
                time.sleep(0.4)
                s = a.snapshot()
                ok = a.running and s is not None and s["pid"] == os.getpid()
                a.stop()
                os._exit(0 if ok else 3)
            _, status = os.waitpid(child, 0)
            time.sleep(0.1)
            s = a.snapshot()
            print(json.dumps({{"status": status, "child": child,
                              "parent_ok": a.running and s["pid"] == os.getpid()}}))
            a.stop()
            """
        ),
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == 0, "the child's agent did not sample in the child"
    assert out["parent_ok"]
    child_csv = tmp_path / f"samples-{out['child']}.csv"
    rows = list(csv.DictReader(child_csv.open()))
    assert len(rows) >= 3 and {row["pid"] for row in rows} == {str(out["child"])}
    parent_rows = list(csv.DictReader(path.open()))
    assert {row["pid"] for row in parent_rows} != {str(out["child"])}


def test_many_forks_under_a_busy_sampler_never_deadlock():
    # A 1 ms sampler with a collecting policy maximises the chance that fork() lands while
    # the sampler holds a lock; a child that deadlocks would never exit and time the test out.
    # (Before the sampler kept one thread state for life, CPython <= 3.11.7's HEAD_LOCK
    # deadlock, gh-112275, hung a child within about 15 x 40 forks.)
    r = run_python(
        textwrap.dedent(
            """
            import gc, os, neurogc
            a = neurogc.start("periodic:0.01", interval=0.001)
            class C:
                def __init__(self): self.me = self
            failures = 0
            for i in range(150):
                for _ in range(2000):
                    C()
                pid = os.fork()
                if pid == 0:
                    for _ in range(2000):
                        C()
                    gc.collect()
                    a.snapshot()
                    a.stop()
                    os._exit(0)
                _, status = os.waitpid(pid, 0)
                failures += status != 0
            a.stop()
            print(failures)
            """
        ),
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0"


def test_a_fork_never_lands_inside_the_agents_collection():
    """CPython marks "a collection is under way" in one flag and `gc.collect()` does nothing
    while it is set. A fork that lands while another thread is inside a collection (a finalizer
    ran bytecode and let the forking thread have the interpreter) copies the flag set into the
    child, whose collector is then dead for good: no automatic and no explicit collection ever
    runs there. Plain CPython does this to any thread that collects; the agent collects from its
    own thread, so it holds a fork until its collection ends. (It happened in CI: a gunicorn
    worker forked during the master's timer collection never collected.)"""
    r = run_python(
        textwrap.dedent(
            """
            import gc, os, time, neurogc
            class Slow:
                # Garbage whose finalizer runs bytecode long enough to hand the interpreter over.
                def __init__(self): self.me = self
                def __del__(self):
                    x = 0
                    for i in range(2000):
                        x += i
            a = neurogc.start("periodic:10ms", interval=0.05)
            dead = 0
            for i in range(300):
                for _ in range(50):
                    Slow()
                time.sleep(0.002)
                pid = os.fork()
                if pid == 0:
                    a.stop()
                    cycle = []
                    cycle.append(cycle)
                    del cycle
                    os._exit(0 if gc.collect() > 0 else 7)
                _, status = os.waitpid(pid, 0)
                dead += os.waitstatus_to_exitcode(status) == 7
            a.stop()
            print(dead)
            """
        ),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0", f"{r.stdout.strip()} children of 300 could not collect"


def test_a_child_whose_agent_cannot_restart_gets_its_collector_back(tmp_path):
    """`periodic` turns automatic collection off; a fork child whose agent cannot start (its CSV
    cannot be opened) has no sampler to collect for it, so it gets CPython's settings back and
    says it is not running, instead of never collecting."""
    d = tmp_path / "d"
    r = run_python(
        textwrap.dedent(
            f"""
            import gc, os, neurogc
            a = neurogc.start("periodic:1s", interval=0.05, csv={str(d / "samples.csv")!r})
            assert not gc.isenabled()
            os.rename({str(d)!r}, {str(tmp_path / "moved")!r})
            open({str(d)!r}, "w").close()  # a file where the child's CSV folder would be
            pid = os.fork()
            if pid == 0:
                ok = gc.isenabled() and neurogc.current() is None
                os._exit(0 if ok else 3)
            _, status = os.waitpid(pid, 0)
            print(os.waitstatus_to_exitcode(status), gc.isenabled())
            a.stop()
            """
        ),
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "False"], r.stdout + r.stderr
    assert "could not restart in fork child" in r.stderr, r.stderr


def test_interpreter_exit_never_hangs_even_mid_collection():
    # A big heap makes each periodic full collection long; exit lands during one, with
    # threads still feeding the agent. atexit stops the agent; the exit must be prompt.
    code = textwrap.dedent(
        """
        import threading, time, neurogc
        heap = [[i] for i in range(300_000)]
        a = neurogc.start("periodic:0.01", interval=0.005)
        def feed():
            while True:
                a._native.request_started()
                a._native.request_finished(1000, 10, 10)
        for _ in range(3):
            threading.Thread(target=feed, daemon=True).start()
        time.sleep(0.3)
        """
    )
    for _ in range(3):
        r = run_python(code, timeout=30)
        assert r.returncode == 0, r.stderr
        assert "panicked" not in r.stderr and "Fatal" not in r.stderr, r.stderr


def test_exit_without_explicit_stop_restores_nothing_it_should_not():
    r = run_python(
        "import gc, neurogc; neurogc.start('threshold:9999', interval=0.01); "
        "import atexit; atexit.register(lambda: print(gc.get_threshold()[0]))"
    )
    assert r.returncode == 0, r.stderr
    # atexit runs last-registered first: our print runs before the agent's stop.
    assert r.stdout.strip() == "9999"
