"""The process-wide agent: start/stop, the gc callback, fork and exit handling."""

from __future__ import annotations

import atexit
import gc
import logging
import os
import threading
from typing import Any

from . import _native

log = logging.getLogger("neurogc")

_lock = threading.Lock()
_current: Agent | None = None


class Agent:
    """A running NeuroGC agent. Create it with :func:`neurogc.start`."""

    def __init__(self, native: _native.NativeAgent) -> None:
        self._native = native
        self._callback = native.gc_callback

    @property
    def policy(self) -> str:
        """The policy in force: the requested spec, or ``default`` if it could not start (a
        model that failed to load, say; the reason is logged and in the first sample)."""
        return self._native.policy

    @property
    def requested_policy(self) -> str:
        return self._native.requested_policy

    @property
    def interval(self) -> float:
        return self._native.interval

    @property
    def csv_path(self) -> str | None:
        path = self._native.csv_path
        return None if path is None else os.fspath(path)

    @property
    def gc_events_csv_path(self) -> str | None:
        """The GC events CSV this process writes (``-<pid>`` suffixed in a fork child), if any."""
        path = self._native.gc_events_csv_path
        return None if path is None else os.fspath(path)

    @property
    def running(self) -> bool:
        """True while sampling; False after stop() or after an internal failure."""
        return self._native.running

    @property
    def failure(self) -> str | None:
        """Why the agent turned itself off, if it did (the service keeps running)."""
        return self._native.failure

    def snapshot(self) -> dict[str, Any] | None:
        """The newest sample (one interval), or None before the first interval has passed."""
        return self._native.snapshot()

    def totals(self) -> dict[str, Any]:
        """Counters since start, as they are at the call (not as of the last sample): requests,
        bytes, collections, objects collected and uncollectable, pauses per generation, requests
        that overlapped a collection (``requests_gc_overlap``) or a full one
        (``requests_gc2_overlap``), collections missing from the events CSV
        (``gc_events_dropped``)."""
        return self._native.totals()

    def metrics(self) -> dict[str, Any]:
        """The JSON metrics document (``/metrics.json``): the newest sample's fields, flat as the
        seed's ``/metrics`` returned them, plus the totals now and the agent's state."""
        doc: dict[str, Any] = dict(self.snapshot() or {})
        doc["totals"] = self.totals()
        doc["agent"] = {
            "policy": self.policy,
            "interval": self.interval,
            "running": self.running,
            "failure": self.failure,
            "pid": os.getpid(),
        }
        return doc

    def prometheus(self, process: bool = True) -> str:
        """Prometheus text exposition (format 0.0.4), read at the call: counters since start, a
        request-duration histogram and collection pauses in seconds, every series labelled with
        this process' ``pid`` (docs/metrics.md). ``process=False`` leaves out ``process_cpu_seconds_total``
        and ``process_resident_memory_bytes``, which a prometheus_client registry's own process
        collector reports."""
        return self._native.prometheus(process)

    def stop(self) -> None:
        """Stops sampling, writes the last partial interval, and puts back what the policy changed
        in the collector (its threshold, automatic collection on or off) where it still reads as
        the policy left it: a setting the application changed since is the application's, and
        ``default``, which changes nothing, puts back nothing. Safe to call more than once;
        registered with ``atexit``."""
        global _current
        self._native.stop()
        try:
            gc.callbacks.remove(self._callback)
        except ValueError:
            pass
        with _lock:
            if _current is self:
                _current = None

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<neurogc.Agent policy={self.policy!r} interval={self.interval} {state}>"


def current() -> Agent | None:
    """The agent running in this process, if any."""
    agent = _current
    return agent if agent is not None and agent.running else None


def seconds(interval: float | str) -> float:
    """An interval in seconds: a number, or a duration as every flag takes it (``"500ms"``)."""
    if isinstance(interval, str):
        return _native.parse_duration(interval)
    return float(interval)


def start(
    policy: str = "default",
    interval: float | str = 1.0,
    csv: str | os.PathLike[str] | None = None,
    *,
    gc_events_csv: str | os.PathLike[str] | None = None,
    _proc_root: str = "/proc",
) -> Agent:
    """Starts the agent: applies ``policy`` and samples every ``interval`` (seconds, or a
    duration such as ``"500ms"`` or ``"2s"``).

    ``csv``: append one row per sample to this file (header once, flushed per row). In a fork
    child, ``samples.csv`` becomes ``samples-<pid>.csv``; a ``{pid}`` in the path is replaced.

    ``gc_events_csv``: append one row per collection to this file
    (``time,generation,pause_ms,collected,uncollectable,reason,in_flight,trigger,predicted_ms``;
    ``reason`` is ``policy`` or ``runtime``, ``trigger`` why a policy ran it), written and flushed at each sample and at stop; same fork rule as ``csv``.

    Raises ``ValueError`` for a bad policy spec or interval, ``OSError`` if a CSV cannot be
    opened, ``RuntimeError`` if an agent is already running in this process.
    """
    global _current
    with _lock:
        previous = _current
        if previous is not None and previous.running:
            raise RuntimeError(
                f"a NeuroGC agent is already running in this process (policy {previous.policy!r});"
                " stop it first or use neurogc.current()"
            )
    if previous is not None:
        previous.stop()  # one that failed: unregister its (inert) gc callback
    with _lock:
        native = _native.NativeAgent(
            policy,
            seconds(interval),
            None if csv is None else os.fspath(csv),
            _proc_root,
            None if gc_events_csv is None else os.fspath(gc_events_csv),
        )
        agent = Agent(native)
        # Registered before the policy starts, so a collection it runs at start is recorded.
        gc.callbacks.append(agent._callback)
        try:
            native.start()
        except BaseException:
            gc.callbacks.remove(agent._callback)
            raise
        _current = agent
    lock = native.stagger_lock
    if lock is not None:
        # The processes this one starts (workers) take turns with it at full collections.
        os.environ.setdefault("NEUROGC_STAGGER_LOCK", os.fspath(lock))
    atexit.register(agent.stop)
    return agent


