"""``bursty``: a moderate heap and cyclic request garbage, under traffic that comes in bursts.

What lives: a catalogue of ``heap_objects`` tracked objects (default 500,000) built at start-up,
and the traces of the ``recent`` latest requests (default 128): the ``large-heap`` workload's
service (:mod:`neurogc.workloads.large_heap`) at a third of its size.

What dies, when: every request records a trace (a tree of spans with parent links: cycles, about
400 tracked objects) that stays in the recent buffer for a second or so, long enough to be
promoted to the old generation before it dies, plus short-lived garbage (the search's scoring).

The traffic (the task file's ``[bursts]``): bursts of 300 ms to 2 s at the offered rate, then idle
gaps of 200 ms to 3 s with no request at all, as behind a batch client, a cron-driven caller or a
mobile app's sync.

What CPython's collector does with it: collections are triggered by allocations, so they only
ever run while requests are being served, inside the bursts: hundreds of young collections per
second of burst, and a full collection (the catalogue plus the promoted traces, ~100 ms) every
few seconds of burst time. Each delays every request in flight and every one that arrives during
it; the gaps, where a collection would delay no one, go unused.

Which recipe should win: one that collects when the service is idle: a full collection in a gap
(and the young generations emptied there) makes the next burst start with nothing to collect.
``freeze`` also helps (it shrinks the full collections to the traces) but still collects inside
the bursts; a fixed period lands in a gap or a burst by chance.

Options (``create_app`` keywords, ``serve --set KEY=VALUE``): ``heap_objects``, ``recent``,
``spans``, ``scan``, as in ``large-heap``.
"""

from __future__ import annotations

from fastapi import FastAPI

from ._base import new_app
from .large_heap import DEFAULT_SCAN, DEFAULT_SPANS, LargeHeap, add_routes

DEFAULT_HEAP_OBJECTS = 500_000
DEFAULT_RECENT = 128


def create_app(
    heap_objects: int = DEFAULT_HEAP_OBJECTS,
    recent: int = DEFAULT_RECENT,
    spans: int = DEFAULT_SPANS,
    scan: int = DEFAULT_SCAN,
) -> FastAPI:
    state = LargeHeap(heap_objects, recent, spans, scan)
    app = new_app("NeuroGC workload: bursty", state.build, state.release)
    add_routes(app, state)
    return app
