"""The ASGI and WSGI middlewares with real servers (uvicorn, wsgiref) and real HTTP."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import threading
import time
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest

import neurogc
from conftest import free_port, http_get, wait_for


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def test_wsgi_middleware_counts_requests_errors_and_bytes(clean_gc):
    def app(environ, start_response):
        if environ["PATH_INFO"] == "/boom":
            start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
            return [b"boom"]
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"x" * 1000]

    wrapped = neurogc.NeuroGCWSGIMiddleware(
        app, policy="threshold:3000", interval=0.1, metrics_path="/metrics"
    )
    server = make_server("127.0.0.1", 0, wrapped, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        for _ in range(20):
            assert http_get(base + "/")[0] == 200
        assert http_get(base + "/boom")[0] == 500
        totals = wait_for(
            lambda: (t := neurogc.current().totals()) and t["requests"] >= 21 and t, 5, "requests"
        )
        assert totals["errors"] == 1
        assert totals["bytes_out"] >= 20 * 1000
        for path in ("/metrics.json", "/metrics?format=json"):
            status, body = http_get(base + path)
            assert status == 200 and json.loads(body)["agent"]["policy"] == "threshold:3000"
        status, text = http_get(base + "/metrics")
        assert f'neurogc_request_errors_total{{pid="{os.getpid()}"}} 1'.encode() in text
    finally:
        server.shutdown()
        neurogc.current().stop()


ASGI_APP = textwrap.dedent(
    """
    import neurogc

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b"hello" * 100
        if scope["path"] == "/fail":
            raise RuntimeError("handler failed")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    app = neurogc.install(app, policy="freeze:0.2", interval=0.1)
    """
)


def test_asgi_install_under_uvicorn(tmp_path, demo_server):
    import subprocess

    (tmp_path / "asgi_app.py").write_text(ASGI_APP)
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "asgi_app:app",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--lifespan",
            "on",
        ],  # fmt: skip
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _up(base), 30, "uvicorn")
        for _ in range(30):
            assert http_get(base + "/")[0] == 200
        assert http_get(base + "/fail")[0] == 500
        m = wait_for(
            lambda: (
                (m := json.loads(http_get(base + "/metrics.json")[1]))
                and m["totals"]["requests"] >= 31
                and m
            ),
            5,
            "requests in totals",
        )
        assert m["totals"]["errors"] == 1
        assert m["agent"]["policy"] == "freeze:0.2"
        assert m["totals"]["bytes_out"] >= 30 * 500
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    # uvicorn shuts down gracefully, then re-raises SIGTERM so the exit status reports it.
    assert proc.returncode in (0, -15), err
    assert err.count("Traceback") == 1 and "handler failed" in err, err


def _up(base: str) -> bool:
    try:
        return http_get(base + "/metrics", timeout=1)[0] == 200
    except OSError:
        return False


def test_middleware_rejects_a_bad_policy_at_construction():
    from fastapi import FastAPI
    from flask import Flask

    # A FastAPI app builds its middleware at the first request: install checks the spec itself.
    for app in (lambda *a: None, FastAPI(), Flask(__name__)):
        with pytest.raises(ValueError, match='invalid policy spec "periodic"'):
            neurogc.install(app, policy="periodic")


def test_asgi_middleware_adds_little_per_request(clean_gc):
    """A coarse in-suite guard; the committed benchmark (bench/agent_overhead.py) measures it."""
    import asyncio

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    agent = neurogc.start(interval=0.2)
    wrapped = neurogc.NeuroGCMiddleware(app, agent=agent)
    scope = {"type": "http", "method": "GET", "path": "/", "raw_path": b"/", "headers": []}

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        pass

    async def run(target, n):
        start = time.perf_counter()
        for _ in range(n):
            await target(scope, receive, send)
        return (time.perf_counter() - start) / n

    loop = asyncio.new_event_loop()
    try:
        # Alternated, so that a slower spell of the machine, or a full collection, does not
        # land on one side only.
        times = {app: [], wrapped: []}
        for _ in range(3):
            for target in times:
                times[target].append(loop.run_until_complete(run(target, 20000)))
        base, ours = min(times[app]), min(times[wrapped])
    finally:
        loop.close()
    added_us = (ours - base) * 1e6
    assert added_us < 20, f"middleware adds {added_us:.1f} µs per request"
    wait_for(lambda: agent.totals()["requests"] >= 60000, 5, "the 60000 requests in the totals")
