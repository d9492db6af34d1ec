"""gunicorn settings for the WSGI workload (``-c python:neurogc.workloads.gunicorn_conf``).

A Ctrl-C, or the bench stopping a server, sends SIGINT to the whole process group: gunicorn's
master and its worker. The master answers with SIGQUIT to the worker, so the worker handles two
quit signals, the second inside the first's handler; gthread's handler shuts its thread pool down,
and the nested call waits forever on the pool's (non-reentrant) shutdown lock. Measured: the
worker hung until SIGKILL in most bench stops (9-20 s each). The worker therefore leaves SIGINT to
the master and quits on the master's SIGQUIT alone.
"""

from __future__ import annotations

import signal
from typing import Any


def post_worker_init(worker: Any) -> None:
    """After gunicorn installed the worker's signal handlers: SIGINT is the master's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
