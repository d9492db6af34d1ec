"""requests_gc_overlap / requests_gc2_overlap: requests in flight while a collection ran.

Automatic collection is off in these tests (gc.disable()), so the only collections are the ones
the tests run, and the counts are exact.
"""

from __future__ import annotations

import asyncio
import csv
import gc
import os
import threading
import time

import pytest

import neurogc
from conftest import wait_for

SCOPE = {"type": "http", "method": "GET", "path": "/", "raw_path": b"/", "headers": []}


async def _receive():
    return {"type": "http.request", "body": b""}


async def _send(message):
    pass


async def collecting_app(scope, receive, send):
    """Collects the generation named by the path (``/0``, ``/2``) while serving; ``/`` does not."""
    path = scope["path"]
    if path.startswith("/") and path[1:].isdigit():
        gc.collect(int(path[1:]))
    if path == "/slow":
        await asyncio.sleep(0.05)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def asgi_requests(agent, paths):
    wrapped = neurogc.NeuroGCMiddleware(collecting_app, agent=agent)

    async def run():
        for path in paths:
            await wrapped({**SCOPE, "path": path}, _receive, _send)

    asyncio.run(run())


def totals_after(agent, requests: int) -> dict:
    return wait_for(
        lambda: (t := agent.totals())["requests"] >= requests and t, 5, f"{requests} requests"
    )


def test_asgi_requests_that_collect_are_counted(tmp_path, gc_disabled):
    path = tmp_path / "samples.csv"
    agent = neurogc.start(interval=0.05, csv=path)
    asgi_requests(agent, ["/"] * 20 + ["/0"] * 3 + ["/"] * 5 + ["/2"] * 2 + ["/1"] + ["/"] * 5)
    totals = totals_after(agent, 36)
    assert totals["requests"] == 36
    assert totals["requests_gc_overlap"] == 6
    assert totals["requests_gc2_overlap"] == 2
    agent.stop()
    # The samples carry the same counts, interval by interval.
    rows = list(csv.DictReader(path.open()))
    assert sum(int(r["requests_gc_overlap"]) for r in rows) == 6
    assert sum(int(r["requests_gc2_overlap"]) for r in rows) == 2
    assert sum(int(r["requests"]) for r in rows) == 36
    text = agent.prometheus()
    pid = f'{{pid="{os.getpid()}"}}'
    assert f"neurogc_requests_gc_overlap_total{pid} 6\n" in text
    assert f"neurogc_requests_gc2_overlap_total{pid} 2\n" in text


def test_only_requests_in_flight_during_the_collection_count(gc_disabled):
    agent = neurogc.start(interval=0.05)
    wrapped = neurogc.NeuroGCMiddleware(collecting_app, agent=agent)

    async def run():
        slow = asyncio.ensure_future(wrapped({**SCOPE, "path": "/slow"}, _receive, _send))
        await asyncio.sleep(0.01)  # the slow request is in flight
        gc.collect(0)  # on the event loop, between two awaits of the slow request
        await wrapped(SCOPE, _receive, _send)  # started after the collection: no overlap
        await slow

    asyncio.run(run())
    totals = totals_after(agent, 2)
    assert (totals["requests_gc_overlap"], totals["requests_gc2_overlap"]) == (1, 0)


def test_a_full_collection_on_another_thread_overlaps_a_slow_request(gc_disabled):
    agent = neurogc.start(interval=0.05)
    in_handler = threading.Event()
    collected = threading.Event()

    async def app(scope, receive, send):
        in_handler.set()
        while not collected.is_set():
            await asyncio.sleep(0.001)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    def collector():
        in_handler.wait(5)
        gc.collect(2)
        collected.set()

    thread = threading.Thread(target=collector)
    thread.start()
    wrapped = neurogc.NeuroGCMiddleware(app, agent=agent)
    asyncio.run(wrapped(SCOPE, _receive, _send))
    thread.join()
    totals = totals_after(agent, 1)
    assert (totals["requests_gc_overlap"], totals["requests_gc2_overlap"]) == (1, 1)


def test_a_request_started_during_a_collection_overlaps_it(gc_disabled):
    agent = neurogc.start(interval=0.05)
    native = agent._native
    tokens = []

    def start_mid_collection(phase, info):
        # Runs after the agent's own callback: the collection is in progress.
        if phase == "start" and not tokens:
            tokens.append(native.request_started())

    gc.callbacks.append(start_mid_collection)
    try:
        gc.collect(2)
    finally:
        gc.callbacks.remove(start_mid_collection)
    native.request_finished(1000, 0, 0, False, tokens[0])
    totals = totals_after(agent, 1)
    assert (totals["requests_gc_overlap"], totals["requests_gc2_overlap"]) == (1, 1)


def test_wsgi_requests_that_collect_are_counted(gc_disabled):
    def app(environ, start_response):
        path = environ["PATH_INFO"]
        if path == "/raise":
            gc.collect(0)
            raise RuntimeError("handler failed")
        start_response("200 OK", [("Content-Type", "text/plain")])
        if path == "/body":
            return body_that_collects()
        return [b"ok"]

    def body_that_collects():
        yield b"a"
        gc.collect(2)  # while the response streams: still in flight
        yield b"b"

    agent = neurogc.start(interval=0.05)
    wrapped = neurogc.NeuroGCWSGIMiddleware(app, agent=agent)

    def request(path):
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "CONTENT_LENGTH": ""}
        body = wrapped(environ, lambda status, headers, exc_info=None: None)
        try:
            return b"".join(body)
        finally:
            body.close()

    for _ in range(4):
        assert request("/") == b"ok"
    assert request("/body") == b"ab"
    with pytest.raises(RuntimeError):
        request("/raise")
    totals = totals_after(agent, 6)
    assert totals["requests"] == 6 and totals["errors"] == 1
    assert (totals["requests_gc_overlap"], totals["requests_gc2_overlap"]) == (2, 1)


def test_requests_without_a_token_or_with_automatic_gc_still_work(clean_gc):
    agent = neurogc.start(interval=0.05)
    native = agent._native
    native.request_started()
    native.request_finished(1000, 1, 1)  # no token: not counted as overlapping
    token = native.request_started()
    time.sleep(0.001)
    native.request_finished(1000, 1, 1, False, token)
    totals = totals_after(agent, 2)
    assert totals["requests_gc_overlap"] <= 1 and totals["requests_gc2_overlap"] == 0
    assert "requests_gc_overlap" in neurogc.columns()
    assert neurogc.columns()[-2:] == ["requests_gc_overlap", "requests_gc2_overlap"]
