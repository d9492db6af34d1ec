"""The seed's demo service, offline, with a second scenario for the large-heap story.

Endpoints (as in the seed): ``/cpu-heavy``, ``/memory-heavy``, ``/network-heavy``, ``/io-heavy``,
``/health``, ``/metrics`` (Prometheus text; the seed's JSON at ``/metrics.json`` or
``/metrics?format=json``).

``/memory-heavy`` builds reference cycles on purpose: without cycles reference counting frees
everything and the cyclic GC has nothing to do (seed 000). Scenario ``large-heap`` adds the
``large-heap`` workload (:mod:`neurogc.workloads.large_heap`): a long-lived catalogue of
``heap_objects`` tracked objects and its ``/cyclic`` and ``/item`` routes, whose request traces
die in the old generation and make full collections scan that heap: the production story of
seed 001.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
from typing import Any

from fastapi import FastAPI, Request, Response

from ..workloads.large_heap import DEFAULT_HEAP_OBJECTS, LargeHeap, add_routes

SCENARIOS = ("seed", "large-heap")


class Node:
    """A node of a doubly linked ring: every ring is a reference cycle."""

    __slots__ = ("next", "prev", "payload")

    def __init__(self, payload: Any) -> None:
        self.next: Node | None = None
        self.prev: Node | None = None
        self.payload = payload


def build_rings(rings: int, size: int) -> int:
    """Builds ``rings`` cyclic rings of ``size`` nodes, each holding a small dict, and drops them."""
    total = 0
    for r in range(rings):
        first = prev = Node({"ring": r, "i": 0, "tags": [r, 0]})
        for i in range(1, size):
            node = Node({"ring": r, "i": i, "tags": [r, i]})
            node.prev, prev.next = prev, node
            prev = node
        prev.next, first.prev = first, prev
        total += first.payload["i"] + prev.payload["i"]
    return total


def count_primes(limit: int) -> int:
    sieve = bytearray([1]) * (limit + 1)
    sieve[0:2] = b"\x00\x00"
    for i in range(2, int(limit**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(range(i * i, limit + 1, i)))
    # Trial division on top, so the endpoint spends real interpreter time as the seed's did.
    return sum(1 for n in range(2, limit // 4) if all(n % d for d in range(2, int(n**0.5) + 1)))


class Upstream:
    """The local upstream process for ``/network-heavy``."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.port: int | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEUROGC_")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "neurogc.demo.upstream", "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise RuntimeError(f"the demo's local upstream did not start (said {line!r})")
        self.port = int(line)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
            if self.process.poll() is None:
                self.process.kill()
            self.process = None

    async def fetch(self, size: int) -> int:
        """GETs ``size`` bytes from the upstream over a fresh connection; returns bytes read."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            writer.write(
                f"GET /payload?size={size} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
            )
            await writer.drain()
            data = await reader.read()
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        return len(data)


def create_app(
    scenario: str = "seed",
    heap_objects: int = DEFAULT_HEAP_OBJECTS,
    agent_enabled: bool = True,
) -> FastAPI:
    """The demo app. With ``agent_enabled`` its ``/metrics`` routes report the running agent's
    metrics (as the middleware's would; without the agent they answer 503); the caller adds the
    middleware with :func:`neurogc.install` (``metrics_path=None``)."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    if heap_objects < 0:
        raise ValueError(f"heap_objects must be >= 0, got {heap_objects}")
    upstream = Upstream()
    large_heap = LargeHeap(heap_objects) if scenario == "large-heap" else None
    scratch = tempfile.mkdtemp(prefix="neurogc-demo-io-")

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        if large_heap is not None:
            large_heap.build()
        upstream.start()
        try:
            yield
        finally:
            upstream.stop()
            if large_heap is not None:
                large_heap.release()
            with contextlib.suppress(OSError):
                for name in os.listdir(scratch):
                    os.unlink(os.path.join(scratch, name))
                os.rmdir(scratch)

    app = FastAPI(title="NeuroGC demo", lifespan=lifespan)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/cpu-heavy")
    async def cpu_heavy(limit: int = 20_000) -> dict[str, int]:
        return {"primes": count_primes(min(max(limit, 10), 1_000_000))}

    @app.get("/memory-heavy")
    async def memory_heavy(rings: int = 50, size: int = 40) -> dict[str, int]:
        rings, size = min(max(rings, 1), 10_000), min(max(size, 2), 10_000)
        return {"checksum": build_rings(rings, size), "objects": rings * size * 3}

    @app.get("/network-heavy")
    async def network_heavy(size: int = 65_536) -> dict[str, int]:
        return {"bytes": await upstream.fetch(min(max(size, 0), 4 << 20))}

    @app.get("/io-heavy")
    async def io_heavy(size: int = 262_144) -> dict[str, int]:
        size = min(max(size, 1), 16 << 20)
        fd, path = tempfile.mkstemp(dir=scratch)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(size))
                f.flush()
                os.fsync(f.fileno())
            with open(path, "rb") as f:
                read = len(f.read())
        finally:
            os.unlink(path)
        return {"bytes": read}

    if large_heap is not None:
        add_routes(app, large_heap)

    def running_agent() -> Any:
        import neurogc

        return neurogc.current() if agent_enabled else None

    def metrics_json() -> Any:
        agent = running_agent()
        if agent is None:
            return Response(
                content='{"agent": null, "error": "this server runs without the NeuroGC agent"}',
                status_code=503,
                media_type="application/json",
            )
        return agent.metrics()

    @app.get("/metrics")
    async def metrics(request: Request) -> Any:
        if request.query_params.get("format") == "json":
            return metrics_json()
        agent = running_agent()
        if agent is None:
            return Response("# this server runs without the NeuroGC agent\n", status_code=503)
        return Response(agent.prometheus(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/metrics.json")
    async def metrics_document() -> Any:
        return metrics_json()

    return app
