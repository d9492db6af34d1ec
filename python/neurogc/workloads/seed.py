"""``seed``: the seed's demo endpoints, as the seed's Locust file drives them.

What lives: almost nothing: the FastAPI app, its routes, a local upstream process for
``/network-heavy`` (a separate process, so not in this heap). What dies, when: ``/memory-heavy``
builds 50 doubly linked rings of 40 nodes, each node with a small dict and list (about 6,000
tracked objects per request, all of them reference cycles), and drops them before it answers:
the garbage dies young. ``/cpu-heavy`` (a prime sieve and trial division), ``/io-heavy`` (write,
fsync and read 256 KiB) and ``/network-heavy`` (64 KiB from the upstream) allocate little that
the cyclic collector tracks.

What CPython's collector does with it: many young collections (every 700 net allocations of
tracked objects, so several per ``/memory-heavy`` request), each freeing rings that the request
just dropped; the rings that were still alive at a young collection are promoted and die one
generation up, which keeps the middle generation busy; full collections are rare (the old
generation barely grows) and cheap (the heap is small). Which recipe should win: none by much.
Raising threshold0 trades many tiny young collections for fewer larger ones; freezing a small
heap changes nothing; a periodic schedule with the collector off lets ring garbage pile up
between collections. It is the baseline the other workloads are measured against.

This is the demo app itself (``neurogc.demo.app``, scenario ``seed``), not a copy.
"""

from __future__ import annotations

from fastapi import FastAPI


def create_app() -> FastAPI:
    """The demo's seed app; its ``/metrics`` route reports the running agent, if any."""
    from neurogc.demo.app import create_app as demo_app

    return demo_app("seed", agent_enabled=True)
