"""``large-heap``: a big static live heap, and request garbage that dies old.

What lives: a product catalogue built at start-up and never changed: ``heap_objects`` tracked
objects (default 1,500,000: 300,000 items, each an ``Item`` with a list of tags, a list of related
items elsewhere in the catalogue, a dict of attributes and a list inside it), plus a bounded
buffer of the ``recent`` latest request traces (default 256), the kind a service keeps for a
debug page or a slow-request log.

What dies, when: every ``/cyclic`` request scores ``scan`` items (default 9,000) of the catalogue
and records a trace: a tree of ``spans`` spans (default 48), each with a parent link and a list
of children (reference cycles), its attributes and events, and the results it answered: about
330 tracked objects (``/item``: a quarter of the spans, about 70). The trace stays in the buffer
until ``recent`` newer requests have pushed it out, about a second at the suite's load; only then
is it garbage, and only the cyclic collector can free it.

What CPython's collector does with it: a trace outlives the young collections (the middle
generation is collected every few tens of ms at this allocation rate), so it is promoted to the
old generation and dies there. Each promotion adds to ``long_lived_pending``; once that exceeds
25 % of the objects the last full collection left alive (the catalogue: 1.5 M), CPython runs a
full collection, and a full collection scans everything: the catalogue, the live traces and the
dead ones, about 2 M objects, some 400 ms during which every request waits. At 200-300 req/s
that happens every 4-6 s (the time to promote ~400 k objects).

Which recipe should win: ``freeze`` (after warm-up: one full collection, then ``gc.freeze()``).
The catalogue goes to the permanent generation; later full collections scan only the traces
(about 100 k objects: 10-20 ms, several a second). Raising threshold0 a lot
(``threshold:50000,20,20``) lets traces die in the young generations before they are promoted,
trading the full collections for rarer middle-generation ones that scan up to a million young
objects. A fixed full-collection schedule (``periodic``) is the worst recipe here: it scans the
whole catalogue every period, whether or not anything died.

The demo's ``--scenario large-heap`` is this workload (its ``--heap-objects`` is ``heap_objects``)
with the seed's endpoints beside it.

Options (``create_app`` keywords, ``serve --set KEY=VALUE``): ``heap_objects``, ``recent``,
``spans``, ``scan``.
"""

from __future__ import annotations

import collections
import random
import time
from typing import Any

from fastapi import FastAPI

from ._base import new_app, positive

DEFAULT_HEAP_OBJECTS = 1_500_000
DEFAULT_RECENT = 256
DEFAULT_SPANS = 48
DEFAULT_SCAN = 9_000
# Tracked objects per catalogue item: the Item, its tags, its related items, its attributes dict
# and the list of sizes in it.
OBJECTS_PER_ITEM = 5


class Item:
    __slots__ = ("id", "name", "price", "tags", "related", "attrs")

    def __init__(self, i: int) -> None:
        self.id = i
        self.name = f"item-{i}"
        self.price = (i * 7919) % 10_000 / 100
        self.tags = [i % 7, i % 11, i % 13]
        self.related: list[Item] = []
        self.attrs = {"color": ("red", "green", "blue")[i % 3], "sizes": [i % 5, i % 9]}


