"""The step hook: applies a step policy at step boundaries and writes one CSV row per step.

The collector's own activity is read from ``gc.callbacks`` (start/stop of every collection, its
generation and yield), so a collection inside a step, between steps or at a boundary is told
apart and timed. A background thread reads RSS during steps only when a guarded policy may have to
collect inside a step (RSS above 1.5 times its budget).
"""

from __future__ import annotations

import atexit
import csv
import functools
import gc
import json
import logging
import os
import sys
import threading
import time
import weakref
from array import array
from pathlib import Path
from typing import Any, Callable, TypeVar

from .._agent import PARKED_BY_CPYTHON as _PARKED_BY_CPYTHON
from ._policy import StepPolicy, parse_policy

log = logging.getLogger("neurogc.training")

F = TypeVar("F", bound=Callable[..., Any])

#: Environment variables: they override the arguments, so a sweep can run an unchanged script
#: under each configuration.
ENV_POLICY = "NEUROGC_STEP_POLICY"
ENV_DIR = "NEUROGC_STEPS_DIR"

#: steps.csv's columns, in order (docs/training.md).
COLUMNS = (
    "run",
    "step",
    "start_time",
    "step_ms",
    "gc0_in_step",
    "gc0_in_step_ms",
    "gc1_in_step",
    "gc1_in_step_ms",
    "gc2_in_step",
    "gc2_in_step_ms",
    "outside_gc",
    "outside_gc_ms",
    "boundary_gen",
    "boundary_ms",
    "boundary_collected",
    "predicted_ms",
    "gc0_collected",
    "gc1_collected",
    "gc2_collected",
    "gc_count0",
    "gc_count1",
    "gc_count2",
    "rss_bytes",
    "policy",
    "action",
    "reason",
)

#: Version of steps.json (and of the CSV's columns).
SCHEMA = 1

_MIB = 1 << 20
#: Above this multiple of its RSS budget the guard collects inside a step, not at its end.
INSIDE_FACTOR = 1.5
#: The guard's RSS-triggered collections, while RSS stays above the budget, are at least this many
#: times their own pause apart: at most 5 % of the time (as the agent's guard).
GAP_PER_PAUSE = 20

_ENTRY, _STEP, _BOUNDARY, _OUTSIDE = range(4)

_lock = threading.Lock()
_active: Steps | None = None


def _fmt_bytes(n: float) -> str:
    return f"{n / _MIB:.1f} MiB"


