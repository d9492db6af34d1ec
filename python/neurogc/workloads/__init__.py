"""The GC workload suite's bundled workloads: small services, each with a different GC story.

``WORKLOADS`` maps each name to its :class:`Workload` (in the suite's order); ``tasks_path(name)``
is the ``neurogc load`` task file that drives it. Serve one with::

    python -m neurogc.workloads serve large-heap --port 8001 --policy freeze --gc-events-csv gc.csv
    python -m neurogc.workloads list [--json]

ASGI workloads expose ``create_app(**options)`` (FastAPI); the WSGI one (``orm``) exposes ``app``
for gunicorn. Every workload answers ``GET /health`` with 200. Each module's docstring tells its
story: what lives, what dies when, what CPython's collector does with it, which recipe should win.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["MARKERS", "WORKLOADS", "UnknownWorkload", "Workload", "get", "tasks_path"]

#: What a workload's GC events should show under the default policy (and, for the last two, under
#: the policies named): the vocabulary of ``Workload.expects``.
MARKERS = (
    "full-collections",  # full (generation 2) collections scanning a big heap, with long pauses
    "young-churn",  # many young collections, freeing much cyclic garbage that dies young
    "old-garbage",  # garbage that dies in the old generation: full collections collect a lot
    "rss-grows-when-frozen",  # RSS grows under a frozen heap (or with GC off); bounded by default
    "idle-gaps",  # traffic comes in bursts with idle gaps a collection could use
)

_TASKS = Path(__file__).resolve().parent / "tasks"


@dataclass(frozen=True)
class Workload:
    """One bundled workload: ``module`` (dotted) has ``create_app(**options)`` (``kind`` "asgi")
    or a WSGI ``app`` (``kind`` "wsgi"); ``story`` is one plain-text paragraph; ``expects`` are
    markers from :data:`MARKERS`."""

    name: str
    module: str
    kind: str
    story: str
    expects: tuple[str, ...]

    @property
    def tasks(self) -> Path:
        return tasks_path(self.name)


class UnknownWorkload(ValueError):
    """A workload name that is not in :data:`WORKLOADS`."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
        self.name = name


def _w(name: str, module: str, kind: str, expects: tuple[str, ...], story: str) -> Workload:
    return Workload(name, f"neurogc.workloads.{module}", kind, " ".join(story.split()), expects)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        _w(
            "seed",
            "seed",
            "asgi",
            ("young-churn",),
            """The seed's demo endpoints (CPU, memory, network, I/O): a small live heap; only
            /memory-heavy makes cyclic garbage (thousands of linked ring nodes per request), all
            of which dies young. Young collections free it; full collections are rare and cheap,
            so no policy has much to win: the baseline.""",
        ),
        _w(
            "large-heap",
            "large_heap",
            "asgi",
            ("full-collections",),
            """A big static live heap (a catalogue of about 1.5 million tracked objects built at
            start-up) and requests whose traces (span trees with parent links: cycles) stay in a
            recent-requests buffer for a few seconds, long enough to be promoted to the old
            generation before they die. CPython's 25 % rule then runs a full collection every
            several seconds that scans the whole catalogue: pauses of hundreds of ms. Freezing
            the warm heap makes those collections cheap; a fixed full-collection schedule is the
            worst choice.""",
        ),
        _w(
            "growing-cache",
            "growing_cache",
            "asgi",
            ("full-collections", "old-garbage", "rss-grows-when-frozen"),
            """A session LRU cache of object graphs with cycles (session, user, cart, cart items,
            back-references) holding hundreds of thousands of tracked objects and turning over
            within a minute or two: sessions live long enough to reach the old generation and die
            there when evicted. Full collections find lots of garbage; a one-shot freeze keeps
            every frozen session that is later evicted (RSS grows) and the unfrozen old
            generation grows back, so a scheduled old-generation collection should beat it.""",
        ),
        _w(
            "bursty",
            "bursty",
            "asgi",
            ("idle-gaps", "full-collections", "young-churn"),
            """A moderate live heap and cyclic request garbage, some of it kept a few seconds;
            the story is the traffic: on/off bursts with idle gaps of a few hundred ms to
            seconds. CPython collects only when requests allocate, so every collection lands in
            a burst and delays requests; a policy that collects in the gaps delays no one.""",
        ),
        _w(
            "churn",
            "churn",
            "asgi",
            ("young-churn",),
            """A small live heap and a lot of short-lived cyclic garbage per request (parse trees
            with parent links): young collections dominate, hundreds per second, and free nearly
            everything. Thresholds matter (fewer, larger young collections cost less in all);
            freezing does nothing useful, and full collections are cheap.""",
        ),
        _w(
            "cycle-leak",
            "cycle_leak",
            "asgi",
            ("old-garbage", "rss-grows-when-frozen"),
            """Long-lived documents (cycles between document, revisions, sections and owner, each
            holding a 64 KiB payload), half the requests uploading one and retiring the oldest:
            they live some seconds, die old, and only a full collection gives their memory back.
            Under the default policy RSS stays bounded by full collections that free hundreds of
            documents each; with a frozen heap the documents alive at freeze time are never
            freed, and with the collector off nothing is: RSS grows.""",
        ),
        _w(
            "orm",
            "orm",
            "wsgi",
            ("young-churn", "full-collections"),
            """A Flask app under gunicorn (1 worker, gthread, 4 threads) with a framework-sized
            module-level heap (routes, model metadata, config) and, per request, an ORM-like
            identity map of rows with relationships and back-references (cycles) rendered by a
            Jinja2 template: much young cyclic garbage, and full collections that scan the
            framework heap, which freezing after warm-up makes cheap.""",
        ),
    )
}


def get(name: str) -> Workload:
    """The workload called ``name``; :class:`UnknownWorkload` (a ValueError) lists the known ones."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise UnknownWorkload(name) from None


def tasks_path(name: str) -> Path:
    """The ``neurogc load`` task file of workload ``name`` (inside the installed package)."""
    return _TASKS / f"{get(name).name}.toml"
