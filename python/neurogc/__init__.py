"""NeuroGC: schedules CPython's cyclic garbage collector from a Rust agent inside the process.

    import neurogc
    agent = neurogc.start(policy="freeze", csv="samples.csv")   # any Python program
    app = neurogc.install(app, policy="threshold:5000,20,20")   # an ASGI app (FastAPI, Starlette)

Policies are spec strings: {policies}. ``periodic`` turns automatic GC off and
collects every SECS, under a memory guard (``rss``, ``young``, ``check``).
"""

from ._agent import Agent, current, start
from ._native import POLICIES, columns, validate_policy
from .middleware import NeuroGCMiddleware, NeuroGCWSGIMiddleware, install

# The one list of policies lives in the native core (neurogc_core::policy::spec::KNOWN_POLICIES).
__doc__ = __doc__.format(policies=POLICIES)

__all__ = [
    "POLICIES",
    "Agent",
    "NeuroGCMiddleware",
    "NeuroGCWSGIMiddleware",
    "columns",
    "current",
    "install",
    "start",
    "validate_policy",
]
