"""Types of ``neurogc._native``, the Rust extension (``crates/neurogc-agent/src/lib.rs``, ``agent.rs``).

Python code outside this package uses :mod:`neurogc` (``Agent``, ``start``, the middleware), not
these names. Checked against the built module by ``python -m mypy.stubtest neurogc._native``.
"""

import os
from pathlib import Path
from typing import Final, final

__all__ = [
    "POLICIES",
    "NativeAgent",
    "child_csv_template",
    "columns",
    "parse_duration",
    "validate_policy",
]

_StrPath = str | os.PathLike[str]

#: The policy specs the agent knows, as one line for help texts and error messages.
POLICIES: Final[str]

def validate_policy(spec: str) -> None:
    """Checks a policy spec without starting anything; raises ``ValueError`` naming the problem."""

def columns() -> list[str]:
    """The sample's column names, in CSV order."""

def parse_duration(text: str) -> float:
    """Seconds in a duration of the one grammar every flag and spec takes (``30``, ``1.5``,
    ``500ms``, ``1m30s``); raises ``ValueError`` quoting the text."""

def child_csv_template(path: _StrPath) -> Path:
    """The CSV path template the other processes of a service get (``samples.csv`` ->
    ``samples-{pid}.csv``): ``neurogc run`` hands it to the processes the command starts."""

@final
class NativeAgent:
    """One per process: owns the sampler thread, applies the policy, writes the CSVs."""

    def __new__(
        cls,
        policy: str,
        interval: float,
        csv: _StrPath | None = None,
        proc_root: _StrPath = ...,
        gc_events_csv: _StrPath | None = None,
    ) -> NativeAgent: ...
    def start(self) -> None:
        """Applies the policy and starts the sampler thread (once: ``RuntimeError`` after)."""

    def stop(self) -> None:
        """Stops the sampler and puts back what the policy changed in the collector, where it
        still reads as the policy left it. Idempotent."""

    def before_fork(self) -> bool:
        """Before a fork, in the forking thread: holds the agent's collections back and waits
        (at most 2 s, the interpreter released) for a collection another thread is in to end;
        ``False`` when it had not."""

    def after_fork_parent(self) -> None:
        """After a fork, in the parent: the agent's collections go on."""

    def after_fork_child(self) -> None:
        """In a fork child: starts a fresh sampler (pid-suffixed CSVs)."""

    def request_started(self) -> int:
        """Counts a request in flight; the token ``request_finished`` takes (0 once failed)."""

    def serve_requests(self) -> None:
        """Says a middleware feeds this agent requests (rates are 0 in a quiet interval)."""

    def request_finished(
        self,
        latency_ns: int,
        bytes_in: int,
        bytes_out: int,
        error: bool = False,
        token: int | None = None,
    ) -> None:
        """Records a finished request."""

    def gc_callback(self, phase: str, info: dict[str, int]) -> None:
        """Registered in ``gc.callbacks``; never raises."""

    def snapshot(self) -> dict[str, float | int | bool | str] | None:
        """The newest sample, or None before the first interval has passed."""

    def totals(self) -> dict[str, int | float]:
        """Counters since start."""

    def prometheus(self, process: bool = True) -> str:
        """Prometheus text exposition; ``process``: include ``process_*`` CPU and memory."""

    @property
    def policy(self) -> str:
        """The policy in force (``default`` if the requested one fell back)."""

    @property
    def requested_policy(self) -> str: ...
    @property
    def interval(self) -> float: ...
    @property
    def csv_path(self) -> Path | None: ...
    @property
    def gc_events_csv_path(self) -> Path | None: ...
    @property
    def stagger_lock(self) -> Path | None: ...
    @property
    def running(self) -> bool: ...
    @property
    def failure(self) -> str | None: ...
    def _inject_fault(self, kind: str) -> None:
        """Test hook: ``sampler_panic`` or ``request_panic``."""