# The pre-fork recipe (CPython's gc.freeze() documentation): freeze in the parent right before
# fork, so that the workers inherit a frozen heap that their collections never traverse, and the
# pages it lives on stay shared. Under the `freeze` policy the agent does this at the first fork
# that comes before the policy's own warm-up freeze (gunicorn --preload forks its workers right
# after importing the app; without this each worker collected and froze the whole inherited heap
# itself, touching every object). NEUROGC_PREFORK_FREEZE=0 turns it off.
_PREFORK_OFF = os.environ.get("NEUROGC_PREFORK_FREEZE", "1") == "0"
# CPython 3.12 parks the immortal objects a full collection meets in the permanent generation
# (375 in a bare 3.12.1), so a freeze count this small is CPython's own, not a frozen heap;
# unfreezing it costs nothing (the next full collection parks them again).
PARKED_BY_CPYTHON = 2000


def _freezes_before_fork(policy: str) -> bool:
    return not _PREFORK_OFF and policy.split(",")[0].split(":")[0] == "freeze"


def _freeze_before_fork() -> None:
    try:
        if gc.get_freeze_count() > PARKED_BY_CPYTHON:
            return  # frozen already (the policy's warm-up, or an earlier fork)
        gc.collect()  # garbage is not worth sharing: free it before freezing the rest
        gc.freeze()
        log.info(
            "NeuroGC: froze %d objects before fork (pid %d)", gc.get_freeze_count(), os.getpid()
        )
    except Exception as exc:  # never break a fork over the agent
        log.warning("NeuroGC could not freeze before fork: %s", exc)


def _before_fork() -> None:
    agent = _current
    if agent is None or not agent.running:
        return
    if _freezes_before_fork(agent.policy):
        _freeze_before_fork()
    # After the freeze (the last of the agent's hooks): a collection another thread is in (the
    # agent's own, say) would be copied into the child unfinished, its collector dead for good.
    try:
        agent._native.before_fork()
        _forking.agent = agent  # this thread's fork, released by the same agent after it
    except Exception as exc:  # never break a fork over the agent
        log.warning("NeuroGC could not hold its collections for a fork: %s", exc)


_forking = threading.local()


def _after_fork_in_parent() -> None:
    agent = getattr(_forking, "agent", None)
    _forking.agent = None
    if agent is not None:
        try:
            agent._native.after_fork_parent()
        except Exception as exc:
            log.warning("NeuroGC could not release its collections after a fork: %s", exc)


def _after_fork_in_child() -> None:
    global _lock
    # Another thread may have held it at the fork (start() holds it while the policy starts).
    _lock = threading.Lock()
    agent = _current
    if agent is None or not agent.running:
        return
    try:
        agent._native.after_fork_child()
    except Exception as exc:  # never break the child over the agent
        log.warning("NeuroGC agent could not restart in fork child %d: %s", os.getpid(), exc)


os.register_at_fork(
    before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
)


def _hand_children_their_own_files() -> None:
    """Every process the command starts after this one (spawned workers of uvicorn or
    multiprocessing, subprocesses) inherits NEUROGC_*: point their CSVs at ``samples-{pid}.csv``
    beside this process' ``samples.csv``, so each process has its own files, as fork children do."""
    for name in ("NEUROGC_CSV", "NEUROGC_GC_EVENTS_CSV"):
        path = os.environ.get(name)
        if path:
            os.environ[name] = os.fspath(_native.child_csv_template(path))


def _start_from_environment() -> Agent | None:
    """Used by ``neurogc run``: starts the agent from NEUROGC_* variables, if set."""
    policy = os.environ.get("NEUROGC_POLICY")
    if not policy:
        return None
    try:
        agent = start(
            policy=policy,
            interval=os.environ.get("NEUROGC_INTERVAL", "1.0"),
            csv=os.environ.get("NEUROGC_CSV") or None,
            gc_events_csv=os.environ.get("NEUROGC_GC_EVENTS_CSV") or None,
        )
        _hand_children_their_own_files()
        return agent
    except Exception as exc:
        # The command itself must still run; say loudly why it runs without NeuroGC.
        log.error("NeuroGC agent not started: %s", exc)
        import sys

        print(f"neurogc: agent not started: {exc}", file=sys.stderr)
        return None