def build_catalogue(objects: int, seed: int = 1) -> list[Item]:
    """About ``objects`` tracked objects: items that refer to two random other items each, so a
    collection's traversal jumps all over the heap as it would in a real object graph."""
    items = [Item(i) for i in range(max(objects // OBJECTS_PER_ITEM, 0))]
    if items:
        rnd = random.Random(seed)
        n = len(items)
        for item in items:
            item.related.extend((items[rnd.randrange(n)], items[rnd.randrange(n)]))
    return items


class Span:
    __slots__ = ("name", "parent", "children", "attrs", "events", "start", "end")

    def __init__(self, name: str, parent: Span | None) -> None:
        self.name = name
        self.parent = parent  # the back-reference: every trace is a reference cycle
        self.children: list[Span] = []
        self.attrs: dict[str, Any] = {"items": []}
        self.events: list[list[Any]] = []
        self.start = time.perf_counter()
        self.end = 0.0
        if parent is not None:
            parent.children.append(self)


class LargeHeap:
    """The workload's state: the catalogue (built by :meth:`build`) and the recent traces."""

    def __init__(
        self,
        heap_objects: int = DEFAULT_HEAP_OBJECTS,
        recent: int = DEFAULT_RECENT,
        spans: int = DEFAULT_SPANS,
        scan: int = DEFAULT_SCAN,
    ) -> None:
        self.heap_objects = positive("heap_objects", heap_objects, minimum=0)
        self.scan = positive("scan", scan, minimum=0)
        self.recent_max = positive("recent", recent, minimum=0)
        self.spans = positive("spans", spans)
        self.catalogue: list[Item] = []
        self.recent: collections.deque[Span] = collections.deque(maxlen=self.recent_max)
        self.rnd = random.Random(2)

    def build(self) -> None:
        self.catalogue = build_catalogue(self.heap_objects)

    def release(self) -> None:
        self.catalogue = []
        self.recent.clear()

    def _trace(self, name: str, spans: int, items: list[Item]) -> Span:
        root = Span(name, None)
        parent = root
        for s in range(spans - 1):
            span = Span(f"{name}.{s}", parent if s % 4 else root)
            item = items[s % len(items)] if items else None
            if item is not None:
                span.attrs["items"].append(item.id)
                span.events.append(["lookup", item.id, item.price])
            span.end = time.perf_counter()
            parent = span
        root.end = time.perf_counter()
        if self.recent_max:
            self.recent.append(root)
        return root

    def search(self, spans: int | None = None, limit: int = 20) -> dict[str, Any]:
        """Scores ``scan`` items of a random stretch of the catalogue against a random query,
        keeps the best ``limit`` with their related items, records a trace of ``spans`` spans."""
        n = len(self.catalogue)
        found: list[Item] = []
        if n:
            start = self.rnd.randrange(n)
            window = self.catalogue[start : start + self.scan]
            tag, color = self.rnd.randrange(13), ("red", "green", "blue")[self.rnd.randrange(3)]
            scored = [
                (
                    item.price * (2 if tag in item.tags else 1)
                    + (5 if item.attrs["color"] == color else 0),
                    item.id,
                )
                for item in window
            ]
            scored.sort(reverse=True)
            found = [self.catalogue[i] for _, i in scored[:limit]]
        results = []
        for item in found:
            related = [r.id for r in item.related]
            results.append({"id": item.id, "price": item.price, "related": related})
        root = self._trace("search", min(max(spans or self.spans, 1), 10_000), found)
        root.attrs["results"] = results  # the slow-request log shows what was answered
        return {
            "checksum": sum(r["id"] for r in results) % 1_000_003,
            "results": len(results),
            "spans": len(root.children),
            "heap_objects": self.heap_objects,
        }

    def item(self) -> dict[str, Any]:
        """One item with its related items; a small trace."""
        n = len(self.catalogue)
        if not n:
            return {"id": None, "heap_objects": self.heap_objects}
        item = self.catalogue[self.rnd.randrange(n)]
        self._trace("item", max(self.spans // 4, 1), [item, *item.related])
        return {
            "id": item.id,
            "name": item.name,
            "price": item.price,
            "tags": item.tags,
            "related": [{"id": r.id, "name": r.name} for r in item.related],
        }


def add_routes(app: FastAPI, state: LargeHeap) -> None:
    """``/cyclic`` (a search with its trace) and ``/item``, on ``app``."""

    @app.get("/cyclic")
    async def cyclic(spans: int = 0) -> dict[str, Any]:
        return state.search(spans or None)

    @app.get("/item")
    async def item() -> dict[str, Any]:
        return state.item()


def create_app(
    heap_objects: int = DEFAULT_HEAP_OBJECTS,
    recent: int = DEFAULT_RECENT,
    spans: int = DEFAULT_SPANS,
    scan: int = DEFAULT_SCAN,
) -> FastAPI:
    state = LargeHeap(heap_objects, recent, spans, scan)
    app = new_app("NeuroGC workload: large-heap", state.build, state.release)
    add_routes(app, state)
    return app
