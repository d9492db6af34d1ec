"""NeuroGC's metrics in a ``prometheus_client`` registry, beside the application's own.

    from prometheus_client import REGISTRY
    from neurogc.prometheus import NeuroGCCollector

    REGISTRY.register(NeuroGCCollector())

Importing this module imports ``prometheus_client`` (``pip install prometheus-client``); the rest
of NeuroGC does not need it. The collector reports the agent running in this process (or the one
it was given) at each scrape, read at that moment: the same families as the middleware's
``/metrics``, every series labelled with the worker's ``pid``, except ``process_*``, which the
registry's own process collector reports. With no agent running it reports nothing.

In prometheus_client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``) the metrics of other
workers come from their files, but a custom collector reports only the worker that answers the
scrape: see docs/metrics.md for why NeuroGC labels by ``pid`` instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from . import _agent

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["NeuroGCCollector"]


class NeuroGCCollector:
    """A prometheus_client custom collector (``collect()`` yields metric families) for the NeuroGC
    agent: ``agent``, or the one running in this process at each scrape."""

    def __init__(self, agent: Agent | None = None) -> None:
        self._agent = agent

    def collect(self) -> Iterator[Metric]:
        agent = self._agent if self._agent is not None else _agent.current()
        if agent is None:
            return
        # One renderer for both ways out: the agent's own exposition, parsed by prometheus_client.
        yield from text_string_to_metric_families(agent.prometheus(process=False))

    def __repr__(self) -> str:
        return f"<neurogc.prometheus.NeuroGCCollector agent={self._agent!r}>"
