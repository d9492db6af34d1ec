"""NeuroGC: schedules CPython's cyclic garbage collector from a Rust agent inside the process.

    import neurogc
    agent = neurogc.start(policy="freeze", csv="samples.csv")   # any Python program
    app = neurogc.install(app, policy="threshold:5000,20,20")   # an ASGI app (FastAPI, Starlette)

Policies are spec strings: ``default``, ``threshold:T0[,T1[,T2]]``, ``periodic:SECS``
(automatic GC off, a full collection every SECS, with a memory guard: ``rss=SIZE``,
``young=COUNT``, ``check=SECS``) and ``freeze[:WARMUP_SECS]``.
"""

from ._agent import Agent, current, start
from ._native import columns, validate_policy
from .middleware import NeuroGCMiddleware, NeuroGCWSGIMiddleware, install

__all__ = [
    "Agent",
    "NeuroGCMiddleware",
    "NeuroGCWSGIMiddleware",
    "columns",
    "current",
    "install",
    "start",
    "validate_policy",
]
