"""Bundled training loops, each with a different GC story (its module's docstring tells it).

    python -m neurogc.loops list
    python -m neurogc.loops micrograd --steps 200 [--policy every:1,gen=1] [--dir runs/gc]
    NEUROGC_STEP_POLICY=learned NEUROGC_STEPS_DIR=runs/gc python -m neurogc.loops many_nets --steps 100

Every loop runs under the step hook (``neurogc.training``), so any step policy applies to it, from
the arguments or from the environment; ``train(steps, policy=None, directory=None, seed=0,
**options)`` in each module runs it from Python and returns its result with the hook's summary.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType

__all__ = ["LOOPS", "Loop", "UnknownLoop", "available", "get"]


@dataclass(frozen=True)
class Loop:
    """One bundled loop: ``module`` (dotted) has ``train`` and ``OPTIONS``; it runs only where
    every package of ``requires`` is installed."""

    name: str
    module: str
    summary: str
    requires: tuple[str, ...] = ()

    @property
    def missing(self) -> tuple[str, ...]:
        """The required packages that are not installed."""
        return tuple(m for m in self.requires if importlib.util.find_spec(m) is None)

    @property
    def available(self) -> bool:
        return not self.missing

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


class UnknownLoop(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown loop {name!r}; known: {', '.join(LOOPS)}")
        self.name = name


LOOPS = {
    loop.name: loop
    for loop in (
        Loop(
            "micrograd",
            "neurogc.loops.micrograd",
            "pure-Python autograd MLP: every step builds a graph of reference cycles",
        ),
        Loop(
            "many_nets",
            "neurogc.loops.many_nets",
            "many small networks per step over a large live heap: steps that meet a full "
            "collection spend most of their time in it (seed 004)",
        ),
        Loop(
            "numpy_loop",
            "neurogc.loops.numpy_loop",
            "NumPy math, Python bookkeeping: batches of dicts, per-step records, a growing "
            "metrics history",
            ("numpy",),
        ),
        Loop(
            "torch_cnn",
            "neurogc.loops.torch_cnn",
            "a PyTorch CPU CNN on synthetic images: the graph is C++, little for the collector "
            "(seed 003)",
            ("torch",),
        ),
    )
}


def get(name: str) -> Loop:
    try:
        return LOOPS[name]
    except KeyError:
        raise UnknownLoop(name) from None


def available() -> tuple[str, ...]:
    return tuple(name for name, loop in LOOPS.items() if loop.available)
