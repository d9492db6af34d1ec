"""Shared fixtures: a real demo server in a subprocess, HTTP helpers, GC-state hygiene."""

from __future__ import annotations

import gc
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parent.parent


# Ports this test process has handed out: servers started together each take theirs only once
# running, so a port must not be handed out twice, nor come from the kernel's ephemeral range,
# where any outgoing connection (the tests' own health polls) can take it before the server
# binds it. (CI: one of the workloads started at once exited "address already in use".)
_HANDED_OUT: set[int] = set()
_PICK = random.Random()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port nothing is bound to now, below the ephemeral range where it has room, and never
    one this process handed out before."""
    low = _ephemeral_low()
    for _ in range(1000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", _PICK.randrange(10_000, low) if low > 11_000 else 0))
            except OSError:
                continue
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError("no free port on 127.0.0.1 after 1000 tries")


def http_get(url: str, timeout: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def get_json(url: str) -> dict:
    status, body = http_get(url)
    assert status == 200, (url, status, body[:200])
    return json.loads(body)


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def vm_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class DemoServer:
    def __init__(self, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "neurogc.demo", "--port", str(self.port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

        def up() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"demo server exited: {self.process.communicate()[1]}")
            try:
                return http_get(self.url + "/health", timeout=1.0)[0] == 200
            except OSError:
                return False

        wait_for(up, 60, f"demo server on port {self.port}")

    @property
    def pid(self) -> int:
        return self.process.pid

    def get(self, path: str) -> tuple[int, bytes]:
        return http_get(self.url + path)

    def metrics(self) -> dict:
        return get_json(self.url + "/metrics.json")

    def stop(self) -> str:
        self.process.terminate()
        try:
            _, err = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
            raise AssertionError("demo server did not stop on SIGTERM within 20 s") from None
        return err


@pytest.fixture
def demo_server():
    servers: list[DemoServer] = []

    def start(*args: str) -> DemoServer:
        server = DemoServer(*args)
        servers.append(server)
        return server

    yield start
    for s in servers:
        if s.process.poll() is None:
            s.stop()


@pytest.fixture
def clean_gc():
    """Every in-process test leaves CPython's collector as it found it."""
    before = (gc.isenabled(), gc.get_threshold(), list(gc.callbacks))
    yield
    from neurogc import _agent

    agent = _agent._current  # running or failed
    if agent is not None:
        agent.stop()
    gc.unfreeze()
    after = (gc.isenabled(), gc.get_threshold(), list(gc.callbacks))
    if after != before:
        gc.enable()
        gc.set_threshold(*before[1])
    assert after == before, "the agent did not restore the collector's settings"


@pytest.fixture
def gc_disabled(clean_gc):
    """Automatic collection off for the test, so the only collections are the ones it runs (and
    its policy's); the agent is stopped (restoring "off") before collection is turned back on."""
    was = gc.isenabled()
    gc.disable()
    yield
    from neurogc import _agent

    agent = _agent._current
    if agent is not None:
        agent.stop()
    if was:
        gc.enable()


def run_python(
    code: str, timeout: float = 60, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def request(url: str, method: str = "GET", timeout: float = 10.0) -> tuple[int, bytes]:
    data = b"" if method in ("POST", "PUT", "PATCH") else None
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Workload:
    """A bundled workload (`python -m neurogc.workloads serve NAME`) with the agent, its samples and
    GC events in `directory`; `extra`: more serve arguments (`--policy`, `--set`)."""

    def __init__(self, name: str, directory: Path, *extra: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.gc_events = directory / f"{name}-gc-events.csv"
        self.samples = directory / f"{name}-samples.csv"
        # Its own process group, as the bench starts servers (a stop signals the whole group).
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "neurogc.workloads",
                "serve",
                name,
                "--port",
                str(self.port),
                "--interval",
                "0.5",
                "--csv",
                str(self.samples),
                "--gc-events-csv",
                str(self.gc_events),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def up(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"{self.name} exited: {self.process.communicate()[1]}")
        try:
            return http_get(self.url + "/health", timeout=1.0)[0] == 200
        except OSError:
            return False

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            _, err = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
            raise AssertionError(f"{self.name} did not stop on SIGTERM within 20 s") from None
        return err


def processes_mentioning(text: str) -> list[str]:
    """The processes (other than this one) whose command line contains `text`."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append(f"{d.name}: {cmd}")
    return found
