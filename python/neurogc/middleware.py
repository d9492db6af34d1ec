"""Request middleware: latency, bytes and in-flight counts for the agent, ASGI and WSGI, and the
agent's metrics at ``/metrics`` (Prometheus text) and ``/metrics.json``.

The middleware is the only per-request cost NeuroGC adds; it does a clock read at each end, counts
bytes, and makes one call into the native agent at each end (the start's returns a token that tells
the end whether a collection ran in between). Network bytes are HTTP/1.1 message bytes
reconstructed from the ASGI/WSGI events (request line, headers, body) — per-process socket
counters do not exist in /proc.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Iterable
from time import perf_counter_ns
from typing import Any, Callable

from . import _agent, _native

# "HTTP/1.1 200 OK\r\n" and the blank line closing the headers.
_STATUS_LINE_BYTES = 17
_HEADERS_END_BYTES = 2


def _headers_bytes(headers: Iterable[tuple[Any, Any]]) -> int:
    # "name: value\r\n"
    return sum(len(k) + len(v) + 4 for k, v in headers)


class _AgentBinding:
    """Finds or starts the agent for a middleware; shared by the ASGI and WSGI flavours."""

    def __init__(
        self,
        agent: _agent.Agent | None,
        policy: str | None,
        interval: float | str,
        csv: str | os.PathLike[str] | None,
        gc_events_csv: str | os.PathLike[str] | None = None,
    ) -> None:
        if policy is not None:
            _native.validate_policy(policy)  # a bad spec fails here, at start-up
        self.agent = agent
        self.owned = False
        self.options = {
            "policy": policy or "default",
            "interval": _agent.seconds(interval),  # a bad one fails here too
            "csv": csv,
            "gc_events_csv": gc_events_csv,
        }
        self.requested_policy = policy

    def ensure(self) -> _agent.Agent:
        if self.agent is not None:
            return self.agent
        running = _agent.current()
        if running is not None:
            # E.g. started by `neurogc run`: the operator's choice wins over the app's default.
            if self.requested_policy is not None and self.requested_policy != running.policy:
                _agent.log.warning(
                    "NeuroGC agent already running with policy %r; ignoring %r from the middleware",
                    running.policy,
                    self.requested_policy,
                )
            self.agent = running
        else:
            self.agent = _agent.start(**self.options)
            self.owned = True
        self.agent._native.serve_requests()
        return self.agent

    def release(self) -> None:
        if self.owned and self.agent is not None:
            self.agent.stop()
            self.agent = None
            self.owned = False

    def metrics_body(self, as_json: bool) -> tuple[bytes, bytes]:
        """(content type, body) for the metrics route: Prometheus text, or the JSON document."""
        agent = self.ensure()
        if as_json:
            return b"application/json", json.dumps(agent.metrics()).encode()
        return PROMETHEUS_CONTENT_TYPE, agent.prometheus().encode()


PROMETHEUS_CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"


class _Middleware:
    """What the ASGI and WSGI flavours share: the wrapped app, the agent binding, the metrics route."""

    def __init__(
        self,
        app: Callable[..., Any],
        *,
        policy: str | None = None,
        interval: float | str = 1.0,
        csv: str | os.PathLike[str] | None = None,
        gc_events_csv: str | os.PathLike[str] | None = None,
        metrics_path: str | None = "/metrics",
        agent: _agent.Agent | None = None,
    ) -> None:
        self.app = app
        self.binding = _AgentBinding(agent, policy, interval, csv, gc_events_csv)
        self.metrics_path = metrics_path.rstrip("/") if metrics_path else None
        self._json_path = None if self.metrics_path is None else self.metrics_path + ".json"

    def _is_metrics(self, path: str) -> bool:
        return path == self.metrics_path or path == self._json_path

    def _as_json(self, path: str, query: bytes) -> bool:
        """On the metrics route: whether the JSON document is asked for (``<metrics_path>.json``
        or ``?format=json``) rather than Prometheus text."""
        return path == self._json_path or b"format=json" in query.split(b"&")


class NeuroGCMiddleware(_Middleware):
    """ASGI middleware. Starts the agent at lifespan start-up (or at the first request when the
    server runs without lifespan) and stops it at shutdown if it started it.

    ``metrics_path`` (default ``/metrics``): Prometheus text there, the JSON document at
    ``<metrics_path>.json`` (or ``?format=json``); None serves neither. The same with
    ``app.add_middleware(NeuroGCMiddleware, policy=...)``, which is what :func:`install` does.
    """

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _lifespan(self, scope: dict, receive: Callable, send: Callable) -> None:
        binding = self.binding

        async def lifespan_receive() -> dict:
            message = await receive()
            if message["type"] == "lifespan.startup":
                binding.ensure()
            return message

        async def lifespan_send(message: dict) -> None:
            if message["type"] == "lifespan.shutdown.complete":
                binding.release()
            await send(message)

        await self.app(scope, lifespan_receive, lifespan_send)

    async def _serve_metrics(self, as_json: bool, send: Callable) -> None:
        content_type, body = self.binding.metrics_body(as_json)
        headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _http(self, scope: dict, receive: Callable, send: Callable) -> None:
        path = scope.get("path", "")
        if self._is_metrics(path):
            await self._serve_metrics(self._as_json(path, scope.get("query_string", b"")), send)
            return
        agent = self.binding.agent or self.binding.ensure()
        native = agent._native
        start = perf_counter_ns()
        token = native.request_started()
        # [bytes in, bytes out, status]; a list so the closures below can update it.
        tally = [
            len(scope.get("method", ""))
            + len(scope.get("raw_path") or b"")
            + 12
            + _headers_bytes(scope.get("headers", ()))
            + _HEADERS_END_BYTES,
            0,
            500,
        ]

        async def counting_receive() -> dict:
            message = await receive()
            body = message.get("body")
            if body:
                tally[0] += len(body)
            return message

        async def counting_send(message: dict) -> None:
            kind = message["type"]
            if kind == "http.response.body":
                tally[1] += len(message.get("body", b""))
            elif kind == "http.response.start":
                tally[2] = message["status"]
                tally[1] += (
                    _STATUS_LINE_BYTES
                    + _headers_bytes(message.get("headers", ()))
                    + _HEADERS_END_BYTES
                )
            await send(message)

        failed = True
        try:
            await self.app(scope, counting_receive, counting_send)
            failed = False
        finally:
            native.request_finished(
                perf_counter_ns() - start, tally[0], tally[1], failed or tally[2] >= 500, token
            )


class NeuroGCWSGIMiddleware(_Middleware):
    """WSGI middleware (Flask, Django under gunicorn). Starts the agent when constructed; with
    gunicorn's fork model each worker gets its own sampler thread after the fork. ``metrics_path``
    as for :class:`NeuroGCMiddleware`. For Flask, :func:`install` wraps ``app.wsgi_app``."""

    def __init__(self, app: Callable[..., Any], **options: Any) -> None:
        super().__init__(app, **options)
        self.binding.ensure()

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if self._is_metrics(path):
            query = environ.get("QUERY_STRING", "").encode("latin-1")
            content_type, body = self.binding.metrics_body(self._as_json(path, query))
            start_response(
                "200 OK",
                [("Content-Type", content_type.decode()), ("Content-Length", str(len(body)))],
            )
            return [body]
        native = self.binding.ensure()._native
        start = perf_counter_ns()
        token = native.request_started()
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        headers_in = sum(
            len(k) - 5 + len(str(v)) + 4 for k, v in environ.items() if k.startswith("HTTP_")
        )
        state = {"status": 500, "out": 0}

        def counting_start_response(status: str, headers: list, exc_info: Any = None) -> Callable:
            try:
                state["status"] = int(status.split(" ", 1)[0])
            except ValueError:
                state["status"] = 500
            state["out"] += len(status) + 11 + _headers_bytes(headers) + _HEADERS_END_BYTES
            return start_response(status, headers, exc_info)

        try:
            body = self.app(environ, counting_start_response)
        except BaseException:
            native.request_finished(perf_counter_ns() - start, length + headers_in, 0, True, token)
            raise
        return _CountingBody(body, native, start, token, length + headers_in, state)


class _CountingBody:
    """Wraps a WSGI response iterable: counts bytes out and records the request when closed."""

    def __init__(
        self, body: Iterable[bytes], native: Any, start: int, token: int, bytes_in: int, state: dict
    ):
        self._body = body
        self._native = native
        self._start = start
        self._token = token
        self._bytes_in = bytes_in
        self._state = state
        self._failed = False
        self._done = False

    def __iter__(self):
        try:
            for chunk in self._body:
                self._state["out"] += len(chunk)
                yield chunk
        except BaseException:
            self._failed = True
            raise

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            if not self._done:
                self._done = True
                self._native.request_finished(
                    perf_counter_ns() - self._start,
                    self._bytes_in,
                    self._state["out"],
                    self._failed or self._state["status"] >= 500,
                    self._token,
                )


def install(
    app: Any,
    *,
    policy: str | None = None,
    interval: float | str = 1.0,
    csv: str | os.PathLike[str] | None = None,
    metrics_path: str | None = "/metrics",
    gc_events_csv: str | os.PathLike[str] | None = None,
) -> Any:
    """Adds the NeuroGC middleware to ``app`` and returns the app itself; the agent starts with it.

    - FastAPI, Starlette (anything with ``add_middleware``): ``app.add_middleware(NeuroGCMiddleware,
      ...)``, so routes and middleware can still be added to ``app`` afterwards.
    - Flask (anything with a ``wsgi_app``): ``app.wsgi_app`` is wrapped in
      :class:`NeuroGCWSGIMiddleware`; the agent starts now.
    - A bare ASGI callable (a coroutine function, or an object whose ``__call__`` is one) comes back
      wrapped in :class:`NeuroGCMiddleware`, any other callable in :class:`NeuroGCWSGIMiddleware`:
      there is no app object to add the middleware to.

    ``policy=None`` means ``default``, or whatever agent ``neurogc run`` already started (whose
    own ``csv``/``gc_events_csv`` then apply). ``csv`` and ``gc_events_csv`` are as in
    :func:`neurogc.start`. ``metrics_path``: Prometheus text there, JSON at
    ``<metrics_path>.json``; pass None to serve neither (an app with its own ``/metrics`` route:
    add :class:`neurogc.prometheus.NeuroGCCollector` to its registry instead).
    """
    if policy is not None:
        _native.validate_policy(policy)  # a bad spec fails here, not at the first request
    options: dict[str, Any] = {
        "policy": policy,
        "interval": interval,
        "csv": csv,
        "gc_events_csv": gc_events_csv,
        "metrics_path": metrics_path,
    }
    add_middleware = getattr(app, "add_middleware", None)
    if callable(add_middleware):
        add_middleware(NeuroGCMiddleware, **options)
        return app
    wsgi_app = getattr(app, "wsgi_app", None)
    if callable(wsgi_app):
        app.wsgi_app = NeuroGCWSGIMiddleware(wsgi_app, **options)
        return app
    if _is_asgi(app):
        return NeuroGCMiddleware(app, **options)
    return NeuroGCWSGIMiddleware(app, **options)


def _is_asgi(app: Any) -> bool:
    call = type(app).__call__ if callable(app) and not inspect.isroutine(app) else None
    return inspect.iscoroutinefunction(app) or inspect.iscoroutinefunction(call)
