"""Garbage collection at training-step boundaries (docs/training.md).

    import neurogc

    with neurogc.training(policy="every:50,gen=1", directory="runs/gc") as gc_steps:
        for batch in data:
            ...
            gc_steps.step()                      # one call per step: the boundary

    @neurogc.training(policy="learned")          # or: every call of a step function is a step
    def train_step(batch): ...

    trainer = lightning.Trainer(callbacks=[neurogc.training.LightningCallback(policy="learned")])
    trainer = transformers.Trainer(..., callbacks=[neurogc.training.TransformersCallback()])

Policies: {policies}. ``NEUROGC_STEP_POLICY`` and ``NEUROGC_STEPS_DIR`` override the arguments, so
``neurogc sweep`` (or you) can run an unchanged script under each policy; the directory gets
``steps.csv`` (one row per step, appended, flushed per row) and ``steps.json`` (how it ran).

``neurogc.training`` is this module and is callable: ``neurogc.training(...)`` is
``neurogc.training.Steps(...)``. ``python -m neurogc.training validate SPEC`` checks a spec,
``python -m neurogc.training columns`` prints the CSV's columns.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from ._hook import COLUMNS, ENV_DIR, ENV_POLICY, SCHEMA, Steps, active
from ._policy import POLICIES, StepPolicy, StepPolicyError, parse_policy

__doc__ = (__doc__ or "").format(policies=POLICIES)

__all__ = [
    "COLUMNS",
    "ENV_DIR",
    "ENV_POLICY",
    "POLICIES",
    "SCHEMA",
    "LightningCallback",
    "StepPolicy",
    "StepPolicyError",
    "Steps",
    "TransformersCallback",
    "active",
    "parse_policy",
    "validate_policy",
]


def validate_policy(spec: str) -> str:
    """Checks a step policy spec; returns it as the CSV will name it, raises
    :class:`StepPolicyError` (a ``ValueError``) naming it."""
    return parse_policy(spec).spec


def __getattr__(name: str) -> Any:
    # The framework callbacks import their framework, so only when asked for.
    if name == "LightningCallback":
        from ._lightning import LightningCallback

        return LightningCallback
    if name == "TransformersCallback":
        from ._transformers import TransformersCallback

        return TransformersCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """``neurogc.training(...)``: the module is also the hook's constructor."""

    def __call__(
        self, policy: str | None = None, directory: Any = None, *, rank: int | None = None
    ) -> Steps:
        return Steps(policy, directory, rank=rank)


sys.modules[__name__].__class__ = _CallableModule
