"""NeuroGC: schedules CPython's cyclic garbage collector from a Rust agent inside the process.

    import neurogc
    agent = neurogc.start(policy="freeze", csv="samples.csv")   # any Python program
    app = neurogc.install(app, policy="threshold:5000,20,20")   # FastAPI, Starlette, Flask: the
                                                                # same app, /metrics (Prometheus)
    REGISTRY.register(neurogc.NeuroGCCollector())               # or into prometheus_client's registry
    with neurogc.training(policy="every:50") as gc_steps:       # a training loop: collect at step
        for batch in data: ...; gc_steps.step()                 # boundaries (docs/training.md)

Policies are spec strings: {policies}. ``periodic`` turns automatic GC off and
collects every SECS, under a memory guard (``rss``, ``young``, ``check``).
"""

from ._agent import Agent, current, start
from ._native import POLICIES, columns, validate_policy
from .middleware import NeuroGCMiddleware, NeuroGCWSGIMiddleware, install


def __getattr__(name: str):
    # Imported on first use, so prometheus_client stays optional.
    if name == "NeuroGCCollector":
        from .prometheus import NeuroGCCollector

        return NeuroGCCollector
    if name == "training":  # the step hook (docs/training.md): a callable module
        import importlib

        return importlib.import_module(".training", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The one list of policies lives in the native core (neurogc_core::policy::spec::KNOWN_POLICIES).
__doc__ = __doc__.format(policies=POLICIES)

__all__ = [
    "POLICIES",
    "Agent",
    "NeuroGCCollector",
    "NeuroGCMiddleware",
    "NeuroGCWSGIMiddleware",
    "columns",
    "current",
    "install",
    "start",
    "validate_policy",
]