class _Rss:
    """This process's resident set size from /proc/self/statm (None where there is none)."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        try:
            self._fd: int | None = os.open("/proc/self/statm", os.O_RDONLY)
            self._page = os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, AttributeError):
            self._fd = None

    def __call__(self) -> int | None:
        if self._fd is None or os.getpid() != self._pid:
            return None
        try:
            return int(os.pread(self._fd, 128, 0).split()[1]) * self._page
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None


class _Guard:
    """The memory guard: a full collection at the step boundary when RSS passes its budget or the
    young count passes ``young``; inside the step (from the watcher) when RSS passes 1.5 times the
    budget. The budget is kept, never raised: while RSS stays above it, RSS-triggered collections
    are paced to take at most 5 % of the time."""

    def __init__(self, policy: StepPolicy, rss0: int | None) -> None:
        if policy.rss is not None:
            self.rss_budget: int | None = policy.rss
        elif rss0 is not None:
            self.rss_budget = max(2 * rss0, rss0 + 256 * _MIB)
        else:
            self.rss_budget = None
        self.young = policy.young
        self._next_rss = 0.0  # monotonic time before which no RSS-triggered boundary collection
        self._next_inside = 0.0
        self._over_said = False

    def boundary(self, now: float, rss: int | None, count0: int) -> str | None:
        if count0 > self.young:
            return f"guard: young count {count0} > budget {self.young}"
        budget = self.rss_budget
        if rss is not None and budget is not None and rss > budget and now >= self._next_rss:
            return f"guard: rss {_fmt_bytes(rss)} > budget {_fmt_bytes(budget)}"
        return None

    def after_boundary(self, now: float, pause_s: float, rss: int | None) -> str | None:
        """After a guard collection: paces the next one while RSS stays above the budget, and
        says so once."""
        budget = self.rss_budget
        if rss is None or budget is None or rss <= budget:
            self._next_rss = 0.0
            return None
        self._next_rss = now + GAP_PER_PAUSE * pause_s
        if self._over_said:
            return None
        self._over_said = True
        return (
            f"over budget: rss {_fmt_bytes(rss)} still > {_fmt_bytes(budget)} after a full "
            "collection (live memory, or freed memory the allocator keeps); guard collections "
            "now paced to 5 % of the time"
        )

    def inside(self, now: float, rss: int | None) -> str | None:
        budget = self.rss_budget
        if rss is None or budget is None or now < self._next_inside:
            return None
        if rss > INSIDE_FACTOR * budget:
            return (
                f"guard in step: rss {_fmt_bytes(rss)} > {INSIDE_FACTOR} x budget "
                f"{_fmt_bytes(budget)}"
            )
        return None

    def after_inside(self, now: float, pause_s: float, check_s: float) -> None:
        self._next_inside = now + max(GAP_PER_PAUSE * pause_s, check_s)


class _Decision:
    __slots__ = ("gen", "action", "reason", "predicted_ms")

    def __init__(
        self, gen: int, action: str, reason: str, predicted_ms: float | None = None
    ) -> None:
        self.gen = gen
        self.action = action
        self.reason = reason
        self.predicted_ms = predicted_ms


class _Brain:
    """What a policy does at a step boundary (the guard comes on top)."""

    def observe(self, growth: int, step_ms: float, fresh: bool) -> None:
        """``growth``: the young count's change over the step; ``fresh``: the step began right
        after a collection, from an empty young generation."""

    def decide(self, step: int, count: tuple) -> _Decision | None:
        return None

    def collected(self, gen: int, ms: float, collected: int, scanned: int) -> None:
        pass


class _Every(_Brain):
    def __init__(self, policy: StepPolicy) -> None:
        self.n = policy.interval
        self.gen = policy.gen

    def decide(self, step: int, count: tuple) -> _Decision | None:
        if step % self.n == 0:
            return _Decision(self.gen, "collect", f"every {self.n} steps: generation {self.gen}")
        return None


class _Freeze(_Brain):
    def __init__(self, policy: StepPolicy) -> None:
        self.warmup = policy.warmup

    def decide(self, step: int, count: tuple) -> _Decision | None:
        if step == self.warmup:
            return _Decision(
                2,
                "freeze",
                f"freeze after {self.warmup} warm-up steps: full collection, then gc.freeze()",
            )
        return None


class _Learned(_Brain):
    """Chooses at each boundary from what it measured (docs/training.md, "learned").

    It keeps an account of the old generation in objects: its size after the entry collection
    (counted once), plus what each young collection promoted (objects it scanned, about the young
    count, less those it freed), less what each full collection freed. A full collection's pause
    is fitted as cost-per-object x objects scanned. At a boundary:

    - generation 2 when something was promoted since the last full collection and the part of a
      full collection that waiting does not save, re-scanning the live old generation, spread over
      the steps since the last one, is at most ``budget`` of a step's time (the promoted objects
      are scanned once whenever they are collected: waiting costs memory, not time), and the
      promoted objects are at least 1,000 and 5 % of the old generation; a full collection that
      freed less than a tenth of the promoted objects (beyond the young garbage it also freed, at
      the young collections' measured yield) doubles the spacing (up to 16x), one that freed more
      resets it; and in any case once the promoted objects reach a quarter of the old generation
      (CPython's own rule for a full collection: the old generation, and memory, never grow
      further between full collections than under the default, only the moment moves to a
      boundary);
    - else generation 1 when the young backlog plus one step's growth reaches threshold0 (the
      young threshold at entry) times a back-off: CPython would have collected inside the next
      step. A young collection that frees less than a tenth of what it scans (everything still
      alive) doubles the back-off, up to half the guard's young budget; one that frees more than
      half halves it. Where that cadence (without back-off) would collect at more than 1 % of
      the boundaries, its pauses are in the step-time p99 whatever their spacing: it collects at
      every boundary instead, one step's growth at a time (the same objects scanned, in the
      smallest pauses; numpy_loop, a collection every ~3 steps: p99 0.64 -> 0.57 ms, GC share
      6.7 -> 5.6 %). A step's growth is measured on steps that did not begin right after a
      collection (see ``observe``): while collecting every step, one boundary in
      ``PROBE_EVERY`` is left alone to measure one, where the growth is under half the
      threshold.

    And where full collections find the old generation transient (the last ones freed at least
    half of the old objects they scanned, beyond the young garbage: what a young collection
    promotes dies there within a few steps), a young collection only moves garbage-to-be where a
    full collection must free it later, in a larger pause: it runs a full collection at every
    other boundary instead, where the young cadence would collect. Not at every boundary: what a
    step leaves alive at its boundary dies in the next step, and left uncollected it dies young,
    where freeing it costs less than once a collection has moved it (many_nets, Python 3.11: at
    every boundary the step mean was 1.08x the default's, at every other boundary 0.63x, in two
    sweeps of five rounds, bench/sweep at 05331f2 and 1db6be6; before, a young collection
    promoting one step's graph and a full one freeing two alternated with a boundary without a
    collection). The old objects that live on are at most as many as those it frees, so
    re-scanning them costs at most what freeing costs; where more live on, the share falls below
    half and the rules above apply again.
    """

    ALPHA = 0.3
    MAX_BACKOFF = 16
    #: per-object costs until measured (ns)
    DEFAULT_NS = 100.0
    #: collections scanning fewer objects do not update the per-object costs
    MIN_SCANNED = 1000
    #: a young collection freeing less than this share of what it scanned backs off
    LOW_YIELD = 0.1
    HIGH_YIELD = 0.5
    #: a full collection needs at least this many promoted objects, and this share of the old
    MIN_PROMOTED = 1000
    MIN_PROMOTED_SHARE = 0.05
    #: CPython's rule: a full collection once the objects promoted since the last one reach this
    #: share of the old generation (its long_lived_pending > long_lived_total / 4)
    CPYTHON_SHARE = 0.25
    #: the tail the policy keeps clear: a young cadence collecting at more than this share of the
    #: boundaries puts its pauses into the step-time p99 anyway, so it collects every step
    TAIL_SHARE = 0.01
    #: the old generation is transient when full collections free at least this share of it
    TRANSIENT_OLD = 0.5
    #: collecting every step, one boundary in this many is left alone to measure the growth
    PROBE_EVERY = 16

    def __init__(self, policy: StepPolicy, threshold0: int) -> None:
        self.budget = policy.budget
        self.threshold0 = max(1, threshold0)
        self.max_young_backoff = max(1, policy.young // (2 * self.threshold0))
        self.growth: float | None = None  # from steps that did not begin after a collection
        self.last_growth = 0
        self.fresh_growth: float | None = None  # from steps that did
        self.since_settled = 0  # fresh steps since the last that was not
        self.step_ms: float | None = None
        self.young_ns: float | None = None
        self.full_ns: float | None = None
        self.old = 0  # objects in the old generation after the last full collection
        self.frozen_objects = 0  # frozen at entry: not re-scanned, but part of the heap
        self.promoted = 0  # promoted into it since
        self.since_full = 0
        self.backoff = 1
        self.young_backoff = 1
        self.young_yield: float | None = None
        self.old_turnover: float | None = None  # share of the old scanned that full ones freed
        self.young_count = 0  # the young count at the boundary being collected

    def _ewma(self, old: float | None, new: float) -> float:
        return new if old is None else old + self.ALPHA * (new - old)

    def entry(self, ms: float, collected: int, old_objects: int) -> None:
        """The entry collection: a full one, after which ``old_objects`` remain."""
        self.old = old_objects
        if old_objects + collected >= self.MIN_SCANNED:
            self.full_ns = ms * 1e6 / (old_objects + collected)

    def frozen(self, objects: int) -> None:
        """The old generation was frozen after the entry collection: none of it is re-scanned,
        but it still counts in CPython's quarter rule, as it would under the default."""
        self.frozen_objects = objects
        self.old = 0

    def observe(self, growth: int, step_ms: float, fresh: bool) -> None:
        # A step that begins from an empty young generation over-counts its growth: CPython
        # lowers the young count when a tracked object is freed only while the count is above
        # zero, so what the step frees of the previous one's objects before allocating goes
        # uncounted (torch_cnn: 11 objects a step after a collection, about 1 over the steps
        # without one, where the default collected 3 times in 2,000 steps).
        growth = max(0, growth)
        if fresh:
            self.fresh_growth = self._ewma(self.fresh_growth, growth)
            self.since_settled += 1
        else:
            self.last_growth = growth
            self.growth = self._ewma(self.growth, growth)
            self.since_settled = 0
        self.step_ms = self._ewma(self.step_ms, step_ms)
        self.since_full += 1

    def _growth(self) -> float:
        """Objects a step adds to the young generation, from the steps that did not begin
        after a collection where there are any."""
        if self.growth is None:
            return self.fresh_growth or 0.0
        return max(self.growth, float(self.last_growth))

    def _full_ns(self) -> float:
        return self.full_ns or self.young_ns or self.DEFAULT_NS

    def decide(self, step: int, count: tuple) -> _Decision | None:
        self.young_count = count[0]
        enough = max(self.MIN_PROMOTED, self.MIN_PROMOTED_SHARE * self.old)
        heap = self.old + self.frozen_objects
        if self.promoted >= max(self.MIN_PROMOTED, self.CPYTHON_SHARE * heap):
            return _Decision(
                2,
                "collect",
                f"learned: full: {self.promoted} objects promoted since the last, a quarter of "
                f"the {heap} old (frozen included) or more (where CPython itself would collect)",
                self._full_ns() * (self.old + self.promoted) / 1e6,
            )
        if self.promoted >= enough and self.step_ms:
            rescan_ms = self._full_ns() * self.old / 1e6
            spread = rescan_ms * self.backoff / self.since_full
            if spread <= self.budget * self.step_ms:
                spacing = f" x{self.backoff} (the last freed nothing)" if self.backoff > 1 else ""
                return _Decision(
                    2,
                    "collect",
                    f"learned: full: {self.promoted} objects promoted since the last; re-scan of "
                    f"{self.old} live ~{rescan_ms:.2f} ms{spacing} over {self.since_full} steps "
                    f"<= {self.budget:g} x step {self.step_ms:.2f} ms",
                    self._full_ns() * (self.old + self.promoted) / 1e6,
                )
        growth = self._growth()
        count0 = count[0]
        turnover = self.old_turnover or 0.0
        if (
            turnover >= self.TRANSIENT_OLD
            and count0 > 0
            and growth >= self.TAIL_SHARE * self.threshold0
        ):
            if self.since_full < 2:
                return None  # what this step leaves alive dies in the next, uncollected
            return _Decision(
                2,
                "collect",
                f"learned: full: every other step ({growth:.0f} objects/step): the last full "
                f"collections freed {turnover:.0%} of the old generation, so what a young "
                "collection promotes would die there",
                self._full_ns() * (self.old + self.promoted) / 1e6,
            )
        limit = self.threshold0 * self.young_backoff
        # Spread only while young collections pay (no back-off): collecting every step would
        # promote what a longer spacing lets die young.
        spread = self.young_backoff == 1 and growth >= self.TAIL_SHARE * limit
        if spread and count0 > 0:
            if self.since_settled >= self.PROBE_EVERY and growth < limit / 2:
                # Collecting every step, it sees only fresh steps: one boundary in PROBE_EVERY
                # is left alone to measure a step that does not begin after a collection (the
                # next collection then scans two steps' growth, under half the threshold).
                return None
            return _Decision(
                1,
                "collect",
                f"learned: young: every step ({growth:.0f} objects/step): at threshold {limit}, "
                f"a collection every {limit / growth:.0f} steps would be in the p99 anyway",
                (self.young_ns or self.DEFAULT_NS) * count0 / 1e6,
            )
        if count0 > 0 and count0 + growth >= limit:
            backoff = (
                f" (x{self.young_backoff}: young collections freed little)"
                if self.young_backoff > 1
                else ""
            )
            return _Decision(
                1,
                "collect",
                f"learned: young: count {count0} + {growth:.0f}/step reaches {limit}{backoff} "
                "in the next step",
                (self.young_ns or self.DEFAULT_NS) * count0 / 1e6,
            )
        return None

    def collected(self, gen: int, ms: float, collected: int, scanned: int) -> None:
        if gen >= 2:
            total = self.old + self.promoted
            if total >= self.MIN_SCANNED:
                self.full_ns = self._ewma(self.full_ns, ms * 1e6 / total)
            young_garbage = (self.young_yield or 0.0) * self.young_count
            old_freed = max(0.0, collected - young_garbage)
            low = old_freed < self.LOW_YIELD * max(1, self.promoted)
            if total >= self.MIN_SCANNED:
                self.old_turnover = self._ewma(self.old_turnover, min(1.0, old_freed / total))
            self.old = max(0, total + self.young_count - collected)
            self.promoted = 0
            self.since_full = 0
            self.backoff = min(2 * self.backoff, self.MAX_BACKOFF) if low else 1
            return
        if scanned >= self.MIN_SCANNED:
            self.young_ns = self._ewma(self.young_ns, ms * 1e6 / scanned)
            share = collected / scanned
            self.young_yield = self._ewma(self.young_yield, min(1.0, share))
            if share < self.LOW_YIELD:
                self.young_backoff = min(2 * self.young_backoff, self.max_young_backoff)
            elif share > self.HIGH_YIELD:
                self.young_backoff = max(1, self.young_backoff // 2)
        self.young_count = 0
        self.promoted += max(0, scanned - collected)


def _brain(policy: StepPolicy, threshold0: int) -> _Brain:
    if policy.name == "every":
        return _Every(policy)
    if policy.name == "freeze":
        return _Freeze(policy)
    if policy.name == "learned":
        return _Learned(policy, threshold0)
    return _Brain()


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _rank(rank: int | None) -> int:
    if rank is not None:
        return int(rank)
    try:
        return int(os.environ.get("RANK", "0") or 0)
    except ValueError:
        return 0


def _write_json(path: Path, doc: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)


def _num(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


class Steps:
    """A step hook. Create it with ``neurogc.training(policy=..., directory=...)``.

    ``NEUROGC_STEP_POLICY`` and ``NEUROGC_STEPS_DIR``, when set, override the ``policy`` and
    ``directory`` arguments (a sweep runs an unchanged script under each configuration); with no
    policy anywhere it is ``default`` (observe only), with no directory nothing is written.
    ``rank``: a distributed rank's files are ``steps-rank<R>.csv``/``.json`` (from ``RANK`` when
    not given; rank 0 writes ``steps.csv``).
    """

    def __init__(
        self,
        policy: str | None = None,
        directory: os.PathLike | str | None = None,
        *,
        rank: int | None = None,
    ) -> None:
        env_policy = _env(ENV_POLICY)
        if env_policy is not None:
            self.policy_source = ENV_POLICY
            self.policy = parse_policy(env_policy, ENV_POLICY)
        elif policy is not None:
            self.policy_source = "argument"
            self.policy = parse_policy(policy)
        else:
            self.policy_source = "default"
            self.policy = parse_policy("default")
        env_dir = _env(ENV_DIR)
        chosen = env_dir if env_dir is not None else directory
        self.directory: Path | None = None if chosen is None else Path(chosen)
        self.rank = _rank(rank)
        suffix = "" if self.rank == 0 else f"-rank{self.rank}"
        self.csv_path: Path | None = (
            None if self.directory is None else self.directory / f"steps{suffix}.csv"
        )
        self.json_path: Path | None = (
            None if self.directory is None else self.directory / f"steps{suffix}.json"
        )
        self._started = False
        self._closed = False
        self._pid = os.getpid()
        self._state = threading.Lock()  # the watcher's collections against step ends
        self._where = _OUTSIDE
        self._gc_t0: int | None = None
        self._steps = 0
        self._last: dict | None = None
        self._step_ms = array("d")
        self._totals = {
            "in_step_gc": [0, 0, 0],
            "in_step_gc_ms": [0.0, 0.0, 0.0],
            "outside_gc": 0,
            "outside_gc_ms": 0.0,
            "boundary_collections": [0, 0, 0],
            "boundary_ms": 0.0,
            "guard_collections": 0,
            "rss_max": 0,
        }
        self._reset_row()

    # ---- public API -------------------------------------------------------------------------

    @property
    def spec(self) -> str:
        """The policy in force, as written in the CSV."""
        return self.policy.spec

    @property
    def steps(self) -> int:
        """Steps completed so far."""
        return self._steps

    @property
    def in_step(self) -> bool:
        return self._where == _STEP

    @property
    def last(self) -> dict | None:
        """The last step's row as a dict (CSV column names; numbers as numbers, None if empty)."""
        return self._last

    @property
    def rss_budget(self) -> int | None:
        guard = getattr(self, "_guard", None)
        return None if guard is None else guard.rss_budget

    def summary(self) -> dict:
        """Totals since start: steps, step times (sum, median, p99, max in ms), collections inside
        steps per generation, outside steps, at boundaries per generation, guard collections, peak
        RSS."""
        times = sorted(self._step_ms)
        n = len(times)
        out: dict = dict(self._totals)
        out["in_step_gc"] = list(out["in_step_gc"])
        out["in_step_gc_ms"] = [round(x, 3) for x in out["in_step_gc_ms"]]
        out["boundary_collections"] = list(out["boundary_collections"])
        out.update(
            policy=self.spec,
            steps=n,
            step_ms_sum=round(sum(times), 3),
            step_ms_median=round(times[n // 2], 3) if n else None,
            step_ms_p99=round(times[min(n - 1, int(0.99 * n))], 3) if n else None,
            step_ms_max=round(times[-1], 3) if n else None,
        )
        return out

    def start(self) -> Steps:
        """Applies the policy (without opening a step: ``begin()`` does). ``with`` does both."""
        global _active
        if self._started:
            raise RuntimeError("this neurogc.training hook was already started")
        with _lock:
            if _active is not None and _active._pid == os.getpid():
                raise RuntimeError(
                    f"a neurogc.training hook is already active (policy {_active.spec!r}, "
                    f"{_active.steps} steps): the collector is process-wide, one hook at a time"
                )
            _active = self
        try:
            self._start()
        except BaseException:
            with _lock:
                _active = None
            self._restore()
            raise
        self._started = True
        atexit.register(self.close)
        return self

    def begin(self) -> None:
        """Opens a step (does nothing inside one)."""
        if not self._usable() or self._where == _STEP:
            return
        self._begin()

    def end(self) -> dict | None:
        """Closes the open step: the boundary action, then the step's CSV row, which it returns
        (as :attr:`last`). Does nothing outside a step."""
        if not self._usable() or self._where != _STEP:
            return None
        return self._end()

    def step(self) -> dict | None:
        """Ends the current step and begins the next: call it once per iteration."""
        if not self._usable():
            return None
        row = self._end() if self._where == _STEP else None
        self._begin()
        return row

    def close(self, error: BaseException | None = None) -> None:
        """Puts the collector back as it was at start (automatic collection on or off, thresholds;
        unfreezes what it froze) and finishes steps.json. A step still open is not written.
        Idempotent; registered with ``atexit``."""
        global _active
        if not self._started or self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        if os.getpid() != self._pid:
            return
        self._stop_watcher()
        self._where = _OUTSIDE
        self._restore()
        with _lock:
            if _active is self:
                _active = None
        if self._csv is not None:
            try:
                self._csv.close()
            except OSError:
                pass
        self._rss.close()
        if error is None:
            status, why = "complete", None
        elif isinstance(error, KeyboardInterrupt):
            status, why = "interrupted", "KeyboardInterrupt"
        else:
            status, why = "failed", f"{type(error).__name__}: {error}"
        self._finish_json(status, why)

    def __enter__(self) -> Steps:
        self.start()
        self.begin()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self.close(exc)

    def __call__(self, fn: F) -> F:
        """Decorator: every call of ``fn`` is one step. Starts the hook at the first call if it
        was not started (closing it at exit, or with ``fn.gc_steps.close()``)."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not self._started:
                self.start()
            self.begin()
            try:
                return fn(*args, **kwargs)
            finally:
                self.end()

        wrapper.gc_steps = self  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    def __repr__(self) -> str:
        state = "closed" if self._closed else "running" if self._started else "not started"
        return f"<neurogc.training policy={self.spec!r} steps={self._steps} {state}>"

    # ---- start and stop ---------------------------------------------------------------------

    def _start(self) -> None:
        self._rss = _Rss()
        self._csv = None
        self._watcher: threading.Thread | None = None
        self._stop = threading.Event()
        self._entry_enabled = gc.isenabled()
        self._entry_threshold = gc.get_threshold()
        self._froze = False
        self._unfreeze_on_close = False
        self._run = int(time.time() * 1000)
        self._started_at = time.time()
        rss0 = self._rss()
        policy = self.policy
        self._guard = _Guard(policy, rss0) if policy.guarded else None
        self._brain = _brain(policy, self._entry_threshold[0])
        self._entry: dict | None = None
        self._fresh = False  # the next step begins right after a collection
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._csv = self._open_csv()
        self._write_start_json(rss0)
        _check_agent()
        gc.callbacks.append(self._on_gc)
        if policy.name == "freeze":
            # get_freeze_count() is O(frozen objects): read once, to know whether unfreezing at
            # the end would also release a freeze that is not ours.
            self._unfreeze_on_close = gc.get_freeze_count() <= _PARKED_BY_CPYTHON
        if policy.disables_gc:
            gc.disable()
        if policy.name == "learned":
            # One full collection at entry: a clean start and the first measured full pause.
            self._entry = self._collect_at(_ENTRY, 2)
            self._fresh = True
            # Counted once (O(objects)): the old generation's size, which the pauses scale with.
            self._entry["objects"] = len(gc.get_objects())
            self._brain.entry(self._entry["ms"], self._entry["collected"], self._entry["objects"])  # type: ignore[attr-defined]
            # What the loop starts with (model, data, buffers) lives as long as the loop: frozen,
            # full collections scan only what came after (unfrozen at exit; a freeze that was
            # there before is left as it is, and its heap is not ours to account).
            if gc.get_freeze_count() <= _PARKED_BY_CPYTHON:
                gc.freeze()
                self._froze = self._unfreeze_on_close = True
                self._brain.frozen(gc.get_freeze_count())  # type: ignore[attr-defined]
            self._write_start_json(rss0)
        if self._guard is not None and self._guard.rss_budget is not None:
            self._watcher = threading.Thread(
                target=_watch, args=(weakref.ref(self),), name="neurogc-steps-guard", daemon=True
            )
            self._watcher.start()
        if self._guard is not None and self._guard.rss_budget is None:
            log.warning("neurogc.training: RSS cannot be read here; the guard watches young only")

    def _restore(self) -> None:
        try:
            gc.callbacks.remove(self._on_gc)
        except ValueError:
            pass
        if not hasattr(self, "_entry_threshold"):
            return
        gc.set_threshold(*self._entry_threshold)
        if self._entry_enabled:
            gc.enable()
        else:
            gc.disable()
        if self._froze:
            if self._unfreeze_on_close:
                gc.unfreeze()
            else:
                log.warning(
                    "neurogc.training: objects were frozen before the hook started, so its "
                    "freeze is left in place (gc.unfreeze() would release both)"
                )

    def _stop_watcher(self) -> None:
        self._stop.set()
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=5)

    def _usable(self) -> bool:
        if not self._started:
            raise RuntimeError(
                "neurogc.training hook not started: use it in a with block or call .start()"
            )
        if self._closed:
            return False
        if os.getpid() != self._pid:
            return False  # a fork child: the parent's hook is not this process's
        return True

    # ---- files ------------------------------------------------------------------------------

    def _open_csv(self) -> Any:
        path = self.csv_path
        assert path is not None
        header = ",".join(COLUMNS)
        prefix = ""
        if path.exists() and path.stat().st_size > 0:
            with open(path, "rb") as f:
                first = f.readline().decode("utf-8", "replace").rstrip("\r\n")
                f.seek(-1, os.SEEK_END)
                ends_with_newline = f.read(1) == b"\n"
            if first != header:
                raise ValueError(
                    f"{path} has other columns than this version writes ({first[:80]!r}...): "
                    "give the hook another directory"
                )
            # A row cut short by a crash stays a short row, not glued to ours.
            prefix = "" if ends_with_newline else "\n"
        else:
            prefix = header + "\n"
        f = open(path, "a", newline="", encoding="utf-8")
        if prefix:
            f.write(prefix)
            f.flush()
        self._writer = csv.writer(f, lineterminator="\n")
        return f

    def _json_doc(self, rss0: int | None) -> dict:
        guard = self._guard
        return {
            "schema": SCHEMA,
            "policy": self.spec,
            "policy_source": self.policy_source,
            "csv": None if self.csv_path is None else self.csv_path.name,
            "run": self._run,
            "pid": os.getpid(),
            "rank": self.rank,
            "argv": list(sys.argv),
            "python": sys.version,
            "python_version": list(sys.version_info[:3]),
            "implementation": sys.implementation.name,
            "gc_threshold_at_start": list(self._entry_threshold),
            "gc_enabled_at_start": self._entry_enabled,
            "rss_at_start": rss0,
            "guard": None
            if guard is None
            else {"rss_budget": guard.rss_budget, "young_budget": guard.young},
            "entry_collection": self._entry,
            "started": self._started_at,
            "finished": None,
            "status": "running",
            "error": None,
            "steps": 0,
        }

    def _write_start_json(self, rss0: int | None) -> None:
        self._doc = self._json_doc(rss0)
        if self.json_path is not None:
            _write_json(self.json_path, self._doc)

    def _finish_json(self, status: str, error: str | None) -> None:
        self._doc.update(
            finished=time.time(), status=status, error=error, steps=self._steps, summary=None
        )
        self._doc["summary"] = self.summary()
        if self.json_path is not None:
            try:
                _write_json(self.json_path, self._doc)
            except OSError as e:
                log.warning("neurogc.training: could not write %s: %s", self.json_path, e)

    # ---- the collector's callback -----------------------------------------------------------

    def _on_gc(self, phase: str, info: dict) -> None:
        try:
            if phase == "start":
                self._gc_t0 = time.perf_counter_ns()
                return
            t0 = self._gc_t0
            if t0 is None:
                return
            self._gc_t0 = None
            ms = (time.perf_counter_ns() - t0) / 1e6
            gen = min(max(int(info.get("generation", 2)), 0), 2)
            collected = int(info.get("collected", 0))
            where = self._where
            if where == _BOUNDARY or where == _ENTRY:
                self._b_n += 1
                self._b_ms += ms
                self._b_collected += collected
            elif where == _STEP:
                self._in_n[gen] += 1
                self._in_ms[gen] += ms
            else:
                self._out_n += 1
                self._out_ms += ms
            if where != _ENTRY:
                self._collected[gen] += collected
        except Exception:  # never let the hook break a collection
            pass

    # ---- steps ------------------------------------------------------------------------------

    def _reset_row(self) -> None:
        self._in_n = [0, 0, 0]
        self._in_ms = [0.0, 0.0, 0.0]
        self._out_n = 0
        self._out_ms = 0.0
        self._collected = [0, 0, 0]
        self._b_n = 0
        self._b_ms = 0.0
        self._b_collected = 0
        self._actions: list = []
        self._reasons: list = []

    def _begin(self) -> None:
        self._count0_begin = gc.get_count()[0]
        self._wall_begin = time.time()
        self._t_begin = time.perf_counter_ns()
        self._where = _STEP

    def _collect_at(self, where: int, gen: int) -> dict:
        """A collection at a boundary (or at entry), timed by the callback."""
        self._b_n = 0
        self._b_ms = 0.0
        self._b_collected = 0
        previous = self._where
        self._where = where
        t0 = time.perf_counter_ns()
        try:
            result = gc.collect(gen)
        finally:
            wall_ms = (time.perf_counter_ns() - t0) / 1e6
            self._where = previous
        ms = self._b_ms if self._b_n else wall_ms
        collected = self._b_collected if self._b_n else result
        return {"generation": gen, "ms": round(ms, 3), "collected": collected}

    def _end(self) -> dict:
        t_end = time.perf_counter_ns()
        with self._state:
            self._where = _BOUNDARY
        step_ms = (t_end - self._t_begin) / 1e6
        self._steps += 1
        step = self._steps
        count = gc.get_count()
        rss = self._rss()
        now = time.monotonic()
        policy = self.policy
        brain = self._brain
        brain.observe(count[0] - self._count0_begin, step_ms, self._fresh)
        actions = self._actions
        reasons = self._reasons
        if policy.disables_gc and gc.isenabled():
            gc.disable()
            actions.append("redisable")
            reasons.append("automatic collection had been turned back on by other code: off again")
        guard = self._guard
        why_guard = None if guard is None else guard.boundary(now, rss, count[0])
        decision = brain.decide(step, count)
        boundary = None
        predicted = None
        if why_guard is not None:
            freezing = decision is not None and decision.action == "freeze"
            actions.append("freeze" if freezing else "guard")
            reasons.append(why_guard)
            if decision is not None:
                reasons.append(decision.reason)
            boundary = self._collect_at(_BOUNDARY, 2)
            self._totals["guard_collections"] += 1
            over = guard.after_boundary(time.monotonic(), boundary["ms"] / 1e3, self._rss())  # type: ignore[union-attr]
            if over:
                actions.append("over-budget")
                reasons.append(over)
        elif decision is not None:
            actions.append(decision.action)
            reasons.append(decision.reason)
            predicted = decision.predicted_ms
            boundary = self._collect_at(_BOUNDARY, decision.gen)
        self._fresh = boundary is not None
        if boundary is not None:
            brain.collected(boundary["generation"], boundary["ms"], boundary["collected"], count[0])
            self._totals["boundary_collections"][boundary["generation"]] += 1
            self._totals["boundary_ms"] += boundary["ms"]
            if "freeze" in actions:
                gc.freeze()
                self._froze = True
        self._where = _OUTSIDE
        row = {
            "run": self._run,
            "step": step,
            "start_time": self._wall_begin,
            "step_ms": step_ms,
            "gc0_in_step": self._in_n[0],
            "gc0_in_step_ms": self._in_ms[0],
            "gc1_in_step": self._in_n[1],
            "gc1_in_step_ms": self._in_ms[1],
            "gc2_in_step": self._in_n[2],
            "gc2_in_step_ms": self._in_ms[2],
            "outside_gc": self._out_n,
            "outside_gc_ms": self._out_ms,
            "boundary_gen": None if boundary is None else boundary["generation"],
            "boundary_ms": None if boundary is None else boundary["ms"],
            "boundary_collected": None if boundary is None else boundary["collected"],
            "predicted_ms": predicted,
            "gc0_collected": self._collected[0],
            "gc1_collected": self._collected[1],
            "gc2_collected": self._collected[2],
            "gc_count0": count[0],
            "gc_count1": count[1],
            "gc_count2": count[2],
            "rss_bytes": rss,
            "policy": self.spec,
            "action": "+".join(actions) or "none",
            "reason": "; ".join(reasons),
        }
        self._account(row)
        self._write_row(row)
        self._last = row
        self._reset_row()
        return row

    def _account(self, row: dict) -> None:
        t = self._totals
        for g in range(3):
            t["in_step_gc"][g] += row[f"gc{g}_in_step"]
            t["in_step_gc_ms"][g] += row[f"gc{g}_in_step_ms"]
        t["outside_gc"] += row["outside_gc"]
        t["outside_gc_ms"] += row["outside_gc_ms"]
        if row["rss_bytes"] is not None:
            t["rss_max"] = max(t["rss_max"], row["rss_bytes"])
        self._step_ms.append(row["step_ms"])

    def _write_row(self, row: dict) -> None:
        if self._csv is None:
            return
        cells = [
            row["run"],
            row["step"],
            _num(row["start_time"], 6),
            _num(row["step_ms"]),
            row["gc0_in_step"],
            _num(row["gc0_in_step_ms"]),
            row["gc1_in_step"],
            _num(row["gc1_in_step_ms"]),
            row["gc2_in_step"],
            _num(row["gc2_in_step_ms"]),
            row["outside_gc"],
            _num(row["outside_gc_ms"]),
            "" if row["boundary_gen"] is None else row["boundary_gen"],
            _num(row["boundary_ms"]),
            "" if row["boundary_collected"] is None else row["boundary_collected"],
            _num(row["predicted_ms"]),
            row["gc0_collected"],
            row["gc1_collected"],
            row["gc2_collected"],
            row["gc_count0"],
            row["gc_count1"],
            row["gc_count2"],
            "" if row["rss_bytes"] is None else row["rss_bytes"],
            row["policy"],
            row["action"],
            row["reason"],
        ]
        try:
            self._writer.writerow(cells)
            self._csv.flush()
        except (OSError, ValueError) as e:
            # A full disk loses the record, never the training run.
            log.warning(
                "neurogc.training: writing %s failed (%s); rows no longer written", self.csv_path, e
            )
            self._csv = None

    # ---- the guard's watcher ----------------------------------------------------------------

    def _watch_once(self) -> None:
        if self._where != _STEP or self._guard is None:
            return
        rss = self._rss()
        now = time.monotonic()
        with self._state:
            if self._where != _STEP:
                return
            reason = self._guard.inside(now, rss)
            if reason is None:
                return
            t0 = time.perf_counter()
            gc.collect(2)  # counted by the callback as a collection inside the step
            pause = time.perf_counter() - t0
            self._guard.after_inside(time.monotonic(), pause, self.policy.check)
            self._totals["guard_collections"] += 1
            self._actions.append("guard-in-step")
            self._reasons.append(reason)


def _watch(ref: weakref.ReferenceType) -> None:
    hook = ref()
    if hook is None:
        return
    stop, check = hook._stop, hook.policy.check
    del hook
    while not stop.wait(check):
        hook = ref()
        if hook is None:
            return
        try:
            hook._watch_once()
        except Exception as e:  # the watcher never takes the process down
            log.warning("neurogc.training: guard watcher stopped: %s", e)
            return
        del hook


def _check_agent() -> None:
    """Warns when the in-process agent also runs a policy that acts on the collector."""
    try:
        from .._agent import current

        agent = current()
    except Exception:
        return
    if agent is not None and agent.running and agent.policy != "default":
        log.warning(
            "neurogc.training: the NeuroGC agent runs policy %r too; both act on the collector",
            agent.policy,
        )


def _after_fork_child() -> None:
    """In a fork child (a DataLoader worker, say) the parent's hook does not run: the child gets
    the collector back as it was before the hook (automatic collection on again: a worker with
    it off would leak), keeping a freeze (unfreezing would touch the pages fork shares)."""
    global _active
    hook = _active
    if hook is None:
        return
    _active = None
    try:
        gc.callbacks.remove(hook._on_gc)
    except ValueError:
        pass
    try:
        gc.set_threshold(*hook._entry_threshold)
        if hook._entry_enabled:
            gc.enable()
    except Exception:
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_child)


def active() -> Steps | None:
    """The hook running in this process, if any."""
    return _active
